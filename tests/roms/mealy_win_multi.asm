; mealy_win_multi: LCDC.5 (window enable) cleared and set again during mode 3, with the
; cycle counts of Mealybug Tearoom's m3_lcdc_win_en_change_multiple (MW_WXLY = 0) and
; m3_lcdc_win_en_change_multiple_wx (MW_WXLY = 1) (our own code and scene; the timing is
; theirs). The CPU idles in a field of NOPs; the mode-2 STAT interrupt's handler starts 32 T
; after it, spends 28 T reading LY (24 on line 0: the DMG's line-0 interrupt comes 4 T
; later, so the writes land on the same dot of every line), then:
; MW_WXLY = 0: WX = 24 at 84 T, WX = 120 at 124, LCDC.5 off at 148, on at 164.
; MW_WXLY = 1: WX = LY at 84 T, LCDC.5 off at 96, on at 104, off at 124, on at 132.
; WY = 0 and WX = 7 at the start; no objects.
; Scene, MW_WXLY = 0: LCDC $F3 (window map $9C00, BG map $9800, tiles $8000); BG map all
; font digit B (tile 11), window map rows of tile 35 and 36 in turn (each pixel row
; distinct: the window's row counter mod 16 can be read off every line). BGP $E4.
; MW_WXLY = 1: LCDC $E1 (window map $9C00, BG map $9800, tiles $8800, objects off); BG map
; all tile 0, a light grey tile (colour 1), window map all tile 1, black (colour 3). BGP $E4.
; Checked in tests/test_ppu_mealybug_window.py.
    title "MEALY WIN MULTI"
    include "mealy_lib.inc"

MW_WXLY EQU 0

    if MW_WXLY
MW_ON  EQU $E1
    else
MW_ON  EQU $F3
    endc
MW_OFF EQU MW_ON & $DF

Start:
    call Init
    if MW_WXLY
    ld hl, $9800
    ld bc, $0400
    ld d, 0
    call MemFill
    ld hl, $9C00
    ld bc, $0400
    ld d, 1
    call MemFill
    ld hl, GreyBlack            ; tiles 0 and 1 at $9000 (LCDC.4 = 0)
    ld de, $9000
    ld bc, 32
    call MemCopy
    else
    ld hl, $9800
    ld bc, $0400
    ld d, 11
    call MemFill
    ld hl, $9C00                ; window map: rows of tile 35 and 36 in turn
    call MealyWindowTiles
    endc
    xor a
    ldh [rSCX], a
    ldh [rSCY], a
    ldh [rWY], a
    ld a, 7
    ldh [rWX], a
    ld a, $E4
    ldh [rBGP], a
    ldh [rOBP0], a
    call ReportPass
    call MealyIrqSetup
    ld b, MW_ON
    ld c, MW_OFF
    ld hl, rLCDC
    ld [hl], b
    ei
    jp NopField

StatHandler:                    ; 32 T after the interrupt (dispatch 20, jp 12 as counted)
    ldh a, [rLY]                ; 28 T, 24 on line 0
    and a
    jr nz, .same
.same:
    if MW_WXLY
    ldh a, [rLY]
    ldh [rWX], a                ; WX = LY at 84
    nop
    ld [hl], c                  ; window off at 96
    ld [hl], b                  ; on at 104
    nop
    nop
    nop
    ld [hl], c                  ; off at 124
    ld [hl], b                  ; on at 132
    else
    ld a, 24
    nop
    ldh [rWX], a                ; WX = 24 at 84
    rept 5
    nop
    endr
    ld a, 120
    ldh [rWX], a                ; WX = 120 at 124
    nop
    nop
    nop
    nop
    ld [hl], c                  ; window off at 148
    nop
    nop
    ld [hl], b                  ; on at 164
    endc
    BACK_TO_NOPS de

GreyBlack:
    rept 8
    db $FF, $00
    endr
    rept 8
    db $FF, $FF
    endr

    include "mealy_win.inc"
