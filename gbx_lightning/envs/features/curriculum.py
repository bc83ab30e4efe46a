"""Train starts drawn by need (a feature): the stages an agent has not learnt get the training episodes.

``train_starts`` puts training episodes at a game's later stages; drawn uniformly, a stage the agent has learnt
takes as many episodes as the one it has not (orchard's full game: three mazes cleared from their starts in 62-64 of
64 episodes, the fourth in 3, after an hour of training). With ``adapt`` each train start (a recipe: all its rows)
keeps a pass rate over its recent training episodes, and the draw among them follows need:

    train_starts:
      share: 0.8
      starts: [orchard/game_maze2, orchard/game_maze3, orchard/game_maze4]
      adapt: {milestone: mazes, at_least: 1}     # an episode from a start passes where `mazes` rose by >= 1

    pass   an ended training episode that started at train start k passes where its ``milestone`` (the value the
           milestone reports, ``info[milestone]``) is >= ``at_least``; without a milestone, where it succeeded
    rate   r_k = passed_k / ended_k, both sums decayed by (1 - 1/window) per episode ended from k (r_k = 0 before
           any episode: an untried stage counts as unlearnt)
    draw   w_k = mix / K + (1 - mix) * (1 - r_k) / sum_j (1 - r_j)     (uniform where every r_j = 1)

The draw replaces the engine's uniform pick among the train starts' rows (``share`` still decides train start or
``start``; the pool's draw comes after, on top). Training only: an evaluation env draws nothing and counts nothing.
The log shows each start's rate and weight (``episode_train_start<k>_pass_mean``, ``..._weight_mean``: reported on
every ended training episode). Torch ops on the env's device, no host sync; the sums are in the env's checkpoints.
"""
from __future__ import annotations

import torch

from ..base import OptionError, StateError
from ..task_types import start_recipes, start_states
from .base import Feature, Step, loaded_tensor

__all__ = ["Curriculum", "need_weights", "pass_rates"]


def pass_rates(passed: torch.Tensor, ended: torch.Tensor) -> torch.Tensor:
    """float [K]: each start's pass rate from its decayed sums (0 before any episode ended from it)."""
    return torch.where(ended > 0, passed / ended.clamp(min=1e-9), torch.zeros_like(passed))


def need_weights(passed: torch.Tensor, ended: torch.Tensor, mix: float) -> torch.Tensor:
    """The draw's weights over K starts (module docstring) from their decayed pass and episode sums (float [K])."""
    need = 1.0 - pass_rates(passed, ended)
    total = need.sum()
    k = passed.shape[0]
    share = torch.where(total > 1e-6, need / total.clamp(min=1e-6), torch.full_like(need, 1.0 / k))
    return mix / k + (1.0 - mix) * share


class Curriculum(Feature):
    """``task.train_starts.adapt`` for one GameBoyEnv (module docstring)."""
    name = "curriculum"
    title = "the train starts' pass rates"
    MUST_MATCH = True

    @classmethod
    def check(cls, task, options: dict, cart) -> None:
        if task.train_starts is None or task.train_starts.adapt is None:
            return
        taken = {m.name for m in task.milestones} | {c.name for c in task.counters}
        for key in cls.info_keys(len(task.train_starts.starts)):
            if key in taken:
                raise OptionError("task.milestones", f"a milestone or counter named {key!r} would hide the "
                                                     f"curriculum's own report of that name: rename it")

    @staticmethod
    def info_keys(k: int) -> list[str]:
        return [f"train_start{i}_{what}" for i in range(k) for what in ("pass", "weight")]

    @classmethod
    def build(cls, task, env) -> "Curriculum | None":
        if task.train_starts is None or task.train_starts.adapt is None:
            return None
        return cls(task, env)

    def __init__(self, task, env):
        self.env = env
        adapt = task.train_starts.adapt
        self.milestone, self.at_least, self.mix = adapt.milestone, int(adapt.at_least), float(adapt.mix)
        self.keep = 1.0 - 1.0 / float(adapt.window)
        dev = env.device
        # each cache row's train start (-1: the task's own start); rows are laid out recipe by recipe (start_cache)
        recipe_of_row = []
        for recipe, (_, start) in enumerate(start_recipes(task)):
            recipe_of_row += [recipe - 1] * (len(start_states(start)) * start.variants)
        self.first = env.num_task_starts
        self.num_rows = len(recipe_of_row)
        if self.num_rows != env.cache.num_start_states:   # built before any feature adds rows (the pool's)
            raise RuntimeError(f"curriculum: {self.num_rows} start rows from the recipes, the start cache has "
                               f"{env.cache.num_start_states}; the cache's layout changed")
        self.k = len(task.train_starts.starts)
        self.recipe_of_row = torch.tensor(recipe_of_row, dtype=torch.int64, device=dev)
        self.rows_of = torch.bincount(self.recipe_of_row[self.first:], minlength=self.k).to(torch.float32)
        self.passed = torch.zeros(self.k, dtype=torch.float32, device=dev)
        self.ended = torch.zeros(self.k, dtype=torch.float32, device=dev)
        self.episode_start = torch.full((env.num_envs,), -1, dtype=torch.int64, device=dev)   # -1: not a train start
        self.keys = self.info_keys(self.k)

    def weights(self) -> torch.Tensor:
        """float [K]: the draw's weights over the train starts now."""
        return need_weights(self.passed, self.ended, self.mix)

    def _start_of(self, slots: torch.Tensor) -> torch.Tensor:
        """int64 [N]: the train start of each cache row in ``slots`` (-1: the task's start or a pooled row)."""
        inside = slots < self.num_rows
        return torch.where(inside, self.recipe_of_row[slots.clamp(max=self.num_rows - 1)], -1)

    # ---- the feature's hooks
    def report(self, step: Step) -> None:
        if not self.env.training:
            return
        rate, weights = pass_rates(self.passed, self.ended), self.weights()
        for i in range(self.k):
            step.info[self.keys[2 * i]] = torch.where(step.done, rate[i], 0.0)
            step.info[self.keys[2 * i + 1]] = torch.where(step.done, weights[i], 0.0)

    def before_reset(self, step: Step) -> None:
        """The ended episodes into their starts' sums; then, where the engine drew a train start for an ended env,
        one drawn by need instead (the env's generator)."""
        if not self.env.training:
            return
        env = self.env
        ended = step.done & (self.episode_start >= 0)
        passed = step.success if self.milestone is None else step.info[self.milestone] >= self.at_least
        where = self.episode_start.clamp(min=0)
        n = torch.zeros_like(self.ended).scatter_add_(0, where, ended.to(torch.float32))
        p = torch.zeros_like(self.passed).scatter_add_(0, where, (ended & passed).to(torch.float32))
        decay = torch.pow(torch.full_like(n, self.keep), n)
        self.ended = self.ended * decay + n
        self.passed = self.passed * decay + p
        per_row = (self.weights() / self.rows_of)[self.recipe_of_row[self.first:]]
        drawn = self.first + torch.multinomial(per_row, env.num_envs, replacement=True, generator=env.generator)
        train = (step.slots >= self.first) & (step.slots < self.num_rows)
        step.slots = torch.where(train, drawn, step.slots)

    def reset(self, step: Step | None) -> None:
        now = self._start_of(self.env.slots if step is None else step.slots)
        if not self.env.training:
            now = torch.full_like(now, -1)
        self.episode_start = now if step is None else torch.where(step.done, now, self.episode_start)

    # ---- checkpoints
    def state_dict(self) -> dict:
        return {"passed": self.passed.cpu().clone(), "ended": self.ended.cpu().clone(),
                "episode_start": self.episode_start.cpu().clone()}

    def load_state_dict(self, state: dict | None, where: str = "curriculum") -> None:
        """``state`` None (saved before the task adapted its draws): the sums start from zero."""
        if state is None:
            return
        for key in ("passed", "ended", "episode_start"):
            if key not in state:
                raise StateError(f"{where}: {key} is missing from the curriculum's state")
            setattr(self, key, loaded_tensor(f"{where}.curriculum", key, state[key], getattr(self, key)))
