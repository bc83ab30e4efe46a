"""``keep_freed_memory``: the C library keeps the memory of freed tensors for the next ones, instead of returning it
to the OS and faulting it back in (what ``fit`` does on a CPU, once per process).

An update allocates and frees the same large tensors again and again (at the Pokemon configs' sizes a PPO minibatch
of 2,048 stacks is 188 MB as floats, the rollout's observations 189 MB twice). glibc serves a block above its mmap
threshold (at most 32 MB by default) with a fresh mmap and unmaps it when it is freed, so the next one starts as
untouched pages and the kernel faults and zeroes each 4 KiB page on first touch: 188 MB allocated and filled took
135-150 ms that way against 19-25 ms in reused memory (2-core development machine). Raising the mmap threshold and
the trim threshold makes glibc serve such blocks from its heap and keep them when they are freed. The process then
holds on to its peak heap: an update reaches that peak every rollout anyway. Not glibc (musl, macOS, Windows):
nothing changes.

``ReusedTensors``: tensors too large for that (above glibc's 32 MB mmap ceiling, where the thresholds above do not
reach: a minibatch's float pixels at the Pokemon configs' sizes, 94 MB) kept by their user and written again each
call instead of allocated anew.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import math

import torch

__all__ = ["keep_freed_memory", "ReusedTensors"]

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3   # glibc's malloc.h
MMAP_THRESHOLD = 1 << 30    # blocks up to 1 GiB come from the heap (and are kept there when freed)
TRIM_THRESHOLD = (1 << 31) - 1   # free memory at the heap's top goes back to the OS only above 2 GiB (an int)


@functools.lru_cache(maxsize=1)
def keep_freed_memory() -> bool:
    """Tell glibc to keep freed heap memory (thresholds above); True if it took both settings. Once per process."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))


class ReusedTensors:
    """Named scratch tensors that a caller writes in full on every call (``out=``): ``get(name, shape, dtype,
    device)`` returns a contiguous tensor of that shape over memory kept from the previous calls, grown when a
    larger one is asked for. One set per grad mode, so that acting (no gradient) never writes what an update's
    graph holds.

    Why: the 94 MB float copy of a PPO minibatch's pixels, allocated anew per minibatch, was page-faulted in anew
    each time (glibc maps blocks above 32 MB and unmaps them when freed, whatever ``keep_freed_memory`` asks):
    about a third of the update's CPU time at the Pokemon configs' sizes (``tools/bench_trainer.py``). Safe to
    reuse: autograd counts in-place writes, so a tensor written again while a graph still holds it for its
    backward makes that backward raise, never compute silently from the new values. Not copied with its owner
    (``copy.deepcopy``, pickling): a copy starts empty."""

    def __init__(self) -> None:
        self._flat: dict[tuple, torch.Tensor] = {}

    def get(self, name: str, shape: tuple[int, ...] | torch.Size, dtype: torch.dtype,
            device: torch.device | str) -> torch.Tensor:
        key = (name, torch.is_grad_enabled(), torch.is_inference_mode_enabled())
        numel = math.prod(shape)
        flat = self._flat.get(key)
        if flat is None or flat.numel() < numel or flat.dtype != dtype or flat.device != torch.device(device):
            flat = self._flat[key] = torch.empty(numel, dtype=dtype, device=device)
        return flat[:numel].view(shape)

    def __deepcopy__(self, memo) -> "ReusedTensors":
        return ReusedTensors()

    def __getstate__(self) -> dict:
        return {}

    def __setstate__(self, state: dict) -> None:
        self._flat = {}
