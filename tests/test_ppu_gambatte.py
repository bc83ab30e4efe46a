"""The project's PPU test ROMs on VecGameBoy against gambatte, frame for frame.

gambatte (``gambaterm``'s libgambatte, NO_BIOS, DMG) is cycle-accurate; both
start from the post-boot state and get the same scripted buttons each frame.

Frame boundaries: both end a frame as the PPU enters VBlank while the LCD is on
(VecGameBoy.run_frames), so our frame i is exactly gambatte's frame i + OFFSET,
and every frame from START on must be equal — plain lock-step equality.
OFFSET = 1: during the ROMs' start-up LCD-off period gambatte completes one
more frame than we do (its first call after the LCD goes off ends on its
70224-T budget, and its LCD-off frames are phased to the LCD-off write, ours to
the last VBlank).  Frames before START cover that start-up: there the two
disagree only in the frame the LCD is switched on in, where gambatte's video
buffer holds the partly drawn first frame (not shown on hardware; ours is
blank).  gambatte gets the buttons of our frame k - OFFSET at its frame k, so a
button change reaches both at the same emulated moment.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

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


OFFSET = 1
START = 8


def run_both(name: str, frames: int = FRAMES):
    """Run the ROM on both emulators; returns (ours, theirs, gb) with theirs[k] = gambatte's
    frame k, stepped so that theirs[i + OFFSET] should equal ours[i]."""
    from gbx_lightning.emu.machine import VecGameBoy

    rom = build(name)
    buttons = script(name)
    gb = VecGameBoy(rom, 1)
    g = oracles.Gambatte(rom)
    ours, theirs, obs_mismatch = [], [], []
    try:
        for k in range(frames + OFFSET):
            if k < frames:
                gb.run_frames(1, buttons=np.array([buttons(k)], np.uint8))
                ours.append(gb.frame()[0].copy())
                if not (gb.obs().numpy()[0] == ours[-1][::2, ::2]).all():
                    obs_mismatch.append(k)
            g.step(buttons(k - OFFSET) if k >= OFFSET else 0)
            theirs.append(g.shades())
    finally:
        g.close()
    assert not obs_mismatch, f"obs() is not frame()[::2, ::2] after frames {obs_mismatch[:5]}"
    return np.array(ours), np.array(theirs), gb


def compare(ours, theirs, start: int = START):
    """(frame, pixels different) for every frame from `start` on that differs."""
    bad = []
    for i in range(start, len(ours)):
        n = int((theirs[i + OFFSET] != ours[i]).sum())
        if n:
            bad.append((i, n))
    return bad


ROMS = ["ppu_bg_scroll", "ppu_window", "ppu_sprites", "ppu_obj16", "ppu_stat_irq", "ppu_raster"]


def inserted_pixel_lines(ours, theirs, lines: range, boundary: int, shade: int, start: int = START) -> list:
    """Frames i whose lines differ from gambatte's only as the DMG's refused window draws them (gambatte
    lacks it; render.refused_window_x): on a line of `lines`, one pixel of `shade` inserted at an x
    with x % 8 == boundary and the rest of the line a pixel later (frames from `start`, as compare).
    Returns the (frame, line) pairs so drawn; raises if a differing line is not one."""
    drawn = []
    for i in range(start, len(ours)):
        want = theirs[i + OFFSET]
        for ly in np.flatnonzero((ours[i] != want).any(axis=1)):
            line, ref = ours[i][ly], want[ly]
            first = int(np.flatnonzero(line != ref)[0])
            at = [x for x in range(boundary, first + 1, 8)
                  if line[x] == shade and (line[:x] == ref[:x]).all() and (line[x + 1:] == ref[x:159]).all()]
            assert ly in lines and at, f"frame {i} line {ly}: differs from gambatte other than by an inserted pixel"
            drawn.append((i, int(ly)))
    return drawn


@pytest.mark.slow
@pytest.mark.parametrize("name", ROMS)
def test_rom_frames_match_gambatte(name):
    ours, theirs, gb = run_both(name)
    assert gb.serial_output(0).startswith(b"PASS"), gb.serial_output(0)
    if name == "ppu_window":
        # LCDC.5 off on lines 72-95 of a frame whose window triggered: where WX - 7 meets a BG tile
        # boundary (SCX = 4: x % 8 == 4) the DMG inserts a colour-0 pixel (BGP $E4: shade 0), which
        # gambatte does not draw; everything else must be gambatte's
        drawn = inserted_pixel_lines(ours, theirs, range(72, 96), boundary=4, shade=0)
        assert len({i for i, _ in drawn}) >= 8, drawn[:5]     # the ROM's WX sweep meets the rule
        ours = ours.copy()
        for i, ly in drawn:
            ours[i][ly] = theirs[i + OFFSET][ly]
    bad = compare(ours, theirs)
    assert not bad, f"{name}: {len(bad)} frames differ from gambatte frame i + {OFFSET}; first {bad[:5]}"
    # the scene must actually change over the run, or the comparison proves little
    assert len({f.tobytes() for f in ours}) > 20
