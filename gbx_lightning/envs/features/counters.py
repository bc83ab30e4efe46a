"""Counters (a feature): WRAM numbers whose increase over an episode is reported when it ends (``task.counters``).

Each counter is a number of ``size`` bytes, little endian, at its address (or its RAM map ``field``'s), wrapping at
``2**bits``; at every step's end its increase since the last step (``rewards.ram_counter_delta``, modulo 2**bits)
is added to the episode's, and ``info[name]`` (int32, 0 where nothing ended) holds the episode's total on the step
it ends: orchard's ``seeds_eaten``.
"""
from __future__ import annotations

import torch

from ..base import StateError
from ..rewards import ram_counter_delta, ram_value
from ..task_checks import counter_location
from .base import Feature, Step, loaded_tensor

__all__ = ["Counters"]


class Counters(Feature):
    """The task's counters for the envs of one GameBoyEnv (module docstring)."""
    name = "counters"
    title = "the counters' episode totals"
    MUST_MATCH = True

    @classmethod
    def unexpected_state(cls, state) -> str:
        return f"counters must be [] (this env's task), got {sorted(state or {})}"

    @classmethod
    def build(cls, task, env) -> "Counters | None":
        return cls(task, env) if task.counters else None

    def __init__(self, task, env):
        self.env = env
        self.counters = list(task.counters)
        self.names = [c.name for c in self.counters]
        self.where = [counter_location(c, task.ram_map) for c in self.counters]   # (address, size) each
        self.bits = [8 * c.size if c.bits is None else c.bits for c in self.counters]
        shape = (len(self.counters), env.num_envs)
        # each counter's value at the last step's end (after resets) and its increase over the episode so far
        self.before = torch.zeros(shape, dtype=torch.int32, device=env.device)
        self.episode = torch.zeros(shape, dtype=torch.int32, device=env.device)

    def read(self) -> torch.Tensor:
        """int32 [C, N]: each counter's value now (a copy)."""
        return torch.stack([ram_value(self.env.read_ram(address, size)) for address, size in self.where])

    def after_step(self, step: Step) -> None:
        now = self.read()
        for i, bits in enumerate(self.bits):
            self.episode[i] += ram_counter_delta(now[i], self.before[i], bits).to(torch.int32)

    def report(self, step: Step) -> None:
        for i, name in enumerate(self.names):
            step.info[name] = torch.where(step.done, self.episode[i], 0)

    def reset(self, step: Step | None) -> None:
        if step is None:
            self.before.copy_(self.read())
            self.episode.zero_()
            return
        zero = torch.zeros((), dtype=torch.int32, device=self.episode.device)
        self.episode = torch.where(step.done, zero, self.episode)
        self.before = self.read()

    @property
    def state_nbytes(self) -> int:
        return 2 * self.before.numel() * self.before.element_size()

    def state_dict(self) -> dict:
        return {name: {"before": self.before[i].cpu().clone(), "episode": self.episode[i].cpu().clone()}
                for i, name in enumerate(self.names)}

    def load_state_dict(self, state: dict | None, where: str) -> None:
        saved = sorted(state or {})
        if saved != sorted(self.names):
            raise StateError(f"{where}: counters must be {sorted(self.names)} (this env's task), got {saved}")
        for i, name in enumerate(self.names):
            for part, dst in (("before", self.before), ("episode", self.episode)):
                dst[i] = loaded_tensor(where, f"counters[{name!r}][{part!r}]", state[name][part], dst[i])
