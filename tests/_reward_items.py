"""Reward items of a user's own, referenced by import path from tests/test_reward_transforms.py
(``name: tests._reward_items.given_reward``), as a user adds a term without editing the env."""

import torch


def given_reward(ctx, column: str = "base"):
    """A term: the env's table of rewards for this step (a stand-in for a game's reward)."""
    return getattr(ctx.env, column)


def negate(reward, ctx):
    """A transform: reward' = -reward."""
    return -reward


class StepCounter:
    """A stateful term: +1 per step since the episode started, reset where it ended; checkpointed."""

    def __init__(self, num_envs: int, device: torch.device, start: float = 0.0):
        self.count = torch.full((num_envs,), start, device=device)

    def __call__(self, ctx):
        self.count = self.count + 1
        value = self.count.clone()
        self.count = self.count.masked_fill(ctx.done, 0.0)
        return value

    def state_dict(self):
        return {"count": self.count.cpu().clone()}

    def load_state_dict(self, state):
        self.count = state["count"].to(self.count.device).clone()


NOT_CALLABLE = 3
