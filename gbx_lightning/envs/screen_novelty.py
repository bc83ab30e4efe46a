"""``screen_novelty``: a reward for screens not seen before, from the pixels alone (no RAM map).

What a game without a published RAM map has is its screen. Rooms, camera positions, menus and text boxes are
different screens, so "a screen this episode has not shown yet" is a generic stand-in for the RAM map's
``explore`` over (map, y, x): walking around a room moves the player's sprite, scrolling moves the camera, a new
room is a new set of screens. PokemonRedExperiments' first agents paid for frame novelty (a KNN over screens)
before they had a RAM map; this is the cheap, vectorised form of it (hash-based counts as in Tang et al. 2017,
"#Exploration"):

    reward:
      - {name: screen_novelty, weight: 0.01}                     # a screen new to this episode
      - {name: screen_novelty, weight: 0.01, count_weight: 0.02} # + count_weight / sqrt(n(screen)) over the run

A screen's *cell* (``screen_cells``): the 72x80 observation cut into ``block`` x ``block`` blocks (8: a 9x10 grid
of 16x16 screen pixels, a metatile of most games), each block's mean shade quantised to ``levels`` levels, the
grid hashed to ``bits`` bits by a random linear hash (``hash_cells``; a fixed seed, so the same screen gives the
same cell in every run). Coarse on purpose: an animation frame, a blinking cursor or an NPC's step inside a block
rarely changes a block's level, a new room or a camera move changes many. ``ignore``: boxes of the observation
``[r0, r1, c0, c1]`` (rows r0..r1-1, columns c0..c1-1) left out, e.g. a clock or the player's sprite where a game
keeps it at the centre.

Two terms, each optional (a weight of 0 turns it off):

* ``weight``: value 1 on a step whose cell this episode has not shown before (a bitset per env, cleared where
  an episode ends; the start screen is marked when the episode starts, not paid).
* ``count_weight``: value ``1 / sqrt(n)``, where n counts the steps of the run (every env, every episode) whose
  screen had this cell, this one included: a screen seen often pays little, a rare one much (a table shared by
  all envs, never cleared; in checkpoints even when they leave the envs' state out).

All tensor ops on the env's device: no loop over envs, no host sync.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from .reward_item import EpisodeCellsItem, Param, RewardContext
from .rewards import visit_cells

__all__ = ["ScreenNovelty", "hash_cells", "screen_cells"]

OBS_H, OBS_W = 72, 80
HASH_SEED = 0x5C4EE7   # fixed: a screen's cell must not change between runs (checkpoints keep counts by cell)


def _power_of_two(low: int, high: int):
    def problem(value) -> str | None:
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high or value & (value - 1):
            return f"must be a power of two in {low}..{high}, got {value!r}"
        return None
    return problem


def _ignore_problem(value) -> str | None:
    if value is None:
        return None
    if isinstance(value, (list, tuple)) and len(value) == 4 and all(isinstance(v, int) for v in value):
        value = [value]   # one box
    ok = isinstance(value, (list, tuple)) and value and all(
        isinstance(box, (list, tuple)) and len(box) == 4 and all(isinstance(v, int) and not isinstance(v, bool)
                                                                for v in box)
        and 0 <= box[0] < box[1] <= OBS_H and 0 <= box[2] < box[3] <= OBS_W for box in value)
    return None if ok else (f"must be a box [r0, r1, c0, c1] of the 72x80 observation (0 <= r0 < r1 <= 72, "
                            f"0 <= c0 < c1 <= 80) or a list of them, got {value!r}")


def _boxes(value) -> list[list[int]]:
    if value is None:
        return []
    return [list(value)] if len(value) == 4 and all(isinstance(v, int) for v in value) else [list(b) for b in value]


def screen_cells(screen: torch.Tensor, block: int, levels: int, keep: torch.Tensor | None = None) -> torch.Tensor:
    """int64 [N, (72 / block) * (80 / block)]: each block's mean shade (0..3) quantised to 0..levels-1
    (``floor(mean * levels / 3)``, 3 itself in the top level). ``keep``: float [72, 80], 0 where pixels are
    ignored (they count as shade 0)."""
    x = screen.to(torch.float32)
    if keep is not None:
        x = x * keep
    means = F.avg_pool2d(x.unsqueeze(1), block).flatten(1)
    return (means * (levels / 3.0)).floor().clamp_(0, levels - 1).to(torch.int64)


def hash_cells(cells: torch.Tensor, coefficients: torch.Tensor, log2_bits: int) -> torch.Tensor:
    """int64 [N]: sum_i cells[:, i] * coefficients[i] mod 2**log2_bits. With coefficients drawn uniformly from
    [0, 2**log2_bits), two grids that differ in a block where the difference is odd collide with probability
    2**-log2_bits (a universal hash); no overflow: coefficients < 2**28, levels <= 16, <= 1440 blocks."""
    return (cells * coefficients).sum(1) & ((1 << log2_bits) - 1)


class ScreenNovelty(EpisodeCellsItem):
    """term, per step: new screens this episode (``weight``) and rare screens over the run (``count_weight``,
    1/sqrt(n)); module docstring."""
    NAME, RUN_TABLE, SIZES = "screen_novelty", "counts", "bits, count_bits"
    PARAMS = {"weight": Param(1.0, bounds={}), "count_weight": Param(0.0, bounds={}),
              "block": Param(8, choices=(2, 4, 8)), "levels": Param(4, bounds={"low": 2, "high": 16, "integer": True}),
              "bits": Param(1 << 16, problem=_power_of_two(64, 1 << 24)),
              "count_bits": Param(1 << 20, problem=_power_of_two(64, 1 << 26)),
              "ignore": Param(None, problem=_ignore_problem)}

    def __init__(self, weight: float, count_weight: float, block: int, levels: int, bits: int, count_bits: int,
                 ignore, num_envs: int, device: torch.device):
        self.weight, self.count_weight = float(weight), float(count_weight)
        self.block, self.levels = int(block), int(levels)
        self.log2_bits, self.count_log2 = bits.bit_length() - 1, count_bits.bit_length() - 1
        self.ignore = _boxes(ignore)
        keep = torch.ones(OBS_H, OBS_W)
        for r0, r1, c0, c1 in self.ignore:
            keep[r0:r1, c0:c1] = 0
        self.keep = keep.to(device) if self.ignore else None
        blocks = (OBS_H // self.block) * (OBS_W // self.block)
        gen = torch.Generator().manual_seed(HASH_SEED)
        self.coefficients = torch.randint(0, 1 << 28, (blocks,), generator=gen, dtype=torch.int64).to(device)
        self.visited = torch.zeros((num_envs, max(1, bits // 64)), dtype=torch.int64, device=device)
        self.counts = torch.zeros(count_bits if self.count_weight else 0, dtype=torch.int32, device=device)

    def cells(self, screen: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(episode cell, count cell) int64 [N] of each env's screen: the same grid hashed to each table's size."""
        grid = screen_cells(screen, self.block, self.levels, self.keep)
        return hash_cells(grid, self.coefficients, self.log2_bits), hash_cells(grid, self.coefficients,
                                                                               self.count_log2)

    def __call__(self, ctx: RewardContext) -> torch.Tensor:
        if ctx.screen is None:
            raise ValueError("screen_novelty: the reward context has no screen (an env that does not pass "
                             "RewardContext.screen cannot run this item)")
        cell, count_cell = self.cells(ctx.screen)
        first, self.visited = visit_cells(self.visited, cell)
        value = self.weight * first.to(torch.float32)
        if self.count_weight:
            self.counts.index_add_(0, count_cell, torch.ones_like(count_cell, dtype=torch.int32))
            value = value + self.count_weight * self.counts[count_cell].to(torch.float32).rsqrt()
        self.forget_ended(ctx)
        return value

    def sync(self, env) -> None:
        # marks the screen every env shows now (the start screen of those just reset), not paid; a no-op elsewhere
        _, self.visited = visit_cells(self.visited, self.cells(env.observe()[:, -1])[0])
