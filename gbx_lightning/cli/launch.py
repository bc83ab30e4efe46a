"""Processes: which strategies a run may use, and that every DDP process runs the same run.

DDP (``--trainer.strategy ddp --trainer.devices K``, or torchrun/SLURM): every process runs the whole CLI and
resolves the run directory and checkpoint itself (``runs.resolve_run_dir``), reading the same files: Lightning's
launcher starts ranks 1..K-1 at ``trainer.fit``, and rank 0 writes nothing into the run before the process group
is up (``setup_environment`` waits for every rank), so the ranks choose alike. ``ProcessCheck`` confirms it at
``setup``, the first hook where the ranks can talk (the hook Lightning's ``ModelCheckpoint`` broadcasts its
directory in), and stops every rank in one line where they disagree (e.g. another run of the same name created
a version in between). Rank 0 writes everything; the other ranks write nothing.
"""

from __future__ import annotations

from jsonargparse import Namespace
from lightning.pytorch import Callback, LightningModule, Trainer

from gbx_lightning.checks import ConfigError
from gbx_lightning.cli.runs import RunError

__all__ = ["ProcessCheck", "check_strategy"]

_DDP_STRATEGIES = ("auto", "ddp", "single_device")


def check_strategy(subcommand: str, trainer) -> None:
    """DDP (one process per device, each stepping its own envs) is how a run scales out; other strategies and
    launchers are untested here and refused in one line. ``play`` is one process."""
    strategy = trainer.get("strategy")
    name = strategy.get("class_path", "") if isinstance(strategy, (dict, Namespace)) else strategy
    if not (name is None or name in _DDP_STRATEGIES or str(name).endswith("DDPStrategy")):
        raise ConfigError("trainer.strategy", f"must be auto or ddp (or DDPStrategy with options): each process "
                          f"steps its own envs and DDP all-reduces the gradients, got {name!r}")
    if subcommand == "play":
        for field in ("devices", "num_nodes"):
            if trainer.get(field) not in (1, "1", "auto", None):
                raise ConfigError(f"trainer.{field}", f"must be 1 for play (one process), got {trainer.get(field)}")


class ProcessCheck(Callback):
    """Once the DDP processes exist (``setup``): every rank must have chosen rank 0's run directory and
    checkpoint, and ``--torch_threads`` is applied again (Lightning's DDP launcher sets torch's threads to
    cores // processes after the CLI did)."""

    def __init__(self, run_dir: str, ckpt_path: str | None, torch_threads: int | None):
        self.choice, self.torch_threads = (run_dir, ckpt_path), torch_threads

    def setup(self, trainer: Trainer, pl_module: LightningModule, stage: str) -> None:
        if self.torch_threads:
            import torch

            torch.set_num_threads(self.torch_threads)
        if trainer.world_size == 1:
            return
        rank0 = trainer.strategy.broadcast(self.choice, src=0)
        if not trainer.strategy.reduce_boolean_decision(rank0 == self.choice, all=True):
            raise RunError(f"the processes chose different runs: rank {trainer.global_rank} run directory and "
                           f"checkpoint {self.choice}, rank 0 {rank0}; start every rank in the same directory with "
                           f"the same arguments (and --version N to name the run)")
