"""What an algorithm trains on: the env and the policy, each given as a factory the config names by class.

A config says ``env: {class_path: gbx_lightning.envs.GameBoyEnv, init_args: {task: orchard/level1, ...}}`` and
``policy: {class_path: gbx_lightning.models.PixelCNNPolicy, init_args: {hidden: 256}}``; the parser checks the
class and every init arg's name and type against its signature and hands the module a factory (Lightning's
pattern for optimizers) that the module calls with what only it knows: ``env(num_envs, device)`` on the device
``env_device`` picks (behind the hybrid-mode bridge where the learner is elsewhere), ``policy(obs_shape,
num_actions)`` sized by the env. In Python, a class or a ``functools.partial`` of one is such a factory:
``PPOModule(env=partial(ForagingEnv, max_steps=50), policy=MLPPolicy)``.

A value the env or the policy rejects when built is a one-line ``ConfigError`` naming the config field, not a
traceback from inside ``fit``; the checks an env can make without building anything run before (``check_env``).
"""

from __future__ import annotations

import functools
import importlib
import inspect
import os
from collections.abc import Mapping
from typing import Any, Callable

import torch
from torch import nn

from gbx_lightning.checks import ConfigError
from gbx_lightning.envs.base import OptionError, VecEnvBase
from gbx_lightning.models import ActorCritic

__all__ = ["EnvFactory", "GPU_ENVS_PER_CORE", "PolicyFactory", "build_env", "build_policy", "check_env",
           "cores_per_process", "env_option", "factory_parts", "factory_spec", "pick_env_device"]

# what the config's `model.env` and `model.policy` are: the parser makes them from a class_path and init_args
EnvFactory = Callable[[int, torch.device], VecEnvBase]
PolicyFactory = Callable[[tuple[int, ...], int], ActorCritic]

# what a bad config value raises where an env or a policy is built from it (huge sizes: MemoryError, OverflowError,
# or torch's RuntimeError "can't allocate memory")
_BAD_VALUE = (ValueError, TypeError, FileNotFoundError, OverflowError, MemoryError, RuntimeError)


def _is_bad_value(err: BaseException) -> bool:
    return not isinstance(err, RuntimeError) or "allocat" in str(err) or "out of memory" in str(err)


def _one_line(err: BaseException) -> str:
    text = " ".join(str(err).split())
    return text if len(text) <= 300 else text[:300] + "..."


# ---- factories: what class they build, with which options ----------------------------------------------------
def factory_parts(factory) -> tuple[type | None, dict[str, Any]]:
    """(the class ``factory`` builds, the options it was given) for a factory in any of its forms: a config's
    ``{class_path, init_args}`` (parsed, not yet instantiated), a class, a ``functools.partial`` of one (the
    parser's instantiated form is one, with the class among its arguments); (None, {}) for a plain function."""
    if isinstance(factory, Mapping) or hasattr(factory, "class_path"):
        spec = dict(factory.items()) if isinstance(factory, Mapping) else {"class_path": factory.class_path,
                                                                           "init_args": factory.get("init_args")}
        module, _, name = str(spec.get("class_path", "")).rpartition(".")
        try:
            cls = getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError, ValueError):
            return None, {}
        options = spec.get("init_args") or {}
        options = options.as_dict() if hasattr(options, "as_dict") else dict(options)
        return cls, options
    if inspect.isclass(factory):
        return factory, {}
    if isinstance(factory, functools.partial):
        cls = factory.func if inspect.isclass(factory.func) else next(
            (a for a in reversed(factory.args) if inspect.isclass(a)), None)
        return cls, dict(factory.keywords)
    return None, {}


def factory_spec(factory) -> Any:
    """``factory`` as plain data for the hyper-parameters (logs, checkpoints): ``{class_path, init_args}``."""
    if isinstance(factory, Mapping):
        return dict(factory)
    cls, options = factory_parts(factory)
    if cls is None:
        return repr(factory)
    spec = {"class_path": f"{cls.__module__}.{cls.__qualname__}"}
    return {**spec, "init_args": options} if options else spec


def env_option(factory, name: str, default: Any = None) -> Any:
    """An option of the env ``factory`` builds, given or the class's default; ``default`` if it has none."""
    cls, options = factory_parts(factory)
    if name in options:
        return options[name]
    param = inspect.signature(cls).parameters.get(name) if cls is not None else None
    return default if param is None or param.default is param.empty else param.default


def check_env(factory) -> None:
    """The env class's own checks of its options (``check_options``: files, ranges, cross-field rules), run without
    building anything; ConfigError("env.<option>", ...) on the first problem."""
    cls, options = factory_parts(factory)
    check = getattr(cls, "check_options", None)
    if check is None:
        return
    try:
        check(**options)
    except OptionError as err:
        raise ConfigError(f"env.{err.option}", err.message) from None


# ---- where the envs run ----------------------------------------------------------------------------------
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


def build_env(factory: EnvFactory, env_device: str, num_envs: int, trainer=None):
    """``num_envs`` envs from ``factory`` for a learner on the Trainer's device (the CPU without a Trainer)."""
    learner = trainer.strategy.root_device if trainer is not None else torch.device("cpu")
    device = pick_env_device(env_device, learner, num_envs, cores_per_process(trainer))
    cls, options = factory_parts(factory)
    extra = {}
    threads = inspect.signature(cls).parameters.get("cpu_threads") if cls is not None else None
    if device.type == "cpu" and threads is not None and threads.default is None and options.get("cpu_threads") is None:
        # an env whose default is "every core" (GameBoyEnv) gets this process's share: K DDP processes on a
        # node would otherwise each start one launch thread per core
        extra["cpu_threads"] = cores_per_process(trainer)
    try:
        env = factory(num_envs, device, **extra)
    except _BAD_VALUE as err:
        if not _is_bad_value(err):
            raise
        # a bad option value or file: one line naming the config field, not a traceback from inside fit
        name = cls.__name__ if cls is not None else "the env factory"
        raise ConfigError("model.env", f"rejected by {name}: {_one_line(err)}") from err
    if device == learner and env_device != "cpu":
        return env
    from gbx_lightning.envs.bridge import DeviceBridge

    # hybrid mode; env_device "cpu" on a CPU Trainer also goes through it (the same copies, same results)
    return DeviceBridge(env, learner)


def build_policy(factory: PolicyFactory, env) -> nn.Module:
    """The policy from ``factory``, sized by ``env`` (its observation shape and number of actions; ``vector_size``
    too where the env's observation carries a vector beside its pixels: ``obs_vector``, GameBoyEnv's ``obs``)."""
    extra = {}
    vector = int(getattr(env, "obs_vector", 0) or 0)
    if vector:
        cls, _ = factory_parts(factory)
        if cls is not None and "vector_size" not in inspect.signature(cls).parameters:
            raise ConfigError("model.policy", f"{cls.__name__} reads pixels only, but the env's observation carries "
                                              f"{vector} values beside them (model.env.init_args.obs): use "
                                              f"gbx_lightning.models.PixelVectorPolicy, or obs: null")
        extra["vector_size"] = vector
    try:
        return factory(tuple(env.obs_shape), int(env.num_actions), **extra)
    except _BAD_VALUE as err:  # e.g. hidden: 0, or a pixel CNN on a grid observation
        if not _is_bad_value(err):
            raise
        cls, _ = factory_parts(factory)
        name = cls.__name__ if cls is not None else "the policy factory"
        raise ConfigError("model.policy", f"rejected by {name}: {type(err).__name__}: {_one_line(err)}") from err
