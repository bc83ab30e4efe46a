"""World layouts (envs/world.py): a RAM map's maps placed in one world grid. hamlet's layout walked on the emulator
(the world row is the same on both sides of the village-route exit, the columns step on), Kanto's layout against the
connections of pret/pokered's map headers, the device mapping against the plain one, and one-line refusals."""
from __future__ import annotations

import io

import numpy as np
import pytest
import torch
from PIL import Image

from gbx_lightning.envs.base import OptionError
from gbx_lightning.envs.ram_map import load_ram_map
from gbx_lightning.envs.world import WorldTransform, to_world
from gbx_lightning.media import OUTLINE_RGB, world_heatmap_rgb

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


# ---------------------------------------------------------------------------------------------- hamlet, by hand
def test_hamlet_layout_by_hand():
    """hamlet's ram.yaml: the village at (1, 0), the route right of it one row up (16 x 12 steps at (0, 16)), the
    four rooms in a row below. Positions are (map, y, x) in steps, as wMapId, wPlayerY, wPlayerX hold them."""
    world = load_ram_map("hamlet").world
    assert (world.height, world.width) == (26, 34)
    assert world.position(2, 3, 3) == (4, 3)            # stages 2 and 3 start in front of the house
    assert world.position(2, 12, 15) == (13, 15)        # the village's east exit (a warp)
    assert world.position(4, 13, 0) == (13, 16)         # the route's west edge (the warp back), right beside it
    assert world.position(4, 13, 1) == (13, 17)         # where the exit lands (stage 4's start)
    assert world.position(4, 2, 6) == (2, 22)           # the shrine's door
    assert world.position(0, 5, 3) == (23, 3)           # stage 1's start in the bedroom
    assert world.position(5, 7, 3) == (25, 29)          # inside the shrine, at its door
    assert world.position(2, 16, 0) is None and world.position(0, 0, 7) is None    # past a map's edge
    assert world.position(6, 0, 0) is None              # no map 6


def test_device_mapping_equals_the_plain_one():
    """to_world over every (map, y, x) of map ids 0..7 and coordinates 0..19 (in and out of each box): the same
    (Y, X) as WorldMap.position, and ``inside`` exactly where it is not None; world cells are distinct tuples, and
    no off-world cell equals a world one."""
    world = load_ram_map("hamlet").world
    t = WorldTransform(world, torch.device("cpu"))
    m, y, x = (a.reshape(-1) for a in torch.meshgrid(torch.arange(8), torch.arange(20), torch.arange(20),
                                                     indexing="ij"))
    wy, wx, inside = to_world(m, y, x, t.table)
    expected = [world.position(*p) for p in zip(m.tolist(), y.tolist(), x.tolist())]
    assert inside.tolist() == [p is not None for p in expected]
    assert [(a, b) for a, b, i in zip(wy.tolist(), wx.tolist(), inside.tolist()) if i] == \
        [p for p in expected if p is not None]
    assert int(inside.sum()) == 16 * 16 + 16 * 12 + 7 * 7 + 3 * 8 * 8
    cells = t.cell_values(m, y, x)
    assert len({tuple(c) for c in cells.tolist()}) == len(cells)
    assert all(v < 1 << w for v, w in zip(cells.max(0).values.tolist(), t.cell_widths))


# ---------------------------------------------------------------------------------------------- Kanto
# Map sizes in blocks (height, width), pret/pokered constants/map_constants.asm ("mapconst NAME, height, width").
KANTO_BLOCKS = {
    0: (9, 10), 1: (18, 20), 2: (18, 20), 3: (18, 20), 4: (9, 10), 5: (18, 20), 6: (18, 25), 7: (18, 20),
    8: (9, 10), 9: (9, 10), 10: (18, 20),
    12: (18, 10), 13: (36, 10), 14: (9, 35), 15: (9, 45), 16: (18, 10), 17: (18, 10), 18: (9, 10), 19: (9, 30),
    20: (9, 30), 21: (36, 10), 22: (9, 30), 23: (54, 10), 24: (9, 30), 25: (27, 10), 26: (9, 30), 27: (9, 20),
    28: (72, 10), 29: (9, 25), 30: (27, 10), 31: (9, 50), 32: (45, 10), 33: (9, 20), 34: (72, 10), 35: (18, 10),
    36: (9, 30),
}
# Every connection of the outdoor maps: (map id, direction, neighbour id, offset in blocks), from the
# "connection" lines of pret/pokered data/maps/headers/<Map>.asm (PalletTown.asm, ViridianCity.asm, ...,
# Route1.asm .. Route25.asm). Ids: PALLET_TOWN 0 .. SAFFRON_CITY 10, ROUTE_1 12 .. ROUTE_25 36.
KANTO_CONNECTIONS = [
    (0, "north", 12, 0), (0, "south", 32, 0),                                           # PalletTown.asm
    (1, "north", 13, 5), (1, "south", 12, 5), (1, "west", 33, 4),                       # ViridianCity.asm
    (2, "south", 13, 5), (2, "east", 14, 4),                                            # PewterCity.asm
    (3, "north", 35, 5), (3, "south", 16, 5), (3, "west", 15, 4), (3, "east", 20, 4),   # CeruleanCity.asm
    (4, "north", 21, 0), (4, "south", 23, 0), (4, "west", 19, 0),                       # LavenderTown.asm
    (5, "north", 17, 5), (5, "east", 22, 4),                                            # VermilionCity.asm
    (6, "west", 27, 4), (6, "east", 18, 4),                                             # CeladonCity.asm
    (7, "south", 30, 5), (7, "west", 29, 4), (7, "east", 26, 4),                        # FuchsiaCity.asm
    (8, "north", 32, 0), (8, "east", 31, 0),                                            # CinnabarIsland.asm
    (9, "south", 34, 0),                                                                # IndigoPlateau.asm
    (10, "north", 16, 5), (10, "south", 17, 5), (10, "west", 18, 4), (10, "east", 19, 4),   # SaffronCity.asm
    (12, "north", 1, -5), (12, "south", 0, 0),                                          # Route1.asm
    (13, "north", 2, -5), (13, "south", 1, -5),                                         # Route2.asm
    (14, "north", 15, 25), (14, "west", 2, -4),                                         # Route3.asm
    (15, "south", 14, -25), (15, "east", 3, -4),                                        # Route4.asm
    (16, "north", 3, -5), (16, "south", 10, -5),                                        # Route5.asm
    (17, "north", 10, -5), (17, "south", 5, -5),                                        # Route6.asm
    (18, "west", 6, -4), (18, "east", 10, -4),                                          # Route7.asm
    (19, "west", 10, -4), (19, "east", 4, 0),                                           # Route8.asm
    (20, "west", 3, -4), (20, "east", 21, 0),                                           # Route9.asm
    (21, "south", 4, 0), (21, "west", 20, 0),                                           # Route10.asm
    (22, "west", 5, -4), (22, "east", 23, -27),                                         # Route11.asm
    (23, "north", 4, 0), (23, "south", 24, -20), (23, "west", 22, 27),                  # Route12.asm
    (24, "north", 23, 20), (24, "west", 25, 0),                                         # Route13.asm
    (25, "west", 26, 18), (25, "east", 24, 0),                                          # Route14.asm
    (26, "west", 7, -4), (26, "east", 25, -18),                                         # Route15.asm
    (27, "south", 28, 0), (27, "east", 6, -4),                                          # Route16.asm
    (28, "north", 27, 0), (28, "south", 29, 0),                                         # Route17.asm
    (29, "north", 28, 0), (29, "east", 7, -4),                                          # Route18.asm
    (30, "north", 7, -5), (30, "west", 31, 18),                                         # Route19.asm
    (31, "west", 8, 0), (31, "east", 30, -18),                                          # Route20.asm
    (32, "north", 0, 0), (32, "south", 8, 0),                                           # Route21.asm
    (33, "north", 34, 0), (33, "east", 1, -4),                                          # Route22.asm
    (34, "north", 9, 0), (34, "south", 33, 0),                                          # Route23.asm
    (35, "south", 3, -5), (35, "east", 36, 0),                                          # Route24.asm
    (36, "west", 35, 0),                                                                # Route25.asm
]


def _neighbour_corner(rect, direction: str, nh: int, nw: int, offset: int) -> tuple[int, int]:
    """Where a connection puts the neighbour's top-left corner (steps), from the coordinate the player arrives at
    (pret/pokered macros/scripts/maps.asm, connection): north y = 2 h' - 1, x - 2 offset; south y = 0, x - 2 offset;
    west x = 2 w' - 1, y - 2 offset; east x = 0, y - 2 offset. A step off the map's edge at (y, x) arrives there, so
    local (0, 0) of the neighbour lies at the map's local (-2 h', 2 offset), (2 h, 2 offset), (2 offset, -2 w'),
    (2 offset, 2 w); nh, nw: the neighbour's size in steps."""
    dy, dx = {"north": (-nh, 2 * offset), "south": (rect.h, 2 * offset), "west": (2 * offset, -nw),
              "east": (2 * offset, rect.w)}[direction]
    return rect.y + dy, rect.x + dx


def test_kanto_layout_agrees_with_every_connection_of_the_disassembly():
    """pokered's ram.yaml world: the 36 outdoor maps, each 2 x its size in blocks; for each of the 78 connections of
    the headers, the neighbour's corner the connection implies is the layout's, and the two boxes share the edge
    the player walks over (from which side the walk is continuous: y - 1 off the top edge is the neighbour's bottom
    row)."""
    world = load_ram_map("pokered").world
    assert sorted(world.rects) == sorted(KANTO_BLOCKS) and len(KANTO_CONNECTIONS) == 78
    for map_id, (bh, bw) in KANTO_BLOCKS.items():
        r = world.rects[map_id]
        assert (r.h, r.w) == (2 * bh, 2 * bw), r
    for map_id, direction, other, offset in KANTO_CONNECTIONS:
        r, n = world.rects[map_id], world.rects[other]
        assert _neighbour_corner(r, direction, n.h, n.w, offset) == (n.y, n.x), (map_id, direction, other)
    # both directions listed where both headers list them (Route 22's north to Route 23 has its reverse too)
    pairs = {(a, b) for a, _, b, _ in KANTO_CONNECTIONS}
    assert all((b, a) in pairs for a, b in pairs)
    # a walk north out of Pallet Town (wYCoord 0 -> Route 1's bottom row, 2 * 18 - 1) keeps its world column
    pallet, route1 = world.rects[0], world.rects[12]
    assert world.position(0, 0, 5)[1] == world.position(12, 35, 5)[1]
    assert world.position(12, 35, 5)[0] == world.position(0, 0, 5)[0] - 1
    # Viridian City's south (Route 1 at offset 5 blocks = 10 steps): Route 1's x 0 is Viridian's x 10
    assert world.position(1, 35, 10)[1] == world.position(12, 0, 0)[1] and pallet.x == route1.x


# ---------------------------------------------------------------------------------------------- refusals
FIELDS = {"map": 0xC100, "y": 0xC101, "x": 0xC102, "pair": {"address": 0xC103, "count": 2}}


def _layout(**world):
    base = {"map": "map", "y": "y", "x": "x", "maps": {0: {"y": 0, "x": 0, "h": 4, "w": 4}}}
    return {"fields": FIELDS, "world": {**base, **world}}


@pytest.mark.parametrize("world, option, words", [
    ({"maps": {0: {"y": 0, "x": 0, "h": 4, "w": 4}, 1: {"name": "b", "y": 3, "x": 2, "h": 4, "w": 4}}},
     "ram_map.world.maps.1", "overlaps map 0: world rows 3..3, columns 2..3"),
    ({"maps": {0: {"y": 0, "x": 0, "h": -1, "w": 4}}}, "ram_map.world.maps.0.h", "must be an int in 1..256"),
    ({"maps": {0: {"y": -2, "x": 0, "h": 1, "w": 4}}}, "ram_map.world.maps.0.y", "must be an int in 0..4095"),
    ({"maps": {0: {"y": 0, "x": 0, "h": 1}}}, "ram_map.world.maps.0.w", "is required"),
    ({"maps": {0: {"y": 0, "x": 0, "h": 1, "w": 1, "z": 1}}}, "ram_map.world.maps.0.z", "is not a map box key"),
    ({"maps": {256: {"y": 0, "x": 0, "h": 1, "w": 1}}}, "ram_map.world.maps.256", "map id, an int in 0..255"),
    ({"maps": {}}, "ram_map.world.maps", "must map map ids to boxes"),
    ({"y": "nope"}, "ram_map.world.y", "must name a field of this RAM map"),
    ({"x": "pair"}, "ram_map.world.x", "one number per env"),
    ({"zoom": 2}, "ram_map.world.zoom", "is not a world layout key"),
])
def test_bad_layouts_are_one_line_errors(world, option, words):
    with pytest.raises(OptionError) as err:
        load_ram_map(_layout(**world), "ram_map")
    assert err.value.option == option and words in str(err.value) and "\n" not in str(err.value)


def test_world_options_need_a_layout():
    """heatmap, explore and distinct with world: true on orchard (no world in its RAM map): one line each."""
    from gbx_lightning.envs import GameBoyEnv
    from gbx_lightning.envs.reward_item import RewardSpecError

    cases = [({"heatmap": {"world": True}}, "task.heatmap.world"),
             ({"milestones": [{"name": "tiles", "kind": "distinct", "world": True}]}, "task.milestones[0].world"),
             ({"reward": [{"name": "explore", "world": True}]}, "reward[0].world")]
    for task, option in cases:
        with pytest.raises((OptionError, RewardSpecError)) as err:
            GameBoyEnv(1, task={"base": "orchard/level3", **task}, cpu_threads=1)
        text = str(err.value)
        assert option in text and "world layout" in text and "\n" not in text, text
    with pytest.raises((OptionError, RewardSpecError)) as err:
        GameBoyEnv(1, task={"base": "hamlet/route", "reward": [{"name": "explore", "fields": ["map"], "world": True}]},
                   cpu_threads=1)
    assert "reward[0].fields must be left out with world: true" in str(err.value)
    with pytest.raises(OptionError, match=r"task.milestones\[0\].world must be true \(distinct milestones only"):
        GameBoyEnv(1, task={"base": "hamlet/route", "milestones": [{"name": "p", "kind": "peak", "field": "y",
                                                                    "world": True}]}, cpu_threads=1)


# ---------------------------------------------------------------------------------------------- the picture
def test_world_picture_by_hand():
    """Counts 1 and 7 on a 4 x 6 world, scale 2: grey 85 and 255 (log(1 + n) / log 8), each box outlined along
    its inner edge; the rest black."""
    counts = np.zeros((4, 6), np.int64)
    counts[1, 1], counts[2, 4] = 1, 7
    rgb = world_heatmap_rgb(counts, [(0, 0, 4, 3), (0, 3, 2, 3)], scale=2)
    assert rgb.shape == (8, 12, 3)
    assert tuple(rgb[2, 2]) == tuple(rgb[3, 3]) == (85, 85, 85)            # cell (1, 1), inside box 0's outline
    assert tuple(rgb[4, 8]) == (255, 255, 255) and tuple(rgb[5, 9]) == (255, 255, 255)   # cell (2, 4): no box
    assert tuple(rgb[0, 0]) == tuple(rgb[7, 5]) == tuple(rgb[3, 6]) == tuple(rgb[0, 11]) == OUTLINE_RGB
    assert tuple(rgb[6, 8]) == (0, 0, 0)                                    # an unvisited cell outside the boxes


# ---------------------------------------------------------------------------------------------- on the emulator
# GameBoyEnv's default codec, dpad_ab_start_noop: "-", right, left, up, down, a, b, start
CODEC = {".": 0, "R": 1, "L": 2, "U": 3, "D": 4, "A": 5, "B": 6, "S": 7}


def test_hamlet_walk_is_continuous_in_the_world():
    """Stage 3's route (hamlet.ROUTES[3]) from the village, then right, back left over the exit and one more step
    left, with no goal so the episode goes on across the exit. The world positions after each step, by hand from
    the layout: one row (13) on both sides of the exit, the columns one step apart but at the exit's warps, which
    carry the walker over the other map's warp tile (15 -> 17 going east, 16 -> 14 going west). The world heatmap
    counts every one of them; explore and the distinct milestone over world tiles count the 25 tiles walked, and
    the observation's visited grid (explore's world cells) sees across the exit."""
    pytest.importorskip("warp")
    from gbx_lightning.envs import GameBoyEnv
    from gbx_lightning.roms import hamlet

    actions = hamlet.ROUTES[3] + "R..LL....L"
    env = GameBoyEnv(1, task={"base": "hamlet/route", "goal": None, "heatmap": {"world": True},
                              "reward": [{"name": "explore", "world": True, "weight": 1.0}],
                              "milestones": [{"name": "world_tiles", "kind": "distinct", "world": True}]},
                     obs={"visited": {"radius": 2}}, stack_k=2, cpu_threads=1, max_steps=len(actions))
    env.reset(seed=0)
    world = WorldTransform(load_ram_map("hamlet").world, env.device)
    path, total, rows_seen = [], 0.0, []
    for letter in actions:
        obs, reward, terminated, truncated, info = env.step(torch.full((1,), CODEC[letter], dtype=torch.int32))
        rows_seen.append(info["final_obs"][0, 0].reshape(-1)[10:15].tolist())   # the visited grid's row dy = 0
        y, x, inside = world.positions(env)
        assert bool(inside[0])
        path.append((int(y[0]), int(x[0])))
        total += float(reward[0])
    assert truncated.tolist() == [True] and not terminated.any()
    down, right, down2, right2 = ([(4 + k, 3) for k in range(1, 8)], [(11, 3 + k) for k in range(1, 7)],
                                  [(12, 9), (13, 9)], [(13, 9 + k) for k in range(1, 5)])
    talk = [(13, 13)] * 10              # the guard blocks the 5th step right: face him, talk, he steps aside
    across = [(13, 14), (13, 15), (13, 17), (13, 17), (13, 18), (13, 18), (13, 18), (13, 17), (13, 16)] + \
        [(13, 14)] * 4 + [(13, 13)]
    walk = down + right + down2 + right2 + talk + across
    # the last step ends the episode (max_steps): RAM then holds the next episode's start (the features counted
    # where it ended)
    assert path[:-1] == walk[:-1] and path[-1] == (4, 3)
    # on the route at world (13, 17), the grid around the player reaches back over the exit: (13, 15), the
    # village's exit tile, two columns left, is marked; (13, 16), the route's edge, not yet; walking back, all five
    k = walk.index((13, 17))
    assert rows_seen[k] == [255, 0, 255, 0, 0] and rows_seen[walk.index((13, 16))] == [255] * 5
    rows = {y for y, _ in walk[walk.index((13, 14)):]}
    assert rows == {13}                 # the exit keeps the walker's world row
    tiles = len({(4, 3), *walk})
    assert tiles == 25 and info["world_tiles"].tolist() == [25] and total == pytest.approx(24.0)
    counts = env.feature("heatmap").counts
    expected = torch.zeros_like(counts)
    for p in walk:
        expected[p] += 1
    assert torch.equal(counts, expected)
    # the world counts are in the env's state: another env's heatmap loads them exactly
    again = GameBoyEnv(1, task={"base": "hamlet/route", "goal": None, "heatmap": {"world": True}}, stack_k=2,
                       cpu_threads=1)
    state = env.state_dict()
    assert state["features"]["heatmap"]["counts"].shape == (26, 34)
    again.feature("heatmap").load_state_dict(state["features"]["heatmap"], "heatmap")
    assert torch.equal(again.feature("heatmap").counts, expected)
    png, height, width = env.feature("heatmap").picture()
    image = np.asarray(Image.open(io.BytesIO(png)))
    scale = 512 // 34
    assert image.shape == (height, width, 3) == (26 * scale, 34 * scale, 3)
    assert tuple(image[13 * scale + scale // 2, 15 * scale + scale // 2]) != (0, 0, 0)   # the exit tile, visited
    assert tuple(image[0, 16 * scale]) == OUTLINE_RGB                                  # the route's top-left corner


def test_agent_view_logs_the_heatmap_after_every_evaluation():
    """AgentView writes agent/visit_heatmap when an evaluation ends (not in the sanity check, nor with
    image_every 0), at the run's env_steps: the picture of the env's heatmap feature."""
    from types import SimpleNamespace

    from gbx_lightning.callbacks import AgentView

    class Heatmap:
        def picture(self):
            return b"png", 3, 4

    env = SimpleNamespace(feature=lambda name: Heatmap() if name == "heatmap" else None)
    module = SimpleNamespace(env=env, env_steps=1234, opt_steps=7, last_eval_clip=None)
    written = []
    for image_every, sanity, expected in ((500, False, [("agent/visit_heatmap", b"png", 3, 4, 1234)]),
                                          (500, True, []), (0, False, [])):
        view = AgentView(image_every=image_every)
        view._write = lambda trainer, *args: written.append(args)
        written.clear()
        view.on_validation_end(SimpleNamespace(sanity_checking=sanity, is_global_zero=True), module)
        assert written == expected
