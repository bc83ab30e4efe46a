"""The embedded game ROM (gbx_lightning/roms/orchard.asm) on gambatte, PyBoy and VecGameBoy.

One scripted input trace (``GAME_INPUT_TRACE``, tests/_game_helpers.py) plays
the game: steps onto seeds at known tiles, pushes against a wall, waits for
the fruit, walks into a beetle's row (game over), restarts with Start, dies
again and lets the game restart by itself, then eats every seed (a route
planned over a Python model of the rules) and reaches level 2. At
checkpoints the test reads the game's WRAM (addresses documented in the .asm
header, checked against the assembler's symbols) and asserts what the
game's rules say must hold there.

For the PPU frame-for-frame comparison (tests/test_ppu_gambatte.py style),
import ``GAME_ROM_NAME`` and ``GAME_INPUT_TRACE`` (or ``game_buttons(frame)``)
from tests/_game_helpers.py (no pytest side effects there).

Frame alignment: the emulators put frame boundaries at different points
(gambatte at VBlank start, VecGameBoy every 70224 T-cycles from power-on,
PyBoy after its own boot ROM), so the game's frame lags the trace index by a
frame or two differently on each. Checkpoints therefore sit after idle
stretches, where the state no longer depends on that lag.
"""

from __future__ import annotations

import re
from collections import deque

import numpy as np
import pytest

from gbx_lightning.roms import asm, build_rom, orchard, rom_source_path

from tests._game_helpers import (
    GAME_INPUT_TRACE, GAME_ROM_NAME, LEFT, LEVEL1_CLEAR_ROUTE, RIGHT, UP,
    OrchardModel, game_buttons, glyph_pixels, plan_clear, read_levels,
)


# ------------------------------------------------------------------ the ROM

@pytest.fixture(scope="module")
def rom() -> bytes:
    return build_rom(GAME_ROM_NAME)


@pytest.fixture(scope="module")
def symbols() -> dict:
    path = rom_source_path(GAME_ROM_NAME)
    _, syms = asm.assemble_with_symbols(path.read_text(), origin_file=str(path),
                                        include_dirs=(str(path.parent),))
    return syms


def test_rom_assembles_with_a_valid_header(rom):
    from gbx_lightning.emu.cartridge import MBC_NONE, load_cartridge

    cart = load_cartridge(rom)
    assert len(rom) == 32 * 1024
    assert cart.title == "ORCHARD"
    assert cart.cart_type == 0x00 and cart.mbc == MBC_NONE
    assert cart.rom_banks == 2 and cart.ram_bytes == 0
    assert cart.header_checksum_ok
    assert rom[0x100:0x104] == bytes([0x00, 0xC3]) + rom[0x102:0x104]   # nop; jp Start
    assert build_rom(GAME_ROM_NAME) == rom                               # deterministic build


def test_documented_memory_map_matches_the_source(symbols):
    """Every 'address name' line of the header's MEMORY MAP is the symbol's real address."""
    text = rom_source_path(GAME_ROM_NAME).read_text()
    documented = re.findall(r"^;\s+\$([0-9A-F]{4})\s+(w\w+)", text, flags=re.M)
    assert len(documented) >= 20
    for addr, name in documented:
        assert symbols[name] == int(addr, 16), name
    assert symbols["wMap"] == 0xC200 and symbols["wShadowOAM"] == 0xC000


# ------------------------------------------------------------------ levels

# read_levels(...)[FULL] is the full game's first maze, where power-on starts
FULL = orchard.FULL_GAME_LEVEL - 1


def test_levels_are_closed_connected_mazes(rom, symbols):
    levels = read_levels(rom, symbols)
    assert [sum(r.count("*") for r in lv["rows"]) for lv in levels] == [4, 8, 12, 22, 20, 16, 18]
    assert [len(lv["hazards"]) for lv in levels] == [0, 0, 1, 2, 3, 3, 4]
    assert levels[FULL]["start"] == (1, 1)
    for n, lv in enumerate(levels, 1):
        rows = lv["rows"]
        assert set("".join(rows)) <= set("#.*"), n
        assert rows[0] == rows[15] == "#" * 20 and all(r[0] == r[19] == "#" for r in rows), n
        sx, sy = lv["start"]
        assert rows[sy][sx] == ".", n
        assert len(lv["hazards"]) <= 4
        for hx, hy, d in lv["hazards"]:
            assert rows[hy][hx] != "#" and d in (1, 2, 4, 8), (n, hx, hy, d)
            # a beetle walled in both ways would stand still (on a seed: unwinnable)
            dx, dy = {1: (1, 0), 2: (-1, 0), 4: (0, -1), 8: (0, 1)}[d]
            assert rows[hy + dy][hx + dx] != "#" or rows[hy - dy][hx - dx] != "#", (n, hx, hy)
        # every non-wall tile (so every seed) is reachable from the start
        seen, todo = {(sx, sy)}, deque([(sx, sy)])
        while todo:
            x, y = todo.popleft()
            for nx, ny in ((x + 1, y), (x - 1, y), (x, y + 1), (x, y - 1)):
                if rows[ny][nx] != "#" and (nx, ny) not in seen:
                    seen.add((nx, ny))
                    todo.append((nx, ny))
        free = {(x, y) for y in range(16) for x in range(20) if rows[y][x] != "#"}
        assert seen == free, f"level {n}: unreachable tiles {sorted(free - seen)}"


# ------------------------------------------------------------------ running the trace

class Wram:
    """The game's variables, read from one emulator's memory (addresses from the symbols)."""

    def __init__(self, read, symbols):
        self.s = symbols
        base = symbols["wGameState"]
        self.b = read(base, 0x40)
        self.base = base
        self.map = read(symbols["wMap"], 0x200)
        self.oam = read(symbols["wShadowOAM"], 0xA0)

    def __getitem__(self, name):
        return self.b[self.s[name] - self.base]

    @property
    def score(self) -> int:     # BCD tens
        return self["wScore"] | self.b[self.s["wScore"] + 1 - self.base] << 8

    @property
    def player(self) -> tuple:
        return self["wPlayerX"], self["wPlayerY"]

    def tile(self, x, y) -> str:
        return chr(self.map[32 * y + x])

    def rows(self) -> list[str]:
        return [bytes(self.map[32 * y: 32 * y + 20]).decode("latin-1") for y in range(16)]


CHECKPOINTS = (8, 49, 69, 89, 105, 229, 330, 450, 490, 520, 550, 590, 730, 800, 830, 929,
               1030, 1130, 1240, 1280, 1350, 1499)
PIXEL_CHECKPOINTS = (89, 490, 1280, 1499)


def run_trace(make, frames=len(GAME_INPUT_TRACE)):
    """Run the trace on one emulator; returns {checkpoint: (memory reader, frame or None)}.

    `make()` returns (step(mask), read(addr, length), shades()) for a fresh emulator.
    """
    step, read, shades, close = make()
    out = {}
    try:
        for i in range(frames):
            step(game_buttons(i))
            if i in CHECKPOINTS:
                out[i] = (read(), shades() if i in PIXEL_CHECKPOINTS else None)
    finally:
        close()
    return out


def gambatte_runner(rom):
    """Memory comes from save states, and gambatte overlays a "state saved" message
    on its video for a while after each one, so frames come from a twin that is
    never saved (same ROM, same inputs: the same machine)."""
    from tests import oracles

    g, twin = oracles.Gambatte(rom), oracles.Gambatte(rom)

    def step(mask):
        g.step(mask)
        twin.step(mask)

    def read():
        return g.memory().read

    def close():
        g.close()
        twin.close()
    return step, read, twin.shades, close


def pyboy_runner(rom):
    from tests import oracles

    p = oracles.PyBoyOracle(rom)
    frame = [0]

    def step(mask):     # render only around the frames the test looks at (PyBoy's slow part;
        # its frame straddles two ticks)
        p.step(mask, render=frame[0] in PIXEL_CHECKPOINTS or frame[0] + 1 in PIXEL_CHECKPOINTS)
        frame[0] += 1

    def read():
        snapshot = bytes(p.pb.memory[0xC000:0xE000])
        return lambda addr, n: snapshot[addr - 0xC000: addr - 0xC000 + n]
    return step, read, p.shades, p.close


def vec_runner(rom):
    import warp as wp

    from gbx_lightning.emu.machine import VecGameBoy

    wp.config.quiet = True
    gb = VecGameBoy(rom, 1)

    def step(mask):
        gb.run_frames(1, buttons=np.array([mask], np.uint8))

    def read():
        snapshot = gb.read_memory(0, 0xC000, 0x2000)
        return lambda addr, n: snapshot[addr - 0xC000: addr - 0xC000 + n]
    return step, read, (lambda: gb.frame()[0].copy()), (lambda: None)


RUNNERS = {"gambatte": gambatte_runner, "pyboy": pyboy_runner, "vecgameboy": vec_runner}


REQUIRES = {"gambatte": "gambaterm", "pyboy": "pyboy", "vecgameboy": "warp"}
_RUNS: dict = {}


def trace_run(name, rom, symbols):
    """{checkpoint: (Wram, frame or None)} for the whole trace on emulator `name` (cached)."""
    pytest.importorskip(REQUIRES[name])
    if name not in _RUNS:
        runs = run_trace(lambda: RUNNERS[name](rom))
        _RUNS[name] = {i: (Wram(read, symbols), frame) for i, (read, frame) in runs.items()}
    return _RUNS[name]


@pytest.fixture(scope="module", params=list(RUNNERS))
def played(request, rom, symbols):
    """(emulator name, {checkpoint: (Wram, frame)}) for the whole trace on one emulator."""
    return request.param, trace_run(request.param, rom, symbols)


def test_trace_game_logic(played, rom, symbols):
    name, cp = played
    level1 = read_levels(rom, symbols)[FULL]["rows"]     # the full game's level 1
    w = {i: m for i, (m, _) in cp.items()}
    for i, m in w.items():
        assert m["wVblankLate"] == 0, f"{name}: VBlank work overran at checkpoint {i}"

    # playing from power-on: level 1 as in the ROM, player on its start tile
    m = w[8]
    assert (m["wGameState"], m["wGameOver"], m["wLevel"], m.score) == (0, 0, 0, 0), name
    assert m.player == (8, 8) and m["wSeedsLeft"] == 22
    assert m.rows() == level1

    # RIGHT x 8 frames at 2 px/frame = 16 px: onto the seed at (3,1)
    m = w[49]
    assert m.player == (24, 8), name
    assert (m.score, m["wSeedsLeft"], m["wSeedsEaten"]) == (0x0001, 21, 1)
    assert m.tile(3, 1) == "." and level1[1][3] == "*"
    assert m["wFacing"] == RIGHT and m["wPlayerDir"] == 0

    # DOWN against the wall below (3,1): no movement at all
    m = w[69]
    assert level1[2][3] == "#"
    assert m.player == (24, 8) and m["wFacing"] == RIGHT, name

    # RIGHT x 16 frames = 32 px, seeds at (5,1) and (7,1): 30 points in all
    m = w[89]
    assert m.player == (56, 8) and (m.score, m["wSeedsLeft"]) == (0x0003, 19), name
    assert m.tile(5, 1) == m.tile(7, 1) == "."
    m = w[105]     # one step left and back: same place, facing right again
    assert m.player == (56, 8) and m["wFacing"] == RIGHT and m.score == 3
    # shadow OAM: player in slot 0 (OAM y = y + 16, x = x + 8), side view, no flip;
    # beetles in slots 1-2 with palette OBP1, X-flipped when walking left; rest hidden
    s = m.s
    assert list(m.oam[0:4]) == [8 + 16, 56 + 8, s["T_PLAYER_SIDE_A"], 0], name
    for k, (hx, hy, d) in enumerate(hazards_of(m), 1):
        y, x, tile, attr = m.oam[4 * k: 4 * k + 4]
        assert tile in (s["T_BEETLE_A"], s["T_BEETLE_B"])
        # (PyBoy's frame ends inside the game's VBlank-time update, so its memory can
        # hold a beetle already moved but not yet copied to the sprite table)
        assert (y, x) == (hy + 16, hx + 8) or name == "pyboy", (name, k)
        assert attr == s["OAM_PAL1"] | (s["OAM_XFLIP"] if d == LEFT else 0) | (s["OAM_YFLIP"] if d == UP else 0)
    assert not any(m.oam[12::4]), name

    # the fruit: on a floor tile of the layout, drawn in the map, worth nothing yet
    m = w[229]
    assert m["wFrameCount"] >= 220 - 5
    if m["wBonusX"]:
        bx, by = m["wBonusX"], m["wBonusY"]
        assert level1[by][bx] == "." and m.tile(bx, by) == "$", (name, bx, by)
    elif name != "pyboy":     # seeded from DIV: only an accurate start-up gives this seed
        pytest.fail(f"{name}: no fruit on the field at frame 229 (seed {m['wSeed']:#x})")

    m = w[330]
    assert m.player == (64, 24) and m["wGameOver"] == 0, name
    # facing down: the up view, Y-flipped
    assert list(m.oam[0:4]) == [24 + 16, 64 + 8, symbols["T_PLAYER_UP_A"], symbols["OAM_YFLIP"]], name

    # (8,4) is on beetle 1's row: it arrives and the game is over
    m = w[450]
    assert m["wGameOver"] == 1 and m["wGameState"] in (1, 2), name
    assert m.player == (64, 32)
    m = w[490]
    assert (m["wGameState"], m["wGameOver"]) == (2, 1), name
    assert not any(m.oam[0::4]), name                 # every sprite hidden under the banner
    assert m.score in (0x0003, 0x0008)        # 0x0008: the fruit lay on the path (other seeds)

    # START: level 1 again from scratch
    m = w[520]
    assert (m["wGameState"], m["wGameOver"], m.score, m["wLevel"]) == (0, 0, 0, 0), name
    assert m.player == (8, 8) and m["wSeedsLeft"] == 22 and m.rows() == level1
    m = w[550]
    assert m.player == (8, 32) and m.score == 1 and m.tile(1, 3) == ".", name
    m = w[590]
    assert m["wGameOver"] == 1, name
    m = w[730]
    assert m["wGameState"] == 2, name        # no Start pressed: still game over
    m = w[800]
    assert (m["wGameState"], m["wGameOver"], m.score) == (0, 0, 0), name   # restarted by itself
    m = w[830]
    assert m.player == (24, 8) and m.score == 1, name
    assert w[929]["wSeedsEaten"] == 5

    # the planned route eats the other 21 seeds: LEVEL CLEAR
    m = w[1240]
    assert (m["wGameState"], m["wLevelClear"], m["wGameOver"]) == (3, 1, 0), name
    assert m["wSeedsLeft"] == 0 and m["wSeedsEaten"] == 26 and "*" not in "".join(m.rows())
    assert (bcd(m.score) - 22) % 5 == 0            # 22 seeds, plus 5 per fruit
    # then level 2 loads and the score carries over
    m2 = w[1350]
    level2 = read_levels(rom, symbols)[FULL + 1]
    assert (m2["wGameState"], m2["wLevelClear"], m2["wLevel"]) == (0, 0, 1), name
    assert m2["wSeedsLeft"] == 20 and m2.rows() == level2["rows"]
    assert m2.player == (8 * level2["start"][0], 8 * level2["start"][1])
    assert m2.score == m.score
    assert w[1499]["wGameState"] == 0 and w[1499]["wLevel"] == 1


def bcd(value: int) -> int:
    return int(f"{value:x}")


def test_trace_pixels(played, rom, symbols):
    """Status bar digits (window layer) and the GAME OVER banner, from the tiles' bits."""
    name, cp = played
    _, frame = cp[89]
    # window row 0 at line 128: " SCORE 00030  LV 01 "
    text = " SCORE 00030  LV 01 "
    for col, ch in enumerate(text):
        got = frame[128:136, 8 * col: 8 * col + 8]
        assert (got == glyph_pixels(rom, symbols, ch)).all(), f"{name}: status char {col} {ch!r}"
    _, frame = cp[490]
    checker = np.array([3, 3, 3, 3, 0, 0, 0, 0] * 20, np.uint8)
    for y in range(48, 52):
        assert (frame[y] == checker).all(), (name, y)
        assert (frame[y + 4] == checker[::-1]).all(), (name, y + 4)
        assert (frame[y + 24] == checker).all(), (name, y + 24)
    assert_banner_text(frame, rom, symbols, ("     GAME  OVER     ", "    PRESS  START    "), name)

    # LEVEL CLEAR: solid black edge rows, white-on-black text; no sprite on top
    _, frame = cp[1280]
    assert (frame[48:56] == 3).all() and (frame[72:80] == 3).all(), name
    assert_banner_text(frame, rom, symbols, ("    LEVEL  CLEAR    ", "     WELL  DONE     "), name)

    # level 2's status bar, with the score the game holds
    m, frame = cp[1499]
    text = f" SCORE {m.score:04x}0  LV 02 "
    for col, ch in enumerate(text):
        got = frame[128:136, 8 * col: 8 * col + 8]
        assert (got == glyph_pixels(rom, symbols, ch)).all(), f"{name}: status char {col} {ch!r}"


def assert_banner_text(frame, rom, symbols, lines, name):
    for row, text in zip((7, 8), lines):
        for col, ch in enumerate(text):
            got = frame[8 * row: 8 * row + 8, 8 * col: 8 * col + 8]
            assert (got == glyph_pixels(rom, symbols, ch, inverse=True)).all(), (name, row, col, ch)


def test_same_game_on_vecgameboy_and_gambatte(rom, symbols):
    """Same seed (DIV at start-up) and, frame for frame of the game, the same game state.

    The emulators cut frames at different points, so the game's frame counter
    lags the trace index by a different amount on each (d frames apart). Fed
    the trace d frames earlier, VecGameBoy must then hold exactly gambatte's game
    variables, map and shadow OAM at every checkpoint (the fruit's place depends
    on when each button press lands, so this checks the emulated timing too).
    """
    theirs = trace_run("gambatte", rom, symbols)
    import warp as wp

    from gbx_lightning.emu.machine import VecGameBoy

    wp.config.quiet = True
    gb = VecGameBoy(rom, 1)
    gb.run_frames(9)
    fc = gb.read_memory(0, symbols["wFrameCount"], 1)[0]
    d = fc - theirs[8][0]["wFrameCount"]
    assert 0 <= d <= 2, f"game frame counter {fc} at trace frame 8, gambatte {theirs[8][0]['wFrameCount']}"
    gb.reset()
    checked = 0
    for j in range(len(GAME_INPUT_TRACE)):
        gb.run_frames(1, buttons=np.array([game_buttons(j + d)], np.uint8))
        i = j + d                                  # gambatte's trace frame with the same game frame
        if i in theirs:
            ours = gb.read_memory(0, 0xC000, 0x400)
            ref = theirs[i][0]
            assert ours[0x100] == ref["wGameState"]
            assert ours[0x200:0x400] == bytes(ref.map), f"map differs at game frame {ours[0x10B]}"
            want = bytes(ref.b[:0x40])
            diff = [hex(0xC100 + k) for k in range(0x40) if ours[0x100 + k] != want[k]]
            assert not diff, f"trace frame {i} (game frame {ref['wFrameCount']}): {diff} differ"
            checked += 1
    assert checked >= len(CHECKPOINTS) - 1


def test_rules_model_matches_gambatte(rom, symbols):
    """The Python model of the documented rules predicts gambatte's player and beetles exactly."""
    cp = trace_run("gambatte", rom, symbols)
    m0 = cp[929][0]
    model = OrchardModel([r.replace("$", ".") for r in m0.rows()], m0.player, hazards_of(m0))
    for i in range(930, 1131):
        model.step(game_buttons(i))
        if i in (1030, 1130):
            w = cp[i][0]
            assert model.player == w.player, i
            assert [h[:3] for h in model.hazards] == [list(h) for h in hazards_of(w)], i
            assert model.seeds_left == w["wSeedsLeft"], i


def hazards_of(w):
    n = w["wNumHazards"]
    base = w.s["wHazards"] - w.base
    return [tuple(w.b[base + 4 * k: base + 4 * k + 3]) for k in range(n)]


def test_level1_route_is_the_planned_one(rom, symbols):
    """LEVEL1_CLEAR_ROUTE is what plan_clear finds from gambatte's state at trace frame 930."""
    m0 = trace_run("gambatte", rom, symbols)[929][0]
    rows = [r.replace("$", ".") for r in m0.rows()]
    assert plan_clear(rows, m0.player, [list(h) for h in hazards_of(m0)], margin=3) == list(LEVEL1_CLEAR_ROUTE)


@pytest.mark.slow
def test_frames_match_gambatte_frame_for_frame(rom):
    """All 1500 frames of the trace on VecGameBoy equal gambatte's, pixel for pixel.

    Uses the PPU comparison harness's rules (tests/test_ppu_gambatte.py): both end a
    frame at VBlank, our frame i is gambatte's frame i + OFFSET, and gambatte gets the
    buttons of our frame k - OFFSET at its frame k (same emulated moment).
    """
    pytest.importorskip("gambaterm")
    ppu = pytest.importorskip("tests.test_ppu_gambatte")
    from tests import oracles

    from gbx_lightning.emu.machine import VecGameBoy

    frames, offset = len(GAME_INPUT_TRACE), ppu.OFFSET
    gb, g = VecGameBoy(rom, 1), oracles.Gambatte(rom)
    ours, theirs = [], []
    try:
        for k in range(frames + offset):
            if k < frames:
                gb.run_frames(1, buttons=np.array([game_buttons(k)], np.uint8))
                ours.append(gb.frame()[0].copy())
            g.step(game_buttons(k - offset) if k >= offset else 0)
            theirs.append(g.shades())
    finally:
        g.close()
    bad = ppu.compare(np.array(ours), np.array(theirs))
    assert not bad, f"{len(bad)} frames differ from gambatte (offset {offset}); first {bad[:5]}"
    assert gb.read_memory(0, 0xC101, 3) == bytes([0, 0, 1])      # ended on level 2, alive
    assert len({f.tobytes() for f in ours}) > 1000


@pytest.mark.parametrize("power_on", ["full game", "level select"])
def test_random_play_keeps_the_game_consistent(rom, symbols, power_on):
    """3000 frames of random buttons (all eight, mashed): the game's invariants hold throughout.

    These masks hold SELECT over the first frames, which opens the level select (and
    the mashing then starts level 1); with SELECT kept up until the game has played
    SELECT_WINDOW frames, the same masks play the full game from power-on.
    """
    pytest.importorskip("gambaterm")
    from tests import oracles

    levels = read_levels(rom, symbols)
    rng = np.random.default_rng(7)
    # hold each random mask for 1-12 frames, like an agent with frame skip
    masks = []
    while len(masks) < 3000:
        masks += [int(rng.integers(0, 256))] * int(rng.integers(1, 13))
    assert masks[0] & orchard.SELECT
    if power_on == "full game":
        masks[:16] = [m & ~orchard.SELECT for m in masks[:16]]
    g = oracles.Gambatte(rom)
    states, levels_seen, from_select = set(), set(), False
    try:
        for i, mask in enumerate(masks[:3000]):
            g.step(mask)
            if i % 60 != 59:
                continue
            w = Wram(g.memory().read, symbols)
            state = w["wGameState"]
            states.add(state)
            assert state in (0, 1, 2, 3, 4, 5) and w["wVblankLate"] == 0, (i, state)
            if state in (4, 5):
                continue
            levels_seen.add(w["wLadderLevel"])
            assert w["wFromSelect"] in (0, 1), i
            from_select |= w["wFromSelect"] == 1
            rows = w.rows()
            layout = levels[w["wLadderLevel"] - 1]["rows"]
            x, y = w.player
            assert 8 <= x <= 144 and 8 <= y <= 112 and x % 2 == 0 and y % 2 == 0, (i, x, y)
            assert layout[y // 8][x // 8] != "#" and layout[(y + 7) // 8][(x + 7) // 8] != "#", (i, x, y)
            assert w["wSeedsLeft"] == "".join(rows).count("*") or state == 2, i
            for r, (got, want) in enumerate(zip(rows, layout)):
                if state in (2, 3) and 6 <= r <= 9:
                    continue                                  # the banner
                assert all(a == b or (b == "*" and a == ".") or (b == "." and a == "$")
                           for a, b in zip(got, want)), (i, r, got, want)
            assert (w["wGameOver"] == 1) == (state in (1, 2)), i
            assert (w["wLevelClear"] == 1) == (state == 3), i
            if w["wFromSelect"]:                    # the level select opened: LV shows the ladder
                assert w["wLevel"] == w["wLadderLevel"] - 1, i
    finally:
        g.close()
    if power_on == "full game":
        assert 0 in states and 2 in states      # it played and it died at least once
        assert not from_select and levels_seen >= {orchard.FULL_GAME_LEVEL}
    else:
        assert from_select and {0, 3} <= states     # a level begun at the menu, cleared
        assert min(levels_seen) < orchard.FULL_GAME_LEVEL


def test_batched_envs_are_independent_and_deterministic(rom, symbols):
    """In one VecGameBoy, envs given the same inputs show the same frames; another input diverges."""
    pytest.importorskip("warp")
    import warp as wp

    from gbx_lightning.emu.machine import VecGameBoy

    wp.config.quiet = True
    gb = VecGameBoy(rom, 3)
    diverged = False
    for i in range(160):
        mask = game_buttons(i)
        gb.run_frames(1, buttons=np.array([mask, mask, RIGHT if i >= 40 else 0], np.uint8))
        f = gb.frame()
        assert (f[0] == f[1]).all(), i
        diverged |= bool((f[0] != f[2]).any())
    assert diverged
    x = symbols["wPlayerX"]
    # env 2 held RIGHT from frame 40: along row 1 until the wall at (9,1), eating 3 seeds
    assert gb.read_memory(2, x, 2) == bytes([64, 8])
    assert gb.read_memory(2, symbols["wSeedsEaten"], 1)[0] == 3
    assert gb.read_memory(0, x, 2) == gb.read_memory(1, x, 2) == bytes([56, 8])


@pytest.mark.parametrize("level", range(orchard.NUM_LEVELS))
def test_every_level_can_be_cleared(rom, symbols, level):
    """Under the rules model, a route from the level's start eats every seed untouched."""
    lv = read_levels(rom, symbols)[level]
    start = (8 * lv["start"][0], 8 * lv["start"][1])
    hazards = [[8 * x, 8 * y, d] for x, y, d in lv["hazards"]]
    runs = plan_clear(lv["rows"], start, hazards, margin=1)
    model = OrchardModel(lv["rows"], start, hazards)
    for mask, n in runs:
        for _ in range(n):
            assert not model.step(mask)
    assert model.seeds_left == 0
    assert len(model.seeds_eaten) == sum(r.count("*") for r in lv["rows"])
