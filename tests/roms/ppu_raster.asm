; ppu_raster: mid-frame register changes from an HBlank (mode 0) STAT handler.
; Each line's handler sets SCX for the next line from a sine-like table indexed
; by line + frame (a wave), SCY = 40 from line 72 and BGP inverted from line
; 100; the VBlank handler sets line 0's.  Values are computed a line ahead so
; every write lands early in HBlank: each line is drawn with the values written
; before it (Pan Docs, Rendering: registers are read while the line is drawn).
; A software line count, not LY, picks the values, so they do not depend on
; exactly when in the line the handler runs.
; Holding Up freezes the wave; A doubles its amplitude.
; Self-check: 144 HBlank interrupts per frame (the handler fits in a line).
    title "PPU RASTER"
    include "ppu_lib.inc"

hPhase   EQU $FF95
hCount   EQU $FF96
hLast    EQU $FF97
hWaveHi  EQU $FF98
hLine    EQU $FF99
hNextScx EQU $FF9A
hNextScy EQU $FF9B
hNextBgp EQU $FF9C

Start:
    call Init
    ld hl, $9800        ; BG: the map row's digit every 4th column, pattern tiles between
    ld b, 0
.row:
    ld c, 0
.col:
    ld a, c
    and 3
    jr nz, .pattern
    ld a, b
    and 15
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
    ld a, high(Wave)
    ldh [hWaveHi], a
    ld a, $E4
    ldh [rBGP], a
    xor a
    ldh [rSCX], a
    ldh [rSCY], a
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
    push hl
    call ReadJoypad
    ldh a, [hFrame]
    inc a
    ldh [hFrame], a
    ldh a, [hCount]
    ldh [hLast], a
    xor a
    ldh [hCount], a
    ldh a, [hButtons]
    ld b, a
    ld a, high(Wave)
    bit 4, b            ; A: the doubled wave
    jr z, .single
    ld a, high(Wave2)
.single:
    ldh [hWaveHi], a
    bit 2, b            ; Up: freeze
    jr nz, .frozen
    ldh a, [hPhase]
    inc a
    ldh [hPhase], a
.frozen:
    ldh a, [hPhase]     ; line 0: SCX from the wave, SCY 0, BGP normal
    and 63
    ld l, a
    ldh a, [hWaveHi]
    ld h, a
    ld a, [hl]
    ldh [rSCX], a
    xor a
    ldh [rSCY], a
    ldh [hNextScy], a
    ld a, $E4
    ldh [rBGP], a
    ldh [hNextBgp], a
    ld a, $FF           ; the next HBlank is line 0's
    ldh [hLine], a
    call PrepareNext
    pop hl
    pop bc
    pop af
    reti

; StatHandler: apply the registers prepared for the next line, then prepare
; the one after.
StatHandler:
    push af
    ldh a, [hNextScx]
    ldh [rSCX], a
    ldh a, [hNextScy]
    ldh [rSCY], a
    ldh a, [hNextBgp]
    ldh [rBGP], a
    push bc
    push hl
    ldh a, [hCount]
    inc a
    ldh [hCount], a
    call PrepareNext
    pop hl
    pop bc
    pop af
    reti

; PrepareNext: hLine += 1; hNext* = registers for line hLine + 1.
PrepareNext:
    ldh a, [hLine]
    inc a
    ldh [hLine], a
    inc a
    ld c, a
    ldh a, [hPhase]
    add a, c
    and 63
    ld l, a
    ldh a, [hWaveHi]
    ld h, a
    ld a, [hl]
    ldh [hNextScx], a
    ld a, c
    cp 72
    jr nz, .not72
    ld a, 40
    ldh [hNextScy], a
.not72:
    ld a, c
    cp 100
    ret nz
    ld a, $1B
    ldh [hNextBgp], a
    ret

CountText:
    db "HBlank irqs per frame", 0

    org $3000
; 64 entries each, page-aligned: 8 + round(8 * sin(2 pi i / 64)), and doubled
Wave:
    db 8, 9, 10, 10, 11, 12, 12, 13, 14, 14, 15, 15, 15, 16, 16, 16
    db 16, 16, 16, 16, 15, 15, 15, 14, 14, 13, 12, 12, 11, 10, 10, 9
    db 8, 7, 6, 6, 5, 4, 4, 3, 2, 2, 1, 1, 1, 0, 0, 0
    db 0, 0, 0, 0, 1, 1, 1, 2, 2, 3, 4, 4, 5, 6, 6, 7
    org $3100
Wave2:
    db 16, 18, 20, 20, 22, 24, 24, 26, 28, 28, 30, 30, 30, 32, 32, 32
    db 32, 32, 32, 32, 30, 30, 30, 28, 28, 26, 24, 24, 22, 20, 20, 18
    db 16, 14, 12, 12, 10, 8, 8, 6, 4, 4, 2, 2, 2, 0, 0, 0
    db 0, 0, 0, 0, 2, 2, 2, 4, 4, 6, 8, 8, 10, 12, 12, 14
