"""The map-visit heatmap (envs/features/heatmap.py, media.heatmap_grey, AgentView's agent/visit_heatmap): visits counted
against the player's coordinates read back from RAM at every step, the map filter, exact resume, one-line
refusals, and the image's grey levels by hand."""

import numpy as np
import pytest
import torch

from gbx_lightning.envs import GameBoyEnv
from gbx_lightning.envs.base import OptionError
from gbx_lightning.media import encode_png_grey, heatmap_grey

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

PLAYER_X, PLAYER_Y, LEVEL = 0xC107, 0xC108, 0xC103     # orchard's wPlayerX, wPlayerY, wLevel (roms/tasks/orchard/ram.yaml)


def _env(n=4, **task):
    return GameBoyEnv(n, task={"base": "orchard/level3", **task}, action_codec="dpad_noop", max_steps=12,
                      cpu_threads=1)


def _walk(env, steps, seed=0, expected=None) -> int:
    """Random actions; ``expected`` gets one visit at every env's (y, x) read from RAM after each step, but where
    its episode ended (RAM then holds the next episode's start; the heatmap counted where it ended). Returns the
    number of those ends."""
    g = torch.Generator().manual_seed(seed)
    ends = 0
    for _ in range(steps):
        _, _, terminated, truncated, _ = env.step(torch.randint(0, env.num_actions, (env.num_envs,), generator=g,
                                                                dtype=torch.int32))
        if expected is not None:
            done = (terminated | truncated).tolist()
            ends += sum(done)
            for y, x, d in zip(env.read_ram(PLAYER_Y)[:, 0].tolist(), env.read_ram(PLAYER_X)[:, 0].tolist(), done):
                expected[y // 8, x // 8] += 0 if d else 1     # orchard's heatmap: cell 8 (8x8-pixel tiles)
    return ends


def test_visits_are_the_coordinates_read_from_ram_after_each_step():
    """Orchard's level tasks declare heatmap {y: player_y, x: player_x, cell: 8} (a 32 x 32 grid); 30 steps of 4 envs (episodes end at 12 steps
    and restart) put 120 visits where RAM says the players stood (at an episode's last step: where it ended, which
    RAM no longer shows); an evaluation env counts nothing."""
    env = _env()
    assert env.feature("heatmap").counts.shape == (32, 32) and int(env.feature("heatmap").counts.sum()) == 0
    expected = torch.zeros(32, 32, dtype=torch.int64)
    ends = _walk(env, 30, expected=expected)
    counts = env.feature("heatmap").counts
    assert ends >= 8 and int(counts.sum()) == 120 and int((counts > 0).sum()) > 4     # the players moved
    assert bool((counts >= expected).all()) and int((counts - expected).sum()) == ends
    before = counts.clone()
    env.eval()
    _walk(env, 5)
    assert torch.equal(env.feature("heatmap").counts, before)


def test_the_map_filter_counts_only_that_map():
    """map: level (wLevel, 2 on level 3) - map_value 2 counts every visit, map_value 0 none; cell 1 (the default):
    a grid of 256 x 256 pixel coordinates."""
    assert int(_env(2).read_ram(LEVEL)[0, 0]) == 2
    on = _env(2, heatmap={"y": "player_y", "x": "player_x", "map": "level", "map_value": 2})
    off = _env(2, heatmap={"y": "player_y", "x": "player_x", "map": "level", "map_value": 0})
    _walk(on, 6)
    _walk(off, 6)
    assert int(on.feature("heatmap").counts.sum()) == 12 and int(off.feature("heatmap").counts.sum()) == 0
    assert on.feature("heatmap").counts.shape == (256, 256)


def test_a_task_without_a_heatmap_has_none():
    env = _env(2, heatmap=None)
    assert env.feature("heatmap") is None and "heatmap" not in env.state_dict()["features"]


def test_the_counts_resume_exactly():
    """Counts are in the env's state: 10 steps, save, 10 more, equal to a fresh env loaded at the save and walked the
    same 10 steps; a state saved without a heatmap loads with the counts at zero."""
    first = _env()
    _walk(first, 10)
    state = first.state_dict()
    assert state["features"]["heatmap"]["counts"].shape == (32, 32)
    _walk(first, 10, seed=1)
    second = _env()
    second.load_state_dict(state)
    _walk(second, 10, seed=1)
    assert torch.equal(first.feature("heatmap").counts, second.feature("heatmap").counts)
    del state["features"]["heatmap"]
    second.load_state_dict(state)
    assert int(second.feature("heatmap").counts.sum()) == 0


@pytest.mark.parametrize("heatmap, field, words", [
    ({"y": "score", "x": "player_x"}, "task.heatmap.y", "at most 10 bits"),            # a 2-byte field
    ({"y": "player_y", "x": "hazard_x"}, "task.heatmap.x", "one number"),                # 4 numbers
    ({"y": "player_y", "x": "nope"}, "task.heatmap.x", "is not a field"),
    ({"y": "player_y", "x": "player_x", "map_value": -1}, "task.heatmap.map_value", "int >= 0"),
    ({"y": "player_y", "x": "player_x", "cell": 0}, "task.heatmap.cell", "int >= 1"),
    ({"y": "player_y"}, "task.heatmap.x", "required"),
    ({"y": "player_y", "x": "player_x", "colour": 1}, "task.heatmap.colour", "not a field of Heatmap"),
])
def test_bad_heatmaps_are_one_line_errors(heatmap, field, words):
    with pytest.raises(OptionError) as err:
        _env(2, heatmap=heatmap)
    assert err.value.option == field and words in str(err.value) and "\n" not in str(err.value)


def test_heatmap_grey_by_hand():
    """Cropped to the visited box from (0, 0); log(1 + n) / log(1 + max) * 255: counts 1 and 7 -> 85 and 255."""
    counts = np.zeros((8, 8), dtype=np.int64)
    assert heatmap_grey(counts) is None
    counts[1, 2], counts[2, 0] = 7, 1
    assert heatmap_grey(counts).tolist() == [[0, 0, 0], [0, 0, 255], [85, 0, 0]]
    png = encode_png_grey(heatmap_grey(counts), 2)
    from PIL import Image
    import io
    assert np.asarray(Image.open(io.BytesIO(png))).tolist()[4:6] == [[85, 85, 0, 0, 0, 0]] * 2
