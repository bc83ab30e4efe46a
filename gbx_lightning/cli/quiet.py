"""Startup noise that says nothing about the run: Lightning's cloud-logger tip, Warp's banner, and Warp's
"Could not find or load the NVIDIA CUDA driver" on machines that have no CUDA driver.

The last is printed by Warp's native library straight to file descriptor 2 while it initialises (no Python
logger or warning to filter), so ``hide_fd2_while`` points fd 2 at /dev/null for that call only; init
failures still raise. It is the one place the CLI touches a file descriptor.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys

__all__ = ["quiet_startup"]

_LIGHTNING_LOGGERS = ("lightning.fabric.utilities.rank_zero", "lightning.pytorch.utilities.rank_zero",
                      "lightning_utilities.core.rank_zero")


class _DropTips(logging.Filter):
    """Lightning's advertisement for its cloud logger, printed by every run."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "litlogger" not in record.getMessage()


def quiet_startup() -> None:
    """Drop Lightning's litlogger tip, Warp's banner and per-module chatter, and Warp's CUDA-driver warning
    where there is no driver to find."""
    for name in _LIGHTNING_LOGGERS:
        logging.getLogger(name).addFilter(_DropTips())
    import warp as wp

    wp.config.quiet = True  # no init banner
    wp.config.log_level = wp.LOG_WARNING  # no per-module load chatter
    if sys.platform.startswith("linux") and not _cuda_driver_present():
        with hide_fd2_while():
            wp.init()


@contextlib.contextmanager
def hide_fd2_while():
    """File descriptor 2 (what native code writes to) goes to /dev/null inside the block, and comes back after."""
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as devnull:
            os.dup2(devnull.fileno(), 2)
            yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def _cuda_driver_present() -> bool:
    import ctypes

    for lib in ("libcuda.so.1", "libcuda.so"):
        try:
            ctypes.CDLL(lib)
            return True
        except OSError:
            continue
    return False
