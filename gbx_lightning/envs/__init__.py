"""Torch-facing vector envs. A config names one by class (``model.env: {class_path: gbx_lightning.envs.GameBoyEnv,
init_args: {...}}``); ``make_env(name, **kwargs)`` builds one by a short name (tools, tests).

base.py the VecEnv protocol; gameboy.py the Game Boy engine and task.py what a game is to it (start,
templates, reward, counters); foraging.py the grid world."""

from __future__ import annotations

from .base import EpisodeStats, VecEnv, VecEnvBase, check_actions
from .foraging import ForagingEnv
from .gameboy import GameBoyEnv
from .task import Counter, Start, Task, Template, load_task

# short names for tools and tests (configs name the class: model.env.class_path); name -> constructor
ENV_REGISTRY: dict[str, type] = {"foraging": ForagingEnv, "gameboy": GameBoyEnv}


def make_env(name: str, **kwargs) -> VecEnv:
    """Build a registered env; an unknown name is a ValueError listing the known ones."""
    if name not in ENV_REGISTRY:
        raise ValueError(f"unknown env {name!r}; known envs: {', '.join(sorted(ENV_REGISTRY))}")
    return ENV_REGISTRY[name](**kwargs)


__all__ = ["ENV_REGISTRY", "Counter", "EpisodeStats", "ForagingEnv", "GameBoyEnv", "Start", "Task", "Template",
           "VecEnv", "VecEnvBase", "check_actions", "load_task", "make_env"]
