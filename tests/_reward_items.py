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


class OwnWeight:
    """A term with a weight of its own (default 0.01), as a user writes one: the pipeline hands it the item's weight
    and does not multiply by it again."""

    def __init__(self, weight: float = 0.01):
        self.weight = weight

    def __call__(self, ctx):
        return self.weight * ctx.env.base


def own_weight(ctx, weight: float = 0.01):
    """The same as a function."""
    return weight * ctx.env.base
