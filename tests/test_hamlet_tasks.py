"""hamlet's tasks (gbx_lightning/roms/tasks/hamlet/): the files restate hamlet.py, the goal templates match their
stage's goal screen and nothing before it, and GameBoyEnv plays each stage's route to success, step for step.

A goal template is the screen after hamlet.ROUTES[s] (tools/hamlet_goals.py captures them); its JSON holds the ROM's
sha256, so a ROM changed without capturing the goals again fails here first. Stage 1's template must match nowhere
along the indoor part of the route (the bedroom, the living room): the village shares no tile with them.
"""
from __future__ import annotations

import hashlib

import numpy as np
import pytest
import torch

from gbx_lightning.emu.buttons import read_trace
from gbx_lightning.envs.goal import load_goal
from gbx_lightning.envs.task import Template, load_task
from gbx_lightning.roms import ROM_DIR, TASK_DIR, available_tasks, hamlet

from tests._hamlet_helpers import STEP_FRAMES, machine, rom_and_symbols, stage_route_masks, wram

pytest.importorskip("warp")

STAGE_TASKS = {1: "house", 2: "lantern", 3: "route", 4: "shrine"}
GOALS = {1: "village", 2: "lantern", 3: "route", 4: "shrine"}
# GameBoyEnv's default codec, dpad_ab_start_noop: "-", right, left, up, down, a, b, start
CODEC = {".": 0, "R": 1, "L": 2, "U": 3, "D": 4, "A": 5, "B": 6, "S": 7}


def test_the_task_files_restate_hamlet_py():
    assert {f"hamlet/{n}" for n in list(STAGE_TASKS.values()) + ["explore"]} <= set(available_tasks())
    assert sorted(p.name for p in (TASK_DIR / "hamlet").iterdir()) == \
        sorted([f"{n}.yaml" for n in STAGE_TASKS.values()] + ["explore.yaml", "ram.yaml"])
    for stage, name in STAGE_TASKS.items():
        task = load_task(f"hamlet/{name}")
        assert task.rom == "hamlet" and task.reward == "goal", name
        assert read_trace(task.start.inputs) == hamlet.stage_inputs(stage), name
        assert task.start.frames == hamlet.stage_start_frames(stage) and task.start.variants == 4, name
        assert task.goal == Template(str(ROM_DIR / f"hamlet_{GOALS[stage]}.png")), name
        assert task.fail is None, name
    explore = load_task("hamlet/explore")
    assert explore.goal is None and read_trace(explore.start.inputs) == hamlet.stage_inputs(1)
    assert explore.start.frames == hamlet.stage_start_frames(1)
    assert {m.name for m in explore.milestones} == {"maps_visited", "tiles_visited", "events", "reached_village"}


@pytest.fixture(scope="module")
def route_screens():
    """{stage: (obs at every step's end of its route, the RAM there)} on one 4-env machine (env s - 1 = stage s)."""
    masks = [stage_route_masks(s) for s in STAGE_TASKS]
    frames = max(len(m) for m in masks)
    grid = np.zeros((len(masks), frames), np.uint8)
    for i, m in enumerate(masks):
        grid[i, :len(m)] = m
    gb = machine(len(masks))
    out = {s: ([], []) for s in STAGE_TASKS}
    for f in range(frames):
        ends = [s for s in STAGE_TASKS if f + 1 > hamlet.stage_start_frames(s) and f < len(masks[s - 1])
                and (f + 1 - hamlet.stage_start_frames(s)) % STEP_FRAMES == 0]
        gb.run_frames(1, buttons=np.ascontiguousarray(grid[:, f]), render="obs" if ends else "none")
        for s in ends:
            out[s][0].append(gb.obs().numpy()[s - 1].copy())
            out[s][1].append(wram(gb, s - 1))
    return out


@pytest.mark.parametrize("stage", list(STAGE_TASKS))
def test_goal_template_matches_its_goal_screen_and_nothing_before(route_screens, stage):
    goal = load_goal(ROM_DIR / f"hamlet_{GOALS[stage]}.png")
    assert goal.rom_sha256 == hashlib.sha256(rom_and_symbols()[0]).hexdigest(), \
        "the ROM changed since the goal was captured: python tools/hamlet_goals.py"
    tau = goal.reward["tau"]
    screens, ram = route_screens[stage]
    dist = [float((np.abs(s.astype(np.int16) - goal.image) * goal.weights).sum() / (3 * goal.weights.sum()))
            for s in screens]
    assert dist[-1] < tau                                        # the route's last step shows the goal
    # from the first step it matches on, it matches; never before the stage's aim is reached in RAM (the map
    # entered, the LANTERN given), and within 2 steps of it (a fade in, a box opening)
    first = next(k for k, d in enumerate(dist) if d < tau)
    assert all(d < tau for d in dist[first:]), dist
    reached = {1: lambda w: w["map"] == hamlet.MAP_VILLAGE,
               2: lambda w: hamlet.EV_GOT_LANTERN in hamlet.events_set(w["events"]),
               3: lambda w: w["map"] == hamlet.MAP_ROUTE,
               4: lambda w: w["map"] == hamlet.MAP_SHRINE}[stage]
    aim = next(k for k, w in enumerate(ram) if reached(w))
    assert aim <= first <= aim + 2, (aim, first, dist)
    if stage == 1:
        indoor = [d for d, w in zip(dist, ram) if w["map"] in (hamlet.MAP_BEDROOM, hamlet.MAP_LIVING)]
        assert len(indoor) >= 15 and min(indoor) > 2 * tau, min(indoor)   # the village shares nothing indoors


@pytest.mark.parametrize("stage", [1, 2])
def test_env_plays_the_route_to_success(stage):
    """GameBoyEnv on the stage's task, its route's actions through the default codec: success on the step the goal
    shows, not before; the counter reports the steps walked."""
    from gbx_lightning.envs import GameBoyEnv

    env = GameBoyEnv(2, task=f"hamlet/{STAGE_TASKS[stage]}", stack_k=2, cpu_threads=1, max_steps=200)
    env.reset(seed=0)
    route = hamlet.ROUTES[stage]
    for k, letter in enumerate(route):
        _, reward, terminated, truncated, info = env.step(torch.full((2,), CODEC[letter], dtype=torch.int32))
        if terminated.any():
            break
    assert terminated.tolist() == [True, True] and info["success"].tolist() == [True, True]
    trigger = len(route.rstrip(".")) - 1         # the last action that does something: the mat step, the last A
    assert trigger <= k <= trigger + 3, f"success at step {k + 1}, the route's last action is step {trigger + 1}"
    walked = sum(letter in "RLUD" for letter in route[:k + 1])
    if stage == 1:
        assert info["steps_walked"].tolist() == [walked] * 2
    assert (reward > 0).all()                                   # the goal bonus


def test_explore_task_counts_maps_and_events_along_stage_one():
    from gbx_lightning.envs import GameBoyEnv

    route = hamlet.HOUSE_ROUTE
    env = GameBoyEnv(1, task="hamlet/explore", stack_k=2, cpu_threads=1, max_steps=len(route))
    env.reset(seed=0)
    total = 0.0
    for letter in route:
        _, reward, terminated, truncated, info = env.step(torch.full((1,), CODEC[letter], dtype=torch.int32))
        total += float(reward[0])
    assert truncated.tolist() == [True] and not terminated.any()
    assert info["maps_visited"].tolist() == [3] and info["reached_village"].tolist() == [1]
    assert info["events"].tolist() == [1]                       # EV_LEFT_HOUSE
    # explore: each new (map, y, x) pays 0.01 (the start's own tile is not new); ram_bits: 1.0 for the event
    tiles = info["tiles_visited"].tolist()[0]
    assert total == pytest.approx(0.01 * (tiles - 1) + 1.0, abs=1e-4)
