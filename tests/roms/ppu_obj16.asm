; ppu_obj16: 8x16 objects (LCDC.2).  Tile index bit 0 is ignored in 8x16 mode
; (OAM 0 names tile 31 and shows 30 on top, 31 below); X/Y flips flip the whole
; 16-row object (OAM 1..3); OBP1 (OAM 4); eleven staggered objects share lines
; around y=60 so the 10-object limit picks different objects line by line
; (OAM 5..15); OAM 16..19 move every frame.  Every 64 frames LCDC.2 toggles in
; VBlank, showing the same OAM as 8x8 objects.  Start pauses the motion.
    title "PPU OBJ 8X16"
    include "ppu_lib.inc"

Start:
    call Init
    ld hl, $9800
    ld bc, $0400
    ld d, 25            ; dots
    call MemFill
    ld hl, OamTable
    ld de, wShadowOam
    ld bc, OamTableEnd - OamTable
    call MemCopy
    call RunDma
    ld a, $E4
    ldh [rBGP], a
    ldh [rOBP0], a
    ld a, $1E
    ldh [rOBP1], a
    ld a, $97           ; LCD on, $8000 data, $9800 map, objects 8x16 on, BG on
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

hMotion EQU $FF94

VBlankHandler:
    push af
    push bc
    push de
    push hl
    call RunDma
    call ReadJoypad
    ldh a, [hFrame]
    inc a
    ldh [hFrame], a
    and 63
    jr nz, .same
    ldh a, [rLCDC]
    xor $04
    ldh [rLCDC], a
.same:
    ldh a, [hButtons]
    bit 7, a            ; Start: pause
    jr nz, .done
    ldh a, [hMotion]
    inc a
    ldh [hMotion], a
    ld c, a
    ld hl, wShadowOam + 16 * 4   ; OAM 16..19: Y = t + 50k, X = 2t + 60k
    ld d, 0
    ld e, 0
    ld b, 4
.move:
    ld a, c
    add a, d
    ld [hl+], a
    ld a, c
    add a, a
    add a, e
    ld [hl+], a
    inc hl
    inc hl
    ld a, d
    add a, 50
    ld d, a
    ld a, e
    add a, 60
    ld e, a
    dec b
    jr nz, .move
.done:
    pop hl
    pop de
    pop bc
    pop af
    reti

StatHandler:
    reti

; tiles: 30 top / 31 bottom of the 8x16 pair, 24 flag, 28 square, 33 ring
OamTable:
    db 32, 16, 31, 0          ; 0: odd index, shows 30 over 31
    db 32, 32, 30, $20        ; 1 X flip
    db 32, 48, 30, $40        ; 2 Y flip (whole object)
    db 32, 64, 30, $60        ; 3 both
    db 32, 80, 30, $10        ; 4 OBP1
    db 76, 8, 30, 0           ; 5..15 staggered by 4 rows
    db 80, 22, 31, $20
    db 84, 36, 28, 0
    db 76, 50, 33, $10
    db 80, 64, 30, $40
    db 84, 78, 24, 0
    db 76, 92, 30, $60
    db 80, 106, 28, $10
    db 84, 120, 30, 0
    db 76, 134, 33, 0
    db 80, 148, 30, $20
    db 0, 0, 30, 0            ; 16..19 moving
    db 0, 0, 30, $60
    db 0, 0, 28, $90
    db 0, 0, 24, $30
OamTableEnd:
