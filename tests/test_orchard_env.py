"""The built-in tasks: GameBoyEnv(task="orchard/levelL"). Their LEVEL CLEAR / GAME OVER templates against the
game's RAM flags on recorded random play, a scripted clear of level 1 with its known return, a death, and
the shipped templates against a fresh capture."""

import json

import numpy as np
import pytest
import torch

from gbx_lightning.emu import VecGameBoy
from gbx_lightning.emu.buttons import read_trace, trace_segments
from gbx_lightning.envs import GameBoyEnv
from gbx_lightning.envs.capture import capture_goal
from gbx_lightning.envs.goal import load_goal
from gbx_lightning.envs.rewards import goal_distance
from gbx_lightning.roms import ROM_DIR, build_rom, orchard

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

NOOP, R, L, U, D = range(5)   # the dpad_noop codec


def _ram(gb: VecGameBoy, addr: int) -> np.ndarray:
    return gb.state_array("wram").numpy()[:, addr - 0xC000].copy()


@pytest.mark.parametrize("level, flag, template", [(1, orchard.LEVEL_CLEAR, "orchard_clear.png"),
                                                   (3, orchard.GAME_OVER, "orchard_gameover.png")])
def test_banner_template_agrees_with_the_ram_flag_on_random_play(level, flag, template):
    """64 envs x 160 random steps (24 frames, buttons held 8) from the level's start. Wherever the template
    matches (dist < its tau) at a step's end, the RAM flag is up (or was at the step before: the flag
    drops as the next maze starts loading over the banner); every rise of the flag is matched
    by the template within 2 steps (the banner is drawn over the 2 VBlanks after the event; GAME OVER
    first shakes the screen for 32 frames)."""
    goal = load_goal(ROM_DIR / template)
    n, steps = 64, 160
    gb = VecGameBoy(build_rom("orchard"), n)
    start = orchard.level_start_frames(level) + 1
    for count, mask in trace_segments(read_trace(orchard.level_select_inputs(level)), start):
        gb.run_frames(count, buttons=np.full(n, mask, np.uint8))
    rng = np.random.default_rng(level)
    image, weights = torch.from_numpy(goal.image), torch.from_numpy(goal.weights)
    flags, matches = [], []
    for _ in range(steps):
        gb.run_frames(24, buttons=rng.choice(np.array([0, 1, 2, 4, 8], np.uint8), n), release_after=8, render="obs")
        dist = goal_distance(torch.from_numpy(gb.obs().numpy()), image, weights)
        matches.append((dist < goal.reward["tau"]).numpy())
        flags.append(_ram(gb, flag) == 1)
    flags, matches = np.array(flags), np.array(matches)
    # the flag drops when the next maze starts loading, which redraws the banner rows a few frames later
    recent = flags | np.vstack([np.zeros((1, n), bool), flags[:-1]])
    assert (recent | ~matches).all(), "the template matched a screen without the RAM flag"
    rises = flags & ~np.vstack([np.zeros((1, n), bool), flags[:-1]])
    t, env = np.nonzero(rises)
    assert len(t) >= 10, f"random play raised the flag only {len(t)} times"
    for ti, ei in zip(t, env):
        if ti + 2 >= steps:
            continue                                     # the run ended before the banner could show
        assert matches[ti:ti + 3, ei].any(), f"env {ei}: flag up at step {ti}, no banner within 2 steps"


def _route_env(level=1, start=None, task=None, **kw):
    """Two envs on orchard level `level` from one start state; ``start``/``task``: fields over the level's."""
    options = dict(action_codec="dpad_noop", stack_k=2, max_steps=50, cpu_threads=1)
    task = {"base": f"orchard/level{level}", "start": {"variants": 1, **(start or {})}, **(task or {})}
    return GameBoyEnv(2, task=task, **{**options, **kw})


def test_scripted_clear_of_level_1_has_its_known_return():
    """Up, down x2, up, left x2, right x3 eats the four seeds (each action moves two tiles); the LEVEL CLEAR
    banner ends the episode at step 9 with return 9 * step_cost + alpha * dist(start) + goal_bonus
    (the progress term telescopes: it sums to alpha * (dist_0 - dist_9) and dist_9 = 0)."""
    env = _route_env()
    env.reset(seed=0)
    d0 = float(env.feature("templates").prev_dist[0])
    assert 0.3 < d0 < 0.8                           # the room vs the banner
    route = [U, D, D, U, L, L, R, R, R]
    total = 0.0
    for t, a in enumerate(route):
        obs, reward, term, trunc, info = env.step(torch.tensor([a, NOOP], dtype=torch.int32))
        total += float(reward[0])
        if t < len(route) - 1:
            assert not term[0]
    assert term[0] and info["success"][0] and not info["failed"][0] and not trunc[0]
    assert int(info["episode_length"][0]) == 9 and int(info["seeds_eaten"][0]) == 4
    want = 9 * env.feature("templates").reward_settings["step_cost"] + env.feature("templates").reward_settings["alpha"] * d0 + env.feature("templates").reward_settings["goal_bonus"]
    assert total == pytest.approx(want, abs=1e-5) and float(info["episode_return"][0]) == pytest.approx(want, abs=1e-5)
    assert not term[1] and int(info["episode_length"][1]) == 0            # env 1 idled on
    assert torch.equal(obs[0], env.cache.stack[0])                       # env 0 starts over
    # a game-RAM term on the seeds-eaten byte adds its weight per seed on top
    seeds = [{"name": "step_cost"}, {"name": "goal_distance"}, {"name": "success_bonus"}, {"name": "fail_penalty"},
             {"name": "ram", "address": orchard.SEEDS_EATEN, "weight": 0.25}]
    env = _route_env(task={"reward": seeds})
    env.reset(seed=0)
    returns = [float(env.step(torch.tensor([a, NOOP], dtype=torch.int32))[4]["episode_return"][0]) for a in route]
    assert returns[-1] == pytest.approx(want + 4 * 0.25, abs=1e-5)


def test_touching_the_beetle_fails_the_episode():
    """Level 3, replaying the recorded trace that walks into the beetle (orchard_gameover.trace: a move
    every 8 frames from frame 47) as steps of 8 frames: the GAME OVER template ends the episode,
    terminated and failed, with reward step_cost + alpha * (prev_dist - dist) + fail_penalty."""
    trace = read_trace(str(ROM_DIR / "orchard_gameover.trace"))
    first = 47
    codec = {0: NOOP, 1: R, 2: L, 4: U, 8: D}
    moves = [codec[m] for f, m in trace if f >= first]
    assert [f for f, _ in trace if f >= first] == list(range(first, first + 8 * len(moves), 8))
    env = _route_env(level=3, start={"frames": first}, task={"fail_penalty": -2.0}, frames_per_step=8,
                     release_after_frames=8, max_steps=100)
    env.reset(seed=0)
    for t, a in enumerate(moves + [NOOP] * 12):
        prev = float(env.feature("templates").prev_dist[0])
        obs, reward, term, trunc, info = env.step(torch.tensor([a, NOOP], dtype=torch.int32))
        if term[0]:
            break
    assert term[0], "the beetle was not reached"
    assert info["failed"][0] and not info["success"][0] and int(info["seeds_eaten"][0]) >= 0
    want = env.feature("templates").reward_settings["step_cost"] + env.feature("templates").reward_settings["alpha"] * (prev - float(env.feature("templates").dist[0, 0])) - 2.0
    assert float(reward[0]) == pytest.approx(want, abs=1e-5)
    assert not term[1]


def test_shipped_templates_are_what_the_capture_tool_makes_now():
    """If the ROM's banners change, rerun the commands in the .trace files' headers."""
    for name, frames, random_from in (("orchard_clear", 120, 30), ("orchard_gameover", 170, 46)):
        shipped = load_goal(ROM_DIR / f"{name}.png")
        image, meta = capture_goal("orchard", trace=str(ROM_DIR / f"{name}.trace"), frames=frames,
                                   region={"rows": [24, 40], "cols": [0, 80]}, random_from=random_from,
                                   random_envs=8, random_steps=10)
        assert np.array_equal(image, shipped.image), f"{name}.png is stale: recapture it"
        assert meta["rom_sha256"] == shipped.rom_sha256 == GameBoyEnv(1, rom="orchard", cpu_threads=1).rom_sha256
        assert json.loads((ROM_DIR / f"{name}.json").read_text())["region"] == {"rows": [24, 40], "cols": [0, 80]}
    clear, over = (load_goal(ROM_DIR / f"{n}.png") for n in ("orchard_clear", "orchard_gameover"))
    # the two banners are told apart: each template's tau is far below their distance
    d = float(goal_distance(torch.from_numpy(over.image)[None], torch.from_numpy(clear.image),
                            torch.from_numpy(clear.weights))[0])
    assert d > 2 * max(clear.reward["tau"], over.reward["tau"])


def test_level_start_states():
    for level in (1, 2, 3):
        env = GameBoyEnv(3, task={"base": f"orchard/level{level}", "start": {"variants": 3}}, cpu_threads=1)
        gb = env.machines[0]
        assert env.task.name == f"orchard/level{level} with start" and env.num_start_states == 3
        assert (_ram(gb, orchard.LADDER_LEVEL) == level).all() and (_ram(gb, orchard.GAME_STATE) == 0).all()
        assert (_ram(gb, orchard.SEEDS_LEFT) == orchard.LEVELS[level].seeds).all()
        # the start screen shows the player (black sprite pixels inside the maze area)
        assert (env.reset(seed=0)[:, -1, :64] == 3).sum() > 0
    with pytest.raises(TypeError, match="unexpected keyword argument 'level'"):
        GameBoyEnv(1, rom="orchard", level=8)     # the old spelling: the level is the task's now
