"""``python -m gbx_lightning fit|validate|test|play --config configs/X.yaml`` (LightningCLI).

Run directories: ``<runs_dir>/<run_name>/version_N/`` (defaults: ``lightning_logs`` and the stem of
the last ``--config`` file), Lightning's own layout, so runs of a sweep never collide: every fresh
``fit`` starts the next version. Each holds TensorBoard events, ``train.jsonl``, ``config.yaml``
(reusable: ``--config .../config.yaml`` names the same run), ``clips/`` and
``checkpoints/{last.ckpt, stepNNNNNNNN.ckpt}``. ``--ckpt_path last`` takes the newest version
that has a ``last.ckpt`` (``--version N`` picks one), and the logs continue in place.

Every evaluation of ``fit`` is recorded in ``checkpoints/registry.jsonl`` with a checkpoint file of the
evaluated step (``checkpoints/eval/``; ``gbx_lightning.registry``), and fit ends with a table of them.
``validate``/``test``/``play --ckpt_path best`` take the best one by ``--best_metric`` (default
success_rate, ties by return_mean, then the later step) from the newest version with a registry;
``--best_keep N`` files of the best are kept. ``fit --ckpt_path best`` is refused: going back to an
earlier step supersedes the run's later history, so it takes the file's path, named in the message.

Guards, all checked before any env or network is built, each a one-line message and exit
status 2 (no traceback):

* hyper-parameters out of range or unknown names (``config error: model.gamma must be a number
  in (0, 1], got 1.5``), PPO ``trainer.max_steps`` not a whole number of rollouts,
  ``trainer.accelerator gpu`` without a CUDA device, anything else Lightning's Trainer rejects;
* values the parser refuses (a wrong type, an unknown key: ``error: model.init_args.lr: expected float,
  got nan``), a config file that is not UTF-8, a ``run_name`` with a path in it;
* ``--ckpt_path last`` with no checkpoint to resume (never a silent fresh start); ``--ckpt_path best`` with
  no registry or nothing scored in it, a ``best_metric`` that is not an eval metric, ``best_keep`` 0;
* ``validate``/``test`` with nothing to evaluate (without ``--ckpt_path`` they evaluate the run's
  last checkpoint, and say so).

SIGTERM and Ctrl-C stop ``fit`` between two updates, save and print how to resume (exit status 0);
a non-finite loss, gradient or parameter stops it with exit status 1 (``gbx_lightning.safety``).

DDP (``--trainer.strategy ddp --trainer.devices K``, or torchrun/SLURM): every process runs this CLI;
rank 0 decides the run directory and checkpoint (``_share_run``; ``ProcessCheck`` stops ranks that
disagree), writes everything, and the other ranks write nothing. Other strategies are refused.

What the given config says wins over what a checkpoint stored: ``--ckpt_path`` restores run state
(weights, optimizer, env, RNG, counters), not hyper-parameters (LightningCLI would otherwise parse
the checkpoint's hyper-parameters over the config: the path is handed to it only after parsing).
"""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path
from typing import Any, Optional

from jsonargparse import ArgumentError, Namespace
from lightning.fabric.utilities.exceptions import MisconfigurationException
from lightning.pytorch import Callback, LightningModule, Trainer
from lightning.pytorch.callbacks import ModelCheckpoint
from lightning.pytorch.cli import LightningArgumentParser, LightningCLI, SaveConfigCallback
from lightning.pytorch.loggers import TensorBoardLogger
from lightning.pytorch.utilities.rank_zero import rank_zero_only

from gbx_lightning.callbacks import AgentView, AtomicCheckpointIO, EnvStepsProgressBar, TrainingLog
from gbx_lightning.checks import number_problem
from gbx_lightning.module import ConfigError, RLModule, world_size_problem
from gbx_lightning.registry import (CORE_METRICS, Best, CheckpointRegistry, RegistryError, best_checkpoint, describe,
                                    known_metrics, live_entries, metric_problem, print_registry_table, read_records,
                                    registry_path)
from gbx_lightning.safety import (GracefulStop, NonFiniteError, NonFiniteGuard, RunStopped, StopOnSignal,
                                  resume_command)

__all__ = ["GbxCLI", "GbxTrainer", "RunError", "main", "resolve_run_dir"]


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
        if str(err).startswith("best_metric "):
            raise ConfigError("best_metric", str(err)[len("best_metric "):]) from None
        raise RunError(str(err)) from None


def _checkpoint_counters(path: str) -> dict:
    """A checkpoint's ``gbx`` entry (env_steps, opt_steps, world_size), read without loading the tensors."""
    import torch

    try:
        ckpt = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
    except Exception:  # not a zip checkpoint, or a non-tensor object in it: the slow, trusting way
        ckpt = torch.load(path, map_location="cpu", weights_only=False)
    return dict(ckpt.get("gbx", {}))


# ---- DDP: one run, many processes ---------------------------------------------------------------------------
_RUN_ENV = "GBX_LIGHTNING_RUN"  # rank 0's run directory and checkpoint, for the processes Lightning starts


def _share_run(run_dir: Path, ckpt_path: str | None) -> None:
    """Rank 0 decides the run (a fresh fit's version_N, the checkpoint of ``last``): Lightning's CPU/GPU DDP
    launcher starts ranks 1..K-1 by re-running this command with this process's environment, and they take
    this choice instead of resolving again (rank 0 may have created version_N by then)."""
    os.environ[_RUN_ENV] = json.dumps({"parent": os.getpid(), "run_dir": str(run_dir), "ckpt_path": ckpt_path})


def _run_of_launching_process() -> tuple[Path, str | None] | None:
    """Rank 0's choice when Lightning's launcher started this process (LOCAL_RANK > 0, rank 0 its parent)."""
    try:
        info = json.loads(os.environ.get(_RUN_ENV) or "null")
        local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    except ValueError:
        return None
    if not info or local_rank == 0 or info.get("parent") != os.getppid():
        return None
    return Path(info["run_dir"]), info["ckpt_path"]


_DDP_STRATEGIES = ("auto", "ddp", "single_device")


def _check_strategy(subcommand: str, trainer) -> None:
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
    checkpoint (with torchrun or SLURM each rank resolves them itself), and ``--torch_threads`` is applied
    again (Lightning's DDP launcher sets torch's threads to cores // processes after the CLI did)."""

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


class GbxCLI(LightningCLI):
    """LightningCLI with versioned run directories, strict checkpoint choice, config validation, and our
    callbacks and TensorBoard logger added beside whatever the config gives."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("save_config_callback", RunConfig)
        kwargs.setdefault("save_config_kwargs", {"overwrite": True})  # resume re-saves config.yaml
        kwargs.setdefault("trainer_defaults", {"num_sanity_val_steps": 0, "enable_model_summary": False,
                                               "log_every_n_steps": 1})
        kwargs.setdefault("auto_configure_optimizers", False)
        kwargs.setdefault("seed_everything_default", 0)
        kwargs.setdefault("trainer_class", GbxTrainer)
        # no prefix matching: a misspelt --trainer.max_step is an error, not max_steps
        # exit_on_error False: main() reports a parse error in one line instead of argparse's usage dump
        strict = {"allow_abbrev": False, "exit_on_error": False}
        kwargs.setdefault("parser_kwargs", {**strict, **{name: dict(strict) for name in self.subcommands()}})
        super().__init__(RLModule, *args, subclass_mode_model=True, **kwargs)

    @staticmethod
    def subcommands() -> dict[str, set[str]]:
        # no `predict`: a policy has no predict_step (`play` is how to watch one)
        return {"fit": {"model", "train_dataloaders", "val_dataloaders", "datamodule"},
                "validate": {"model", "dataloaders", "datamodule"},
                "test": {"model", "dataloaders", "datamodule"},
                "play": {"model"}}

    def add_arguments_to_parser(self, parser: LightningArgumentParser) -> None:
        parser.add_argument("--run_name", type=Optional[str], default=None,
                            help="Run name under runs_dir (default: the config file's stem).")
        parser.add_argument("--runs_dir", type=str, default="lightning_logs", help="Parent of all runs.")
        parser.add_argument("--version", type=Optional[int], default=None,
                            help="Version directory of the run (default: a fresh fit takes the next one, "
                                 "--ckpt_path last the newest with a checkpoint).")
        parser.add_argument("--checkpoint_every", type=int, default=100,
                            help="Optimizer steps between step checkpoints (rounded up to whole PPO rollouts).")
        parser.add_argument("--checkpoint_keep", type=int, default=-1,
                            help="Step checkpoints to keep, newest first (-1: all; last.ckpt is always kept).")
        parser.add_argument("--best_metric", type=str, default="success_rate",
                            help="Eval metric that ranks the checkpoint registry for --ckpt_path best and for "
                                 "best_keep: success_rate, return_mean (higher is better), steps_to_success "
                                 "(lower is better), or an env's extra <counter>_mean; ties go to the higher "
                                 "return_mean, then the later step.")
        parser.add_argument("--best_keep", type=int, default=3,
                            help="Evaluated checkpoints (checkpoints/eval/) kept by fit: the best N by best_metric "
                                 "(-1: all). Independent of checkpoint_keep.")
        parser.add_argument("--log_every", type=int, default=1, help="Optimizer steps per JSONL/logger record.")
        parser.add_argument("--torch_threads", type=Optional[int], default=None,
                            help="torch intra-op CPU threads (default: torch's choice). 1 is fastest for small "
                                 "policies on a shared or busy CPU.")
        parser.add_argument("--progress_refresh", type=int, default=10,
                            help="Batches between progress-bar refreshes (0 disables the bar).")
        parser.add_argument("--env_state_max_mb", type=float, default=256,
                            help="Env state (every env's machine, frame stacks, counters) larger than this is left "
                                 "out of checkpoints: a resume restarts the envs from their reset states, and the "
                                 "JSONL meta line says so (a Game Boy env with stack_k 4 is ~73 KB).")
        parser.add_argument("--image_every", type=int, default=500,
                            help="Optimizer steps between TensorBoard images of what the agent sees (pixel envs; "
                                 "0: none). Each evaluation also writes a clip to <run>/clips/.")

    # ---- before anything is built ------------------------------------------------------------------
    def _sub(self) -> Namespace:
        return self.config[self.subcommand]

    def parse_arguments(self, parser: LightningArgumentParser, args) -> None:
        """Parse, then validate and resolve the run directory at once: before seeding or building anything."""
        try:
            super().parse_arguments(parser, args)
        except UnicodeDecodeError as err:  # a config file that is not text
            raise ConfigError("--config", f"must be a UTF-8 YAML file; byte {err.object[err.start]:#04x} at offset "
                              f"{err.start} is not UTF-8 text") from None
        if self.config.get("subcommand"):
            self.subcommand = self.config["subcommand"]
            self._check_and_resolve()

    def before_instantiate_classes(self) -> None:
        # hand the resolved checkpoint back now that LightningCLI's parsing is over (see the module docstring)
        self._sub().ckpt_path = self.ckpt_path

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
        trainer = cfg.trainer
        seed = cfg.get("seed_everything")
        if not isinstance(seed, bool) and seed is not None:
            problem = number_problem(seed, low=0, high=(1 << 32) - 1, integer=True)
            if problem is not None:
                raise ConfigError("seed_everything", problem.replace("must be", "must be true, false or", 1))
        if self.subcommand == "fit":
            problem = number_problem(trainer.get("max_steps"), low=-1, high=1 << 40, integer=True)
            if problem is not None:   # (-1: no limit, Lightning's default)
                raise ConfigError("trainer.max_steps", problem)
            cls.check_max_steps(trainer.get("max_steps"), **init_args)
        _check_accelerator(trainer.get("accelerator"))
        if trainer.get("gradient_clip_val") is not None:
            raise ConfigError("trainer.gradient_clip_val", f"must be null (the algorithms clip in training_step: set "
                              f"model.max_grad_norm), got {trainer.gradient_clip_val}")
        _check_strategy(self.subcommand, trainer)
        bounds = {"checkpoint_every": dict(low=1), "log_every": dict(low=1), "progress_refresh": dict(low=0),
                  "image_every": dict(low=0), "checkpoint_keep": dict(low=-1), "version": dict(low=0, none="null"),
                  "torch_threads": dict(low=1, none="null")}
        problem = number_problem(cfg.get("env_state_max_mb"), low=0)
        if problem is not None:
            raise ConfigError("env_state_max_mb", problem)
        if self.subcommand == "play":
            bounds.update(episodes=dict(low=1), max_steps=dict(low=1))
        for field, bound in bounds.items():
            problem = number_problem(cfg.get(field), integer=True, **bound)
            if problem is not None:
                raise ConfigError(field, problem)
        if cfg.get("best_keep") == 0 or number_problem(cfg.get("best_keep"), integer=True, low=-1) is not None:
            raise ConfigError("best_keep", f"must be -1 (all) or an int >= 1 (the best evaluated checkpoints to keep), "
                              f"got {cfg.get('best_keep')!r}")
        if not isinstance(cfg.get("best_metric"), str):
            raise ConfigError("best_metric", metric_problem(cfg.get("best_metric"), known_metrics()))

        root = trainer.get("default_root_dir")
        if root is not None:  # Lightning's name for where logs go: our runs_dir
            if cfg.runs_dir not in ("lightning_logs", str(root)):
                raise ConfigError("trainer.default_root_dir", f"and runs_dir both say where runs go ({root!r}, "
                                  f"{cfg.runs_dir!r}); give one")
            cfg.runs_dir = str(root)
        name = cfg.get("run_name")
        if not name:
            configs = cfg.get("config") or []
            name = Path(str(configs[-1])).stem if configs else "run"
        if not isinstance(name, str) or name in (".", "..") or any(c in name for c in "/\\\0"):
            # one directory under runs_dir: a name with a path in it would write the run somewhere else
            raise ConfigError("run_name", f"must be a plain directory name (no '/', not '..'), got {name!r}")
        self.run_name = name
        given = cfg.get("ckpt_path")
        global _fresh_run_dir
        inherited = _run_of_launching_process()
        if inherited is not None:  # a DDP process Lightning started: rank 0 has decided (see _share_run)
            self.run_dir, self.ckpt_path = inherited
            _fresh_run_dir = None
        else:
            if given == "best":
                best = find_best(Path(cfg.runs_dir) / name, self.subcommand, cfg.get("version"), cfg.best_metric)
                self.run_dir, self.ckpt_path = best.run_dir, str(best.file)
                if rank_zero_only.rank == 0:
                    for line in describe(best, cfg.best_metric):
                        print(f"{self.subcommand}: {line}", file=sys.stderr, flush=True)
            else:
                self.run_dir, self.ckpt_path = resolve_run_dir(Path(cfg.runs_dir) / name, self.subcommand, given,
                                                               cfg.get("version"))
            _share_run(self.run_dir, self.ckpt_path)
            _fresh_run_dir = self.run_dir if self.subcommand == "fit" and not self.run_dir.exists() else None
        registry = registry_path(self.run_dir)
        # a damaged registry stops fit now, not at its first evaluation (RegistryError names the line)
        entries = live_entries(read_records(registry)) if registry.is_file() and self.subcommand == "fit" else None
        if cfg.best_metric not in CORE_METRICS:
            # beyond the core metrics only an env's extra counter is a score, and only its registry knows it
            if entries is None and registry.is_file():
                entries = live_entries(read_records(registry))
            problem = metric_problem(cfg.best_metric, known_metrics(entries or ()))
            if problem is not None:
                raise ConfigError("best_metric", problem + ("" if registry.is_file() else
                                                            " (other metrics: those in the run's registry)"))
        if given is None and self.ckpt_path is not None and rank_zero_only.rank == 0:
            print(f"{self.subcommand}: no --ckpt_path given: evaluating {self.ckpt_path}", file=sys.stderr, flush=True)
        cfg.ckpt_path = None  # until before_instantiate_classes: LightningCLI's parsing must not read the checkpoint
        if self.subcommand != "fit":
            self.save_config_callback = None  # config.yaml describes the training run; keep it
        else:
            self.save_config_kwargs = {**self.save_config_kwargs, "run_name": name, "run_dir": str(self.run_dir)}

    # ---- wiring the Trainer ----------------------------------------------------------------------
    def instantiate_trainer(self, **kwargs: Any):
        cfg = self._sub()
        if cfg.get("torch_threads"):
            import torch

            torch.set_num_threads(cfg.torch_threads)
        run_dir = self.run_dir
        trainer_cfg = self.config_init[self.subcommand].get("trainer") or {}
        callbacks = list(trainer_cfg.get("callbacks") or [])
        callbacks.append(ProcessCheck(str(run_dir), self.ckpt_path, cfg.get("torch_threads")))
        self.training_log = TrainingLog(run_dir / "train.jsonl", config=self._config_dict(), log_every=cfg.log_every,
                                        run_name=self.run_name)
        self.model.env_state_max_bytes = int(cfg.env_state_max_mb * (1 << 20))
        checkpointing = trainer_cfg.get("enable_checkpointing") is not False
        if checkpointing:
            cycle = int(getattr(self.model, "opt_steps_per_batch", 1))
            every = -(-cfg.checkpoint_every // cycle) * cycle  # whole PPO rollouts: no state lost mid-update
            # monitor "step" (max) keeps the newest step checkpoints: save_top_k counts from the latest
            callbacks.append(ModelCheckpoint(dirpath=run_dir / "checkpoints", filename="step{step:08d}",
                                             auto_insert_metric_name=False, every_n_train_steps=every,
                                             monitor="step", mode="max", save_top_k=cfg.checkpoint_keep,
                                             save_last=True,  # on a crash, the last good checkpoint stays
                                             enable_version_counter=False))  # last.ckpt is always last.ckpt
            if self.subcommand == "fit":   # every evaluation with its checkpoint file (gbx_lightning.registry)
                self.checkpoint_registry = CheckpointRegistry(run_dir, cfg.best_metric, cfg.best_keep,
                                                              self.training_log)
                callbacks.append(self.checkpoint_registry)
        callbacks.append(self.training_log)
        callbacks.append(NonFiniteGuard())   # after the log: it acts on what the record's read found
        callbacks.append(GracefulStop(run_dir / "checkpoints" / "last.ckpt") if checkpointing else StopOnSignal())
        callbacks.append(AgentView(run_dir / "clips", image_every=cfg.image_every))
        show_bar = cfg.progress_refresh > 0 and trainer_cfg.get("enable_progress_bar") is not False
        if show_bar:
            callbacks.append(EnvStepsProgressBar(self.training_log, refresh_rate=cfg.progress_refresh))
        plugins = trainer_cfg.get("plugins") or []
        plugins = list(plugins) if isinstance(plugins, (list, tuple)) else [plugins]
        kwargs.update(callbacks=callbacks, logger=self._loggers(trainer_cfg.get("logger")),
                      default_root_dir=str(run_dir), plugins=plugins + [AtomicCheckpointIO()],
                      enable_progress_bar=show_bar)
        try:
            trainer = super().instantiate_trainer(**kwargs)
        except (MisconfigurationException, ValueError, TypeError, ImportError) as err:  # Lightning's checks of its options
            raise ConfigError("trainer", f"rejected by Lightning: {_first_line(err)}") from None
        episodes = self.model.hparams.eval_episodes
        if episodes < trainer.world_size:  # before any process starts (the module checks again in setup)
            raise ConfigError("model.eval_episodes", f"must be >= the number of processes ({trainer.world_size}): "
                              f"the evaluation episodes are split over them, got {episodes}")
        if trainer.world_size > 1:
            # a checkpoint is a collective under DDP (every rank's stream state is gathered); a crash or Ctrl-C
            # reaches the ranks at different points, so there the last scheduled checkpoint stands
            for callback in trainer.checkpoint_callbacks:
                callback.save_on_exception = False
        if self.subcommand == "fit" and self.ckpt_path is not None:
            saved = int(_checkpoint_counters(self.ckpt_path).get("world_size", 1))
            if saved != trainer.world_size:  # before any env is built (the module checks again on restore)
                raise ConfigError("trainer.devices", world_size_problem(saved, trainer.world_size))
        return trainer

    def _loggers(self, user) -> Any:
        """Ours (TensorBoard in the run directory) first, then the config's own (CSV, W&B, MLflow, ...);
        ``logger: false`` turns all logging off but the JSONL."""
        if user is False:
            return False
        purge = None
        if self.subcommand == "fit" and self.ckpt_path is not None:
            # a crashed run may have logged past its last checkpoint: TensorBoard hides those points
            purge = int(_checkpoint_counters(self.ckpt_path).get("env_steps", 0)) + 1
        ours = TensorBoardLogger(save_dir=str(self.run_dir.parent.parent), name=self.run_dir.parent.name,
                                 version=self.run_dir.name, default_hp_metric=False, purge_step=purge)
        if user is None or user is True:
            return [ours]
        return [ours, *(user if isinstance(user, (list, tuple)) else [user])]

    # ---- telling the user where things are ---------------------------------------------------------
    def before_fit(self) -> None:
        if rank_zero_only.rank == 0:
            print(f"run directory: {self.run_dir}  (watch: tensorboard --logdir {self.run_dir.parent.parent})",
                  file=sys.stderr, flush=True)

    def after_fit(self) -> None:
        trainer, log = self.trainer, self.training_log
        if (not trainer.interrupted and trainer.limit_val_batches != 0
                and log.last_eval_opt_steps != self.model.opt_steps):
            trainer.validate(self.model, verbose=False)  # the final evaluation, when no scheduled one fell on the end
        if trainer.is_global_zero and getattr(self, "checkpoint_registry", None) is not None:
            print_registry_table(self.run_dir, self.checkpoint_registry.best_metric)
        last = self.run_dir / "checkpoints" / "last.ckpt"
        if last.is_file() and trainer.is_global_zero:
            print(f"saved {last}; to continue, run the same command with --ckpt_path last "
                  f"(and a larger --trainer.max_steps)", file=sys.stderr, flush=True)

    def _config_dict(self) -> dict:
        """The resolved config of this subcommand, as plain data for the JSONL meta line."""
        import yaml

        return yaml.safe_load(self.parser.dump(self.config, skip_none=False, skip_validation=True))[self.subcommand]


def _check_accelerator(accelerator) -> None:
    """A CUDA accelerator needs a CUDA device torch can see (Lightning's own refusal is a traceback)."""
    if isinstance(accelerator, str) and accelerator.lower() in ("gpu", "cuda"):
        import torch

        if not torch.cuda.is_available():
            raise ConfigError("trainer.accelerator", f"is {accelerator!r} but torch {torch.__version__} sees no CUDA "
                              f"device (use cpu or auto)")


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__


def parse_error_line(message: str) -> str:
    """jsonargparse's parse error (often a dozen lines: a union's every alternative) as one line naming the key:
    'model.init_args.lr: expected float, got nan'. A one-line message is returned as it is."""
    import re

    lines = [line.strip() for line in message.strip().splitlines() if line.strip()]
    if len(lines) <= 1:
        return lines[0] if lines else message
    keys, details, given, in_class = [], [], None, False
    noise = ("Does not validate against any of", "Subtypes:", "Errors:", "Given value type:",
             "Expected a <class 'NoneType'>")
    for line in lines:
        line = line.removeprefix("- ").strip()
        key = re.match(r'^Parser key "([^"]+)":', line)
        if key:
            keys += (["init_args"] if in_class else []) + [key.group(1)]
            details, given, in_class = [], None, False
        elif line.startswith("Problem with given class_path"):
            in_class = True
        elif line.startswith("Given value:"):
            given = given or line.removeprefix("Given value:").strip()
        elif line and not line.startswith(noise):
            details.append(line)
    if in_class:
        keys.append("init_args")
    nested = re.fullmatch(r"NestedArg\(key='([^']*)', val=(.*)\)", given or "")
    if nested:
        given = nested.group(2)
    text = "; ".join(dict.fromkeys(details)) or "invalid value"
    text = re.sub(r"<class '(?:[\w.]+\.)?(\w+)'>", r"\1", text).replace(". Got value: ", ", got ")
    text = (text[:1].lower() + text[1:]).replace("a int", "an int")
    if "got" not in text and given is not None:
        text += f", got {given}"
    key = ".".join(keys) or "arguments"
    return f"{key}: {text}" if len(text) < 300 else f"{key}: {text[:300]}..."


def _import_class(path: str):
    module, _, name = path.rpartition(".")
    import importlib

    return getattr(importlib.import_module(module), name)


class _DropTips(logging.Filter):
    """Lightning's advertisement for its cloud logger, printed by every run, says nothing about this run."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "litlogger" not in record.getMessage()


def _quiet_startup() -> None:
    """Drop Lightning's litlogger tip, and Warp's CUDA-driver warning where there is no driver to find."""
    for name in ("lightning.fabric.utilities.rank_zero", "lightning.pytorch.utilities.rank_zero",
                 "lightning_utilities.core.rank_zero"):
        logging.getLogger(name).addFilter(_DropTips())
    import warp as wp

    wp.config.quiet = True  # no init banner
    wp.config.log_level = wp.LOG_WARNING  # no per-module load chatter
    if sys.platform.startswith("linux") and not _cuda_driver_present():
        # Warp's native init prints "Could not find or load the NVIDIA CUDA driver" to fd 2 on every CPU-only
        # machine; nothing else goes there while it initialises, and init failures still raise.
        saved = os.dup(2)
        try:
            with open(os.devnull, "w") as devnull:
                os.dup2(devnull.fileno(), 2)
                wp.init()
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


_fresh_run_dir: Path | None = None  # the version directory a fresh fit is creating


def _forget_fresh_run() -> None:
    """A fresh fit refused before its first checkpoint (a bad env option found by the env itself) leaves
    no version directory behind: the next fit takes the same version, as if nothing had run."""
    run_dir = _fresh_run_dir
    if rank_zero_only.rank != 0:  # rank 0 owns the run directory
        return
    if run_dir is not None and run_dir.is_dir() and not (run_dir / "checkpoints").exists():
        import shutil

        shutil.rmtree(run_dir)


def main(args: list[str] | None = None) -> int:
    """Console entry point; returns the exit status (2 for config/run errors, no traceback)."""
    global _fresh_run_dir
    _fresh_run_dir = None
    try:
        _quiet_startup()
        GbxCLI(args=args)
    except (ConfigError, RunError, RegistryError) as err:
        _forget_fresh_run()
        kind = "config error" if isinstance(err, ConfigError) else "error"
        print(f"{kind}: {err}", file=sys.stderr)
        return 2
    except MisconfigurationException as err:  # a Trainer setting Lightning rejects once the run starts
        _forget_fresh_run()
        print(f"config error: trainer rejected by Lightning: {_first_line(err)}", file=sys.stderr)
        return 2
    except ArgumentError as err:  # the parser's refusal, in one line (exit status 2, as argparse's own)
        _forget_fresh_run()
        print(f"error: {parse_error_line(str(err))}", file=sys.stderr)
        raise SystemExit(2) from None
    except RunStopped as stop:  # SIGTERM / Ctrl-C, between two updates (gbx_lightning.safety)
        if stop.opt_steps == 0:   # stopped before training anything: as if it had not started
            _forget_fresh_run()
        if rank_zero_only.rank != 0:   # DDP: rank 0 says it
            return 0
        if stop.checkpoint is None:
            print(f"{stop}; no checkpoint to resume from: run the same command to start again", file=sys.stderr)
            return 0
        version = Path(stop.checkpoint).parent.parent.name.removeprefix("version_")
        print(f"{stop}; {'saved' if stop.saved else 'it is in'} {stop.checkpoint}. To resume: "
              f"{resume_command(sys.argv[1:] if args is None else args, version)}", file=sys.stderr, flush=True)
        return 0
    except NonFiniteError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    finally:
        os.environ.pop(_RUN_ENV, None)  # rank 0's choice is for the processes this command started
    return 0
