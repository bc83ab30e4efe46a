"""Sampling-time transforms: what a learner does to a rollout's rewards or advantages before its loss.

Stage 3 of the reward pipeline (stages 1 and 2 run in the env: ``envs/reward_transforms.py``).
Configured per learner as ``model.init_args.sample_transforms``, a list applied in order:

    sample_transforms:
      - {name: reward_norm, per: batch}      # rewards, before the value targets / GAE
      - {name: advantage_norm, per: env}     # advantages, after GAE (PPO)

``per: batch`` reduces over the whole [T, N] rollout; ``per: env`` over each env's T steps (with
a short rollout, e.g. A2C's T = 5, a per-env statistic is noisy). Nothing here keeps state: a
rollout is normalised by its own numbers, so nothing needs checkpointing. PPO's
``normalize_advantages: true`` is ``normalize_advantages`` below applied per minibatch (inside
``ppo_loss``); an ``advantage_norm`` item replaces it (``normalize_advantages: false``).
"""

from __future__ import annotations

import torch

from gbx_lightning.checks import number_problem

__all__ = ["SAMPLE_TRANSFORMS", "apply_sample_transforms", "normalize_advantages", "normalize_rewards",
           "sample_transform_problem"]


def normalize_advantages(advantages: torch.Tensor, dim: int | None = None, eps: float = 1e-8) -> torch.Tensor:
    """A' = (A - mean(A)) / (std(A) + eps), population std: over every element (``dim=None``: a batch or a
    minibatch), or along ``dim`` (``dim=0`` on [T, N]: per env, over its T steps). The population std keeps
    it defined for one element (A' = 0)."""
    if dim is None:
        return (advantages - advantages.mean()) / (advantages.std(correction=0) + eps)
    mean = advantages.mean(dim, keepdim=True)
    return (advantages - mean) / (advantages.std(dim, correction=0, keepdim=True) + eps)


def normalize_rewards(rewards: torch.Tensor, dim: int | None = None, eps: float = 1e-8) -> torch.Tensor:
    """r' = r / sqrt(mean(r^2) + eps): rewards scaled to unit root mean square, over every element
    (``dim=None``) or along ``dim`` (``dim=0`` on [T, N]: per env).

    Not centred: subtracting the mean would shift every reward, and with episodes that end that changes
    which policy is best. So the scale is the root mean square about 0, not the std about the mean: a
    rollout of equal rewards (a step cost and nothing else) becomes +-1 instead of being divided by a zero
    std, and an all-zero one stays 0. Each rollout is scaled by its own numbers, so the same reward weighs
    differently in different rollouts; for a consistent scale use the env's ``return_norm``.
    """
    if dim is None:
        return rewards / torch.sqrt(rewards.square().mean() + eps)
    return rewards / torch.sqrt(rewards.square().mean(dim, keepdim=True) + eps)


# name -> (the rollout field it transforms, its function)
SAMPLE_TRANSFORMS = {"reward_norm": ("rewards", normalize_rewards),
                     "advantage_norm": ("advantages", normalize_advantages)}
_PER = {"batch": None, "env": 0}


def sample_transform_problem(item, allowed: tuple[str, ...]) -> tuple[str, str] | None:
    """("" or ".key", problem) for a bad ``sample_transforms`` item, else None. ``allowed``: the names the learner
    supports (A2C's advantage is computed inside its loss, so it takes reward_norm only)."""
    if not isinstance(item, dict) or not isinstance(item.get("name"), str):
        return "", f"must be a mapping with a name (one of {list(allowed)}), got {item!r}"
    if item["name"] not in allowed:
        return ".name", f"must be one of {list(allowed)} for this learner, got {item['name']!r}"
    for key in item:
        if key not in ("name", "per", "eps"):
            return f".{key}", f"is not a parameter of {item['name']}; parameters: per, eps"
    if item.get("per", "batch") not in _PER:
        return ".per", f"must be one of {list(_PER)}, got {item.get('per')!r}"
    problem = number_problem(item.get("eps", 1e-8), low=0, low_open=True)
    return (".eps", problem) if problem is not None else None


def apply_sample_transforms(transforms: list[dict] | None, field: str, x: torch.Tensor) -> torch.Tensor:
    """``x`` (a [T, N] rollout field: "rewards" or "advantages") through the ``transforms`` that act on that
    field, in list order; the others are skipped. Pure: returns a new tensor, or ``x`` itself if none applies."""
    for item in transforms or ():
        target, fn = SAMPLE_TRANSFORMS[item["name"]]
        if target == field:
            x = fn(x, dim=_PER[item.get("per", "batch")], eps=float(item.get("eps", 1e-8)))
    return x
