"""One line when the policy's first update compiles (``compile_update: true``), and one with how long it took: the
progress bar stands still meanwhile, and a user should not take ~30 s of torch.compile for a hang."""
from __future__ import annotations

import sys

from lightning.pytorch import Callback

__all__ = ["CompileNotice"]


class CompileNotice(Callback):
    """Says on stderr when the policy's first update compiles (``compile_update: true``: torch.compile, ~30 s on a
    CPU, once per process, the progress bar standing still meanwhile) and how long it took; rank 0 only."""

    def __init__(self) -> None:
        self._compiling = False

    def on_train_start(self, trainer, pl_module) -> None:
        policy = getattr(pl_module, "policy", None)
        self._compiling = (trainer.is_global_zero and getattr(policy, "compile_update", False) is True
                           and getattr(policy, "_compiled_evaluate", None) is None)

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
        if self._compiling:
            print("compiling the update with torch.compile (compile_update: true; the first update only, ~30 s on a "
                  "CPU)", file=sys.stderr, flush=True)

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        if self._compiling:
            self._compiling = False
            seconds = getattr(pl_module.policy, "compile_seconds", None)
            if seconds is not None:
                print(f"compiled the update in {seconds:.0f} s (its first run included)", file=sys.stderr, flush=True)
