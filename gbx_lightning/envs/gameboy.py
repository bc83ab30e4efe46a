"""GameBoyEnv: a batch of Game Boys (VecGameBoy) as an RL env: pixels in, button presses out.

The engine only: which game, where its episodes start, which screens end them, what a step pays
and what is counted is the ``task`` (``envs/task.py``: a built-in name like ``orchard/level1``, a
YAML file or a mapping), so this file names no game.

One step = one action per env, turned into a button mask by the action codec
(``envs/actions.py``), held for ``release_after_frames`` frames and released for the rest
of ``frames_per_step`` frames, all envs in one kernel launch (one per CPU core on a CPU).
The observation is the last ``stack_k`` step-end screens, uint8 ``[N, K, 72, 80]``, shades
0..3, newest last, rendered by the kernel at 2x2 subsampling (``obs[y, x] = frame[2y, 2x]``).
With ``obs`` (``envs/observations.py``) a data plane goes in front, ``[N, 1 + K, 72, 80]``: named RAM
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

Milestones and the state pool. The task's milestones (``envs/milestones.py``) are read from RAM at
every step's end and reported in ``info`` when an episode ends. A task's ``pool`` (``envs/pool.py``)
adds rows to the start-state cache: a training env harvests states whose milestone score rose into
them, draws a share of its resets from them and, every ``swarm.every`` steps, restarts the envs behind
the best one from its state (their episodes end truncated). ``train(False)`` / ``eval()``: none of it.

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

from gbx_lightning.emu import VecGameBoy
from gbx_lightning.emu import state as S
from gbx_lightning.emu.buttons import read_trace, trace_segments
from gbx_lightning.emu.cartridge import RomError, load_cartridge
from gbx_lightning.roms import resolve_rom

from gbx_lightning.checks import number_problem

from .actions import CodecName, resolve_codec
from .base import EpisodeStats, OptionError, StateError, VecEnvBase, check_actions, check_float, check_int, resolve_device
from .goal import REWARD_DEFAULTS, GoalTemplate, load_goal
from .heatmap import VisitHeatmap
from .milestones import MilestoneTracker
from .observations import ObsFields, StructuredObs, check_obs
from .pixels import WORDS_PER_FRAME, compose_stacks, template_distance
from .pool import PoolRows, StatePool, draw_pool_slots, harvest_plan, pool_capacity, pool_state_bytes, swarm_plan
from .reward_transforms import RewardContext, build_reward_pipeline
from .rewards import consecutive_hits, goal_distance, ram_counter_delta, ram_value
from .task import (Task, TaskFields, check_task, counter_location, load_start_state, load_task, missing_required,
                   start_states)

__all__ = ["GameBoyEnv"]

# 2: the task's counters under "counters" (version 1 kept orchard's seeds_before/seeds_episode in every env's state)
_STATE_VERSION = 2


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
        obs: what the observation adds beside the pixels (``envs/observations.py``): ``ram``, a list of the
            task's RAM map fields, and ``visited``, ``{radius, stride}``, a grid of the task's explore item's
            cells around the player; a data plane in front of the frames. None: pixels only.
    """

    obs_dtype = torch.uint8
    render_full = False   # True: the machines also draw the full 160x144 screens (``frames()``)

    @classmethod
    def check_options(cls, **options) -> None:
        """The options' values and the task's files, checked without building anything (milliseconds): ranges,
        the ROM's header, the task (start states against the ROM, trace, templates, reward items). Names and
        types are the parser's (this signature's annotations); this is what it cannot see. Raises OptionError
        naming the option ("task.start.state ..."); the CLI runs this before any long work."""
        cls._checked(options)

    @classmethod
    def _checked(cls, options: dict) -> tuple[Task, bytes | str, str]:
        """check_options' work on ``options`` over the constructor's defaults; returns (the task, what
        VecGameBoy loads, the ROM's display name)."""
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
        check_obs(opts["obs"], task.reward, task.ram_map)
        if task.pool is not None and isinstance(opts["stack_k"], int):
            machine = sum(int(np.prod(shape)) * np.dtype(dt).itemsize for _, shape, dt in
                          S.per_env_layout(int(cart.ram_bytes), len(S.mbc_power_on_regs(cart.spec()))))
            per_state = pool_state_bytes(machine, opts["stack_k"])
            if pool_capacity(task.pool.max_mb, per_state) < 1:
                raise OptionError("task.pool.max_mb", f"holds no state: one takes {per_state / (1 << 20):.3f} MB "
                                                      f"(machine and frame stack), got {task.pool.max_mb}")
        resolve_codec(opts["action_codec"])
        return task, source, name

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
        self.task, rom_source, self.rom_name = self._checked(options)
        task = self.task
        self.num_envs, self.device = num_envs, resolve_device(device)
        self.frames_per_step, self.release_after_frames = frames_per_step, release_after_frames
        self.stack_k, self.max_steps = stack_k, max_steps
        self.check_action_range = bool(check_action_range)
        self.action_names, masks = resolve_codec(action_codec)
        self.num_actions = len(masks)
        self._frames_shape = (self.stack_k, 72, 80)
        self._obs_layout = check_obs(obs, task.reward, task.ram_map)
        self.obs_vector = 0 if self._obs_layout is None else self._obs_layout.length
        self.obs_shape = self._frames_shape if self._obs_layout is None else (1 + self.stack_k, 72, 80)

        # ---- the templates and the values they default (REWARD_DEFAULTS < the PNG's JSON < the task) ------------
        self.goal = load_goal(task.goal.path, field="task.goal") if task.goal is not None else None
        self.fail = load_goal(task.fail.path, field="task.fail") if task.fail is not None else None
        goal_json = {**REWARD_DEFAULTS, **(self.goal.reward if self.goal is not None else {})}
        given = {"tau": task.goal.tau if task.goal else None,
                 "k_consecutive": task.goal.k_consecutive if task.goal else None,
                 "step_cost": task.step_cost, "alpha": task.alpha, "goal_bonus": task.goal_bonus}
        settings = {**goal_json, **{k: v for k, v in given.items() if v is not None}}
        self.tau = check_float("tau", settings["tau"], 0.0, 1.0, strict_min=True)
        self.k_consecutive = check_int("k_consecutive", settings["k_consecutive"], minimum=1)
        self.step_cost = check_float("step_cost", settings["step_cost"])
        self.alpha = check_float("alpha", settings["alpha"])
        self.goal_bonus = check_float("goal_bonus", settings["goal_bonus"])
        self.fail_penalty = float(task.fail_penalty)
        fail_json = self.fail.reward if self.fail is not None else REWARD_DEFAULTS
        self.fail_tau = (float(task.fail.tau) if task.fail is not None and task.fail.tau is not None
                         else float(fail_json["tau"]) if self.fail is not None else 0.0)
        self.fail_k = check_int("k_consecutive", task.fail.k_consecutive if task.fail is not None and
                                task.fail.k_consecutive is not None else fail_json["k_consecutive"], minimum=1)
        self.counters = list(task.counters)
        self._counter_at = [counter_location(c, task.ram_map) for c in self.counters]   # (address, size) each

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
        self._templates = self._template_arrays()
        self._dist = torch.zeros((2, n), dtype=torch.float32, device=dev)   # rows: goal, fail
        self._dist_wp = wp.from_torch(self._dist)
        self._goal_t = self._template_tensors(self.goal)

        # ---- start states (and the pool's rows after them: envs/pool.py) ----------------------------
        rows, cache_obs = self._build_start_cache(rom_source)
        self.num_start_states = len(rows)
        capacity = 0
        if task.pool is not None:
            capacity = pool_capacity(task.pool.max_mb, pool_state_bytes(self._machines[0].state_bytes_per_env,
                                                                        self.stack_k))
            self._cache = self._machines[0].make_pool(rows, self.num_start_states + capacity + 1)  # + the swarm row
        else:
            self._cache = self._machines[0].make_cache(rows)
        cache_rows = self._cache.num_envs
        cache_obs = torch.cat([cache_obs, cache_obs.new_zeros((cache_rows - len(rows), *cache_obs.shape[1:]))])
        self._cache_stack = cache_obs[:, None].expand(-1, self.stack_k, -1, -1).contiguous()
        self._cache_words = wp.from_torch(self._cache_stack.view(torch.int64).reshape(cache_rows, -1))
        self._cache_dist = (goal_distance(cache_obs, *self._goal_t) if self._goal_t is not None
                            else torch.zeros(cache_rows, device=dev))
        self._obs_views = [wp.to_torch(sh.obs) for sh in self._shards]   # each step's newest frames (harvests)

        # ---- milestones and the state pool (envs/milestones.py, envs/pool.py) ----------------------------
        self.training = True
        self.milestones = MilestoneTracker(task.milestones, task.ram_map, n, dev)
        self.state_pool = StatePool(task.pool, capacity, dev) if task.pool is not None else None
        if self.state_pool is not None:
            self._pool_rows = PoolRows(self._cache, self._cache_stack, self._cache_dist, self._machines, self._bounds,
                                       dev)
            names = [m.name for m in task.milestones]
            self._score_index = torch.tensor([names.index(k) for k in task.pool.score], device=dev)
            self._score_weight = torch.tensor([float(w) for w in task.pool.score.values()], device=dev)
        self._base_score = torch.zeros(n, dtype=torch.float32, device=dev)   # the score of each episode's start
        self._score = torch.zeros(n, dtype=torch.float32, device=dev)        # each env's score at the last step
        self._from_pool = torch.zeros(n, dtype=torch.bool, device=dev)       # its episode started from a pooled state
        self._swarm_clock = 0                                                # steps since reset(): swarms count them
        # where the training envs go, for the dashboards (envs/heatmap.py); None without the task's heatmap
        self.visit_heatmap = VisitHeatmap(task.heatmap, task.ram_map, dev) if task.heatmap is not None else None

        # ---- reward pipeline (envs/reward_transforms.py): the task's preset or list ---------------------
        self.reward_pipeline = build_reward_pipeline(
            task.reward, n, dev, {"step_cost": self.step_cost, "alpha": self.alpha, "goal_bonus": self.goal_bonus,
                                  "fail_penalty": self.fail_penalty}, ram_map=task.ram_map)
        self._observer = None
        if self._obs_layout is not None:
            index = self._obs_layout.explore_index
            self._observer = StructuredObs(self._obs_layout, None if index is None else
                                           self.reward_pipeline.items[index][1], dev)

        # ---- episode state --------------------------------------------------------------------------
        self._generator = torch.Generator(device=dev)
        self._stack = torch.zeros((n, *self._frames_shape), dtype=torch.uint8, device=dev)
        self._prev_dist = torch.zeros(n, device=dev)
        self._hits = torch.zeros(n, dtype=torch.int32, device=dev)
        self._fail_hits = torch.zeros(n, dtype=torch.int32, device=dev)
        self._steps = torch.zeros(n, dtype=torch.int32, device=dev)
        # per counter: its value at the last step's end (after resets) and its increase over the episode so far
        self._counter_before = torch.zeros((len(self.counters), n), dtype=torch.int32, device=dev)
        self._counter_episode = torch.zeros((len(self.counters), n), dtype=torch.int32, device=dev)
        self._stats = EpisodeStats(n, dev)   # the game return (the terms' sum), what episode_return reports
        # the return of the rewards trained on, where a transform makes it differ
        self._trained_stats = EpisodeStats(n, dev) if self.reward_pipeline.has_transforms else None
        self._seed = seed
        self.reset(seed=seed)

    # ------------------------------------------------------------------ protocol
    def reset(self, seed: int | None = None) -> torch.Tensor:
        """Start a new episode in every env. seed=None continues the reset generator; an int reseeds it."""
        if seed is not None:
            check_int("seed", seed, minimum=0)
            self._seed = seed
            self._generator.manual_seed(seed)
        with self._on_torch_stream():
            self._reset_mask.fill_(1)
            self._draw_slots()
            self._restore_machines()
            self._stack = self._cache_stack[self._slots.long()].clone()
            self._prev_dist = self._cache_dist[self._slots.long()].clone()
            self._hits.zero_()
            self._fail_hits.zero_()
            self._steps.zero_()
            self._counter_before.copy_(self._read_counters())
            self._counter_episode.zero_()
            if self.milestones:
                self.milestones.begin(self)
            self._base_score.zero_()
            self._score.zero_()
            self._from_pool.zero_()
            self._swarm_clock = 0
            self._stats.reset()
            if self._trained_stats is not None:
                self._trained_stats.reset()
            self.reward_pipeline.reset()
            self.reward_pipeline.sync(self)
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
        with self._on_torch_stream():
            valid = (actions >= 0) & (actions < self.num_actions)
            self._invalid += (~valid).sum()
            torch.index_select(self._codec, 0, torch.where(valid, actions, self.num_actions), out=self._buttons)
            self._on_shards(self._frames_and_distances)
            return self._after_frames()

    _STATE_TENSORS = ("stack", "prev_dist", "hits", "fail_hits", "steps")

    def state_dict(self) -> dict[str, Any]:
        """Everything a restored env needs to continue identically: every machine, the frame stacks,
        episode counters and the reset generator (CPU tensors, ~30 KB of machine state per env); the task's
        counters under "counters" (only for a task that has some)."""
        self._sync()
        machines = {}
        for name in self._machines[0].state_names:   # torch tensors: checkpoints load with weights_only=True
            machines[name] = torch.from_numpy(np.concatenate([gb.state_array(name).numpy() for gb in self._machines]))
        tensors = {k: getattr(self, "_" + k).cpu().clone() for k in self._STATE_TENSORS}
        extra = {} if self._trained_stats is None else {"trained_stats": self._trained_stats.state_dict()}
        if self.counters:
            extra["counters"] = {c.name: {"before": self._counter_before[i].cpu().clone(),
                                          "episode": self._counter_episode[i].cpu().clone()}
                                 for i, c in enumerate(self.counters)}
        if self.milestones:
            extra["milestones"] = self.milestones.state_dict()
        if self.state_pool is not None:
            extra["pool"] = self._pool_state()
        if self.visit_heatmap is not None:
            extra["heatmap"] = self.visit_heatmap.state_dict()
        return {"version": _STATE_VERSION, "num_envs": self.num_envs, "rom_sha256": self.rom_sha256,
                "stack_k": self.stack_k, "seed": self._seed, "generator": self._generator.get_state(),
                "machines": machines, "stats": self._stats.state_dict(), **tensors,
                "reward_pipeline": self.reward_pipeline.state_dict(), **extra}

    @property
    def state_nbytes(self) -> int:
        """Bytes of tensors in ``state_dict()`` (machines, stacks, counters), without building it."""
        machines = sum(gb.state_bytes_per_env * gb.num_envs for gb in self._machines)
        tensors = [getattr(self, "_" + k) for k in self._STATE_TENSORS] + [self._counter_before, self._counter_episode]
        tensors = sum(t.numel() * t.element_size() for t in tensors)
        stats = [self._stats] + ([self._trained_stats] if self._trained_stats is not None else [])
        stats = sum(t.numel() * t.element_size() for s in stats for t in (s.running_return, s.running_length))
        extras = self.milestones.state_nbytes
        if self.visit_heatmap is not None:
            extras += self.visit_heatmap.state_nbytes
        if self.state_pool is not None:   # the entries in use (one host read) and the per-env scores
            extras += int(self.state_pool.filled) * pool_state_bytes(self._machines[0].state_bytes_per_env,
                                                                     self.stack_k) + 9 * self.num_envs
        return (machines + tensors + stats + self._generator.get_state().numel() + self.reward_pipeline.state_nbytes
                + extras)

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore a state_dict() of an env built with the same ROM, num_envs, stack_k and task counters."""
        where = "GameBoyEnv.load_state_dict"
        if state.get("version") == 1:
            raise StateError(f"{where}: this env state was saved by the old GameBoyEnv layout (version 1, before "
                             f"tasks: orchard's seeds counters in every env's state); version {_STATE_VERSION} keeps "
                             f"a task's counters under 'counters'. Start a fresh run, or resume with the code that "
                             f"saved it")
        missing = [k for k in ("version", "num_envs", "rom_sha256", "stack_k", "generator", "machines",
                               *self._STATE_TENSORS) if k not in state]
        if missing:
            raise StateError(f"{where}: state is missing {missing}; expected a GameBoyEnv.state_dict()")
        if state["version"] != _STATE_VERSION:
            raise StateError(f"{where}: version must be {_STATE_VERSION}, got {state['version']!r}")
        for key, mine in (("num_envs", self.num_envs), ("rom_sha256", self.rom_sha256), ("stack_k", self.stack_k)):
            if state[key] != mine:
                raise StateError(f"{where}: {key} must be {mine!r} (this env), got {state[key]!r}")
        saved = sorted(state.get("counters", {}))
        if saved != sorted(c.name for c in self.counters):
            raise StateError(f"{where}: counters must be {sorted(c.name for c in self.counters)} (this env's task), "
                             f"got {saved}")
        if ("pool" in state) != (self.state_pool is not None):
            raise StateError(f"{where}: the state was saved {'with' if 'pool' in state else 'without'} a state pool, "
                             f"this env's task has {'one' if self.state_pool is not None else 'none'}")
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
            setattr(self, "_" + key, self._loaded(where, key, state[key], getattr(self, "_" + key)))
        for i, c in enumerate(self.counters):
            for part, dst in (("before", self._counter_before), ("episode", self._counter_episode)):
                dst[i] = self._loaded(where, f"counters[{c.name!r}][{part!r}]", state["counters"][c.name][part], dst[i])
        if self.milestones:
            self.milestones.load_state_dict(state.get("milestones", {}), f"{where}: milestones")
        if self.state_pool is not None:
            self._load_pool_state(state["pool"], where)
        if self.visit_heatmap is not None:   # a state saved before the task had a heatmap: counting starts here
            if "heatmap" in state:
                self.visit_heatmap.load_state_dict(state["heatmap"], f"{where}: heatmap")
            else:
                self.visit_heatmap.counts.zero_()
        self._generator.set_state(state["generator"])
        self._stats.load_state_dict(state["stats"])
        if self._trained_stats is not None:
            if "trained_stats" in state:
                self._trained_stats.load_state_dict(state["trained_stats"])
            else:   # saved without a transform in the reward list: returns trained on start with this episode
                self._trained_stats.reset()
        self.reward_pipeline.load_state_dict(state.get("reward_pipeline", {}))
        self.reward_pipeline.sync(self)   # what the items remember of the machines (RAM terms' last values)
        self._seed = state.get("seed", self._seed)
        self._sync()

    def _pool_state(self) -> dict[str, Any]:
        """The pool's entries in use (their machines, frame stacks, distances, scores) and its bookkeeping, with the
        ROM they were harvested from; the per-env scores; the swarm clock."""
        used = torch.nonzero(self.state_pool.entry_serial >= 0).flatten()
        rows = self.num_start_states + used
        machines = {name: wp.to_torch(arr)[rows].cpu().clone() for name, arr in self._cache.arrays.items()}
        return {"rom_sha256": self.rom_sha256, "entries": used.cpu(), "machines": machines,
                "stack": self._cache_stack[rows].cpu().clone(), "dist": self._cache_dist[rows].cpu().clone(),
                "score": self._pool_rows.score[rows].cpu().clone(), "book": self.state_pool.state_dict(),
                "base_score": self._base_score.cpu().clone(), "env_score": self._score.cpu().clone(),
                "from_pool": self._from_pool.cpu().clone(), "swarm_clock": self._swarm_clock}

    def _load_pool_state(self, state: dict[str, Any], where: str) -> None:
        """Put a ``_pool_state`` back; a pool harvested from another ROM is refused in one line."""
        if state.get("rom_sha256") != self.rom_sha256:
            raise StateError(f"{where}: the state pool was harvested from another ROM (sha256 "
                             f"{str(state.get('rom_sha256'))[:12]}...), this env runs {self.rom_sha256[:12]}...")
        used = torch.as_tensor(state["entries"]).long()
        if used.numel() and int(used.max()) >= self.state_pool.capacity:
            raise StateError(f"{where}: the state pool holds entries up to {int(used.max())}, this task's pool has "
                             f"{self.state_pool.capacity} (pool.max_mb as saved, and the same stack_k)")
        self.state_pool.load_state_dict(state["book"], where)
        rows = (self.num_start_states + used).to(self.device)
        for name, arr in self._cache.arrays.items():
            view = wp.to_torch(arr)
            src = torch.as_tensor(state["machines"][name])
            if tuple(src.shape[1:]) != tuple(view.shape[1:]):
                raise StateError(f"{where}: pool machines[{name!r}] must be [entries, {list(view.shape[1:])}], got "
                                 f"{list(src.shape)}")
            view[rows] = src.to(self.device, view.dtype)
        self._cache_stack[rows] = self._loaded(where, "pool stack", state["stack"], self._cache_stack[rows])
        self._cache_dist[rows] = self._loaded(where, "pool dist", state["dist"], self._cache_dist[rows])
        self._pool_rows.score[rows] = self._loaded(where, "pool score", state["score"], self._pool_rows.score[rows])
        self._base_score = self._loaded(where, "pool base_score", state["base_score"], self._base_score)
        self._score = self._loaded(where, "pool env_score", state["env_score"], self._score)
        self._from_pool = self._loaded(where, "pool from_pool", state["from_pool"], self._from_pool)
        self._swarm_clock = int(state["swarm_clock"])

    def train(self, mode: bool = True) -> "GameBoyEnv":
        """Training (the default) or not: an env that is not training (an evaluation env: ``eval()``) starts every
        episode from the task's start states, harvests nothing and never swarms, whatever its task's pool says."""
        self.training = bool(mode)
        return self

    def eval(self) -> "GameBoyEnv":
        return self.train(False)

    def pool_stats(self) -> dict[str, float]:
        """The state pool's numbers (entries, scores, totals; one host read), {} without a pool."""
        return self.state_pool.stats() if self.state_pool is not None else {}

    def _loaded(self, where: str, key: str, value, like: torch.Tensor) -> torch.Tensor:
        src = torch.as_tensor(value)
        if tuple(src.shape) != tuple(like.shape) or src.dtype != like.dtype:
            raise StateError(f"{where}: {key} must be {like.dtype} {list(like.shape)}, got {src.dtype} "
                             f"{list(src.shape)}")
        return src.to(self.device).clone()

    # ------------------------------------------------------------------ extras
    def observe(self) -> torch.Tensor:
        """The current observation (e.g. after load_state_dict): the frame stack, behind the data plane with
        ``obs``."""
        if self._observer is None:
            return self._stack
        return self._with_data(self._observer.vector(self), self._stack)

    def _with_data(self, vector: torch.Tensor, frames: torch.Tensor) -> torch.Tensor:
        return torch.cat([StructuredObs.plane(vector), frames], 1)

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
        parts = [shard.wram[:, off:off + length] for shard in self._shards]
        return parts[0] if len(parts) == 1 else torch.cat(parts)

    @property
    def machines(self) -> list[VecGameBoy]:
        """The VecGameBoy shards (envs in order)."""
        return list(self._machines)

    # ------------------------------------------------------------------ internals
    def _template_tensors(self, template: GoalTemplate | None):
        if template is None:
            return None
        return (torch.from_numpy(template.image).to(self.device), torch.from_numpy(template.weights).to(self.device))

    def _template_arrays(self) -> tuple:
        """The goal and fail templates as the distance kernel's inputs (an absent one: an empty box)."""
        images = np.zeros((2, 72, 80), np.uint8)
        weights = np.zeros((2, 72, 80), np.float32)
        boxes = np.zeros((2, 4), np.int32)
        scale = np.zeros(2, np.float32)
        for t, template in enumerate((self.goal, self.fail)):
            if template is None:
                continue
            images[t], weights[t] = template.image, template.weights
            ys, xs = np.nonzero(template.weights)
            boxes[t] = ys.min(), ys.max() + 1, xs.min(), xs.max() + 1
            scale[t] = 1.0 / (3.0 * template.weights.sum())
        d = self._machines[0].device
        return tuple(wp.array(a, device=d) for a in (images, weights, boxes, scale))

    def _build_start_cache(self, rom_source):
        """Run the task's start recipe for each of its start states on a one-env machine: (their machine rows,
        their screens uint8 [S, 72, 80] on the device)."""
        start = self.task.start
        trace = read_trace(start.inputs, "task.start.inputs") if start.inputs is not None else [(0, 0)]
        variant_frames = self.frames_per_step if start.variant_frames is None else start.variant_frames
        probe = VecGameBoy(rom_source, 1, device=self._machines[0].device)
        rows, obs = [], []
        for src in start_states(self.task):
            probe.reset()
            if src is not None:
                load_start_state(probe, src)
            for count, mask in trace_segments(trace, start.frames):
                probe.run_frames(count, buttons=np.full(1, mask, np.uint8), render="obs")
            for v in range(start.variants):
                if v:
                    probe.run_frames(variant_frames, render="obs")
                rows.append(probe.env_rows(0))
                obs.append(rows[-1]["obs"])
        return rows, torch.from_numpy(np.stack(obs)).to(self.device)

    def _draw_slots(self, from_pool: bool = False) -> None:
        """Each env's next start: a start state drawn uniformly; with ``from_pool`` (a training step of a task with a
        pool), a pooled state instead with probability ``pool.sample`` while the pool holds any."""
        if self.num_start_states > 1:
            torch.randint(0, self.num_start_states, (self.num_envs,), generator=self._generator,
                          device=self.device, out=self._slots)
        if from_pool:
            n, pool = self.num_envs, self.state_pool
            use = torch.rand(n, generator=self._generator, device=self.device) < pool.config.sample
            use = use & (pool.filled > 0)
            picked = draw_pool_slots(pool.weights(), torch.rand(n, generator=self._generator, device=self.device))
            self._slots.copy_(torch.where(use, self.num_start_states + picked, self._slots.long()))

    def _restore_machines(self) -> None:
        self._on_shards(lambda i: self._shards[i].gb.restore_from(self._cache, self._shards[i].slots,
                                                                   self._shards[i].reset_mask))

    def _on_shards(self, work) -> None:
        """work(i) for every shard i: shard 0 in this thread, the others in the pool's threads (Warp's CPU
        launches release the GIL, so the shards run on separate cores)."""
        if self._pool is None:
            for i in range(len(self._machines)):
                work(i)
            return
        pending = [self._pool.submit(work, i) for i in range(1, len(self._machines))]
        work(0)
        for job in pending:
            job.result()

    def _frames_and_distances(self, i: int) -> None:
        """Shard i: the step's frames, then the template distances of its last screen (rows goal, fail)."""
        shard = self._shards[i]
        gb = shard.gb
        gb.run_frames(self.frames_per_step, buttons=shard.buttons, release_after=self.release_after_frames,
                      render="full" if self.render_full else "obs")
        wp.launch(template_distance, dim=(2, gb.num_envs), inputs=[shard.obs, *self._templates, shard.lo,
                                                                   self._dist_wp], device=gb.device)

    def _stacks_and_resets(self, i: int, words: list, chunk: int) -> None:
        """Shard i: the new stacks (final_obs, obs), then its ended envs restored from the start cache."""
        shard = self._shards[i]
        width = words[0].shape[1]
        wp.launch(compose_stacks, dim=(shard.gb.num_envs, -(-width // chunk)),
                  inputs=[words[0], shard.obs_words, self._cache_words, self._slots_wp, self._reset_mask_wp, shard.lo,
                          chunk, words[1], words[2]], device=shard.gb.device)
        shard.gb.restore_from(self._cache, shard.slots, shard.reset_mask)

    def _read_counters(self) -> torch.Tensor:
        """int32 [C, N]: each task counter's value now (a copy)."""
        if not self.counters:
            return self._counter_before
        return torch.stack([ram_value(self.read_ram(address, size)) for address, size in self._counter_at])

    def _newest_frames(self) -> torch.Tensor:
        """uint8 [N, 72, 80]: the screens the step just drew (the kernels' buffers, before any reset)."""
        return self._obs_views[0] if len(self._obs_views) == 1 else torch.cat(self._obs_views)

    def _pool_step(self, score: torch.Tensor, terminated: torch.Tensor, dist: torch.Tensor, swarm) -> None:
        """Harvest the best states whose score rose (and the swarm's best env into the swarm row) before the resets
        read the cache (envs/pool.py)."""
        pool, s0 = self.state_pool, self.num_start_states
        src, dst, ok = harvest_plan(score, pool.candidates(score, self._score, terminated), pool.entry_score,
                                    pool.entry_serial, pool.config.per_step)
        rows = s0 + dst
        if swarm is not None:
            best, targets = swarm
            src, rows = torch.cat([src, best.view(1)]), torch.cat([rows, rows.new_full((1,), self._cache.num_envs - 1)])
            ok = torch.cat([ok, targets.any().view(1)])
        newest = self._newest_frames()[src]
        stacks = torch.cat([self._stack[src, 1:], newest[:, None]], 1)
        self._pool_rows.write(rows, src, ok, stacks, dist[src], score[src])
        h = dst.shape[0]
        pool.accept(score[src[:h]], dst, ok[:h])

    def _after_frames(self):
        """Everything after the frames ran: goal tests, reward, episode ends, the new stacks, resets."""
        n, dev = self.num_envs, self.device
        dist, fail_dist = self._dist[0], self._dist[1]     # written by _frames_and_distances
        no = torch.zeros(n, dtype=torch.bool, device=dev)
        if self.goal is not None:
            self._hits, success = consecutive_hits(dist, self._hits, self.tau, self.k_consecutive)
        else:
            success = no
        if self.fail is not None:
            self._fail_hits, failed = consecutive_hits(fail_dist, self._fail_hits, self.fail_tau, self.fail_k)
            failed = failed & ~success
        else:
            failed = no
        terminated = success | failed
        self._steps += 1
        truncated = (self._steps >= self.max_steps) & ~terminated

        # milestones from this step's RAM; with a pool, each env's score and, when due, a swarm (its targets end
        # truncated: they restart from the best env's state)
        pooling = self.state_pool is not None and self.training
        score, swarm = self._score, None
        if self.visit_heatmap is not None and self.training:
            self.visit_heatmap.update(self)
        if self.milestones:
            progress = self.milestones.update(self)
            if pooling:
                score = self._base_score + (progress[self._score_index].to(torch.float32)
                                            * self._score_weight[:, None]).sum(0)
                swarm_cfg = self.state_pool.config.swarm
                self._swarm_clock += 1
                if swarm_cfg is not None and self._swarm_clock % swarm_cfg.every == 0:
                    swarm = swarm_plan(score, ~terminated, swarm_cfg.fraction, self._generator)
                    truncated = truncated | (swarm[1] & ~terminated)

        # the data plane of the final observations: this step's RAM, the cells as the explore item is about to mark them
        final_vector = self._observer.vector(self, mark_current=True) if self._observer is not None else None
        # the reward, from this step's screens and RAM (before the ended envs are reset): trained on, and the game's
        reward, game_reward = self.reward_pipeline(RewardContext(self, terminated, truncated, success, failed, dist,
                                                                 self._prev_dist, self._newest_frames()))
        if self.counters:
            now = self._read_counters()
            for i, c in enumerate(self.counters):
                bits = 8 * c.size if c.bits is None else c.bits
                self._counter_episode[i] += ram_counter_delta(now[i], self._counter_before[i], bits).to(torch.int32)
        episode_return, episode_length = self._stats.update(game_reward, terminated, truncated)
        done = terminated | truncated
        info = {"episode_return": episode_return, "episode_length": episode_length, "success": success,
                "failed": failed}
        if self._trained_stats is not None:
            info["trained_return"] = self._trained_stats.update(reward, terminated, truncated)[0]
        for i, c in enumerate(self.counters):
            info[c.name] = torch.where(done, self._counter_episode[i], 0)
        if self.milestones:
            info.update(self.milestones.report(done))
        if self.state_pool is not None:
            info["from_pool"] = torch.where(done, self._from_pool.to(torch.int32), 0)

        # the pool takes what it harvests before the resets read it; then the new stacks (fresh memory, the caller
        # may keep them), then the machines of ended envs reset
        if pooling:
            self._pool_step(score, terminated, dist, swarm)
        self._reset_mask.copy_(done)
        self._draw_slots(from_pool=pooling)
        if swarm is not None:
            self._slots.copy_(torch.where(swarm[1], self._cache.num_envs - 1, self._slots.long()))
        final_obs = torch.empty((n, *self._frames_shape), dtype=torch.uint8, device=dev)
        obs = torch.empty_like(final_obs)
        words = [wp.from_torch(t.view(torch.int64).reshape(n, -1)) for t in (self._stack, final_obs, obs)]
        chunk = 1 if dev.type == "cuda" else words[0].shape[1]
        self._on_shards(lambda i: self._stacks_and_resets(i, words, chunk))
        slots = self._slots.long()
        start_dist = self._cache_dist[0] if self._cache.num_envs == 1 else self._cache_dist[slots]
        self._prev_dist = torch.where(done, start_dist, dist)
        zero = torch.zeros((), dtype=torch.int32, device=dev)
        self._hits = torch.where(done, zero, self._hits)
        self._fail_hits = torch.where(done, zero, self._fail_hits)
        self._steps = torch.where(done, zero, self._steps)
        if self.counters:
            self._counter_episode = torch.where(done, zero, self._counter_episode)
            self._counter_before = self._read_counters()
        if self.milestones:
            self.milestones.begin(self, done)
        if self.state_pool is not None:
            start_score = self._pool_rows.score[slots]
            self._base_score = torch.where(done, start_score, self._base_score)
            self._score = torch.where(done, start_score, score)
            self._from_pool = torch.where(done, slots >= self.num_start_states, self._from_pool)
            if swarm is not None:
                self.state_pool.swarmed += swarm[1].sum()
        self._stack = obs
        self.reward_pipeline.sync(self)   # after the new stacks: items may read the start screens (observe())
        if self._observer is not None:
            final_obs = self._with_data(final_vector, final_obs)
            obs = self._with_data(self._observer.vector(self), obs)
        info["final_obs"] = final_obs
        return obs, reward, terminated, truncated, info

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
                f"actions={list(self.action_names)}, max_steps={self.max_steps})")
