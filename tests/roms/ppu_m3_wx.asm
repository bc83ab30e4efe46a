; ppu_m3_wx: WX written during mode 3 with the window on.
; The frame: tests/roms/ppu_m3_body.inc; checked against gambatte and the
; properties in tests/test_ppu_mode3_writes.py.
    title "M3 WX"
    include "ppu_lib.inc"

M3_REG  EQU low(rWX)
M3_A    EQU $30
M3_B    EQU $58
M3_LCDC EQU $F3
M3_SCX  EQU 0
M3_WY   EQU 0
M3_WX   EQU 48
M3_LEAD EQU 0
M3_SINGLE EQU 0

    include "ppu_m3_body.inc"
