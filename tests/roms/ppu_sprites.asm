; ppu_sprites: 8x8 objects — the 10-per-line limit, X-then-OAM-index priority,
; transparency, flips, both palettes, BG-over-OBJ and its masking, objects
; partly off screen, objects moved every frame (OAM DMA in VBlank).
; Rows (screen y): 16 limit: OAM 0 moves across 10 static squares (OAM 1..10,
; the 11th never shows); 40 priority: equal X (OAM 11 over 12), smaller X wins
; (14 over 13), a winner's transparent pixels show the loser (15/16); 64 flips
; and OBP1 (17..22); 88 BG-over-OBJ (23, 24) and masking (25 hides 26 where
; BG colour is not 0); 112: OAM 27 follows the d-pad; 28..32 partly off
; screen; 33..36 fall diagonally through everything.  Objects are disabled
; (LCDC.1) in 16 of every 128 frames.
    title "PPU SPRITES"
    include "ppu_lib.inc"

Start:
    call Init
    ld hl, $9800        ; BG: dots above y=80, then column ramp and dots alternating
    ld b, 0
.row:
    ld c, 0
.col:
    ld a, b
    cp 10               ; map rows 0..9 (y < 80): quiet dots only
    ld a, 25
    jr c, .even
    ld a, b
    add a, c
    and 1
    ld a, 23
    jr z, .even
    ld a, 25
.even:
    ld [hl+], a
    inc c
    ld a, c
    cp 32
    jr nz, .col
    inc b
    ld a, b
    cp 32
    jr nz, .row
    ld hl, OamTable
    ld de, wShadowOam
    ld bc, 160
    call MemCopy
    call RunDma
    ld a, $E4
    ldh [rBGP], a
    ldh [rOBP0], a
    ld a, $27
    ldh [rOBP1], a
    xor a
    ldh [rSCX], a
    ldh [rSCY], a
    ld a, $93           ; LCD on, $8000 data, $9800 map, objects 8x8 on, BG on
    ldh [rLCDC], a
    ld a, IE_VBLANK
    ldh [rIE], a
    xor a
    ldh [rIF], a
    ei
    call ReportPass
Idle:
    halt
    jr Idle

VBlankHandler:
    push af
    push bc
    push de
    push hl
    call RunDma         ; positions computed last frame
    call ReadJoypad
    ldh a, [hFrame]
    inc a
    ldh [hFrame], a
    ld c, a
    and $70             ; objects off in frames 112..127 of every 128
    cp $70
    ldh a, [rLCDC]
    set 1, a
    jr nz, .objon
    res 1, a
.objon:
    ldh [rLCDC], a
    ld a, c             ; OAM 0: X = 2 * frame
    add a, a
    ld [wShadowOam + 1], a
    ld hl, wShadowOam + 27 * 4   ; OAM 27 follows the d-pad
    ldh a, [hButtons]
    ld b, a
    bit 2, b            ; Up
    jr z, .noup
    dec [hl]
.noup:
    bit 3, b            ; Down
    jr z, .nodown
    inc [hl]
.nodown:
    inc hl
    bit 0, b            ; Right
    jr z, .noright
    inc [hl]
.noright:
    bit 1, b            ; Left
    jr z, .noleft
    dec [hl]
.noleft:
    ld hl, wShadowOam + 33 * 4   ; OAM 33..36: Y = frame + 37k, X = 3 * frame + 40k
    ld d, 0             ; 37k
    ld e, 0             ; 40k
    ld b, 4
.fall:
    ld a, c
    add a, d
    ld [hl+], a
    ld a, c
    add a, a
    add a, c
    add a, e
    ld [hl+], a
    inc hl
    inc hl
    ld a, d
    add a, 37
    ld d, a
    ld a, e
    add a, 40
    ld e, a
    dec b
    jr nz, .fall
    pop hl
    pop de
    pop bc
    pop af
    reti

StatHandler:
    reti

; OAM entries: Y (screen y + 16), X (screen x + 8), tile, attributes
; tiles: 24 flag, 28 square, 29 arrow, 32 half (left half transparent), 33 ring, 18 solid 3
OamTable:
    db 32, 0, 33, $10                     ; 0 moving ring, OBP1
    db 32, 8, 28, 0                       ; 1..10 squares at x = 15i - 15
    db 32, 23, 28, 0
    db 32, 38, 28, 0
    db 32, 53, 28, 0
    db 32, 68, 28, 0
    db 32, 83, 28, 0
    db 32, 98, 28, 0
    db 32, 113, 28, 0
    db 32, 128, 28, 0
    db 32, 143, 28, 0                     ; 10: the 11th on the line, never drawn
    db 56, 24, 28, 0                      ; 11 equal X: wins over 12
    db 56, 24, 29, $10                    ; 12
    db 56, 60, 32, 0                      ; 13
    db 56, 56, 28, 0                      ; 14 smaller X: wins over 13
    db 56, 100, 32, 0                     ; 15 smaller X, left half transparent
    db 56, 102, 28, $10                   ; 16 shows through 15's transparent half
    db 80, 16, 24, 0                      ; 17 flag
    db 80, 32, 24, $20                    ; 18 X flip
    db 80, 48, 24, $40                    ; 19 Y flip
    db 80, 64, 24, $60                    ; 20 both
    db 80, 80, 24, $10                    ; 21 OBP1
    db 80, 96, 29, $50                    ; 22 arrow, Y flip, OBP1
    db 104, 16, 28, $80                   ; 23 behind BG colours 1-3
    db 104, 40, 18, $80                   ; 24 solid, behind BG
    db 104, 64, 28, $80                   ; 25 behind BG, wins over 26 ...
    db 104, 64, 18, 0                     ; 26 ... so BG colours 1-3 hide 26 too
    db 128, 80, 29, 0                     ; 27 d-pad controlled
    db 8, 50, 28, 0                       ; 28 rows -8..-1: invisible
    db 12, 70, 28, 0                      ; 29 rows -4..3
    db 136, 4, 28, 0                      ; 30 x -4..3
    db 140, 164, 28, $10                  ; 31 x 156..163
    db 158, 120, 28, 0                    ; 32 rows 142..149
    db 0, 0, 33, 0                        ; 33..36 falling, set each frame
    db 0, 0, 29, $20
    db 0, 0, 24, $50
    db 0, 0, 28, $90
    db 0, 0, 0, 0                         ; 37..39 unused (Y=0: never on a line)
    db 0, 0, 0, 0
    db 0, 0, 0, 0
