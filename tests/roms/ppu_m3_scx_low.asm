; ppu_m3_scx_low: SCX: fine and coarse scroll written during mode 3 (the low 3 bits are read once as the line starts; the tile column at each fetch).
; The frame: tests/roms/ppu_m3_body.inc; checked against gambatte and the
; properties in tests/test_ppu_mode3_writes.py.
    title "M3 SCX LOW"
    include "ppu_lib.inc"

M3_REG  EQU low(rSCX)
M3_A    EQU $00
M3_B    EQU $0B
M3_LCDC EQU $93
M3_SCX  EQU 0
M3_WY   EQU 0
M3_WX   EQU 0
M3_LEAD EQU 0
M3_SINGLE EQU 0

    include "ppu_m3_body.inc"
