"""The project's PPU test ROMs on VecGameBoy against gambatte, frame for frame.

gambatte (``gambaterm``'s libgambatte, NO_BIOS, DMG) is cycle-accurate; both
start from the post-boot state and get the same scripted buttons each frame.

Frame boundaries: gambatte's ``run_for`` returns when a frame completes (VBlank
start), while ``run_frames(1)`` runs 70224 T-cycles, so after the ROM turns
the LCD on our boundary sits at a fixed line L of the frame in progress.  Our
``frame()`` then holds lines 0..L-1 of frame k and L..143 of frame k-1.  The
test rebuilds that expectation from gambatte's frames k and k-1 (L from the
PPU state), finds the frame offset k - i once, and requires every line of
every frame from frame 6 on (the ROMs have turned the LCD on by then) to match
with that same offset: lock-step over all frames.  Before that the two
boundaries see the LCD in different states (our boundary falls after the ROM
turned the LCD off, gambatte's just before), so those frames are not compared.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gbx_lightning.emu import state as S
from tests import oracles

ROM_DIR = Path(__file__).resolve().parent / "roms"
FRAMES = 600

pytestmark = pytest.mark.skipif(not oracles.gambatte_available(), reason="gambaterm not installed")


def build(name: str) -> bytes:
    from gbx_lightning.roms.asm import assemble

    path = ROM_DIR / f"{name}.asm"
    return assemble(path.read_text(), origin_file=str(path), include_dirs=(str(ROM_DIR),))


def script(name: str):
    """Scripted buttons per frame (project order: bit0 Right .. bit7 Start)."""
    def buttons(i: int) -> int:
        phase = (i // 40) % 6
        if name == "ppu_bg_scroll":
            return (0x00, 0x01, 0x10, 0x11, 0x00, 0x10)[phase]
        if name == "ppu_window":
            return 0x20 if phase in (2, 3) else 0
        if name == "ppu_sprites":
            return (0x00, 0x05, 0x02, 0x0A, 0x08, 0x01)[phase]
        if name == "ppu_obj16":
            return 0x80 if phase == 4 else 0
        if name == "ppu_raster":
            return (0x00, 0x10, 0x04, 0x14, 0x00, 0x10)[phase]
        return 0
    return buttons


def _drawn_lines(gb, env: int = 0) -> int:
    """Lines of the frame in progress already drawn (144 in VBlank)."""
    r32 = gb._arrays["r32"].numpy()
    ly, mode = int(r32[env, S.R_LY]), int(r32[env, S.R_PPU_MODE])
    if ly >= 144 or mode == 1:
        return 144
    return ly + 1 if mode == 0 else ly


def run_both(name: str, frames: int = FRAMES, settle: int = 30):
    """Run the ROM on both emulators; returns (ours, drawn_lines, theirs, offset, gb).

    The first `settle` frames run without buttons and fix the frame offset
    k = i + offset between gambatte's frame k and ours i; after that gambatte
    gets the buttons of our frame k - offset, so a button change reaches both
    at the same emulated moment (the ROMs read the joypad in VBlank only).
    """
    from gbx_lightning.emu.machine import VecGameBoy

    rom = build(name)
    buttons = script(name)
    gb = VecGameBoy(rom, 1)
    g = oracles.Gambatte(rom)
    ours, drawn, theirs = [], [], []

    def step_ours(mask):
        gb.run_frames(1, buttons=np.array([mask], np.uint8))
        ours.append(gb.frame()[0].copy())
        drawn.append(_drawn_lines(gb))

    def step_theirs(mask):
        g.step(mask)
        theirs.append(g.shades())

    try:
        for _ in range(settle):
            step_ours(0)
            step_theirs(0)
        offset = find_offset(np.array(ours), np.array(drawn), np.array(theirs), settle - 8)
        if offset is None:
            return np.array(ours), np.array(drawn), np.array(theirs), None, gb
        for k in range(settle, frames + offset):
            if k < frames:
                step_ours(buttons(k))
            step_theirs(buttons(k - offset) if k - offset >= 0 else 0)
    finally:
        g.close()
    return np.array(ours), np.array(drawn), np.array(theirs), offset, gb


def find_offset(ours, drawn, theirs, i):
    """The k - i for which our frame i equals gambatte's frames k (top) and k-1 (bottom)."""
    for d in range(-1, 6):
        if 1 <= i + d < len(theirs) and (expected_from(theirs, i + d, drawn[i]) == ours[i]).all():
            return d
    return None


def expected_from(theirs: np.ndarray, k: int, lines: int) -> np.ndarray:
    out = theirs[k - 1].copy()
    out[:lines] = theirs[k][:lines]
    return out


def compare(ours, drawn, theirs, offset, start: int = 6):
    """(frame, pixels different) for every frame from `start` on that differs."""
    bad = []
    for i in range(start, len(ours)):
        n = int((expected_from(theirs, i + offset, drawn[i]) != ours[i]).sum())
        if n:
            bad.append((i, n))
    return bad


ROMS = ["ppu_bg_scroll", "ppu_window", "ppu_sprites", "ppu_obj16", "ppu_stat_irq", "ppu_raster"]


@pytest.mark.slow
@pytest.mark.parametrize("name", ROMS)
def test_rom_frames_match_gambatte(name):
    ours, drawn, theirs, offset, gb = run_both(name)
    assert gb.serial_output(0).startswith(b"PASS"), gb.serial_output(0)
    assert offset is not None, f"{name}: no frame offset lines frame 22 up with gambatte"
    bad = compare(ours, drawn, theirs, offset)
    assert not bad, f"{name}: {len(bad)} frames differ from gambatte (offset {offset}); first {bad[:5]}"
    # the scene must actually change over the run, or the comparison proves little
    assert len({f.tobytes() for f in ours}) > 20
