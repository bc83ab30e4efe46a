"""The app: LightningCLI wired for RL runs. Subcommands ``fit``, ``validate``, ``test`` and ``play``; the CLI's own
options (run name and directory, checkpoint cadence, logging); the checks that run before anything is built; and
the Trainer's callbacks and loggers, added beside whatever the config gives.

What the given config says wins over what a checkpoint stored: ``--ckpt_path`` restores run state (weights,
optimizer, env, RNG, counters), not hyper-parameters (LightningCLI would otherwise parse the checkpoint's
hyper-parameters over the config: the path is handed to it only after parsing).
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path
from typing import Any, Literal, Optional, Union

from jsonargparse import ArgumentError, Namespace
from lightning.fabric.utilities.exceptions import MisconfigurationException
from lightning.pytorch import LightningModule, Trainer
from lightning.pytorch.callbacks import ModelCheckpoint
from lightning.pytorch.cli import LightningArgumentParser, LightningCLI
from lightning.pytorch.loggers import TensorBoardLogger
from lightning.pytorch.utilities.rank_zero import rank_zero_only

from gbx_lightning.algos import RLModule, world_size_problem
from gbx_lightning.baseline import RandomBaseline
from gbx_lightning.callbacks import AgentView, AtomicCheckpointIO, EnvStepsProgressBar, TrainingLog
from gbx_lightning.compile_notice import CompileNotice
from gbx_lightning.checks import ConfigError, number_problem
from gbx_lightning.cli.errors import first_line, old_layout_error
from gbx_lightning.cli.launch import ProcessCheck, check_strategy
from gbx_lightning.cli.runs import (FreshRun, RunConfig, check_checkpoint, checkpoint_counters, find_best,
                                    policy_weights, resolve_run_dir)
from gbx_lightning.registry import (CORE_METRICS, CheckpointRegistry, describe, known_metrics, live_entries,
                                    metric_problem, print_registry_table, read_records, registry_path)
from gbx_lightning.safety import GracefulStop, NonFiniteGuard, StopOnSignal, max_time_seconds

__all__ = ["GbxCLI", "GbxTrainer"]

# A resumed run writes into its own checkpoint directory by design (runs.py: versions never collide), and validate
# and test never write there: Lightning's warning about a non-empty one says nothing here.
warnings.filterwarnings("ignore", message=r"Checkpoint directory .* exists and is not empty")


class GbxTrainer(Trainer):
    """Lightning's Trainer plus the ``play`` subcommand (LightningCLI reads a subcommand's options
    from the Trainer method of that name)."""

    def play(self, model: LightningModule, ckpt_path: Optional[str] = None, out: str = "clip.gif",
             episodes: int = 1, greedy: Optional[bool] = None, max_steps: int = 10_000) -> None:
        """Watch an agent: play episodes with a checkpoint's policy and write them as an animated GIF.

        Args:
            ckpt_path: checkpoint to load ("last" = the run's last.ckpt); none plays the untrained policy.
            out: GIF file to write.
            episodes: episodes to play one after another (evaluation seeds), all in one clip.
            greedy: act by argmax (true) or sample from the policy (false); default: as evaluation does
                (model.eval_greedy: sampling unless set), so the clip shows the agent the scores measure.
            max_steps: steps per episode at most.
        """
        from gbx_lightning.play import play

        play(model, self.strategy.root_device, ckpt_path, out, episodes=episodes, greedy=greedy,
             max_steps=max_steps)

    def validate(self, model=None, dataloaders=None, ckpt_path=None, verbose: bool = True, datamodule=None,
                 weights_only: Optional[bool] = None,
                 eval_seed: Union[Literal["held_out", "fit"], int] = "held_out"):
        """Lightning's ``validate``, on the episodes ``eval_seed`` says.

        Args:
            eval_seed: which evaluation episodes: ``held_out`` (default) the model's eval_seed + HELD_OUT, episodes
                fit never evaluated on (``--ckpt_path best`` was picked on fit's: scored again on those, its number
                would be biased up); ``fit`` those fit evaluated on (model.eval_seed); or a seed of your own.
        """
        _use_eval_seed(model, eval_seed, "validate")
        return super().validate(model, dataloaders, ckpt_path, verbose, datamodule, weights_only)

    def test(self, model=None, dataloaders=None, ckpt_path=None, verbose: bool = True, datamodule=None,
             weights_only: Optional[bool] = None, eval_seed: Union[Literal["held_out", "fit"], int] = "held_out"):
        """Lightning's ``test``, on the episodes ``eval_seed`` says.

        Args:
            eval_seed: which evaluation episodes: ``held_out`` (default), ``fit`` or a seed (as for validate).
        """
        _use_eval_seed(model, eval_seed, "test")
        return super().test(model, dataloaders, ckpt_path, verbose, datamodule, weights_only)


# evaluation episodes fit never sees: fit evaluates on model.eval_seed + rank (one per process)
HELD_OUT = 1 << 20


def _use_eval_seed(model, eval_seed, stage: str) -> None:
    """Point the module's evaluation at the episodes of ``eval_seed`` and say which (rank 0)."""
    if model is None:
        return
    fit_seed = int(model.hparams.eval_seed)
    seed = fit_seed + HELD_OUT if eval_seed == "held_out" else fit_seed if eval_seed == "fit" else int(eval_seed)
    model.eval_episode_seed = seed
    if rank_zero_only.rank == 0:
        which = ("held out: fit evaluated on seed " + f"{fit_seed}; --eval_seed fit replays those"
                 if eval_seed == "held_out" else "the episodes fit evaluated on" if seed == fit_seed else
                 "--eval_seed")
        print(f"{stage}: evaluation episodes of seed {seed} ({which})", file=sys.stderr, flush=True)


class GbxCLI(LightningCLI):
    """LightningCLI with versioned run directories (``runs``), strict checkpoint choice, config validation, and our
    callbacks and TensorBoard logger added beside whatever the config gives. ``fresh_run`` learns the version
    directory a fresh fit creates (``main`` removes it if the run is refused before its first checkpoint)."""

    def __init__(self, *args, fresh_run: FreshRun | None = None, **kwargs):
        self.fresh_run = fresh_run if fresh_run is not None else FreshRun()
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
        parser.add_argument("--init_from", type=Optional[str], default=None,
                            help="fit: start the policy from the weights in this checkpoint (another run's: an "
                                 "earlier level, stage or game with the same policy and observation); the "
                                 "optimizer, counters, envs and RNG start fresh. A resume (--ckpt_path) ignores it: "
                                 "the run's own checkpoint holds its weights.")
        parser.add_argument("--log_every", type=int, default=1, help="Optimizer steps per JSONL/logger record.")
        parser.add_argument("--torch_threads", type=Optional[int], default=None,
                            help="torch intra-op CPU threads (default: torch's choice). 1 is fastest for small "
                                 "policies on a shared or busy CPU.")
        parser.add_argument("--progress_refresh", type=int, default=10,
                            help="Batches between progress-bar refreshes (0 disables the bar).")
        parser.add_argument("--env_state_max_mb", type=float, default=256,
                            help="Env state (every env's machine, frame stacks, counters, a task's state pool, "
                                 "packed) larger than this is left out of checkpoints, said in one line with what a "
                                 "resume then loses (it restarts the envs from their reset states). A task's state "
                                 "pool must fit under it with the envs' state (a Game Boy env with stack_k 4 is ~73 "
                                 "KB), checked before anything is built.")
        parser.add_argument("--random_baseline", type=bool, default=True,
                            help="At the start of a fit, a uniformly random policy plays the evaluation episodes: "
                                 "its success rate is logged once (eval/random_success_rate) and each evaluation "
                                 "below it is warned about (gbx_lightning/baseline.py).")
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
        except ArgumentError:
            old = old_layout_error(list(sys.argv[1:] if args is None else args))
            if old is not None:   # what changed, rather than what the parser makes of it
                raise old from None
            raise
        except UnicodeDecodeError as err:  # a config file that is not text
            raise ConfigError("--config", f"must be a UTF-8 YAML file; byte {err.object[err.start]:#04x} at offset "
                              f"{err.start} is not UTF-8 text") from None
        if self.config.get("subcommand"):
            self.subcommand = self.config["subcommand"]
            _restore_cli_nulls(self._sub(), list(sys.argv[1:] if args is None else args))
            self._check_config()
            self._resolve_run()

    def before_instantiate_classes(self) -> None:
        # hand the resolved checkpoint back now that LightningCLI's parsing is over (see the module docstring)
        self._sub().ckpt_path = self.ckpt_path

    def _check_config(self) -> None:
        """Every check that needs no file of the run: the module's arguments, the Trainer's, the CLI's own."""
        cfg = self._sub()
        model = cfg.model
        init_args = model.get("init_args")
        init_args = init_args.as_dict() if isinstance(init_args, Namespace) else dict(init_args or {})
        cls = _import_class(model.class_path)
        try:
            cls.check_config(**init_args)
        except ConfigError as err:
            raise ConfigError(f"model.{err.field}", err.message) from None
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
        try:
            max_time_seconds(trainer.get("max_time"))
        except ValueError as err:
            raise ConfigError("trainer.max_time", str(err)) from None
        problem = number_problem(trainer.get("check_val_every_n_epoch"), low=1, integer=True, none="null")
        if problem is not None:   # (Lightning takes any int, and 0 divides by zero in its loop)
            raise ConfigError("trainer.check_val_every_n_epoch", problem)
        if trainer.get("gradient_clip_val") is not None:
            raise ConfigError("trainer.gradient_clip_val", f"must be null (the algorithms clip in training_step: set "
                              f"model.max_grad_norm), got {trainer.gradient_clip_val}")
        check_strategy(self.subcommand, trainer)
        bounds = {"checkpoint_every": dict(low=1), "log_every": dict(low=1), "progress_refresh": dict(low=0),
                  "image_every": dict(low=0), "checkpoint_keep": dict(low=-1), "version": dict(low=0, none="null"),
                  "torch_threads": dict(low=1, none="null")}
        problem = number_problem(cfg.get("env_state_max_mb"), low=0)
        if problem is not None:
            raise ConfigError("env_state_max_mb", problem)
        if self.subcommand == "fit":
            _check_env_state_cap(cls, init_args, cfg.env_state_max_mb)
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

    def _resolve_run(self) -> None:
        """The run directory and checkpoint of this subcommand (``runs``), and the checks that need their files."""
        cfg = self._sub()
        name = cfg.get("run_name")
        if not name:
            configs = cfg.get("config") or []
            name = Path(str(configs[-1])).stem if configs else "run"
        if not isinstance(name, str) or name in (".", "..") or any(c in name for c in "/\\\0"):
            # one directory under runs_dir: a name with a path in it would write the run somewhere else
            raise ConfigError("run_name", f"must be a plain directory name (no '/', not '..'), got {name!r}")
        self.run_name = name
        given = cfg.get("ckpt_path")
        if given == "best":
            best = find_best(Path(cfg.runs_dir) / name, self.subcommand, cfg.get("version"), cfg.best_metric)
            self.run_dir, self.ckpt_path = best.run_dir, str(best.file)
            if rank_zero_only.rank == 0:
                for line in describe(best, cfg.best_metric):
                    print(f"{self.subcommand}: {line}", file=sys.stderr, flush=True)
        else:
            self.run_dir, self.ckpt_path = resolve_run_dir(Path(cfg.runs_dir) / name, self.subcommand, given,
                                                           cfg.get("version"))
        if self.ckpt_path is not None:
            check_checkpoint(self.ckpt_path)
        self.initial_policy = None
        if self.subcommand == "fit" and cfg.get("init_from") is not None:
            if self.ckpt_path is None:
                self.initial_policy = policy_weights(cfg.init_from)
            elif rank_zero_only.rank == 0:
                print(f"fit: resuming: --init_from {cfg.init_from} is not used (the checkpoint holds the weights)",
                      file=sys.stderr, flush=True)
        if self.subcommand == "fit" and not self.run_dir.exists():
            self.fresh_run.run_dir = self.run_dir
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
        if self.subcommand == "fit" and self.initial_policy is not None:
            self.model.initial_policy = self.initial_policy   # loaded once the env has sized the policy (setup)
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
        if self.subcommand == "fit" and cfg.get("random_baseline", True):
            self.training_log.baseline = RandomBaseline()   # before the log: its figures go in the meta line
            callbacks.append(self.training_log.baseline)
        callbacks.append(self.training_log)
        callbacks.append(NonFiniteGuard())
        callbacks.append(CompileNotice())
        # max_time is ours to act on (safety.py: a stop between updates, no evaluation after), not Lightning's Timer
        max_time = max_time_seconds(trainer_cfg.get("max_time"))
        kwargs["max_time"] = None
        if max_time is not None and trainer_cfg.get("max_epochs") is None and trainer_cfg.get("max_steps") == -1:
            kwargs["max_epochs"] = -1   # what max_time meant to Lightning: no epoch limit (else it sets 1000, and says so)
        callbacks.append(GracefulStop(run_dir / "checkpoints" / "last.ckpt", max_time) if checkpointing else
                         StopOnSignal(max_time=max_time))
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
            raise ConfigError("trainer", f"rejected by Lightning: {first_line(err)}") from None
        if self.subcommand == "fit":
            self.model.check_val_schedule(trainer)
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
            saved = int(checkpoint_counters(self.ckpt_path).get("world_size", 1))
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
            purge = int(checkpoint_counters(self.ckpt_path).get("env_steps", 0)) + 1
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
            # the final evaluation, when no scheduled one fell on the end: on fit's episodes (Lightning's validate, not
            # the subcommand's, whose default is held-out episodes)
            Trainer.validate(trainer, self.model, verbose=False)
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


YAML_NULLS = ("null", "Null", "NULL", "~")


def _restore_cli_nulls(cfg: Namespace, args: list[str]) -> None:
    """Put back the nulls jsonargparse turns into the string 'None'.

    A command-line null for an optional string two class levels down (``--model.env.rom=null``: the env's
    init_args inside the module's) reaches the namespace as ``'None'`` (jsonargparse 4.53; the same value in a
    config file, or one level down, stays None). For each such argument whose value now reads 'None', set None.
    """
    for i, arg in enumerate(args):
        key, eq, value = arg[2:].partition("=")
        if not eq and i + 1 < len(args):
            value = args[i + 1]
        if not arg.startswith("--") or value not in YAML_NULLS:
            continue
        *path, last = key.split(".")
        node = cfg
        for part in path:   # the short form skips init_args: --model.env.rom is model.init_args.env.init_args.rom
            node = _child(node, part)
        node = _child(node, None, last)
        if node is not None and node[last] == "None":
            node[last] = None


def _child(node, part: str | None, holding: str | None = None):
    """``node``'s field ``part`` (in it or in its init_args); with ``holding``: the namespace that holds that
    field, ``node`` or its init_args. None where there is no such field."""
    name = holding if holding is not None else part
    if not isinstance(node, Namespace):
        return None
    for where in (node, node.get("init_args") if "init_args" in node else None):
        if isinstance(where, Namespace) and name in where:
            return where if holding is not None else where[name]
    return None


def _check_env_state_cap(module_cls, init_args: dict, max_mb: float) -> None:
    """The checkpoint cap (``--env_state_max_mb``) and a task's own caps must agree: an env whose feature can grow
    its state past the cap (a state pool filling ``task.pool.max_mb``) would leave the whole env state out of every
    checkpoint from then on. Refused in one line naming both, with the numbers that agree (nothing built)."""
    from gbx_lightning.algos.build import factory_parts

    env_cls, options = factory_parts(init_args.get("env"))
    bound = getattr(env_cls, "state_bound", None)
    if bound is None:
        return
    num_envs = init_args.get("num_envs", module_cls.hparam_defaults().get("num_envs"))
    need = bound(num_envs, **options)
    mib, cap = 1 << 20, int(max_mb * (1 << 20))
    total = need["envs"] + sum(f["bytes"] for f in need["features"])
    for f in need["features"]:
        if total > cap:
            fits = f["fits"](cap - total + f["bytes"])
            raise ConfigError("env_state_max_mb", f"({max_mb:g}) and {f['field']} ({f['value']:g}) disagree: "
                              f"{f['what']} takes up to {f['bytes'] / mib:.1f} MB of a checkpoint beside the "
                              f"{num_envs} envs' own state ({need['envs'] / mib:.1f} MB), over the cap, and a "
                              f"checkpoint past the cap leaves the whole env state out; raise --env_state_max_mb to "
                              f"{-(-total // mib)} or lower {f['field']} to {fits:g}")


def _check_accelerator(accelerator) -> None:
    """A CUDA accelerator needs a CUDA device torch can see (Lightning's own refusal is a traceback)."""
    if isinstance(accelerator, str) and accelerator.lower() in ("gpu", "cuda"):
        import torch

        if not torch.cuda.is_available():
            raise ConfigError("trainer.accelerator", f"is {accelerator!r} but torch {torch.__version__} sees no CUDA "
                              f"device (use cpu or auto)")


def _import_class(path: str):
    import importlib

    module, _, name = path.rpartition(".")
    return getattr(importlib.import_module(module), name)
