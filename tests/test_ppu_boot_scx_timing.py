"""Mode 3's end against SCX's fine scroll, timed from the post-boot state (DMG).

docboy-test-suite's DMG rounds `hblank_stat_scx0..7` (read for their expected values) run from
$0100: `nop; jp` to the test, 123 M-cycles, SCX written, N M-cycles, then STAT read. Mode 3
still shows ($83) at N = 56 for SCX mod 8 = 0-3 and at N = 57 for 4-7; mode 0 ($80) one M-cycle
later. So these pin both the PPU's phase after the boot ROM and the 1-dot-per-pixel cost of the
fine scroll. Each case is its own ROM (the timing counts from power-on)."""
from __future__ import annotations

import pytest

import oracles

CASES = [(scx, wait, stat) for scx in range(8)
         for wait, stat in (((56 if scx < 4 else 57), 0x83), ((57 if scx < 4 else 58), 0x80))]


def rom(scx: int, wait: int) -> bytes:
    from gbx_lightning.roms.asm import assemble
    nops = "    nop\n"
    return assemble("    org $0100\n" + nops + "    jp start\n    org $0150\nstart:\n" + nops * 123
                    + f"    ld a, ${scx:02X}\n    ldh [$43], a\n" + nops * wait
                    + "    ldh a, [$41]\n    ld [$C000], a\nhang:\n    jr hang\n")


@pytest.mark.parametrize("scx,wait,stat", CASES)
def test_mode3_end_after_boot(scx, wait, stat):
    wp = pytest.importorskip("warp")
    wp.config.quiet = True
    from gbx_lightning.emu import VecGameBoy

    image = rom(scx, wait)
    gb = VecGameBoy(image, 1)
    gb.run_frames(2)
    assert gb.read_memory(0, 0xC000, 1)[0] == stat, f"SCX {scx}, {wait} M-cycles after the write"
    if oracles.gambatte_available():
        assert oracles.run_gambatte(image, 2).memory(0xC000, 1)[0] == stat
