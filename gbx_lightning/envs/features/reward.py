"""The reward (a feature): the task's reward list as a pipeline (``envs/reward_transforms.py``), run at every step's
end on the step's screens and RAM, before the ended envs are reset.

``step.reward`` is what the env returns (trained on); ``step.game_reward`` the sum of the terms, before any
transform, what ``info["episode_return"]`` sums. With a transform in the list, ``info["trained_return"]`` is the
episode's sum of the rewards trained on. The items' own state (explore bitsets, baselines, running statistics) is
this feature's in the env's checkpoints; ``sync`` lets them read the restarted envs after every reset and load.
"""
from __future__ import annotations

from ..base import EpisodeStats
from ..reward_item import RewardContext
from ..reward_transforms import build_reward_pipeline
from .base import Feature, Step
from .templates import reward_settings

__all__ = ["Reward"]


class Reward(Feature):
    """The task's reward pipeline for the envs of one GameBoyEnv (module docstring)."""
    name = "reward"
    title = "the reward items' per-env state"
    INFO = ("trained_return",)

    @classmethod
    def build(cls, task, env) -> "Reward":
        return cls(task, env)

    def __init__(self, task, env):
        self.env = env
        templates = env.feature("templates")
        settings = templates.reward_settings if templates is not None else reward_settings(task, None)
        self.pipeline = build_reward_pipeline(task.reward, env.num_envs, env.device,
                                              {k: settings[k] for k in ("step_cost", "alpha", "goal_bonus",
                                                                        "fail_penalty")}, ram_map=task.ram_map)
        # the return of the rewards trained on, where a transform makes it differ from the game return
        self.trained_stats = EpisodeStats(env.num_envs, env.device) if self.pipeline.has_transforms else None

    def after_step(self, step: Step) -> None:
        ctx = RewardContext(self.env, step.terminated, step.truncated, step.success, step.failed, step.dist,
                            step.prev_dist, step.screen)
        step.reward, step.game_reward = self.pipeline(ctx)

    def report(self, step: Step) -> None:
        if self.trained_stats is not None:
            step.info["trained_return"] = self.trained_stats.update(step.reward, step.terminated, step.truncated)[0]

    def reset(self, step: Step | None) -> None:
        if step is None:
            if self.trained_stats is not None:
                self.trained_stats.reset()
            self.pipeline.reset()
        self.pipeline.sync(self.env)

    def state_dict(self) -> dict:
        state = {"pipeline": self.pipeline.state_dict()}
        if self.trained_stats is not None:
            state["trained_stats"] = self.trained_stats.state_dict()
        return state

    @property
    def state_nbytes(self) -> int:
        stats = 0 if self.trained_stats is None else \
            sum(t.numel() * t.element_size() for t in (self.trained_stats.running_return,
                                                       self.trained_stats.running_length))
        return self.pipeline.state_nbytes + stats

    def load_state_dict(self, state: dict | None, where: str) -> None:
        state = state or {}
        if self.trained_stats is not None:
            if "trained_stats" in state:
                self.trained_stats.load_state_dict(state["trained_stats"])
            else:   # saved without a transform in the reward list: returns trained on start with this episode
                self.trained_stats.reset()
        self.pipeline.load_state_dict(state.get("pipeline", {}))
        self.pipeline.sync(self.env)   # what the items remember of the machines (RAM terms' last values)
