"""The built-in adventure hamlet (gbx_lightning/roms/hamlet.asm): its ROM, its maps, hamlet.py, and its stages played.

hamlet.py restates the ROM's header for RL environments: its addresses are checked against the assembler's symbols
and the RAM map (tasks/hamlet/ram.yaml), its stage-select traces and its routes (hamlet.ROUTES: each stage played by
a short way, as GameBoyEnv takes actions) on VecGameBoy, where the RAM must say what the game's rules say: the map,
the player's step, the events, the bag. The maps are read back from the ROM image and walked in Python: every gate
of the story must hold (the elder's door and the east exit unreachable until the kid and the guard have moved, the
shrine until the gate opens) and every warp must land on a walkable step. Frame-for-frame against gambatte:
tests/test_hamlet_gambatte.py; the tasks and their goal templates: tests/test_hamlet_tasks.py.
"""
from __future__ import annotations

import re

import numpy as np
import pytest
import yaml

from gbx_lightning.roms import TASK_DIR, build_rom, hamlet, rom_source_path

from tests._hamlet_helpers import (
    ROM_NAME, STEP_FRAMES, machine, read_maps, reachable, rom_and_symbols, stage_route_masks, wram,
)


@pytest.fixture(scope="module")
def rom() -> bytes:
    return rom_and_symbols()[0]


@pytest.fixture(scope="module")
def symbols() -> dict:
    return rom_and_symbols()[1]


@pytest.fixture(scope="module")
def maps(rom, symbols):
    return read_maps(rom, symbols)


# ------------------------------------------------------------------ the ROM and hamlet.py

def test_rom_assembles_with_a_valid_header(rom):
    from gbx_lightning.emu.cartridge import MBC1, load_cartridge

    cart = load_cartridge(rom)
    assert len(rom) == 32 * 1024 and cart.title == "HAMLET"
    assert cart.cart_type == 0x03 and cart.mbc == MBC1 and cart.has_battery   # MBC1 + RAM + BATTERY: SAVE
    assert cart.rom_banks == 2 and cart.ram_bytes == 8 * 1024
    assert cart.header_checksum_ok
    assert rom[0x100:0x102] == bytes([0x00, 0xC3])                          # nop; jp Start
    assert build_rom(ROM_NAME) == rom and rom_and_symbols.__wrapped__()[0] == rom   # deterministic build


def test_documented_memory_map_and_hamlet_py_match_the_source(symbols):
    """Every 'address name' line of the header's MEMORY MAP, and every address of hamlet.py, is the symbol's."""
    text = rom_source_path(ROM_NAME).read_text()
    documented = re.findall(r"^;\s+\$([0-9A-F]{4})(?:-\$[0-9A-F]{4})?\s+(w\w+)", text, flags=re.M)
    assert len(documented) >= 30
    for addr, name in documented:
        assert symbols[name] == int(addr, 16), name
    for name, addr in hamlet.ADDRESSES.items():
        assert symbols[name] == addr, name
    assert symbols["OBJ_SIZE"] == hamlet.OBJ_SIZE and symbols["MAX_OBJECTS"] == hamlet.MAX_OBJECTS
    constants = {
        "MAP_": ("MAP_BEDROOM", "MAP_LIVING", "MAP_VILLAGE", "MAP_ELDER", "MAP_ROUTE", "MAP_SHRINE"),
        "EV_": ("EV_LEFT_HOUSE", "EV_TALKED_MOM", "EV_KID_MOVED", "EV_GOT_LANTERN", "EV_GUARD_MOVED", "EV_GOT_KEY",
                "EV_GATE_OPEN", "EV_RANG_BELL"),
        "UI_": ("UI_WORLD", "UI_TEXT", "UI_START", "UI_PC", "UI_ITEMS", "UI_OPTIONS", "UI_YESNO", "UI_SAVING",
                "UI_CARD", "UI_WARP", "UI_TITLE", "UI_SELECT"),
        "CTX_": ("CTX_NONE", "CTX_START", "CTX_PC", "CTX_TALK", "CTX_WARP"),
        "ITEM_": ("ITEM_POTION", "ITEM_LANTERN", "ITEM_KEY"),
    }
    for names in constants.values():
        for name in names:
            assert symbols[name] == getattr(hamlet, name), name
    assert symbols["NUM_STAGES"] == hamlet.NUM_STAGES and symbols["NUM_MAPS"] == len(hamlet.MAP_NAMES)


def test_stage_table_is_what_hamlet_py_says(rom, symbols):
    table = symbols["StageTable"]
    for number, stage in hamlet.STAGES.items():
        row = rom[table + 8 * (number - 1): table + 8 * number]
        assert (row[0], row[1], row[2], row[3]) == (stage.map, stage.x, stage.y, stage.facing), number
        assert row[4] | row[5] << 8 == sum(1 << e for e in stage.events), number
        assert [i for i in row[6:7] if i] == list(stage.bag), number


def test_ram_map_is_hamlet_py():
    fields = yaml.safe_load((TASK_DIR / "hamlet" / "ram.yaml").read_text())["fields"]
    expect = {"map": hamlet.MAP_ID, "events": hamlet.EVENTS, "bag_count": hamlet.BAG_COUNT,
              "bag_items": hamlet.BAG_ITEMS, "pc_count": hamlet.PC_COUNT, "pc_items": hamlet.PC_ITEMS,
              "text_speed": hamlet.OPT_TEXT_SPEED, "sound": hamlet.OPT_SOUND, "save_count": hamlet.SAVE_COUNT,
              "ui_state": hamlet.UI_STATE, "ui_context": hamlet.UI_CONTEXT, "frame_count": hamlet.FRAME_COUNT,
              "rng": hamlet.RNG, "vblank_late": hamlet.VBLANK_LATE, "step_count": hamlet.STEP_COUNT,
              "stage": hamlet.STAGE, "cam_x": hamlet.CAM_X, "cam_y": hamlet.CAM_Y, "x": hamlet.PLAYER_X,
              "y": hamlet.PLAYER_Y, "facing": hamlet.PLAYER_FACING, "walking": hamlet.PLAYER_WALK,
              "npc_kind": hamlet.OBJECTS + hamlet.OBJ_SIZE, "npc_x": hamlet.OBJECTS + hamlet.OBJ_SIZE + 1,
              "npc_y": hamlet.OBJECTS + hamlet.OBJ_SIZE + 2}
    assert {k: v["address"] for k, v in fields.items()} == expect
    assert fields["events"]["count"] == 2 and fields["npc_x"]["stride"] == hamlet.OBJ_SIZE


def test_graphics_literal_is_a_tile_row():
    """`dw `01233210`: the row's low bit plane, then its high plane (Pan Docs, Tile Data)."""
    from gbx_lightning.roms.asm import assemble

    image = assemble('title "T"\n org $150\n dw `01233210, `30000003\n')
    assert image[0x150:0x154] == bytes([0b01011010, 0b00111100, 0b10000001, 0b10000001])


# ------------------------------------------------------------------ the maps

def test_maps_are_well_formed(maps, symbols):
    assert len(maps) == len(hamlet.MAP_NAMES)
    for m in maps:
        assert 1 <= m.width <= 16 and 1 <= m.height <= 16, m.number       # a map fits the BG map whole
        assert all(len(r) == m.width for r in m.rows)
        assert m.border in m.solid
        assert m.song in range(5)
        for x, y, dest, dx, dy in m.warps:
            assert m.walkable(x, y), (m.number, x, y)                      # a warp can be stepped on
            assert maps[dest].walkable(dx, dy), (m.number, dest, dx, dy)   # and lands on a walkable step
        for kind, x, y, facing, move, script, event, x2, y2 in m.objects:
            assert 1 <= kind <= 9 and facing in (1, 2, 4, 8) and move in (0, 1, 2), m.number
            assert m.walkable(x, y) and (event == 0 or x2 == 0xFF or m.walkable(x2, y2)), (m.number, kind)
        for x, y, script in m.signs:
            assert 0 <= x < m.width and 0 <= y < m.height and script < symbols["SCR_ROUTE_SIGN"] + 1


def test_every_way_the_story_needs_is_open_and_every_gate_holds(maps):
    """Walk the maps in Python: each stage's way out exists; each event-gated way is shut until its event."""
    bedroom, living, village, elder, route, shrine = maps

    def place(m, kind):
        return next((o[1], o[2]) for o in m.objects if o[0] == kind)

    def after(m, kind):
        return next((o[7], o[8]) for o in m.objects if o[0] == kind)

    # stage 1: start -> the stairs; the living room's stairs arrival -> a door mat
    assert (6, 1) in reachable(bedroom, (3, 5))
    mats = {(w[0], w[1]) for w in living.warps if w[2] == hamlet.MAP_VILLAGE}
    assert mats and mats <= reachable(living, (7, 1), {place(living, 1 + 1)})   # around MOM
    # the village: from the house, the kid (slot 1) shuts the elder's door, the guard (slot 2) the east exit
    kid, guard, girl_home = (o[1:3] for o in village.objects)
    elder_door = next((w[0], w[1]) for w in village.warps if w[2] == hamlet.MAP_ELDER)
    exit_ = next((w[0], w[1]) for w in village.warps if w[2] == hamlet.MAP_ROUTE)
    blocked = {tuple(kid), tuple(guard)}
    here = reachable(village, (3, 3), blocked)
    assert elder_door not in here and exit_ not in here
    assert (kid[0], kid[1] + 1) in here and (guard[0] - 1, guard[1]) in here     # both can be talked to
    moved = {after(village, 3), tuple(guard)}                                      # EV_KID_MOVED
    assert elder_door in reachable(village, (3, 3), moved) and exit_ not in reachable(village, (3, 3), moved)
    assert after(village, 3) not in here                                       # the yard: the kid's to step into
    both = {after(village, 3), after(village, 5)}                                  # + EV_GUARD_MOVED
    assert exit_ in reachable(village, (3, 3), both)
    assert after(village, 5) not in reachable(village, (3, 3), both | {tuple(guard)})   # his alcove: only his
    # the elder's house: the elder can be faced
    assert (3, 4) in reachable(elder, (3, 7), {place(elder, 4)})
    # the route: the gate shuts the shrine door; the key can be faced
    gate, key = place(route, 9), place(route, 8)
    shrine_door = next((w[0], w[1]) for w in route.warps if w[2] == hamlet.MAP_SHRINE)
    hiker = place(route, 7)
    assert shrine_door not in reachable(route, (1, 13), {gate, key, hiker})
    assert (key[0] - 1, key[1]) in reachable(route, (1, 13), {gate, key, hiker})
    assert shrine_door in reachable(route, (1, 13), {hiker})                    # EV_GOT_KEY, EV_GATE_OPEN
    # the shrine: the bell's front
    bell = next((s[0], s[1]) for s in shrine.signs)
    assert (bell[0], bell[1] + 1) in reachable(shrine, (3, 7))


def test_village_goal_rows_hold_no_walkable_step_near_the_arrival(maps):
    """The village's top three rows (the stage-1 goal region) are trees, roofs and a door: nothing but the
    player entering the door can stand there, and no NPC's home is near."""
    village = maps[hamlet.MAP_VILLAGE]
    for y in range(3):
        for x in range(10):
            assert not village.walkable(x, y) or (x, y) == (3, 2) or x >= 6, (x, y)
    for o in village.objects:
        assert o[2] >= 9, o


# ------------------------------------------------------------------ playing it

@pytest.fixture(scope="module")
def played():
    """Each stage's route on one machine, env s - 1 = stage s (stage 4 goes on to ring the bell): the RAM at
    every step's end."""
    routes = {s: hamlet.ROUTES[s] + (hamlet.BELL_ROUTE if s == 4 else "") for s in hamlet.STAGES}
    masks = [stage_route_masks(s, routes[s]) for s in hamlet.STAGES]
    frames = max(len(m) for m in masks)
    grid = np.zeros((len(masks), frames), np.uint8)
    for i, m in enumerate(masks):
        grid[i, :len(m)] = m
    gb = machine(len(masks))
    steps = {s: [] for s in hamlet.STAGES}
    for f in range(frames):
        gb.run_frames(1, buttons=np.ascontiguousarray(grid[:, f]), render="none")
        for s in hamlet.STAGES:
            start = hamlet.stage_start_frames(s)
            if f + 1 == start or (f + 1 > start and (f + 1 - start) % STEP_FRAMES == 0 and f < len(masks[s - 1])):
                steps[s].append(wram(gb, s - 1))
    return steps


def test_stage_traces_start_their_stages(played):
    """At stage_start_frames the stage's map is in, the player where StageTable puts him, in play."""
    for s, stage in hamlet.STAGES.items():
        w = played[s][0]
        assert (w["map"], w["x"], w["y"], w["facing"]) == (stage.map, stage.x, stage.y, stage.facing), s
        assert hamlet.events_set(w["events"]) == list(stage.events) and w["bag"] == list(stage.bag), s
        assert (w["ui"], w["ctx"], w["stage"], w["pc"]) == (hamlet.UI_WORLD, 0, s, [hamlet.ITEM_POTION]), s


def test_routes_play_each_stage_to_its_events(played):
    def maps_seen(s):
        seq = [w["map"] for w in played[s]]
        return [m for k, m in enumerate(seq) if k == 0 or seq[k - 1] != m]

    assert all(w["late"] == 0 for s in played for w in played[s])        # no VBlank ran past VBlank
    h = hamlet
    # 1: bedroom -> living room -> village; the first arrival outside sets EV_LEFT_HOUSE
    assert maps_seen(1) == [h.MAP_BEDROOM, h.MAP_LIVING, h.MAP_VILLAGE]
    end = played[1][-1]
    assert (end["x"], end["y"], end["ui"]) == (3, 3, h.UI_WORLD) and h.events_set(end["events"]) == [h.EV_LEFT_HOUSE]
    assert end["steps"] == 7 + 11                 # every D-pad action was one step (the bump-free route)
    # each action of the walk is exactly one 16x16 step
    walk = [(w["x"], w["y"]) for w in played[1][1:8]]
    assert walk == [(4, 5), (5, 5), (6, 5), (6, 4), (6, 3), (6, 2), (6, 1)]
    # 2: the kid steps aside when talked to, the elder gives the lantern
    assert maps_seen(2) == [h.MAP_VILLAGE, h.MAP_ELDER]
    end = played[2][-1]
    assert h.events_set(end["events"]) == [h.EV_LEFT_HOUSE, h.EV_KID_MOVED, h.EV_GOT_LANTERN]
    assert end["bag"] == [h.ITEM_LANTERN] and end["ui"] == h.UI_TEXT       # "KAI GOT THE LANTERN!" shows
    # 3: the guard lets the lantern through: the route
    assert maps_seen(3) == [h.MAP_VILLAGE, h.MAP_ROUTE]
    end = played[3][-1]
    assert h.EV_GUARD_MOVED in h.events_set(end["events"]) and (end["x"], end["y"]) == (1, 13)
    # 4: the key, the gate, the shrine, the bell
    assert maps_seen(4) == [h.MAP_ROUTE, h.MAP_SHRINE]
    end = played[4][-1]
    assert h.events_set(end["events"]) == [h.EV_LEFT_HOUSE, h.EV_KID_MOVED, h.EV_GOT_LANTERN, h.EV_GUARD_MOVED,
                                           h.EV_GOT_KEY, h.EV_GATE_OPEN, h.EV_RANG_BELL]
    assert end["bag"] == [h.ITEM_LANTERN, h.ITEM_KEY] and end["ui"] == h.UI_WORLD


def test_a_step_into_a_wall_turns_and_thuds_in_place():
    """From the bedroom's start (3,5), facing up: Left, Left are steps, the third Left thuds against the bed (0,5)
    and only faces left; Down, Up are steps again: each action is one step or none, never two."""
    gb = machine(1)
    masks = stage_route_masks(1, "LLLDU")
    start = hamlet.stage_start_frames(1)
    seen = []
    for f, m in enumerate(masks):
        gb.run_frames(1, buttons=np.array([m], np.uint8), render="none")
        if f + 1 > start and (f + 1 - start) % STEP_FRAMES == 0:
            w = wram(gb)
            seen.append((w["x"], w["y"], w["facing"], w["steps"]))
    left = hamlet.LEFT
    assert seen == [(2, 5, left, 1), (1, 5, left, 2), (1, 5, left, 2), (1, 6, hamlet.DOWN, 3), (1, 5, hamlet.UP, 4)]


def test_start_menu_save_writes_battery_ram_and_options_change_the_text_speed():
    """START, SAVE, YES: "SAVING..." for SAVE_FRAMES while the save block goes to cartridge RAM (magic, the block,
    the player's object, their byte sum); then START (the cursor remembered on SAVE), OPTION, Right (SLOW), Down,
    Right (STEREO), B, B: back in the world with the new options."""
    _, s = rom_and_symbols()
    gb = machine(1)
    actions = "S" "DD" "A" "......" "A" + "." * 14 + "A" "..." "S" "D" "A" "." "R" "D" "R" "B" "." "B" ".."
    for m in stage_route_masks(1, actions):
        gb.run_frames(1, buttons=np.array([m], np.uint8), render="none")
    w = wram(gb)
    assert (w["ui"], w["ctx"], w["saves"], w["text_speed"], w["sound"]) == (hamlet.UI_WORLD, 0, 1, 2, 1)
    cart = bytes(gb.snapshot().arrays["cart_ram"].numpy()[0][:64])
    size = s["SAVE_BLOCK_SIZE"]
    block = gb.read_memory(0, hamlet.MAP_ID, size)
    assert cart[:4] == b"HMLT"
    assert cart[4:4 + 0x0D] == block[:0x0D]                                 # map, events, bag, PC
    assert cart[4 + 0x0D: 4 + size] == bytes([1, 0, 1])                      # MEDIUM, MONO (then), saved once
    assert cart[4 + size: 4 + size + hamlet.OBJ_SIZE] == gb.read_memory(0, hamlet.OBJECTS, hamlet.OBJ_SIZE)
    assert cart[4 + size + hamlet.OBJ_SIZE] == sum(cart[4:4 + size + hamlet.OBJ_SIZE]) % 256


def test_sound_driver_plays_the_village_song_on_three_channels():
    """In the village the driver keeps CH2 (melody), CH3 (bass) and CH4 (drums) sounding (NR52's status bits:
    a channel is on from its trigger until its length counter runs out), note after note."""
    gb = machine(1)
    masks = stage_route_masks(2, "." * 12)
    start = hamlet.stage_start_frames(2)
    notes = {1: 0, 2: 0, 3: 0}                  # NR52 bit n: channel n + 1 on
    last = 0
    for f, m in enumerate(masks):
        gb.run_frames(1, buttons=np.array([m], np.uint8), render="none")
        nr52 = gb.read_memory(0, 0xFF26, 1)[0]
        if f >= start:
            for bit in notes:
                notes[bit] += (nr52 & ~last) >> bit & 1    # off at the last frame's end, on now: a new note
        last = nr52
    assert wram(gb)["map"] == hamlet.MAP_VILLAGE and gb.read_memory(0, 0xFF26, 1)[0] & 0x80
    # 288 frames of the village song: its melody has 8-frame notes (ended by their length counter), the bass
    # 16-frame notes, the drums a hit every 8-16 frames
    assert notes[1] >= 10 and notes[2] >= 5 and notes[3] >= 10, notes


def test_random_play_keeps_the_game_consistent(maps):
    """12 envs from stages 1, 2 and 4 press uniformly random actions (GameBoyEnv's default codec, 24 frames a step,
    held 8) for 300 steps: at every step's end the game is whole: no VBlank overran, the stack and PC are where the
    program keeps them, the player stands on a walkable step of a real map, no two objects share a step, the bag and
    the PC hold at most 4 items, and every env came back to the world within the last 100 steps (no soft lock)."""
    rng = np.random.default_rng(37)
    codec = np.array([0, hamlet.RIGHT, hamlet.LEFT, hamlet.UP, hamlet.DOWN, hamlet.BTN_A, hamlet.BTN_B,
                      hamlet.START], np.uint8)
    stages = [1, 1, 1, 1, 1, 1, 2, 2, 2, 4, 4, 4]
    gb = machine(len(stages))
    starts = [stage_route_masks(s, "") for s in stages]
    frames = max(len(m) for m in starts)
    for f in range(frames):            # each env idles once its stage is in play
        gb.run_frames(1, buttons=np.array([m[f] if f < len(m) else 0 for m in starts], np.uint8), render="none")
    last_world = np.zeros(len(stages), np.int64)
    steps = 300
    for step in range(steps):
        actions = codec[rng.integers(0, len(codec), len(stages))]
        gb.run_frames(8, buttons=actions, render="none")
        gb.run_frames(STEP_FRAMES - 8, buttons=np.zeros(len(stages), np.uint8), render="none")
        for env in range(len(stages)):
            w = wram(gb, env)
            regs = gb.registers(env)
            assert w["late"] == 0 and 0xDF00 <= regs["sp"] <= 0xE000, (step, env, w, regs)
            assert regs["pc"] < 0x8000 or regs["pc"] >= 0xFF80, (step, env, regs)
            assert w["map"] < len(maps) and w["ui"] <= hamlet.UI_WARP and w["ctx"] <= hamlet.CTX_WARP, (step, env, w)
            assert len(w["bag"]) <= 4 and len(w["pc"]) <= 4, (step, env, w)
            m = maps[w["map"]]
            assert m.walkable(w["x"], w["y"]) or w["ui"] == hamlet.UI_WARP, (step, env, w)
            objects = gb.read_memory(env, hamlet.OBJECTS, hamlet.OBJ_SIZE * hamlet.MAX_OBJECTS)
            places = [(objects[16 * k + 1], objects[16 * k + 2]) for k in range(8) if objects[16 * k]]
            assert len(places) == len(set(places)), (step, env, places)
            if w["ui"] == hamlet.UI_WORLD:
                last_world[env] = step
    assert (last_world >= steps - 100).all(), last_world
