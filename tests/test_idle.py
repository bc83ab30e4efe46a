"""Idle-loop skipping (gbx_lightning/emu/idle.py) changes nothing but speed.

Every idiom ROM, tests/roms/idle_loops.asm (loops the skip must and must not shorten, their
iteration counts kept in WRAM), the workload ROM and the built-in game run with the skip on
and off under
the same random buttons (held 3-12 frames): every frame, the CPU registers and cycle count,
WRAM and HRAM must be equal after every launch. The polling ROMs must actually skip, or the
comparison proves little.
"""
from __future__ import annotations

import numpy as np
import pytest

from gbx_lightning.emu import VecGameBoy
from gbx_lightning.emu.idle import idle_skips, set_idle_skip
from tests.test_idiom_roms import IDIOM_ROMS, random_buttons
from tests.test_ppu_gambatte import build

FRAMES = 300
POLLING = {"idiom_joypad", "idiom_ly", "idle_loops"}     # loops the skip must find


def _rom(name: str) -> bytes:
    if name == "orchard":
        from gbx_lightning.roms import build_rom
        return build_rom("orchard")
    return build(name)


@pytest.mark.parametrize("name", IDIOM_ROMS + ["idle_loops", "workload", "orchard"])
def test_skip_changes_no_frame_or_register(name):
    rom = _rom(name)
    on, off = VecGameBoy(rom, 1), VecGameBoy(rom, 1)
    set_idle_skip(off, False)
    buttons = random_buttons(FRAMES, seed=sum(map(ord, name)) + 1)
    step = 1
    k = 0
    while k < FRAMES:
        n = min(step, FRAMES - k)          # launches of 1..5 frames: runs start and end anywhere
        for gb in (on, off):
            gb.run_frames(n, buttons=np.array([buttons[k]], np.uint8), release_after=max(1, n // 2))
        assert (on.frame() == off.frame()).all(), f"{name}: frame {k + n - 1} differs with the skip"
        assert on.registers(0) == off.registers(0), f"{name}: registers differ after frame {k + n - 1}"
        k += n
        step = step % 5 + 1
    for addr, length in ((0xC000, 0x2000), (0xFF80, 0x7F)):
        assert on.read_memory(0, addr, length) == off.read_memory(0, addr, length), f"{name}: memory differs"
    assert idle_skips(off) == 0
    if name in POLLING:
        assert idle_skips(on) > FRAMES, f"{name}: the skip found no idle loop"
