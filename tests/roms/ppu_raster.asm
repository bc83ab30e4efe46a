; ppu_raster: mid-frame register changes from an HBlank (mode 0) STAT handler.
; Each line's handler sets SCX for the next line from a sine-like table indexed
; by LY + frame (a wave), adds 40 to SCY after line 71 and inverts BGP after
; line 99; the VBlank handler restores SCX, SCY and BGP for line 0.  All writes
; land in HBlank, so each line is drawn with the values written before it
; (Pan Docs, Rendering: registers are read while the line is drawn).
; Holding Up freezes the wave; A doubles its amplitude.
; Self-check: the HBlank handler sees STAT mode 0 and 144 HBlanks per frame.
    title "PPU RASTER"
    include "ppu_lib.inc"

hPhase  EQU $FF95
hCount  EQU $FF96
hLast   EQU $FF97
hAmp    EQU $FF98

Start:
    call Init
    ld hl, $9800        ; BG: vertical stripes of box/brick/column-ramp tiles with digits
    ld b, 0
.row:
    ld c, 0
.col:
    ld a, c
    and 3
    jr nz, .pattern
    ld a, b
    and 15              ; every 4th column: the map row's digit
    jr .put
.pattern:
    add a, 20           ; 21 box, 22 row ramp, 23 column ramp
.put:
    ld [hl+], a
    inc c
    ld a, c
    cp 32
    jr nz, .col
    inc b
    ld a, b
    cp 32
    jr nz, .row
    ld a, $E4
    ldh [rBGP], a
    xor a
    ldh [rSCX], a
    ldh [rSCY], a
    ldh [hPhase], a
    ldh [hCount], a
    ld a, STAT_HBLANK
    ldh [rSTAT], a
    ld a, $91
    ldh [rLCDC], a
    ld a, IE_VBLANK | IE_STAT
    ldh [rIE], a
    xor a
    ldh [rIF], a
    ei
    call WaitFrame
    call WaitFrame
    call WaitFrame
    ldh a, [hLast]
    cp 144
    jr z, .ok
    ld b, a
    ld hl, CountText
    call ReportFail
    jr Idle
.ok:
    call ReportPass
Idle:
    halt
    jr Idle

WaitFrame:
    ldh a, [hFrame]
    ld c, a
.wait:
    halt
    ldh a, [hFrame]
    cp c
    jr z, .wait
    ret

VBlankHandler:
    push af
    push bc
    call ReadJoypad
    ldh a, [hFrame]
    inc a
    ldh [hFrame], a
    ldh a, [hCount]
    ldh [hLast], a
    xor a
    ldh [hCount], a
    ldh [rSCY], a
    ld a, $E4
    ldh [rBGP], a
    ldh a, [hButtons]
    ld b, a
    and $10             ; A: double amplitude
    ldh [hAmp], a
    bit 2, b            ; Up: freeze
    jr nz, .frozen
    ldh a, [hPhase]
    inc a
    ldh [hPhase], a
.frozen:
    ldh a, [hPhase]     ; SCX for line 0 = table[phase]
    and 63
    ld c, a
    ld b, 0
    push hl
    ld hl, Wave
    add hl, bc
    ld a, [hl]
    pop hl
    ldh [rSCX], a
    pop bc
    pop af
    reti

StatHandler:
    push af
    push bc
    push hl
    ldh a, [hCount]
    inc a
    ldh [hCount], a
    ldh a, [rLY]        ; this is line LY's HBlank: set up line LY+1
    ld b, a
    ldh a, [hPhase]
    add a, b
    inc a
    and 63
    ld c, a
    ld b, 0
    ld hl, Wave
    add hl, bc
    ld a, [hl]
    ld b, a
    ldh a, [hAmp]
    or a
    ld a, b
    jr z, .single
    add a, a
.single:
    ldh [rSCX], a
    ldh a, [rLY]
    cp 71
    jr nz, .not71
    ldh a, [rSCY]
    add a, 40
    ldh [rSCY], a
.not71:
    cp 99
    jr nz, .not99
    ld a, $1B
    ldh [rBGP], a
.not99:
    pop hl
    pop bc
    pop af
    reti

; 64 entries: 8 + round(8 * sin(2 pi i / 64))
Wave:
    db 8, 9, 10, 10, 11, 12, 12, 13, 14, 14, 15, 15, 15, 16, 16, 16
    db 16, 16, 16, 16, 15, 15, 15, 14, 14, 13, 12, 12, 11, 10, 10, 9
    db 8, 7, 6, 6, 5, 4, 4, 3, 2, 2, 1, 1, 1, 0, 0, 0
    db 0, 0, 0, 0, 1, 1, 1, 2, 2, 3, 4, 4, 5, 6, 6, 7

CountText:
    db "HBlank irqs per frame", 0
