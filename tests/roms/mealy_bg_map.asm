; mealy_bg_map: our replica of Mealybug Tearoom m3_lcdc_bg_map_change (DMG).
; Every line: 9 NOPs after LINE0_FIX, then LCDC.3 set for 8 T (the same pulse
; as mealy_tile_sel: mealy_lcdc_pulse.inc). Map $9800 is all tile 0 (colour 0),
; map $9C00 all tile 1 (colour 3), $8800 data: a black tile is one whose tile
; number was read from the map while LCDC.3 was 1.
    title "MEALY BG MAP"
    include "mealy_lib.inc"

PULSE_BIT EQU $08

Start:
    call MealyInit
    ld hl, $9C00                ; map $9C00: tile 1
    ld bc, $0400
    ld d, 1
    call MemFill
    ld hl, $9010                ; tile 1 ($8800 data): colour 3; tile 0 stays colour 0
    ld bc, 16
    ld d, $FF
    call MemFill
    include "mealy_lcdc_pulse.inc"
