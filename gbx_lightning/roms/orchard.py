"""The built-in game orchard as an RL environment sees it: RAM, levels, level select.

Everything here restates orchard.asm's header (its MEMORY MAP, the level
ladder, the level select) so that an environment can read the game's state
and start any ladder level without parsing assembly; tests check each
address against the assembler's symbols and each input trace on the
emulator. Pure Python: no torch or warp import.

Starting a level: run ``level_select_inputs(level)`` from power-on (the
machine's ``reset()``), that is, for frame ``f`` hold the buttons of the last
pair whose frame is <= ``f``, for ``level_start_frames(level)`` frames in all
(``VecGameBoy.run_frames`` frames). The level is then loaded and in the play
state with no button held: snapshot there and reset episodes from it.
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "GAME_STATE", "GAME_OVER", "LEVEL_CLEAR", "LEVEL", "SCORE", "SEEDS_LEFT", "PLAYER_X",
    "PLAYER_Y", "PLAYER_DIR", "FACING", "FRAME_COUNT", "RNG", "SEEDS_EATEN", "BONUS_X",
    "BONUS_Y", "BONUS_TIMER", "STATE_TIMER", "NUM_HAZARDS", "VBLANK_LATE", "LOAD_ROW",
    "LOAD_END", "SEED", "LADDER_LEVEL", "START_LEVEL", "FROM_SELECT", "HAZARDS",
    "TILE_QUEUE", "STATUS", "MAP", "SHADOW_OAM", "MAP_STRIDE", "MAP_ROWS", "MAP_COLS",
    "STATE_PLAY", "STATE_DYING", "STATE_GAMEOVER", "STATE_CLEAR", "STATE_LOADING",
    "STATE_SELECT", "RIGHT", "LEFT", "UP", "DOWN", "BTN_A", "BTN_B", "SELECT", "START",
    "NUM_LEVELS", "FULL_GAME_LEVEL", "Level", "LEVELS",
    "SELECT_RELEASE", "FIRST_PRESS", "PRESS_FRAMES", "LOAD_FRAMES",
    "level_select_inputs", "level_start_frames", "buttons_per_frame",
]

# ---- WRAM variables (orchard.asm, MEMORY MAP); one byte unless noted
SHADOW_OAM = 0xC000     # 160 bytes, copied to OAM every VBlank
GAME_STATE = 0xC100     # one of the STATE_* codes below
GAME_OVER = 0xC101      # 1 from the frame a beetle is touched until the restart
LEVEL_CLEAR = 0xC102    # 1 from the frame the last seed is taken until the next level loads
LEVEL = 0xC103          # status-bar level number - 1
SCORE = 0xC104          # 2 bytes BCD little endian, in units of 10 points
SEEDS_LEFT = 0xC106
PLAYER_X = 0xC107       # pixels, sprite's left edge
PLAYER_Y = 0xC108       # pixels, sprite's top edge
PLAYER_DIR = 0xC109     # step in progress: 0 or a direction bit
FACING = 0xC10A
FRAME_COUNT = 0xC10B    # 2 bytes little endian, game frames since power-on
RNG = 0xC10D            # 2 bytes, xorshift16 state
SEEDS_EATEN = 0xC10F    # since power-on, wraps at 256
BONUS_X = 0xC110        # fruit tile column, 0: no fruit
BONUS_Y = 0xC111
BONUS_TIMER = 0xC112
STATE_TIMER = 0xC113
NUM_HAZARDS = 0xC114    # beetles in this level (0-4)
VBLANK_LATE = 0xC115    # stays 0
LOAD_ROW = 0xC116
LOAD_END = 0xC117
SEED = 0xC118           # DIV at start-up
LADDER_LEVEL = 0xC119   # ladder level (1-7) of the maze being played
START_LEVEL = 0xC11A    # ladder level a game (re)starts at; the select screen's choice
FROM_SELECT = 0xC11B    # 1 if this game was started from the level select
HAZARDS = 0xC120        # 4 x (x, y, dir, unused)
TILE_QUEUE = 0xC130
STATUS = 0xC140         # 2 x 20 status-bar tiles
MAP = 0xC200            # 16 rows x MAP_STRIDE bytes, tile characters '#', '.', '*', '$'
MAP_STRIDE, MAP_ROWS, MAP_COLS = 32, 16, 20

# ---- wGameState codes
STATE_PLAY, STATE_DYING, STATE_GAMEOVER, STATE_CLEAR, STATE_LOADING, STATE_SELECT = range(6)

# ---- joypad bits (VecGameBoy.run_frames order)
RIGHT, LEFT, UP, DOWN, BTN_A, BTN_B, SELECT, START = (1 << i for i in range(8))

# ---- the ladder
NUM_LEVELS = 7
FULL_GAME_LEVEL = 4     # power-on starts here; after level 7 comes this one again


@dataclass(frozen=True)
class Level:
    """One ladder level: what an agent faces there (as laid out in orchard_levels.inc)."""

    number: int
    name: str
    seeds: int
    beetles: int


LEVELS: dict[int, Level] = {lv.number: lv for lv in (
    Level(1, "room", 4, 0),
    Level(2, "small maze", 8, 0),
    Level(3, "medium maze", 12, 1),
    Level(4, "full game maze 1", 22, 2),
    Level(5, "full game maze 2", 20, 3),
    Level(6, "full game maze 3", 16, 3),
    Level(7, "full game maze 4", 18, 4),
)}

# ---- the level-select input trace (frames are VecGameBoy.run_frames frames from
# power-on; the game reads the joypad once per frame, in its VBlank handler)
# The game's first frame is power-on frame 5 (the start-up runs with the LCD off);
# SELECT held there opens the select screen, which takes 8 frames to draw (up to
# frame 13) and ignores presses until then. Each press is held PRESS_FRAMES and
# released PRESS_FRAMES, so a frame cut that differs by a frame or two between
# emulators still sees it once.
SELECT_RELEASE = 16     # SELECT held over frames 0-15
FIRST_PRESS = 20        # a few frames after the select screen is drawn
PRESS_FRAMES = 4
LOAD_FRAMES = 9         # START read in frame s: the maze loads in frames s+1..s+8,
                        # play from the end of frame s+8


def _check_level(level) -> int:
    if isinstance(level, bool) or not isinstance(level, int) or not 1 <= level <= NUM_LEVELS:
        raise ValueError(f"level: expected an int in 1..{NUM_LEVELS} (ladder level), got {level!r}")
    return level


def _presses(level: int) -> tuple[int, int]:
    """(direction, count): the select screen opens on 1 and wraps, so take the short way."""
    up, down = level - 1, NUM_LEVELS + 1 - level
    return (RIGHT, up) if up <= down else (LEFT, down)


def level_select_inputs(level: int) -> list[tuple[int, int]]:
    """Input trace from power-on to ladder level `level`: (frame, buttons) pairs.

    From each pair's frame on, its buttons are held (until the next pair's frame):
    SELECT at power-on, then RIGHT (or LEFT, the shorter way round) once per step
    from level 1, then START, then nothing. Run it for ``level_start_frames(level)``
    frames.
    """
    direction, count = _presses(_check_level(level))
    trace = [(0, SELECT), (SELECT_RELEASE, 0)]
    frame = FIRST_PRESS
    for _ in range(count):
        trace += [(frame, direction), (frame + PRESS_FRAMES, 0)]
        frame += 2 * PRESS_FRAMES
    trace += [(frame, START), (frame + PRESS_FRAMES, 0)]
    return trace


def level_start_frames(level: int) -> int:
    """Frames from power-on after which `level_select_inputs(level)` has the level in play."""
    _, count = _presses(_check_level(level))
    return FIRST_PRESS + 2 * PRESS_FRAMES * count + LOAD_FRAMES


def buttons_per_frame(trace: list[tuple[int, int]], frames: int) -> list[int]:
    """The button mask of each of the first `frames` frames of an input trace."""
    if frames < 0:
        raise ValueError(f"frames: expected >= 0, got {frames}")
    out, held, k = [], 0, 0
    for f in range(frames):
        while k < len(trace) and trace[k][0] <= f:
            held = trace[k][1]
            k += 1
        out.append(held)
    return out
