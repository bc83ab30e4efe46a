"""Torch-facing vector envs. A config names one by class (``model.env: {class_path: gbx_lightning.envs.GameBoyEnv,
init_args: {...}}``); ``make_env(name, **kwargs)`` builds one by a short name (tools, tests).

base.py the VecEnv protocol; gameboy.py the Game Boy engine and task.py what a game is to it (start,
templates, reward, counters, milestones, state pool); features/ each thing a task switches on, one file each
(templates, ram_goal, heatmap, milestones, curriculum, pool, obs, reward, counters); ram_map.py a game's RAM as
named fields; foraging.py the grid world."""

from __future__ import annotations

from .base import EpisodeStats, VecEnv, VecEnvBase, check_actions
from .foraging import ForagingEnv
from .gameboy import GameBoyEnv
from .ram_map import RamField, RamMap, load_ram_map
from .task import Counter, Milestone, Pool, RamGoal, Start, Swarm, Task, Template, load_task

# short names for tools and tests (configs name the class: model.env.class_path); name -> constructor
ENV_REGISTRY: dict[str, type] = {"foraging": ForagingEnv, "gameboy": GameBoyEnv}


def make_env(name: str, **kwargs) -> VecEnv:
    """Build a registered env; an unknown name is a ValueError listing the known ones."""
    if name not in ENV_REGISTRY:
        raise ValueError(f"unknown env {name!r}; known envs: {', '.join(sorted(ENV_REGISTRY))}")
    return ENV_REGISTRY[name](**kwargs)


__all__ = ["ENV_REGISTRY", "Counter", "EpisodeStats", "ForagingEnv", "GameBoyEnv", "Milestone", "Pool", "RamField", "RamGoal",
           "RamMap", "Start", "Swarm", "Task", "Template", "VecEnv", "VecEnvBase", "check_actions", "load_ram_map",
           "load_task", "make_env"]
