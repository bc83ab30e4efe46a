; mealy_tile_sel: our replica of Mealybug Tearoom m3_lcdc_tile_sel_change (DMG).
; Every line: 9 NOPs after LINE0_FIX, then LCDC.4 set for 8 T (mealy_lcdc_pulse.inc).
; Both maps are all tile 0; tile 0 is colour 0 (all $00) in the $8800 data
; (LCDC.4 = 0) and colour 3 (all $FF) in the $8000 data (LCDC.4 = 1), so a tile
; shows which of its two bitplane reads saw LCDC.4 = 1: plane 0 only -> 1,
; plane 1 only -> 2, both -> 3.
    title "MEALY TILE SEL"
    include "mealy_lib.inc"

PULSE_BIT EQU $10

Start:
    call MealyInit
    ld hl, $8000
    ld bc, 16
    ld d, $FF
    call MemFill
    include "mealy_lcdc_pulse.inc"
