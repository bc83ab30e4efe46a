"""Advantage actor-critic with one-step TD(0) targets, for streaming updates (one transition per env)."""

from __future__ import annotations

import torch

from gbx_lightning.checks import FLOAT, check_number, check_tensor

from .stats import explained_variance


def a2c_td0(
    logprobs: torch.Tensor,
    entropy: torch.Tensor,
    values: torch.Tensor,
    rewards: torch.Tensor,
    next_values: torch.Tensor,
    terminated: torch.Tensor,
    gamma: float,
    value_coef: float = 0.5,
    entropy_coef: float = 0.01,
) -> dict[str, torch.Tensor]:
    """A2C loss on one transition (s, a, r, s') per row.

        target     = r + gamma * (1 - terminated) * V(s')          V(s') detached
        A          = target - V(s)                                  detached in the policy term
        policy     = -mean(A * log pi(a|s))
        value      = mean(0.5 * (target - V(s))^2)
        entropy    = mean(H(pi(.|s)))
        loss       = policy + value_coef * value - entropy_coef * entropy
        explained_variance = 1 - Var(target - V(s)) / Var(target)   (NaN when Var(target) = 0)

    ``logprobs`` = log pi(a|s) of the taken actions and ``entropy`` = H(pi(.|s)), as
    ``policy.evaluate(obs, actions)`` returns them with its values. `next_values[i]` must be
    V(final_obs[i]), the true next state. Only termination cuts the bootstrap: a truncated
    (time-limited) episode is not terminated, so its target still includes gamma * V(s').
    `next_values` is detached here, so no gradient reaches it even if the caller forgot
    `torch.no_grad()`.

    Shapes: every input [B] on one device; logprobs/entropy/values/rewards/next_values float,
    terminated bool. Only `loss` carries gradient; the other entries are detached scalars for logging.
    """
    fn = "a2c_td0"
    if not isinstance(logprobs, torch.Tensor) or logprobs.dim() != 1:
        got = list(logprobs.shape) if isinstance(logprobs, torch.Tensor) else type(logprobs).__name__
        raise ValueError(f"{fn}: logprobs must be a tensor of shape [B], got {got}")
    b, dev = logprobs.shape[0], logprobs.device
    for name, t in (("logprobs", logprobs), ("entropy", entropy), ("values", values), ("rewards", rewards),
                    ("next_values", next_values)):
        check_tensor(fn, name, t, (b,), "[B]", FLOAT, dev)
    check_tensor(fn, "terminated", terminated, (b,), "[B]", (torch.bool,), dev)
    check_number(fn, "gamma", gamma, low=0, high=1)
    check_number(fn, "value_coef", value_coef, low=0)
    check_number(fn, "entropy_coef", entropy_coef, low=0)

    target = rewards + gamma * (~terminated).to(values.dtype) * next_values.detach()
    advantage = (target - values).detach()
    policy_loss = -(advantage * logprobs).mean()
    value_loss = 0.5 * (target - values).pow(2).mean()
    entropy_mean = entropy.mean()
    loss = policy_loss + value_coef * value_loss - entropy_coef * entropy_mean
    return {
        "loss": loss,
        "policy_loss": policy_loss.detach(),
        "value_loss": value_loss.detach(),
        "entropy": entropy_mean.detach(),
        "advantage_mean": advantage.mean(),
        "value_mean": values.detach().mean(),
        "explained_variance": explained_variance(values.detach(), target.detach()),
    }
