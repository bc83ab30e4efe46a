"""Argument checks shared by the loss functions: fail early, name the argument, say expected and got."""

from __future__ import annotations

import torch

FLOAT = "floating point"


def check_tensor(fn: str, name: str, t, shape: tuple, dims: str, dtypes, device: torch.device | None) -> None:
    """Raise if `t` is not a tensor of `shape` (written as `dims`, e.g. "[T, N]"), one of `dtypes`, on `device`.

    `dtypes` is a tuple of torch dtypes or the string FLOAT (any floating point dtype).
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


def check_unit_interval(fn: str, name: str, x) -> None:
    """Discount and trace factors live in [0, 1]."""
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not 0.0 <= float(x) <= 1.0:
        raise ValueError(f"{fn}: {name} must be a number in [0, 1], got {x!r}")


def check_nonnegative(fn: str, name: str, x) -> None:
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not float(x) >= 0.0:
        raise ValueError(f"{fn}: {name} must be a number >= 0, got {x!r}")
