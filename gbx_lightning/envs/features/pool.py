"""State pools (a feature): states that training envs reach, harvested on the device and used as episode starts (the swarming
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

Score. An env's score is the score of the state its episode started from (a start state's: its recipe's ``score``, 0
unless a ``train_starts`` recipe says what reaching it is worth) plus the weighted sum of its milestones' progress this
episode (``envs/milestones.py``), so a state reached from a pooled state scores the whole way from the task's start.

Where it lives. The pool's entries are rows of the env's start-state cache (``envs/start_cache.py``: the start
states first, then ``capacity`` pool entries, then one row for the swarm), their frame stacks and the cache's
columns (goal distance, score) beside them: harvesting copies env rows into cache rows, a reset copies cache rows
into env rows (``VecGameBoy.store_into`` / ``restore_from``), both in kernels, without a host sync or a loop over
envs.

Per step (the feature's hooks; after the milestones, before the reward):
  1. ``after_step``: the envs' scores; every ``swarm.every`` steps since ``reset()`` a swarm: ``swarm_plan`` picks
     the best env (highest score, not terminated) and a random ``fraction`` of the envs scoring less; those end as
     truncated (targets bootstrap) and restart from the best env's state;
  2. ``before_reset``: harvest: ``harvest_plan`` pairs the best candidates (score rose this step, not terminated)
     with the entries they replace (empty first, then the lowest score, then the oldest; never a better one); then
     the starts: ``draw_pool_slots`` picks the pooled state of a reset drawn from the pool, the swarm's targets
     take the swarm row;
  3. ``reset``: each restarted env's score is its start row's.
Only a training env does any of it (``GameBoyEnv.train(False)``, e.g. an evaluation env, starts every episode
from the task's start states and harvests nothing).
"""
from __future__ import annotations

import math

import torch

from ..base import OptionError, StateError
from ..start_cache import machine_state_bytes
from ..state_codec import Layout, StateCodecError, pack, pack_many, unpack_many
from .base import Feature, Step, loaded_tensor, tensor_nbytes

__all__ = ["StatePool", "StatePoolFeature", "draw_pool_slots", "harvest_plan", "pool_capacity", "pool_state_bytes",
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


class StatePoolFeature(Feature):
    """The task's ``pool`` in a GameBoyEnv (module docstring): its rows in the start cache, its book (``StatePool``),
    each env's score and whether its episode started from a pooled state (``info["from_pool"]``)."""
    name = "pool"
    title = "the state pool"
    INFO = ("from_pool",)
    MUST_MATCH = True

    @classmethod
    def checkpoint_bound(cls, task, options: dict, cart) -> dict | None:
        """A full pool in a checkpoint at most: every entry stored as it is (``state_codec.pack`` never stores one
        larger) with its offset, method, CRC, index and two columns, and the reference state; ``fits(room)``: the
        largest ``max_mb`` whose full pool takes at most ``room`` bytes."""
        if task.pool is None:
            return None
        per_state = pool_state_bytes(machine_state_bytes(cart), options["stack_k"])
        stored = per_state + 8 + 1 + 8 + 8 + 2 * 4

        def nbytes(max_mb: float) -> int:
            return (pool_capacity(max_mb, per_state) + 1) * stored

        def fits(room: int) -> float:
            states = max(0, room // stored - 1)
            return math.floor(states * per_state / (1 << 20) * 10) / 10
        return {"bytes": nbytes(task.pool.max_mb), "what": f"a full pool of {pool_capacity(task.pool.max_mb, per_state):,}"
                f" states", "field": "task.pool.max_mb", "value": task.pool.max_mb, "fits": fits}

    def state_title(self) -> str:
        return f"the state pool ({int(self.book.filled):,} states)"

    @classmethod
    def check(cls, task, options: dict, cart) -> None:
        if task.pool is None or not isinstance(options.get("stack_k"), int):
            return
        per_state = pool_state_bytes(machine_state_bytes(cart), options["stack_k"])
        if pool_capacity(task.pool.max_mb, per_state) < 1:
            raise OptionError("task.pool.max_mb", f"holds no state: one takes {per_state / (1 << 20):.3f} MB "
                                                  f"(machine and frame stack), got {task.pool.max_mb}")

    @classmethod
    def unexpected_state(cls, state) -> str:
        return "the state was saved with a state pool, this env's task has none"

    @classmethod
    def build(cls, task, env) -> "StatePoolFeature | None":
        return cls(task, env) if task.pool is not None else None

    def __init__(self, task, env):
        self.env, self.config = env, task.pool
        n, dev = env.num_envs, env.device
        self.per_state = pool_state_bytes(env.machines[0].state_bytes_per_env, env.stack_k)
        capacity = pool_capacity(task.pool.max_mb, self.per_state)
        cache = env.cache
        self.first_row = cache.add_rows(capacity + 1)      # the entries, then the swarm row
        self.swarm_row = self.first_row + capacity
        self.book = StatePool(task.pool, capacity, dev)
        self.milestones = env.feature("milestones")   # built before the pool (features.FEATURES): its progress
        names = [m.name for m in task.milestones]
        self.score_index = torch.tensor([names.index(k) for k in task.pool.score], device=dev)
        self.score_weight = torch.tensor([float(w) for w in task.pool.score.values()], device=dev)
        self.base_score = torch.zeros(n, dtype=torch.float32, device=dev)   # the score of each episode's start
        self.score = torch.zeros(n, dtype=torch.float32, device=dev)        # each env's score at the last step
        self.from_pool = torch.zeros(n, dtype=torch.bool, device=dev)       # its episode started from a pooled state
        self.swarm_clock = 0                                                # steps since reset(): swarms count them
        self.step_score, self.swarm = self.score, None
        # checkpoints: each entry packed once, against the first start state (envs/state_codec.py)
        self._packed: dict[int, tuple[int, int, bytes]] = {}    # entry -> (its serial, method, packed bytes)
        self._reference: bytes | None = None
        self._layout: Layout | None = None
        cache.add_column("score", env.start_scores, lambda: self.step_score)   # a start state's: its recipe's

    def after_step(self, step: Step) -> None:
        """The envs' scores (a training env's) and, when due, a swarm whose targets end truncated."""
        self.step_score, self.swarm = self.score, None
        if not self.env.training:
            return
        progress = self.milestones.progress
        self.step_score = self.base_score + (progress[self.score_index].to(torch.float32)
                                             * self.score_weight[:, None]).sum(0)
        swarm_cfg = self.config.swarm
        self.swarm_clock += 1
        if swarm_cfg is not None and self.swarm_clock % swarm_cfg.every == 0:
            self.swarm = swarm_plan(self.step_score, ~step.terminated, swarm_cfg.fraction, self.env.generator)
            step.truncate(self.swarm[1])

    def report(self, step: Step) -> None:
        step.info["from_pool"] = torch.where(step.done, self.from_pool.to(torch.int32), 0)

    def before_reset(self, step: Step) -> None:
        """Harvest the best states whose score rose (and the swarm's best env into the swarm row) before the resets
        read the cache; then the ended envs' starts: a pooled state with probability ``sample`` while the pool holds
        any, the swarm row for the swarm's targets."""
        if not self.env.training:
            return
        env, book, score = self.env, self.book, self.step_score
        src, dst, ok = harvest_plan(score, book.candidates(score, self.score, step.terminated), book.entry_score,
                                    book.entry_serial, self.config.per_step)
        rows = self.first_row + dst
        if self.swarm is not None:
            best, targets = self.swarm
            src, rows = torch.cat([src, best.view(1)]), torch.cat([rows, rows.new_full((1,), self.swarm_row)])
            ok = torch.cat([ok, targets.any().view(1)])
        stacks = torch.cat([env.stack[src, 1:], step.screen[src][:, None]], 1)
        env.cache.store(rows, src, ok, stacks)
        h = dst.shape[0]
        book.accept(score[src[:h]], dst, ok[:h])
        # the starts
        n = env.num_envs
        use = torch.rand(n, generator=env.generator, device=env.device) < self.config.sample
        use = use & (book.filled > 0)
        picked = draw_pool_slots(book.weights(), torch.rand(n, generator=env.generator, device=env.device))
        step.slots = torch.where(use, self.first_row + picked, step.slots)
        if self.swarm is not None:
            step.slots = torch.where(self.swarm[1], self.swarm_row, step.slots)

    def reset(self, step: Step | None) -> None:
        if step is None:
            self.base_score.zero_()
            self.score.zero_()
            self.from_pool.zero_()
            self.swarm_clock = 0
            return
        done, slots = step.done, step.slots
        start_score = self.env.cache.columns["score"][slots]
        self.base_score = torch.where(done, start_score, self.base_score)
        self.score = torch.where(done, start_score, self.step_score)
        self.from_pool = torch.where(done, slots >= self.first_row, self.from_pool)
        if self.swarm is not None:
            self.book.swarmed += self.swarm[1].sum()

    def stats(self) -> dict[str, float]:
        """The pool's numbers (entries, scores, totals; one host read)."""
        return self.book.stats()

    # ---- checkpoints: the entries packed (envs/state_codec.py), each once: packed again only when harvested again
    def _entry_rows(self, rows: torch.Tensor) -> dict[str, torch.Tensor]:
        """The machine arrays and frame stacks of cache ``rows`` (CPU), in the order of an entry's bytes."""
        cache = self.env.cache
        return {**cache.machine_rows(rows), "stack": cache.stack[rows].cpu().clone()}

    def _packed_entries(self) -> tuple[torch.Tensor, list[tuple[int, bytes]]]:
        """(the entries in use, their packed bytes): entries harvested since the last call are read from the device
        and packed (one host read of the serials), the others come from ``_packed``."""
        serials = self.book.entry_serial.cpu()
        used = torch.nonzero(serials >= 0).flatten()
        if self._reference is None:
            rows0 = self._entry_rows(torch.tensor([0], device=self.env.device))
            self._layout = Layout.of(rows0)
            self._reference = self._layout.rows(rows0)[0]
        stale = [j for j in used.tolist() if self._packed.get(j, (None,))[0] != int(serials[j])]
        if stale:
            fresh = self._layout.rows(self._entry_rows(self.first_row + torch.tensor(stale, device=self.env.device)))
            for j, entry in zip(stale, fresh):
                self._packed[j] = (int(serials[j]), *pack(entry, self._reference))
        self._packed = {j: self._packed[j] for j in used.tolist()}
        return used, [self._packed[j][1:] for j in used.tolist()]

    @property
    def state_nbytes(self) -> int:
        """The bytes of ``state_dict``'s tensors: the entries packed (those harvested since the last checkpoint are
        packed now: one host read of the serials), the reference state, the columns, the book, the per-env scores."""
        return tensor_nbytes(self.state_dict())

    def state_dict(self) -> dict:
        """The entries in use, packed (their machines and frame stacks: ``envs/state_codec.py``), their cache
        columns and the book, with the ROM they were harvested from; the per-env scores; the swarm clock."""
        used, packed = self._packed_entries()
        rows = self.first_row + used.to(self.env.device)
        return {"rom_sha256": self.env.rom_sha256, "entries": used, **pack_many(packed, self._reference, self._layout),
                "columns": {name: column[rows].cpu().clone() for name, column in self.env.cache.columns.items()},
                "book": self.book.state_dict(), "base_score": self.base_score.cpu().clone(),
                "env_score": self.score.cpu().clone(), "from_pool": self.from_pool.cpu().clone(),
                "swarm_clock": self.swarm_clock}

    @classmethod
    def expand_state(cls, state: dict) -> dict:
        """A ``state_dict`` with the entries unpacked: ``machines`` (name -> [E, ...]) and ``stack`` in place of the
        packed form (for tools comparing pools; StateCodecError if it does not unpack)."""
        layout, _, entries, _ = unpack_many(state, "pool")
        tensors = layout.tensors(entries) if entries else {}
        rest = {k: v for k, v in state.items() if k not in ("codec", "layout", "reference", "reference_sha256",
                                                              "methods", "crc32", "offsets", "blob")}
        return {**rest, "machines": {k: v for k, v in tensors.items() if k != "stack"}, "stack": tensors.get("stack")}

    def load_state_dict(self, state: dict | None, where: str) -> None:
        """Put a ``state_dict`` back; a pool harvested from another ROM, one that does not fit this task's pool or
        does not unpack is refused in one line."""
        env, cache = self.env, self.env.cache
        if state is None:
            raise StateError(f"{where}: the state was saved without a state pool, this env's task has one")
        if state.get("rom_sha256") != env.rom_sha256:
            raise StateError(f"{where}: the state pool was harvested from another ROM (sha256 "
                             f"{str(state.get('rom_sha256'))[:12]}...), this env runs {env.rom_sha256[:12]}...")
        used = torch.as_tensor(state["entries"]).long()
        if used.numel() and int(used.max()) >= self.book.capacity:
            raise StateError(f"{where}: the state pool holds entries up to {int(used.max())}, this task's pool has "
                             f"{self.book.capacity} (pool.max_mb as saved, and the same stack_k)")
        try:
            layout, reference, entries, packed = unpack_many(state, f"{where}: pool")
        except StateCodecError as err:
            raise StateError(str(err)) from None
        mine = Layout.of(self._entry_rows(torch.tensor([0], device=env.device)))
        if layout.arrays != mine.arrays or len(entries) != used.numel():
            raise StateError(f"{where}: the state pool's entries are {len(entries)} of {layout.nbytes} bytes for "
                             f"{used.numel()} entries; this env's are {mine.nbytes} bytes (another emulator state "
                             f"layout or stack_k)")
        self.book.load_state_dict(state["book"], where)
        rows = (self.first_row + used).to(env.device)
        if entries:
            tensors = layout.tensors(entries)
            stack = tensors.pop("stack")
            cache.put_machine_rows(rows, tensors, f"{where}: pool")
            cache.stack[rows] = loaded_tensor(where, "pool stack", stack, cache.stack[rows])
        columns = state.get("columns", {})
        for name, column in cache.columns.items():
            if name not in columns:
                raise StateError(f"{where}: the state pool has no {name!r} column (saved by a task with other "
                                 f"features); this task's pool has {sorted(cache.columns)}")
            column[rows] = loaded_tensor(where, f"pool {name}", columns[name], column[rows])
        self.base_score = loaded_tensor(where, "pool base_score", state["base_score"], self.base_score)
        self.score = loaded_tensor(where, "pool env_score", state["env_score"], self.score)
        self.from_pool = loaded_tensor(where, "pool from_pool", state["from_pool"], self.from_pool)
        self.swarm_clock = int(state["swarm_clock"])
        # the entries stay packed as loaded, against the reference they came with (later ones too)
        serials = self.book.entry_serial.cpu()
        self._packed = {j: (int(serials[j]), *p) for j, p in zip(used.tolist(), packed)}
        self._layout, self._reference = layout, reference
