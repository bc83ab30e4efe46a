"""The embedded game (orchard): its scripted input trace, its rules in Python, a route planner.

``GAME_ROM_NAME`` and ``GAME_INPUT_TRACE`` (or ``game_buttons(frame)``) are what
a frame-for-frame comparison needs: 1500 per-frame button masks in the
project's order (bit0 Right .. bit7 Start) that move, eat seeds, bump a wall,
die twice (restart by Start, then by timeout), clear level 1 and start level
2. The game reads the joypad only in its VBlank handler and never changes PPU
registers mid-frame; the LCD is switched off once, at start-up.

`OrchardModel` steps the rules documented in gbx_lightning/roms/orchard.asm
(player steps of 8 px at 2 px/frame, beetles at 1 px/frame turning back at
walls, seeds, the touch distance) frame by frame, in the same order as the
ROM's UpdatePlay. It leaves out the fruit (its place depends on the seed).

`plan_clear` searches, over that model, a route that eats every seed while
staying clear of the beetles even if the emulator's frame cut shifts the
player's timing by up to `margin` frames against the beetles: the same
inputs then clear the level on gambatte, PyBoy and VecGameBoy alike.

`read_levels` decodes the ROM's level table (ladder order) and `glyph_pixels`
a font character as drawn, for tests that check layouts and screen text.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

RIGHT, LEFT, UP, DOWN, BTN_A, BTN_B, SELECT, START = (1 << i for i in range(8))
STEP = {RIGHT: (1, 0), LEFT: (-1, 0), UP: (0, -1), DOWN: (0, 1)}
PLAYER_SPEED = 2
HIT_DISTANCE = 6


@dataclass
class OrchardModel:
    rows: list                      # 16 strings of 20 tiles ('#', '.', '*')
    player: tuple                   # (x, y) pixels
    hazards: list                   # [x, y, dir] lists, pixels
    player_dir: int = 0
    seeds_eaten: list = field(default_factory=list)

    def __post_init__(self):
        self.rows = [list(r) for r in self.rows]
        self.hazards = [list(h) for h in self.hazards]

    @property
    def seeds_left(self) -> int:
        return sum(r.count("*") for r in self.rows)

    def tile_ahead(self, x, y, d):
        dx, dy = STEP[d]
        return self.rows[y // 8 + dy][x // 8 + dx]

    def move_hazards(self):
        for h in self.hazards:
            x, y, d = h
            if x % 8 == 0 and y % 8 == 0 and self.tile_ahead(x, y, d) == "#":
                d ^= 3 if d & 3 else 12
                h[2] = d
                if self.tile_ahead(x, y, d) == "#":
                    continue
            dx, dy = STEP[d]
            h[0], h[1] = x + dx, y + dy

    def step(self, pad: int) -> bool:
        """One game frame with d-pad `pad` held; True if a beetle touches the player."""
        x, y = self.player
        if x % 8 == 0 and y % 8 == 0:
            self.player_dir = 0
            for d in (RIGHT, LEFT, UP, DOWN):
                if pad & d and self.tile_ahead(x, y, d) != "#":
                    self.player_dir = d
                    break
        if self.player_dir:
            dx, dy = STEP[self.player_dir]
            x, y = x + PLAYER_SPEED * dx, y + PLAYER_SPEED * dy
            self.player = (x, y)
        if x % 8 == 0 and y % 8 == 0 and self.rows[y // 8][x // 8] == "*":
            self.rows[y // 8][x // 8] = "."
            self.seeds_eaten.append((x // 8, y // 8))
        if not self.seeds_left:
            return False
        self.move_hazards()
        return any(abs(x - hx) < HIT_DISTANCE and abs(y - hy) < HIT_DISTANCE for hx, hy, _ in self.hazards)


def hazard_track(rows, hazards, frames):
    """Beetle positions after each of `frames` frames: list of [(x, y), ...]."""
    m = OrchardModel(rows, (8, 8), hazards)
    track = []
    for _ in range(frames):
        m.move_hazards()
        track.append([(h[0], h[1]) for h in m.hazards])
    return track


def plan_clear(rows, player, hazards, *, margin=3, horizon=400, survive=120, max_frames=6000):
    """Button runs [(mask, frames), ...] that eat every seed from this state.

    Earliest-arrival search over (frame, tile) with two actions: wait one
    frame, or step to a neighbouring tile (the direction held 4 frames). A
    frame is safe when no beetle, shifted by up to `margin` frames either way,
    is within the touch distance (+1 px). Greedy: the earliest-reachable seed
    from which the player can still stay safe for `survive` frames (so a
    route does not end in a dead end a beetle is about to sweep). Raises
    RuntimeError if no such seed is reachable within `horizon` frames.
    """
    track = hazard_track(rows, hazards, max_frames + horizon + survive + margin + 8)
    danger = [[p for s in range(max(0, t - margin), t + margin + 1) for p in track[s]]
              for t in range(len(track) - margin)]
    rows = [list(r) for r in rows]

    def safe(t, px, py):
        return all(abs(px - hx) > HIT_DISTANCE or abs(py - hy) > HIT_DISTANCE for hx, hy in danger[t])

    def successors(node):
        """(next node, direction held or 0 for a wait) for every safe action."""
        tt, x, y = node
        if safe(tt, 8 * x, 8 * y):
            yield (tt + 1, x, y), 0
        for d, (dx, dy) in STEP.items():
            if rows[y + dy][x + dx] != "#" and all(
                    safe(tt + k, 8 * x + 2 * (k + 1) * dx, 8 * y + 2 * (k + 1) * dy) for k in range(4)):
                yield (tt + 4, x + dx, y + dy), d

    def survives(node):
        """Depth first: some sequence of safe actions lasts `survive` frames from `node`."""
        stack, seen = [node], {node}
        while stack:
            n = stack.pop()
            if n[0] >= node[0] + survive:
                return True
            for nxt, _ in successors(n):
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append(nxt)
        return False

    moves = []      # pad mask per frame
    node = (0, player[0] // 8, player[1] // 8)
    while any("*" in r for r in rows):
        parent = {node: None}
        heap = [node]
        goal, rejected = None, set()
        while heap:
            cand = heapq.heappop(heap)
            _, x, y = cand
            if rows[y][x] == "*" and (x, y) not in rejected:
                if survives(cand):
                    goal = cand
                    break
                rejected.add((x, y))
            if cand[0] - node[0] > horizon:
                continue
            for nxt, d in successors(cand):
                if nxt not in parent:
                    parent[nxt] = (cand, d)
                    heapq.heappush(heap, nxt)
        if goal is None:
            raise RuntimeError(f"no safe route to a seed from tile {node[1:]} at frame {node[0]}")
        path = []
        n = goal
        while parent[n] is not None:
            prev, d = parent[n]
            path.append((d, n[0] - prev[0]))
            n = prev
        for d, k in reversed(path):
            moves.extend([d] * k)
        node = goal
        rows[goal[2]][goal[1]] = "."
        if goal[0] > max_frames:
            raise RuntimeError(f"route longer than max_frames={max_frames}")
    runs = []
    for m in moves:
        if runs and runs[-1][0] == m:
            runs[-1][1] += 1
        else:
            runs.append([m, 1])
    return [tuple(r) for r in runs]


# ------------------------------------------------------------------ the scripted trace

# From the state at trace frame 930 (player on (3,1), 21 seeds left, beetles
# where gambatte has them then), found by plan_clear(margin=3); the test
# test_level1_route_is_the_planned_one re-derives it.
LEVEL1_CLEAR_ROUTE = (
    (1, 16), (2, 24), (8, 20), (1, 12), (8, 12), (2, 12), (8, 8), (1, 4), (8, 12), (4, 4), (1, 4),
    (8, 4), (1, 48), (4, 4), (1, 4), (8, 4), (1, 4), (4, 12), (1, 4), (4, 8), (2, 12), (4, 12),
    (1, 12), (4, 20), (2, 24),
)
assert sum(n for _, n in LEVEL1_CLEAR_ROUTE) == 300

GAME_ROM_NAME = "orchard"

# (buttons, frames) runs; comments give the trace index where each starts.
GAME_SCRIPT = (
    (0, 40),        # 0    boot (the game plays from about frame 5); no input while a
                    #      frame comparison settles its frame offset (first 30 frames)
    (RIGHT, 8),     # 40   two steps: tile (1,1) -> (3,1), seed at (3,1)
    (0, 10),        # 48
    (DOWN, 8),      # 58   wall below (3,1): no move
    (0, 4),         # 66
    (RIGHT, 16),    # 70   four steps -> (7,1), seeds at (5,1) and (7,1)
    (0, 4),         # 86
    (LEFT, 4),      # 90   one step left (sprite X-flipped) ...
    (RIGHT, 4),     # 94   ... and back to (7,1)
    (0, 132),       # 98   wait: the fruit appears around frame 185
    (RIGHT, 4),     # 230  -> (8,1)
    (DOWN, 8),      # 234  -> (8,3)
    (0, 92),        # 242
    (DOWN, 4),      # 334  -> (8,4): beetle 1's row; it arrives ~frame 430
    (0, 166),       # 338  dying (32 frames), then the GAME OVER banner
    (START, 2),     # 504  restart at level 1
    (0, 18),        # 506
    (DOWN, 12),     # 524  (1,1) -> (1,4), seed at (1,3); beetle 1 comes ~570
    (0, 278),       # 536  no Start: the game restarts by itself ~frame 784
    (RIGHT, 8),     # 814  (1,1) -> (3,1), seed at (3,1)
    (0, 108),       # 822
    *LEVEL1_CLEAR_ROUTE,  # 930  eat the 21 seeds left: LEVEL CLEAR ~frame 1230
    (0, 270),       # 1230 the banner for 90 frames, then level 2 loads; stand still
)
GAME_INPUT_TRACE = tuple(mask for mask, n in GAME_SCRIPT for _ in range(n))
assert len(GAME_INPUT_TRACE) == 1500


def game_buttons(frame: int) -> int:
    """Button mask for trace frame `frame` (released after the trace ends)."""
    return GAME_INPUT_TRACE[frame] if 0 <= frame < len(GAME_INPUT_TRACE) else 0


# ------------------------------------------------------------------ reading the ROM

def read_levels(rom: bytes, symbols: dict) -> list[dict]:
    """Decode the level table (ladder order) from the ROM image (format: orchard_levels.inc)."""
    from gbx_lightning.roms import orchard

    levels = []
    table = symbols["LevelTable"]
    for i in range(orchard.NUM_LEVELS):
        at = rom[table + 2 * i] | rom[table + 2 * i + 1] << 8
        start = (rom[at], rom[at + 1])
        count = rom[at + 2]
        hazards = [tuple(rom[at + 3 + 3 * k: at + 6 + 3 * k]) for k in range(count)]
        body = at + 3 + 3 * count
        rows = [rom[body + 20 * r: body + 20 * r + 20].decode("ascii") for r in range(16)]
        levels.append(dict(start=start, hazards=hazards, rows=rows))
    return levels


def glyph_pixels(rom, symbols, ch: str, inverse=False):
    """8x8 shades of a font character as the game draws it (BGP $E4: colour 3 = black)."""
    import numpy as np

    at = symbols["FontGlyphs"] + 8 * (ord(ch) - 0x20)
    bits = np.unpackbits(np.frombuffer(rom[at: at + 8], np.uint8)).reshape(8, 8)
    return (3 * (1 - bits) if inverse else 3 * bits).astype(np.uint8)


