"""Goal templates on disk: a goal screen as a PNG a person can look at, and its meta file.

``GOAL.png`` is the 72x80 observation (shades 0..3 drawn as the DMG's four greys) of the
screen that means "done" (e.g. a LEVEL CLEAR banner); ``GOAL.json`` beside it says where it
came from (ROM sha256, state or trace, frame), which part of the screen counts (``region``:
a rectangle of obs rows/cols, or a mask PNG whose white pixels count), and the reward
defaults calibrated for it (``tau``, ``k_consecutive``, ``step_cost``, ``alpha``,
``goal_bonus``; see ``envs/rewards.py``). ``tools/capture_goal.py`` writes both.
"""
from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from gbx_lightning.media import decode_png_grey, encode_png, grey_to_shades

__all__ = ["GoalTemplate", "GoalError", "load_goal", "save_goal", "goal_meta_path", "OBS_SHAPE",
           "REWARD_DEFAULTS"]

OBS_SHAPE = (72, 80)
GOAL_FORMAT = "gbx_lightning.goal"
GOAL_VERSION = 1
# Reward defaults when the meta file names none (envs/rewards.py has the formula).
REWARD_DEFAULTS = {"tau": 0.05, "k_consecutive": 1, "step_cost": -0.01, "alpha": 1.0, "goal_bonus": 1.0}


class GoalError(ValueError):
    """A goal template that cannot be used; the message names the file and what is wrong."""


@dataclass
class GoalTemplate:
    """A goal screen: ``image`` uint8 [72, 80] shades, ``weights`` float32 [72, 80] (1 inside the
    region), ``reward`` the reward settings from the meta file, ``meta`` the whole meta file."""
    image: np.ndarray
    weights: np.ndarray
    reward: dict = field(default_factory=dict)
    meta: dict = field(default_factory=dict)
    path: str = ""

    @property
    def rom_sha256(self) -> str | None:
        return self.meta.get("rom_sha256")


def goal_meta_path(png_path: str | os.PathLike) -> Path:
    """GOAL.png -> GOAL.json (the meta file beside the template)."""
    return Path(png_path).with_suffix(".json")


def _read_png_shades(path: Path, what: str) -> np.ndarray:
    try:
        grey = decode_png_grey(path.read_bytes())
    except ValueError as err:
        raise GoalError(f"{what} {path}: not a readable PNG ({err})") from None
    if grey.shape != OBS_SHAPE:
        raise GoalError(f"{what} {path}: expected a {OBS_SHAPE[1]}x{OBS_SHAPE[0]} image (the 72x80 "
                        f"observation), got {grey.shape[1]}x{grey.shape[0]}")
    return grey


def _region_weights(region, base: Path) -> np.ndarray:
    weights = np.zeros(OBS_SHAPE, np.float32)
    if region is None:
        weights[:] = 1.0
        return weights
    if not isinstance(region, dict):
        raise GoalError(f"region must be a mapping with 'rows'/'cols' or 'mask', got {region!r}")
    if "mask" in region:
        mask_path = base.parent / str(region["mask"])
        if not mask_path.is_file():
            raise GoalError(f"region mask {mask_path} does not exist")
        weights[:] = _read_png_shades(mask_path, "region mask") >= 128
    else:
        h, w = OBS_SHAPE
        rows, cols = region.get("rows", [0, h]), region.get("cols", [0, w])
        for name, (lo, hi), size in (("rows", rows, h), ("cols", cols, w)):
            if not (isinstance(lo, int) and isinstance(hi, int) and 0 <= lo < hi <= size):
                raise GoalError(f"region {name} must be [start, end) with 0 <= start < end <= {size}, "
                                f"got {[lo, hi]}")
        weights[rows[0]:rows[1], cols[0]:cols[1]] = 1.0
    if weights.sum() == 0:
        raise GoalError("region selects no pixel")
    return weights


def load_goal(path: str | os.PathLike, field: str = "goal") -> GoalTemplate:
    """Read GOAL.png and GOAL.json; a missing or malformed file is a GoalError naming `field` and the path."""
    png = Path(path)
    if not png.is_file():
        raise GoalError(f"{field}: goal template {png} does not exist (write one with tools/capture_goal.py)")
    meta_path = goal_meta_path(png)
    meta: dict = {}
    if meta_path.is_file():
        try:
            meta = json.loads(meta_path.read_text())
        except json.JSONDecodeError as err:
            raise GoalError(f"{field}: {meta_path} is not valid JSON ({err})") from None
        if not isinstance(meta, dict) or meta.get("format", GOAL_FORMAT) != GOAL_FORMAT:
            raise GoalError(f"{field}: {meta_path} is not a goal meta file (format {GOAL_FORMAT!r})")
    try:
        image = grey_to_shades(_read_png_shades(png, f"{field}: goal template"))
        weights = _region_weights(meta.get("region"), png)
    except GoalError as err:
        msg = str(err)
        raise GoalError(msg if msg.startswith(field) else f"{field}: {meta_path}: {msg}") from None
    reward = dict(REWARD_DEFAULTS)
    for key, value in (meta.get("reward") or {}).items():
        if key in REWARD_DEFAULTS:
            reward[key] = value
    return GoalTemplate(image=image, weights=weights, reward=reward, meta=meta, path=str(png))


def save_goal(path: str | os.PathLike, image: np.ndarray, meta: dict) -> Path:
    """Write GOAL.png (the shades as greys) and GOAL.json (``meta`` plus format/version); returns the JSON path."""
    image = np.asarray(image)
    if image.shape != OBS_SHAPE:
        raise GoalError(f"image: expected shape {OBS_SHAPE}, got {image.shape}")
    png = Path(path)
    png.parent.mkdir(parents=True, exist_ok=True)
    png.write_bytes(encode_png(image))
    meta_path = goal_meta_path(png)
    body = {"format": GOAL_FORMAT, "version": GOAL_VERSION, **meta}
    meta_path.write_text(json.dumps(body, indent=2, default=lambda v: None if isinstance(v, float)
                                    and not math.isfinite(v) else str(v)) + "\n")
    return meta_path


# ---- capturing a goal (tools/capture_goal.py is the command line) -----------------------------------
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
    _region_weights(region, Path("."))       # checks the bounds
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
    import torch

    from gbx_lightning.emu import VecGameBoy
    from gbx_lightning.emu.buttons import buttons_name, read_trace, trace_segments

    from .gameboy import GameBoyEnv, _is_state_file, _resolve_rom
    from .rewards import goal_distance

    rom_source, rom_name = _resolve_rom(rom)
    changes = read_trace(trace, "trace") if trace is not None else [(0, 0)]
    if frames is None:
        frames = changes[-1][0]
    if frames < 1 and state is None:
        raise GoalError("frames: capture at least 1 frame after power-on (--frames, or a trace whose last line "
                        "is the capture frame)")
    gb = VecGameBoy(rom_source, 1)
    if state is not None:
        if _is_state_file(os.fspath(state)):
            gb.load_state(state)
        else:
            gb.load_pyboy_state(state)
    for count, mask in trace_segments(changes, frames):
        gb.run_frames(count, buttons=np.full(1, mask, np.uint8), render="obs")
    goal = gb.obs().numpy()[0].copy()
    weights = _region_weights(region, Path("."))
    goal_t, w_t = torch.from_numpy(goal), torch.from_numpy(weights)

    after = []
    for _ in range(3):
        gb.run_frames(frames_per_step, render="obs")
        after.append(float(goal_distance(torch.from_numpy(gb.obs().numpy()), goal_t, w_t)[0]))
    start = dict(start_state=state, start_inputs=changes, start_frames=min(random_from, frames))
    if random_start is not None:
        start = dict(start_state=random_start, start_inputs=None, start_frames=0)
    env = GameBoyEnv(random_envs, rom=rom, seed=seed, **start, start_variants=1, frames_per_step=frames_per_step,
                     release_after_frames=release_after_frames, action_codec="dpad_ab_start_noop",
                     max_steps=random_steps, goal="", fail="", level=None)
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
