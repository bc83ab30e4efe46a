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
    ld hl, WinTiles
    ld de, $8230
    ld bc, WinTilesEnd - WinTiles
    call MemCopy
    ld hl, $9800                ; window map: rows of tile 35 and 36 in turn
    ld bc, $0400
.wrow:
    ld a, l
    and $20
    swap a
    rrca
    add a, 35
    ld [hl+], a
    dec bc
    ld a, b
    or c
    jr nz, .wrow
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

; tile 35: row r has colour 3 at column 0, colour 1 at column 1 + (r & 3), colour 2 at
; column 5 + (r >> 2); tile 36 the same plus colour 3 at column 7
WinTiles:
    db $C0, $84, $A0, $84, $90, $84, $88, $84, $C0, $82, $A0, $82, $90, $82, $88, $82
    db $C1, $85, $A1, $85, $91, $85, $89, $85, $C1, $83, $A1, $83, $91, $83, $89, $83
WinTilesEnd:
