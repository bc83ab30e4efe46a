"""The level ladder and the level select of the built-in game (orchard), and orchard.py.

gbx_lightning/roms/orchard.py restates the ROM's header for RL environments:
its addresses are checked against the assembler's symbols, its LEVELS table
against the ROM's level table, and its level-select input traces on
VecGameBoy (every ladder level: the right maze, seeds and start, in the play
state at exactly ``level_start_frames``) and, frame for frame, on gambatte.
GAME OVER must restart at the selected level, LEVEL CLEAR advance the ladder
(7 wraps to 4), and both banners must be the full game's, pixel for pixel.

Frames here are VecGameBoy ``run_frames`` frames from power-on; the game's
UpdateGame for frame i runs inside call i (its VBlank handler reads call i's
buttons), so the state after call i is the game's frame i.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from gbx_lightning.envs.ram_map import load_ram_map
from gbx_lightning.roms import asm, build_rom, orchard, rom_source_path

from tests._game_helpers import (
    GAME_ROM_NAME, OrchardModel, game_buttons, glyph_pixels, plan_clear, read_levels,
)

pytest.importorskip("warp")

BANNER_LINES = slice(48, 80)      # screen lines of both banners (the goal template)


@pytest.fixture(scope="module")
def rom() -> bytes:
    return build_rom(GAME_ROM_NAME)


@pytest.fixture(scope="module")
def symbols() -> dict:
    path = rom_source_path(GAME_ROM_NAME)
    _, syms = asm.assemble_with_symbols(path.read_text(), origin_file=str(path),
                                        include_dirs=(str(path.parent),))
    return syms


@pytest.fixture(scope="module")
def levels(rom, symbols) -> list[dict]:
    return read_levels(rom, symbols)


def machine(rom, num_envs):
    import warp as wp

    from gbx_lightning.emu.machine import VecGameBoy

    wp.config.quiet = True
    return VecGameBoy(rom, num_envs)


def run(gb, masks: np.ndarray, start: int = 0, stop: int | None = None, each=None):
    """Run frames start..stop-1 with masks[env, frame] (uint8); each(frame) after every frame."""
    stop = masks.shape[1] if stop is None else stop
    for f in range(start, stop):
        gb.run_frames(1, buttons=np.ascontiguousarray(masks[:, f]))
        if each is not None:
            each(f)


def select_masks(level: int, frames: int) -> np.ndarray:
    return np.array(orchard.buttons_per_frame(orchard.level_select_inputs(level), frames), np.uint8)


def ram(gb, env, addr, n=1):
    data = gb.read_memory(env, addr, n)
    return data[0] if n == 1 else data


def map_rows(gb, env) -> list[str]:
    data = gb.read_memory(env, orchard.MAP, orchard.MAP_ROWS * orchard.MAP_STRIDE)
    return [data[32 * y: 32 * y + 20].decode("latin-1") for y in range(16)]


def text_matches(frame, rom, symbols, row, text, col0=0) -> bool:
    """BG/window text row `row` (8-line tile row) shows `text` from tile column col0."""
    return all((frame[8 * row: 8 * row + 8, 8 * c: 8 * c + 8] == glyph_pixels(rom, symbols, ch)).all()
               for c, ch in enumerate(text, col0))


# ------------------------------------------------------------------ orchard.py against the source

def test_addresses_and_codes_match_the_source(symbols):
    """Every documented WRAM variable has its constant in orchard.py, at the symbol's address."""
    text = rom_source_path(GAME_ROM_NAME).read_text()
    documented = re.findall(r"^;\s+\$[0-9A-F]{4}(?:-\$[0-9A-F]{4})?\s+(w\w+)", text, flags=re.M)
    assert len(documented) >= 25
    for name in documented:
        const = re.sub(r"(?<=[a-z])(?=[A-Z])", "_", name[1:]).upper()    # wSeedsLeft -> SEEDS_LEFT
        assert getattr(orchard, const) == symbols[name], (const, name)
    assert orchard.SHADOW_OAM == symbols["wShadowOAM"] and orchard.MAP == symbols["wMap"]
    assert (orchard.GAME_STATE, orchard.GAME_OVER, orchard.LEVEL_CLEAR) == (0xC100, 0xC101, 0xC102)
    assert (orchard.START_LEVEL, orchard.LADDER_LEVEL) == (0xC11A, 0xC119)
    for code in ("PLAY", "DYING", "GAMEOVER", "CLEAR", "LOADING", "SELECT"):
        assert getattr(orchard, f"STATE_{code}") == symbols[f"STATE_{code}"], code
    for name in ("NUM_LEVELS", "FULL_GAME_LEVEL", "MAP_STRIDE", "MAP_ROWS", "MAP_COLS"):
        assert getattr(orchard, name) == symbols[name], name
    assert (orchard.RIGHT, orchard.LEFT, orchard.UP, orchard.DOWN) == tuple(
        symbols[f"DIR_{d}"] for d in ("RIGHT", "LEFT", "UP", "DOWN"))
    assert (orchard.BTN_A, orchard.SELECT, orchard.START) == (
        symbols["BTN_A"], symbols["BTN_SELECT"], symbols["BTN_START"])


def test_levels_table_matches_the_rom(levels):
    assert sorted(orchard.LEVELS) == list(range(1, orchard.NUM_LEVELS + 1)) == list(range(1, 8))
    for n, lv in orchard.LEVELS.items():
        rows = levels[n - 1]["rows"]
        assert lv.number == n and lv.name
        assert (lv.seeds, lv.beetles) == (sum(r.count("*") for r in rows), len(levels[n - 1]["hazards"])), n
    # the ladder climbs: training levels are smaller than the full game
    assert [orchard.LEVELS[n].seeds for n in (1, 2, 3)] == [4, 8, 12]
    assert [orchard.LEVELS[n].beetles for n in (1, 2, 3)] == [0, 0, 1]
    floor = [sum(c != "#" for r in lv["rows"] for c in r) for lv in levels]
    assert floor[0] < floor[1] < floor[2] < min(floor[3:])


def test_level_select_inputs_known_answers():
    S, R, L, T = orchard.SELECT, orchard.RIGHT, orchard.LEFT, orchard.START
    assert orchard.level_select_inputs(1) == [(0, S), (16, 0), (20, T), (24, 0)]
    assert orchard.level_select_inputs(3) == [(0, S), (16, 0), (20, R), (24, 0), (28, R), (32, 0),
                                              (36, T), (40, 0)]
    assert orchard.level_select_inputs(7) == [(0, S), (16, 0), (20, L), (24, 0), (28, T), (32, 0)]
    assert [d for f, d in orchard.level_select_inputs(4) if d in (R, L)] == [R, R, R]
    assert [d for f, d in orchard.level_select_inputs(5) if d in (R, L)] == [L, L, L]
    assert [orchard.level_start_frames(n) for n in range(1, 8)] == [29, 37, 45, 53, 53, 45, 37]
    assert orchard.buttons_per_frame(orchard.level_select_inputs(1), 26) == \
        [S] * 16 + [0] * 4 + [T] * 4 + [0] * 2
    assert orchard.buttons_per_frame([(0, 1)], 0) == []


@pytest.mark.parametrize("bad", [0, 8, -1, 1.0, "3", True, None])
def test_a_bad_level_is_a_one_line_value_error(bad):
    for fn in (orchard.level_select_inputs, orchard.level_start_frames):
        with pytest.raises(ValueError, match=r"^level: expected an int in 1\.\.7 .*got") as e:
            fn(bad)
        assert "\n" not in str(e.value)


def test_orchard_module_needs_no_torch_or_warp():
    import subprocess
    import sys

    code = ("import sys, gbx_lightning.roms.orchard as o; "
            "assert o.NUM_LEVELS == 7; assert 'torch' not in sys.modules and 'warp' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_build_is_byte_reproducible_and_rom_only(rom):
    from gbx_lightning.emu.cartridge import MBC_NONE, load_cartridge

    path = rom_source_path(GAME_ROM_NAME)
    again = [asm.assemble(path.read_text(), origin_file=str(path), include_dirs=(str(path.parent),))
             for _ in range(2)]
    assert again[0] == again[1] == rom
    cart = load_cartridge(rom)
    assert len(rom) == 32 * 1024 and cart.mbc == MBC_NONE and cart.ram_bytes == 0


def test_select_screen_text_has_a_glyph_for_every_character(rom, symbols):
    """The font draws only the characters the game uses: none on the menu may be blank."""
    at = symbols["SelectScreen"]
    rows = [rom[at + 20 * r: at + 20 * r + 20].decode("ascii") for r in range(16)]
    assert "SELECT LEVEL" in rows[3] and rows[5][10] == "1"
    assert rows[0] == rows[15] == "#" * 20 and all(r[0] == r[19] == "#" for r in rows)
    for ch in set("".join(rows)) - {" ", "#"}:
        assert glyph_pixels(rom, symbols, ch).any(), f"no glyph for {ch!r}"
    assert symbols["SELECT_DIGIT"] == orchard.MAP + 5 * orchard.MAP_STRIDE + 10


# ------------------------------------------------------------------ power-on and the select window

def test_select_opens_the_menu_only_in_the_first_two_game_frames(rom):
    """The game's first frame is call 5: SELECT from call 6 (game frame 2) opens the menu,
    from call 7 (game frame 3) it is too late, and with no button the full game plays."""
    gb = machine(rom, 4)
    masks = np.zeros((4, 40), np.uint8)
    masks[0, 0:16] = orchard.SELECT
    masks[1, 6:16] = orchard.SELECT
    masks[2, 7:16] = orchard.SELECT
    first = []
    run(gb, masks, 0, 6, each=lambda f: first.append(ram(gb, 3, orchard.FRAME_COUNT)))
    assert first == [0, 0, 0, 0, 0, 1]
    run(gb, masks, 6)
    for env, menu in enumerate((True, True, False, False)):
        state, from_select = ram(gb, env, orchard.GAME_STATE), ram(gb, env, orchard.FROM_SELECT)
        assert (state == orchard.STATE_SELECT, from_select) == (menu, int(menu)), env
        assert ram(gb, env, orchard.START_LEVEL) == (1 if menu else orchard.FULL_GAME_LEVEL), env
    assert ram(gb, 3, orchard.LADDER_LEVEL) == orchard.FULL_GAME_LEVEL
    # too late, SELECT only stirs the generator, as any new press does
    late, none = gb.read_memory(2, 0xC100, 0x400), gb.read_memory(3, 0xC100, 0x400)
    rng = orchard.RNG - 0xC100
    assert late[:rng] + late[rng + 2:] == none[:rng] + none[rng + 2:]
    assert late[rng: rng + 2] != none[rng: rng + 2]


# ------------------------------------------------------------------ every level from its trace

@pytest.fixture(scope="module")
def started(rom):
    """Each ladder level started by its trace, one env per level: {level: {...}} with the RAM
    at level_start_frames and one frame before, the menu's frame before START is read, and
    the frame two frames into play (the status bar is copied in the VBlank after the load)."""
    n = orchard.NUM_LEVELS
    longest = max(orchard.level_start_frames(lv) for lv in range(1, n + 1))
    masks = np.stack([select_masks(lv, longest + 3) for lv in range(1, n + 1)])
    gb = machine(rom, n)
    out = {lv: {} for lv in range(1, n + 1)}

    def each(f):
        for lv in range(1, n + 1):
            start, env = orchard.level_start_frames(lv), lv - 1
            if f + 1 == start - orchard.LOAD_FRAMES:          # START is read in the next frame
                out[lv]["menu"] = gb.frame()[env].copy()
                out[lv]["menu_state"] = ram(gb, env, orchard.GAME_STATE)
                out[lv]["menu_choice"] = ram(gb, env, orchard.START_LEVEL)
            if f + 1 == start - 1:
                out[lv]["before"] = ram(gb, env, orchard.GAME_STATE)
            if f + 1 == start:
                out[lv]["wram"] = gb.read_memory(env, 0xC100, 0x40)
                out[lv]["rows"] = map_rows(gb, env)
            if f + 1 == start + 2:
                out[lv]["status"] = gb.frame()[env].copy()
    run(gb, masks, each=each)
    return out


@pytest.mark.parametrize("level", range(1, 8))
def test_select_trace_starts_the_level(started, levels, rom, symbols, level):
    got, layout = started[level], levels[level - 1]
    w = got["wram"]

    def var(addr):
        return w[addr - 0xC100]
    assert got["before"] == orchard.STATE_LOADING                 # exactly level_start_frames
    assert var(orchard.GAME_STATE) == orchard.STATE_PLAY
    assert var(orchard.LADDER_LEVEL) == var(orchard.START_LEVEL) == level
    assert var(orchard.FROM_SELECT) == 1
    assert var(orchard.LEVEL) == level - 1
    assert var(orchard.SEEDS_LEFT) == orchard.LEVELS[level].seeds
    assert var(orchard.NUM_HAZARDS) == orchard.LEVELS[level].beetles
    assert var(orchard.GAME_OVER) == var(orchard.LEVEL_CLEAR) == 0
    assert var(orchard.SCORE) == var(orchard.SCORE + 1) == 0
    assert (var(orchard.PLAYER_X), var(orchard.PLAYER_Y)) == tuple(8 * c for c in layout["start"])
    assert got["rows"] == layout["rows"]
    # the beetles where the level table puts them, walking its way, read through the RAM map's fields
    fields = load_ram_map("orchard").fields
    beetles = [tuple(var(fields[name].address + fields[name].stride * i) for name in ("hazard_x", "hazard_y",
                                                                                      "hazard_dir"))
               for i in range(orchard.LEVELS[level].beetles)]
    assert beetles == [(8 * x, 8 * y, d) for x, y, d in layout["hazards"]]
    # the menu showed the choice just before START; play shows it on the status bar
    assert got["menu_state"] == orchard.STATE_SELECT and got["menu_choice"] == level
    assert text_matches(got["menu"], rom, symbols, 3, "SELECT LEVEL", 4)
    assert text_matches(got["menu"], rom, symbols, 5, f"< {level} >", 8)
    assert text_matches(got["status"], rom, symbols, 16, f" SCORE 00000  LV 0{level} ")
    seeds = orchard.LEVELS[level].seeds
    assert text_matches(got["status"], rom, symbols, 17, f" SEEDS LEFT {seeds:02d}      ")


@pytest.mark.parametrize("level", [3, 6])
def test_select_path_matches_gambatte_frame_for_frame(rom, level):
    """Power-on, the menu, the presses, the load and 60 frames of play (UP held for a
    while, the beetles walking): gambatte shows the same frames (harness: test_ppu_gambatte)."""
    pytest.importorskip("gambaterm")
    ppu = pytest.importorskip("tests.test_ppu_gambatte")
    from tests import oracles

    start = orchard.level_start_frames(level)
    frames = start + 60
    buttons = select_masks(level, frames)
    buttons[start + 4: start + 24] = orchard.UP
    gb, g = machine(rom, 1), oracles.Gambatte(rom)
    ours, theirs = [], []
    try:
        for k in range(frames + ppu.OFFSET):
            if k < frames:
                gb.run_frames(1, buttons=buttons[k: k + 1])
                ours.append(gb.frame()[0].copy())
            g.step(int(buttons[k - ppu.OFFSET]) if k >= ppu.OFFSET else 0)
            theirs.append(g.shades())
        ram_theirs = g.memory().read(0xC100, 0x20)
    finally:
        g.close()
    bad = ppu.compare(np.array(ours), np.array(theirs))
    assert not bad, f"level {level}: {len(bad)} frames differ from gambatte; first {bad[:5]}"
    assert ram(gb, 0, orchard.LADDER_LEVEL) == level and ram_theirs[0x19] == level
    assert len({f.tobytes() for f in ours}) > 30                 # menu, digits, maze, moves


# ------------------------------------------------------------------ banners, restart, ladder

@pytest.fixture(scope="module")
def full_game_banners(rom):
    """Lines 48-79 of the full game's GAME OVER and LEVEL CLEAR screens (the scripted trace
    of tests/_game_helpers.py at frames 490 and 1280, as test_game_rom checks them)."""
    gb = machine(rom, 1)
    out = {}
    for i in range(1281):
        gb.run_frames(1, buttons=np.array([game_buttons(i)], np.uint8))
        if i in (490, 1280):
            want = orchard.STATE_GAMEOVER if i == 490 else orchard.STATE_CLEAR
            assert ram(gb, 0, orchard.GAME_STATE) == want, i
            out["over" if i == 490 else "clear"] = gb.frame()[0][BANNER_LINES].copy()
    return out


def frames_until(gb, env, state, limit, buttons=None):
    """Run single frames until env's game state is `state`; the frames it took."""
    for k in range(1, limit + 1):
        gb.run_frames(1, buttons=buttons)
        if ram(gb, env, orchard.GAME_STATE) == state:
            return k
    raise AssertionError(f"env {env}: game state {state} not reached in {limit} frames")


def test_game_over_restarts_at_the_selected_level(rom, symbols, levels, full_game_banners):
    """Level 3: walk up into the beetle's row; the banner is the full game's; START brings
    back level 3 as the menu started it: same maze, score 0, LV 03 (the timeout restarts
    through the same code, RestartGame)."""
    level = 3
    start = orchard.level_start_frames(level)
    route = [(orchard.UP, 20), (orchard.LEFT, 12), (orchard.UP, 12)]   # (9,12) -> (9,8) -> (7,8) -> (7,6)
    masks = select_masks(level, start + sum(n for _, n in route))
    f = start
    for mask, n in route:
        masks[f: f + n] = mask
        f += n
    gb = machine(rom, 1)
    run(gb, masks[None])
    assert (ram(gb, 0, orchard.PLAYER_X), ram(gb, 0, orchard.PLAYER_Y)) == (56, 48)
    assert ram(gb, 0, orchard.GAME_OVER) == 0             # the beetle is still away to the right
    frames_until(gb, 0, orchard.STATE_GAMEOVER, 400)
    assert ram(gb, 0, orchard.GAME_OVER) == 1
    gb.run_frames(3)                                      # the banner takes two VBlanks
    np.testing.assert_array_equal(gb.frame()[0][BANNER_LINES], full_game_banners["over"])
    gb.run_frames(30)                                     # START is locked out at first
    gb.run_frames(4, buttons=np.array([orchard.START], np.uint8))
    frames_until(gb, 0, orchard.STATE_PLAY, 20)
    gb.run_frames(2)
    assert ram(gb, 0, orchard.LADDER_LEVEL) == ram(gb, 0, orchard.START_LEVEL) == 3
    assert ram(gb, 0, orchard.LEVEL) == 2                 # LV 03
    assert ram(gb, 0, orchard.SCORE, 2) == b"\0\0" and ram(gb, 0, orchard.GAME_OVER) == 0
    assert ram(gb, 0, orchard.SEEDS_LEFT) == 12 and map_rows(gb, 0) == levels[level - 1]["rows"]
    assert text_matches(gb.frame()[0], rom, symbols, 16, " SCORE 00000  LV 03 ")


def planned_route(levels, level) -> np.ndarray:
    """Per-frame d-pad masks that clear `level` from its start (rules model, margin 1)."""
    lv = levels[level - 1]
    start = (8 * lv["start"][0], 8 * lv["start"][1])
    hazards = [[8 * x, 8 * y, d] for x, y, d in lv["hazards"]]
    runs = plan_clear(lv["rows"], start, hazards, margin=1)
    model = OrchardModel(lv["rows"], start, hazards)
    for mask, n in runs:
        for _ in range(n):
            assert not model.step(mask)
    assert model.seeds_left == 0
    return np.array([mask for mask, n in runs for _ in range(n)], np.uint8)


def test_level_clear_advances_the_ladder(rom, symbols, levels, full_game_banners):
    """Cleared from the menu: level 1 -> 2, 3 -> 4 (into the full game) and 7 -> 4 (the
    full game loops); the score carries over and LEVEL CLEAR is the full game's banner."""
    cases = {1: 2, 3: 4, 7: 4}
    envs = list(cases)
    plays = {lv: planned_route(levels, lv) for lv in envs}
    # the frame whose UpdateGame takes the last seed (the route's last frame)
    clear_at = {lv: orchard.level_start_frames(lv) + len(plays[lv]) - 1 for lv in envs}
    next_at = {lv: clear_at[lv] + symbols["CLEAR_FRAMES"] + 10 for lv in envs}   # banner, 8-frame load
    frames = max(next_at.values()) + 1
    masks = np.zeros((len(envs), frames), np.uint8)
    for env, lv in enumerate(envs):
        start = orchard.level_start_frames(lv)
        masks[env, :start] = select_masks(lv, start)
        masks[env, start: start + len(plays[lv])] = plays[lv]
    gb = machine(rom, len(envs))
    got = {lv: {} for lv in envs}

    def each(f):
        for env, lv in enumerate(envs):
            if f == clear_at[lv] - 1:
                got[lv]["before"] = ram(gb, env, orchard.SEEDS_LEFT)
            if f == clear_at[lv]:
                got[lv]["clear"] = (ram(gb, env, orchard.GAME_STATE), ram(gb, env, orchard.LEVEL_CLEAR),
                                    ram(gb, env, orchard.SEEDS_LEFT))
                got[lv]["score"] = ram(gb, env, orchard.SCORE, 2)
            if f == clear_at[lv] + 3:                             # drawn over two VBlanks
                got[lv]["banner"] = gb.frame()[env][BANNER_LINES].copy()
            if f == next_at[lv]:
                got[lv]["next"] = gb.read_memory(env, 0xC100, 0x40)
                got[lv]["rows"] = map_rows(gb, env)
                got[lv]["frame"] = gb.frame()[env].copy()
    run(gb, masks, each=each)
    for lv, nxt in cases.items():
        g = got[lv]
        w = g["next"]

        def var(addr):
            return w[addr - 0xC100]
        assert g["before"] == 1 and g["clear"] == (orchard.STATE_CLEAR, 1, 0), lv
        np.testing.assert_array_equal(g["banner"], full_game_banners["clear"], err_msg=f"level {lv}")
        assert var(orchard.GAME_STATE) == orchard.STATE_PLAY, lv
        assert (var(orchard.LADDER_LEVEL), var(orchard.LEVEL)) == (nxt, nxt - 1), lv
        assert var(orchard.START_LEVEL) == lv                     # GAME OVER would restart here
        assert bytes(w[4:6]) == g["score"] != b"\0\0", lv          # the score carries over
        assert var(orchard.SEEDS_LEFT) == orchard.LEVELS[nxt].seeds, lv
        assert g["rows"] == levels[nxt - 1]["rows"], lv
        assert text_matches(g["frame"], rom, symbols, 16, f"LV 0{nxt}", 14), lv
