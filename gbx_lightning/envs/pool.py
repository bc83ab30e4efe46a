"""State pools: states that training envs reach, harvested on the device and used as episode starts (the swarming
of pokemonred_puffer, Go-Explore's return-then-explore), configured by the task's ``pool`` (``envs/task.py``):

    milestones: [{name: maps_visited, kind: distinct, fields: [map]}, {name: badges, kind: bits, field: badges}]
    pool:
      score: {maps_visited: 1.0, badges: 10.0}   # a state's progress: the milestones, weighted
      max_mb: 64                                 # device memory for pooled states (~56 KB each: machine + frames)
      per_step: 4                                # at most this many harvested per step (the best)
      when: rise                                 # harvest on a step the score rose; record: above every pooled one
      sample: 0.5                                # share of resets that start from a pooled state (when there is one)
      priority: 1.0                              # a pooled state's draw weight: (1 + score) ** priority
      swarm: {every: 2000, fraction: 0.25}       # every 2000 steps, the best env's state to a quarter of the others

Score. An env's score is the score of the state its episode started from (0 for the task's start states) plus the
weighted sum of its milestones' progress this episode (``envs/milestones.py``), so a state reached from a pooled
state scores the whole way from the task's start.

Where it lives. The task's start states and the pool are one cache of machine states on the device (the start
states first, then ``capacity`` pool entries, then one row for the swarm), the frame stacks and goal distances
beside it: harvesting copies env rows into cache rows, a reset copies cache rows into env rows
(``VecGameBoy.store_into`` / ``restore_from``), both in kernels, without a host sync or a loop over envs.

Per step (GameBoyEnv, after the frames, before the ended envs are reset):
  1. swarm, every ``swarm.every`` steps since ``reset()``: ``swarm_plan`` picks the best env (highest score, not
     terminated) and a random ``fraction`` of the envs scoring less; those end as truncated (targets bootstrap) and
     restart from the best env's state;
  2. harvest: ``harvest_plan`` pairs the best candidates (score rose this step, not terminated) with the entries
     they replace (empty first, then the lowest score, then the oldest; never a better one);
  3. resets: ``draw_pool_slots`` picks the pooled state of a reset drawn from the pool.
Only a training env does any of it (``GameBoyEnv.train(False)``, e.g. an evaluation env, starts every episode
from the task's start states and harvests nothing).
"""
from __future__ import annotations

import math

import torch
import warp as wp

from .base import StateError

__all__ = ["PoolRows", "StatePool", "draw_pool_slots", "harvest_plan", "pool_capacity", "pool_state_bytes",
           "swarm_plan"]

FRAME_BYTES = 72 * 80   # one observation frame


def pool_state_bytes(machine_bytes: int, stack_k: int) -> int:
    """Device bytes one pooled state takes: its machine, its frame stack, goal distance, score and serial."""
    return machine_bytes + stack_k * FRAME_BYTES + 4 + 4 + 8


def pool_capacity(max_mb: float, bytes_per_state: int) -> int:
    """Pool entries that fit in ``max_mb`` MiB at ``bytes_per_state`` each (machine state, frame stack, score)."""
    return int(max_mb * (1 << 20)) // bytes_per_state


def harvest_plan(score: torch.Tensor, candidate: torch.Tensor, entry_score: torch.Tensor, entry_serial: torch.Tensor,
                 per_step: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(src [H], dst [H], ok [H]): env src[h]'s state goes into pool entry dst[h] where ok[h] (H = min(per_step, N,
    P)).

    Candidates, best first: the top H of ``score`` [N] among ``candidate`` [N]. Entries to replace, in order: empty
    ones (``entry_serial`` [P] < 0) in slot order, then the lowest ``entry_score`` [P], then the oldest (lowest
    serial). The h-th best candidate takes the h-th entry when it is a candidate and the entry is empty or scores no
    more than it.
    """
    n, p = score.shape[0], entry_score.shape[0]
    h = min(per_step, n, p)
    keyed = torch.where(candidate, score.to(torch.float32), torch.full_like(score, -math.inf, dtype=torch.float32))
    best, src = torch.topk(keyed, h)
    empty = entry_serial < 0
    slots = torch.arange(p, device=score.device)
    order = torch.argsort(torch.where(empty, slots - p, entry_serial), stable=True)      # empty (slot order), oldest
    order = order[torch.argsort(torch.where(empty, 0.0, entry_score)[order], stable=True)]  # lowest score
    order = order[torch.argsort((~empty).to(torch.int8)[order], stable=True)]              # empty entries first
    dst = order[:h]
    ok = (best > -math.inf) & (empty[dst] | (best >= entry_score[dst]))
    return src, dst, ok


def draw_pool_slots(weights: torch.Tensor, uniform: torch.Tensor) -> torch.Tensor:
    """Pool entries drawn with probability weights[j] / sum(weights) [P], one per uniform[n] in [0, 1) [N]: the
    inverse of the weights' cumulative sum (no host sync; all-zero weights give P - 1, which the caller masks)."""
    cdf = torch.cumsum(weights.to(torch.float64), 0)
    picked = torch.searchsorted(cdf, uniform.to(torch.float64) * cdf[-1], right=True)
    return picked.clamp(max=weights.shape[0] - 1)


def swarm_plan(score: torch.Tensor, eligible: torch.Tensor, fraction: float,
               generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """(best, targets): the env with the highest ``score`` among ``eligible`` (0-dim, the first on ties) and a bool
    [N] of envs to restart from its state: ``round(fraction * N)`` drawn at random, minus the best itself and any
    scoring no less than it (so nothing moves while no env is ahead)."""
    n = score.shape[0]
    keyed = torch.where(eligible, score.to(torch.float32), torch.full_like(score, -math.inf, dtype=torch.float32))
    best = torch.argmax(keyed)
    drawn = torch.randperm(n, generator=generator, device=score.device)[:max(1, round(fraction * n))]
    chosen = torch.zeros(n, dtype=torch.bool, device=score.device).index_fill_(0, drawn, True)
    targets = chosen & (keyed[best] > score) & (torch.arange(n, device=score.device) != best)
    return best, targets


class StatePool:
    """The pool's bookkeeping on the device (module docstring); the env owns the cache rows it describes.

    entry_score float32 [P], entry_serial int64 [P] (harvest order, -1 empty), ``record`` the best score harvested,
    ``harvested``/``swarmed`` run totals (states taken in, envs restarted by a swarm)."""

    def __init__(self, config, capacity: int, device: torch.device):
        self.config, self.capacity, self.device = config, capacity, device
        self.entry_score = torch.zeros(capacity, dtype=torch.float32, device=device)
        self.entry_serial = torch.full((capacity,), -1, dtype=torch.int64, device=device)
        self.serial = torch.zeros((), dtype=torch.int64, device=device)
        self.record = torch.zeros((), dtype=torch.float32, device=device)
        self.harvested = torch.zeros((), dtype=torch.int64, device=device)
        self.swarmed = torch.zeros((), dtype=torch.int64, device=device)

    @property
    def filled(self) -> torch.Tensor:
        """Entries in use (0-dim, on the device)."""
        return (self.entry_serial >= 0).sum()

    def weights(self) -> torch.Tensor:
        """Draw weights [P]: (1 + score) ** priority for entries in use, 0 for empty ones."""
        used = self.entry_serial >= 0
        w = (1.0 + self.entry_score.clamp(min=0)) ** float(self.config.priority)
        return torch.where(used, w, torch.zeros_like(w))

    def candidates(self, score: torch.Tensor, before: torch.Tensor, terminated: torch.Tensor) -> torch.Tensor:
        """Envs whose state is worth harvesting now: score rose this step (above the pool's record with ``when:
        record``), episode not terminated (a GAME OVER or LEVEL CLEAR screen is no place to start from)."""
        rose = (score > before) & ~terminated
        return rose & (score > self.record) if self.config.when == "record" else rose

    def accept(self, src_score: torch.Tensor, dst: torch.Tensor, ok: torch.Tensor) -> None:
        """Book the harvest of plan (dst, ok) with the harvested states' scores ``src_score`` [H]."""
        h = dst.shape[0]
        self.entry_score[dst] = torch.where(ok, src_score, self.entry_score[dst])
        serials = self.serial + torch.arange(h, device=self.device)
        self.entry_serial[dst] = torch.where(ok, serials, self.entry_serial[dst])
        self.serial += h
        self.harvested += ok.sum()
        self.record = torch.maximum(self.record, torch.where(ok, src_score, torch.zeros_like(src_score)).max())

    def stats(self) -> dict[str, float]:
        """Host numbers for logs and dashboards (one host read): entries in use, best and mean score, totals."""
        used = self.entry_serial >= 0
        n = int(used.sum())
        scores = self.entry_score[used]
        return {"pool_states": n, "pool_capacity": self.capacity, "pool_best_score": float(scores.max()) if n else 0.0,
                "pool_mean_score": float(scores.mean()) if n else 0.0, "pool_harvested": int(self.harvested),
                "pool_swarmed": int(self.swarmed)}

    _KEYS = ("entry_score", "entry_serial", "serial", "record", "harvested", "swarmed")

    def state_dict(self) -> dict:
        return {k: getattr(self, k).cpu().clone() for k in self._KEYS}

    def load_state_dict(self, state: dict, where: str) -> None:
        for key in self._KEYS:
            mine = getattr(self, key)
            src = torch.as_tensor(state[key])
            if src.shape != mine.shape:
                raise StateError(f"{where}: pool {key} must have shape {list(mine.shape)} (this task's pool capacity), "
                                 f"got {list(src.shape)}")
            setattr(self, key, src.to(self.device, mine.dtype).clone())


class PoolRows:
    """Writes env states into rows of the env's state cache (module docstring, "Where it lives"): the machines
    through ``VecGameBoy.store_into`` (one launch per state array and CPU shard, recorded once), the frame stacks,
    goal distances and scores through torch indexing, all on the device. ``rows`` are distinct per call."""

    def __init__(self, cache, cache_stack: torch.Tensor, cache_dist: torch.Tensor, machines: list, bounds: list[int],
                 device: torch.device):
        self.cache, self.cache_stack, self.cache_dist = cache, cache_stack, cache_dist
        self.machines, self.bounds = machines, bounds
        rows = cache.num_envs
        self.score = torch.zeros(rows, dtype=torch.float32, device=device)   # each row's score (start states: 0)
        self.mask = torch.zeros(rows, dtype=torch.uint8, device=device)
        self.envs = [torch.full((rows,), -1, dtype=torch.int32, device=device) for _ in machines]
        self._mask_wp = wp.from_torch(self.mask)
        self._envs_wp = [wp.from_torch(t) for t in self.envs]

    def write(self, rows: torch.Tensor, src: torch.Tensor, ok: torch.Tensor, stacks: torch.Tensor, dist: torch.Tensor,
              score: torch.Tensor) -> None:
        """Row rows[h] <- env src[h] where ok[h]: its machine, ``stacks[h]`` (its frame stack now), ``dist[h]``,
        ``score[h]``. Rows where ok is False keep what they hold."""
        self.mask.zero_()
        self.mask[rows] = ok.to(torch.uint8)
        for t, lo in zip(self.envs, self.bounds):
            t[rows] = (src - lo).to(torch.int32)     # out of this shard's range: store_into copies nothing
        for gb, envs in zip(self.machines, self._envs_wp):
            gb.store_into(self.cache, envs, self._mask_wp)
        keep = ok.view(-1, *([1] * (stacks.dim() - 1)))
        self.cache_stack[rows] = torch.where(keep, stacks, self.cache_stack[rows])
        self.cache_dist[rows] = torch.where(ok, dist, self.cache_dist[rows])
        self.score[rows] = torch.where(ok, score.to(torch.float32), self.score[rows])
