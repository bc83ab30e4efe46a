"""Goal templates on disk: a goal screen as a PNG a person can look at, and its meta file.

``GOAL.png`` is the 72x80 observation (shades 0..3 drawn as the DMG's four greys) of the
screen that means "done" (e.g. a LEVEL CLEAR banner); ``GOAL.json`` beside it says where it
came from (ROM sha256, state or trace, frame), which part of the screen counts (``region``:
a rectangle of obs rows/cols, or a mask PNG whose white pixels count), and the reward
defaults calibrated for it (``tau``, ``k_consecutive``, ``step_cost``, ``alpha``,
``goal_bonus``; see ``envs/rewards.py``). ``tools/capture_goal.py`` writes both
(``envs/capture.py``); a task names them (``envs/task.py``).
"""
from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from gbx_lightning.media import decode_png_grey, encode_png, grey_to_shades

__all__ = ["GoalTemplate", "GoalError", "load_goal", "save_goal", "goal_meta_path", "region_weights", "OBS_SHAPE",
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


def region_weights(region, base: Path) -> np.ndarray:
    """float32 [72, 80], 1 where the template counts: a {rows, cols} rectangle, a {mask: PNG} (beside ``base``)
    or, for None, the whole screen."""
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
        weights = region_weights(meta.get("region"), png)
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
