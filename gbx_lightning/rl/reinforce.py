"""REINFORCE (Williams 1992): Monte-Carlo returns inside a [T, N] rollout, and the score-function loss."""

from __future__ import annotations

import torch

from gbx_lightning.checks import FLOAT, check_number, check_tensor


@torch.no_grad()
def monte_carlo_returns(
    rewards: torch.Tensor,
    terminated: torch.Tensor,
    truncated: torch.Tensor,
    gamma: float,
    truncation_values: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Discounted return to the end of each step's own episode, and whether that end lies inside the rollout.

        done_t     = terminated_t | truncated_t
        G_t        = r_t + gamma * (1 - done_t) * G_{t+1}                               G_T = 0
                         + gamma * truncated_t * truncation_values_t       (only when truncation_values is given)
        complete_t = done_t | complete_{t+1}                                     complete_T = False

    An env auto-resets where its episode ended, so ``(1 - done_t)`` stops the return at the boundary: the next
    episode's rewards never leak into this one's. A time limit (truncated) ends the return like termination
    does, unless ``truncation_values`` (V(s') of the true next state, ``final_obs``) is given: then a truncated
    step's return is completed with gamma * V(s'), a terminated step's never is.

    ``complete_t`` is False for each env's steps after its last episode end in the rollout: their episode goes on
    past step T-1, so G_t is a partial sum there, not a return; callers leave those samples out.

    rewards [T, N] float, terminated/truncated [T, N] bool, truncation_values [T, N] float or None, one device.
    Returns (returns [T, N] in rewards' dtype, complete [T, N] bool), detached. Loops over T only.
    """
    fn = "monte_carlo_returns"
    if not isinstance(rewards, torch.Tensor) or rewards.dim() != 2:
        got = list(rewards.shape) if isinstance(rewards, torch.Tensor) else type(rewards).__name__
        raise ValueError(f"{fn}: rewards must be a tensor of shape [T, N], got {got}")
    shape, dev = tuple(rewards.shape), rewards.device
    check_tensor(fn, "rewards", rewards, shape, "[T, N]", FLOAT, dev)
    check_tensor(fn, "terminated", terminated, shape, "[T, N]", (torch.bool,), dev)
    check_tensor(fn, "truncated", truncated, shape, "[T, N]", (torch.bool,), dev)
    if truncation_values is not None:
        check_tensor(fn, "truncation_values", truncation_values, shape, "[T, N]", FLOAT, dev)
    check_number(fn, "gamma", gamma, low=0, high=1)

    dtype = rewards.dtype
    done = terminated | truncated
    not_done = (~done).to(dtype)
    # what a truncated step adds to its return: gamma * V(s'), or nothing
    cut = torch.zeros_like(rewards) if truncation_values is None else \
        gamma * truncated.to(dtype) * truncation_values.detach().to(dtype)
    returns = torch.empty_like(rewards)
    complete = torch.empty_like(done)
    running = torch.zeros_like(rewards[0])
    ended = torch.zeros_like(done[0])
    for t in range(shape[0] - 1, -1, -1):
        running = rewards[t] + gamma * not_done[t] * running + cut[t]
        ended = done[t] | ended
        returns[t], complete[t] = running, ended
    return returns, complete


def _masked_mean(x: torch.Tensor, mask: torch.Tensor, count: torch.Tensor) -> torch.Tensor:
    return (x * mask).sum() / count


def reinforce_loss(
    logprobs: torch.Tensor,
    entropy: torch.Tensor,
    returns: torch.Tensor,
    mask: torch.Tensor,
    values: torch.Tensor | None = None,
    value_coef: float = 0.5,
    entropy_coef: float = 0.01,
    normalize_advantages: bool = False,
    reduction: str = "mean",
) -> dict[str, torch.Tensor]:
    """The REINFORCE loss (with an optional learned baseline) over the samples where ``mask`` is True.

        A_t     = G_t - V(s_t)        with a baseline (``values`` given; V detached in A), else G_t
        A_t     = (A_t - mean(A)) / (std(A) + 1e-8)       if normalize_advantages (population std over the mask)
        policy  = mean(-A_t * log pi(a_t|s_t))
        value   = mean(0.5 * (V(s_t) - G_t)^2)            with a baseline, else 0
        entropy = mean(H(pi(.|s_t)))
        loss    = policy + value_coef * value - entropy_coef * entropy

    mean = the mean over masked samples (0 if there are none). ``reduction="sum"`` gives sums over them
    instead (normalisation, when on, still uses this call's masked samples): the gradient of several
    parts' summed losses divided by their total ``samples`` is the gradient of the whole batch's mean,
    which is how gradient accumulation stays exact. The value term is 0.5 * squared error, as in
    ``a2c_td0`` and ``ppo_loss``, so ``value_coef`` means the same for all three learners.

    All inputs [B] on one device; logprobs/entropy/returns/values float, mask bool. ``returns`` are
    targets and are detached here. Only ``loss`` carries gradient; ``samples`` is the masked count
    (float), the other entries are detached scalars for logging.
    """
    fn = "reinforce_loss"
    if not isinstance(logprobs, torch.Tensor) or logprobs.dim() != 1:
        got = list(logprobs.shape) if isinstance(logprobs, torch.Tensor) else type(logprobs).__name__
        raise ValueError(f"{fn}: logprobs must be a tensor of shape [B], got {got}")
    b, dev = logprobs.shape[0], logprobs.device
    for name, t in (("logprobs", logprobs), ("entropy", entropy), ("returns", returns)):
        check_tensor(fn, name, t, (b,), "[B]", FLOAT, dev)
    check_tensor(fn, "mask", mask, (b,), "[B]", (torch.bool,), dev)
    if values is not None:
        check_tensor(fn, "values", values, (b,), "[B]", FLOAT, dev)
    check_number(fn, "value_coef", value_coef, low=0)
    check_number(fn, "entropy_coef", entropy_coef, low=0)
    if reduction not in ("mean", "sum"):
        raise ValueError(f"{fn}: reduction must be 'mean' or 'sum', got {reduction!r}")

    m = mask.to(logprobs.dtype)
    samples = m.sum()
    count = samples.clamp(min=1.0) if reduction == "mean" else torch.ones_like(samples)
    returns = returns.detach()
    advantages = returns - values.detach() if values is not None else returns
    if normalize_advantages:
        n = samples.clamp(min=1.0)
        centred = advantages - (advantages * m).sum() / n
        std = ((centred.pow(2) * m).sum() / n).sqrt()
        advantages = centred / (std + 1e-8)
    policy_loss = _masked_mean(-advantages * logprobs, m, count)
    value_loss = _masked_mean(0.5 * (values - returns).pow(2), m, count) if values is not None \
        else torch.zeros((), dtype=logprobs.dtype, device=dev)
    entropy_term = _masked_mean(entropy, m, count)
    loss = policy_loss + value_coef * value_loss - entropy_coef * entropy_term
    return {
        "loss": loss,
        "policy_loss": policy_loss.detach(),
        "value_loss": value_loss.detach(),
        "entropy": entropy_term.detach(),
        "samples": samples,
    }
