; ppu_wy_lcdc: the window's WY condition met by an LCDC write mid-line.
; Every frame: LCDC.5 (window) off from VBlank; on line WL_WY = WY, after its
; mode-2 request (halted with IME = 0: no jitter), WL_LEAD M-cycles of NOPs (or,
; with WL_HBLANK, a wait for that line's mode 0), then LCDC.5 is set. At the
; line's start the window was off, so the WY condition was not met there; the
; DMG compares LY with WY (and LCDC.5) all along the line, so the write meets it
; (GateBoy: ROGE_WY_MATCH sampled by SARY every M-cycle, latched in REJO until
; VBlank). WL_PULSE = 1 clears LCDC.5 again 4 M-cycles after the write and sets
; it once more as line WL_AGAIN starts: the condition met in between holds.
; WL_EARLY = 1 sets LCDC.5 in VBlank instead (the reference frames).
; Checked in tests/test_ppu_mode3_writes.py.
; Scene: BG map $9800 pattern tiles 16 + (col + row) mod 8, window map $9C00
; font digits col mod 16.
    title "WY LCDC"
    include "ppu_lib.inc"

WL_WY     EQU 60
WL_WX     EQU 88
WL_LEAD   EQU 0
WL_HBLANK EQU 0
WL_EARLY  EQU 0
WL_PULSE  EQU 0
WL_AGAIN  EQU 70

Start:
    call Init
    ld hl, $9800
    ld b, 0
.row:
    ld c, 0
.col:
    ld a, b
    add a, c
    and 7
    add a, 16
    ld [hl+], a
    inc c
    ld a, c
    cp 32
    jr nz, .col
    inc b
    ld a, b
    cp 32
    jr nz, .row
    ld hl, $9C00
    ld bc, $0400
.wcol:
    ld a, l
    and 15
    ld [hl+], a
    dec bc
    ld a, b
    or c
    jr nz, .wcol
    ld a, $E4
    ldh [rBGP], a
    xor a
    ldh [rSCY], a
    ldh [rSCX], a
    ld a, WL_WY
    ldh [rWY], a
    ld a, WL_WX
    ldh [rWX], a
    ld a, STAT_OAM
    ldh [rSTAT], a
    ld a, IE_STAT
    ldh [rIE], a
    ld a, $D1 | (WL_EARLY * $20)
    ldh [rLCDC], a
    call ReportPass
.frame:
    call WaitLY144
    ld a, $D1 | (WL_EARLY * $20)
    ldh [rLCDC], a              ; the window off (WL_EARLY: on) for the frame
.wait:
    ldh a, [rLY]
    cp WL_WY - 1
    jr nz, .wait
    rept 20
    nop                         ; past line WL_WY - 1's mode-2 request
    endr
    xor a
    ldh [rIF], a
    halt                        ; IME = 0: wakes at line WL_WY's mode-2 request
    nop
    rept WL_LEAD
    nop
    endr
    if WL_HBLANK
.hblank:
    ldh a, [rSTAT]
    and 3
    jr nz, .hblank
    endc
    ld a, $F1
    ldh [rLCDC], a              ; the window on
    if WL_PULSE
    rept 4
    nop
    endr
    ld a, $D1
    ldh [rLCDC], a              ; off again, within the line
.again:
    ldh a, [rLY]
    cp WL_AGAIN
    jr nz, .again
    ld a, $F1
    ldh [rLCDC], a              ; on again in line WL_AGAIN's mode 2
    endc
    jr .frame

VBlankHandler:
StatHandler:
    reti
