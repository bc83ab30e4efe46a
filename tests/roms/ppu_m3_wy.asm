; ppu_m3_wy: WY written during mode 3 to the line's LY (the window's WY
; condition met mid-line), with the window enabled.
; The frame: tests/roms/ppu_m3_body.inc, one write per line (M3_SINGLE): WY =
; M3_B in mode 3, WY = M3_A (never LY) again in HBlank. Only on line M3_B = 143,
; the last visible line (so no later line sees a WY condition met in this
; frame), does the write meet the WY condition: it lands at x = 17 (dot 25 of
; the pipeline; delay 7), before x = WX - 7 = 81, so the window starts there.
; Checked against gambatte and the frame with WY = 143 all along in
; tests/test_ppu_mode3_writes.py (with M3_WX = 15 too: x = 8 passes before the
; write, and the line shows no window).
    title "M3 WY"
    include "ppu_lib.inc"

M3_REG  EQU low(rWY)
M3_A    EQU 200
M3_B    EQU 143
M3_LCDC EQU $F3
M3_SCX  EQU 0
M3_WY   EQU 200
M3_WX   EQU 88
M3_LEAD EQU 0
M3_SINGLE EQU 1

    include "ppu_m3_body.inc"
