"""A2C: advantage actor-critic with one-step TD(0) targets, one update per ``update_every`` env steps.

Per batch (a rollout of T = ``update_every`` steps of all N envs, acted with the current weights):

    1. bootstrap   V(s') of every step's true next state (``final_obs``), no gradient
    2. targets     y = r + gamma * (1 - terminated) * V(s')       (through truncation: only termination cuts it)
                   A = y - V(s)
    3. loss        -mean(A * log pi(a|s)) + value_coef * mean(0.5 * (y - V(s))^2) - entropy_coef * mean(H)
                   over all T*N transitions (``rl.a2c_td0``)
    4. update      one optimizer step: backward, clip the gradient norm, Adam

So ``opt_steps = env_steps / (num_envs * update_every)``. Every row keeps its own one-step target and all rows
were acted with the same weights, so this is the sum of the T per-step gradients / T: gradient accumulation over
T env steps, in one pass (tests/test_trainer.py checks it); with a recurrent policy the gradient also flows
back through the T steps of each env's LSTM state. ``sample_transforms`` (``reward_norm``,
``rl/normalize.py``) rescales the rollout's rewards before the targets.
"""

from __future__ import annotations

import time
from typing import Any

import torch

from gbx_lightning.algos.base import RLModule
from gbx_lightning.algos.config import require_number
from gbx_lightning.rl import a2c_td0, apply_sample_transforms

__all__ = ["A2CModule"]


class A2CModule(RLModule):
    """A2C: advantage actor-critic with one-step TD(0) targets, one update per ``update_every`` env steps (the
    algorithm: this file's docstring)."""

    rollout_field = "update_every"

    def __init__(self, *, update_every: int = 5, lr: float = 7e-4, sample_transforms: list[dict] | None = None,
                 **kwargs):
        """
        Args:
            update_every: T, env steps of all N envs per update.
            lr: Adam's learning rate.
            sample_transforms: what to do to a rollout's rewards before the targets, in order
                (``[{name: reward_norm, per: batch | env}]``, ``rl/normalize.py``); null: nothing.
            **kwargs: the arguments every algorithm takes (``RLModule``: env, policy, gamma, ...).
        """
        super().__init__(lr=lr, **kwargs)

    @classmethod
    def check_args(cls, hp: dict[str, Any]) -> None:
        require_number("update_every", hp["update_every"], low=1, integer=True)

    def training_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> None:
        """One update from a [T, N] rollout (T = update_every), acted with these weights."""
        t0 = time.perf_counter()
        hp = self.hparams
        # 1. V(s') of the true next states, no gradient (bootstraps through truncation; a2c_td0 masks termination)
        next_values = self.bootstrap_values(batch)
        # 2-3. log pi(a|s), H(pi(.|s)), V(s) with gradient (a recurrent policy: each env's T steps replayed from its
        #    state before the rollout); TD(0) targets and the actor-critic loss of all T*N rows
        logprobs, entropy, values = self.evaluate_rollout(batch)
        rewards = apply_sample_transforms(hp.get("sample_transforms"), "rewards", batch["rewards"])
        out = a2c_td0(logprobs, entropy, values, rewards.flatten(), next_values,
                      batch["terminated"].flatten(), gamma=hp.gamma, value_coef=hp.value_coef,
                      entropy_coef=hp.entropy_coef)
        # 4. backward, clip, step
        self.step_optimizer(out)
        self.time_update_s += time.perf_counter() - t0
