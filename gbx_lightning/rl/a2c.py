"""Advantage actor-critic with one-step TD(0) targets, for streaming updates (one transition per env)."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ._checks import FLOAT, check_nonnegative, check_tensor, check_unit_interval

_INT = (torch.int32, torch.int64)


def a2c_td0(
    logits: torch.Tensor,
    values: torch.Tensor,
    actions: torch.Tensor,
    rewards: torch.Tensor,
    next_values: torch.Tensor,
    terminated: torch.Tensor,
    gamma: float,
    value_coef: float = 0.5,
    entropy_coef: float = 0.01,
) -> dict[str, torch.Tensor]:
    """A2C loss on one transition (s, a, r, s') per env.

        target     = r + gamma * (1 - terminated) * V(s')          V(s') detached
        A          = target - V(s)                                  detached in the policy term
        policy     = -mean(A * log pi(a|s))
        value      = mean(0.5 * (target - V(s))^2)
        entropy    = mean(H(pi(.|s)))
        loss       = policy + value_coef * value - entropy_coef * entropy

    `next_values[i]` must be V(final_obs[i]), the true next state. Only termination cuts the
    bootstrap: a truncated (time-limited) episode is not terminated, so its target still
    includes gamma * V(s'). `next_values` is detached here, so no gradient reaches it even if
    the caller forgot `torch.no_grad()`.

    Shapes: logits [N, A] (unnormalised), values/rewards/next_values [N] float, actions [N]
    int32/int64, terminated [N] bool; all on logits' device. Only `loss` carries gradient; the
    other entries are detached scalars for logging. Out-of-range actions are caught by
    torch.gather (checking them here would need a host sync).
    """
    fn = "a2c_td0"
    if not isinstance(logits, torch.Tensor) or logits.dim() != 2:
        got = list(logits.shape) if isinstance(logits, torch.Tensor) else type(logits).__name__
        raise ValueError(f"{fn}: logits must be a tensor of shape [N, A], got {got}")
    n, dev = logits.shape[0], logits.device
    check_tensor(fn, "logits", logits, logits.shape, "[N, A]", FLOAT, dev)
    check_tensor(fn, "values", values, (n,), "[N]", FLOAT, dev)
    check_tensor(fn, "actions", actions, (n,), "[N]", _INT, dev)
    check_tensor(fn, "rewards", rewards, (n,), "[N]", FLOAT, dev)
    check_tensor(fn, "next_values", next_values, (n,), "[N]", FLOAT, dev)
    check_tensor(fn, "terminated", terminated, (n,), "[N]", (torch.bool,), dev)
    check_unit_interval(fn, "gamma", gamma)
    check_nonnegative(fn, "value_coef", value_coef)
    check_nonnegative(fn, "entropy_coef", entropy_coef)

    log_probs = F.log_softmax(logits, dim=-1)
    logp_a = log_probs.gather(1, actions.long().unsqueeze(1)).squeeze(1)
    entropy = -(log_probs.exp() * log_probs).sum(-1).mean()

    target = rewards + gamma * (~terminated).to(values.dtype) * next_values.detach()
    advantage = (target - values).detach()
    policy_loss = -(advantage * logp_a).mean()
    value_loss = 0.5 * (target - values).pow(2).mean()
    loss = policy_loss + value_coef * value_loss - entropy_coef * entropy
    return {
        "loss": loss,
        "policy_loss": policy_loss.detach(),
        "value_loss": value_loss.detach(),
        "entropy": entropy.detach(),
        "advantage_mean": advantage.mean(),
        "value_mean": values.detach().mean(),
    }
