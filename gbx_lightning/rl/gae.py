"""Generalised advantage estimation over a [T, N] rollout, with terminated and truncated kept apart."""

from __future__ import annotations

import torch

from gbx_lightning.checks import FLOAT, check_number, check_tensor


@torch.no_grad()
def gae(
    rewards: torch.Tensor,
    values: torch.Tensor,
    next_values: torch.Tensor,
    terminated: torch.Tensor,
    truncated: torch.Tensor,
    gamma: float,
    lam: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Advantages and value targets (Schulman et al. 2016), computed backwards in time.

        delta_t = r_t + gamma * (1 - terminated_t) * next_values_t - values_t
        A_t     = delta_t + gamma * lam * (1 - (terminated_t | truncated_t)) * A_{t+1},   A_T = 0
        returns = A + values

    `next_values[t]` is V(final_obs_t), the true s' of step t, so every step bootstraps from
    its own successor: a truncated step bootstraps from V(s') but does not carry the trace
    across the auto-reset, a terminated step neither bootstraps nor carries. The last step of
    the rollout bootstraps through next_values[T-1] as any other step does.

    All inputs [T, N] on one device (rewards/values/next_values float, terminated/truncated
    bool). Returns detached tensors in values' dtype. Loops over T only; vectorised over N.
    """
    fn = "gae"
    if not isinstance(rewards, torch.Tensor) or rewards.dim() != 2:
        got = list(rewards.shape) if isinstance(rewards, torch.Tensor) else type(rewards).__name__
        raise ValueError(f"{fn}: rewards must be a tensor of shape [T, N], got {got}")
    shape, dev = tuple(rewards.shape), rewards.device
    check_tensor(fn, "rewards", rewards, shape, "[T, N]", FLOAT, dev)
    check_tensor(fn, "values", values, shape, "[T, N]", FLOAT, dev)
    check_tensor(fn, "next_values", next_values, shape, "[T, N]", FLOAT, dev)
    check_tensor(fn, "terminated", terminated, shape, "[T, N]", (torch.bool,), dev)
    check_tensor(fn, "truncated", truncated, shape, "[T, N]", (torch.bool,), dev)
    check_number(fn, "gamma", gamma, low=0, high=1)
    check_number(fn, "lam", lam, low=0, high=1)

    dtype = values.dtype
    not_term = (~terminated).to(dtype)
    not_done = (~(terminated | truncated)).to(dtype)
    deltas = rewards.to(dtype) + gamma * not_term * next_values.to(dtype) - values
    advantages = torch.empty_like(values)
    running = torch.zeros_like(values[0])
    for t in range(shape[0] - 1, -1, -1):
        running = deltas[t] + gamma * lam * not_done[t] * running
        advantages[t] = running
    return advantages, advantages + values
