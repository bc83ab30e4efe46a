"""The RAM goal (a feature): an episode ends as a success where a RAM map field reaches a value (``task.ram_goal``).

    ram_goal: {field: level, at_least: 4}     # orchard's full game: the fourth maze cleared

A goal template (``templates.py``) ends an episode on a screen; some goals have no screen of their own (the fourth
of four mazes cleared looks like the first; a badge shows only in a menu), but the game's RAM says it. At every
step's end, where the field's value (the sum of its numbers) is >= ``at_least`` the episode terminates with
``success``: the same flag a goal template sets, so ``success_bonus``, the success rate and evaluation read it
alike. It reads the state, not the episode's progress: an episode started from a pooled state that already holds
the goal ends at its first step. No state of its own (the machines' RAM is in the env's checkpoints).
"""
from __future__ import annotations

import torch

from ..ram_map import FieldReader, resolve_field
from .base import Feature, Step

__all__ = ["RamGoalFeature"]


class RamGoalFeature(Feature):
    """``task.ram_goal`` for the envs of one GameBoyEnv (module docstring)."""
    name = "ram_goal"
    title = "the RAM goal"

    @classmethod
    def build(cls, task, env) -> "RamGoalFeature | None":
        return None if task.ram_goal is None else cls(task, env)

    def __init__(self, task, env):
        self.env = env
        self.reader = FieldReader(resolve_field(task.ram_map, task.ram_goal.field, "task.ram_goal.field"), env.device)
        self.at_least = int(task.ram_goal.at_least)

    def reached(self) -> torch.Tensor:
        """bool [N]: where the field's value is at the goal now."""
        return self.reader(self.env).sum(1) >= self.at_least

    def after_step(self, step: Step) -> None:
        step.terminate(success=step.success | self.reached())
