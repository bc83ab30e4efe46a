"""The built-in game hamlet as an RL environment sees it: RAM, maps, events, stages, the stage select.

Everything here restates hamlet.asm's header (its MEMORY MAP, WORLD, EVENTS and STAGE SELECT) so that an
environment can read the game's state and start any stage without parsing assembly; tests
(tests/test_hamlet_rom.py) check each address against the assembler's symbols and each input trace on the
emulator. Pure Python: no torch or warp import.

Starting a stage: run ``stage_inputs(stage)`` from power-on (the machine's ``reset()``), that is, for frame ``f``
hold the buttons of the last pair whose frame is <= ``f``, for ``stage_start_frames(stage)`` frames in all
(``VecGameBoy.run_frames`` frames). The stage's map is then faded in and the player can move, no button held:
snapshot there and reset episodes from it.
"""
from __future__ import annotations

from dataclasses import dataclass

from gbx_lightning.roms.orchard import buttons_per_frame

__all__ = [
    "SHADOW_OAM", "MAP_ID", "EVENTS", "BAG_COUNT", "BAG_ITEMS", "PC_COUNT", "PC_ITEMS", "OPT_TEXT_SPEED",
    "OPT_SOUND", "SAVE_COUNT", "UI_STATE", "UI_CONTEXT", "FRAME_COUNT", "RNG", "SEED", "VBLANK_LATE",
    "STEP_COUNT", "STAGE", "MAP_WIDTH", "MAP_HEIGHT", "CAM_X", "CAM_Y", "BG_LOAD_ROW", "OVERLAY", "START_CURSOR",
    "OBJECTS", "OBJ_SIZE", "MAX_OBJECTS", "PLAYER_X", "PLAYER_Y", "PLAYER_FACING", "PLAYER_WALK", "MAP_BLOCKS",
    "BG_MAP_COPY", "TILE_MAP", "TILE_MAP_SAVE", "ADDRESSES",
    "MAP_BEDROOM", "MAP_LIVING", "MAP_VILLAGE", "MAP_ELDER", "MAP_ROUTE", "MAP_SHRINE", "MAP_NAMES",
    "EV_LEFT_HOUSE", "EV_TALKED_MOM", "EV_KID_MOVED", "EV_GOT_LANTERN", "EV_GUARD_MOVED", "EV_GOT_KEY",
    "EV_GATE_OPEN", "EV_RANG_BELL", "EVENT_NAMES",
    "UI_WORLD", "UI_TEXT", "UI_START", "UI_PC", "UI_ITEMS", "UI_OPTIONS", "UI_YESNO", "UI_SAVING", "UI_CARD",
    "UI_WARP", "UI_TITLE", "UI_SELECT", "UI_NAMES",
    "CTX_NONE", "CTX_START", "CTX_PC", "CTX_TALK", "CTX_WARP", "CTX_NAMES",
    "ITEM_POTION", "ITEM_LANTERN", "ITEM_KEY", "RIGHT", "LEFT", "UP", "DOWN", "BTN_A", "BTN_B", "SELECT", "START",
    "NUM_STAGES", "Stage", "STAGES", "SELECT_RELEASE", "FIRST_PRESS", "PRESS_FRAMES", "LOAD_FRAMES",
    "stage_inputs", "stage_start_frames", "buttons_per_frame", "events_set", "ACTION_LETTERS", "HOUSE_ROUTE", "ROUTES",
    "BELL_ROUTE",
    "action_inputs",
]

# ---- WRAM variables (hamlet.asm, MEMORY MAP); one byte unless noted
SHADOW_OAM = 0xC000     # 160 bytes, copied to OAM every VBlank
MAP_ID = 0xC100         # MAP_* below
EVENTS = 0xC101         # 2 bytes: bit n (16-bit little endian) = event n (EV_* below)
BAG_COUNT = 0xC103      # items in the bag (0-4)
BAG_ITEMS = 0xC104      # 4 item ids
PC_COUNT = 0xC108       # items in the bedroom PC (0-4)
PC_ITEMS = 0xC109       # 4 item ids
OPT_TEXT_SPEED = 0xC10D  # 0 FAST, 1 MEDIUM, 2 SLOW (frames per letter 1, 3, 5)
OPT_SOUND = 0xC10E      # 0 MONO, 1 STEREO
SAVE_COUNT = 0xC10F     # saves made (wraps at 256)
UI_STATE = 0xC110       # the screen in front: UI_* below
UI_CONTEXT = 0xC111     # what opened it: CTX_* below
FRAME_COUNT = 0xC112    # 2 bytes little endian, game frames since power-on
RNG = 0xC114            # 2 bytes, xorshift16 state
SEED = 0xC116           # DIV at start-up
VBLANK_LATE = 0xC117    # VBlank handlers that ran past VBlank (stays 0)
STEP_COUNT = 0xC118     # 2 bytes, steps walked this game
STAGE = 0xC11A          # the stage begun at the stage select (0: from the title)
MAP_WIDTH = 0xC11B      # in steps
MAP_HEIGHT = 0xC11C
CAM_X = 0xC11D          # SCX, pixels
CAM_Y = 0xC11E          # SCY
BG_LOAD_ROW = 0xC11F    # next BG row copied by the VBlank handler (32: none)
OVERLAY = 0xC120        # 1 while the window shows a menu / text box
START_CURSOR = 0xC122   # the Start menu's remembered entry
OBJECTS = 0xC200        # MAX_OBJECTS x OBJ_SIZE; object 0 is the player
OBJ_SIZE, MAX_OBJECTS = 16, 8
PLAYER_X = 0xC201       # in steps (16x16 metatiles); the step's target while walking
PLAYER_Y = 0xC202
PLAYER_FACING = 0xC203  # RIGHT, LEFT, UP, DOWN below
PLAYER_WALK = 0xC204    # frames left in the step (0: standing)
MAP_BLOCKS = 0xC300     # 16 x 16 metatile codes (stride 16)
BG_MAP_COPY = 0xC400    # 32 x 32 BG tiles, the WRAM copy of $9800
TILE_MAP = 0xC810       # 20 x 18 tiles the window shows
TILE_MAP_SAVE = 0xC990  # 20 x 18: the screen under the open menus

# assembler symbol -> address, for the test that checks them against hamlet.asm
ADDRESSES = {
    "wShadowOAM": SHADOW_OAM, "wMapId": MAP_ID, "wEvents": EVENTS, "wBagCount": BAG_COUNT,
    "wBagItems": BAG_ITEMS, "wPCCount": PC_COUNT, "wPCItems": PC_ITEMS, "wOptTextSpeed": OPT_TEXT_SPEED,
    "wOptSound": OPT_SOUND, "wSaveCount": SAVE_COUNT, "wUIState": UI_STATE, "wUIContext": UI_CONTEXT,
    "wFrameCount": FRAME_COUNT, "wRng": RNG, "wSeed": SEED, "wVBlankLate": VBLANK_LATE,
    "wStepCount": STEP_COUNT, "wStage": STAGE, "wMapWidth": MAP_WIDTH, "wMapHeight": MAP_HEIGHT,
    "wCamX": CAM_X, "wCamY": CAM_Y, "wBGLoadRow": BG_LOAD_ROW, "wOverlay": OVERLAY,
    "wStartCursor": START_CURSOR, "wObjects": OBJECTS, "wPlayerX": PLAYER_X, "wPlayerY": PLAYER_Y,
    "wPlayerFacing": PLAYER_FACING, "wPlayerWalk": PLAYER_WALK, "wMapBlocks": MAP_BLOCKS,
    "wBGMap": BG_MAP_COPY, "wTileMap": TILE_MAP, "wTileMapSave": TILE_MAP_SAVE,
}

# ---- maps (hamlet_maps.inc)
MAP_BEDROOM, MAP_LIVING, MAP_VILLAGE, MAP_ELDER, MAP_ROUTE, MAP_SHRINE = range(6)
MAP_NAMES = ("bedroom", "living room", "village", "elder house", "route", "shrine")

# ---- events: bit n of the 16-bit wEvents
EV_LEFT_HOUSE, EV_TALKED_MOM, EV_KID_MOVED, EV_GOT_LANTERN, EV_GUARD_MOVED, EV_GOT_KEY, EV_GATE_OPEN, \
    EV_RANG_BELL = range(1, 9)
EVENT_NAMES = {EV_LEFT_HOUSE: "left the house", EV_TALKED_MOM: "talked to mom", EV_KID_MOVED: "kid moved",
               EV_GOT_LANTERN: "got the lantern", EV_GUARD_MOVED: "guard moved", EV_GOT_KEY: "got the key",
               EV_GATE_OPEN: "gate open", EV_RANG_BELL: "rang the bell"}

# ---- wUIState / wUIContext codes
UI_WORLD, UI_TEXT, UI_START, UI_PC, UI_ITEMS, UI_OPTIONS, UI_YESNO, UI_SAVING, UI_CARD, UI_WARP, UI_TITLE, \
    UI_SELECT = range(12)
UI_NAMES = ("world", "text box", "start menu", "PC menu", "item list", "options", "yes/no", "saving",
            "trainer card", "map change", "title", "stage select")
CTX_NONE, CTX_START, CTX_PC, CTX_TALK, CTX_WARP = range(5)
CTX_NAMES = ("none", "start menu", "PC", "talking", "map change")

ITEM_POTION, ITEM_LANTERN, ITEM_KEY = 1, 2, 3

# ---- joypad bits (VecGameBoy.run_frames order)
RIGHT, LEFT, UP, DOWN, BTN_A, BTN_B, SELECT, START = (1 << i for i in range(8))


def events_set(value: int) -> list[int]:
    """The event numbers whose bits are set in a wEvents value (16-bit little endian)."""
    return [n for n in range(1, 16) if value >> n & 1]


# ---- stages
@dataclass(frozen=True)
class Stage:
    """One stage of the stage select: where it starts and what the earlier stages left (StageTable)."""

    number: int
    name: str
    map: int
    x: int
    y: int
    facing: int
    events: tuple[int, ...]
    bag: tuple[int, ...]


NUM_STAGES = 4
STAGES: dict[int, Stage] = {s.number: s for s in (
    Stage(1, "house", MAP_BEDROOM, 3, 5, UP, (), ()),
    Stage(2, "lantern", MAP_VILLAGE, 3, 3, DOWN, (EV_LEFT_HOUSE,), ()),
    Stage(3, "route", MAP_VILLAGE, 3, 3, DOWN, (EV_LEFT_HOUSE, EV_KID_MOVED, EV_GOT_LANTERN), (ITEM_LANTERN,)),
    Stage(4, "shrine", MAP_ROUTE, 1, 13, RIGHT, (EV_LEFT_HOUSE, EV_KID_MOVED, EV_GOT_LANTERN, EV_GUARD_MOVED),
          (ITEM_LANTERN,)),
)}

# The stage-select trace (frames are VecGameBoy.run_frames frames from power-on; the game reads the joypad once a
# frame, in its VBlank handler). SELECT held over the title's first game frames opens the select screen; it shows
# stage 1 and ignores nothing, but the window takes 7 frames to appear, so presses begin at FIRST_PRESS. Each
# press is held PRESS_FRAMES and released PRESS_FRAMES. START read in frame s: the screen fades out, the map
# loads and fades in; the player can move from frame s + LOAD_FRAMES on.
SELECT_RELEASE = 16
FIRST_PRESS = 20
PRESS_FRAMES = 4
LOAD_FRAMES = 36


def _check_stage(stage) -> int:
    if isinstance(stage, bool) or not isinstance(stage, int) or not 1 <= stage <= NUM_STAGES:
        raise ValueError(f"stage: expected an int in 1..{NUM_STAGES}, got {stage!r}")
    return stage


def stage_inputs(stage: int) -> list[tuple[int, int]]:
    """Input trace from power-on to stage `stage`: (frame, buttons) pairs, each held until the next pair's frame:
    SELECT at power-on, RIGHT once per stage past 1, then START, then nothing. Run it for
    ``stage_start_frames(stage)`` frames."""
    trace = [(0, SELECT), (SELECT_RELEASE, 0)]
    frame = FIRST_PRESS
    for _ in range(_check_stage(stage) - 1):
        trace += [(frame, RIGHT), (frame + PRESS_FRAMES, 0)]
        frame += 2 * PRESS_FRAMES
    return trace + [(frame, START), (frame + PRESS_FRAMES, 0)]


def stage_start_frames(stage: int) -> int:
    """Frames from power-on after which `stage_inputs(stage)` has the stage in play (the player can move)."""
    return FIRST_PRESS + 2 * PRESS_FRAMES * (_check_stage(stage) - 1) + LOAD_FRAMES


# ---- walking by env-style actions (for traces, tests and goal captures)
ACTION_LETTERS = {"R": RIGHT, "L": LEFT, "U": UP, "D": DOWN, "A": BTN_A, "B": BTN_B, "S": START, ".": 0}
# Each stage by a short way, from its start (the last step shows its goal screen; "." waits: for a map change or
# for a text box's letters):
# 1 house: from the bedroom's start (3,5) right 3, up 4 onto the stairs (6,1); in the living room down, left 5,
#   down 5 onto the mat (2,7); two steps while the screen changes: the village in front of the house.
# 2 lantern: down 7, right 9 to (12,10) below the kid; face him, talk (A), close the box (A): he steps aside; up
#   through the gap to the elder's door (12,6); up 3 to the elder; talk: two boxes, then "KAI GOT THE LANTERN!".
# 3 route: down 7, right 6, down 2, right 4 to (13,12) beside the guard; face him, talk, close: he steps into his
#   alcove; right 2 through the east exit: the route (1,13).
# 4 shrine: right 8, up 4 to (9,9) beside the KEY; face it, take it (A, A); up 4, left 3 below the gate (6,5); face
#   it, open it (A, A); up 3 through the shrine door: inside the shrine (3,7).
# BELL_ROUTE continues ROUTES[4]: up 5 to the bell, ring it (A), and the three boxes after it (A, A, A).
HOUSE_ROUTE = "RRRUUUU..DLLLLLDDDDD.."
ROUTES = {
    1: HOUSE_ROUTE,
    2: "DDDDDDDRRRRRRRRRU" "A.....A.." "UUUU.." "UUU" "A........A........A....",
    3: "DDDDDDDRRRRRRDDRRRRR" "A.....A.." "RR..",
    4: "RRRRRRRRUUUUR" "A.....A." "UUUULLLU" "A.......A." "UUU..",
}
BELL_ROUTE = "UUUUUA......A.....A........A.."


def action_inputs(actions: str, start: int, frames_per_step: int = 24, hold: int = 8) -> list[tuple[int, int]]:
    """The (frame, buttons) changes of a string of actions (letters of ACTION_LETTERS) taken as GameBoyEnv takes
    them: action k's buttons held over frames start + k * frames_per_step .. + hold - 1, then released."""
    if not 0 < hold <= frames_per_step:
        raise ValueError(f"hold: expected 1..frames_per_step ({frames_per_step}), got {hold}")
    trace = []
    for k, letter in enumerate(actions):
        if letter not in ACTION_LETTERS:
            raise ValueError(f"actions[{k}]: expected one of {''.join(ACTION_LETTERS)}, got {letter!r}")
        frame = start + k * frames_per_step
        trace += [(frame, ACTION_LETTERS[letter]), (frame + hold, 0)]
    return trace
