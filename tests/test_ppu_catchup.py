"""The lazy PPU's catch-up over many past lines (ppu.ppu_sync): line by line while the frame is
drawn, and on the CPU in one step for a run of lines while it is not (ppu._lines_in_bulk). Both must
leave the PPU where the hardware is: LY and the line's start, the STAT line and IF (the LY=LYC
match on its line), the frame's WY condition and the window's line counter (Pan Docs, Window:
the counter counts the lines the window was drawn on, from the line where LY = WY)."""
import numpy as np
import pytest
import warp as wp

from gbx_lightning.emu import VecGameBoy
from gbx_lightning.emu.state import (R_LY, R_MODE3_LEN, R_PPU_MODE, R_STAT_LINE, R_WIN_LINE, R_WY_TRIGGERED,
                                     T_LINE_START, T_PPU_EVENT)

from test_emu_core import make_rom

wp.config.quiet = True

WY, LYC = 40, 90
# DI, IE = 0 (no interrupt ends the CPU's runs); WY = 40, WX = 7; STAT: the LY=LYC source only, LYC = 90;
# LCDC = $B1 (LCD, window and BG on). Then a loop that touches no PPU register for ~12,300 T (27 lines)
# and reads IF ($FF0F: every peripheral is caught up first) into WRAM at HL+, then clears it: each read
# catches the PPU up over ~27 lines, across WY's line and LYC's.
PROG = bytes([0xF3,                    # di
              0xAF, 0xE0, 0xFF,        # xor a ; ldh [IE],a
              0x3E, WY, 0xE0, 0x4A,    # ld a,WY ; ldh [WY],a
              0x3E, 0x07, 0xE0, 0x4B,  # ld a,7 ; ldh [WX],a
              0x3E, 0x40, 0xE0, 0x41,  # ld a,$40 ; ldh [STAT],a
              0x3E, LYC, 0xE0, 0x45,   # ld a,LYC ; ldh [LYC],a
              0x3E, 0xB1, 0xE0, 0x40,  # ld a,$B1 ; ldh [LCDC],a
              0x21, 0x00, 0xC0,        # ld hl,$C000
              0xAF, 0xE0, 0x0F,        # xor a ; ldh [IF],a
              # .read:
              0x0E, 0x03,              # ld c,3
              0x06, 0x00,              # .outer: ld b,0
              0x05,                    # .inner: dec b
              0x20, 0xFD,              # jr nz,.inner
              0x0D,                    # dec c
              0x20, 0xF8,              # jr nz,.outer
              0xF0, 0x0F,              # ldh a,[IF]
              0x22,                    # ld [hl+],a
              0xAF, 0xE0, 0x0F,        # xor a ; ldh [IF],a (each entry: the requests since the last)
              0x7C, 0xFE, 0xC4,        # ld a,h ; cp $C4
              0x20, 0xEB,              # jr nz,.read
              0x18, 0xFE])             # jr $ (the log is full: 1 KiB)

SLOTS32 = {"LY": R_LY, "PPU mode": R_PPU_MODE, "STAT line": R_STAT_LINE, "window line": R_WIN_LINE,
           "WY met": R_WY_TRIGGERED, "mode 3 length": R_MODE3_LEN}
SLOTS64 = {"line start": T_LINE_START, "PPU event": T_PPU_EVENT}


def _ppu_state(gb):
    r32, r64 = gb._arrays["r32"].numpy()[0], gb._arrays["r64"].numpy()[0]
    out = {k: int(r32[s]) for k, s in SLOTS32.items()}
    out.update({k: int(r64[s]) for k, s in SLOTS64.items()})
    out["IF"] = gb.read_memory(0, 0xFF0F, 1)[0]
    return out


def test_catch_up_over_many_lines_in_undrawn_frames():
    """Frame by frame the same PPU state and IF log whether the frame is drawn (line by line) or not
    (on the CPU: runs of lines in one step), and the window's line counter at the frame's end is the
    number of lines from WY to 143."""
    rom = make_rom({0x100: PROG})
    drawn, undrawn = VecGameBoy(rom, 1), VecGameBoy(rom, 1)
    for frame in range(4):
        drawn.run_frames(1, render="full")
        undrawn.run_frames(1, render="none")
        assert _ppu_state(undrawn) == _ppu_state(drawn), f"frame {frame}"
        assert drawn.read_memory(0, 0xC000, 0x400) == undrawn.read_memory(0, 0xC000, 0x400), f"frame {frame}"
        if frame == 0:
            # lines WY..143 drew the window; the LY=LYC request came in the 4th read's lines (~81-108)
            assert (_ppu_state(undrawn)["window line"], _ppu_state(undrawn)["WY met"]) == (144 - WY, 1)
            assert undrawn.read_memory(0, 0xC000, 5) == bytes([0xE0, 0xE0, 0xE0, 0xE2, 0xE0])
