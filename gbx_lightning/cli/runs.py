"""Run directories: where a run's files go, which checkpoint a subcommand takes, and what a refused fresh run leaves.

Layout: ``<runs_dir>/<run_name>/version_N/`` (Lightning's own), holding TensorBoard events, ``train.jsonl``,
``config.yaml`` (``RunConfig``), ``clips/`` and ``checkpoints/{last.ckpt, stepNNNNNNNN.ckpt, registry.jsonl,
eval/}``. A fresh ``fit`` takes the next version, so runs of a sweep never collide; ``--ckpt_path last`` the
newest version that has a ``last.ckpt`` (``--version N`` picks one); ``--ckpt_path best`` the registry's best
(``gbx_lightning.registry``). Nothing here knows Lightning's Trainer but ``RunConfig`` (a callback).
"""

from __future__ import annotations

import os
from pathlib import Path

from lightning.pytorch import LightningModule, Trainer
from lightning.pytorch.cli import SaveConfigCallback
from lightning.pytorch.utilities.rank_zero import rank_zero_only

from gbx_lightning.algos.config import old_layout_problem
from gbx_lightning.checks import ConfigError
from gbx_lightning.registry import Best, RegistryError, best_checkpoint, registry_path

__all__ = ["FreshRun", "RunConfig", "RunError", "check_checkpoint", "checkpoint_counters", "find_best", "policy_weights",
           "resolve_run_dir"]


class RunError(RuntimeError):
    """A problem with the run directory or checkpoint choice (one-line message, exit status 2)."""


def _versions(base: Path) -> list[int]:
    out = []
    for child in base.glob("version_*") if base.is_dir() else ():
        suffix = child.name[len("version_"):]
        if child.is_dir() and suffix.isdigit():
            out.append(int(suffix))
    return sorted(out)


def resolve_run_dir(base: Path, subcommand: str, ckpt_path: str | None, version: int | None,
                    best_metric: str = "success_rate") -> tuple[Path, str | None]:
    """(version directory, checkpoint file) for a subcommand; RunError if there is nothing to resume/evaluate.

    ``fit`` without a checkpoint: ``version`` or the next free version. ``--ckpt_path last`` (and
    ``validate``/``test`` without one): the checkpoint ``last.ckpt`` of ``version`` or of the newest
    version holding one. ``--ckpt_path best``: ``find_best``. A checkpoint file inside one of this run's
    versions (``checkpoints/`` or below) logs into that version.
    """
    if ckpt_path == "best":
        best = find_best(base, subcommand, version, best_metric)
        return best.run_dir, str(best.file)
    versions = _versions(base)
    if ckpt_path is None and subcommand == "fit":
        if version is None:
            return base / f"version_{versions[-1] + 1 if versions else 0}", None
        run_dir = base / f"version_{version}"
        if (run_dir / "checkpoints" / "last.ckpt").exists():
            raise RunError(f"{run_dir} already holds a run; resume it with --ckpt_path last, or leave out "
                           f"--version to start the next one")
        return run_dir, None
    if ckpt_path == "last" or (ckpt_path is None and subcommand in ("validate", "test")):
        candidates = [version] if version is not None else versions[::-1]
        for v in candidates:
            last = base / f"version_{v}" / "checkpoints" / "last.ckpt"
            if last.is_file():
                return last.parent.parent, str(last)
        where = base / (f"version_{version}" if version is not None else "version_*") / "checkpoints" / "last.ckpt"
        if ckpt_path == "last":
            raise RunError(f"--ckpt_path last: no checkpoint to resume, {where} does not exist "
                           f"(start the run without --ckpt_path, or check --run_name/--runs_dir/--version)")
        raise RunError(f"{subcommand}: nothing to evaluate, {where} does not exist (train the run first, or "
                       f"pass --ckpt_path FILE)")
    if ckpt_path is None:  # play without a checkpoint: the untrained policy, nothing written
        return base / f"version_{versions[-1] if versions else 0}", None
    ckpt = Path(ckpt_path)
    if not ckpt.is_file():
        raise RunError(f"--ckpt_path: checkpoint file {ckpt_path} does not exist")
    for run_dir in ckpt.resolve().parents:
        if run_dir.parent == base.resolve() and run_dir.name.startswith("version_"):
            return base / run_dir.name, str(ckpt)
    return base / f"version_{versions[-1] + 1 if versions else 0}", str(ckpt)


def find_best(base: Path, subcommand: str, version: int | None, best_metric: str) -> Best:
    """``--ckpt_path best``: the best checkpoint in the registry of ``version``, or of the newest version that has
    a registry (``gbx_lightning.registry``); RunError for ``fit`` and where there is nothing to take."""
    if subcommand == "fit":
        try:
            file = f": --ckpt_path {find_best(base, 'validate', version, best_metric).file}"
        except (RunError, ConfigError):
            file = ""
        raise RunError(f"--ckpt_path best is for validate, test and play: fit goes on from the last checkpoint "
                       f"(--ckpt_path last); to train on from the best one instead (the run's later records and "
                       f"registry entries are then superseded), pass its file{file}")
    candidates = [version] if version is not None else _versions(base)[::-1]
    run_dir = next((base / f"version_{v}" for v in candidates if registry_path(base / f"version_{v}").is_file()), None)
    if run_dir is None:
        where = registry_path(base / (f"version_{version}" if version is not None else "version_*"))
        raise RunError(f"--ckpt_path best: no checkpoint registry, {where} does not exist (fit writes it at every "
                       f"evaluation: train the run with evaluations on, or pass --ckpt_path last or a FILE)")
    try:
        return best_checkpoint(run_dir, best_metric)
    except RegistryError as err:
        raise RunError(str(err)) from None


def check_checkpoint(path: str) -> None:
    """RunError when the checkpoint cannot be this code's: one saved under an earlier config layout (its weights
    may be another env's or policy's, so it is refused rather than loaded into whatever the config now says)."""
    problem = old_layout_problem(read_checkpoint_head(path).get("hyper_parameters") or {})
    if problem is not None:
        raise RunError(f"--ckpt_path {path}: the checkpoint {problem}; it was saved by an earlier gbx_lightning: "
                       f"resume it with that version, or start a fresh run")


def policy_weights(path: str, flag: str = "--init_from") -> dict:
    """The policy's weights in checkpoint ``path`` (``--init_from``; ``flag`` names the option in the errors), keyed
    as in ``policy.state_dict()``; RunError in one line when the file is missing, not a checkpoint, from an earlier
    layout, or holds no policy."""
    if not Path(path).is_file():
        raise RunError(f"{flag} {path}: no such file")
    try:
        ckpt = read_checkpoint_head(path)
    except Exception as err:  # noqa: BLE001 - whatever torch.load makes of a file that is not a checkpoint
        raise RunError(f"{flag} {path}: not a checkpoint ({type(err).__name__})") from None
    state = ckpt.get("state_dict") if isinstance(ckpt, dict) else None
    if not isinstance(state, dict):
        raise RunError(f"{flag} {path}: not a checkpoint of fit (no state_dict)")
    problem = old_layout_problem(ckpt.get("hyper_parameters") or {})
    if problem is not None:
        raise RunError(f"{flag} {path}: the checkpoint {problem}; it was saved by an earlier gbx_lightning")
    weights = {k[len("policy."):]: v.clone() for k, v in state.items() if k.startswith("policy.")}
    if not weights:
        raise RunError(f"{flag} {path}: the checkpoint holds no policy weights")
    return weights


def checkpoint_counters(path: str) -> dict:
    """A checkpoint's ``gbx`` entry (env_steps, opt_steps, world_size), read without loading the tensors."""
    return dict(read_checkpoint_head(path).get("gbx", {}))


def read_checkpoint_head(path: str) -> dict:
    """A checkpoint's dict with its tensors memory-mapped, not read (cheap: for the checks before a resume)."""
    import torch

    try:
        return torch.load(path, map_location="cpu", weights_only=True, mmap=True)
    except Exception:  # not a zip checkpoint, or a non-tensor object in it: the slow, trusting way
        return torch.load(path, map_location="cpu", weights_only=False)


class FreshRun:
    """The version directory a fresh ``fit`` is creating: a fit refused before its first checkpoint (a bad env
    option found by the env itself) leaves none behind, so the next fit takes the same version."""

    def __init__(self) -> None:
        self.run_dir: Path | None = None

    def forget(self) -> None:
        run_dir, self.run_dir = self.run_dir, None
        if rank_zero_only.rank != 0:  # rank 0 owns the run directory
            return
        if run_dir is not None and run_dir.is_dir() and not (run_dir / "checkpoints").exists():
            import shutil

            shutil.rmtree(run_dir)
            if not any(run_dir.parent.iterdir()):   # the run name's directory, made for this version alone
                run_dir.parent.rmdir()


class RunConfig(SaveConfigCallback):
    """Saves ``config.yaml`` so that ``--config <run>/config.yaml`` means this run: the run name written
    in, no checkpoint path or version (a fresh ``fit`` of it starts the next version; add
    ``--ckpt_path last`` to resume)."""

    def __init__(self, parser, config, run_name: str = "run", run_dir: str | None = None, **kwargs):
        super().__init__(parser, config, save_to_log_dir=False, **kwargs)
        self.run_name, self.run_dir = run_name, run_dir

    def save_config(self, trainer: Trainer, pl_module: LightningModule, stage: str) -> None:
        # called on rank 0 only: the run directory the CLI resolved, not trainer.log_dir (a DDP collective)
        run_dir = self.run_dir or trainer.log_dir
        config = self.config.clone()
        config.run_name, config.ckpt_path, config.version = self.run_name, None, None
        os.makedirs(run_dir, exist_ok=True)
        self.parser.save(config, os.path.join(run_dir, self.config_filename), skip_none=False,
                         overwrite=True, multifile=self.multifile)
