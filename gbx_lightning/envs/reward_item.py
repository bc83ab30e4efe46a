"""The reward item protocol: what every piece of a reward list is (``envs/reward_transforms.py`` runs the list).

``RewardItem``: a term (``item(ctx) -> float32 [N]``, added) or a transform (``item(reward, ctx) -> reward``), built
as ``Item(num_envs=, device=, **params)`` with its ``PARAMS`` (each a ``Param``: default, bounds, choices, or a
check) checked before anything is built; optional ``sync``/``reset``/``state_dict``/``load_state_dict``.
``RewardContext``: what a step's items read. A built-in item is one file that imports this protocol (never the
pipeline: ``reward_transforms.py`` imports the items) and one line in ``reward_transforms.BUILTINS``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import torch

from gbx_lightning.checks import number_problem

from .base import StateError
from .ram_map import WRAM
from .rewards import popcount_bytes

__all__ = ["EpisodeCellsItem", "Param", "REQUIRED", "RewardContext", "RewardItem", "RewardSpecError", "WRAM",
           "param_problem"]


class RewardSpecError(ValueError):
    """A bad reward item; ``field`` is e.g. "reward[2].factor", the message reads after it."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field} {message}")
        self.field, self.message = field, message


@dataclass
class RewardContext:
    """What a step's reward items may read: the env and the step's outcome, all [N] tensors on the env's device.
    ``dist``/``prev_dist``: the goal-template distance after / before this step (0 without a goal). ``screen``: the
    step's last screen as the observation sees it (uint8 [N, 72, 80], shades 0..3, before any reset), for terms over
    pixels; None where a caller has none."""
    env: Any
    terminated: torch.Tensor
    truncated: torch.Tensor
    success: torch.Tensor
    failed: torch.Tensor
    dist: torch.Tensor
    prev_dist: torch.Tensor
    screen: torch.Tensor | None = None

    @property
    def done(self) -> torch.Tensor:
        return self.terminated | self.truncated


# ---------------------------------------------------------------------------------------------- parameters
REQUIRED = object()


@dataclass(frozen=True)
class Param:
    """A built-in item's parameter: its default (REQUIRED, a value, or ``env``: the task's value of that name,
    filled in when the env builds the pipeline) and its check (``number_problem`` bounds, ``choices``, or a
    ``problem`` function returning the complaint)."""
    default: Any = REQUIRED
    env: str | None = None
    bounds: dict | None = None
    choices: tuple | None = None
    problem: Callable[[Any], str | None] | None = None


def param_problem(spec: Param, value) -> str | None:
    if spec.problem is not None:
        return spec.problem(value)
    if spec.choices is not None:
        if not any(type(value) is type(c) and value == c for c in spec.choices):
            return f"must be one of {list(spec.choices)}, got {value!r}"
        return None
    return number_problem(value, **(spec.bounds or {}))


# ---------------------------------------------------------------------------------------------- items
class RewardItem:
    """A pipeline piece. Terms: ``item(ctx) -> float32 [N]``, added. Transforms: ``item(reward, ctx) -> reward``.

    Built-ins are constructed as ``Item(num_envs=, device=, **params)``. ``needs`` names the templates an item
    reads ("goal", "fail"). Stateless by default; a stateful item overrides ``state_dict``/``load_state_dict``
    (``per_env=False``: only what does not belong to particular envs, e.g. a running statistic).
    """
    kind = "term"
    needs: tuple[str, ...] = ()
    PARAMS: dict[str, Param] = {}
    # parameters that name fields of the task's RAM map (envs/ram_map.py): True = a list of them, False = one;
    # resolved to RamFields before the item is built
    FIELD_PARAMS: dict[str, bool] = {}

    @classmethod
    def check(cls, params: dict) -> tuple[str, str] | None:
        """(parameter, problem) for a problem between parameters (e.g. clip's low > high), else None."""
        return None

    @classmethod
    def check_fields(cls, params: dict) -> tuple[str, str] | None:
        """(parameter, problem) for a problem with the resolved RAM map fields, else None."""
        return None

    def sync(self, env) -> None:
        """After a reset or a load: read what the item remembers from the env as it is now."""

    def reset(self) -> None:
        """env.reset(): forget per-episode state (not learned statistics)."""

    def state_dict(self, per_env: bool = True) -> dict:
        return {}

    def load_state_dict(self, state: dict) -> None:
        pass


class EpisodeCellsItem(RewardItem):
    """A term that remembers each episode's cells in a bitset (``visited``, int64 [N, bits // 64]) and may count the
    run's cells in a table (the attribute ``RUN_TABLE`` names; empty when off). The table belongs to the run, not
    to an env: a checkpoint that leaves the envs out keeps it. ``explore`` and ``screen_novelty`` are the two."""
    NAME = ""        # the item's name in errors
    RUN_TABLE = ""   # the attribute holding the run-wide table
    SIZES = ""       # the parameters that fix the saved shapes, for the load error

    def forget_ended(self, ctx: RewardContext) -> None:
        """The episodes that ended forget their cells; ``sync`` marks the next episode's start."""
        self.visited = self.visited.masked_fill(ctx.done.unsqueeze(1), 0)

    def reset(self) -> None:
        self.visited = torch.zeros_like(self.visited)

    def visited_count(self) -> torch.Tensor:
        """int64 [N]: distinct cells each env's episode has visited so far (for tests and dashboards)."""
        return popcount_bytes(self.visited.view(torch.uint8).reshape(self.visited.shape[0], -1))

    def state_dict(self, per_env: bool = True) -> dict:
        state = {"visited": self.visited.cpu().clone()} if per_env else {}
        table = getattr(self, self.RUN_TABLE)
        if table.numel():
            state[self.RUN_TABLE] = table.cpu().clone()
        return state

    def load_state_dict(self, state: dict) -> None:
        for key in ("visited", self.RUN_TABLE):
            mine = getattr(self, key)
            if key not in state:
                if key == "visited":
                    self.visited = torch.zeros_like(mine)
                continue
            src = torch.as_tensor(state[key])
            if src.shape != mine.shape or src.dtype != mine.dtype:
                raise StateError(f"{self.NAME}.load_state_dict: {key} must be {mine.dtype} {list(mine.shape)} "
                                 f"({self.SIZES} and num_envs as saved), got {src.dtype} {list(src.shape)}")
            setattr(self, key, src.to(mine.device).clone())
