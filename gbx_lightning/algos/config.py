"""Hyper-parameter checks the parser cannot make: a value out of range, a file an env needs, a rule across fields.
Names and types are the parser's (each ``__init__``'s annotations); a bad value here is a one-line ``ConfigError``
naming the field, found before anything is built (the CLI calls ``check_config`` before it instantiates the
module; the module calls it again in ``__init__``)."""

from __future__ import annotations

from typing import Any

from gbx_lightning.algos.build import check_env, env_option
from gbx_lightning.checks import ConfigError, number_problem
from gbx_lightning.rl.normalize import sample_transform_problem

__all__ = ["ConfigError", "check_common", "episode_limit", "old_layout_problem", "require", "require_number"]


def require(ok: bool, field: str, expected: str, got) -> None:
    if not ok:
        raise ConfigError(field, f"must be {expected}, got {got!r}")


def require_number(field: str, value, **bounds) -> None:
    """ConfigError(field, "must be a number in (0, 1], got 1.5") when ``checks.number_problem`` finds one."""
    problem = number_problem(value, **bounds)
    if problem is not None:
        raise ConfigError(field, problem)


def check_common(hp: dict[str, Any], sample_transform_names: tuple[str, ...]) -> None:
    """The arguments every algorithm takes (``RLModule``'s), and ``sample_transforms`` where the algorithm has it."""
    check_env(hp.get("env"))   # files and values, cheaply, before anything is built
    require_number("gamma", hp.get("gamma"), low=0, high=1, low_open=True)
    require_number("lr", hp.get("lr"), low=0, low_open=True)
    require_number("num_envs", hp.get("num_envs"), low=1, integer=True)
    require_number("max_grad_norm", hp.get("max_grad_norm"), low=0, low_open=True, none="null")
    for name in ("value_coef", "entropy_coef"):
        require_number(name, hp.get(name), low=0)
    require_number("adam_eps", hp.get("adam_eps"), low=0, low_open=True)
    require_number("seed", hp.get("seed"), integer=True, none="null")
    require_number("eval_episodes", hp.get("eval_episodes"), low=1, integer=True)
    for i, item in enumerate(hp.get("sample_transforms") or ()):
        problem = sample_transform_problem(item, sample_transform_names)
        if problem is not None:
            raise ConfigError(f"sample_transforms[{i}]{problem[0]}", problem[1])


def episode_limit(hp: dict) -> int | None:
    """The env's time limit in steps (its ``max_steps`` option, given or default), or None if it has none."""
    limit = env_option(hp.get("env"), "max_steps")
    return limit if isinstance(limit, int) and not isinstance(limit, bool) else None


def old_layout_problem(hparams: dict) -> str | None:
    """What changed, when ``hparams`` (a config's model init args, or a checkpoint's hyper-parameters) are of the
    layout before env and policy were class_path specs (``env: gameboy`` with ``env_kwargs``), spelt in the new
    one with their own values; else None."""
    old = [key for key in ("env", "env_kwargs", "policy", "policy_kwargs")
           if key.endswith("_kwargs") and key in hparams or isinstance(hparams.get(key), str)]
    if not old:
        return None
    new = {}
    for key, names, package in (("env", _OLD_ENVS, "gbx_lightning.envs"),
                                ("policy", _OLD_POLICIES, "gbx_lightning.models")):
        if key in old or f"{key}_kwargs" in old:
            value = hparams.get(key)
            class_path = (value.get("class_path") if isinstance(value, dict) else
                          f"{package}.{names.get(str(value), names[None])}")
            new[key] = _spec(class_path, hparams.get(f"{key}_kwargs"))
    return (f"is in the old config layout ({', '.join(old)}): env and policy are class_path specs now; "
            f"here: {_flow(new)} (configs/*.yaml, docs/training.md)")


_OLD_ENVS = {"gameboy": "GameBoyEnv", "foraging": "ForagingEnv", None: "GameBoyEnv"}
_OLD_POLICIES = {"mlp": "MLPPolicy", "cnn": "GridCNNPolicy", "pixel_cnn": "PixelCNNPolicy",
                 "nature_cnn": "NatureCNNPolicy", "impala_cnn": "ImpalaCNNPolicy", None: "PixelCNNPolicy"}


def _spec(class_path: str, options) -> dict:
    return {"class_path": class_path, **({"init_args": options} if isinstance(options, dict) and options else {})}


def _flow(value) -> str:
    """``value`` as one line of YAML (flow style), ready to paste into a config."""
    import yaml

    try:
        return yaml.safe_dump(value, default_flow_style=True, sort_keys=False, width=10 ** 6).strip()
    except yaml.YAMLError:
        return repr(value)
