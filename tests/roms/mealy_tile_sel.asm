; mealy_tile_sel: our replica of Mealybug Tearoom m3_lcdc_tile_sel_change (DMG).
; Every line: 9 NOPs after LINE0_FIX, then LCDC.4 set for 8 T. Both maps are
; all tile 0; tile 0 is colour 0 (all $00) in the $8800 data (LCDC.4 = 0) and
; colour 3 (all $FF) in the $8000 data (LCDC.4 = 1), so a tile shows which of
; its two bitplane reads saw LCDC.4 = 1: plane 0 only -> 1, plane 1 only -> 2,
; both -> 3. The ruler's objects use tile $19, blank here (on hardware the boot
; ROM leaves the (R) logo there; it only hides BG pixels, the timing is the same).
    title "MEALY TILE SEL"
    include "mealy_lib.inc"

Start:
    call MealyInit
    ld hl, $8000
    ld bc, 16
    ld d, $FF
    call MemFill
    ld a, $19
    call MealyRuler
    call ReportPass
    call MealyIrqSetup
    xor a
    ldh [rSCX], a
    ldh [rSCY], a
    ld a, $FF
    ldh [rOBP0], a
    ld a, $E4
    ldh [rBGP], a
    ld b, $83                   ; LCD on, $8800 data, map $9800, objects on, BG on
    ld c, $93                   ; the same with LCDC.4 = 1
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
    ld [hl], b
    BACK_TO_NOPS
