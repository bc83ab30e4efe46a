; ppu_m3_bgp: BGP: palette writes during mode 3 (Pan Docs: BGP is read as each pixel is output).
; The frame: tests/roms/ppu_m3_body.inc; checked against gambatte and the
; properties in tests/test_ppu_mode3_writes.py.
    title "M3 BGP"
    include "ppu_lib.inc"

M3_REG  EQU low(rBGP)
M3_A    EQU $E4
M3_B    EQU $1B
M3_LCDC EQU $93
M3_SCX  EQU 0
M3_WY   EQU 0
M3_WX   EQU 0
M3_LEAD EQU 0
M3_SINGLE EQU 0

    include "ppu_m3_body.inc"
