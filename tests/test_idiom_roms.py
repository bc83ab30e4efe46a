"""The idiom ROMs (tests/roms/idiom_*.asm) on VecGameBoy against gambatte, in lock-step.

Each idiom ROM is a game-like loop built on one idiom of real game code (joypad
busy-waits, LY/STAT polling, HALT, HRAM OAM DMA, timer interrupts, long copy
loops) - the code the emulator's fast paths for I/O must get exactly right. Both
emulators get the same random buttons, each held for several frames, and must show
the same frame at the same emulated time: our frame i is gambatte's frame
i + OFFSET (the harness of tests/test_ppu_gambatte.py), for every frame from START
on. At the end both are at the same VBlank start, and the ROM's variables in WRAM
(their own frame counters, positions, the random state) must agree too.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests import oracles
from tests.test_ppu_gambatte import OFFSET, START, build

ROM_DIR = Path(__file__).resolve().parent / "roms"
IDIOM_ROMS = sorted(p.stem for p in ROM_DIR.glob("idiom_*.asm"))
FRAMES = 640
WRAM_CHECKED = (0xC000, 0x0800)   # the library's variables, the ROMs' own, their buffers

pytestmark = pytest.mark.skipif(not oracles.gambatte_available(), reason="gambaterm not installed")


def random_buttons(frames: int, seed: int) -> list[int]:
    """A button mask per frame: random masks (none half of the time) held 3-12 frames."""
    rng = np.random.default_rng(seed)
    out: list[int] = []
    while len(out) < frames:
        mask = int(rng.integers(1, 256)) if rng.random() < 0.5 else 0
        out += [mask] * int(rng.integers(3, 13))
    return out[:frames]


def test_every_idiom_is_covered():
    assert {"idiom_joypad", "idiom_ly", "idiom_stat", "idiom_halt", "idiom_dma", "idiom_timer",
            "idiom_memcpy"} <= set(IDIOM_ROMS)


@pytest.mark.slow
@pytest.mark.parametrize("name", IDIOM_ROMS)
def test_idiom_rom_matches_gambatte(name):
    from gbx_lightning.emu.machine import VecGameBoy

    rom = build(name)
    buttons = random_buttons(FRAMES, seed=sum(map(ord, name)))
    gb = VecGameBoy(rom, 1)
    g = oracles.Gambatte(rom)
    ours, theirs = [], []
    try:
        for k in range(FRAMES + OFFSET):
            if k < FRAMES:
                gb.run_frames(1, buttons=np.array([buttons[k]], np.uint8))
                ours.append(gb.frame()[0].copy())
            g.step(buttons[k - OFFSET] if k >= OFFSET else 0)
            theirs.append(g.shades())
        their_wram = g.memory().read(*WRAM_CHECKED)
    finally:
        g.close()
    bad = [(i, int((theirs[i + OFFSET] != ours[i]).sum())) for i in range(START, FRAMES)]
    bad = [b for b in bad if b[1]]
    assert not bad, f"{name}: {len(bad)} frames differ from gambatte; first (frame, pixels) {bad[:5]}"
    wram = gb.read_memory(0, *WRAM_CHECKED)
    diff = [hex(WRAM_CHECKED[0] + i) for i in range(len(wram)) if wram[i] != their_wram[i]]
    assert not diff, f"{name}: WRAM differs from gambatte's at {diff[:8]}"
    # the buttons must show on screen, or the comparison proves little
    assert len({f.tobytes() for f in ours}) > 10, f"{name}: the screen hardly changed"
