"""LightningModules for streaming A2C (TD(0)) and PPO on a vector env.

One batch = one update of the algorithm. A2C: one optimizer step per ``update_every`` env
steps (a hyper-parameter of the algorithm, not of the Trainer; the stream delivers those
transitions as one batch). PPO: one batch per T-step rollout, and ``training_step`` runs
the epochs x minibatches loop on it, one optimizer step per minibatch (rollout, then the
update loop in one place, as CleanRL reads; Lightning's per-batch work is paid once per
rollout). Why manual optimisation: both clip the gradient norm and log the pre-clip norm
without a host sync, and with ``automatic_optimization = False`` each ``training_step``
reads as the algorithm: forward, loss (from ``gbx_lightning.rl``), backward, clip, step.
Lightning still owns the outer loop, devices, checkpoints, callbacks and logging, and
``trainer.global_step`` counts optimizer steps (``opt.step()`` calls), so
``trainer.max_steps`` is the number of updates; ``val_check_interval`` counts batches
(A2C updates, PPO rollouts). Backward and step go through Lightning's wrappers only when
something listens to their hooks or needs them (AMP, multi-device); otherwise torch is called
directly and the step is still counted (``RLModule._can_step_directly``).

Where things live: the env and the policy are built in ``setup`` (after config
validation, on the Trainer's device; the env's observation shape sizes the
policy). The env is stepped by ``data.RolloutStream`` with this module's policy.
``env_steps`` (owned by the stream) and ``opt_steps`` are stored in every
checkpoint under ``checkpoint["gbx"]``; the stream's full state (RNG, env,
current observation) is stored by Lightning's fit loop.
"""

from __future__ import annotations

import inspect
import math
import time
import warnings
from typing import Any

import torch
import torch.nn.functional as F
from lightning.pytorch import LightningModule

from gbx_lightning.data import EvalEpisodes, RolloutStream, UNBOUNDED
from gbx_lightning.models import POLICY_REGISTRY, make_policy
from gbx_lightning.rl import a2c_td0, ppo_loss

__all__ = ["ConfigError", "RLModule", "A2CModule", "PPOModule"]

# The stream is an in-process IterableDataset by design (num_workers=0, length = batch budget), and
# checkpoints taken after the optimizer step are what we want; these Lightning hints do not apply.
for _msg in (r".*does not have many workers.*", r".*`IterableDataset` has `__len__` defined.*",
             r".*Using ModelCheckpoint with manual optimization and every_n_train_steps.*",
             r".*isinstance\(treespec, LeafSpec\).*"):
    warnings.filterwarnings("ignore", message=_msg)


def _signature_precomputed(fn):
    """Store ``fn``'s signature on it (``inspect`` returns ``__signature__`` when present).

    Lightning asks whether ``training_step`` takes ``batch_idx`` on every batch
    (``inspect.getfullargspec`` in the training loop's ``_build_kwargs``); with the signature
    precomputed that question no longer rebuilds it from the code object each time.
    """
    fn.__signature__ = inspect.signature(fn)
    return fn


class ConfigError(ValueError):
    """A bad hyper-parameter, found before anything is built. ``field`` is the config key (without ``model.``)."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field} {message}")
        self.field = field


def _env_registry() -> dict:
    from gbx_lightning.envs import ENV_REGISTRY

    return ENV_REGISTRY


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_num(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _init_args(frame_locals: dict) -> dict:
    return {k: v for k, v in frame_locals.items() if k not in ("self", "__class__")}


def _require(ok: bool, field: str, expected: str, got) -> None:
    if not ok:
        raise ConfigError(field, f"must be {expected}, got {got!r}")


def _yaml_values(options: dict | None) -> dict | None:
    """Entries given on the command line one by one (``--model.init_args.env_kwargs.level 3``) arrive as
    strings; read those that are YAML numbers, booleans, null or lists as such ("3" -> 3, "[8, 16]" ->
    [8, 16]); other strings (paths, names) stay strings."""
    if not isinstance(options, dict):
        return options
    import yaml

    out = {}
    for key, value in options.items():
        if isinstance(value, str):
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


class RLModule(LightningModule):
    """What A2C and PPO share: env + policy construction, acting, evaluation, step counters.

    Args:
        env: registered env name (``gbx_lightning.envs.ENV_REGISTRY``).
        env_kwargs: env options (e.g. ForagingEnv ``obs_mode``, ``max_steps``); ``num_envs`` and
            ``device`` are set by the module.
        num_envs: envs stepped in parallel for training.
        policy: registered policy name (``gbx_lightning.models.POLICY_REGISTRY``).
        policy_kwargs: policy options (e.g. ``hidden``).
        gamma, lr, max_grad_norm, value_coef, entropy_coef, adam_eps: the usual.
        seed: env and action-sampling seed; ``None`` uses the process seed (``seed_everything``).
        eval_episodes: episodes per ``validate``/``test`` (one per eval env, run in parallel).
        eval_greedy: evaluate the argmax action instead of sampling.
        eval_seed: fixed seed so every evaluation sees the same episode starts.
    """

    def __init__(self, env: str = "foraging", env_kwargs: dict | None = None, num_envs: int = 32,
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
        self._direct_steps = False  # set in on_train_start (see _can_step_directly)
        self._metric_names: list[str] | None = None
        self._metric_sums: torch.Tensor | None = None
        self._metric_count = 0
        self._metric_pending: list[list[torch.Tensor]] = []
        self._grad_norm_sum: torch.Tensor | None = None
        self._grad_norm_count = 0
        self.last_eval_clip: torch.Tensor | None = None  # env 0's screens in the last evaluation (pixel envs)

    def __setattr__(self, name: str, value: Any) -> None:
        # nn.Module.__setattr__ runs Parameter's Python-level isinstance check on every assignment, and
        # Lightning assigns `_current_fx_name` around every hook (~30 times per batch). Plain values for
        # names that are not parameters, buffers or submodules can skip it: same result, measurably cheaper
        # per batch next to a ~1 ms env step (tools/bench_trainer.py).
        if not isinstance(value, (torch.Tensor, torch.nn.Module)):
            d = self.__dict__
            if name not in d.get("_parameters", ()) and name not in d.get("_modules", ()) \
                    and name not in d.get("_buffers", ()):
                object.__setattr__(self, name, value)
                return
        super().__setattr__(name, value)

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
        g = hp.get("gamma")
        _require(_is_num(g) and 0 < g <= 1, "gamma", "in (0, 1]", g)
        _require(_is_num(hp.get("lr")) and hp["lr"] > 0, "lr", "> 0", hp.get("lr"))
        _require(_is_int(hp.get("num_envs")) and hp["num_envs"] >= 1, "num_envs", "an int >= 1", hp.get("num_envs"))
        mgn = hp.get("max_grad_norm")
        _require(mgn is None or (_is_num(mgn) and mgn > 0), "max_grad_norm", "> 0 or null", mgn)
        for name in ("value_coef", "entropy_coef"):
            _require(_is_num(hp.get(name)) and hp[name] >= 0, name, ">= 0", hp.get(name))
        _require(_is_num(hp.get("adam_eps")) and hp["adam_eps"] > 0, "adam_eps", "> 0", hp.get("adam_eps"))
        _require(hp.get("seed") is None or _is_int(hp["seed"]), "seed", "an int or null", hp.get("seed"))
        _require(_is_int(hp.get("eval_episodes")) and hp["eval_episodes"] >= 1, "eval_episodes", "an int >= 1",
                 hp.get("eval_episodes"))

    # ---- construction ---------------------------------------------------------------------------
    def _make_env(self, num_envs: int):
        from gbx_lightning.envs import make_env

        device = self.trainer.strategy.root_device if self._trainer is not None else torch.device("cpu")
        try:
            return make_env(self.hparams.env, num_envs=num_envs, device=device, **(self.hparams.env_kwargs or {}))
        except (ValueError, TypeError, FileNotFoundError) as err:
            # a bad option value or file: one line naming the config field, not a traceback from inside fit
            raise ConfigError("model.env_kwargs", f"rejected by {self.hparams.env}: {err}") from err

    def _build_policy(self, env) -> None:
        if self.policy is None:
            self.policy = make_policy(self.hparams.policy, env.obs_shape, int(env.num_actions),
                                      **(self.hparams.policy_kwargs or {}))

    def setup(self, stage: str) -> None:
        """Build the env(s) this stage needs and the policy (sized by the env). Runs before checkpoint restore."""
        if stage == "fit" and self.env is None:
            self.env = self._make_env(self.hparams.num_envs)
            self._build_policy(self.env)
        if stage in ("validate", "test") or self.policy is None:
            self._build_policy(self._get_eval_env())

    def _get_eval_env(self):
        if self.eval_env is None:
            self.eval_env = self._make_env(self.hparams.eval_episodes)
        return self.eval_env

    @property
    def process_seed(self) -> int:
        return int(self.hparams.seed) if self.hparams.seed is not None else torch.initial_seed() % (1 << 31)

    def configure_optimizers(self):
        return torch.optim.Adam(self.policy.parameters(), lr=self.hparams.lr, eps=self.hparams.adam_eps)

    def _stream_kwargs(self) -> dict:  # pragma: no cover - overridden
        raise NotImplementedError

    def train_dataloader(self):
        num_batches = UNBOUNDED
        if self._trainer is not None and self.trainer.max_steps > 0:
            # one batch per `opt_steps_per_cycle` optimizer steps (PPO: a rollout), rounded up
            num_batches = -(-self.trainer.max_steps // self.opt_steps_per_cycle)
        self.stream = RolloutStream(self.env, self.policy, self.process_seed, num_batches, **self._stream_kwargs())
        self.stream.env_steps = self._restored_env_steps
        return self.stream  # an iterable is a valid Lightning loader; see gbx_lightning.data

    # ---- step counters and checkpoint -----------------------------------------------------------
    opt_steps_per_cycle = 1  # optimizer steps per batch (between points where a checkpoint captures all state)

    @property
    def env_steps(self) -> int:
        return self.stream.env_steps if self.stream is not None else self._restored_env_steps

    def on_save_checkpoint(self, checkpoint: dict) -> None:
        checkpoint["gbx"] = {"env_steps": self.env_steps, "opt_steps": self.opt_steps}

    def on_load_checkpoint(self, checkpoint: dict) -> None:
        counters = checkpoint.get("gbx", {})
        self.opt_steps = int(counters.get("opt_steps", 0))
        self._restored_env_steps = int(counters.get("env_steps", 0))

    # ---- backward and optimizer step shared by both algorithms ------------------------------------
    def on_train_start(self) -> None:
        self._direct_steps = self._can_step_directly()

    def _can_step_directly(self) -> bool:
        """True when Lightning's backward/optimizer wrappers would only dispatch hooks nobody listens to.

        ``manual_backward`` and ``LightningOptimizer.step`` route through the strategy and precision
        plugin and call ``on_before_backward``, ``on_after_backward`` and ``on_before_optimizer_step``
        on every callback and on this module, once per optimizer step (16 times per PPO batch). For
        32-bit training on one device they add nothing else: the plugin's backward is
        ``loss.backward()`` and its optimizer step is ``optimizer.step()``. So when the precision
        plugin is the plain one, the strategy is single-device, no profiler is set and no callback
        (nor this module) overrides one of those hooks, ``_backward``/``_clip_and_step`` call torch
        directly and count the step in Lightning's own progress tracker, the counter behind
        ``trainer.global_step`` (``max_steps``, checkpoint names, resume). Anything else (AMP, DDP,
        FSDP, a gradient-logging callback) takes Lightning's path, hooks and all.
        """
        from lightning.pytorch import Callback
        from lightning.pytorch.plugins.precision import Precision
        from lightning.pytorch.profilers import PassThroughProfiler
        from lightning.pytorch.strategies import SingleDeviceStrategy
        from lightning.pytorch.utilities.model_helpers import is_overridden

        trainer = self.trainer
        hooks = ("on_before_backward", "on_after_backward", "on_before_optimizer_step")
        return (type(trainer.precision_plugin) is Precision
                and type(trainer.strategy) is SingleDeviceStrategy
                and not trainer.gradient_clip_val
                and isinstance(trainer.profiler, PassThroughProfiler)
                and hasattr(getattr(trainer.fit_loop.epoch_loop, "manual_optimization", None), "optim_step_progress")
                and not any(is_overridden(h, self, parent=LightningModule) for h in hooks + ("backward",))
                and not any(is_overridden(h, cb, parent=Callback) for cb in trainer.callbacks for h in hooks))

    def _backward(self, loss: torch.Tensor) -> None:
        if self._direct_steps:
            loss.backward()
        else:
            self.manual_backward(loss)

    def _clip_and_step(self, opt) -> torch.Tensor:
        params = [p for p in self.policy.parameters() if p.grad is not None]
        max_norm = self.hparams.max_grad_norm
        # clip_grad_norm_ returns the pre-clip norm as a device tensor (no host sync)
        grad_norm = torch.nn.utils.clip_grad_norm_(params, max_norm if max_norm is not None else float("inf"))
        if self._direct_steps:
            # what LightningOptimizer.step does here, minus hooks nobody overrides (see _can_step_directly)
            progress = self.trainer.fit_loop.epoch_loop.manual_optimization.optim_step_progress
            progress.increment_ready()
            opt.optimizer.step()
            progress.increment_completed()
        else:
            opt.step()
        opt.zero_grad(set_to_none=True)
        self.opt_steps += 1
        self._grad_norm_sum = grad_norm.detach() if self._grad_norm_sum is None else self._grad_norm_sum + grad_norm
        self._grad_norm_count += 1
        return grad_norm

    _LOG_NAMES = {"loss": "loss", "policy_loss": "loss_policy", "value_loss": "loss_value", "entropy": "entropy",
                  "value_mean": "value_mean", "advantage_mean": "advantage_mean", "approx_kl": "approx_kl",
                  "clipfrac": "clipfrac"}

    def _track(self, out: dict[str, torch.Tensor]) -> None:
        """Keep this step's loss terms for the next log record (reduced on device by ``pop_metrics``)."""
        if self._metric_names is None:
            self._metric_names = [k for k in self._LOG_NAMES if k in out]
        self._metric_pending.append([out[k].detach() for k in self._metric_names])  # no graph kept alive
        if len(self._metric_pending) >= 256:
            self._fold_metrics()

    def _fold_metrics(self) -> None:
        if self._metric_pending:
            sums = torch.stack([torch.stack(row).float() for row in self._metric_pending]).sum(0)
            self._metric_sums = sums if self._metric_sums is None else self._metric_sums + sums
            self._metric_count += len(self._metric_pending)
            self._metric_pending = []

    def pop_metrics(self) -> dict[str, float | None]:
        """Means of the tracked losses and grad norms since the last call, plus lr (one host read)."""
        self._fold_metrics()
        out: dict[str, float | None] = {}
        parts = []
        if self._metric_sums is not None:
            parts.append(self._metric_sums / self._metric_count)
        if self._grad_norm_sum is not None:
            parts.append((self._grad_norm_sum / self._grad_norm_count).reshape(1))
        vals = torch.cat(parts).tolist() if parts else []
        if self._metric_sums is not None:
            for name, v in zip(self._metric_names, vals):
                out[self._LOG_NAMES[name]] = v
        out["grad_norm"] = vals[-1] if self._grad_norm_sum is not None else None
        self._metric_sums, self._metric_count = None, 0
        self._grad_norm_sum, self._grad_norm_count = None, 0
        opt = self.optimizers(use_pl_optimizer=False) if self._trainer is not None else None
        out["lr"] = opt.param_groups[0]["lr"] if opt is not None else self.hparams.lr
        return out

    def transfer_batch_to_device(self, batch, device, dataloader_idx: int):
        """The streams build every batch on the env's device, which is this module's device: nothing to move."""
        return batch

    # ---- evaluation: `validate` / `test` (and validation during fit) -------------------------------
    def _eval_loader(self):
        return EvalEpisodes(self._get_eval_env(), self.policy, self.hparams.eval_seed,
                            greedy=self.hparams.eval_greedy, record_clip=True)

    def val_dataloader(self):
        return self._eval_loader()

    def test_dataloader(self):
        return self._eval_loader()

    def _eval_step(self, batch: dict[str, torch.Tensor], prefix: str) -> None:
        """Success rate over all evaluation episodes (one that did not finish counts as a failure), the
        other means over finished episodes; ``steps_to_success`` over successful ones (NaN if none)."""
        self.last_eval_clip = batch.get("clip")
        finished = batch["finished"]
        count = finished.sum()
        denom = count.clamp(min=1).float()
        wins = (batch["success"] & finished).float()
        metrics = {f"{prefix}/episodes": count.float(),
                   f"{prefix}/return_mean": (batch["episode_return"].float() * finished).sum() / denom,
                   f"{prefix}/success_rate": wins.mean(),
                   f"{prefix}/steps_to_success": (batch["episode_length"].float() * wins).sum() / wins.sum(),
                   f"{prefix}/length_mean": (batch["episode_length"].float() * finished).sum() / denom}
        for k, v in batch.items():
            if k not in ("finished", "episode_return", "success", "episode_length", "clip"):
                metrics[f"{prefix}/{k}_mean"] = (v.float() * finished).sum() / denom
        # logger=False: the JSONL/TensorBoard callback records eval results against env_steps
        self.log_dict(metrics, logger=False, batch_size=int(finished.shape[0]))

    def validation_step(self, batch, batch_idx):
        self._eval_step(batch, "eval")

    def test_step(self, batch, batch_idx):
        self._eval_step(batch, "test")


class A2CModule(RLModule):
    """Streaming advantage actor-critic with one-step TD(0) targets.

    One optimizer step per ``update_every`` env steps of all N envs: the gradient of the mean
    TD(0) loss over those ``update_every * N`` transitions, clipped and applied. So
    ``opt_steps = env_steps / (num_envs * update_every)``.

    The stream delivers the ``update_every`` transitions as one batch (flattened to
    ``update_every * N`` rows). That is gradient accumulation over ``update_every`` env steps,
    done in one pass: the parameters do not change inside the window, every row keeps its own
    one-step target r + gamma * (1 - terminated) * V(s'), and the mean over all rows is the mean
    of the per-step mean losses (each step has N rows), so the gradient is the sum of the
    per-step gradients / ``update_every`` (tests/test_trainer.py checks it). Lightning's per-batch
    work then happens once per update rather than once per env step.
    """

    def __init__(self, env: str = "foraging", env_kwargs: dict | None = None, num_envs: int = 32,
                 policy: str = "cnn", policy_kwargs: dict | None = None, gamma: float = 0.99, lr: float = 7e-4,
                 update_every: int = 5, max_grad_norm: float | None = 0.5, value_coef: float = 0.5,
                 entropy_coef: float = 0.01, adam_eps: float = 1e-5, seed: int | None = None,
                 eval_episodes: int = 32, eval_greedy: bool = False, eval_seed: int = 1_000_003):
        self.check_config(**_init_args(locals()))
        super().__init__(env=env, env_kwargs=env_kwargs, num_envs=num_envs, policy=policy,
                         policy_kwargs=policy_kwargs, gamma=gamma, lr=lr, max_grad_norm=max_grad_norm,
                         value_coef=value_coef, entropy_coef=entropy_coef, adam_eps=adam_eps, seed=seed,
                         eval_episodes=eval_episodes, eval_greedy=eval_greedy, eval_seed=eval_seed)

    @classmethod
    def check_config(cls, **hp: Any) -> None:
        super().check_config(**hp)
        if "update_every" in hp:
            _require(_is_int(hp["update_every"]) and hp["update_every"] >= 1, "update_every", "an int >= 1",
                     hp["update_every"])

    def _stream_kwargs(self) -> dict:
        return {"steps_per_batch": self.hparams.update_every}

    @_signature_precomputed
    def training_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> None:
        """One update from ``update_every`` transitions of all N envs (rows of ``batch``), acted with these weights."""
        t0 = time.perf_counter()
        # 1. V(s') of the true next states, no gradient (bootstraps through truncation; rl.a2c_td0 masks termination)
        with torch.no_grad():
            _, next_values = self.policy(batch["final_obs"])
        # 2. pi(.|s), V(s) with gradient, and the TD(0) actor-critic loss, averaged over all rows of the window
        logits, values = self.policy(batch["obs"])
        out = a2c_td0(logits, values, batch["actions"], batch["rewards"], next_values, batch["terminated"],
                      gamma=self.hparams.gamma, value_coef=self.hparams.value_coef,
                      entropy_coef=self.hparams.entropy_coef)
        # 3. backward, clip, step
        self._backward(out["loss"])
        self._clip_and_step(self.optimizers())
        self._track(out)
        self.time_update_s += time.perf_counter() - t0


class PPOModule(RLModule):
    """PPO with clipped surrogate (Schulman et al. 2017) on T-step rollouts of N envs.

    Each rollout gives T*N samples with GAE(lambda) advantages; the stream yields them as
    one batch and ``training_step`` splits them into ``minibatches`` shuffled minibatches
    for ``epochs`` epochs, one optimizer step per minibatch, so one rollout (one batch) =
    ``epochs * minibatches`` opt steps. ``anneal_lr`` decays the learning rate linearly
    to 0 at ``trainer.max_steps``.
    """

    def __init__(self, env: str = "foraging", env_kwargs: dict | None = None, num_envs: int = 32,
                 policy: str = "cnn", policy_kwargs: dict | None = None, gamma: float = 0.99, lr: float = 2.5e-4,
                 rollout_steps: int = 128, epochs: int = 4, minibatches: int = 4, gae_lambda: float = 0.95,
                 clip_coef: float = 0.2, value_clip: float | None = None, normalize_advantages: bool = True,
                 anneal_lr: bool = False, max_grad_norm: float | None = 0.5, value_coef: float = 0.5,
                 entropy_coef: float = 0.01, adam_eps: float = 1e-5, seed: int | None = None,
                 eval_episodes: int = 32, eval_greedy: bool = False, eval_seed: int = 1_000_003):
        self.check_config(**_init_args(locals()))
        super().__init__(env=env, env_kwargs=env_kwargs, num_envs=num_envs, policy=policy,
                         policy_kwargs=policy_kwargs, gamma=gamma, lr=lr, max_grad_norm=max_grad_norm,
                         value_coef=value_coef, entropy_coef=entropy_coef, adam_eps=adam_eps, seed=seed,
                         eval_episodes=eval_episodes, eval_greedy=eval_greedy, eval_seed=eval_seed)
        self.opt_steps_per_cycle = epochs * minibatches

    @classmethod
    def check_config(cls, **hp: Any) -> None:
        super().check_config(**hp)
        for name in ("rollout_steps", "epochs", "minibatches"):
            if name in hp:
                _require(_is_int(hp[name]) and hp[name] >= 1, name, "an int >= 1", hp[name])
        if {"rollout_steps", "minibatches", "num_envs"} <= hp.keys():
            _require(hp["minibatches"] <= hp["rollout_steps"] * hp["num_envs"], "minibatches",
                     f"<= rollout_steps * num_envs = {hp['rollout_steps'] * hp['num_envs']}", hp["minibatches"])
        if "gae_lambda" in hp:
            _require(_is_num(hp["gae_lambda"]) and 0 <= hp["gae_lambda"] <= 1, "gae_lambda", "in [0, 1]",
                     hp["gae_lambda"])
        if "clip_coef" in hp:
            _require(_is_num(hp["clip_coef"]) and hp["clip_coef"] > 0, "clip_coef", "> 0", hp["clip_coef"])
        if hp.get("value_clip") is not None:
            _require(_is_num(hp["value_clip"]) and hp["value_clip"] > 0, "value_clip", "> 0 or null",
                     hp["value_clip"])

    def _stream_kwargs(self) -> dict:
        hp = self.hparams
        return {"rollout_steps": hp.rollout_steps, "gamma": hp.gamma, "gae_lambda": hp.gae_lambda}

    def _minibatch_indices(self, size: int):
        """``epochs`` x ``minibatches`` index sets over the rollout's ``size`` samples, stopping at max_steps.

        Shuffled with the stream's generator (after the rollout's action sampling): one RNG sequence,
        stored in every checkpoint, so a resumed run continues exactly.
        """
        max_steps = self.trainer.max_steps
        for _ in range(self.hparams.epochs):
            perm = torch.randperm(size, generator=self.stream.generator, device=self.stream.device)
            for idx in perm.chunk(self.hparams.minibatches):
                if 0 < max_steps <= self.opt_steps:
                    return
                yield idx

    @_signature_precomputed
    def training_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> None:
        """One PPO update from one rollout: ``epochs`` x ``minibatches`` clipped-surrogate steps."""
        t0 = time.perf_counter()
        hp = self.hparams
        opt = self.optimizers()
        for idx in self._minibatch_indices(batch["actions"].shape[0]):
            if hp.anneal_lr and self.trainer.max_steps > 0:
                frac = max(0.0, 1.0 - self.opt_steps / self.trainer.max_steps)
                for group in opt.optimizer.param_groups:
                    group["lr"] = hp.lr * frac
            mb = {k: v[idx] for k, v in batch.items()}
            # 1. the current policy on the minibatch's states
            logits, values = self.policy(mb["obs"])
            log_probs = F.log_softmax(logits, -1)
            new_logprobs = log_probs.gather(1, mb["actions"].unsqueeze(1)).squeeze(1)
            entropy = -(log_probs.exp() * log_probs).sum(-1)
            # 2. clipped surrogate + value + entropy loss against the rollout's log-probs, values and GAE returns
            out = ppo_loss(new_logprobs, mb["logprobs"], mb["advantages"], values, mb["values"], mb["returns"],
                           entropy, clip_coef=hp.clip_coef, value_clip=hp.value_clip,
                           normalize_advantages=hp.normalize_advantages, value_coef=hp.value_coef,
                           entropy_coef=hp.entropy_coef)
            out["value_mean"] = values.detach().mean()
            # 3. one optimizer step per minibatch (counted by trainer.global_step)
            self._backward(out["loss"])
            self._clip_and_step(opt)
            self._track(out)
        self.time_update_s += time.perf_counter() - t0
