; ppu_wx0_write: WX = 0 written early in mode 3 (restored to 200 in HBlank), from a mode-2 STAT
; interrupt taken out of a field of NOPs, WX_LEAD M-cycles later per variant: the window (all
; colour 3) starts at x = -7 if the write lands before the pipeline compares WX for x = -7.
; Mealybug Tearoom m3_window_timing writes WX = LY at this dot (LEAD 2): its DMG reference shows
; the window on line 0 (WX = 0). Checked in tests/test_ppu_mealybug_replicas.py, with gambatte.
    title "WX0 WRITE"
    include "mealy_lib.inc"

WX_LEAD EQU 2

Start:
    call MealyInit
    ld hl, $9C00                ; window map: tile 1, colour 3
    ld bc, $0400
    ld d, 1
    call MemFill
    ld hl, $8010
    ld bc, 16
    ld d, $FF
    call MemFill
    call ReportPass
    call MealyIrqSetup
    xor a
    ldh [rSCX], a
    ldh [rSCY], a
    ldh [rWY], a
    ld a, $F1                   ; LCD on, window map $9C00, window on, $8000 data, BG on
    ldh [rLCDC], a
    ld a, 200
    ldh [rWX], a
    ld a, $E4
    ldh [rBGP], a
    ei
    jp NopField

StatHandler:
    LINE0_FIX
    rept WX_LEAD
    nop
    endr
    xor a
    ldh [rWX], a                ; LEAD 2: lands on dot 84 after the interrupt (mode 3 from 80)
    rept 40
    nop
    endr
    ld a, 200
    ldh [rWX], a
    BACK_TO_NOPS de