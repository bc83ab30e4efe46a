"""CPU access to VRAM/OAM while the PPU uses them (tests/roms/ppu_vram_block.asm).

Pan Docs ("Accessing VRAM and OAM"): in mode 3 VRAM reads return $FF and writes
are ignored; in modes 2 and 3 the same holds for OAM.  gambatte must pass the
ROM (that shows its expectations are right), and so must VecGameBoy, whose bus
asks emu/ppu.py's ``vram_accessible`` / ``oam_accessible``.
"""

from __future__ import annotations

import pytest

from tests import oracles
from tests.test_ppu_gambatte import build

pytestmark = pytest.mark.skipif(not oracles.gambatte_available(), reason="gambaterm not installed")


def test_gambatte_passes_vram_block_rom():
    result = oracles.run_gambatte(build("ppu_vram_block"), 30)
    assert result.result_byte == oracles.RESULT_PASS, result.serial_log
    assert result.serial_log == b"PASS\n"


def test_vecgameboy_passes_vram_block_rom():
    from gbx_lightning.emu.machine import VecGameBoy

    gb = VecGameBoy(build("ppu_vram_block"), 1)
    gb.run_frames(30)
    assert gb.serial_output(0) == b"PASS\n"
