"""Reward items over a game's RAM map (``envs/ram_map.py``): the terms Pokemon RL projects are built on, on the
device for every env at once, their state in the env's checkpoints.

    reward:
      - {name: explore, fields: [map, y, x], weight: 0.01}          # first visit of a (map, y, x) this episode
      - {name: ram_bits, field: event_flags, weight: 0.1}            # each event flag newly set
      - {name: ram_bits, field: badges, weight: 5.0}
      - {name: ram_sum, fields: [party_levels], count_field: party_count, weight: 0.5}   # party level records
      - {name: ram_sum, fields: [party_hp], mode: increase, weight: 0.001, clip: [0, 0.1]} # healing
      - {name: ram_max, fields: [party_levels], weight: 1.0}        # the best level's records

Fields are names of the task's ``ram_map`` (or WRAM addresses: one byte each). Every item is a term (its value
times ``weight``, then clipped to ``clip: [low, high]`` when given; a negative weight makes a penalty):

  * ``explore`` (``fields`` or ``world``, ``weight``, ``bits``, ``novelty_weight``, ``novelty_bits``): per env, a
    bitset of ``bits`` cells (``rewards.cell_index``: exact when the fields' widths fit, else hashed) remembers which
    tuples of the fields' values this episode has shown at a step's end; value = 1 on a step that shows a new one.
    ``world: true`` instead of ``fields``: the cells are world tiles of the RAM map's world layout
    (``envs/world.py``; a position off the world is its own (map, y, x) cell, apart from every world tile). The
    start's cell is marked when the episode starts (not paid). ``novelty_weight`` (default 0: off) adds a second
    bitset shared by all envs and never cleared: ``novelty_weight`` more on the first visit of a cell by any env
    in the run (every env that reaches it in that same step is paid).
  * ``ram_bits`` (``field``): x = the number of 1 bits in the field's bytes (``rewards.popcount_bytes``).
  * ``ram_sum`` / ``ram_max`` (``fields``, ``count_field``): x = the sum / the largest of the fields' numbers;
    with ``count_field``, only the first ``count_field`` numbers of each array field count (party slots past
    ``party_count`` hold stale data).
  * ``mode`` (these three): how x pays (``rewards.progress_gain``): ``record`` (default) its rise above the
    episode's highest so far, ``increase`` every rise, ``delta`` every change (signed).

Episode boundaries: what an item remembers of an episode (the visited cells, the last value, the record) is
forgotten where the episode ended, and the next episode's start is read in ``sync`` after the env's resets.
"""
from __future__ import annotations

import torch

from .base import StateError
from .ram_map import FieldReader, RamField
from .reward_item import EpisodeCellsItem, Param, RewardContext, RewardItem
from .rewards import cell_index, popcount_bytes, progress_gain, visit_cells
from .world import WorldTransform

__all__ = ["Explore", "RamBits", "RamMax", "RamSum"]


def _clip_problem(value) -> str | None:
    ok = value is None or (isinstance(value, (list, tuple)) and len(value) == 2 and all(
        isinstance(v, (int, float)) and not isinstance(v, bool) for v in value) and value[0] <= value[1])
    return None if ok else f"must be [low, high] with low <= high, or null, got {value!r}"


def _power_of_two(low: int, high: int):
    def problem(value) -> str | None:
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high or value & (value - 1):
            return f"must be a power of two in {low}..{high}, got {value!r}"
        return None
    return problem


def _ref_problem(value) -> str | None:
    if value is None or isinstance(value, str) or isinstance(value, int) and not isinstance(value, bool):
        return None
    return f"must be a RAM map field name (or a WRAM address), got {value!r}"


def _refs_problem(value) -> str | None:
    if not isinstance(value, (list, tuple)) or not value or any(_ref_problem(v) or v is None for v in value):
        return f"must be a list of RAM map field names (or WRAM addresses), got {value!r}"
    return None


MODES = ("record", "increase", "delta")


class _RamItem(RewardItem):
    """A term read from RAM map fields (``FIELD_PARAMS``, resolved by the pipeline before the item is built)."""

    def _finish(self, value: torch.Tensor) -> torch.Tensor:
        value = self.weight * value
        return value if self.clip is None else value.clamp(self.clip[0], self.clip[1])


def _optional_refs_problem(value) -> str | None:
    return None if value is None else _refs_problem(value)


class Explore(_RamItem, EpisodeCellsItem):
    """term, per step: first visits of a tuple of RAM fields (or of a world tile) per episode (module docstring)."""
    NAME, RUN_TABLE, SIZES = "explore", "seen", "bits, novelty_bits"
    FIELD_PARAMS = {"fields": True}
    PARAMS = {"fields": Param(None, problem=_optional_refs_problem), "world": Param(False, choices=(False, True)),
              "weight": Param(1.0, bounds={}),
              "bits": Param(1 << 16, problem=_power_of_two(64, 1 << 24)),
              "novelty_weight": Param(0.0, bounds={}),
              "novelty_bits": Param(1 << 20, problem=_power_of_two(64, 1 << 28)),
              "clip": Param(None, problem=_clip_problem)}

    @classmethod
    def check(cls, params: dict) -> tuple[str, str] | None:
        if (params["fields"] is None) == (not params["world"]):
            return "fields", ("must list the RAM map fields whose tuples are counted (e.g. [map, y, x]), or be left "
                              "out with world: true (world tiles)" if params["fields"] is None else
                              "must be left out with world: true (the world layout names the fields it reads)")
        return None

    @classmethod
    def check_fields(cls, params: dict) -> tuple[str, str] | None:
        for j, f in enumerate(params["fields"] or []):
            if f.count != 1:
                return f"fields[{j}]", (f"must be one number per env (a cell is a tuple of numbers), got "
                                        f"{f.describe()} "
                                        f"with count {f.count}")
        return None

    def __init__(self, fields: list[RamField] | None, world, weight: float, bits: int, novelty_weight: float,
                 novelty_bits: int, clip, num_envs: int, device: torch.device):
        # world: the RAM map's WorldMap (the pipeline resolves world: true to it), or None
        self.world = None if world is None else WorldTransform(world, device)
        self.readers = [] if fields is None else [FieldReader(f, device) for f in fields]
        self.widths = self.world.cell_widths if self.world is not None else [f.bits for f in fields]
        self.weight, self.clip = float(weight), clip
        self.log2_bits = bits.bit_length() - 1
        self.visited = torch.zeros((num_envs, max(1, bits // 64)), dtype=torch.int64, device=device)
        self.novelty_weight = float(novelty_weight)
        self.novelty_log2 = novelty_bits.bit_length() - 1
        self.seen = torch.zeros(novelty_bits if self.novelty_weight else 0, dtype=torch.uint8, device=device)

    def _cells(self, env, log2_bits: int) -> torch.Tensor:
        values = self.world.cells(env) if self.world is not None else torch.stack([r(env)[:, 0] for r in self.readers],
                                                                                   1)
        return cell_index(values, self.widths, log2_bits)

    def __call__(self, ctx: RewardContext) -> torch.Tensor:
        first, self.visited = visit_cells(self.visited, self._cells(ctx.env, self.log2_bits))
        value = first.to(torch.float32) * self.weight
        if self.novelty_weight:
            cell = self._cells(ctx.env, self.novelty_log2)
            novel = self.seen[cell] == 0
            self.seen[cell] = 1
            value = value + self.novelty_weight * novel.to(torch.float32)
        self.forget_ended(ctx)
        return value if self.clip is None else value.clamp(self.clip[0], self.clip[1])

    def sync(self, env) -> None:
        # marks where every env stands now (the start of those that were reset), not paid; a no-op for the rest
        _, self.visited = visit_cells(self.visited, self._cells(env, self.log2_bits))
        if self.novelty_weight:
            self.seen[self._cells(env, self.novelty_log2)] = 1


class _Progress(_RamItem):
    """A number x read from the fields each step, paid by ``mode`` (``rewards.progress_gain``)."""
    PARAMS_COMMON = {"weight": Param(1.0, bounds={}), "mode": Param("record", choices=MODES),
                     "clip": Param(None, problem=_clip_problem)}

    def __init__(self, weight: float, mode: str, clip, num_envs: int, device: torch.device):
        self.weight, self.mode, self.clip = float(weight), mode, clip
        self.before = torch.zeros(num_envs, dtype=torch.int64, device=device)
        self.best = torch.zeros(num_envs, dtype=torch.int64, device=device)
        self._ended = torch.ones(num_envs, dtype=torch.bool, device=device)

    def measure(self, env) -> torch.Tensor:
        raise NotImplementedError

    def __call__(self, ctx: RewardContext) -> torch.Tensor:
        now = self.measure(ctx.env)
        gain, self.best = progress_gain(now, self.before, self.best, self.mode)
        self.before = now
        self._ended = ctx.done.clone()
        return self._finish(gain)

    def sync(self, env) -> None:
        now = self.measure(env)
        self.before = now                                       # envs that were reset: their start's value
        self.best = torch.where(self._ended, now, self.best)    # a new episode's record starts at its start
        self._ended = torch.zeros_like(self._ended)

    def reset(self) -> None:
        self._ended = torch.ones_like(self._ended)

    def state_dict(self, per_env: bool = True) -> dict:
        return {"before": self.before.cpu().clone(), "best": self.best.cpu().clone()} if per_env else {}

    def load_state_dict(self, state: dict) -> None:
        for key in ("before", "best"):
            if key in state:
                mine = getattr(self, key)
                src = torch.as_tensor(state[key])
                if src.shape != mine.shape:
                    raise StateError(f"{type(self).__name__}.load_state_dict: {key} must have shape "
                                     f"{list(mine.shape)}, "
                                     f"got {list(src.shape)}")
                setattr(self, key, src.to(mine.device, mine.dtype).clone())
        self._ended = torch.zeros_like(self._ended)


class RamBits(_Progress):
    """term, per step: x = popcount of the field's bytes (flags set), paid by mode (module docstring)."""
    FIELD_PARAMS = {"field": False}
    PARAMS = {"field": Param(problem=_ref_problem), **_Progress.PARAMS_COMMON}

    def __init__(self, field: RamField, weight: float, mode: str, clip, num_envs: int, device: torch.device):
        super().__init__(weight, mode, clip, num_envs, device)
        self.field = field

    def measure(self, env) -> torch.Tensor:
        return popcount_bytes(env.read_ram(self.field.address, self.field.span))


class _Fields(_Progress):
    """x = reduce over the fields' numbers (the first ``count_field`` of each array field, when given)."""
    FIELD_PARAMS = {"fields": True, "count_field": False}
    PARAMS = {"fields": Param(problem=_refs_problem), "count_field": Param(None, problem=_ref_problem),
              **_Progress.PARAMS_COMMON}

    @classmethod
    def check_fields(cls, params: dict) -> tuple[str, str] | None:
        c = params.get("count_field")
        if c is not None and c.count != 1:
            return "count_field", f"must be one number (e.g. party_count), got {c.describe()} with count {c.count}"
        return None

    def __init__(self, fields: list[RamField], count_field: RamField | None, weight: float, mode: str, clip,
                 num_envs: int, device: torch.device):
        super().__init__(weight, mode, clip, num_envs, device)
        self.readers = [FieldReader(f, device) for f in fields]
        self.count = FieldReader(count_field, device) if count_field is not None else None

    def _values(self, env) -> torch.Tensor:
        """int64 [N, total numbers], those past count_field masked (0 for a sum, -1 for a max)."""
        limit = self.count(env)[:, :1] if self.count is not None else None
        parts = []
        for r in self.readers:
            v = r(env)
            if limit is not None and r.field.count > 1:
                k = torch.arange(r.field.count, device=v.device)
                v = torch.where(k[None, :] < limit, v, torch.full_like(v, self.MASKED))
            parts.append(v)
        return torch.cat(parts, 1)


class RamSum(_Fields):
    """term, per step: x = sum of the fields' numbers, paid by mode (module docstring)."""
    MASKED = 0

    def measure(self, env) -> torch.Tensor:
        return self._values(env).sum(1)


class RamMax(_Fields):
    """term, per step: x = the largest of the fields' numbers, paid by mode (0 when none counts)."""
    MASKED = -1

    def measure(self, env) -> torch.Tensor:
        return self._values(env).max(1).values.clamp(min=0)


