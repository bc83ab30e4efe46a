"""``python -m gbx_lightning fit|validate|test --config configs/X.yaml`` (LightningCLI).

Run directory: every run lives in ``<runs_dir>/<run_name>/`` (defaults: ``lightning_logs`` and
the stem of the last ``--config`` file): TensorBoard events, ``train.jsonl``,
``config.yaml`` and ``checkpoints/{last.ckpt, stepNNNNNNNN.ckpt}``. The directory is
stable, not ``version_N``, so the same command plus ``--ckpt_path last`` resumes the run
and its logs continue in place.

Guards, all checked before any env or network is built, each a one-line message and
exit status 2 (no traceback):

* hyper-parameters out of range or unknown names (``config error: model.gamma must be
  in (0, 1], got 1.5``);
* ``--ckpt_path last`` with no ``checkpoints/last.ckpt`` in the run directory (never a
  silent fresh start);
* ``fit`` without ``--ckpt_path`` in a run directory that already holds checkpoints
  (resume it, or pick another ``--run_name``).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, Optional

from jsonargparse import Namespace
from lightning.pytorch import LightningModule, Trainer
from lightning.pytorch.callbacks import ModelCheckpoint
from lightning.pytorch.cli import LightningArgumentParser, LightningCLI
from lightning.pytorch.loggers import TensorBoardLogger

from gbx_lightning.callbacks import AgentView, AtomicCheckpointIO, EnvStepsProgressBar, TrainingLog
from gbx_lightning.module import ConfigError, RLModule

__all__ = ["GbxCLI", "GbxTrainer", "RunError", "main"]


class RunError(RuntimeError):
    """A problem with the run directory or checkpoint choice (one-line message, exit status 2)."""


class GbxTrainer(Trainer):
    """Lightning's Trainer plus the ``play`` subcommand (LightningCLI reads a subcommand's options
    from the Trainer method of that name)."""

    def play(self, model: LightningModule, ckpt_path: Optional[str] = None, out: str = "clip.gif",
             episodes: int = 1, greedy: bool = True, max_steps: int = 10_000) -> None:
        """Watch an agent: play episodes with a checkpoint's policy and write them as an animated GIF.

        Args:
            ckpt_path: checkpoint to load ("last" = the run's last.ckpt); none plays the untrained policy.
            out: GIF file to write.
            episodes: episodes to play one after another (evaluation seeds), all in one clip.
            greedy: act by argmax (True) or sample from the policy.
            max_steps: steps per episode at most.
        """
        from gbx_lightning.play import play

        play(model, self.strategy.root_device, ckpt_path, out, episodes=episodes, greedy=greedy,
             max_steps=max_steps)


class GbxCLI(LightningCLI):
    """LightningCLI with a stable run directory, strict ``--ckpt_path last`` and config validation."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("save_config_kwargs", {"overwrite": True})  # resume re-saves config.yaml
        kwargs.setdefault("trainer_defaults", {"num_sanity_val_steps": 0, "enable_model_summary": False,
                                               "log_every_n_steps": 1})
        kwargs.setdefault("auto_configure_optimizers", False)
        kwargs.setdefault("seed_everything_default", 0)
        kwargs.setdefault("trainer_class", GbxTrainer)
        super().__init__(RLModule, *args, subclass_mode_model=True, **kwargs)

    @staticmethod
    def subcommands() -> dict[str, set[str]]:
        return {**LightningCLI.subcommands(), "play": {"model"}}

    def add_arguments_to_parser(self, parser: LightningArgumentParser) -> None:
        parser.add_argument("--run_name", type=Optional[str], default=None,
                            help="Run directory name under runs_dir (default: the config file's stem).")
        parser.add_argument("--runs_dir", type=str, default="lightning_logs", help="Parent of all run directories.")
        parser.add_argument("--checkpoint_every", type=int, default=100,
                            help="Optimizer steps between checkpoints (rounded up to whole PPO updates).")
        parser.add_argument("--log_every", type=int, default=1, help="Optimizer steps per JSONL/TensorBoard record.")
        parser.add_argument("--torch_threads", type=Optional[int], default=None,
                            help="torch intra-op CPU threads (default: torch's choice). 1 is fastest for small "
                                 "policies on a shared or busy CPU.")
        parser.add_argument("--progress_refresh", type=int, default=10,
                            help="Batches between progress-bar refreshes (0 disables the bar).")
        parser.add_argument("--image_every", type=int, default=500,
                            help="Optimizer steps between TensorBoard images of what the agent sees (pixel envs; "
                                 "0: none). Each evaluation also writes a clip to <run>/clips/.")

    # ---- before anything is built ------------------------------------------------------------------
    def _sub(self) -> Namespace:
        return self.config[self.subcommand]

    def _run_dir(self) -> Path:
        cfg = self._sub()
        name = cfg.get("run_name")
        if not name:
            configs = cfg.get("config") or []
            name = Path(str(configs[-1])).stem if configs else "run"
        return Path(cfg.get("runs_dir") or "lightning_logs") / name

    def parse_arguments(self, parser: LightningArgumentParser, args) -> None:
        """Parse, then validate and resolve the run directory at once: before seeding or building anything."""
        super().parse_arguments(parser, args)
        if self.config.get("subcommand"):
            self.subcommand = self.config["subcommand"]
            self._check_and_resolve()

    def _parse_ckpt_path(self) -> None:
        """Keep the given config authoritative: ``--ckpt_path`` restores run state, not hyper-parameters.

        (LightningCLI would otherwise overwrite model arguments with those stored in the checkpoint.)
        """

    def _check_and_resolve(self) -> None:
        cfg = self._sub()
        model = cfg.model
        init_args = model.get("init_args")
        init_args = init_args.as_dict() if isinstance(init_args, Namespace) else dict(init_args or {})
        cls = _import_class(model.class_path)
        try:
            cls.check_config(**init_args)
        except ConfigError as err:
            raise ConfigError(f"model.{err.field}", str(err)[len(err.field) + 1:]) from None
        for field in ("checkpoint_every", "log_every"):
            if not isinstance(cfg.get(field), int) or cfg.get(field) < 1:
                raise ConfigError(field, f"must be an int >= 1, got {cfg.get(field)!r}")
        for field in ("progress_refresh", "image_every"):
            if not isinstance(cfg.get(field), int) or cfg.get(field) < 0:
                raise ConfigError(field, f"must be an int >= 0, got {cfg.get(field)!r}")
        if self.subcommand == "play":
            for field, minimum in (("episodes", 1), ("max_steps", 1)):
                if not isinstance(cfg.get(field), int) or cfg.get(field) < minimum:
                    raise ConfigError(field, f"must be an int >= {minimum}, got {cfg.get(field)!r}")

        threads = cfg.get("torch_threads")
        if threads is not None and (not isinstance(threads, int) or threads < 1):
            raise ConfigError("torch_threads", f"must be an int >= 1 or null, got {threads!r}")

        run_dir = self._run_dir()
        last = run_dir / "checkpoints" / "last.ckpt"
        ckpt = cfg.get("ckpt_path")
        if ckpt == "last":
            if not last.is_file():
                raise RunError(f"--ckpt_path last: no checkpoint to resume, {last} does not exist "
                               f"(start the run without --ckpt_path, or check --run_name/--runs_dir)")
            cfg.ckpt_path = str(last)
        elif ckpt is not None and not Path(ckpt).is_file():
            raise RunError(f"--ckpt_path: checkpoint file {ckpt} does not exist")
        elif ckpt is None and self.subcommand == "fit" and last.exists():
            raise RunError(f"run directory {run_dir} already holds a run ({last}); resume it with "
                           f"--ckpt_path last, or start a new one with --run_name NAME")
        if self.subcommand != "fit":
            self.save_config_callback = None  # config.yaml describes the training run; keep it
        self.run_dir = run_dir

    # ---- wiring the Trainer ----------------------------------------------------------------------
    def instantiate_trainer(self, **kwargs: Any):
        cfg = self._sub()
        if cfg.get("torch_threads"):
            import torch

            torch.set_num_threads(cfg.torch_threads)
        run_dir = self.run_dir
        trainer_cfg = self._get(self.config_init, "trainer", default={})
        callbacks = list(trainer_cfg.get("callbacks") or [])
        log = TrainingLog(run_dir / "train.jsonl", config=self._config_dict(), log_every=cfg.log_every,
                          run_name=run_dir.name)
        cycle = int(getattr(self.model, "opt_steps_per_cycle", 1))
        every = -(-cfg.checkpoint_every // cycle) * cycle  # whole PPO updates: no state lost mid-update
        callbacks.append(ModelCheckpoint(dirpath=run_dir / "checkpoints", filename="step{step:08d}",
                                         auto_insert_metric_name=False, every_n_train_steps=every,
                                         save_last=True, save_top_k=1, save_on_exception=True))
        callbacks.append(log)
        callbacks.append(AgentView(run_dir / "clips", image_every=cfg.image_every))
        if cfg.progress_refresh > 0:
            callbacks.append(EnvStepsProgressBar(log, refresh_rate=cfg.progress_refresh))
        plugins = trainer_cfg.get("plugins") or []
        plugins = list(plugins) if isinstance(plugins, (list, tuple)) else [plugins]
        kwargs.update(
            callbacks=callbacks,
            logger=TensorBoardLogger(save_dir=str(run_dir.parent), name=run_dir.name, version="",
                                     default_hp_metric=False),
            default_root_dir=str(run_dir),
            plugins=plugins + [AtomicCheckpointIO()],
            enable_progress_bar=cfg.progress_refresh > 0,
        )
        return super().instantiate_trainer(**kwargs)

    # ---- telling the user where things are ---------------------------------------------------------
    def before_fit(self) -> None:
        print(f"run directory: {self.run_dir}  (watch: tensorboard --logdir {self.run_dir.parent})",
              file=sys.stderr, flush=True)

    def after_fit(self) -> None:
        last = self.run_dir / "checkpoints" / "last.ckpt"
        if last.is_file():
            print(f"saved {last}; to continue, run the same command with --ckpt_path last "
                  f"(and a larger --trainer.max_steps)", file=sys.stderr, flush=True)

    def _config_dict(self) -> dict:
        import yaml

        return yaml.safe_load(self._parser(self.subcommand).dump(self._sub(), skip_none=False,
                                                                 skip_validation=True))


def _import_class(path: str):
    module, _, name = path.rpartition(".")
    import importlib

    return getattr(importlib.import_module(module), name)


def main(args: list[str] | None = None) -> int:
    """Console entry point; returns the exit status (2 for config/run errors, no traceback)."""
    try:
        import warp as wp

        wp.config.log_level = wp.LOG_WARNING  # no init banner / per-module load chatter in the console
        GbxCLI(args=args)
    except (ConfigError, RunError) as err:
        kind = "config error" if isinstance(err, ConfigError) else "error"
        print(f"{kind}: {err}", file=sys.stderr)
        return 2
    return 0
