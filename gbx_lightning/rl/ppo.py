"""PPO clipped-surrogate loss on one minibatch of flattened rollout samples."""

from __future__ import annotations

import torch

from gbx_lightning.checks import FLOAT, check_number, check_tensor

from .normalize import normalize_advantages as normalized


def ppo_loss(
    new_logprobs: torch.Tensor,
    old_logprobs: torch.Tensor,
    advantages: torch.Tensor,
    new_values: torch.Tensor,
    old_values: torch.Tensor,
    returns: torch.Tensor,
    entropy: torch.Tensor,
    clip_coef: float = 0.2,
    value_clip: float | None = None,
    normalize_advantages: bool = True,
    value_coef: float = 0.5,
    entropy_coef: float = 0.01,
) -> dict[str, torch.Tensor]:
    """Clipped PPO objective (Schulman et al. 2017), as a loss to minimise.

        ratio      = exp(new_logprobs - old_logprobs)
        A          = (A - mean(A)) / (std(A) + 1e-8)        if normalize_advantages (population std)
        policy     = mean(max(-A * ratio, -A * clip(ratio, 1 - clip_coef, 1 + clip_coef)))
        value      = mean(0.5 * (V - R)^2)                                   value_clip is None
                   = mean(0.5 * max((V - R)^2, (V_old + clip(V - V_old, -c, c) - R)^2))   otherwise
        loss       = policy + value_coef * value - entropy_coef * mean(entropy)
        approx_kl  = mean((ratio - 1) - log ratio)           (non-negative estimator of KL(old||new))
        clipfrac   = mean(|ratio - 1| > clip_coef)

    All inputs [B] on one device, floating point; `entropy` is the per-sample policy entropy.
    old_logprobs, advantages, old_values and returns are rollout data and are detached here.
    Only `loss` carries gradient; the other entries are detached scalars for logging.
    The population std keeps normalisation defined for B = 1.
    """
    fn = "ppo_loss"
    if not isinstance(new_logprobs, torch.Tensor) or new_logprobs.dim() != 1:
        got = list(new_logprobs.shape) if isinstance(new_logprobs, torch.Tensor) else type(new_logprobs).__name__
        raise ValueError(f"{fn}: new_logprobs must be a tensor of shape [B], got {got}")
    b, dev = new_logprobs.shape[0], new_logprobs.device
    for name, t in (("new_logprobs", new_logprobs), ("old_logprobs", old_logprobs), ("advantages", advantages),
                    ("new_values", new_values), ("old_values", old_values), ("returns", returns),
                    ("entropy", entropy)):
        check_tensor(fn, name, t, (b,), "[B]", FLOAT, dev)
    check_number(fn, "clip_coef", clip_coef, low=0, low_open=True)
    check_number(fn, "value_clip", value_clip, low=0, low_open=True, none="None")
    check_number(fn, "value_coef", value_coef, low=0)
    check_number(fn, "entropy_coef", entropy_coef, low=0)

    adv = advantages.detach()
    if normalize_advantages:
        adv = normalized(adv)   # per minibatch (rl/normalize.py)
    log_ratio = new_logprobs - old_logprobs.detach()
    ratio = log_ratio.exp()
    policy_loss = torch.max(-adv * ratio, -adv * ratio.clamp(1.0 - clip_coef, 1.0 + clip_coef)).mean()

    returns = returns.detach()
    value_err = (new_values - returns).pow(2)
    if value_clip is not None:
        old_values = old_values.detach()
        clipped = old_values + (new_values - old_values).clamp(-value_clip, value_clip)
        value_err = torch.max(value_err, (clipped - returns).pow(2))
    value_loss = 0.5 * value_err.mean()
    entropy_mean = entropy.mean()
    loss = policy_loss + value_coef * value_loss - entropy_coef * entropy_mean

    with torch.no_grad():
        approx_kl = ((ratio - 1.0) - log_ratio).mean()
        clipfrac = ((ratio - 1.0).abs() > clip_coef).to(ratio.dtype).mean()
    return {
        "loss": loss,
        "policy_loss": policy_loss.detach(),
        "value_loss": value_loss.detach(),
        "entropy": entropy_mean.detach(),
        "approx_kl": approx_kl,
        "clipfrac": clipfrac,
    }
