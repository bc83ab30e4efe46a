"""Hyper-parameter checks: a bad value is a one-line ``ConfigError`` naming the field, found before anything is built
(the CLI calls ``check_config`` before it instantiates the module; the module calls it again in ``__init__``)."""

from __future__ import annotations

import inspect
from typing import Any

from gbx_lightning.checks import ConfigError, number_problem
from gbx_lightning.models import POLICY_REGISTRY
from gbx_lightning.rl.normalize import sample_transform_problem

__all__ = ["ConfigError", "check_common", "episode_limit", "require", "require_number", "yaml_values"]


ENV_DEVICES = ("auto", "cpu", "gpu")


def env_registry() -> dict:
    from gbx_lightning.envs import ENV_REGISTRY

    return ENV_REGISTRY


def require(ok: bool, field: str, expected: str, got) -> None:
    if not ok:
        raise ConfigError(field, f"must be {expected}, got {got!r}")


def require_number(field: str, value, **bounds) -> None:
    """ConfigError(field, "must be a number in (0, 1], got 1.5") when ``checks.number_problem`` finds one."""
    problem = number_problem(value, **bounds)
    if problem is not None:
        raise ConfigError(field, problem)


def yaml_values(options: dict | None) -> dict | None:
    """Entries given on the command line one by one (``--model.init_args.env_kwargs.level 3``) arrive as
    strings; read those that are YAML numbers, booleans, null or lists as such ("3" -> 3, "[8, 16]" ->
    [8, 16]); other strings (paths, names) stay strings."""
    if not isinstance(options, dict):
        return options
    import yaml

    out = {}
    for key, value in options.items():
        if isinstance(value, str) and value.strip():   # "" stays "" (e.g. GameBoyEnv's fail: "" = no fail template)
            try:
                parsed = yaml.safe_load(value)
            except yaml.YAMLError:
                parsed = value
            if parsed is None or isinstance(parsed, (bool, int, float, list)):
                value = parsed
        out[key] = value
    return out


def _check_option_names(field: str, target, options: dict | None, reserved: tuple[str, ...]) -> None:
    """Every key of ``options`` must be a keyword of ``target``'s constructor (a typo is a one-line error)."""
    params = inspect.signature(target).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return
    known = sorted(k for k in params if k not in reserved)
    for key in options or {}:
        if key not in params:
            raise ConfigError(f"{field}.{key}", f"is not an option of {target.__name__}; options: {', '.join(known)}")


def check_common(hp: dict[str, Any], sample_transform_names: tuple[str, ...]) -> None:
    """The arguments every algorithm takes (``RLModule``'s), and ``sample_transforms`` where the algorithm has it."""
    reg = env_registry()
    require(isinstance(hp.get("env"), str) and hp["env"] in reg, "env", f"one of {sorted(reg)}", hp.get("env"))
    require(isinstance(hp.get("policy"), str) and hp["policy"] in POLICY_REGISTRY, "policy",
            f"one of {sorted(POLICY_REGISTRY)}", hp.get("policy"))
    require(hp.get("env_kwargs") is None or isinstance(hp["env_kwargs"], dict), "env_kwargs", "a mapping",
            hp.get("env_kwargs"))
    for reserved in ("num_envs", "device"):
        require(reserved not in (hp.get("env_kwargs") or {}), f"env_kwargs.{reserved}",
                f"absent (set model.{reserved} instead)" if reserved == "num_envs" else "absent (the Trainer's "
                "accelerator picks the device)", (hp.get("env_kwargs") or {}).get(reserved))
    require(hp.get("policy_kwargs") is None or isinstance(hp["policy_kwargs"], dict), "policy_kwargs",
            "a mapping", hp.get("policy_kwargs"))
    _check_option_names("env_kwargs", reg[hp["env"]], hp.get("env_kwargs"), ("num_envs", "device"))
    check_options = getattr(reg[hp["env"]], "check_options", None)
    if check_options is not None:   # files and values, cheaply, before anything is built
        from gbx_lightning.envs.base import OptionError

        try:
            check_options(**yaml_values(hp.get("env_kwargs") or {}))
        except OptionError as err:
            raise ConfigError(f"env_kwargs.{err.option}", err.message) from None
    _check_option_names("policy_kwargs", POLICY_REGISTRY[hp["policy"]], hp.get("policy_kwargs"),
                        ("obs_shape", "num_actions"))
    require_number("gamma", hp.get("gamma"), low=0, high=1, low_open=True)
    require_number("lr", hp.get("lr"), low=0, low_open=True)
    require_number("num_envs", hp.get("num_envs"), low=1, integer=True)
    require(hp.get("env_device", "auto") in ENV_DEVICES, "env_device", f"one of {', '.join(ENV_DEVICES)}",
            hp.get("env_device"))
    require_number("max_grad_norm", hp.get("max_grad_norm"), low=0, low_open=True, none="null")
    for name in ("value_coef", "entropy_coef"):
        require_number(name, hp.get(name), low=0)
    require_number("adam_eps", hp.get("adam_eps"), low=0, low_open=True)
    require_number("seed", hp.get("seed"), integer=True, none="null")
    require_number("eval_episodes", hp.get("eval_episodes"), low=1, integer=True)
    transforms = hp.get("sample_transforms")
    require(transforms is None or isinstance(transforms, (list, tuple)), "sample_transforms",
            "a list of {name: ..., per: batch | env} items or null", transforms)
    for i, item in enumerate(transforms or ()):
        problem = sample_transform_problem(item, sample_transform_names)
        if problem is not None:
            raise ConfigError(f"sample_transforms[{i}]{problem[0]}", problem[1])


def episode_limit(hp: dict) -> int | None:
    """The env's time limit in steps (its ``max_steps`` option, given or default), or None if it has none."""
    param = inspect.signature(env_registry()[hp["env"]]).parameters.get("max_steps")
    if param is None:
        return None
    limit = (yaml_values(hp.get("env_kwargs")) or {}).get("max_steps", param.default)
    return limit if isinstance(limit, int) and not isinstance(limit, bool) else None
