"""Building what an algorithm trains on from its hyper-parameters: the env (on the device ``env_device`` picks, behind
the hybrid-mode bridge where the learner is elsewhere) and the policy sized by the env. A value the env or the
policy rejects is a one-line ``ConfigError`` naming the config field, not a traceback from inside ``fit``."""

from __future__ import annotations

import inspect
import os
from typing import Any

import torch
from torch import nn

from gbx_lightning.algos.config import ConfigError, env_registry
from gbx_lightning.models import make_policy

__all__ = ["GPU_ENVS_PER_CORE", "build_env", "build_policy", "cores_per_process", "pick_env_device"]

# what a bad config value raises where an env or a policy is built from it (huge sizes: MemoryError, OverflowError,
# or torch's RuntimeError "can't allocate memory")
_BAD_VALUE = (ValueError, TypeError, FileNotFoundError, OverflowError, MemoryError, RuntimeError)


def _is_bad_value(err: BaseException) -> bool:
    return not isinstance(err, RuntimeError) or "allocat" in str(err) or "out of memory" in str(err)


def _one_line(err: BaseException) -> str:
    text = " ".join(str(err).split())
    return text if len(text) <= 300 else text[:300] + "..."


def cores_per_process(trainer=None) -> int:
    """CPU cores each training process may use: this process's cores (``os.sched_getaffinity``) over the DDP
    processes on this node, Lightning's own rule for torch's threads (it sets ``cores // processes`` unless
    OMP_NUM_THREADS is set); all of them with one process."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    local = getattr(trainer.strategy, "num_processes", 1) if trainer is not None else 1
    return max(1, cores // max(1, int(local)))


# env_device "auto" emulates on the GPU from this many envs per CPU core of the process. Measured on an H100 with 16
# cores (docs/gpu.md): one step of the GPU emulator takes ~0.17 s whatever the env count below saturation (a GPU
# thread runs one Game Boy ~25x slower than a CPU core), so it needs thousands of envs to pay; PPO fit on the built-in
# game: GPU emulator 23.5k env steps/s at 4,096 envs and 70k at 16,384, hybrid mode on 16 cores 40k at both.
GPU_ENVS_PER_CORE = 512


def pick_env_device(setting: str, learner: torch.device, num_envs: int, cores: int) -> torch.device:
    """Where ``num_envs`` envs run for a learner on ``learner`` (see ``RLModule``'s ``env_device``)."""
    if learner.type == "cpu" or setting == "cpu":
        if setting == "gpu":
            raise ConfigError("model.env_device", "is gpu, but the Trainer runs on the CPU (trainer.accelerator)")
        return torch.device("cpu")
    if setting == "gpu" or num_envs >= GPU_ENVS_PER_CORE * cores:
        return learner
    return torch.device("cpu")


def build_env(hp: dict[str, Any], num_envs: int, trainer=None):
    """``num_envs`` envs of ``hp["env"]`` for a learner on the Trainer's device (the CPU without a Trainer)."""
    from gbx_lightning.envs import make_env

    learner = trainer.strategy.root_device if trainer is not None else torch.device("cpu")
    setting = hp.get("env_device", "auto")
    device = pick_env_device(setting, learner, num_envs, cores_per_process(trainer))
    options = dict(hp["env_kwargs"] or {})
    threads = inspect.signature(env_registry()[hp["env"]]).parameters.get("cpu_threads")
    if device.type == "cpu" and "cpu_threads" not in options and threads is not None and threads.default is None:
        # an env whose default is "every core" (GameBoyEnv) gets this process's share: K DDP processes on a
        # node would otherwise each start one launch thread per core
        options["cpu_threads"] = cores_per_process(trainer)
    try:
        env = make_env(hp["env"], num_envs=num_envs, device=device, **options)
    except _BAD_VALUE as err:
        if not _is_bad_value(err):
            raise
        # a bad option value or file: one line naming the config field, not a traceback from inside fit
        raise ConfigError("model.env_kwargs", f"rejected by {hp['env']}: {_one_line(err)}") from err
    if device == learner and setting != "cpu":
        return env
    from gbx_lightning.envs.bridge import DeviceBridge

    # hybrid mode; env_device "cpu" on a CPU Trainer also goes through it (the same copies, same results)
    return DeviceBridge(env, learner)


def build_policy(hp: dict[str, Any], env) -> nn.Module:
    """The policy ``hp["policy"]`` sized by ``env`` (its observation shape and number of actions)."""
    try:
        return make_policy(hp["policy"], env.obs_shape, int(env.num_actions), **(hp["policy_kwargs"] or {}))
    except _BAD_VALUE as err:  # e.g. hidden: 3 where a list of widths is wanted
        if not _is_bad_value(err):
            raise
        raise ConfigError("model.policy_kwargs", f"rejected by {hp['policy']}: "
                          f"{type(err).__name__}: {_one_line(err)}") from err
