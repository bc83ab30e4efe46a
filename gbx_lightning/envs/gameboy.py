"""GameBoyEnv: a batch of Game Boys (VecGameBoy) as an RL env: pixels in, button presses out.

One step = one action per env, turned into a button mask by the action codec
(``envs/actions.py``), held for ``release_after_frames`` frames and released for the rest
of ``frames_per_step`` frames, all envs in one kernel launch (one per CPU core on a CPU).
The observation is the last ``stack_k`` step-end screens, uint8 ``[N, K, 72, 80]``, shades
0..3, newest last, rendered by the kernel at 2x2 subsampling (``obs[y, x] = frame[2y, 2x]``).

Episodes and rewards. An episode starts from a start state and ends:
  * terminated, success: the screen matched the goal template (``goal``) for
    ``k_consecutive`` steps (``envs/rewards.py``: dist = mean |frame - goal| / 3 over the
    goal's region, closer than ``tau``);
  * terminated, failure: the screen matched the ``fail`` template (e.g. GAME OVER);
  * truncated: ``max_steps`` steps passed (bootstrap through it; never both).
Reward (``reward="goal"``): step_cost + alpha * (prev_dist - dist) + goal_bonus * success
+ fail_penalty * failure. The built-in game also offers ``reward="orchard_seeds"``, a
game-RAM reward (+seed_reward per seed eaten, read from WRAM) on top of the same terms;
the policy still sees only pixels. Those two are presets; ``reward`` also takes a list of
items (terms, per-episode bonuses, scaling, clipping, return normalisation, your own by import
path): ``envs/reward_transforms.py``. ``info["episode_return"]`` is the game return (the sum
of the terms, before any transform); with a transform, ``info["trained_return"]`` is the return
of the rewards ``step`` returned.

Start states and resets. Start states are made once, at construction, on a one-env
machine: power-on (or a ``start_state`` file: a PyBoy ``.state`` or a state file written
by ``VecGameBoy.save_state``), then ``start_frames`` frames of ``start_inputs`` (a trace:
"from frame F on, hold these buttons"). ``start_variants`` > 1 adds states taken every
``variant_frames`` idle frames after that (different enemy phases, RNG, timers). All of
them sit in a cache on the device; an env that ended is reset by a masked restore from the
cache, the entry drawn from the env's seeded generator: no disk I/O, no Python loop over
envs, no host sync.

The built-in game ``rom="orchard"`` comes with its task: ``level`` (1..7, a ladder from a
small room without enemies to the full game) selects the start states through the game's
level-select screen, and the goal/fail templates are its LEVEL CLEAR / GAME OVER banners.

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
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import torch
import warp as wp

from gbx_lightning.emu import VecGameBoy
from gbx_lightning.emu.buttons import read_trace, trace_segments

from .actions import resolve_codec
from .base import EpisodeStats, OptionError, check_actions, check_float, check_int, resolve_device
from .goal import REWARD_DEFAULTS, GoalTemplate, load_goal
from .pixels import WORDS_PER_FRAME, compose_stacks, template_distance
from .reward_transforms import PRESETS, RewardContext, RewardSpecError, build_reward_pipeline, check_reward_spec
from .rewards import consecutive_hits, goal_distance, ram_counter_delta

__all__ = ["GameBoyEnv", "REWARDS"]

REWARDS = PRESETS   # the reward presets; a list of items is the general form (envs/reward_transforms.py)
BUILTIN_ROMS = ("orchard",)
_STATE_VERSION = 1
_ZIP_MAGIC = b"PK\x03\x04"   # our state files are .npz (zip); PyBoy states start with a version byte


def _resolve_rom(rom) -> tuple[bytes | str, str]:
    """A built-in ROM name or a ROM file path -> (what VecGameBoy takes, a display name)."""
    if isinstance(rom, (str, os.PathLike)) and str(rom) in BUILTIN_ROMS and not Path(rom).exists():
        from gbx_lightning.roms import build_rom

        return build_rom(str(rom)), str(rom)
    if not isinstance(rom, (str, os.PathLike)):
        raise TypeError(f"rom must be a built-in ROM name {BUILTIN_ROMS} or a .gb file path, got {rom!r}")
    if not Path(rom).is_file():
        raise FileNotFoundError(f"rom: no ROM file at {os.fspath(rom)!r} (built-in ROMs: {', '.join(BUILTIN_ROMS)})")
    return os.fspath(rom), os.fspath(rom)


def _is_state_file(path: str) -> bool:
    with open(path, "rb") as f:
        return f.read(4) == _ZIP_MAGIC


class GameBoyEnv:
    """N Game Boys running one ROM, stepped together; see the module docstring.

    Args:
        num_envs: envs stepped in parallel.
        rom: built-in ROM name ("orchard") or a path to a .gb file.
        device: "cpu" or "cuda[:K]".
        seed: seeds the reset generator (which start state each reset uses).
        level: built-in game only: ladder level 1..7 (default 1: a small room, no enemy).
        start_state: None (power-on), a PyBoy ``.state`` file, a state file of ours, or a list
            of such files (one cache entry each).
        start_frames: frames run after power-on / loading the start state.
        start_inputs: what those frames press: a trace file, trace text, or [[frame, buttons], ...].
        start_variants, variant_frames: cache entries per start state, ``variant_frames`` idle
            frames apart (default: frames_per_step).
        frames_per_step, release_after_frames: a step's length and how long its buttons are held.
        stack_k: observation frames (1..8; newest last).
        action_codec: a name from ``envs.actions.ACTION_CODECS`` or a list of button combinations.
        max_steps: truncation (time limit) in steps.
        goal, fail: goal template PNG paths (``tools/capture_goal.py``); None = the built-in
            game's banners for "orchard", none otherwise ("" switches a built-in one off).
        reward: a preset, "goal" or "orchard_seeds" (built-in game), or a list of reward items
            (``envs/reward_transforms.py``).
        tau, k_consecutive, step_cost, alpha, goal_bonus: goal-reward settings; None = the
            goal's meta file (or envs.goal.REWARD_DEFAULTS). step_cost, alpha, goal_bonus and
            fail_penalty are also the defaults of the reward items of those names.
        fail_penalty: reward added when the fail template matches (<= 0).
        fail_tau: distance under which the fail template matches (None: the fail meta's tau).
        seed_reward: "orchard_seeds": reward per seed eaten.
        cpu_threads: CPU shards (one launch thread each); None = every core this process may use.
        check_action_range: on CUDA, also check action ranges on the host (a sync per step).
    """

    obs_dtype = torch.uint8

    @classmethod
    def check_options(cls, **options) -> None:
        """Check the options' files and values without building anything (milliseconds): the ROM's
        header, the start states (format, and the ROM they were made for where the file tells),
        the start-input trace, the goal/fail templates (shape, ROM) and the level. Raises
        OptionError naming the option; the CLI runs this before any long work."""
        import inspect

        from gbx_lightning.emu.cartridge import RomError, load_cartridge
        from gbx_lightning.emu.pyboy_state import PyBoyStateError, parse_pyboy_state
        from gbx_lightning.emu import state as S
        from gbx_lightning.emu.savestate import STATE_FILE_FORMAT, StateFileError, read_state_file

        from .goal import GoalError

        params = inspect.signature(cls.__init__).parameters
        opts = {k: p.default for k, p in params.items() if k != "self"}
        unknown = sorted(set(options) - set(opts))
        if unknown:
            raise OptionError(unknown[0], f"is not an option of GameBoyEnv; options: {', '.join(sorted(opts))}")
        opts.update(options)

        def number(option, check, *args, **kwargs):
            try:
                check(option, opts[option], *args, **kwargs)
            except (TypeError, ValueError) as err:
                raise OptionError(option, str(err).removeprefix(option + " ")) from None

        number("num_envs", check_int, minimum=1)
        number("seed", check_int, minimum=0)
        number("frames_per_step", check_int, minimum=1)
        if isinstance(opts["frames_per_step"], int):
            number("release_after_frames", check_int, minimum=0, maximum=opts["frames_per_step"])
        number("stack_k", check_int, minimum=1, maximum=8)
        number("max_steps", check_int, minimum=1)
        number("start_variants", check_int, minimum=1, maximum=256)
        for option in ("variant_frames", "k_consecutive"):
            if opts[option] is not None:
                number(option, check_int, minimum=1)
        if opts["start_frames"] is not None:
            number("start_frames", check_int, minimum=0)
        if opts["cpu_threads"] is not None:
            number("cpu_threads", check_int, minimum=1)
        number("fail_penalty", check_float, maximum=0.0)
        number("seed_reward", check_float)
        for option in ("tau", "fail_tau"):
            if opts[option] is not None:
                number(option, check_float, 0.0, 1.0, strict_min=True)
        for option in ("step_cost", "alpha", "goal_bonus"):
            if opts[option] is not None:
                number(option, check_float)
        try:
            resolve_device(opts["device"])
        except ValueError as err:
            raise OptionError("device", str(err).removeprefix("device ")) from None
        try:
            source, name = _resolve_rom(opts["rom"])
            cart = load_cartridge(source)
        except (RomError, FileNotFoundError, TypeError) as err:
            raise OptionError("rom", f"is not a ROM we can run: {str(err).removeprefix('rom: ')}") from None
        builtin = name in BUILTIN_ROMS
        if opts["level"] is not None:
            if not builtin:
                raise OptionError("level", f"applies to the built-in game 'orchard' only, not {name}")
            from gbx_lightning.roms import orchard
            try:
                orchard.level_select_inputs(opts["level"])
            except ValueError as err:
                raise OptionError("level", str(err).removeprefix("level: ").replace("expected", "must be", 1)) from None
            if opts["start_state"] is not None:
                raise OptionError("level", "and start_state are both set: a level starts from power-on through "
                                           "the level select; drop one")
        states = opts["start_state"] if isinstance(opts["start_state"], (list, tuple)) else [opts["start_state"]]
        for path in (s for s in states if s is not None):
            if not Path(path).is_file():
                raise OptionError("start_state", f"does not exist: no savestate file at {os.fspath(path)!r}")
            data = Path(path).read_bytes()
            try:
                if data[:4] == _ZIP_MAGIC:
                    with np.load(path, allow_pickle=False) as z:
                        if str(z.get("format", "")) != STATE_FILE_FORMAT:
                            raise StateFileError(f"{path}: not a gbx_lightning state file")
                        theirs = str(z.get("rom_sha256", ""))
                    if theirs != cart.sha256:
                        raise StateFileError(f"{path} was saved for another ROM (sha256 {theirs[:12]}...), "
                                             f"{name} has {cart.sha256[:12]}...")
                    # then read it whole, as the env will: every field, its digest and its clock words checked
                    layout = S.per_env_layout(int(cart.ram_bytes), len(S.mbc_power_on_regs(cart.spec())))
                    read_state_file(path, [(n, tuple(shape), dt) for n, shape, dt in layout], cart.sha256)
                else:
                    parse_pyboy_state(data, cart, os.fspath(path))
            except (StateFileError, PyBoyStateError, ValueError, OSError) as err:
                raise OptionError("start_state", f"cannot be loaded: {err}") from None
            except Exception as err:  # noqa: BLE001 - a damaged file: whatever the parser tripped on, one line
                raise OptionError("start_state", f"cannot be loaded: {path}: not a savestate we can read "
                                                 f"({type(err).__name__}: {err})") from None
        if opts["start_inputs"] is not None:
            try:
                read_trace(opts["start_inputs"], "start_inputs")
            except (ValueError, FileNotFoundError, TypeError) as err:
                raise OptionError("start_inputs", f"is not an input trace: {err}") from None
        for field in ("goal", "fail"):
            path = opts[field]
            if path is None or path == "":
                continue
            try:
                template = load_goal(path, field=field)
            except GoalError as err:
                raise OptionError(field, f"cannot be loaded: {str(err).removeprefix(field + ': ')}") from None
            if template.rom_sha256 not in (None, cart.sha256):
                raise OptionError(field, f"was captured from another ROM: {path} has ROM sha256 "
                                         f"{template.rom_sha256[:12]}..., {name} has {cart.sha256[:12]}...")
        try:
            resolve_codec(opts["action_codec"])
        except ValueError as err:
            raise OptionError("action_codec", str(err).removeprefix("action_codec ").removeprefix("action_codec: "))
        reward = opts["reward"]
        if isinstance(reward, str) or not isinstance(reward, (list, tuple)):
            if reward not in REWARDS:
                raise OptionError("reward", f"must be one of {REWARDS} or a list of reward items, got {reward!r}")
            if reward == "orchard_seeds" and name != "orchard":
                raise OptionError("reward", f"'orchard_seeds' reads the built-in game's RAM; rom {name} needs "
                                            f"reward 'goal'")
        else:
            def has(field):   # a template given, or the built-in game's own (unless switched off with "")
                return opts[field] != "" and (opts[field] is not None or builtin)
            try:
                check_reward_spec(reward, has_goal=has("goal"), has_fail=has("fail"))
            except RewardSpecError as err:
                raise OptionError(err.field, err.message) from None

    def __init__(self, num_envs: int = 64, rom: str | os.PathLike = "orchard", device: str | torch.device = "cpu",
                 *, seed: int = 0, level: int | None = None,
                 start_state: str | os.PathLike | list | None = None, start_frames: int | None = None,
                 start_inputs=None, start_variants: int = 4, variant_frames: int | None = None,
                 frames_per_step: int = 24, release_after_frames: int = 8, stack_k: int = 4,
                 action_codec: str | list = "dpad_ab_start_noop", max_steps: int = 1000,
                 goal: str | os.PathLike | None = None, fail: str | os.PathLike | None = None,
                 reward: str = "goal", tau: float | None = None, k_consecutive: int | None = None,
                 step_cost: float | None = None, alpha: float | None = None, goal_bonus: float | None = None,
                 fail_penalty: float = -1.0, fail_tau: float | None = None, seed_reward: float = 0.1,
                 cpu_threads: int | None = None, check_action_range: bool = False):
        # ---- options, all checked before any kernel work (check_options: one place for every check) --------
        options = {k: v for k, v in locals().items() if k not in ("self", "__class__")}
        self.check_options(**options)
        self.num_envs, self.device = num_envs, resolve_device(device)
        self.frames_per_step, self.release_after_frames = frames_per_step, release_after_frames
        self.stack_k, self.max_steps = stack_k, max_steps
        self.check_action_range = bool(check_action_range)
        self.action_names, masks = resolve_codec(action_codec)
        self.num_actions = len(masks)
        self.obs_shape = (self.stack_k, 72, 80)
        rom_source, self.rom_name = _resolve_rom(rom)

        # the built-in game brings its task (level select, banner templates) unless you bring your own start
        task = _builtin_task(self.rom_name, level) if self.rom_name in BUILTIN_ROMS else {}
        if start_state is not None or (start_inputs is not None and level is None):
            task = {k: v for k, v in task.items() if k in ("goal", "fail")}
        self.level = task.get("level")
        start_inputs = task.get("start_inputs") if start_inputs is None else start_inputs
        start_frames = task.get("start_frames", 0) if start_frames is None else start_frames
        trace = read_trace(start_inputs, "start_inputs") if start_inputs is not None else [(0, 0)]
        sources = start_state if isinstance(start_state, (list, tuple)) else [start_state]
        variant_frames = frames_per_step if variant_frames is None else variant_frames

        # reward settings: REWARD_DEFAULTS < the goal's meta file < the options given here
        self.goal = self._load_template(goal, task.get("goal"), "goal")
        self.fail = self._load_template(fail, task.get("fail"), "fail")
        given = {"tau": tau, "k_consecutive": k_consecutive, "step_cost": step_cost, "alpha": alpha,
                 "goal_bonus": goal_bonus}
        settings = {**REWARD_DEFAULTS, **(self.goal.reward if self.goal is not None else {}),
                    **{k: v for k, v in given.items() if v is not None}}
        self.tau = check_float("tau", settings["tau"], 0.0, 1.0, strict_min=True)
        self.k_consecutive = check_int("k_consecutive", settings["k_consecutive"], minimum=1)
        self.step_cost = check_float("step_cost", settings["step_cost"])
        self.alpha = check_float("alpha", settings["alpha"])
        self.goal_bonus = check_float("goal_bonus", settings["goal_bonus"])
        self.fail_penalty = float(fail_penalty)
        self.fail_tau = (float(fail_tau) if fail_tau is not None
                         else float(self.fail.reward["tau"]) if self.fail is not None else 0.0)
        self.reward_kind = reward if isinstance(reward, str) else "list"
        self.seed_reward = float(seed_reward)

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
        self._codec = torch.from_numpy(np.append(masks, np.uint8(0)).astype(np.uint8)).to(dev)   # last row: invalid action
        self._buttons = torch.zeros(n, dtype=torch.uint8, device=dev)
        self._reset_mask = torch.zeros(n, dtype=torch.uint8, device=dev)
        self._slots = torch.zeros(n, dtype=torch.int32, device=dev)
        self._invalid = torch.zeros((), dtype=torch.int64, device=dev)
        self._sync()
        self._views = []   # per shard: buttons, reset mask, slots (wp), obs buffer (wp uint8, wp int64 words), wram
        for gb, lo, hi in zip(self._machines, self._bounds, self._bounds[1:]):
            obs_t = wp.to_torch(gb.obs())
            self._views.append((wp.from_torch(self._buttons[lo:hi]), wp.from_torch(self._reset_mask[lo:hi]),
                                wp.from_torch(self._slots[lo:hi]), gb.obs(),
                                wp.from_torch(obs_t.view(torch.int64).reshape(hi - lo, WORDS_PER_FRAME)),
                                wp.to_torch(gb._arrays["wram"])))
        self._slots_wp = wp.from_torch(self._slots)
        self._reset_mask_wp = wp.from_torch(self._reset_mask)
        self._templates = self._template_arrays()
        self._dist = torch.zeros((2, n), dtype=torch.float32, device=dev)   # rows: goal, fail
        self._dist_wp = wp.from_torch(self._dist)
        self._goal_t = self._template_tensors(self.goal)

        # ---- start states ---------------------------------------------------------------------------
        self._cache, cache_obs = self._build_start_cache(rom_source, sources, start_frames, trace,
                                                         start_variants, variant_frames)
        self.num_start_states = self._cache.num_envs
        self._cache_stack = cache_obs[:, None].expand(-1, self.stack_k, -1, -1).contiguous()
        self._cache_words = wp.from_torch(self._cache_stack.view(torch.int64).reshape(self.num_start_states, -1))
        self._cache_dist = (goal_distance(cache_obs, *self._goal_t) if self._goal_t is not None
                            else torch.zeros(self.num_start_states, device=dev))

        # ---- reward pipeline (envs/reward_transforms.py): a preset or the configured list ---------------
        self.reward_pipeline = build_reward_pipeline(
            reward, n, dev, {"step_cost": self.step_cost, "alpha": self.alpha, "goal_bonus": self.goal_bonus,
                             "fail_penalty": self.fail_penalty, "seed_reward": self.seed_reward})

        # ---- episode state --------------------------------------------------------------------------
        self._generator = torch.Generator(device=dev)
        self._stack = torch.zeros((n, *self.obs_shape), dtype=torch.uint8, device=dev)
        self._prev_dist = torch.zeros(n, device=dev)
        self._hits = torch.zeros(n, dtype=torch.int32, device=dev)
        self._fail_hits = torch.zeros(n, dtype=torch.int32, device=dev)
        self._steps = torch.zeros(n, dtype=torch.int32, device=dev)
        self._seeds_before = torch.zeros(n, dtype=torch.int32, device=dev)
        self._seeds_episode = torch.zeros(n, dtype=torch.int32, device=dev)
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
            self._seeds_before.copy_(self._read_seeds())
            self._seeds_episode.zero_()
            self._stats.reset()
            if self._trained_stats is not None:
                self._trained_stats.reset()
            self.reward_pipeline.reset()
            self.reward_pipeline.sync(self)
            self._reset_mask.zero_()
        return self._stack

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

    def state_dict(self) -> dict[str, Any]:
        """Everything a restored env needs to continue identically: every machine, the frame stacks,
        episode counters and the reset generator (CPU tensors, ~30 KB of machine state per env)."""
        self._sync()
        machines = {}
        for name in self._machines[0]._arrays:   # torch tensors: checkpoints load with weights_only=True
            machines[name] = torch.from_numpy(np.concatenate([gb._arrays[name].numpy() for gb in self._machines]))
        tensors = {k: getattr(self, "_" + k).cpu().clone() for k in self._STATE_TENSORS}
        extra = {} if self._trained_stats is None else {"trained_stats": self._trained_stats.state_dict()}
        return {"version": _STATE_VERSION, "num_envs": self.num_envs, "rom_sha256": self.rom_sha256,
                "stack_k": self.stack_k, "seed": self._seed, "generator": self._generator.get_state(),
                "machines": machines, "stats": self._stats.state_dict(), **tensors,
                "reward_pipeline": self.reward_pipeline.state_dict(), **extra}

    @property
    def state_nbytes(self) -> int:
        """Bytes of tensors in ``state_dict()`` (machines, stacks, counters), without building it."""
        machines = sum(gb.state_bytes_per_env * gb.num_envs for gb in self._machines)
        tensors = sum(getattr(self, "_" + k).numel() * getattr(self, "_" + k).element_size()
                      for k in self._STATE_TENSORS)
        stats = [self._stats] + ([self._trained_stats] if self._trained_stats is not None else [])
        stats = sum(t.numel() * t.element_size() for s in stats for t in (s.running_return, s.running_length))
        return machines + tensors + stats + self._generator.get_state().numel() + self.reward_pipeline.state_nbytes

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore a state_dict() of an env built with the same ROM, num_envs and stack_k."""
        where = "GameBoyEnv.load_state_dict"
        missing = [k for k in ("version", "num_envs", "rom_sha256", "stack_k", "generator", "machines",
                               *self._STATE_TENSORS) if k not in state]
        if missing:
            raise ValueError(f"{where}: state is missing {missing}; expected a GameBoyEnv.state_dict()")
        if state["version"] != _STATE_VERSION:
            raise ValueError(f"{where}: version must be {_STATE_VERSION}, got {state['version']!r}")
        for key, mine in (("num_envs", self.num_envs), ("rom_sha256", self.rom_sha256), ("stack_k", self.stack_k)):
            if state[key] != mine:
                raise ValueError(f"{where}: {key} must be {mine!r} (this env), got {state[key]!r}")
        self._sync()
        for name in self._machines[0]._arrays:
            full = torch.as_tensor(state["machines"][name]).numpy()
            for gb, lo, hi in zip(self._machines, self._bounds, self._bounds[1:]):
                dst = gb._arrays[name]
                if full.shape[1:] != tuple(dst.shape[1:]) or full.shape[0] != self.num_envs:
                    raise ValueError(f"{where}: machines[{name!r}] must have shape "
                                     f"{[self.num_envs, *dst.shape[1:]]}, got {list(full.shape)}")
                dst.assign(np.ascontiguousarray(full[lo:hi]).astype(wp.dtype_to_numpy(dst.dtype)))
        for key in self._STATE_TENSORS:
            dst = getattr(self, "_" + key)
            src = torch.as_tensor(state[key])
            if tuple(src.shape) != tuple(dst.shape) or src.dtype != dst.dtype:
                raise ValueError(f"{where}: {key} must be {dst.dtype} {list(dst.shape)}, got {src.dtype} "
                                 f"{list(src.shape)}")
            setattr(self, "_" + key, src.to(self.device).clone())
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

    _STATE_TENSORS = ("stack", "prev_dist", "hits", "fail_hits", "steps", "seeds_before", "seeds_episode")

    # ------------------------------------------------------------------ extras
    def observe(self) -> torch.Tensor:
        """The current observation stack (e.g. after load_state_dict)."""
        return self._stack

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
        parts = [view[5][:, off:off + length] for view in self._views]
        return parts[0] if len(parts) == 1 else torch.cat(parts)

    @property
    def machines(self) -> list[VecGameBoy]:
        """The VecGameBoy shards (envs in order)."""
        return list(self._machines)

    render_full = False

    # ------------------------------------------------------------------ internals
    def _load_template(self, path, builtin_path, field: str) -> GoalTemplate | None:
        if path is None:
            path = builtin_path
        if path is None or path == "":
            return None
        return load_goal(path, field=field)

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

    def _build_start_cache(self, rom_source, sources, start_frames, trace, variants, variant_frames):
        """Run each start recipe on a one-env machine; stack the states into a device cache."""
        probe = VecGameBoy(rom_source, 1, device=self._machines[0].device)
        rows, obs = [], []
        for src in sources:
            probe.reset()
            if src is not None:
                src = os.fspath(src)
                if _is_state_file(src):
                    probe.load_state(src)
                else:
                    probe.load_pyboy_state(src)
            for count, mask in trace_segments(trace, start_frames):
                probe.run_frames(count, buttons=np.full(1, mask, np.uint8), render="obs")
            for v in range(variants):
                if v:
                    probe.run_frames(variant_frames, render="obs")
                rows.append(probe.env_rows(0))
                obs.append(rows[-1]["obs"])
        cache = self._machines[0].make_cache(rows)
        return cache, torch.from_numpy(np.stack(obs)).to(self.device)

    def _draw_slots(self) -> None:
        if self.num_start_states > 1:
            torch.randint(0, self.num_start_states, (self.num_envs,), generator=self._generator,
                          device=self.device, out=self._slots)

    def _restore_machines(self) -> None:
        self._on_shards(lambda i: self._machines[i].restore_from(self._cache, self._views[i][2], self._views[i][1]))

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
        gb, view, lo = self._machines[i], self._views[i], self._bounds[i]
        gb.run_frames(self.frames_per_step, buttons=view[0], release_after=self.release_after_frames,
                      render="full" if self.render_full else "obs")
        wp.launch(template_distance, dim=(2, gb.num_envs), inputs=[view[3], *self._templates, lo, self._dist_wp],
                  device=gb.device)

    def _stacks_and_resets(self, i: int, words: list, chunk: int) -> None:
        """Shard i: the new stacks (final_obs, obs), then its ended envs restored from the start cache."""
        gb, view, lo = self._machines[i], self._views[i], self._bounds[i]
        width = words[0].shape[1]
        wp.launch(compose_stacks, dim=(gb.num_envs, -(-width // chunk)),
                  inputs=[words[0], view[4], self._cache_words, self._slots_wp, self._reset_mask_wp, lo, chunk,
                          words[1], words[2]], device=gb.device)
        gb.restore_from(self._cache, view[2], view[1])

    def _read_seeds(self) -> torch.Tensor:
        if self.rom_name != "orchard":
            return torch.zeros(self.num_envs, dtype=torch.int32, device=self.device)
        from gbx_lightning.roms import orchard

        return self.read_ram(orchard.SEEDS_EATEN)[:, 0].to(torch.int32)   # a copy, not a view

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
            self._fail_hits, failed = consecutive_hits(fail_dist, self._fail_hits, self.fail_tau, self.k_consecutive)
            failed = failed & ~success
        else:
            failed = no
        terminated = success | failed
        self._steps += 1
        truncated = (self._steps >= self.max_steps) & ~terminated

        # the reward, from this step's screens and RAM (before the ended envs are reset): trained on, and the game's
        reward, game_reward = self.reward_pipeline(RewardContext(self, terminated, truncated, success, failed, dist,
                                                                 self._prev_dist))
        seeds = ram_counter_delta(self._read_seeds(), self._seeds_before)
        self._seeds_episode += seeds.to(torch.int32)
        episode_return, episode_length = self._stats.update(game_reward, terminated, truncated)
        done = terminated | truncated
        info = {"episode_return": episode_return, "episode_length": episode_length, "success": success,
                "failed": failed}
        if self._trained_stats is not None:
            info["trained_return"] = self._trained_stats.update(reward, terminated, truncated)[0]
        if self.rom_name == "orchard":
            info["seeds_eaten"] = torch.where(done, self._seeds_episode, 0)

        # the new stacks (fresh memory, the caller may keep them), then the machines of ended envs reset
        self._reset_mask.copy_(done)
        self._draw_slots()
        final_obs = torch.empty((n, *self.obs_shape), dtype=torch.uint8, device=dev)
        obs = torch.empty_like(final_obs)
        words = [wp.from_torch(t.view(torch.int64).reshape(n, -1)) for t in (self._stack, final_obs, obs)]
        chunk = 1 if dev.type == "cuda" else words[0].shape[1]
        self._on_shards(lambda i: self._stacks_and_resets(i, words, chunk))
        slots = self._slots.long()
        start_dist = self._cache_dist[0] if self.num_start_states == 1 else self._cache_dist[slots]
        self._prev_dist = torch.where(done, start_dist, dist)
        zero = torch.zeros((), dtype=torch.int32, device=dev)
        self._hits = torch.where(done, zero, self._hits)
        self._fail_hits = torch.where(done, zero, self._fail_hits)
        self._steps = torch.where(done, zero, self._steps)
        self._seeds_episode = torch.where(done, zero, self._seeds_episode)
        self._seeds_before = self._read_seeds()
        self.reward_pipeline.sync(self)
        self._stack = obs
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
                f"level={self.level}, stack_k={self.stack_k}, frames_per_step={self.frames_per_step}, "
                f"actions={list(self.action_names)}, max_steps={self.max_steps})")


def _builtin_task(rom_name: str, level: int | None) -> dict:
    """The built-in game's task: its level-select inputs and its LEVEL CLEAR / GAME OVER templates."""
    from gbx_lightning.roms import ROM_DIR, orchard

    level = 1 if level is None else level
    inputs = orchard.level_select_inputs(level)    # ValueError naming the range for a bad level
    # + 1: the level's first play frame draws the player and the status bar (the loading frames hide them)
    return {"level": level, "start_inputs": inputs, "start_frames": orchard.level_start_frames(level) + 1,
            "goal": str(ROM_DIR / "orchard_clear.png"), "fail": str(ROM_DIR / "orchard_gameover.png")}
