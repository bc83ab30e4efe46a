"""The vector-env protocol the trainer consumes, plus argument checks and on-device episode statistics.

Every env here is a batch of `num_envs` independent environments living on one device. `step`
auto-resets ended envs, so the trainer never branches on episode ends (and never syncs the host).
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import torch

from gbx_lightning.checks import number_problem


@runtime_checkable
class VecEnv(Protocol):
    """A batch of environments stepped together; all tensors live on `device`.

    reset(seed)  -> obs [N, *obs_shape] of obs_dtype. seed=None continues the current RNG streams.
    step(actions int32 [N]) -> (obs, reward f32[N], terminated bool[N], truncated bool[N], info)
        `obs` is what the agent acts on next: for an env whose episode ended at this step it is the
        first observation of the new episode. info["final_obs"] is the true s' of every env (== obs
        where nothing ended); bootstrap value targets from V(final_obs). For ended episodes
        info["episode_return"] f32[N], info["episode_length"] int32[N], info["success"] bool[N] hold
        that episode's stats (0/False where none ended). Terminated = the MDP ended (no bootstrap);
        truncated = time limit (bootstrap from V(final_obs)). Never both.
    state_dict() / load_state_dict(d) -> everything needed for a restored env to continue identically.

    Optional members (``VecEnvExtras``): the trainer looks for them with ``getattr`` and does without.
    """

    num_envs: int
    num_actions: int
    obs_shape: tuple[int, ...]
    obs_dtype: torch.dtype
    device: torch.device

    def reset(self, seed: int | None = None) -> torch.Tensor: ...

    def step(
        self, actions: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, dict[str, torch.Tensor]]: ...

    def state_dict(self) -> dict[str, Any]: ...

    def load_state_dict(self, state: dict[str, Any]) -> None: ...


class VecEnvBase:
    """What an env class derives from so that a config can name it: ``model.env: {class_path: ..., init_args:
    {...}}`` is checked by the parser against the module's ``EnvFactory`` type, whose return type must be a
    class (a ``Protocol`` such as ``VecEnv`` cannot be checked against a class path). No behaviour: ``VecEnv``
    says what an env does. The constructor takes ``(num_envs, device, *, options...)``: the module supplies the
    first two, the config the options."""


@runtime_checkable
class VecEnvExtras(Protocol):
    """What an env may offer beyond VecEnv; ``data.RolloutStream`` and the callbacks probe each with ``getattr``
    and do without (ForagingEnv has ``observe``; GameBoyEnv all five).

    observe() -> obs: the current observation (after ``load_state_dict``): a checkpoint need not store it.
    state_nbytes: bytes of ``state_dict()``'s tensors, told without building it (the checkpoint size cap).
    reward_pipeline: a ``reward_transforms.RewardPipeline``; its ``state_dict(per_env=False)`` (e.g. a return
        normaliser's statistic) is kept when a checkpoint leaves the env state out.
    rom_sha256: the ROM the env runs (the training log's meta; pixel envs have one).
    state_parts() -> [(what, bytes)]: ``state_dict``'s parts, named for a line saying what a checkpoint that leaves
        the env state out loses (GameBoyEnv: the machines, then each feature's).
    """

    state_nbytes: int
    reward_pipeline: Any
    rom_sha256: str

    def observe(self) -> torch.Tensor: ...


class OptionError(ValueError):
    """A bad env option, found by an env's cheap ``check_options`` before anything is built.

    ``option`` is the keyword (e.g. "goal"); the message reads after it ("goal does not exist: ...").
    """

    def __init__(self, option: str, message: str):
        super().__init__(f"{option} {message}")
        self.option, self.message = option, message


class StateError(ValueError):
    """An env state (a checkpoint's) that this env cannot load: another layout version, env or task. The CLI
    reports it in one line; the message says what does not fit and what to do."""


def resolve_device(device: str | torch.device) -> torch.device:
    """"cpu", "cuda" or "cuda:K" -> a torch.device with an explicit index for CUDA (so comparisons are exact)."""
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as err:
        raise ValueError(f"device must be 'cpu' or 'cuda[:K]', got {device!r}") from err
    if dev.type == "cpu":
        return torch.device("cpu")
    if dev.type != "cuda":
        raise ValueError(f"device must be 'cpu' or 'cuda[:K]', got {device!r}")
    if not torch.cuda.is_available():
        raise ValueError(f"device {device!r} requested but torch sees no CUDA device; use device='cpu'")
    index = torch.cuda.current_device() if dev.index is None else dev.index
    if index >= torch.cuda.device_count():
        raise ValueError(f"device {device!r}: only {torch.cuda.device_count()} CUDA device(s) visible")
    return torch.device("cuda", index)


def check_int(name: str, value, minimum: int | None = None, maximum: int | None = None) -> int:
    """An int (not bool) within [minimum, maximum]; the message names the argument, the bounds and the value
    (gbx_lightning.checks words it, as for every argument of the package)."""
    problem = number_problem(value, low=minimum, high=maximum, integer=True)
    if problem is not None:
        wrong_type = isinstance(value, bool) or not isinstance(value, int)
        raise (TypeError if wrong_type else ValueError)(f"{name} {problem}")
    return value


def check_float(name: str, value, minimum: float | None = None, maximum: float | None = None,
                strict_min: bool = False) -> float:
    """A finite real number within bounds (`strict_min`: value must be > minimum)."""
    problem = number_problem(value, low=minimum, high=maximum, low_open=strict_min)
    if problem is not None:
        wrong_type = isinstance(value, bool) or not isinstance(value, (int, float)) or value != value
        raise (TypeError if wrong_type else ValueError)(f"{name} {problem}")
    return float(value)


def check_int_range(name: str, value, minimum: int = 0) -> tuple[int, int]:
    """A (low, high) pair of ints with minimum <= low <= high (both inclusive)."""
    if (not isinstance(value, (tuple, list)) or len(value) != 2
            or any(isinstance(v, bool) or not isinstance(v, int) for v in value)):
        raise TypeError(f"{name} must be a pair of ints (low, high), got {value!r}")
    low, high = value
    if not minimum <= low <= high:
        raise ValueError(f"{name} must satisfy {minimum} <= low <= high, got {tuple(value)}")
    return int(low), int(high)


def check_actions(actions, num_envs: int, device: torch.device, fn: str = "step") -> None:
    """Type, dtype, shape and device of a batch of discrete actions (no host sync: the range is the env's job)."""
    if not isinstance(actions, torch.Tensor):
        raise TypeError(f"{fn}: actions must be a torch.Tensor of dtype torch.int32 and shape [N]=[{num_envs}], "
                        f"got {type(actions).__name__}")
    if actions.dtype != torch.int32:
        raise TypeError(f"{fn}: actions must have dtype torch.int32, got {actions.dtype} "
                        f"(convert with actions.to(torch.int32))")
    if tuple(actions.shape) != (num_envs,):
        raise ValueError(f"{fn}: actions must have shape [N]=[{num_envs}], got {list(actions.shape)}")
    if actions.device != device:
        raise ValueError(f"{fn}: actions must be on the env's device {device}, got {actions.device}")


class EpisodeStats:
    """Running return and length per env, kept on device; reports them for episodes that end.

    update() returns fresh tensors (0 where no episode ended) and zeroes the finished envs' running
    sums, all with tensor ops: no host sync, no Python loop over envs. For envs whose step is not a
    single kernel (GameBoyEnv); ForagingEnv keeps the same sums inside its step kernel.
    """

    def __init__(self, num_envs: int, device: torch.device):
        self.running_return = torch.zeros(num_envs, dtype=torch.float32, device=device)
        self.running_length = torch.zeros(num_envs, dtype=torch.int32, device=device)

    def reset(self) -> None:
        self.running_return.zero_()
        self.running_length.zero_()

    def update(self, reward: torch.Tensor, terminated: torch.Tensor,
               truncated: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Add one step; return (episode_return f32[N], episode_length int32[N]) of the episodes ended now."""
        self.running_return += reward
        self.running_length += 1
        done = terminated | truncated
        episode_return = torch.where(done, self.running_return, 0.0)
        episode_length = torch.where(done, self.running_length, 0)
        self.running_return.masked_fill_(done, 0.0)
        self.running_length.masked_fill_(done, 0)
        return episode_return, episode_length

    def state_dict(self) -> dict[str, torch.Tensor]:
        return {"running_return": self.running_return.cpu().clone(),
                "running_length": self.running_length.cpu().clone()}

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        for key in ("running_return", "running_length"):
            dst = getattr(self, key)
            src = state[key]
            if tuple(src.shape) != tuple(dst.shape) or src.dtype != dst.dtype:
                raise ValueError(f"EpisodeStats.load_state_dict: {key} must be {dst.dtype} of shape "
                                 f"{list(dst.shape)}, got {src.dtype} of shape {list(src.shape)}")
            dst.copy_(src)
