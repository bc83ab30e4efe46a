; ppu_m3_lcdc_win: LCDC.5 (window) toggled during mode 3.
; The frame: tests/roms/ppu_m3_body.inc; checked against gambatte and the
; properties in tests/test_ppu_mode3_writes.py.
    title "M3 LCDC_WIN"
    include "ppu_lib.inc"

M3_REG  EQU low(rLCDC)
M3_A    EQU $F3
M3_B    EQU $D3
M3_LCDC EQU $F3
M3_SCX  EQU 0
M3_WY   EQU 0
M3_WX   EQU 40
M3_LEAD EQU 0
M3_SINGLE EQU 0

    include "ppu_m3_body.inc"
