"""Argument checks, one set for the package's own layers (rl losses, module config, CLI): fail early,
name the argument, say what was expected and what came.

``number_problem`` returns the complaint ("must be a number in (0, 1], got 1.5") so that each
caller raises it in its own voice: the loss functions as ``ValueError("gae: lam must be ...")``,
the config check as ``ConfigError("model.gamma", ...)``.
"""

from __future__ import annotations

import math

import torch

__all__ = ["FLOAT", "ConfigError", "available_memory", "check_number", "check_tensor", "number_problem"]

FLOAT = "floating point"


class ConfigError(ValueError):
    """A bad config value, found before anything is built: the CLI prints ``config error: <field> <message>``
    in one line (exit status 2). ``field`` is the config key (``model.`` left out for the module's own
    arguments, as the algorithms raise them: ``gamma``; the CLI adds it)."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field} {message}")
        self.field, self.message = field, message


def number_problem(value, *, low=None, high=None, low_open: bool = False, integer: bool = False,
                   none: str | None = None) -> str | None:
    """None if ``value`` is a finite number (an int if ``integer``; not a bool) within ``low``/``high``
    (``low_open``: strictly above ``low``), or None when ``none`` names what None is called
    ("None", "null"); otherwise the complaint, e.g. "must be a number in (0, 1], got 1.5"."""
    if value is None and none is not None:
        return None
    kind = "an int" if integer else "a number"
    if low is not None and high is not None:
        bound = f" in {'(' if low_open else '['}{low}, {high}]"
    elif low is not None:
        bound = f" {'>' if low_open else '>='} {low}"
    elif high is not None:
        bound = f" <= {high}"
    else:
        bound = ""
    expected = f"must be {kind}{bound}" + (f" or {none}" if none is not None else "")
    ok_type = int if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, ok_type) or not math.isfinite(value):
        return f"{expected}, got {value!r}"
    if low is not None and (value <= low if low_open else value < low) or high is not None and value > high:
        return f"{expected}, got {value!r}"
    return None


def check_number(fn: str, name: str, value, **bounds) -> None:
    """Raise ValueError("fn: name must be ..., got ...") if ``number_problem`` finds one."""
    problem = number_problem(value, **bounds)
    if problem is not None:
        raise ValueError(f"{fn}: {name} {problem}")


def check_tensor(fn: str, name: str, t, shape: tuple, dims: str, dtypes, device: torch.device | None) -> None:
    """Raise if `t` is not a tensor of `shape` (written as `dims`, e.g. "[T, N]"), one of `dtypes`, on `device`.

    `dtypes` is a tuple of torch dtypes or the string FLOAT (any floating point dtype). Python attribute
    reads only: no host sync, so it is cheap enough for every call of a loss.
    """
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{fn}: {name} must be a torch.Tensor, got {type(t).__name__}")
    if tuple(t.shape) != tuple(shape):
        raise ValueError(f"{fn}: {name} must have shape {dims}={list(shape)}, got {list(t.shape)}")
    if dtypes == FLOAT:
        if not t.is_floating_point():
            raise TypeError(f"{fn}: {name} must have a floating point dtype, got {t.dtype}")
    elif t.dtype not in dtypes:
        want = " or ".join(str(d) for d in dtypes)
        raise TypeError(f"{fn}: {name} must have dtype {want}, got {t.dtype}")
    if device is not None and t.device != device:
        raise ValueError(f"{fn}: {name} must be on device {device} (like the first argument), got {t.device}")


def available_memory(device: torch.device) -> int | None:
    """Bytes that can still be allocated on ``device`` (CUDA: free device memory; CPU: the kernel's MemAvailable),
    or None where that cannot be told. For refusing a size that cannot fit before allocating it."""
    if device.type == "cuda":
        return int(torch.cuda.mem_get_info(device)[0])
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None
