"""Torch-facing vector envs. `make_env(name, **kwargs)` builds one by registry name."""

from __future__ import annotations

from .base import EpisodeStats, VecEnv, check_actions
from .foraging import ForagingEnv
from .gameboy import GameBoyEnv

# name -> constructor taking keyword arguments (num_envs, device, seed, env-specific options)
ENV_REGISTRY: dict[str, type] = {"foraging": ForagingEnv, "gameboy": GameBoyEnv}


def make_env(name: str, **kwargs) -> VecEnv:
    """Build a registered env; an unknown name is a ValueError listing the known ones."""
    if name not in ENV_REGISTRY:
        raise ValueError(f"unknown env {name!r}; known envs: {', '.join(sorted(ENV_REGISTRY))}")
    return ENV_REGISTRY[name](**kwargs)


__all__ = ["ENV_REGISTRY", "EpisodeStats", "ForagingEnv", "GameBoyEnv", "VecEnv", "check_actions", "make_env"]
