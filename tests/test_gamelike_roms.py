"""The benchmark ROMs that look like games (tests/roms/gamelike.asm) and like a CPU test
(tests/roms/cpu_mix.asm) on VecGameBoy against gambatte, in lock-step, as the idiom ROMs
(tests/test_idiom_roms.py): the same random buttons, the same frame at the same emulated time
from START on, and the same WRAM at the end.

gamelike runs a music driver every VBlank (four channels: envelopes, triggers, length enables,
CH1's sweep, CH3's wave RAM reloaded between notes, vibrato writes every frame) and reads NR52
into a log each frame, so the WRAM comparison covers the sound unit's channel flags; its scroll
split's SCY write lands in mode 3, so one line a frame is drawn by the per-dot path. cpu_mix
runs 102 instructions from WRAM over operand tables and CRCs their results (the table compared
at the end), and checks its own CRC routine on the standard input.
"""
from __future__ import annotations

import zlib

import numpy as np
import pytest

from tests import oracles
from tests.test_idiom_roms import random_buttons
from tests.test_ppu_gambatte import OFFSET, build

FRAMES = 480
START = 12             # (both ROMs' set-up keeps the LCD off longer than the idiom ROMs')
WRAM_CHECKED = (0xC000, 0x0800)


@pytest.fixture(scope="module")
def runs():
    """name -> (our frames, gambatte's frames, our WRAM, gambatte's WRAM), run once per ROM."""
    from gbx_lightning.emu.machine import VecGameBoy

    out = {}
    for name in ("gamelike", "cpu_mix"):
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
        out[name] = (ours, theirs, gb.read_memory(0, *WRAM_CHECKED), their_wram)
    return out


pytestmark = pytest.mark.skipif(not oracles.gambatte_available(), reason="gambaterm not installed")


@pytest.mark.slow
@pytest.mark.parametrize("name", ["gamelike", "cpu_mix"])
def test_matches_gambatte(runs, name):
    ours, theirs, wram, their_wram = runs[name]
    bad = [(i, int((theirs[i + OFFSET] != ours[i]).sum())) for i in range(START, FRAMES)]
    bad = [b for b in bad if b[1]]
    assert not bad, f"{name}: {len(bad)} frames differ from gambatte; first (frame, pixels) {bad[:5]}"
    diff = [hex(WRAM_CHECKED[0] + i) for i in range(len(wram)) if wram[i] != their_wram[i]]
    assert not diff, f"{name}: WRAM differs from gambatte's at {diff[:8]}"
    assert len({f.tobytes() for f in ours}) > 10, f"{name}: the screen hardly changed"


@pytest.mark.slow
def test_gamelike_drives_the_sound_unit(runs):
    """The driver's NR52 log (the last 64 frames) shows what it claims to do: the APU on, each
    channel turned on by triggers and off again (rests switch DACs off, lengths run out; CH3's
    wave reloads switch its DAC off). gambatte reads the same log (test_matches_gambatte)."""
    wram = runs["gamelike"][2]
    log = wram[0x2C0:0x300]
    assert all(b & 0x80 for b in log), log.hex()
    seen = {b & 0x0F for b in log}
    assert len(seen) >= 3, f"NR52's channel bits barely change: {log.hex()}"
    for ch in range(4):     # each channel both on and off within the window
        assert any(b >> ch & 1 for b in log) and not all(b >> ch & 1 for b in log), (ch, log.hex())


@pytest.mark.slow
def test_cpu_mix_crc_known_answer(runs):
    """The ROM's CRC-32 of "123456789" is the standard check value (zlib's)."""
    wram = runs["cpu_mix"][2]
    assert int.from_bytes(wram[0x13C:0x140], "little") == zlib.crc32(b"123456789") == 0xCBF43926
