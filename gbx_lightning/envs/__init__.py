"""Torch-facing vector envs. `make_env(name, **kwargs)` builds one by registry name.

base.py the VecEnv protocol; gameboy.py the Game Boy engine and task.py what a game is to it (start,
templates, reward, counters, milestones, state pool); ram_map.py a game's RAM as named fields;
foraging.py the grid world."""

from __future__ import annotations

from .base import EpisodeStats, VecEnv, check_actions
from .foraging import ForagingEnv
from .gameboy import GameBoyEnv
from .ram_map import RamField, RamMap, load_ram_map
from .task import Counter, Milestone, Pool, Start, Swarm, Task, Template, load_task

# name -> constructor taking keyword arguments (num_envs, device, seed, env-specific options)
ENV_REGISTRY: dict[str, type] = {"foraging": ForagingEnv, "gameboy": GameBoyEnv}


def make_env(name: str, **kwargs) -> VecEnv:
    """Build a registered env; an unknown name is a ValueError listing the known ones."""
    if name not in ENV_REGISTRY:
        raise ValueError(f"unknown env {name!r}; known envs: {', '.join(sorted(ENV_REGISTRY))}")
    return ENV_REGISTRY[name](**kwargs)


__all__ = ["ENV_REGISTRY", "Counter", "EpisodeStats", "ForagingEnv", "GameBoyEnv", "Milestone", "Pool", "RamField",
           "RamMap", "Start", "Swarm", "Task", "Template", "VecEnv", "check_actions", "load_ram_map", "load_task",
           "make_env"]
