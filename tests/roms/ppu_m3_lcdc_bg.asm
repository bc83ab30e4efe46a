; ppu_m3_lcdc_bg: LCDC.0 (BG enable) toggled during mode 3.
; The frame: tests/roms/ppu_m3_body.inc; checked against gambatte and the
; properties in tests/test_ppu_mode3_writes.py.
    title "M3 LCDC_BG"
    include "ppu_lib.inc"

M3_REG  EQU low(rLCDC)
M3_A    EQU $93
M3_B    EQU $92
M3_LCDC EQU $93
M3_SCX  EQU 0
M3_WY   EQU 0
M3_WX   EQU 0
M3_LEAD EQU 0
M3_SINGLE EQU 0

    include "ppu_m3_body.inc"
