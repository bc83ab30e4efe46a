"""Golden frames of the PPU test ROMs, derived from the reference renderer.

For ROMs whose registers only change in VBlank, the picture of a frame is a
function of VRAM, OAM and the PPU registers alone.  The test renders that state
with the slow pixel-by-pixel reference (tests/_ppu_helpers.py, written from Pan
Docs) and checks three things agree: the reference picture of gambatte's state
equals gambatte's own frame; the reference picture of VecGameBoy's state at the
matching moment is the same picture; and its sha256 is the golden hash below.
Both end a frame as VBlank starts, ours one frame behind gambatte's count
(test_ppu_gambatte.OFFSET), so our state after K - 1 frames is the state
gambatte's frame K was drawn from.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests import oracles
from tests._ppu_helpers import Scene, frame_sha256, reference_frame
from tests.test_ppu_gambatte import OFFSET, build

pytestmark = pytest.mark.skipif(not oracles.gambatte_available(), reason="gambaterm not installed")

GOLDEN = {  # name: (gambatte frame K, sha256 of the 144x160 shade frame)
    "ppu_bg_scroll": (300, "d7538a58dbc98372d771babd75d6dec15bff383acdbdd8404b58ffa6b429f616"),
    "ppu_obj16": (300, "4575f193118516b618a73d6b223e31f86775c77014d700fb17b828e4c2db4c95"),
    "ppu_sprites": (300, "95235429a7759266b77c18532a1b6c48ba8574637f6729a94d92f436d5bf62dc"),
    "ppu_stat_irq": (200, "528d907c6e15690acc821f7539f52c79126daba20ed4a43682cf67bd4fda82ab"),
}


def scene_from(vram: bytes, oam: bytes, io_40_4b: bytes) -> Scene:
    s = Scene()
    s.vram[:] = np.frombuffer(vram, np.uint8)[:0x2000]
    s.oam[:] = np.frombuffer(oam, np.uint8)[:0xA0]
    r = io_40_4b
    s.regs[:] = [r[0x0], r[0x2], r[0x3], r[0xA], r[0xB], r[0x7], r[0x8], r[0x9]]
    return s


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_rom_frame_matches_reference_and_golden_hash(name):
    from gbx_lightning.emu.machine import VecGameBoy

    k, golden = GOLDEN[name]
    rom = build(name)
    g = oracles.Gambatte(rom)
    try:
        for _ in range(k):
            g.step(0)
        shown = g.shades()  # before save_state: gambatte draws an on-screen message after it
        st = g.state()
    finally:
        g.close()
    hram = st["hram"]  # $FE00-$FFFF
    ref_g, _ = reference_frame(scene_from(st["vram"], hram[:0xA0], hram[0x140:0x14C]))
    np.testing.assert_array_equal(ref_g, shown, err_msg=f"{name}: reference vs gambatte frame {k}")

    gb = VecGameBoy(rom, 1)
    gb.run_frames(k - OFFSET)
    ref_o, _ = reference_frame(scene_from(gb.read_memory(0, 0x8000, 0x2000), gb.read_memory(0, 0xFE00, 0xA0),
                                          gb.read_memory(0, 0xFF40, 12)))
    np.testing.assert_array_equal(ref_o, shown, err_msg=f"{name}: reference of VecGameBoy's state")
    assert frame_sha256(ref_o) == golden
