"""``RLModule``: what every algorithm shares, so that an algorithm's file holds its own arguments and its update only.

One batch = one rollout of T env steps of all N envs (``data.RolloutStream``, ``[T, N]`` tensors), acted with the
current weights; an algorithm's ``training_step`` turns it into optimizer steps (``a2c.py``, ``ppo.py``,
``reinforce.py``). Here, each in its own section below: the arguments every algorithm takes (defined once: an
algorithm's ``__init__`` takes its own and passes ``**kwargs`` on, which LightningCLI follows for config and help),
the env and the policy (``build.py``), the optimizer step, the log interval's numbers, checkpoints, DDP and
evaluation.

Why manual optimisation: PPO takes many optimizer steps per batch, and every algorithm clips the gradient norm and
logs the pre-clip norm without a host sync. ``training_step`` calls the public ``manual_backward``,
``optimizer.step`` and ``lr_scheduler.step`` (through ``step_optimizer``); Lightning owns the outer loop, devices,
checkpoints, callbacks and loggers, and ``trainer.global_step`` counts optimizer steps (``trainer.max_steps`` is the
number of updates; ``val_check_interval`` counts batches).

The log interval: every optimizer step's loss terms and gradient norm go to ``loss_metrics`` (on device); every
``log_every`` optimizer steps ``interval_metrics`` reads them with the stream's episode statistics in one host
read, at the first request of the batch, and hands the same numbers to every callback that asks (``TrainingLog``
writes them, ``safety.NonFiniteGuard`` stops on a non-finite one), whatever the callbacks' order.
``find_nonfinite`` (before each checkpoint write) also checks the parameters.

Where things live: the env and the policy are built in ``setup`` (after config validation, on the Trainer's
device; the env's observation shape sizes the policy). ``env_steps`` (owned by the stream) and ``opt_steps`` are
stored in every checkpoint under ``checkpoint["gbx"]``, the log interval in flight under ``"gbx_metrics"``; the
stream's full state (RNG, env, current observation) is stored by Lightning's fit loop.

DDP (``--trainer.strategy ddp --trainer.devices K``): every process builds ``num_envs`` envs of its own (per
process, as Lightning's batch size is per device) with its seeds offset by its rank, and ``training_step`` runs
unchanged: ``manual_backward`` lets DDP all-reduce (average) the gradients, so the weights stay equal on every
rank. ``env_steps`` counts all processes' env steps; training statistics and evaluation results are summed over
the ranks before they are logged (``sum_over_ranks``); ``eval_episodes`` is split over the ranks. A checkpoint
records the number of processes (``checkpoint["gbx"]["world_size"]``): resuming with another is refused.
"""

from __future__ import annotations

import inspect
import math
import sys
import warnings
from typing import Any, Literal

import torch
from lightning.pytorch import LightningModule

from gbx_lightning.algos.build import EnvFactory, PolicyFactory, build_env, build_policy, factory_parts, factory_spec
from gbx_lightning.algos.config import ConfigError, check_common, old_layout_problem
from gbx_lightning.algos.evaluation import episode_means
from gbx_lightning.data import UNBOUNDED, EvalEpisodes, RolloutStream
from gbx_lightning.heap import keep_freed_memory
from gbx_lightning.metrics import LossMetrics
from gbx_lightning.models import is_recurrent

__all__ = ["RLModule", "world_size_problem"]

# The stream is an in-process IterableDataset by design (num_workers=0, length = batch budget), and
# checkpoints taken after the optimizer step are what we want; these Lightning hints do not apply.
for _msg in (r".*does not have many workers.*", r".*`IterableDataset` has `__len__` defined.*",
             r".*Using ModelCheckpoint with manual optimization and every_n_train_steps.*",
             r".*isinstance\(treespec, LeafSpec\).*", r".*is smaller than the logging interval.*",
             r".*when logging on epoch level in distributed setting.*"):  # eval metrics: reduced by episode_means
    warnings.filterwarnings("ignore", message=_msg)


def world_size_problem(saved: int, now: int) -> str:
    """The one-line refusal of a resume with another number of processes than the checkpoint was saved by."""
    return (f"x trainer.num_nodes must give {saved} process(es) to resume this checkpoint (each saved its own "
            f"envs and RNG streams), got {now}; resume with the same devices, or start a fresh run")


def _rows_differ(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """bool ``[N]``: whether rows ``a[n]`` and ``b[n]`` (same shape and dtype) differ in any byte; compared 8 bytes at a
    time where the rows allow it (a uint8 comparison's ``any`` cost more than the bootstrap it saves)."""
    n = a.shape[0]
    a, b = a.reshape(n, -1), b.reshape(n, -1)
    try:
        a, b = a.view(torch.uint8), b.view(torch.uint8)
        if a.shape[1] % 8 == 0:
            a, b = a.view(torch.int64), b.view(torch.int64)
    except RuntimeError:   # rows not laid out for a reinterpreting view: compare the values
        pass
    return (a != b).any(1)


class RLModule(LightningModule):
    """The base of every algorithm (module docstring).

    Adding an algorithm is one file and a config (tests/test_algos.py does it): a subclass that sets
    ``rollout_field`` (its argument that sets T), takes its own arguments in ``__init__`` with an ``Args:``
    docstring and passes ``**kwargs`` on, checks them in ``check_args`` (``config.require``/``require_number``),
    and defines ``training_step``: the ``[T, N]`` rollout -> targets -> an ``rl/`` loss -> ``step_optimizer(out)``
    per optimizer step (several per batch: set ``opt_steps_per_batch``, and ``check_max_steps`` if a run must stop
    on a whole batch). Every key of ``out`` is a loss term with a row in ``metrics.METRICS``. The config names it
    by ``class_path`` (``gbx_lightning.algos.<file>.<Class>``); nothing is registered.

    Args:
        env: the env, by class and options: ``{class_path: gbx_lightning.envs.GameBoyEnv, init_args: {task:
            orchard/level1, ...}}`` (or ``ForagingEnv``, or a ``VecEnvBase`` subclass of yours); the module
            builds it with ``num_envs`` and the device (``algos/build.py``). In Python: a class or a
            ``functools.partial`` of one.
        num_envs: envs stepped in parallel for training.
        env_device: where the envs run. ``"gpu"``: on the Trainer's GPU. ``"cpu"``: on the CPU's cores; with a
            GPU Trainer that is hybrid mode, the policy on the GPU and the observations sent over through pinned
            buffers (``envs/bridge.py``). ``"auto"``: the CPU when the Trainer is on the CPU, else the GPU only
            for ``num_envs >= GPU_ENVS_PER_CORE`` x this process's cores (``pick_env_device``; README, "GPU").
        policy: the policy network, by class and options: ``{class_path: gbx_lightning.models.PixelCNNPolicy,
            init_args: {hidden: 256}}`` (``models.py``); the module sizes it by the env's observation shape and
            number of actions.
        gamma: discount factor.
        lr: Adam's learning rate.
        max_grad_norm: clip the gradient's norm to this before each optimizer step (null: no clipping).
        value_coef: weight of the value loss.
        entropy_coef: weight of the entropy bonus.
        adam_eps: Adam's epsilon.
        seed: env and action-sampling seed; ``None`` uses the process seed (``seed_everything``).
        eval_episodes: episodes per ``validate``/``test`` (one per eval env, run in parallel).
        eval_greedy: evaluate the argmax action instead of sampling.
        eval_seed: fixed seed so every evaluation sees the same episode starts.
    """

    rollout_field: str               # the hyper-parameter that sets T, the env steps per batch (each algorithm's)
    opt_steps_per_batch = 1          # optimizer steps per batch (PPO: epochs x minibatches per rollout)
    # what ``sample_transforms`` may name for this learner (rl/normalize.py); A2C's advantage lives inside its loss
    sample_transform_names: tuple[str, ...] = ("reward_norm",)
    log_every = 1                    # optimizer steps per log interval (interval_metrics); TrainingLog sets its own

    def __init__(self, env: EnvFactory, policy: PolicyFactory, num_envs: int = 32,
                 env_device: Literal["auto", "cpu", "gpu"] = "auto", gamma: float = 0.99, lr: float = 1e-3, max_grad_norm: float | None = 0.5, value_coef: float = 0.5,
                 entropy_coef: float = 0.01, adam_eps: float = 1e-5, seed: int | None = None, eval_episodes: int = 32,
                 eval_greedy: bool = False, eval_seed: int = 1_000_003):
        super().__init__()
        self.save_hyperparameters()   # these and the algorithm's own (Lightning reads every __init__ frame)
        # the hyper-parameters hold plain data (logs, checkpoints): under the CLI Lightning puts the config's
        # {class_path, init_args} there; a module built in Python gets the same spelt from its factories
        self.hparams.env, self.hparams.policy = factory_spec(self.hparams.env), factory_spec(self.hparams.policy)
        self.env_factory, self.policy_factory = env, policy
        self.check_config(**self.hparams)
        self.automatic_optimization = False
        self.policy = None
        self.env = None
        self.eval_env = None
        self.stream: RolloutStream | None = None
        self.opt_steps = 0
        self._restored_env_steps = 0
        self.time_update_s = 0.0
        self.loss_metrics = LossMetrics()
        self._restored_metrics: dict | None = None
        self._read_step = 0                          # opt_steps at the last interval read (or the restore)
        self._interval: tuple[tuple[int, int], dict] | None = None   # (batch, its read)
        self.nonfinite: tuple[str, int | None] | None = None  # (what, opt step), found by the last interval read
        self.env_state_max_bytes: int | None = 256 << 20  # env state above this is left out of checkpoints
        self.restored_env_state: dict | None = None  # what the checkpoint resumed from said of its env state
        self._env_state_left_out = False   # the last checkpoint left the env state out (said once, when it starts)
        self.last_eval_clip: torch.Tensor | None = None  # env 0's screens in the last evaluation (pixel envs)
        self.eval_episode_seed: int | None = None   # another seed's episodes to evaluate on (the CLI's validate/test)

    # ---- config validation (also called by the CLI before anything is instantiated) ---------------
    @classmethod
    def check_config(cls, **hp: Any) -> None:
        """Raise ConfigError naming the first bad field; a field not given has its default. Cheap: builds no env
        and no network."""
        hp = {**cls.hparam_defaults(), **hp}
        check_common(hp, cls.sample_transform_names)
        cls.check_args(hp)

    @classmethod
    def check_args(cls, hp: dict[str, Any]) -> None:
        """The algorithm's own arguments (``hp``: all of them, defaults filled in); ConfigError on the first bad one."""

    @classmethod
    def check_max_steps(cls, max_steps, **hp: Any) -> None:
        """Trainer settings the algorithm constrains (PPO: whole rollouts). ConfigError("trainer.max_steps", ...)."""

    @classmethod
    def hparam_defaults(cls) -> dict[str, Any]:
        """Every argument's default: ``RLModule``'s, overridden by the algorithm's own (e.g. its ``lr``)."""
        out: dict[str, Any] = {}
        for klass in reversed(cls.__mro__):
            if issubclass(klass, RLModule) and "__init__" in vars(klass):
                for name, p in inspect.signature(klass.__init__).parameters.items():
                    if p.default is not inspect.Parameter.empty:
                        out[name] = p.default
        return out

    # ---- construction ---------------------------------------------------------------------------
    def build_policy(self, env) -> torch.nn.Module:
        """The policy, built once, sized by ``env`` (``setup``; ``play`` with an env of its own)."""
        if self.policy is None:
            self.policy = build_policy(self.policy_factory, env)
        return self.policy

    initial_policy: dict | None = None   # policy weights to start fit from (the CLI's --init_from)

    def _start_policy_from(self, weights: dict) -> None:
        """Load ``weights`` (a ``policy.state_dict()`` of another run) into the policy; ConfigError naming the first
        difference when they are another policy's (other layers, or shapes from another observation or action set)."""
        own = self.policy.state_dict()
        missing, extra = sorted(set(own) - set(weights)), sorted(set(weights) - set(own))
        if missing or extra:
            raise ConfigError("init_from", f"holds another policy's weights: {len(missing)} of this policy's "
                              f"missing ({', '.join(missing[:3]) or '-'}), {len(extra)} not this policy's "
                              f"({', '.join(extra[:3]) or '-'})")
        for name, value in own.items():
            if tuple(weights[name].shape) != tuple(value.shape):
                raise ConfigError("init_from", f"policy weight {name} has shape {list(weights[name].shape)} there, "
                                  f"{list(value.shape)} here (another observation, action set or policy size)")
        self.policy.load_state_dict(weights)

    def _make_env(self, num_envs: int):
        return build_env(self.env_factory, self.hparams.env_device, num_envs, self._attached_trainer())

    def setup(self, stage: str) -> None:
        """Build the env(s) this stage needs and the policy (sized by the env). Runs before checkpoint restore."""
        if stage == "fit":
            self.check_max_steps(self.trainer.max_steps, **self.hparams)
            self.check_val_schedule(self.trainer)
            learner_device = self.trainer.strategy.root_device
            self._check_update_compiler(learner_device)
            if self.env is None:
                self.env = self._make_env(self.hparams.num_envs)
                self.build_policy(self.env)
            if self.initial_policy is not None:   # --init_from; a resume's checkpoint restore overrides it after
                self._start_policy_from(self.initial_policy)
                self.initial_policy = None
            self._check_rollout_memory()
            if learner_device.type == "cpu":
                keep_freed_memory()   # the update's large tensors reuse freed memory (gbx_lightning/heap.py)
        _, world = self.ranks()
        if self.hparams.eval_episodes < world:
            raise ConfigError("model.eval_episodes", f"must be >= the number of processes ({world}): the "
                              f"evaluation episodes are split over them, got {self.hparams.eval_episodes}")
        if stage in ("validate", "test") or self.policy is None:
            self.build_policy(self._get_eval_env())

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

    def _check_update_compiler(self, device: torch.device) -> None:
        """``compile_update: true`` on a CPU without a C++ compiler: refused in one line before the first rollout
        (torch.compile would fail inside the first update, after a whole rollout); read from the policy's options,
        before the env is built."""
        from gbx_lightning.models import cpp_compiler

        wanted = (getattr(self.policy, "compile_update", None) if self.policy is not None
                  else factory_parts(self.policy_factory)[1].get("compile_update"))
        if wanted is True and device.type == "cpu" and cpp_compiler() is None:
            raise ConfigError("model.policy.compile_update", "is true, but no C++ compiler was found (torch.compile's "
                              "CPU backend needs g++ or $CXX): install one, or set it to false")

    def _get_eval_env(self):
        if self.eval_env is None:
            # DDP: the eval_episodes are split over the processes (the first eval_episodes % K take one more)
            rank, world = self.ranks()
            episodes = self.hparams.eval_episodes // world + (rank < self.hparams.eval_episodes % world)
            self.eval_env = self._make_env(episodes)
            mode = getattr(self.eval_env, "train", None)
            if callable(mode):   # GameBoyEnv: episodes from the task's start alone (no train_starts, pool or swarm)
                mode(False)
        return self.eval_env

    @property
    def process_seed(self) -> int:
        """The run's seed; DDP rank r seeds its stream with ``process_seed + r`` and its evaluation with
        ``eval_seed + r``, so the processes play different episodes."""
        return int(self.hparams.seed) if self.hparams.seed is not None else torch.initial_seed() % (1 << 31)

    def configure_optimizers(self):
        return torch.optim.Adam(self.policy.parameters(), lr=self.hparams.lr, eps=self.hparams.adam_eps)

    def steps_per_rollout(self) -> int:
        """T: env steps of all N envs per batch (the ``rollout_field`` hyper-parameter)."""
        return self.hparams[self.rollout_field]

    def batch_budget(self, max_steps: int) -> int:
        """The run's batches (rollouts) for ``trainer.max_steps`` optimizer steps (UNBOUNDED for -1): the stream's
        length, so the run is one epoch of them."""
        return -(-max_steps // self.opt_steps_per_batch) if max_steps > 0 else UNBOUNDED

    def check_val_schedule(self, trainer) -> None:
        """Lightning's rule, said before anything is built (the CLI calls this once the Trainer exists; ``setup``
        again): with ``check_val_every_n_epoch`` set, an int ``val_check_interval`` counts batches of one epoch,
        and the run is one epoch (its batch budget). Lightning's own refusal comes from inside ``fit``."""
        interval = trainer.val_check_interval
        batches = self.batch_budget(trainer.max_steps)
        if trainer.check_val_every_n_epoch is not None and isinstance(interval, int) and interval > batches:
            raise ConfigError("trainer.val_check_interval", f"must be <= the run's {batches} batches with "
                              f"trainer.check_val_every_n_epoch set ({trainer.check_val_every_n_epoch}), got "
                              f"{interval}; set check_val_every_n_epoch: null to count it over the run")

    # ---- what the losses read from the policy, feedforward or recurrent ------------------------------------------
    @property
    def recurrent(self) -> bool:
        """Whether the policy carries a state from step to step (``models.RecurrentActorCritic``)."""
        return is_recurrent(self.policy)

    @torch.no_grad()
    def bootstrap_values(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """V(s'_t) of every step's true next state ``final_obs[t]``, ``[T * N]``, no gradient. A recurrent policy
        reads s'_t with its state after step t (``policy_states[t + 1]``, never zeroed: s'_t is still step t's
        episode, also where the env was reset after it).

        Most of them were computed while acting: where no episode ended at step t, s'_t is the observation acted on
        at step t + 1 (the env protocol: ``final_obs`` equals the next ``obs`` where nothing ended), with the same
        weights (a batch's update starts from the weights that acted it) and, for a recurrent policy, the same
        state (not zeroed: no episode began), so V(s'_t) is ``values[t + 1]``. The policy runs only on the rest:
        the last step's s', and the steps where an episode ended (or a recurrent policy's state was zeroed, or the
        two observations differ at all: checked byte for byte, so a batch that is not one rollout's consecutive
        steps is computed in full), ~1/T of the rows instead of all. One host read per batch (how many rows).
        """
        obs, final_obs, values = batch["obs"], batch["final_obs"], batch["values"]
        T, N = values.shape
        fresh = torch.ones(T, N, dtype=torch.bool, device=values.device)   # rows that need the forward pass
        if T > 1:
            ended = batch["terminated"][:-1] | batch["truncated"][:-1]
            if self.recurrent:
                ended = ended | batch["starts"][1:]
            # one step at a time: a [N, ...] comparison, not a [T, N, ...] temporary
            differs = torch.stack([_rows_differ(final_obs[t], obs[t + 1]) for t in range(T - 1)])
            fresh[:-1] = ended | differs
        rows = fresh.flatten().nonzero().squeeze(1)   # the host read
        s_next = final_obs.flatten(0, 1)[rows]
        if not self.recurrent:
            computed = self.policy(s_next)[1]
        else:
            computed = self.policy.step(s_next, batch["policy_states"][1:].flatten(0, 1)[rows])[1]
        next_values = torch.cat([values[1:], values[-1:]]).flatten()   # values[t + 1]; the last row is computed
        return next_values.index_put((rows,), computed.to(next_values.dtype))

    def evaluate_rollout(self, batch: dict[str, torch.Tensor],
                         envs: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(log pi(a|s), H(pi(.|s)), V(s)) of the rollout's steps, with gradient, flattened time-major ``[T * N']``
        (N' = the envs ``envs`` picks, all by default). A recurrent policy replays each env's sequence from its
        state before the rollout (``policy_states[0]``), zeroing it where ``starts`` says an episode began."""
        obs, actions = batch["obs"], batch["actions"]
        if envs is not None:
            obs, actions = obs[:, envs], actions[:, envs]
        if not self.recurrent:
            return self.policy.evaluate(obs.flatten(0, 1), actions.flatten())
        state, starts = batch["policy_states"][0], batch["starts"]
        if envs is not None:
            state, starts = state[envs], starts[:, envs]
        return tuple(x.flatten() for x in self.policy.evaluate_sequences(obs, actions, state, starts))

    def train_dataloader(self):
        num_batches = self.batch_budget(self.trainer.max_steps)
        rank, world = self.ranks()
        self.stream = RolloutStream(self.env, self.policy, self.process_seed + rank, num_batches,
                                    self.steps_per_rollout(), env_state_max_bytes=self.env_state_max_bytes,
                                    rank=rank, world_size=world)
        self.stream.env_steps = self._restored_env_steps // world  # this rank's share (its own state, on resume)
        return self.stream  # an iterable is a valid Lightning loader; see gbx_lightning.data

    def transfer_batch_to_device(self, batch, device, dataloader_idx: int):
        """The stream builds every batch on the env's device, which is this module's device: nothing to move."""
        return batch

    # ---- DDP ---------------------------------------------------------------------------------------
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

    # ---- step counters and checkpoints ----------------------------------------------------------
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
            plan = self.stream.env_state_plan()
            if not plan["saved"]:   # what a resume from this checkpoint loses, part by part; said when it starts
                parts = getattr(self.env, "state_parts", None)
                plan["parts"] = parts() if callable(parts) else None
                if not self._env_state_left_out and self.global_rank == 0:
                    print(env_state_note(plan, f"checkpoint at optimizer step {self.opt_steps}"), file=sys.stderr,
                          flush=True)
            self._env_state_left_out = not plan["saved"]
            checkpoint["gbx_env_state"] = plan
        # the log interval in flight, so that a run resumed from any step writes the records it would have written
        checkpoint["gbx_metrics"] = self.loss_metrics.state_dict()

    def on_load_checkpoint(self, checkpoint: dict) -> None:
        problem = old_layout_problem(checkpoint.get("hyper_parameters") or {})
        if problem is not None:   # its weights may be another env's or policy's: refuse, say what changed
            raise ConfigError("--ckpt_path", f"{problem}; this checkpoint was saved by an earlier gbx_lightning: "
                              f"resume it with that version, or start a fresh run")
        counters = checkpoint.get("gbx", {})
        trainer = self._attached_trainer()
        saved, world = int(counters.get("world_size", 1)), self.ranks()[1]
        if trainer is not None and trainer.state.fn == "fit" and saved != world:
            raise ConfigError("trainer.devices", world_size_problem(saved, world))
        self.opt_steps = int(counters.get("opt_steps", 0))
        self._restored_env_steps = int(counters.get("env_steps", 0))
        self.restored_env_state = checkpoint.get("gbx_env_state")
        plan = self.restored_env_state
        if plan and not plan.get("saved", True) and trainer is not None and trainer.state.fn == "fit" \
                and self.global_rank == 0:
            print(env_state_note(plan, "resuming"), file=sys.stderr, flush=True)
        self._read_step = self.opt_steps
        self._restored_metrics = checkpoint.get("gbx_metrics")   # applied in on_train_start, on the device

    def on_train_start(self) -> None:
        """After a restore: the log interval in flight goes to the device, and the configured lr wins over the
        checkpoint's (times ``lr_factor_at_start``)."""
        if self._restored_metrics is not None:
            self.loss_metrics.load_state_dict(self._restored_metrics, self.device)
            self._restored_metrics = None
        factor = self.lr_factor_at_start()
        for group in self.optimizers(use_pl_optimizer=False).param_groups:
            group["lr"] = self.hparams.lr * factor

    def lr_factor_at_start(self) -> float:
        """The share of ``lr`` the next optimizer step takes (PPO's anneal re-plans itself here)."""
        return 1.0

    # ---- one optimizer step --------------------------------------------------------------------------
    def step_optimizer(self, out: dict[str, torch.Tensor]) -> None:
        """Backward ``out["loss"]``, clip the gradient norm, step the optimizer (and the lr schedule), track ``out``."""
        self.manual_backward(out["loss"])
        self.apply_gradients(out)

    def apply_gradients(self, out: dict[str, torch.Tensor]) -> None:
        """``step_optimizer`` after the backward: clip the gradient the parameters hold, step, zero it, track ``out``
        (REINFORCE backwards several rollouts first: gradient accumulation). Every key of ``out`` is a loss term of
        ``metrics.METRICS``: it is logged under that row's names."""
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
        self.loss_metrics.add(self.opt_steps, out, grad_norm)

    # ---- the log interval: read once, the same numbers for every callback ------------------------------
    def interval_metrics(self) -> dict[str, float | None] | None:
        """The numbers of the log interval that ends at this batch: the stream's episode statistics
        (``data.IntervalStats``), the loss terms' means and ``lr``; None at a batch that ends no interval
        (``opt_steps`` crossed no multiple of ``log_every`` since the last read).

        Read at the first request of the batch (one host read; under DDP a collective, and every rank asks at
        the same batch: each runs the same callbacks); a later request of that batch gets the same dict, so the
        callbacks that need the numbers each ask, in any order. The read also sets ``nonfinite``.
        """
        batch = (self.stream.iterations if self.stream is not None else 0, self.opt_steps)
        if self._interval is not None and self._interval[0] == batch:
            return self._interval[1]
        if self.opt_steps // self.log_every == self._read_step // self.log_every:
            return None
        self._read_step = self.opt_steps
        metrics = self.stream.stats.pop(self.sum_over_ranks) if self.stream is not None else {}
        metrics.update(self.read_loss_metrics())
        self._interval = (batch, metrics)
        return metrics

    def read_loss_metrics(self) -> dict[str, float | None]:
        """Means of the loss terms and gradient norms since the last read, plus lr (one host read, which also reads
        whether anything went non-finite: ``self.nonfinite``). Under DDP a collective: the means are over every
        rank's optimizer steps, and a non-finite value on any rank stops every rank."""
        metrics, out = self.loss_metrics, {}
        sums = metrics.take()
        if sums is not None:
            k = len(metrics.names)
            packed = self.sum_over_ranks(sums)
            first = self.min_over_ranks(torch.cat([metrics.first_nonfinite_steps().double(),
                                                   self._params_finite().double()[None]]))
            vals = torch.cat([metrics.means(packed).double(), first]).tolist()
            out.update(zip(metrics.names, vals[:k]))
            self.nonfinite = self._nonfinite_from(vals[k:2 * k], vals[-1])
        opt = self.optimizers(use_pl_optimizer=False) if self._attached_trainer() is not None else None
        out["lr"] = opt.param_groups[0]["lr"] if opt is not None else self.hparams.lr
        return out

    def find_nonfinite(self) -> tuple[str, int | None] | None:
        """(what, opt step) if a loss term or the grad norm has been non-finite since the start, or a parameter
        is now; else None. One host read: called before each checkpoint write (``safety.NonFiniteGuard``)."""
        if self.policy is None:
            return None
        params_finite = self._params_finite().double()[None]
        first = self.loss_metrics.first_nonfinite_steps()
        vals = torch.cat([(first if first is not None else params_finite[:0]).double(), params_finite])
        vals = self.min_over_ranks(vals).tolist()   # DDP: every rank refuses the checkpoint, or none
        return self._nonfinite_from(vals[:-1], vals[-1])

    def _params_finite(self) -> torch.Tensor:
        return torch.stack([p.detach().isfinite().all() for p in self.policy.parameters()]).all()

    def _nonfinite_from(self, first: list[float], params_finite: float) -> tuple[str, int | None] | None:
        step = min(first, default=LossMetrics.NEVER)
        if step < LossMetrics.NEVER:
            return ", ".join(n for n, s in zip(self.loss_metrics.names, first) if s == step), int(step)
        if not params_finite:
            return "parameters", self.opt_steps
        return None

    # ---- evaluation: `validate` / `test` (and validation during fit) -------------------------------
    def _eval_loader(self):
        rank, _ = self.ranks()
        seed = self.hparams.eval_seed if self.eval_episode_seed is None else self.eval_episode_seed
        return EvalEpisodes(self._get_eval_env(), self.policy, seed + rank,
                            greedy=self.hparams.eval_greedy, record_clip=rank == 0)

    def eval_env_built(self):
        """The evaluation env (built on first use): this process's share of ``eval_episodes``."""
        return self._get_eval_env()

    @torch.no_grad()
    def evaluate_policy(self, policy, prefix: str = "eval") -> dict[str, torch.Tensor]:
        """``policy`` (e.g. ``baseline.UniformPolicy``) on the evaluation episodes validation plays (same env, same
        seed, sampled actions): the ``{prefix}/*`` means, summed over the DDP ranks (a collective)."""
        rank, _ = self.ranks()
        seed = self.hparams.eval_seed if self.eval_episode_seed is None else self.eval_episode_seed
        batch = next(iter(EvalEpisodes(self._get_eval_env(), policy, seed + rank)))
        return episode_means(batch, prefix, self.sum_over_ranks)

    def val_dataloader(self):
        return self._eval_loader()

    def test_dataloader(self):
        return self._eval_loader()

    def _eval_step(self, batch: dict[str, torch.Tensor], prefix: str) -> None:
        self.last_eval_clip = batch.get("clip")
        # logger=False: the JSONL/logger callback (TrainingLog) records eval results against env_steps; no
        # sync_dist: the values are already over all ranks
        self.log_dict(episode_means(batch, prefix, self.sum_over_ranks), logger=False,
                      batch_size=int(batch["finished"].shape[0]))

    def validation_step(self, batch, batch_idx):
        self._eval_step(batch, "eval")

    def test_step(self, batch, batch_idx):
        self._eval_step(batch, "test")


def env_state_note(plan: dict, when: str) -> str:
    """One line: a checkpoint without the env state (``plan``: ``RolloutStream.env_state_plan`` and the env's
    ``state_parts``), what a resume from it loses, and what to do."""
    def size(nbytes: int) -> str:
        return f"{nbytes / (1 << 20):.1f} MB" if nbytes >= 100 << 10 else f"{nbytes / 1024:.1f} KB"

    lost = "; ".join(f"{what} {size(nbytes)}" for what, nbytes in plan.get("parts") or []) or "every env's state"
    cap = f"{plan['max_bytes'] / (1 << 20):.4g}" if plan.get("max_bytes") is not None else "?"
    head = (f"{when}: the env state ({size(plan['bytes'])}) is over --env_state_max_mb {cap}: this and later "
            f"checkpoints leave it out, and a resume from one restarts every env from the task's start states, "
            if when != "resuming" else
            f"resuming from a checkpoint without the env state ({size(plan['bytes'])} was over --env_state_max_mb "
            f"{cap}): every env restarts from the task's start states, ")
    return (head + f"losing {lost} (the reward items' running statistics are kept); --env_state_max_mb "
            f"{-(-plan['bytes'] // (1 << 20))} or more keeps it")
