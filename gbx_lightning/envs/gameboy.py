"""GameBoyEnv: a batch of Game Boys (VecGameBoy) as an RL env: pixels in, button presses out.

The engine only: which game, where its episodes start, which screens end them, what a step pays
and what is counted is the ``task`` (``envs/task.py``: a built-in name like ``orchard/level1``, a
YAML file or a mapping), so this file names no game.

One step = one action per env, turned into a button mask by the action codec
(``envs/actions.py``), held for ``release_after_frames`` frames and released for the rest
of ``frames_per_step`` frames, all envs in one kernel launch (one per CPU core on a CPU).
The observation is the last ``stack_k`` step-end screens, uint8 ``[N, K, 72, 80]``, shades
0..3, newest last, rendered by the kernel at 2x2 subsampling (``obs[y, x] = frame[2y, 2x]``).
With ``obs`` (``envs/features/observations.py``) a data plane goes in front, ``[N, 1 + K, 72, 80]``: named RAM
fields and a grid of the visited cells around the player, ``obs_vector`` bytes of it.

Episodes and rewards. An episode starts from one of the task's start states and ends:
  * terminated, success: the screen matched the task's goal template for its ``k_consecutive``
    steps (``envs/rewards.py``: dist = mean |frame - goal| / 3 over the goal's region, closer
    than its ``tau``);
  * terminated, failure: the screen matched the task's fail template (e.g. GAME OVER);
  * truncated: ``max_steps`` steps passed (bootstrap through it; never both).
The reward is the task's list of reward items (``envs/reward_transforms.py``; the preset ``goal``:
step_cost + alpha * (prev_dist - dist) + goal_bonus * success + fail_penalty * failure); the
policy sees pixels (and, with ``obs``, the data plane). ``info["episode_return"]`` is the game return (the sum of the terms,
before any transform); with a transform, ``info["trained_return"]`` is the return of the rewards
``step`` returned. Each of the task's counters adds ``info[name]``: its increase over the episode.

Start states and resets. Start states are made once, at construction, on a one-env machine
(the task's start recipe: power-on or a state file, then ``frames`` frames of its input trace,
then ``variants`` states ``variant_frames`` idle frames apart). All of them sit in a cache on the
device; an env that ended is reset by a masked restore from the cache, the entry drawn from the
env's seeded generator: no disk I/O, no Python loop over envs, no host sync.

Features. Everything a task switches on (the goal and fail templates, counters, milestones, the state
pool and swarm, the visit heatmap, structured observations, the reward list) is a feature
(``envs/features/``: one file each, one protocol in ``features/base.py``); this file is the engine
(machines, frames, actions, the start-state cache of ``envs/start_cache.py``, frame stacks, the time
limit) and calls every feature's hooks in the order of ``features.FEATURES`` (docs/design.md).
``env.feature(name)`` is a feature of this env, or None. ``train(False)`` / ``eval()``: the pool
harvests nothing and the heatmap counts nothing.

Performance notes. Per step: the codec lookup, the launch(es), one copy that builds the
new stack (the K-1 kept frames and the new one, into fresh memory that the caller may keep),
the reward math and the masked reset, all device tensor ops. On CUDA every Warp launch goes
on torch's current stream, actions and pixels never leave the device, and the kernel's obs
buffer is read through a zero-copy view whose ``data_ptr()`` never changes. Action ranges
are checked on the host on a CPU (free there); on CUDA an out-of-range action presses
nothing and is counted (``invalid_action_count``) unless ``check_action_range=True``.
"""
from __future__ import annotations

import contextlib
import inspect
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import warp as wp

from gbx_lightning.checks import number_problem
from gbx_lightning.emu import VecGameBoy
from gbx_lightning.emu.cartridge import RomError, load_cartridge
from gbx_lightning.roms import resolve_rom

from .actions import CodecName, resolve_codec
from .base import EpisodeStats, OptionError, StateError, VecEnvBase, check_actions, check_int, resolve_device
from .features import FEATURES, Feature, Step
from .features.base import loaded_tensor
from .features.observations import ObsFields
from .pixels import WORDS_PER_FRAME, compose_stacks
from .start_cache import StartCache, build_start_rows, machine_state_bytes
from .task import Task, TaskFields, check_task, load_task, missing_required

__all__ = ["GameBoyEnv"]

# 3: each feature's state under "features" (version 2 kept the templates', counters', milestones', pool's, heatmap's
# and reward's state at the top level; version 1 kept orchard's seeds_before/seeds_episode in every env's state)
_STATE_VERSION = 3


@dataclass
class _Shard:
    """One VecGameBoy (envs lo..hi-1 of the batch) and Warp/torch views of the env's buffers over its envs,
    made once: the kernels read and write them in place every step."""
    gb: VecGameBoy
    lo: int
    hi: int
    buttons: wp.array      # uint8 [n]: this step's button masks
    reset_mask: wp.array   # uint8 [n]: 1 = restore from the start cache
    slots: wp.array        # int32 [n]: the cache entry each restore takes
    obs: wp.array          # uint8 [n, 72, 80]: the kernel's observation buffer
    obs_words: wp.array    # int64 [n, WORDS_PER_FRAME]: the same memory as 64-bit words
    wram: torch.Tensor     # uint8 [n, 8192]: the machines' WRAM, zero-copy


class GameBoyEnv(VecEnvBase):
    """N Game Boys running one ROM, stepped together on a task; see the module docstring.

    Args:
        num_envs: envs stepped in parallel.
        device: "cpu" or "cuda[:K]".
        rom: a built-in ROM name ("orchard") or a path to a .gb file; None: the task's ``rom``.
        task: a built-in task name ("orchard/level1"), a task YAML file, or a mapping of task fields
            (``envs/task.py``; ``base: NAME`` to start from a task); in Python also a ``Task``. None:
            power-on, no goal or fail screen, the "goal" reward.
        seed: seeds the reset generator (which start state each reset uses).
        frames_per_step: a step's length in frames.
        release_after_frames: frames of a step its buttons are held (released for the rest).
        stack_k: observation frames (1..8; newest last).
        action_codec: a codec name (``envs.actions.ACTION_CODECS``) or a list of button combinations
            (e.g. ["-", "right", "a+right"]).
        max_steps: truncation (time limit) in steps.
        cpu_threads: CPU shards (one launch thread each); None = every core this process may use.
        check_action_range: on CUDA, also check action ranges on the host (a sync per step).
        obs: what the observation adds beside the pixels (``envs/features/observations.py``): ``ram``, a list of
            the task's RAM map fields, and ``visited``, ``{radius, stride}``, a grid of the task's explore item's
            cells around the player, and ``nearby``, a grid of where things (sprites, beetles) are around the
            player; a data plane in front of the frames. None: pixels only.
    """

    obs_dtype = torch.uint8
    render_full = False   # True: the machines also draw the full 160x144 screens (``frames()``)

    @classmethod
    def check_options(cls, **options) -> None:
        """The options' values and the task's files, checked without building anything (milliseconds): ranges,
        the ROM's header, the task (start states against the ROM, trace, templates, reward items) and each
        feature's own checks. Names and types are the parser's (this signature's annotations); this is what it
        cannot see. Raises OptionError naming the option ("task.start.state ..."); the CLI runs this before any
        long work."""
        cls._checked(options)

    @classmethod
    def _checked(cls, options: dict) -> tuple[Task, bytes | str, str, dict, Any]:
        """check_options' work on ``options`` over the constructor's defaults; returns (the task, what
        VecGameBoy loads, the ROM's display name, the options with defaults, the cartridge)."""
        opts = {name: p.default for name, p in inspect.signature(cls.__init__).parameters.items()
                if p.default is not p.empty}
        opts.update(options)

        def number(option, **bounds):
            problem = number_problem(opts[option], integer=True, **bounds)
            if problem is not None:
                raise OptionError(option, problem)

        number("seed", low=0)
        number("frames_per_step", low=1)
        if isinstance(opts["frames_per_step"], int):
            number("release_after_frames", low=0, high=opts["frames_per_step"])
        number("stack_k", low=1, high=8)
        number("max_steps", low=1)
        number("cpu_threads", low=1, none="null")
        task = load_task(opts["task"])
        missing = missing_required(task, opts["rom"])
        if missing is not None:
            raise OptionError("rom" if missing == "rom" else f"task.{missing}",
                              f"is required by the task {task.name or '(inline)'}: a game that cannot ship with "
                              f"gbx_lightning needs your own file here (the task file says which)")
        rom_option = "rom" if opts["rom"] is not None else "task.rom"
        rom = opts["rom"] if opts["rom"] is not None else task.rom
        if rom is None:
            raise OptionError("rom", "is required: a .gb file path or a built-in ROM name (orchard), or a task that "
                                     "names its ROM (e.g. task: orchard/level1)")
        try:
            source, name = resolve_rom(rom)
            cart = load_cartridge(source)
        except (RomError, FileNotFoundError, TypeError) as err:
            raise OptionError(rom_option, f"is not a ROM we can run: {err}") from None
        check_task(task, cart, name)
        for feature in FEATURES:
            feature.check(task, opts, cart)
        resolve_codec(opts["action_codec"])
        return task, source, name, opts, cart

    @classmethod
    def state_bound(cls, num_envs: int, **options) -> dict[str, Any]:
        """What the state of ``num_envs`` envs with these options can reach in a checkpoint, nothing built
        (milliseconds; the options checked as ``check_options``): ``envs``, the bytes of their machines, frame stacks
        and episode counters; ``features``, the ``Feature.checkpoint_bound`` of each feature whose state can be large
        beside them (a full state pool: ``task.pool.max_mb``)."""
        task, _, _, opts, cart = cls._checked(options)
        per_env = machine_state_bytes(cart) + opts["stack_k"] * 72 * 80 + 4 + 8
        bounds = (feature.checkpoint_bound(task, opts, cart) for feature in FEATURES)
        return {"envs": num_envs * per_env, "features": [b for b in bounds if b is not None]}

    def __init__(self, num_envs: int, device: str | torch.device = "cpu", *, rom: str | None = None,
                 task: str | TaskFields | None = None, seed: int = 0, frames_per_step: int = 24,
                 release_after_frames: int = 8, stack_k: int = 4, action_codec: CodecName | list[str] = "dpad_ab_start_noop",
                 max_steps: int = 1000, cpu_threads: int | None = None, check_action_range: bool = False,
                 obs: ObsFields | None = None):
        # ---- options and task, all checked before any kernel work (check_options: one place for every check) ----
        options = {k: v for k, v in locals().items() if k not in ("self", "__class__", "num_envs", "device")}
        problem = number_problem(num_envs, low=1, integer=True)
        if problem is not None:
            raise OptionError("num_envs", problem)
        self.task, rom_source, self.rom_name, self.options, _ = self._checked(options)
        task = self.task
        self.num_envs, self.device = num_envs, resolve_device(device)
        self.frames_per_step, self.release_after_frames = frames_per_step, release_after_frames
        self.stack_k, self.max_steps = stack_k, max_steps
        self.check_action_range = bool(check_action_range)
        self.action_names, masks = resolve_codec(action_codec)
        self.num_actions = len(masks)
        self._frames_shape = (self.stack_k, 72, 80)

        # ---- machines: one VecGameBoy per CPU shard (one launch thread each), one on CUDA ----------
        if cpu_threads is None:
            cpu_threads = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
        n = self.num_envs
        shards = 1 if self.device.type == "cuda" else min(cpu_threads, n)
        self._bounds = [n * i // shards for i in range(shards + 1)]
        wp_device = "cpu" if self.device.type == "cpu" else f"cuda:{self.device.index}"
        self._machines = [VecGameBoy(rom_source, hi - lo, device=wp_device)
                          for lo, hi in zip(self._bounds, self._bounds[1:])]
        self.rom_sha256 = self._machines[0].cart.sha256
        self.rom_title = self._machines[0].cart.title
        self._pool = ThreadPoolExecutor(shards - 1, thread_name_prefix="gameboy") if shards > 1 else None
        # during a step or reset, the RAM fields read since the machines last ran (``read_field``): the features
        # read ~10 fields ~50 times a step, each read a few small torch ops
        self._fields: dict | None = None
        self._wram: torch.Tensor | None = None

        # ---- device buffers (persistent: Warp sees them through views made once) --------------------
        dev = self.device
        # the codec's masks and, in its last row, the invalid action's (nothing pressed)
        self._codec = torch.from_numpy(np.append(masks, np.uint8(0)).astype(np.uint8)).to(dev)
        self._buttons = torch.zeros(n, dtype=torch.uint8, device=dev)
        self._reset_mask = torch.zeros(n, dtype=torch.uint8, device=dev)
        self._slots = torch.zeros(n, dtype=torch.int32, device=dev)
        self._invalid = torch.zeros((), dtype=torch.int64, device=dev)
        self._sync()
        self._shards = []
        for gb, lo, hi in zip(self._machines, self._bounds, self._bounds[1:]):
            obs_t = wp.to_torch(gb.obs())
            self._shards.append(_Shard(
                gb, lo, hi, buttons=wp.from_torch(self._buttons[lo:hi]),
                reset_mask=wp.from_torch(self._reset_mask[lo:hi]), slots=wp.from_torch(self._slots[lo:hi]), obs=gb.obs(),
                obs_words=wp.from_torch(obs_t.view(torch.int64).reshape(hi - lo, WORDS_PER_FRAME)),
                wram=wp.to_torch(gb.state_array("wram"))))
        self._slots_wp = wp.from_torch(self._slots)
        self._reset_mask_wp = wp.from_torch(self._reset_mask)
        self._obs_views = [wp.to_torch(sh.obs) for sh in self._shards]   # each step's newest frames
        self._no_dist = torch.zeros(n, dtype=torch.float32, device=dev)    # dist/prev_dist without a goal template

        # ---- start states (envs/start_cache.py): features may add rows (the pool) and columns ---------
        rows, screens, self.num_task_starts, scores = build_start_rows(task, rom_source, self._machines[0].device,
                                                                       self.frames_per_step)
        self.cache = StartCache(self._machines, self._bounds, rows, screens, self.stack_k, dev)
        self.start_scores = torch.from_numpy(scores).to(dev)  # each start state's pool score (its recipe's)
        self.num_start_states = self.cache.num_start_states   # the task's, then train_starts' (training only)
        self._train_share = task.train_starts.share if task.train_starts is not None else 0.0
        if self.num_start_states > self.num_task_starts:   # the draw's buffers (_draw_starts runs every step)
            self._task_row = torch.zeros(n, dtype=torch.int32, device=dev)
            self._pick = torch.zeros(n, dtype=torch.float32, device=dev)

        # ---- episode state and the task's features (envs/features/, in their order) -------------------
        self.training = True
        self.generator = torch.Generator(device=dev)
        self._stack = torch.zeros((n, *self._frames_shape), dtype=torch.uint8, device=dev)
        self._steps = torch.zeros(n, dtype=torch.int32, device=dev)
        self._stats = EpisodeStats(n, dev)   # the game return (the terms' sum), what episode_return reports
        self.features: list[Feature] = []
        self._named: dict[str, Feature] = {}
        for feature_class in FEATURES:     # in order: a feature may look up those before it (env.feature)
            feature = feature_class.build(task, self)
            if feature is not None:
                self.features.append(feature)
                self._named[feature.name] = feature
        self._on_shard = [f for f in self.features if type(f).on_shard is not Feature.on_shard]
        self._planes = [f for f in self.features if f.obs_planes]
        self.obs_vector = sum(f.obs_vector for f in self._planes)
        self.obs_shape = (sum(f.obs_planes for f in self._planes) + self.stack_k, 72, 80)
        self._seed = seed
        self.reset(seed=seed)

    # ------------------------------------------------------------------ features
    def feature(self, name: str) -> Feature | None:
        """This env's feature of that name (``envs/features/``: templates, ram_goal, heatmap, milestones,
        curriculum, pool, obs, reward, counters), or None where the task does not use it."""
        return self._named.get(name)

    @property
    def reward_pipeline(self):
        """The reward feature's ``RewardPipeline`` (``VecEnvExtras``: its statistics outlive a checkpoint that
        leaves the envs out)."""
        return self._named["reward"].pipeline

    @property
    def stack(self) -> torch.Tensor:
        """uint8 [N, K, 72, 80]: every env's frame stack (during a step: before its new frame)."""
        return self._stack

    @property
    def slots(self) -> torch.Tensor:
        """int64 [N]: the start-cache row each env last restarted from (or will, during a step's resets)."""
        return self._slots.long()

    # ------------------------------------------------------------------ protocol
    def reset(self, seed: int | None = None) -> torch.Tensor:
        """Start a new episode in every env. seed=None continues the reset generator; an int reseeds it."""
        if seed is not None:
            check_int("seed", seed, minimum=0)
            self._seed = seed
            self.generator.manual_seed(seed)
        with self._on_torch_stream(), self._reading():
            self._reset_mask.fill_(1)
            self._draw_starts()
            self._restore_machines()
            self._stack = self.cache.stack[self._slots.long()].clone()
            self._steps.zero_()
            self._stats.reset()
            for feature in self.features:
                feature.reset(None)
            self._reset_mask.zero_()
        return self.observe()

    def step(self, actions: torch.Tensor):
        """One step of every env (auto-reset where an episode ended); returns fresh tensors (see VecEnv)."""
        check_actions(actions, self.num_envs, self.device)
        if self.device.type == "cpu" or self.check_action_range:
            bad = (actions < 0) | (actions >= self.num_actions)
            if bool(bad.any()):
                raise ValueError(f"step: actions must be in 0..{self.num_actions - 1} "
                                 f"({', '.join(self.action_names)}), got values {actions[bad][:5].tolist()}")
        with self._on_torch_stream(), self._reading():
            valid = (actions >= 0) & (actions < self.num_actions)
            self._invalid += (~valid).sum()
            torch.index_select(self._codec, 0, torch.where(valid, actions, self.num_actions), out=self._buttons)
            self._on_shards(self._frames)
            return self._after_frames()

    def _after_frames(self):
        """Everything after the frames ran: the features in order (module docstring of envs/features), the new
        stacks, the resets."""
        n, dev = self.num_envs, self.device
        no = torch.zeros(n, dtype=torch.bool, device=dev)
        self._steps += 1
        step = Step(self, self.screens(), self._no_dist, self._no_dist, terminated=no, success=no, failed=no,
                    time_up=self._steps >= self.max_steps)
        for feature in self.features:
            feature.after_step(step)
        terminated, truncated = step.terminated, step.truncated
        reward = step.reward if step.reward is not None else torch.zeros(n, dtype=torch.float32, device=dev)
        game_reward = step.game_reward if step.game_reward is not None else reward
        episode_return, episode_length = self._stats.update(game_reward, terminated, truncated)
        done = step.done
        step.info.update({"episode_return": episode_return, "episode_length": episode_length,
                          "success": step.success, "failed": step.failed})
        for feature in self.features:
            feature.report(step)

        # the ended envs' starts (features may harvest, then redirect them), the new stacks (fresh memory, the
        # caller may keep them), then the machines of ended envs restored
        self._reset_mask.copy_(done)
        step.slots = drawn = self._draw_starts()
        for feature in self.features:
            feature.before_reset(step)
        if step.slots is not drawn:
            self._slots.copy_(step.slots)
        final_obs = torch.empty((n, *self._frames_shape), dtype=torch.uint8, device=dev)
        obs = torch.empty_like(final_obs)
        words = [wp.from_torch(t.view(torch.int64).reshape(n, -1)) for t in (self._stack, final_obs, obs)]
        chunk = 1 if dev.type == "cuda" else words[0].shape[1]
        self._on_shards(lambda i: self._stacks_and_resets(i, words, chunk))
        step.slots = self._slots.long()
        self._steps = torch.where(done, torch.zeros((), dtype=torch.int32, device=dev), self._steps)
        self._stack = obs   # before the features' reset: they may read the start screens (observe())
        for feature in self.features:
            feature.reset(step)
        step.info["final_obs"] = self._with_planes(final_obs, final=True)
        return self._with_planes(obs, final=False), reward, terminated, truncated, step.info

    _STATE_TENSORS = ("stack", "steps")

    def state_dict(self) -> dict[str, Any]:
        """Everything a restored env needs to continue identically: every machine, the frame stacks, the episode
        counters and the reset generator (CPU tensors, ~30 KB of machine state per env), and each feature's state
        under "features" (by name)."""
        self._sync()
        machines = {}
        for name in self._machines[0].state_names:   # torch tensors: checkpoints load with weights_only=True
            machines[name] = torch.from_numpy(np.concatenate([gb.state_array(name).numpy() for gb in self._machines]))
        tensors = {k: getattr(self, "_" + k).cpu().clone() for k in self._STATE_TENSORS}
        return {"version": _STATE_VERSION, "num_envs": self.num_envs, "rom_sha256": self.rom_sha256,
                "stack_k": self.stack_k, "seed": self._seed, "generator": self.generator.get_state(),
                "machines": machines, "stats": self._stats.state_dict(), **tensors,
                "features": {f.name: f.state_dict() for f in self.features}}

    @property
    def state_nbytes(self) -> int:
        """Bytes of tensors in ``state_dict()`` (machines, stacks, the features'), without building it."""
        machines = sum(gb.state_bytes_per_env * gb.num_envs for gb in self._machines)
        tensors = sum(t.numel() * t.element_size() for t in [getattr(self, "_" + k) for k in self._STATE_TENSORS]
                      + [self._stats.running_return, self._stats.running_length])
        return machines + tensors + self.generator.get_state().numel() + sum(f.state_nbytes for f in self.features)

    def state_parts(self) -> list[tuple[str, int]]:
        """(what, bytes) of ``state_dict``'s parts: the envs' machines and frame stacks, then each feature's (those
        with any state): what a checkpoint that leaves the env state out loses."""
        own = self.state_nbytes - sum(f.state_nbytes for f in self.features)
        return [("every env's machine and frame stack", own)] + [
            (f.state_title(), f.state_nbytes) for f in self.features if f.state_nbytes]

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore a state_dict() of an env built with the same ROM, num_envs, stack_k and task features."""
        where = "GameBoyEnv.load_state_dict"
        if state.get("version") in (1, 2):
            old = ("1, before tasks: orchard's seeds counters in every env's state" if state["version"] == 1
                   else "2, before features: each feature's state at the top level")
            raise StateError(f"{where}: this env state was saved by the old GameBoyEnv layout (version {old}); "
                             f"version {_STATE_VERSION} keeps each feature's state under 'features'. Start a fresh "
                             f"run, or resume with the code that saved it")
        missing = [k for k in ("version", "num_envs", "rom_sha256", "stack_k", "generator", "machines", "stats",
                               "features", *self._STATE_TENSORS) if k not in state]
        if missing:
            raise StateError(f"{where}: state is missing {missing}; expected a GameBoyEnv.state_dict()")
        if state["version"] != _STATE_VERSION:
            raise StateError(f"{where}: version must be {_STATE_VERSION}, got {state['version']!r}")
        for key, mine in (("num_envs", self.num_envs), ("rom_sha256", self.rom_sha256), ("stack_k", self.stack_k)):
            if state[key] != mine:
                raise StateError(f"{where}: {key} must be {mine!r} (this env), got {state[key]!r}")
        saved = state["features"]
        for cls in FEATURES:
            if cls.MUST_MATCH and cls.name in saved and cls.name not in self._named:
                raise StateError(f"{where}: {cls.unexpected_state(saved[cls.name])}")
        self._sync()
        for name in self._machines[0].state_names:
            full = torch.as_tensor(state["machines"][name]).numpy()
            for gb, lo, hi in zip(self._machines, self._bounds, self._bounds[1:]):
                dst = gb.state_array(name)
                if full.shape[1:] != tuple(dst.shape[1:]) or full.shape[0] != self.num_envs:
                    raise StateError(f"{where}: machines[{name!r}] must have shape "
                                     f"{[self.num_envs, *dst.shape[1:]]}, got {list(full.shape)}")
                dst.assign(np.ascontiguousarray(full[lo:hi]).astype(wp.dtype_to_numpy(dst.dtype)))
        for key in self._STATE_TENSORS:
            setattr(self, "_" + key, loaded_tensor(where, key, state[key], getattr(self, "_" + key)))
        self.generator.set_state(state["generator"])
        self._stats.load_state_dict(state["stats"])
        for feature in self.features:   # after the machines: a feature may read them (the reward items' sync)
            feature.load_state_dict(saved.get(feature.name), where)
        self._seed = state.get("seed", self._seed)
        self._sync()

    def train(self, mode: bool = True) -> "GameBoyEnv":
        """Training (the default) or not: an env that is not training (an evaluation env: ``eval()``) starts every
        episode from the task's start states, harvests nothing and never swarms, whatever its task's pool says, and
        counts nothing into the heatmap."""
        self.training = bool(mode)
        return self

    def eval(self) -> "GameBoyEnv":
        return self.train(False)

    # ------------------------------------------------------------------ extras
    def observe(self) -> torch.Tensor:
        """The current observation (e.g. after load_state_dict): the frame stack, behind the features' planes
        (``obs``)."""
        return self._with_planes(self._stack, final=False)

    def _with_planes(self, frames: torch.Tensor, final: bool) -> torch.Tensor:
        if not self._planes:
            return frames
        return torch.cat([*(f.observation(final) for f in self._planes), frames], 1)

    def screens(self) -> torch.Tensor:
        """uint8 [N, 72, 80]: the screens the last step drew (the kernels' buffers: during a step, before any
        reset)."""
        return self._obs_views[0] if len(self._obs_views) == 1 else torch.cat(self._obs_views)

    def invalid_action_count(self) -> int:
        """Actions outside 0..num_actions-1 seen since construction (they pressed nothing). Syncs the host."""
        return int(self._invalid.item())

    def frames(self) -> np.ndarray:
        """uint8 [N, 144, 160]: the full screens of the last step, if the machines drew them (see
        ``render_full``); host copies, for tools and tests."""
        return np.concatenate([gb.frame() for gb in self._machines])

    def read_ram(self, addr: int, length: int = 1) -> torch.Tensor:
        """uint8 [N, length]: WRAM bytes ($C000-$DFFF) of every env, read on the device (no copy to the host)."""
        check_int("addr", addr, minimum=0xC000, maximum=0xDFFF)
        check_int("length", length, minimum=1, maximum=0xE000 - addr)
        off = addr - 0xC000
        if len(self._shards) == 1:
            return self._shards[0].wram[:, off:off + length]
        if self._fields is None:
            return torch.cat([shard.wram[:, off:off + length] for shard in self._shards])
        if self._wram is None:   # during a step: the shards' WRAM joined once until the machines run again
            self._wram = torch.cat([shard.wram for shard in self._shards])
        return self._wram[:, off:off + length]

    def read_field(self, reader) -> torch.Tensor:
        """``reader``'s values (a ``FieldReader``: int64 [N, count]). During a step or reset each field is decoded
        once until the machines run or restart; callers must not write into the tensor."""
        if self._fields is None:
            return reader.decode(self.read_ram(reader.field.address, reader.field.span))
        value = self._fields.get(reader.field)
        if value is None:
            value = self._fields[reader.field] = reader.decode(self.read_ram(reader.field.address, reader.field.span))
        return value

    @contextlib.contextmanager
    def _reading(self):
        """The span of a step or reset: RAM fields remembered (``read_field``), forgotten when it ends (outside,
        a caller may change the machines)."""
        self._fields, self._wram = {}, None
        try:
            yield
        finally:
            self._fields = self._wram = None

    @property
    def machines(self) -> list[VecGameBoy]:
        """The VecGameBoy shards (envs in order)."""
        return list(self._machines)

    # ------------------------------------------------------------------ internals
    def _draw_starts(self) -> torch.Tensor:
        """Each env's next start, drawn from the env's generator: uniformly among the task's start states, or for a
        training env with ``train_starts``, among theirs with probability ``share``; int64 [N]. (With one start
        state and no train_starts, row 0 without a draw: the slots may hold a pooled row from the last step's draw.)"""
        own, extra = self.num_task_starts, self.num_start_states - self.num_task_starts
        if self.training and extra:
            g, n, dev = self.generator, self.num_envs, self.device
            torch.randint(0, own, (n,), generator=g, device=dev, out=self._task_row)
            torch.randint(own, own + extra, (n,), generator=g, device=dev, out=self._slots)
            torch.rand(n, generator=g, device=dev, out=self._pick)
            torch.where(self._pick < self._train_share, self._slots, self._task_row, out=self._slots)
        elif own > 1:
            torch.randint(0, own, (self.num_envs,), generator=self.generator, device=self.device, out=self._slots)
        else:
            self._slots.zero_()
        return self._slots.long()

    def _restore_machines(self) -> None:
        self._on_shards(lambda i: self._shards[i].gb.restore_from(self.cache.snapshot, self._shards[i].slots,
                                                                   self._shards[i].reset_mask))

    def _on_shards(self, work) -> None:
        """work(i) for every shard i: shard 0 in this thread, the others in the pool's threads (Warp's CPU
        launches release the GIL, so the shards run on separate cores). The machines may change: the RAM fields
        read before are forgotten."""
        if self._pool is None:
            for i in range(len(self._machines)):
                work(i)
        else:
            pending = [self._pool.submit(work, i) for i in range(1, len(self._machines))]
            work(0)
            for job in pending:
                job.result()
        if self._fields is not None:
            self._fields, self._wram = {}, None

    def _frames(self, i: int) -> None:
        """Shard i: the step's frames, then the features' work on its screens (the template distances)."""
        shard = self._shards[i]
        shard.gb.run_frames(self.frames_per_step, buttons=shard.buttons, release_after=self.release_after_frames,
                            render="full" if self.render_full else "obs")
        for feature in self._on_shard:
            feature.on_shard(shard)

    def _stacks_and_resets(self, i: int, words: list, chunk: int) -> None:
        """Shard i: the new stacks (final_obs, obs), then its ended envs restored from the start cache."""
        shard = self._shards[i]
        width = words[0].shape[1]
        wp.launch(compose_stacks, dim=(shard.gb.num_envs, -(-width // chunk)),
                  inputs=[words[0], shard.obs_words, self.cache.words, self._slots_wp, self._reset_mask_wp, shard.lo,
                          chunk, words[1], words[2]], device=shard.gb.device)
        shard.gb.restore_from(self.cache.snapshot, shard.slots, shard.reset_mask)

    def _on_torch_stream(self):
        """On CUDA: Warp launches go on torch's current stream (ordered with the torch ops around them)."""
        if self.device.type == "cuda":
            return wp.ScopedStream(wp.stream_from_torch(torch.cuda.current_stream(self.device)))
        return contextlib.nullcontext()

    def _sync(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.current_stream(self.device).synchronize()
            wp.synchronize_device(f"cuda:{self.device.index}")

    def __repr__(self) -> str:
        return (f"GameBoyEnv(num_envs={self.num_envs}, rom={self.rom_name!r}, device={str(self.device)!r}, "
                f"task={self.task.name or 'inline'!r}, stack_k={self.stack_k}, frames_per_step={self.frames_per_step}, "
                f"actions={list(self.action_names)}, max_steps={self.max_steps}, "
                f"features={[f.name for f in self.features]})")
