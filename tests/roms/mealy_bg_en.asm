; mealy_bg_en: our replica of Mealybug Tearoom m3_lcdc_bg_en_change (DMG).
; Every line: 9 NOPs after LINE0_FIX, then LCDC.0 cleared for 12 T (write,
; NOP, write), set for 8 T, cleared for 8 T, set again. The BG is solid colour
; 3 (black) and the ruler's objects are transparent, so every white pixel is a
; pixel drawn while LCDC.0 was 0 (the DMG draws BG and window as colour 0).
    title "MEALY BG EN"
    include "mealy_lib.inc"

Start:
    call MealyInit
    ld hl, $8000                ; tile 0 ($8000 data): colour 3; the maps are all tile 0
    ld bc, 16
    ld d, $FF
    call MemFill
    ld a, 1                     ; tile 1: blank
    call MealyRuler
    call ReportPass
    call MealyIrqSetup
    xor a
    ldh [rSCX], a
    ldh [rSCY], a
    ld a, $E4
    ldh [rOBP0], a
    ldh [rBGP], a
    ld b, $93                   ; LCD on, $8000 data, map $9800, objects on, BG on
    ld c, $92                   ; the same with LCDC.0 = 0
    ld hl, rLCDC
    ld [hl], b
    ei
    jp NopField

StatHandler:
    LINE0_FIX
    rept 9
    nop
    endr
    ld [hl], c
    nop
    ld [hl], b
    ld [hl], c
    ld [hl], b
    BACK_TO_NOPS de