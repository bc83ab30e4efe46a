"""LightningModules for A2C (TD(0)), PPO and REINFORCE on a vector env.

One batch = one rollout of T env steps of all N envs (``data.RolloutStream``, ``[T, N]``
tensors), acted with the current weights; ``training_step`` is the algorithm, top to bottom
as CleanRL writes it:

* A2C: T = ``update_every``; one optimizer step on the TD(0) loss of all T*N transitions.
* PPO: T = ``rollout_steps``; bootstrap V(s'), GAE, then ``epochs`` x ``minibatches``
  clipped-surrogate steps on the rollout.
* REINFORCE: T = ``rollout_steps`` (>= the env's episode limit); Monte-Carlo returns inside the rollout,
  one optimizer step per ``accumulate`` rollouts (``REINFORCEModule`` says how episodes and rollouts meet).

Why manual optimisation: PPO takes many optimizer steps per batch, and both algorithms clip the
gradient norm and log the pre-clip norm without a host sync. ``training_step`` calls the public
``manual_backward``, ``optimizer.step`` and ``lr_scheduler.step``; Lightning owns the outer loop,
devices, checkpoints, callbacks and loggers, and ``trainer.global_step`` counts optimizer steps
(``trainer.max_steps`` is the number of updates; ``val_check_interval`` counts batches: A2C
updates, PPO rollouts). A PPO run's ``max_steps`` must be a whole number of rollouts
(epochs x minibatches optimizer steps each): a run that stopped inside one would lose the rest
of that rollout's update on resume.

``anneal_lr`` (PPO) is a ``LambdaLR`` (``LinearAnneal``) from ``configure_optimizers``, stepped after
every optimizer step, saved and restored by Lightning, seen by ``LearningRateMonitor``. Resumed with
a larger ``max_steps``, it continues from the current rate down to 0 at the new end (no jump).

Non-finite numbers: ``_track`` keeps, on device, the first optimizer step at which each loss term or the
gradient norm was NaN/inf; ``pop_metrics`` reads it with the record's means (no extra host sync) into
``nonfinite``, and ``find_nonfinite`` (before each checkpoint write) also checks the parameters;
``safety.NonFiniteGuard`` stops the run on either.

Where things live: the env and the policy are built in ``setup`` (after config validation, on
the Trainer's device; the env's observation shape sizes the policy). ``env_steps`` (owned by the
stream) and ``opt_steps`` are stored in every checkpoint under ``checkpoint["gbx"]``; the stream's
full state (RNG, env, current observation) is stored by Lightning's fit loop.

DDP (``--trainer.strategy ddp --trainer.devices K``): every process builds ``num_envs`` envs of its
own (per process, as Lightning's batch size is per device) with its seeds offset by its rank, and
``training_step`` runs unchanged: ``manual_backward`` lets DDP all-reduce (average) the gradients,
so the weights stay equal on every rank. ``env_steps`` counts all processes' env steps; training
statistics and evaluation results are summed over the ranks before they are logged
(``sum_over_ranks``); ``eval_episodes`` is split over the ranks. A checkpoint records the number of
processes (``checkpoint["gbx"]["world_size"]``): resuming with another is refused.
"""

from __future__ import annotations

import inspect
import math
import os
import time
import warnings
from typing import Any

import torch
from lightning.pytorch import LightningModule

from gbx_lightning.checks import number_problem
from gbx_lightning.data import UNBOUNDED, EvalEpisodes, RolloutStream
from gbx_lightning.models import POLICY_REGISTRY, make_policy
from gbx_lightning.rl import (a2c_td0, apply_sample_transforms, explained_variance, gae, monte_carlo_returns,
                              ppo_loss, reinforce_loss)
from gbx_lightning.rl.normalize import sample_transform_problem

__all__ = ["ConfigError", "LinearAnneal", "RLModule", "A2CModule", "PPOModule", "REINFORCEModule"]

# The stream is an in-process IterableDataset by design (num_workers=0, length = batch budget), and
# checkpoints taken after the optimizer step are what we want; these Lightning hints do not apply.
for _msg in (r".*does not have many workers.*", r".*`IterableDataset` has `__len__` defined.*",
             r".*Using ModelCheckpoint with manual optimization and every_n_train_steps.*",
             r".*isinstance\(treespec, LeafSpec\).*", r".*is smaller than the logging interval.*",
             r".*when logging on epoch level in distributed setting.*"):  # eval metrics: reduced by _eval_step
    warnings.filterwarnings("ignore", message=_msg)


class ConfigError(ValueError):
    """A bad hyper-parameter, found before anything is built. ``field`` is the config key (without ``model.``)."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field} {message}")
        self.field = field


def _env_registry() -> dict:
    from gbx_lightning.envs import ENV_REGISTRY

    return ENV_REGISTRY


# what a bad config value raises where an env or a policy is built from it (huge sizes: MemoryError, OverflowError,
# or torch's RuntimeError "can't allocate memory")
_BAD_VALUE = (ValueError, TypeError, FileNotFoundError, OverflowError, MemoryError, RuntimeError)


def _is_bad_value(err: BaseException) -> bool:
    return not isinstance(err, RuntimeError) or "allocat" in str(err) or "out of memory" in str(err)


def _one_line(err: BaseException) -> str:
    text = " ".join(str(err).split())
    return text if len(text) <= 300 else text[:300] + "..."


def _init_args(frame_locals: dict) -> dict:
    return {k: v for k, v in frame_locals.items() if k not in ("self", "__class__")}


def _require(ok: bool, field: str, expected: str, got) -> None:
    if not ok:
        raise ConfigError(field, f"must be {expected}, got {got!r}")


def _require_number(field: str, value, **bounds) -> None:
    """ConfigError(field, "must be a number in (0, 1], got 1.5") when ``checks.number_problem`` finds one."""
    problem = number_problem(value, **bounds)
    if problem is not None:
        raise ConfigError(field, problem)


def _yaml_values(options: dict | None) -> dict | None:
    """Entries given on the command line one by one (``--model.init_args.env_kwargs.level 3``) arrive as
    strings; read those that are YAML numbers, booleans, null or lists as such ("3" -> 3, "[8, 16]" ->
    [8, 16]); other strings (paths, names) stay strings."""
    if not isinstance(options, dict):
        return options
    import yaml

    out = {}
    for key, value in options.items():
        if isinstance(value, str) and value.strip():   # "" stays "" (e.g. GameBoyEnv's fail: "" = no fail template)
            try:
                parsed = yaml.safe_load(value)
            except yaml.YAMLError:
                parsed = value
            if parsed is None or isinstance(parsed, (bool, int, float, list)):
                value = parsed
        out[key] = value
    return out


def _check_option_names(field: str, target, options: dict | None, reserved: tuple[str, ...]) -> None:
    """Every key of ``options`` must be a keyword of ``target``'s constructor (a typo is a one-line error)."""
    params = inspect.signature(target).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return
    known = sorted(k for k in params if k not in reserved)
    for key in options or {}:
        if key not in params:
            raise ConfigError(f"{field}.{key}", f"is not an option of {target.__name__}; options: {', '.join(known)}")


def cores_per_process(trainer=None) -> int:
    """CPU cores each training process may use: this process's cores (``os.sched_getaffinity``) over the DDP
    processes on this node, Lightning's own rule for torch's threads (it sets ``cores // processes`` unless
    OMP_NUM_THREADS is set); all of them with one process."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    local = getattr(trainer.strategy, "num_processes", 1) if trainer is not None else 1
    return max(1, cores // max(1, int(local)))


ENV_DEVICES = ("auto", "cpu", "gpu")
# env_device "auto" emulates on the GPU from this many envs per CPU core of the process. Measured on an H100 with 16
# cores (docs/gpu.md): one step of the GPU emulator takes ~0.17 s whatever the env count below saturation (a GPU
# thread runs one Game Boy ~25x slower than a CPU core), so it needs thousands of envs to pay; PPO fit on the built-in
# game: GPU emulator 23.5k env steps/s at 4,096 envs and 70k at 16,384, hybrid mode on 16 cores 40k at both.
GPU_ENVS_PER_CORE = 512


def pick_env_device(setting: str, learner: torch.device, num_envs: int, cores: int) -> torch.device:
    """Where ``num_envs`` envs run for a learner on ``learner`` (see ``RLModule``'s ``env_device``)."""
    if learner.type == "cpu" or setting == "cpu":
        if setting == "gpu":
            raise ConfigError("model.env_device", "is gpu, but the Trainer runs on the CPU (trainer.accelerator)")
        return torch.device("cpu")
    if setting == "gpu" or num_envs >= GPU_ENVS_PER_CORE * cores:
        return learner
    return torch.device("cpu")


def world_size_problem(saved: int, now: int) -> str:
    """The one-line refusal of a resume with another number of processes than the checkpoint was saved by."""
    return (f"x trainer.num_nodes must give {saved} process(es) to resume this checkpoint (each saved its own "
            f"envs and RNG streams), got {now}; resume with the same devices, or start a fresh run")


class LinearAnneal:
    """``LambdaLR`` factor falling linearly from ``start_factor`` at step ``start`` to 0 at step ``end``.

    A fresh run's k-th optimizer step (from 0) uses ``lr * (1 - k / max_steps)``: the last one
    ``lr / max_steps``. ``extend_to`` re-plans the rest of the line when a resumed run's
    ``max_steps`` moved: from the rate of the last step taken down to 0 at the new end, so the rate
    continues from where it was instead of jumping back up. A callable object (not a lambda), so
    ``LambdaLR.state_dict`` saves ``start``/``start_factor``/``end`` in checkpoints.
    """

    def __init__(self, end: int):
        self.start, self.start_factor, self.end = 0, 1.0, int(end)

    def __call__(self, step: int) -> float:
        if step >= self.end:
            return 0.0
        return self.start_factor * (self.end - step) / (self.end - self.start)

    def extend_to(self, step: int, end: int) -> None:
        """Steps ``step``.. (the next to take) fall from the factor of step ``step - 1`` to 0 at ``end``."""
        last = max(int(step) - 1, 0)
        self.start, self.start_factor, self.end = last, self(last), int(end)


class RLModule(LightningModule):
    """What A2C and PPO share: env + policy construction, the optimizer step, evaluation, step counters.

    Args:
        env: registered env name (``gbx_lightning.envs.ENV_REGISTRY``).
        env_kwargs: env options (e.g. GameBoyEnv ``level``, ForagingEnv ``obs_mode``); ``num_envs`` and
            ``device`` are set by the module.
        num_envs: envs stepped in parallel for training.
        env_device: where the envs run. ``"gpu"``: on the Trainer's GPU. ``"cpu"``: on the CPU's cores; with a
            GPU Trainer that is hybrid mode, the policy on the GPU and the observations sent over through pinned
            buffers (``envs/bridge.py``). ``"auto"``: the CPU when the Trainer is on the CPU, else the GPU only
            for ``num_envs >= GPU_ENVS_PER_CORE`` x this process's cores (``pick_env_device``; README, "GPU").
        policy: registered policy name (``gbx_lightning.models.POLICY_REGISTRY``).
        policy_kwargs: policy options (e.g. ``hidden``).
        gamma, lr, max_grad_norm, value_coef, entropy_coef, adam_eps: the usual.
        seed: env and action-sampling seed; ``None`` uses the process seed (``seed_everything``).
        eval_episodes: episodes per ``validate``/``test`` (one per eval env, run in parallel).
        eval_greedy: evaluate the argmax action instead of sampling.
        eval_seed: fixed seed so every evaluation sees the same episode starts.
    """

    def __init__(self, env: str = "foraging", env_kwargs: dict | None = None, num_envs: int = 32,
                 env_device: str = "auto",
                 policy: str = "cnn", policy_kwargs: dict | None = None, gamma: float = 0.99, lr: float = 1e-3,
                 max_grad_norm: float | None = 0.5, value_coef: float = 0.5, entropy_coef: float = 0.01,
                 adam_eps: float = 1e-5, seed: int | None = None, eval_episodes: int = 32,
                 eval_greedy: bool = False, eval_seed: int = 1_000_003):
        super().__init__()
        self.save_hyperparameters()
        for key in ("env_kwargs", "policy_kwargs"):
            self.hparams[key] = _yaml_values(self.hparams[key])
        self.automatic_optimization = False
        self.policy = None
        self.env = None
        self.eval_env = None
        self.stream: RolloutStream | None = None
        self.opt_steps = 0
        self._restored_env_steps = 0
        self.time_update_s = 0.0
        self._metric_names: list[str] | None = None
        self._metric_rows: list[torch.Tensor] = []
        self._metric_first_step = 0  # opt_steps of _metric_rows[0]
        self._metric_sums: torch.Tensor | None = None
        self._metric_counts: torch.Tensor | None = None
        self._first_nonfinite: torch.Tensor | None = None  # per tracked column: first opt step it was non-finite
        self.nonfinite: tuple[str, int | None] | None = None  # (what, opt step), found by the last record's read
        self.env_state_max_bytes: int | None = 256 << 20  # env state above this is left out of checkpoints
        self.restored_env_state: dict | None = None  # what the checkpoint resumed from said of its env state
        self.last_eval_clip: torch.Tensor | None = None  # env 0's screens in the last evaluation (pixel envs)

    # ---- config validation (also called by the CLI before anything is instantiated) ---------------
    @classmethod
    def check_config(cls, **hp: Any) -> None:
        """Raise ConfigError naming the first bad field. Cheap: builds no env and no network."""
        reg = _env_registry()
        _require(isinstance(hp.get("env"), str) and hp["env"] in reg, "env",
                 f"one of {sorted(reg)}", hp.get("env"))
        _require(isinstance(hp.get("policy"), str) and hp["policy"] in POLICY_REGISTRY, "policy",
                 f"one of {sorted(POLICY_REGISTRY)}", hp.get("policy"))
        _require(hp.get("env_kwargs") is None or isinstance(hp["env_kwargs"], dict), "env_kwargs", "a mapping",
                 hp.get("env_kwargs"))
        for reserved in ("num_envs", "device"):
            _require(reserved not in (hp.get("env_kwargs") or {}), f"env_kwargs.{reserved}",
                     f"absent (set model.{reserved} instead)" if reserved == "num_envs" else "absent (the Trainer's "
                     "accelerator picks the device)", (hp.get("env_kwargs") or {}).get(reserved))
        _require(hp.get("policy_kwargs") is None or isinstance(hp["policy_kwargs"], dict), "policy_kwargs",
                 "a mapping", hp.get("policy_kwargs"))
        _check_option_names("env_kwargs", reg[hp["env"]], hp.get("env_kwargs"), ("num_envs", "device"))
        check_options = getattr(reg[hp["env"]], "check_options", None)
        if check_options is not None:   # files and values, cheaply, before anything is built
            from gbx_lightning.envs.base import OptionError

            try:
                check_options(**_yaml_values(hp.get("env_kwargs") or {}))
            except OptionError as err:
                raise ConfigError(f"env_kwargs.{err.option}", err.message) from None
        _check_option_names("policy_kwargs", POLICY_REGISTRY[hp["policy"]], hp.get("policy_kwargs"),
                            ("obs_shape", "num_actions"))
        _require_number("gamma", hp.get("gamma"), low=0, high=1, low_open=True)
        _require_number("lr", hp.get("lr"), low=0, low_open=True)
        _require_number("num_envs", hp.get("num_envs"), low=1, integer=True)
        _require(hp.get("env_device", "auto") in ENV_DEVICES, "env_device", f"one of {', '.join(ENV_DEVICES)}",
                 hp.get("env_device"))
        _require_number("max_grad_norm", hp.get("max_grad_norm"), low=0, low_open=True, none="null")
        for name in ("value_coef", "entropy_coef"):
            _require_number(name, hp.get(name), low=0)
        _require_number("adam_eps", hp.get("adam_eps"), low=0, low_open=True)
        _require_number("seed", hp.get("seed"), integer=True, none="null")
        _require_number("eval_episodes", hp.get("eval_episodes"), low=1, integer=True)
        transforms = hp.get("sample_transforms")
        _require(transforms is None or isinstance(transforms, (list, tuple)), "sample_transforms",
                 "a list of {name: ..., per: batch | env} items or null", transforms)
        for i, item in enumerate(transforms or ()):
            problem = sample_transform_problem(item, cls.sample_transform_names)
            if problem is not None:
                raise ConfigError(f"sample_transforms[{i}]{problem[0]}", problem[1])

    # what ``sample_transforms`` may name for this learner (rl/normalize.py); A2C's advantage lives inside its loss
    sample_transform_names: tuple[str, ...] = ("reward_norm",)
    opt_steps_per_batch = 1  # optimizer steps per batch (PPO: epochs x minibatches per rollout)

    @classmethod
    def check_max_steps(cls, max_steps, **hp: Any) -> None:
        """Trainer settings the algorithm constrains (PPO: whole rollouts). ConfigError("trainer.max_steps", ...)."""

    # ---- construction ---------------------------------------------------------------------------
    def _make_env(self, num_envs: int):
        from gbx_lightning.envs import make_env

        trainer = self._attached_trainer()
        device = trainer.strategy.root_device if trainer is not None else torch.device("cpu")
        learner = device
        device = pick_env_device(self.hparams.get("env_device", "auto"), learner, num_envs, cores_per_process(trainer))
        options = dict(self.hparams.env_kwargs or {})
        threads = inspect.signature(_env_registry()[self.hparams.env]).parameters.get("cpu_threads")
        if device.type == "cpu" and "cpu_threads" not in options and threads is not None and threads.default is None:
            # an env whose default is "every core" (GameBoyEnv) gets this process's share: K DDP processes on a
            # node would otherwise each start one launch thread per core
            options["cpu_threads"] = cores_per_process(trainer)
        try:
            env = make_env(self.hparams.env, num_envs=num_envs, device=device, **options)
        except _BAD_VALUE as err:
            if not _is_bad_value(err):
                raise
            # a bad option value or file: one line naming the config field, not a traceback from inside fit
            raise ConfigError("model.env_kwargs", f"rejected by {self.hparams.env}: {_one_line(err)}") from err
        if device == learner and self.hparams.get("env_device", "auto") != "cpu":
            return env
        from gbx_lightning.envs.bridge import DeviceBridge

        # hybrid mode; env_device "cpu" on a CPU Trainer also goes through it (the same copies, same results)
        return DeviceBridge(env, learner)

    def _build_policy(self, env) -> None:
        if self.policy is None:
            try:
                self.policy = make_policy(self.hparams.policy, env.obs_shape, int(env.num_actions),
                                          **(self.hparams.policy_kwargs or {}))
            except _BAD_VALUE as err:  # e.g. hidden: 3 where a list of widths is wanted
                if not _is_bad_value(err):
                    raise
                raise ConfigError("model.policy_kwargs", f"rejected by {self.hparams.policy}: "
                                  f"{type(err).__name__}: {_one_line(err)}") from err

    def setup(self, stage: str) -> None:
        """Build the env(s) this stage needs and the policy (sized by the env). Runs before checkpoint restore."""
        if stage == "fit":
            self.check_max_steps(self.trainer.max_steps, **self.hparams)
            if self.env is None:
                self.env = self._make_env(self.hparams.num_envs)
                self._build_policy(self.env)
            self._check_rollout_memory()
        _, world = self.ranks()
        if self.hparams.eval_episodes < world:
            raise ConfigError("model.eval_episodes", f"must be >= the number of processes ({world}): the "
                              f"evaluation episodes are split over them, got {self.hparams.eval_episodes}")
        if stage in ("validate", "test") or self.policy is None:
            self._build_policy(self._get_eval_env())

    rollout_field = "update_every"  # the hyper-parameter that sets T (PPO: rollout_steps)

    def _check_rollout_memory(self) -> None:
        """A rollout keeps T x N observations twice (s and s') until its update: refuse one that cannot fit
        before collecting it (an absurd T would otherwise collect until the machine runs out of memory)."""
        from gbx_lightning.checks import available_memory

        t, n = self.steps_per_rollout(), self.env.num_envs
        obs_bytes = math.prod(self.env.obs_shape) * torch.empty((), dtype=self.env.obs_dtype).element_size()
        need = t * n * (2 * obs_bytes + 32)   # + actions, log-probs, values, rewards, flags
        free = available_memory(torch.device(self.env.device))
        if free is not None and need > free:
            raise ConfigError(f"model.{self.rollout_field}", f"is {t}: a rollout of {t} steps x {n} envs holds "
                              f"~{need / 2**30:.3g} GiB of observations, more than the {free / 2**30:.3g} GiB free "
                              f"on {self.env.device}")

    def _attached_trainer(self):
        """The Trainer, or None for a module used on its own (``self.trainer`` raises then)."""
        try:
            return self.trainer
        except RuntimeError:
            return None

    def ranks(self) -> tuple[int, int]:
        """(this process's global rank, number of processes); (0, 1) without a Trainer or without DDP."""
        trainer = self._attached_trainer()
        return (trainer.global_rank, trainer.world_size) if trainer is not None else (0, 1)

    def sum_over_ranks(self, tensor: torch.Tensor) -> torch.Tensor:
        """``tensor`` summed over the DDP processes (Lightning's ``strategy.reduce``, in place; a collective: every
        rank calls it at the same point); ``tensor`` itself with one process."""
        trainer = self._attached_trainer()
        if trainer is None or trainer.world_size == 1:
            return tensor
        return trainer.strategy.reduce(tensor, reduce_op="sum")

    def min_over_ranks(self, tensor: torch.Tensor) -> torch.Tensor:
        """``tensor``'s elementwise minimum over the DDP processes (a collective); ``tensor`` with one process."""
        trainer = self._attached_trainer()
        if trainer is None or trainer.world_size == 1:
            return tensor
        return trainer.strategy.reduce(tensor, reduce_op="min")

    def _get_eval_env(self):
        if self.eval_env is None:
            # DDP: the eval_episodes are split over the processes (the first eval_episodes % K take one more)
            rank, world = self.ranks()
            episodes = self.hparams.eval_episodes // world + (rank < self.hparams.eval_episodes % world)
            self.eval_env = self._make_env(episodes)
        return self.eval_env

    @property
    def process_seed(self) -> int:
        """The run's seed; DDP rank r seeds its stream with ``process_seed + r`` and its evaluation with
        ``eval_seed + r``, so the processes play different episodes."""
        return int(self.hparams.seed) if self.hparams.seed is not None else torch.initial_seed() % (1 << 31)

    def configure_optimizers(self):
        return torch.optim.Adam(self.policy.parameters(), lr=self.hparams.lr, eps=self.hparams.adam_eps)

    def steps_per_rollout(self) -> int:  # pragma: no cover - overridden
        """T: env steps of all N envs per batch."""
        raise NotImplementedError

    def train_dataloader(self):
        num_batches = UNBOUNDED
        if self.trainer.max_steps > 0:
            num_batches = -(-self.trainer.max_steps // self.opt_steps_per_batch)
        rank, world = self.ranks()
        self.stream = RolloutStream(self.env, self.policy, self.process_seed + rank, num_batches,
                                    self.steps_per_rollout(), env_state_max_bytes=self.env_state_max_bytes,
                                    rank=rank, world_size=world)
        self.stream.env_steps = self._restored_env_steps // world  # this rank's share (its own state, on resume)
        return self.stream  # an iterable is a valid Lightning loader; see gbx_lightning.data

    def transfer_batch_to_device(self, batch, device, dataloader_idx: int):
        """The stream builds every batch on the env's device, which is this module's device: nothing to move."""
        return batch

    # ---- step counters and checkpoint -----------------------------------------------------------
    @property
    def env_steps(self) -> int:
        """Env transitions of the whole run, all processes' envs counted: under DDP every rank steps the same
        ``num_envs`` envs in lockstep (one rollout per batch), so the sum is its own count times the ranks."""
        if self.stream is None:
            return self._restored_env_steps
        return self.stream.env_steps * self.stream.world_size

    def on_save_checkpoint(self, checkpoint: dict) -> None:
        checkpoint["gbx"] = {"env_steps": self.env_steps, "opt_steps": self.opt_steps,
                             "world_size": self.ranks()[1]}
        if self.stream is not None:  # the stream's state holds the env's; this says how big it is, and if it is there
            checkpoint["gbx_env_state"] = self.stream.env_state_plan()
        # the log interval in flight, so that a run resumed from any step writes the records it would have written
        rows = torch.stack(self._metric_rows).cpu() if self._metric_rows else None
        cpu = {k: None if v is None else v.cpu() for k, v in (("sums", self._metric_sums),
                                                              ("counts", self._metric_counts),
                                                              ("first_nonfinite", self._first_nonfinite))}
        checkpoint["gbx_metrics"] = {"names": self._metric_names, "rows": rows, "first_step": self._metric_first_step,
                                     **cpu}

    def on_load_checkpoint(self, checkpoint: dict) -> None:
        counters = checkpoint.get("gbx", {})
        trainer = self._attached_trainer()
        saved, world = int(counters.get("world_size", 1)), self.ranks()[1]
        if trainer is not None and trainer.state.fn == "fit" and saved != world:
            raise ConfigError("trainer.devices", world_size_problem(saved, world))
        self.opt_steps = int(counters.get("opt_steps", 0))
        self._restored_env_steps = int(counters.get("env_steps", 0))
        self.restored_env_state = checkpoint.get("gbx_env_state")
        metrics = checkpoint.get("gbx_metrics")
        if metrics is not None:   # moved to the device in on_train_start (the module is not there yet)
            self._metric_names, self._metric_first_step = metrics["names"], metrics["first_step"]
            self._metric_rows = list(metrics["rows"]) if metrics["rows"] is not None else []
            self._metric_sums, self._metric_counts = metrics["sums"], metrics["counts"]
            self._first_nonfinite = metrics["first_nonfinite"]

    def on_train_start(self) -> None:
        """After a restore: the configured lr wins over the checkpoint's, and a moved max_steps re-plans the anneal;
        the restored log interval moves to the device."""
        dev = self.device
        self._metric_rows = [r.to(dev) for r in self._metric_rows]
        for name in ("_metric_sums", "_metric_counts", "_first_nonfinite"):
            if getattr(self, name) is not None:
                setattr(self, name, getattr(self, name).to(dev))
        sched = self.lr_schedulers()
        opt = self.optimizers(use_pl_optimizer=False)
        factor = 1.0
        if sched is not None:
            anneal = sched.lr_lambdas[0]
            if anneal.end != self.trainer.max_steps:
                anneal.extend_to(self.trainer.global_step, self.trainer.max_steps)
            sched.base_lrs = [self.hparams.lr for _ in opt.param_groups]
            factor = anneal(self.trainer.global_step)
        for group in opt.param_groups:
            group["lr"] = self.hparams.lr * factor

    # ---- one optimizer step, shared by both algorithms ---------------------------------------------
    def step_optimizer(self, out: dict[str, torch.Tensor]) -> None:
        """Backward ``out["loss"]``, clip the gradient norm, step the optimizer (and the lr schedule), track ``out``."""
        self.manual_backward(out["loss"])
        self.apply_gradients(out)

    def apply_gradients(self, out: dict[str, torch.Tensor]) -> None:
        """``step_optimizer`` after the backward: clip the gradient the parameters hold, step, zero it, track ``out``
        (REINFORCE backwards several rollouts first: gradient accumulation)."""
        opt = self.optimizers()
        max_norm = self.hparams.max_grad_norm
        # clip_grad_norm_ returns the pre-clip norm as a device tensor (no host sync)
        grad_norm = torch.nn.utils.clip_grad_norm_(self.policy.parameters(),
                                                   max_norm if max_norm is not None else float("inf"))
        opt.step()
        opt.zero_grad(set_to_none=True)
        sched = self.lr_schedulers()
        if sched is not None:
            sched.step()
        self.opt_steps += 1
        self._track(out, grad_norm)

    # the loss terms a record carries: name in the loss's output -> JSONL key
    _LOG_NAMES = {"loss": "loss", "policy_loss": "loss_policy", "value_loss": "loss_value", "entropy": "entropy",
                  "value_mean": "value_mean", "advantage_mean": "advantage_mean", "approx_kl": "approx_kl",
                  "clipfrac": "clipfrac", "explained_variance": "explained_variance"}

    def _track(self, out: dict[str, torch.Tensor], grad_norm: torch.Tensor) -> None:
        """Keep this step's loss terms and grad norm for the next log record (reduced on device by ``pop_metrics``)."""
        if self._metric_names is None:
            self._metric_names = [k for k in self._LOG_NAMES if k in out]
        if not self._metric_rows:
            self._metric_first_step = self.opt_steps
        self._metric_rows.append(torch.stack([out[k].detach().float() for k in self._metric_names]
                                             + [grad_norm.detach().float()]))
        if len(self._metric_rows) >= 256:
            self._fold_metrics()

    _NEVER = 1 << 62  # "no non-finite value yet" in _first_nonfinite

    def _fold_metrics(self) -> None:
        if self._metric_rows:
            rows = torch.stack(self._metric_rows)
            self._metric_rows = []
            finite = rows.isfinite()  # explained variance is NaN where the returns did not vary: left out
            sums, counts = torch.where(finite, rows, 0.0).sum(0), finite.sum(0)
            if self._metric_sums is None:
                self._metric_sums, self._metric_counts = sums, counts
            else:
                self._metric_sums, self._metric_counts = self._metric_sums + sums, self._metric_counts + counts
            self._first_nonfinite = self._first_bad(rows)

    def _first_bad(self, rows: torch.Tensor | None = None) -> torch.Tensor | None:
        """Per tracked column, the first optimizer step it was non-finite (_NEVER: not yet), on device: what was
        folded so far and ``rows`` (default: the rows not folded yet, which stay unfolded: folding at another
        step would change the sums' rounding, and a resumed run's records must equal the straight run's)."""
        if rows is None:
            rows = torch.stack(self._metric_rows) if self._metric_rows else None
        if rows is None:
            return self._first_nonfinite
        steps = torch.arange(rows.shape[0], device=rows.device) + self._metric_first_step
        first = torch.where(rows.isfinite(), self._NEVER, steps[:, None]).amin(0)
        if "explained_variance" in self._metric_names:  # NaN where the returns did not vary: not a failure
            first[self._metric_names.index("explained_variance")] = self._NEVER
        return first if self._first_nonfinite is None else torch.minimum(self._first_nonfinite, first)

    def _params_finite(self) -> torch.Tensor:
        return torch.stack([p.detach().isfinite().all() for p in self.policy.parameters()]).all()

    def _nonfinite_from(self, first: list[float], params_finite: float) -> tuple[str, int | None] | None:
        step = min(first, default=self._NEVER)
        if step < self._NEVER:
            names = [self._LOG_NAMES.get(n, n) for n, s in zip(self._metric_names + ["grad_norm"], first) if s == step]
            return ", ".join(names), int(step)
        if not params_finite:
            return "parameters", self.opt_steps
        return None

    def pop_metrics(self) -> dict[str, float | None]:
        """Means of the tracked losses and grad norms since the last call, plus lr (one host read, which also
        reads whether anything went non-finite: ``self.nonfinite``). Under DDP a collective: the means are over
        every rank's optimizer steps, and a non-finite value on any rank stops every rank."""
        self._fold_metrics()
        out: dict[str, float | None] = {}
        if self._metric_sums is not None:
            k = self._metric_sums.numel()
            packed = self.sum_over_ranks(torch.cat([self._metric_sums, self._metric_counts.to(self._metric_sums)]))
            first = self.min_over_ranks(torch.cat([self._first_nonfinite.double(),
                                                   self._params_finite().double()[None]]))
            vals = torch.cat([(packed[:k] / packed[k:]).double(), first]).tolist()
            for name, v in zip(self._metric_names + ["grad_norm"], vals[:k]):
                out[self._LOG_NAMES.get(name, name)] = v
            self.nonfinite = self._nonfinite_from(vals[k:2 * k], vals[-1])
            self._metric_sums = self._metric_counts = None
        opt = self.optimizers(use_pl_optimizer=False) if self._attached_trainer() is not None else None
        out["lr"] = opt.param_groups[0]["lr"] if opt is not None else self.hparams.lr
        return out

    def find_nonfinite(self) -> tuple[str, int | None] | None:
        """(what, opt step) if a loss term or the grad norm has been non-finite since the start, or a parameter
        is now; else None. One host read: called before each checkpoint write (``safety.NonFiniteGuard``)."""
        if self.policy is None:
            return None
        params_finite = self._params_finite().double()[None]
        first = self._first_bad()
        vals = torch.cat([(first if first is not None else params_finite[:0]).double(), params_finite])
        vals = self.min_over_ranks(vals).tolist()   # DDP: every rank refuses the checkpoint, or none
        return self._nonfinite_from(vals[:-1], vals[-1])

    # ---- evaluation: `validate` / `test` (and validation during fit) -------------------------------
    def _eval_loader(self):
        rank, _ = self.ranks()
        return EvalEpisodes(self._get_eval_env(), self.policy, self.hparams.eval_seed + rank,
                            greedy=self.hparams.eval_greedy, record_clip=rank == 0)

    def val_dataloader(self):
        return self._eval_loader()

    def test_dataloader(self):
        return self._eval_loader()

    def _eval_step(self, batch: dict[str, torch.Tensor], prefix: str) -> None:
        """Success rate over all evaluation episodes (one that did not finish counts as a failure), the
        other means over finished episodes; ``steps_to_success`` over successful ones (NaN if none).

        Under DDP each rank ran its share of the episodes: the sums are added over the ranks (one collective)
        before dividing, so the means are over all episodes (a mean of per-rank means would weigh them wrongly).
        """
        self.last_eval_clip = batch.get("clip")
        finished = batch["finished"]
        wins = (batch["success"] & finished).float()
        extras = [k for k in batch if k not in ("finished", "episode_return", "success", "episode_length", "clip")]
        sums = torch.stack([finished.float().sum(), finished.new_tensor(finished.shape[0], dtype=torch.float),
                            (batch["episode_return"].float() * finished).sum(), wins.sum(),
                            (batch["episode_length"].float() * wins).sum(),
                            (batch["episode_length"].float() * finished).sum()]
                           + [(batch[k].float() * finished).sum() for k in extras])
        ended, total, ret, won, won_length, length, *extra_sums = self.sum_over_ranks(sums)
        denom = ended.clamp(min=1)
        metrics = {f"{prefix}/episodes": ended, f"{prefix}/return_mean": ret / denom,
                   f"{prefix}/success_rate": won / total, f"{prefix}/steps_to_success": won_length / won,
                   f"{prefix}/length_mean": length / denom}
        for k, v in zip(extras, extra_sums):
            metrics[f"{prefix}/{k}_mean"] = v / denom
        # logger=False: the JSONL/logger callback (TrainingLog) records eval results against env_steps; no
        # sync_dist: the values are already over all ranks
        self.log_dict(metrics, logger=False, batch_size=int(finished.shape[0]))

    def validation_step(self, batch, batch_idx):
        self._eval_step(batch, "eval")

    def test_step(self, batch, batch_idx):
        self._eval_step(batch, "test")


class A2CModule(RLModule):
    """Advantage actor-critic with one-step TD(0) targets, one update per ``update_every`` env steps.

    One optimizer step per rollout of T = ``update_every`` steps of all N envs: the gradient of the
    mean TD(0) loss over those T*N transitions, clipped and applied. So
    ``opt_steps = env_steps / (num_envs * update_every)``. Every row keeps its own one-step target
    r + gamma * (1 - terminated) * V(s'), and all rows were acted with the same weights, so this is
    the sum of the T per-step gradients / T: gradient accumulation over T env steps, in one pass
    (tests/test_trainer.py checks it). ``sample_transforms`` (``reward_norm``, ``rl/normalize.py``) rescales
    the rollout's rewards before the targets.
    """

    def __init__(self, env: str = "foraging", env_kwargs: dict | None = None, num_envs: int = 32,
                 env_device: str = "auto",
                 policy: str = "cnn", policy_kwargs: dict | None = None, gamma: float = 0.99, lr: float = 7e-4,
                 update_every: int = 5, max_grad_norm: float | None = 0.5, value_coef: float = 0.5,
                 entropy_coef: float = 0.01, adam_eps: float = 1e-5, seed: int | None = None,
                 eval_episodes: int = 32, eval_greedy: bool = False, eval_seed: int = 1_000_003,
                 sample_transforms: list[dict] | None = None):
        self.check_config(**_init_args(locals()))
        super().__init__(env=env, env_kwargs=env_kwargs, num_envs=num_envs, env_device=env_device,
                         policy=policy, policy_kwargs=policy_kwargs, gamma=gamma, lr=lr, max_grad_norm=max_grad_norm,
                         value_coef=value_coef, entropy_coef=entropy_coef, adam_eps=adam_eps, seed=seed,
                         eval_episodes=eval_episodes, eval_greedy=eval_greedy, eval_seed=eval_seed)

    @classmethod
    def check_config(cls, **hp: Any) -> None:
        super().check_config(**hp)
        if "update_every" in hp:
            _require_number("update_every", hp["update_every"], low=1, integer=True)

    def steps_per_rollout(self) -> int:
        return self.hparams.update_every

    def training_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> None:
        """One update from a [T, N] rollout (T = update_every), acted with these weights."""
        t0 = time.perf_counter()
        hp = self.hparams
        # 1. V(s') of the true next states, no gradient (bootstraps through truncation; a2c_td0 masks termination)
        with torch.no_grad():
            _, next_values = self.policy(batch["final_obs"].flatten(0, 1))
        # 2. log pi(a|s), H(pi(.|s)), V(s) with gradient; the TD(0) actor-critic loss over all T*N transitions
        logprobs, entropy, values = self.policy.evaluate(batch["obs"].flatten(0, 1), batch["actions"].flatten())
        rewards = apply_sample_transforms(hp.get("sample_transforms"), "rewards", batch["rewards"])
        out = a2c_td0(logprobs, entropy, values, rewards.flatten(), next_values,
                      batch["terminated"].flatten(), gamma=hp.gamma, value_coef=hp.value_coef,
                      entropy_coef=hp.entropy_coef)
        # 3. backward, clip, step
        self.step_optimizer(out)
        self.time_update_s += time.perf_counter() - t0


class PPOModule(RLModule):
    """PPO with clipped surrogate (Schulman et al. 2017) on T-step rollouts of N envs, as CleanRL's ppo.py.

    Each batch is one rollout (T = ``rollout_steps``); ``training_step`` computes GAE(lambda)
    advantages and returns, then runs ``epochs`` passes over the T*N samples in ``minibatches``
    shuffled minibatches, one optimizer step each: one rollout = ``epochs * minibatches`` optimizer
    steps (``trainer.max_steps`` must be a multiple of it). ``anneal_lr`` decays the learning rate
    linearly to 0 at ``trainer.max_steps`` (``LinearAnneal``). ``sample_transforms`` (``rl/normalize.py``):
    ``reward_norm`` before GAE, ``advantage_norm`` after it (per rollout or per env, instead of
    ``normalize_advantages``' per minibatch); the value targets are GAE's returns either way.
    """

    def __init__(self, env: str = "foraging", env_kwargs: dict | None = None, num_envs: int = 32,
                 env_device: str = "auto",
                 policy: str = "cnn", policy_kwargs: dict | None = None, gamma: float = 0.99, lr: float = 2.5e-4,
                 rollout_steps: int = 128, epochs: int = 4, minibatches: int = 4, gae_lambda: float = 0.95,
                 clip_coef: float = 0.2, value_clip: float | None = None, normalize_advantages: bool = True,
                 anneal_lr: bool = False, max_grad_norm: float | None = 0.5, value_coef: float = 0.5,
                 entropy_coef: float = 0.01, adam_eps: float = 1e-5, seed: int | None = None,
                 eval_episodes: int = 32, eval_greedy: bool = False, eval_seed: int = 1_000_003,
                 sample_transforms: list[dict] | None = None):
        self.check_config(**_init_args(locals()))
        super().__init__(env=env, env_kwargs=env_kwargs, num_envs=num_envs, env_device=env_device,
                         policy=policy, policy_kwargs=policy_kwargs, gamma=gamma, lr=lr, max_grad_norm=max_grad_norm,
                         value_coef=value_coef, entropy_coef=entropy_coef, adam_eps=adam_eps, seed=seed,
                         eval_episodes=eval_episodes, eval_greedy=eval_greedy, eval_seed=eval_seed)
        self.opt_steps_per_batch = epochs * minibatches

    @classmethod
    def check_config(cls, **hp: Any) -> None:
        super().check_config(**hp)
        for name in ("rollout_steps", "epochs", "minibatches"):
            if name in hp:
                _require_number(name, hp[name], low=1, integer=True)
        if {"rollout_steps", "minibatches", "num_envs"} <= hp.keys():
            _require(hp["minibatches"] <= hp["rollout_steps"] * hp["num_envs"], "minibatches",
                     f"<= rollout_steps * num_envs = {hp['rollout_steps'] * hp['num_envs']}", hp["minibatches"])
        if "gae_lambda" in hp:
            _require_number("gae_lambda", hp["gae_lambda"], low=0, high=1)
        if "clip_coef" in hp:
            _require_number("clip_coef", hp["clip_coef"], low=0, low_open=True)
        if "value_clip" in hp:
            _require_number("value_clip", hp["value_clip"], low=0, low_open=True, none="null")
        for i, item in enumerate(hp.get("sample_transforms") or ()):
            _require(item["name"] != "advantage_norm" or not hp.get("normalize_advantages", True),
                     f"sample_transforms[{i}]", "used with normalize_advantages: false (that one normalises "
                     "every minibatch's advantages again; set it false to normalise by this item)", item)

    sample_transform_names = ("reward_norm", "advantage_norm")

    @classmethod
    def check_max_steps(cls, max_steps, **hp: Any) -> None:
        """Whole rollouts only: a run stopped inside one would drop the rest of its update on resume."""
        cycle = hp["epochs"] * hp["minibatches"]
        if isinstance(max_steps, int) and max_steps > 0 and max_steps % cycle:
            down, up = max_steps // cycle * cycle, -(-max_steps // cycle) * cycle
            raise ConfigError("trainer.max_steps", f"must be a multiple of epochs * minibatches = {cycle} (PPO "
                              f"updates whole rollouts), got {max_steps}; use {up}" + (f" or {down}" if down else ""))
        if hp.get("anneal_lr") and not (isinstance(max_steps, int) and max_steps > 0):
            raise ConfigError("trainer.max_steps", f"must be set (> 0) with model.anneal_lr: true (the learning "
                              f"rate reaches 0 there), got {max_steps}")

    rollout_field = "rollout_steps"

    def steps_per_rollout(self) -> int:
        return self.hparams.rollout_steps

    def configure_optimizers(self):
        optimizer = super().configure_optimizers()
        if not self.hparams.anneal_lr:
            return optimizer
        return [optimizer], [torch.optim.lr_scheduler.LambdaLR(optimizer, LinearAnneal(self.trainer.max_steps))]

    def training_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> None:
        """One PPO update from one [T, N] rollout: bootstrap, GAE, epochs x minibatches clipped-surrogate steps."""
        t0 = time.perf_counter()
        hp = self.hparams
        T, N = batch["rewards"].shape
        # 1. bootstrap: V(s') of every step's true next state (through truncations and the rollout's end), then GAE
        with torch.no_grad():
            _, next_values = self.policy(batch["final_obs"].flatten(0, 1))
            rewards = apply_sample_transforms(hp.get("sample_transforms"), "rewards", batch["rewards"])
            advantages, returns = gae(rewards, batch["values"], next_values.view(T, N), batch["terminated"],
                                      batch["truncated"], hp.gamma, hp.gae_lambda)
            advantages = apply_sample_transforms(hp.get("sample_transforms"), "advantages", advantages)
        # 2. flatten the rollout into T*N samples
        b_obs, b_actions = batch["obs"].flatten(0, 1), batch["actions"].flatten()
        b_logprobs, b_values = batch["logprobs"].flatten(), batch["values"].flatten()
        b_advantages, b_returns = advantages.flatten(), returns.flatten()
        explained_var = explained_variance(b_values, b_returns)
        # 3. optimise the clipped surrogate: `epochs` shuffled passes of `minibatches` minibatches. Shuffled with the
        #    stream's generator, whose state every checkpoint holds, so a resumed run shuffles as the straight one.
        for _ in range(hp.epochs):
            perm = torch.randperm(T * N, generator=self.stream.generator, device=b_obs.device)
            for mb in perm.chunk(hp.minibatches):
                new_logprobs, entropy, new_values = self.policy.evaluate(b_obs[mb], b_actions[mb])
                out = ppo_loss(new_logprobs, b_logprobs[mb], b_advantages[mb], new_values, b_values[mb],
                               b_returns[mb], entropy, clip_coef=hp.clip_coef, value_clip=hp.value_clip,
                               normalize_advantages=hp.normalize_advantages, value_coef=hp.value_coef,
                               entropy_coef=hp.entropy_coef)
                out["value_mean"] = new_values.detach().mean()
                out["explained_variance"] = explained_var
                self.step_optimizer(out)
        self.time_update_s += time.perf_counter() - t0


def _episode_limit(hp: dict) -> int | None:
    """The env's time limit in steps (its ``max_steps`` option, given or default), or None if it has none."""
    param = inspect.signature(_env_registry()[hp["env"]]).parameters.get("max_steps")
    if param is None:
        return None
    limit = (_yaml_values(hp.get("env_kwargs")) or {}).get("max_steps", param.default)
    return limit if isinstance(limit, int) and not isinstance(limit, bool) else None


class REINFORCEModule(RLModule):
    """REINFORCE (Williams 1992): Monte-Carlo returns, an optional learned baseline, an entropy bonus, and
    ``accumulate`` rollouts per optimizer step.

    Whole episodes from a stream of fixed-length rollouts. Each batch is one rollout of T = ``rollout_steps``
    steps of N envs that auto-reset at different times. ``rl.monte_carlo_returns`` computes every step's
    return by a reverse scan over T (vectorised over N), stopped at each episode end, so a reset inside the
    rollout leaks nothing across episodes. Each env's steps after its last episode end in the rollout have no
    return yet: they are dropped from the loss, not carried over. Carrying them into the next rollout would
    mix two policies in one return (the steps before the update were acted with the old weights) and make
    REINFORCE off-policy; dropped, every sample is on-policy and the update needs its own rollout only, so
    the stream's state is all a checkpoint needs (plus a partial accumulation, below).
    What dropping costs: the env steps of the tails are spent without a gradient, and an episode that
    straddles two rollouts trains only its later steps, so early-episode states weigh less than on-policy.
    With every episode cut at the time limit L and T = L about half the steps are dropped; with episodes
    much shorter than T, about half an episode per env and rollout. Each record logs the used share
    (``complete_fraction``). ``rollout_steps`` must be >= the env's ``max_steps`` (a config error
    otherwise): then every env ends an episode in every rollout, and no step is beyond reach of a return.

    Truncation (the env's time limit) ends the return like termination does: plain Monte Carlo, the return
    of the time-limited episode the env defines. ``bootstrap_truncated`` (needs ``baseline``) instead
    completes a truncated step's return with gamma * V(final_obs), as A2C and PPO bootstrap through a time
    limit; a terminated return is never bootstrapped.

    The loss (``rl.reinforce_loss``): the mean over the used samples of -(G_t - V(s_t)) * log pi(a_t|s_t)
    (G_t alone without ``baseline``), + value_coef * 0.5 * (V(s_t) - G_t)^2, - entropy_coef * H.
    ``normalize_advantages`` (on by default: it makes the step size independent of the return scale)
    normalises the advantages per rollout.

    Gradient accumulation: the ``accumulate`` rollouts of one optimizer step are all acted with the same
    weights (no step between them), so together they are one on-policy batch. Each rollout's summed loss is
    backwarded when it comes (its graph freed); at the last one the summed gradient is divided by the total
    number of used samples, which is exactly the gradient of the mean over all of them (tests/test_reinforce.py
    checks it; with ``normalize_advantages`` each rollout is normalised with its own statistics). A stop between
    two rollouts of one step saves the partial gradient and sums in the checkpoint, so the resume is exact.
    Counting: ``trainer.max_steps`` = optimizer steps, ``opt_steps = env_steps / (rollout_steps * num_envs *
    accumulate)``; ``val_check_interval`` counts rollouts.
    """

    def __init__(self, env: str = "foraging", env_kwargs: dict | None = None, num_envs: int = 32,
                 env_device: str = "auto",
                 policy: str = "cnn", policy_kwargs: dict | None = None, gamma: float = 0.99, lr: float = 1e-3,
                 rollout_steps: int = 200, accumulate: int = 1, baseline: bool = True,
                 normalize_advantages: bool = True, bootstrap_truncated: bool = False,
                 max_grad_norm: float | None = 0.5, value_coef: float = 0.5, entropy_coef: float = 0.01,
                 adam_eps: float = 1e-5, seed: int | None = None, eval_episodes: int = 32, eval_greedy: bool = False,
                 eval_seed: int = 1_000_003):
        self.check_config(**_init_args(locals()))
        super().__init__(env=env, env_kwargs=env_kwargs, num_envs=num_envs, env_device=env_device,
                         policy=policy, policy_kwargs=policy_kwargs, gamma=gamma, lr=lr, max_grad_norm=max_grad_norm,
                         value_coef=value_coef, entropy_coef=entropy_coef, adam_eps=adam_eps, seed=seed,
                         eval_episodes=eval_episodes, eval_greedy=eval_greedy, eval_seed=eval_seed)
        self._parts = 0                                   # rollouts backwarded since the last optimizer step
        self._sums: torch.Tensor | None = None            # their loss terms and counts, summed (_SUMS)
        self._restored_accumulation: dict | None = None   # a checkpoint's partial accumulation, applied at train start

    @classmethod
    def check_config(cls, **hp: Any) -> None:
        super().check_config(**hp)
        for name in ("rollout_steps", "accumulate"):
            if name in hp:
                _require_number(name, hp[name], low=1, integer=True)
        for name in ("baseline", "normalize_advantages", "bootstrap_truncated"):
            if name in hp:
                _require(isinstance(hp[name], bool), name, "true or false", hp[name])
        if hp.get("bootstrap_truncated") and not hp.get("baseline", True):
            raise ConfigError("bootstrap_truncated", "needs baseline: true (a truncated return is completed with the "
                              "learned V(s')), got baseline: false")
        limit = _episode_limit(hp)
        if "rollout_steps" in hp and limit is not None and hp["rollout_steps"] < limit:
            raise ConfigError("rollout_steps", f"must be >= the env's episode limit env_kwargs.max_steps = {limit} "
                              f"(Monte-Carlo returns need every episode to end inside one rollout), got "
                              f"{hp['rollout_steps']}")

    rollout_field = "rollout_steps"
    _LOG_NAMES = {**RLModule._LOG_NAMES, "complete_fraction": "complete_fraction"}
    # what _sums holds per accumulated rollout (sums over its used samples, but `total`: all its samples)
    _SUMS = ("loss", "policy_loss", "value_loss", "entropy", "samples", "total", "value", "ret", "ret_sq", "err",
             "err_sq")

    def steps_per_rollout(self) -> int:
        return self.hparams.rollout_steps

    def train_dataloader(self):
        stream = super().train_dataloader()
        if self.trainer.max_steps > 0:   # accumulate rollouts per optimizer step
            stream.num_batches = self.trainer.max_steps * self.hparams.accumulate
        return stream

    def training_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> None:
        """Backward one [T, N] rollout's REINFORCE loss; every ``accumulate`` rollouts, one optimizer step."""
        t0 = time.perf_counter()
        hp = self.hparams
        T, N = batch["rewards"].shape
        # 1. Monte-Carlo returns to each episode's end, and which steps have one (their episode ended in the rollout)
        with torch.no_grad():
            truncation_values = None
            if hp.bootstrap_truncated:   # V(s') completes a truncated return
                _, next_values = self.policy(batch["final_obs"].flatten(0, 1))
                truncation_values = next_values.view(T, N)
            returns, complete = monte_carlo_returns(batch["rewards"], batch["terminated"], batch["truncated"],
                                                    hp.gamma, truncation_values)
        # 2. log pi(a|s), H, V(s) with gradient; the loss summed over the steps that have a return
        returns, complete = returns.flatten(), complete.flatten()
        logprobs, entropy, values = self.policy.evaluate(batch["obs"].flatten(0, 1), batch["actions"].flatten())
        out = reinforce_loss(logprobs, entropy, returns, complete, values if hp.baseline else None,
                             value_coef=hp.value_coef, entropy_coef=hp.entropy_coef,
                             normalize_advantages=hp.normalize_advantages, reduction="sum")
        loss = out["loss"] if hp.baseline else out["loss"] + 0.0 * values.sum()  # DDP wants every parameter used
        # 3. accumulate the gradient; the last rollout of the step divides it by the used samples and steps
        self.manual_backward(loss)
        self._add_sums(out, values.detach(), returns, complete)
        self._parts += 1
        if self._parts >= hp.accumulate:
            self._step()
        self.time_update_s += time.perf_counter() - t0

    def _add_sums(self, out: dict[str, torch.Tensor], values: torch.Tensor, returns: torch.Tensor,
                  complete: torch.Tensor) -> None:
        """Add this rollout's loss sums and value-fit moments to ``_sums`` (float64, summed over the DDP ranks)."""
        m = complete.double()
        v, g = values.double(), returns.double()
        e = g - v
        part = torch.stack([out["loss"].detach().double(), out["policy_loss"].double(), out["value_loss"].double(),
                            out["entropy"].double(), out["samples"].double(), torch.full_like(m[0], m.numel()),
                            (v * m).sum(), (g * m).sum(), (g * g * m).sum(), (e * m).sum(), (e * e * m).sum()])
        part = self.sum_over_ranks(part)   # every rank holds the same sums (and checkpoints rank 0's)
        self._sums = part if self._sums is None else self._sums + part

    def _step(self) -> None:
        """Gradient / used samples (the mean over the accumulated batch; DDP averaged it over the ranks: x ranks),
        then clip and step; log the accumulated batch's means."""
        s = dict(zip(self._SUMS, self._sums.unbind()))
        n = s["samples"].clamp(min=1.0)
        scale = (self.ranks()[1] / n).float()
        for p in self.policy.parameters():
            if p.grad is not None:
                p.grad.mul_(scale)
        out = {k: (s[k] / n).float() for k in ("loss", "policy_loss", "value_loss", "entropy")}
        if self.hparams.baseline:
            mean_ret, mean_err = s["ret"] / n, s["err"] / n
            var_ret = s["ret_sq"] / n - mean_ret ** 2
            var_err = s["err_sq"] / n - mean_err ** 2
            defined = var_ret > 1e-12 * (s["ret_sq"] / n)   # constant returns: undefined, as rl.explained_variance
            out["value_mean"] = (s["value"] / n).float()
            out["explained_variance"] = torch.where(defined, 1.0 - var_err / var_ret, float("nan")).float()
        out["complete_fraction"] = (s["samples"] / s["total"]).float()
        self._parts, self._sums = 0, None
        self.apply_gradients(out)

    # ---- a partial accumulation in the checkpoint ----------------------------------------------------
    def on_save_checkpoint(self, checkpoint: dict) -> None:
        super().on_save_checkpoint(checkpoint)
        grads = [None if p.grad is None else p.grad.detach().cpu() for p in self.policy.parameters()] \
            if self._parts else None
        checkpoint["gbx_reinforce"] = {"parts": self._parts, "grads": grads,
                                       "sums": None if self._sums is None else self._sums.cpu()}

    def on_load_checkpoint(self, checkpoint: dict) -> None:
        super().on_load_checkpoint(checkpoint)
        self._restored_accumulation = checkpoint.get("gbx_reinforce")

    def on_train_start(self) -> None:
        super().on_train_start()
        state, self._restored_accumulation = self._restored_accumulation, None
        if state is None or not state["parts"]:
            return
        self._parts = int(state["parts"])
        self._sums = state["sums"].to(self.device)
        for p, g in zip(self.policy.parameters(), state["grads"]):
            p.grad = None if g is None else g.to(device=p.device, dtype=p.dtype)
