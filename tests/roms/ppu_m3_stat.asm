; ppu_m3_stat: STAT's mode read across the end of mode 3, on lines where WX
; is written in mode 3 (the per-dot path draws and times them: emu/ppu_dots.py).
; M3S_WX0: WX as each line starts, M3S_WX: the value written in mode 3
; (tests/test_ppu_mode3_writes.py assembles it with other values). M3S_REG: the
; register written (low(hTemp): an HRAM byte, so no PPU write and mode 3's length
; is ppu.py's formula), M3S_SCX: SCX all frame.
; The window is enabled (LCDC $F3, WY = 0) all frame; WX = $FF never starts it.
;
; Every visible line: halted with IME = 0 until its mode-2 STAT request, a
; delay of LY mod 8 M-cycles, M3S_WX written to WX early in mode 3 (well before
; x = 88 - 7 = 81, where WX = 88 starts the window), STAT read 38 M-cycles later
; and stored at $D000 + LY, WX restored in HBlank. The read moves 4 dots per
; line over a group of 8, across the end of mode 3 (172 dots, plus 6 when the
; window starts on the line): the lines of a group that read mode 3 measure it.
    title "PPU M3 STAT"
    include "ppu_lib.inc"

wLog    EQU $D000
M3S_WX0 EQU $FF
M3S_WX  EQU 88
M3S_REG EQU low(rWX)
M3S_SCX EQU 0

Start:
    call Init
    ld hl, wLog
    ld bc, 256
    ld d, $FF
    call MemFill
    ld a, $E4
    ldh [rBGP], a
    xor a
    ldh [rSCY], a
    ldh [rWY], a
    ld a, M3S_SCX
    ldh [rSCX], a
    ld a, M3S_WX0
    ldh [rWX], a
    ld a, STAT_OAM
    ldh [rSTAT], a
    ld a, IE_STAT
    ldh [rIE], a
    ld a, $F3
    ldh [rLCDC], a
    call ReportPass
    ld c, M3S_REG
.line:
    xor a
    ldh [rIF], a
    halt                        ; IME = 0: wakes at the mode-2 request, no interrupt taken
    nop
    ldh a, [rLY]
    ld b, a
    and 7
    xor 7
    ld e, a
    ld d, 0
    ld hl, .sled
    add hl, de
    jp hl
.sled:
    rept 7
    nop
    endr
    ld a, M3S_WX
    ldh [c], a
    rept 35
    nop
    endr
    ldh a, [rSTAT]
    ld l, b
    ld h, high(wLog)
    ld [hl], a
    ld a, M3S_WX0
    ldh [c], a
    jr .line

VBlankHandler:
StatHandler:
    reti
