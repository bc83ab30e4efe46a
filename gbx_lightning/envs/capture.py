"""Capturing a goal screen and calibrating its threshold (``tools/capture_goal.py`` is the command line).

The goal is the observation a start recipe reaches (a savestate or power-on, then an input trace);
calibration plays randomly from the episode start on a GameBoyEnv and puts ``tau`` into the gap
between the goal and the screens random play shows (``suggest_tau``). ``envs/goal.py`` writes and
reads the result (GOAL.png + GOAL.json).
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import torch

from gbx_lightning.emu import VecGameBoy
from gbx_lightning.emu.buttons import buttons_name, read_trace, trace_segments
from gbx_lightning.roms import resolve_rom

from .gameboy import GameBoyEnv
from .goal import REWARD_DEFAULTS, GoalError, region_weights
from .rewards import goal_distance
from .task import Start, Task, load_start_state

__all__ = ["capture_goal", "parse_region", "suggest_tau"]


def parse_region(spec: str | None) -> dict | None:
    """'24:40,0:80' (obs rows, cols; end exclusive) -> {"rows": [24, 40], "cols": [0, 80]}."""
    if spec is None:
        return None
    try:
        rows, cols = (tuple(int(v) for v in part.split(":")) for part in spec.split(","))
        assert len(rows) == 2 and len(cols) == 2
    except (ValueError, AssertionError):
        raise GoalError(f"region must be 'ROW0:ROW1,COL0:COL1' in observation pixels (72x80), got {spec!r}") from None
    region = {"rows": list(rows), "cols": list(cols)}
    region_weights(region, Path("."))       # checks the bounds
    return region


def suggest_tau(random_play: np.ndarray) -> tuple[float, tuple[float, float]]:
    """A threshold between the goal and everything else: a quarter of the way into the widest gap in
    the sorted distances of random-play screens to the goal (0 included: the goal itself), looking
    below random play's median. A quarter, not the middle: screens random play never showed (another
    banner, a rarer room) may lie closer than those it did. Random play may reach the goal itself;
    those screens sit near 0, under the gap. Returns (tau, (gap_low, gap_high))."""
    ceiling = float(np.median(random_play))
    vals = np.unique(np.concatenate([[0.0], random_play]))
    vals = vals[vals <= ceiling]
    if vals.size < 2:
        return max(ceiling / 4, 1e-3), (0.0, ceiling)
    i = int(np.argmax(np.diff(vals)))
    return float(vals[i] + (vals[i + 1] - vals[i]) / 4), (float(vals[i]), float(vals[i + 1]))


def capture_goal(rom, *, state=None, trace=None, frames: int | None = None, region: dict | None = None,
                 random_from: int = 0, random_start=None, random_envs: int = 64, random_steps: int = 150,
                 frames_per_step: int = 24, release_after_frames: int = 8, seed: int = 0) -> tuple[np.ndarray, dict]:
    """The goal screen and a meta dict with calibrated reward settings (see tools/capture_goal.py).

    The goal is the observation after ``frames`` frames from ``state`` (a savestate, or power-on),
    pressing ``trace``'s buttons. Calibration measures the distance to it of (a) the screens that
    follow the goal with no button held (the goal as it stays on screen) and (b) random play from
    the episode start: the savestate ``random_start`` if given (e.g. the env's start_state, when
    ``state`` was saved at the goal), else ``state`` run ``random_from`` frames into the trace.
    ``tau`` goes into the gap between the goal and random play (``suggest_tau``); ``k_consecutive``
    is 1; the meta records for how many idle steps the goal stays under tau.
    """
    rom_source, rom_name = resolve_rom(rom)
    changes = read_trace(trace, "trace") if trace is not None else [(0, 0)]
    if frames is None:
        frames = changes[-1][0]
    if frames < 1 and state is None:
        raise GoalError("frames: capture at least 1 frame after power-on (--frames, or a trace whose last line "
                        "is the capture frame)")
    gb = VecGameBoy(rom_source, 1)
    if state is not None:
        load_start_state(gb, state)
    for count, mask in trace_segments(changes, frames):
        gb.run_frames(count, buttons=np.full(1, mask, np.uint8), render="obs")
    goal = gb.obs().numpy()[0].copy()
    weights = region_weights(region, Path("."))
    goal_t, w_t = torch.from_numpy(goal), torch.from_numpy(weights)

    after = []
    for _ in range(3):
        gb.run_frames(frames_per_step, render="obs")
        after.append(float(goal_distance(torch.from_numpy(gb.obs().numpy()), goal_t, w_t)[0]))
    start = Start(state=state, inputs=changes, frames=min(random_from, frames), variants=1)
    if random_start is not None:
        start = Start(state=random_start, variants=1)
    env = GameBoyEnv(random_envs, rom=rom, task=Task(start=start), seed=seed, frames_per_step=frames_per_step,
                     release_after_frames=release_after_frames, action_codec="dpad_ab_start_noop",
                     max_steps=random_steps)
    gen = torch.Generator().manual_seed(seed)
    dists = []
    for _ in range(random_steps):
        obs, *_ = env.step(torch.randint(0, env.num_actions, (random_envs,), generator=gen, dtype=torch.int32))
        dists.append(goal_distance(obs[:, -1], goal_t, w_t))
    rand = torch.cat(dists).numpy()
    tau, gap = suggest_tau(rand)
    stays = next((i for i, d in enumerate(after) if d >= tau), len(after))   # idle steps the goal stays up
    k = 1   # the goal need only be seen once when the gap is clean; raise it for goals that flicker
    meta = {
        "rom_sha256": gb.cart.sha256, "rom_title": gb.cart.title, "rom": rom_name,
        "source": {"state": None if state is None else os.fspath(state),
                   "trace": [f"{f} {buttons_name(m)}" for f, m in changes], "frames": frames},
        "region": region,
        "reward": {**REWARD_DEFAULTS, "tau": round(tau, 4), "k_consecutive": k},
        "calibration": {"goal_then_idle_steps": [round(d, 4) for d in after], "goal_stays_steps": stays,
                        "gap": [round(g, 4) for g in gap],
                        "random_play": {"envs": random_envs, "steps": random_steps,
                                        "from": os.fspath(random_start) if random_start is not None else
                                        f"frame {min(random_from, frames)}",
                                        "min": round(float(rand.min()), 4), "p1": round(float(np.quantile(rand, 0.01)), 4),
                                        "p50": round(float(np.median(rand)), 4),
                                        "below_tau": round(float((rand < tau).mean()), 5)}},
    }
    return goal, meta
