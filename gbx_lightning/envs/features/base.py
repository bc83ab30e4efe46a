"""The feature protocol: what a task switches on in GameBoyEnv, as one small object with fixed hooks.

GameBoyEnv is the engine (Game Boys, frames, actions, the start-state cache, frame stacks); everything a task adds
(goal/fail templates, counters, milestones, the state pool, the visit heatmap, structured observations, the reward
list) is a ``Feature``. The engine builds the task's features once, in the order of ``features.FEATURES``, and calls
each hook on every feature in that order (docs/design.md, "GameBoyEnv's features"):

    check(task, options, cart)   classmethod, before anything is built: the feature's options against the task and
                                 the cartridge; OptionError naming the field (milliseconds, no kernel work)
    build(task, env)             classmethod: the feature for this env, or None when the task does not use it
    on_shard(shard)              after a CPU shard's frames, in that shard's thread (a kernel over its screens)
    after_step(step)             the step's end, before any reset: read the machines and screens; end episodes
                                 (``step.terminate``/``step.truncate``), add the reward (``step.reward``)
    report(step)                 ``step.done`` is final now: ``step.info[...]`` for the episodes that ended
    before_reset(step)           the last look at the ended envs' machines; ``step.slots`` (the start each ended
                                 env restarts from, a row of the start-state cache) may be changed (the pool)
    reset(step)                  after the ended envs were restored (``step.done``); ``step`` None: ``env.reset()``
    observation(final)           uint8 [N, P, 72, 80]: its planes in front of the frames (``obs_planes`` P > 0 only)
    state_dict() / load_state_dict(state, where) / state_nbytes    the feature's part of the env's checkpoints

Hooks a feature does not need are the base class's no-ops. No hook loops over envs or syncs the host.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

from ..base import StateError

__all__ = ["Feature", "Step", "loaded_tensor", "tensor_nbytes"]


@dataclass
class Step:
    """One step as the features see it, after the frames ran; every tensor is [N] on the env's device.

    ``screen``: uint8 [N, 72, 80], the screens the step drew (before any reset). ``dist``/``prev_dist``: the goal
    template's distance after / before the step (zeros without a goal: the templates feature sets them).
    ``terminated``/``success``/``failed``: set by the features that end episodes; ``truncated`` reads the time
    limit and every ``truncate`` call, never where an episode terminated. ``reward``/``game_reward``: what the
    env returns and what ``episode_return`` sums (the reward feature's). ``slots``: int64 [N], each env's next
    start (a row of the start-state cache), drawn by the engine before ``before_reset``. ``none_ended``: True where
    it is known that no episode ended (read on a CPU, where it costs nothing; always False on CUDA, where reading it
    would wait for the device): work for ended envs alone may then be skipped."""
    env: Any
    screen: torch.Tensor
    dist: torch.Tensor
    prev_dist: torch.Tensor
    terminated: torch.Tensor
    success: torch.Tensor
    failed: torch.Tensor
    time_up: torch.Tensor
    reward: torch.Tensor | None = None
    game_reward: torch.Tensor | None = None
    info: dict = field(default_factory=dict)
    slots: torch.Tensor | None = None
    _cut: torch.Tensor | None = None
    _ends: tuple[torch.Tensor, torch.Tensor] | None = None    # (truncated, done), made once until an end changes

    def terminate(self, success: torch.Tensor | None = None, failed: torch.Tensor | None = None) -> None:
        """End the episodes where ``success`` (the goal reached) or ``failed`` (e.g. GAME OVER): terminated."""
        if success is not None:
            self.success = success
        if failed is not None:
            self.failed = failed
        self.terminated = self.success | self.failed
        self._ends = None

    def truncate(self, mask: torch.Tensor) -> None:
        """End the episodes in ``mask`` as truncated (targets bootstrap through them), unless they terminated."""
        self._cut = mask if self._cut is None else self._cut | mask
        self._ends = None

    def _made_ends(self) -> tuple[torch.Tensor, torch.Tensor]:
        if self._ends is None:
            cut = self.time_up if self._cut is None else self.time_up | self._cut
            truncated = cut & ~self.terminated
            self._ends = (truncated, self.terminated | truncated)
        return self._ends

    @property
    def truncated(self) -> torch.Tensor:
        return self._made_ends()[0]

    @property
    def done(self) -> torch.Tensor:
        return self._made_ends()[1]

    @property
    def none_ended(self) -> bool:
        done = self.done
        return done.device.type == "cpu" and not bool(done.any())


class Feature:
    """A task feature (module docstring). ``name`` keys its state in the env's checkpoints and ``env.feature(name)``;
    ``INFO`` names the ``info`` keys it reports (a counter or milestone may not take them); ``obs_planes`` the
    planes it puts in front of the frames (``obs_vector``: the bytes of them a policy reads as a vector).
    ``MUST_MATCH``: a checkpoint saved with this feature cannot load into an env without it (its state would be
    lost: the pool's states, the counters' baselines), and the reverse."""
    name = ""
    title = ""
    INFO: tuple[str, ...] = ()
    MUST_MATCH = False
    obs_planes = 0
    obs_vector = 0

    @classmethod
    def check(cls, task, options: dict, cart) -> None:
        """Raise OptionError naming the field for a problem the parser cannot see (no kernel work)."""

    @classmethod
    def build(cls, task, env) -> "Feature | None":
        raise NotImplementedError

    @classmethod
    def checkpoint_bound(cls, task, options: dict, cart) -> dict | None:
        """Where this feature's state can grow large beside the envs' own (the pool's: a full pool), what it takes in
        a checkpoint at most, or None: {bytes, what, field (the task field that sizes it), value (its value), fits
        (room bytes -> the largest value that fits)}; milliseconds, nothing built."""
        return None

    def state_title(self) -> str:
        """What the state is, for a line saying it was lost ("the milestone trackers")."""
        return self.title

    @classmethod
    def unexpected_state(cls, state) -> str:
        """Why a checkpoint with this feature's ``state`` cannot load into an env without it (``MUST_MATCH``)."""
        return f"the state was saved with {cls.name}, this env's task has none"

    def on_shard(self, shard) -> None:
        pass

    def after_step(self, step: Step) -> None:
        pass

    def report(self, step: Step) -> None:
        pass

    def before_reset(self, step: Step) -> None:
        pass

    def reset(self, step: Step | None) -> None:
        pass

    def observation(self, final: bool) -> torch.Tensor:
        raise NotImplementedError

    def state_dict(self) -> dict:
        return {}

    def load_state_dict(self, state: dict | None, where: str) -> None:
        """``state`` None: the checkpoint has none for this feature (saved before the task had it)."""

    @property
    def state_nbytes(self) -> int:
        return tensor_nbytes(self.state_dict())


def tensor_nbytes(value) -> int:
    """Bytes of the tensors in a nested dict/list."""
    if isinstance(value, torch.Tensor):
        return value.numel() * value.element_size()
    if isinstance(value, dict):
        return sum(tensor_nbytes(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return sum(tensor_nbytes(v) for v in value)
    return 0


def loaded_tensor(where: str, key: str, value, like: torch.Tensor) -> torch.Tensor:
    """``value`` as a fresh tensor on ``like``'s device, after checking it has ``like``'s dtype and shape."""
    src = torch.as_tensor(value)
    if tuple(src.shape) != tuple(like.shape) or src.dtype != like.dtype:
        raise StateError(f"{where}: {key} must be {like.dtype} {list(like.shape)}, got {src.dtype} {list(src.shape)}")
    return src.to(like.device).clone()
