; ppu_lcd_on: STAT and LY sampled every 14 M-cycles from the moment the LCD is
; switched on (48 samples, about 6 lines), then while it is off again (8
; samples), logged as (STAT, LY) pairs at $D000; the frame count and a copy of
; the log's length end at hLogEnd.  Pan Docs (LCDC.7, STAT): with the LCD off
; LY reads 0 and STAT mode 0; switched on, the PPU starts at line 0, whose first
; 80 dots skip the OAM scan (STAT reads mode 0), then draws as usual.  The log
; is compared with gambatte's by tests/test_ppu_stat_timing.py.
    title "PPU LCD ON"
    include "ppu_lib.inc"

hLogEnd EQU $FFA1
wLog    EQU $D000

Start:
    call Init           ; LCD off
    ld a, 2
    ldh [rLYC], a
    ld hl, wLog
    ld a, $91
    ldh [rLCDC], a      ; LCD on, then sample at once
    ld b, 48
    call Sample
    call WaitLY144
    xor a
    ldh [rLCDC], a      ; LCD off (in VBlank)
    ld b, 8
    call Sample
    ld a, l
    ldh [hLogEnd], a
    ld a, h
    ldh [hLogEnd+1], a
    ld a, $91
    ldh [rLCDC], a
Idle:
    jr Idle

; Sample: b times, append STAT and LY (14 M-cycles a sample).
Sample:
    ldh a, [rSTAT]
    ld [hl+], a
    ldh a, [rLY]
    ld [hl+], a
    dec b
    jr nz, Sample
    ret

VBlankHandler:
    reti
StatHandler:
    reti
