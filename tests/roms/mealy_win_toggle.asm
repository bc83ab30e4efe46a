; mealy_win_toggle: LCDC.5 (window enable) toggled in every line's mode 2, with the cycle
; counts of Mealybug Tearoom's m2_win_en_toggle (our own code and scene; the timing is
; theirs). The CPU idles in a field of NOPs; the mode-2 STAT interrupt's handler reads LCDC,
; flips bit 5 and writes it back (at 64 T after the interrupt, before mode 3), and returns
; to the top of the NOP field. The VBlank handler sets bit 5. WX = 7, WY = 0, so on the lines
; the window is on it covers the whole line.
; Scene: LCDC $99 (window map $9800, BG map $9C00, tiles $8000, objects off). Window map:
; rows of tile 35 and 36 in turn (each pixel row distinct: the window's row counter mod 16
; can be read off every line); BG map blank (tile 34). BGP $E4.
; Checked in tests/test_ppu_mealybug_window.py.
    title "MEALY WIN TOGGLE"
    include "ppu_lib.inc"

wCounter EQU $C0F0

Start:
    call Init
    ld hl, $9800                ; window map: rows of tile 35 and 36 in turn
    call MealyWindowTiles
    ld hl, $9C00                ; BG map: blank
    ld bc, $0400
    ld d, 34
    call MemFill
    xor a
    ld [wCounter], a
    ldh [rSCX], a
    ldh [rSCY], a
    ldh [rWY], a
    ld a, 7
    ldh [rWX], a
    ld a, $E4
    ldh [rBGP], a
    ld a, STAT_OAM
    ldh [rSTAT], a
    ld a, IE_VBLANK | IE_STAT
    ldh [rIE], a
    call ReportPass
    xor a
    ldh [rIF], a
    ld a, $99
    ldh [rLCDC], a
    ei
NopField:
    rept 1200
    nop
    endr
    jp NopField

VBlankHandler:
    ldh a, [rLCDC]              ; window on
    or $20
    ldh [rLCDC], a
    ld a, [wCounter]            ; a frame counter, as the original keeps
    inc a
    cp 10
    jp nz, .keep
    nop
.keep:
    ld [wCounter], a
    reti

StatHandler:                    ; 32 T after the interrupt (dispatch 20, jp 12 as counted)
    ldh a, [rLCDC]
    xor $20
    ldh [rLCDC], a              ; at 64: mode 2
    pop de
    ld de, NopField
    push de
    reti

    include "mealy_win.inc"
