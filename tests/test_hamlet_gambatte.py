"""hamlet on VecGameBoy and on gambatte, frame for frame (harness: tests/test_ppu_gambatte.py).

One tour of stage 1 as GameBoyEnv would take it, from power-on through the stage select: the Start menu (the
trainer card, SAVE with its "SAVING..." wait, OPTION changed), the PC beside the stairs (a POTION withdrawn), the
stairs, the living room, the door: the village, scrolled. Every frame of it must be gambatte's, pixel for pixel, and
the game's variables (WRAM) the same at the end: the window overlay, its text printed letter by letter, the fades,
the map loads, the sprites over and under the boxes, the camera. The later stages' routes are checked the same way
in one run per stage.
"""
from __future__ import annotations

import numpy as np
import pytest

from gbx_lightning.roms import hamlet

from tests._hamlet_helpers import machine, rom_and_symbols, stage_route_masks

pytest.importorskip("warp")

# From the bedroom's start (3,5): the Start menu: KAI (the card) and back, SAVE (YES, "SAVING...", the line after);
# Start again: OPTION (SLOW, STEREO) and out. To the PC: right 2, up 3, face it; A (its first box), A (the menu),
# A (WITHDRAW), A (the POTION), A (its box; the menu is printed again), B (log off); idle steps wait for the letters
# (at SLOW now). Right, up onto the stairs; the living room and the door (the house route's second half).
TOUR = ("SDA..B" "DA......A" + "." * 14 + "A..." "SDA.RDRB.B." "RRUUUU"
        "A......A.....A......A......A......B." "RU" + hamlet.HOUSE_ROUTE[hamlet.HOUSE_ROUTE.index(".."):])


def play_both(masks: np.ndarray):
    pytest.importorskip("gambaterm")
    ppu = pytest.importorskip("tests.test_ppu_gambatte")
    from tests import oracles

    rom = rom_and_symbols()[0]
    gb, g = machine(1), oracles.Gambatte(rom)
    ours, theirs = [], []
    frames = len(masks)
    try:
        for k in range(frames + ppu.OFFSET):
            if k < frames:
                gb.run_frames(1, buttons=masks[k: k + 1])
                ours.append(gb.frame()[0].copy())
            g.step(int(masks[k - ppu.OFFSET]) if k >= ppu.OFFSET else 0)
            theirs.append(g.shades())
        wram_theirs = g.memory().read(0xC000, 0x1000)
    finally:
        g.close()
    return np.array(ours), np.array(theirs), gb, wram_theirs, ppu


def test_stage1_tour_matches_gambatte_frame_for_frame():
    masks = stage_route_masks(1, TOUR)
    ours, theirs, gb, wram_theirs, ppu = play_both(masks)
    bad = ppu.compare(ours, theirs)
    assert not bad, f"{len(bad)} frames differ from gambatte (offset {ppu.OFFSET}); first {bad[:5]}"
    wram_ours = gb.read_memory(0, 0xC000, 0x1000)
    # the same game state: map, events, bag, PC, options, saves, UI, frame count, RNG, objects, the BG copy...
    diff = [hex(0xC000 + k) for k in range(0x1000) if wram_ours[k] != wram_theirs[k]]
    assert not diff, f"WRAM differs at {diff[:10]}"
    w = wram_ours[0x100:0x120]
    assert w[0] == hamlet.MAP_VILLAGE and w[0x0F] == 1 and w[0x0D] == 2 and w[0x0E] == 1   # saved, SLOW, STEREO
    assert w[3:5] == bytes([1, hamlet.ITEM_POTION]) and w[8] == 0                          # the POTION withdrawn
    assert len({f.tobytes() for f in ours}) > 400          # menus, text, fades, scrolling: the run shows a lot


@pytest.mark.parametrize("stage", [2, 3, 4])
def test_later_stage_routes_match_gambatte_frame_for_frame(stage):
    """The kid stepping aside, the elder's LANTERN in its box; the guard; the KEY, the gate, the shrine (and the
    bell): NPCs walking by script and by timer (the girl in the village, the RNG seeded from DIV)."""
    route = hamlet.ROUTES[stage] + (hamlet.BELL_ROUTE if stage == 4 else "")
    ours, theirs, gb, wram_theirs, ppu = play_both(stage_route_masks(stage, route))
    bad = ppu.compare(ours, theirs)
    assert not bad, f"stage {stage}: {len(bad)} frames differ from gambatte; first {bad[:5]}"
    assert gb.read_memory(0, 0xC000, 0x1000) == wram_theirs
