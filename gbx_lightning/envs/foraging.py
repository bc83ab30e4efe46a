"""ForagingEnv: a grid world of food and poison, every env stepped by one Warp kernel thread.

The world (per env, re-drawn at every episode start):
  * a `grid_size` x `grid_size` grid whose border cells are walls, plus `wall_range` random interior
    walls, `food_range` food and `poison_range` poison items (counts drawn per episode: a curriculum
    knob), and the agent on a random free interior cell;
  * 8 move actions N, NE, E, SE, S, SW, W, NW (no "stay"); a move into a wall leaves the agent in
    place; only the target cell matters, so diagonal moves may slip between two walls;
  * energy starts at `start_energy`; every step costs `step_cost`; stepping onto food adds
    `food_energy`, onto poison subtracts `poison_energy`; energy is clamped at 0;
  * an eaten item reappears at a random free cell (`respawn=True`, keeps item density stable over
    long episodes; skipped if the grid has no free cell), or is gone for the episode;
  * terminated when energy reaches 0; truncated after `max_steps` steps (never both);
    success = the episode survived to truncation.

Reward = energy delta (after the clamp) + optional potential-based shaping
gamma_s * Phi(s') - Phi(s), Phi(s) = -shaping_scale * (Chebyshev distance from the agent to the
nearest food; walls ignored; 0 if there is no food), Phi(terminal) = 0. Chebyshev distance is the
number of 8-connected moves on an open grid. Set shaping_gamma to the agent's gamma to keep the
optimal policy unchanged (Ng et al. 1999). Episode returns include the shaping term.

Observation: float32 [C=6, V, V] egocentric view centred on the agent (V = view_size, odd).
  ground_truth channels: 0 empty, 1 wall, 2 food, 3 poison, 4 self, 5 out-of-bounds (one-hot per cell)
  proxy channels:        0 empty, 1 wall, 2 "interestingness" (1.0 food, 0.9 poison), 3 always 0,
                         4 self, 5 out-of-bounds
The proxy keeps C = 6 so one policy network serves both modes. The self channel is non-zero only at
the centre cell, where it carries energy / start_energy (the agent needs its energy to value its
state; that cell's other channels are 0). Proxy mode is the Goodhart trap: an agent that chases
interestingness eats poison.

The kernels and the world's constants are ``envs/foraging_kernels.py``'s. All state is Warp arrays on the env's device; torch sees them through zero-copy wp.to_torch views.
`step` is one replayed kernel launch (thread per env; episode statistics and auto-reset inside) and
five tensor copies: no Python loop over envs and no host sync. The copies make every returned tensor
fresh, so holding `obs` / `final_obs` across steps (autograd, rollout lists) is safe although the
kernel reuses its output buffers. On CPU at N=1024 the two observation copies cost about a third of
a step (fresh memory: page faults); a caller that copies observations into its own storage at once
(a PPO rollout buffer) can pass `obs_views=True` to get views of the kernel's buffers instead,
valid until the next step/reset/observe call.

RNG: one uint32 PCG state per env (seeded with wp.rand_init(seed, env)), advanced only by that env's
draws, so trajectories depend on (seed, env index, actions) and not on launch order or env count.

Actions outside 0..7 are not checked on the host (that would sync): the kernel treats them as
"stay" (the step still costs energy) and counts them per env; `invalid_action_count()` reads the
total. Pass `check_action_range=True` for a host-side check that raises (debugging; it syncs).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal

import numpy as np
import torch
import warp as wp

from .base import StateError, VecEnvBase, check_actions, check_float, check_int, check_int_range, resolve_device
from .foraging_kernels import (ACTION_NAMES, CELL_NAMES, EMPTY, FOOD, GROUND_TRUTH_CHANNELS, NUM_CHANNELS, OBS_MODES,
                               OUT_EPISODE_LENGTH, OUT_EPISODE_RETURN, OUT_FOOD_EATEN, OUT_POISON_EATEN, OUT_REWARD,
                               OUT_SUCCESS, OUT_TERMINATED, OUT_TRUNCATED, POISON, PROXY_CHANNELS, WALL, ForagingParams,
                               render_kernel, reset_kernel, step_kernel)

__all__ = ["ACTION_NAMES", "CELL_NAMES", "EMPTY", "FOOD", "ForagingEnv", "GROUND_TRUTH_CHANNELS", "OBS_MODES", "POISON",
           "PROXY_CHANNELS", "WALL"]

_STATE_VERSION = 1


def _seed32(seed) -> int:
    """Any non-negative int seed -> the int32 Warp's rand_init takes (seeds are taken modulo 2**32)."""
    check_int("seed", seed, minimum=0)
    s = seed % (1 << 32)
    return s - (1 << 32) if s >= (1 << 31) else s


class ForagingEnv(VecEnvBase):
    """N foraging grid worlds stepped in one Warp launch; see the module docstring for the rules.

    Args:
        num_envs: number of parallel worlds N.
        device: "cpu" or "cuda[:K]"; observations and all returned tensors live there.
        seed: seeds every env's RNG stream (env i uses wp.rand_init(seed, i)).
        obs_mode: "ground_truth" (one-hot food and poison) or "proxy" (one interestingness channel).
        grid_size: side of the square grid, border walls included.
        view_size: side of the egocentric view (odd).
        food_range, poison_range, wall_range: inclusive (low, high) item counts drawn per episode.
        start_energy, step_cost, food_energy, poison_energy: the energy budget (reward = its change).
        max_steps: time limit (truncation).
        shaping_scale, shaping_gamma: potential-based shaping toward food (0 disables it).
        respawn: eaten items reappear elsewhere (keeps density stable).
        check_action_range: raise on actions outside 0..7 (syncs the host; for debugging).
        obs_views: return `obs` / info["final_obs"] as views of the env's buffers (no copy; they are
            overwritten by the next step, reset or observe) instead of fresh tensors.
        cpu_threads: on CPU, step contiguous shards of envs from this many threads (Warp's CPU
            launches are single-threaded but release the GIL); results do not depend on it.
            Ignored on CUDA, where one launch covers all envs.
    """

    num_actions = len(ACTION_NAMES)
    obs_dtype = torch.float32

    def __init__(
        self,
        num_envs: int = 64,
        device: str | torch.device = "cpu",
        *,
        seed: int = 0,
        obs_mode: Literal["ground_truth", "proxy"] = "ground_truth",
        grid_size: int = 16,
        view_size: int = 11,
        food_range: tuple[int, int] = (4, 8),
        poison_range: tuple[int, int] = (2, 6),
        wall_range: tuple[int, int] = (0, 0),
        start_energy: float = 20.0,
        step_cost: float = 0.25,
        food_energy: float = 5.0,
        poison_energy: float = 5.0,
        max_steps: int = 200,
        shaping_scale: float = 0.0,
        shaping_gamma: float = 0.99,
        respawn: bool = True,
        check_action_range: bool = False,
        obs_views: bool = False,
        cpu_threads: int = 1,
    ):
        self.num_envs = check_int("num_envs", num_envs, minimum=1)
        self.device = resolve_device(device)
        if obs_mode not in OBS_MODES:
            raise ValueError(f"obs_mode must be one of {OBS_MODES}, got {obs_mode!r}")
        self.obs_mode = obs_mode
        check_int("grid_size", grid_size, minimum=3)
        check_int("view_size", view_size, minimum=1)
        if view_size % 2 == 0:
            raise ValueError(f"view_size must be odd (the agent sits at the centre), got {view_size}")
        food = check_int_range("food_range", food_range)
        poison = check_int_range("poison_range", poison_range)
        walls = check_int_range("wall_range", wall_range)
        interior = (grid_size - 2) ** 2
        if 1 + walls[1] + food[1] + poison[1] > interior:
            raise ValueError(
                f"grid_size={grid_size} has {interior} interior cells, too few for the agent plus up to "
                f"{walls[1]} walls, {food[1]} food and {poison[1]} poison; enlarge grid_size or lower the ranges")
        check_float("start_energy", start_energy, 0.0, strict_min=True)
        check_float("step_cost", step_cost, 0.0)
        check_float("food_energy", food_energy, 0.0)
        check_float("poison_energy", poison_energy, 0.0)
        check_int("max_steps", max_steps, minimum=1)
        check_float("shaping_scale", shaping_scale, 0.0)
        check_float("shaping_gamma", shaping_gamma, 0.0, 1.0)
        if not isinstance(respawn, bool):
            raise TypeError(f"respawn must be a bool, got {respawn!r}")
        self.check_action_range = bool(check_action_range)
        check_int("cpu_threads", cpu_threads, minimum=1)
        self._take = (lambda x: x) if obs_views else torch.clone

        p = ForagingParams()
        p.size, p.view = grid_size, view_size
        p.start_energy, p.step_cost = float(start_energy), float(step_cost)
        p.food_energy, p.poison_energy = float(food_energy), float(poison_energy)
        p.food_min, p.food_max = food
        p.poison_min, p.poison_max = poison
        p.wall_min, p.wall_max = walls
        p.max_steps = max_steps
        p.shaping_scale, p.shaping_gamma = float(shaping_scale), float(shaping_gamma)
        p.proxy = int(obs_mode == "proxy")
        p.respawn = int(respawn)
        self.params = p
        self.grid_size, self.view_size, self.max_steps = grid_size, view_size, max_steps
        self.obs_shape = (NUM_CHANNELS, view_size, view_size)
        self.channel_names = PROXY_CHANNELS if obs_mode == "proxy" else GROUND_TRUTH_CHANNELS

        n, d = self.num_envs, str(self.device)
        self._wp_device = wp.get_device(d)
        self._grid = wp.zeros((n, grid_size, grid_size), dtype=wp.int32, device=d)
        self._agent = wp.zeros((n, 2), dtype=wp.int32, device=d)
        self._energy = wp.zeros(n, dtype=wp.float32, device=d)
        self._step_count = wp.zeros(n, dtype=wp.int32, device=d)
        self._episode_return = wp.zeros(n, dtype=wp.float32, device=d)
        self._food_eaten = wp.zeros(n, dtype=wp.int32, device=d)
        self._poison_eaten = wp.zeros(n, dtype=wp.int32, device=d)
        self._invalid = wp.zeros(n, dtype=wp.int32, device=d)
        self._rng = wp.zeros(n, dtype=wp.uint32, device=d)
        self._actions = wp.zeros(n, dtype=wp.int32, device=d)
        self._obs = wp.zeros((n, *self.obs_shape), dtype=wp.float32, device=d)
        self._final_obs = wp.zeros((n, *self.obs_shape), dtype=wp.float32, device=d)
        self._out_f32 = wp.zeros((2, n), dtype=wp.float32, device=d)
        self._out_bool = wp.zeros((3, n), dtype=wp.bool, device=d)
        self._out_i32 = wp.zeros((3, n), dtype=wp.int32, device=d)
        # zero-copy torch views of the kernel's buffers (copied out once per step)
        self._t = {name: wp.to_torch(getattr(self, "_" + name)) for name in (
            "actions", "obs", "final_obs", "out_f32", "out_bool", "out_i32", "invalid")}
        # every argument is a persistent buffer, so launches are recorded once and replayed per step:
        # one launch for all envs, or one per CPU thread over a contiguous shard of envs
        shards = 1 if self.device.type == "cuda" else min(cpu_threads, n)
        bounds = [n * i // shards for i in range(shards + 1)]
        self._step_cmds = [self._record_step(lo, hi) for lo, hi in zip(bounds, bounds[1:])]
        self._pool = ThreadPoolExecutor(shards - 1, thread_name_prefix="foraging") if shards > 1 else None
        self._seed = seed
        self._sync()  # the allocations' zero-fill (Warp's stream) lands before any launch on torch's stream
        self._launch_reset(_seed32(seed), reseed=True)

    # ------------------------------------------------------------------ protocol
    def reset(self, seed: int | None = None) -> torch.Tensor:
        """Start a new episode in every env. seed=None continues each env's RNG stream; an int reseeds."""
        seed32 = 0 if seed is None else _seed32(seed)
        if seed is not None:
            self._seed = seed
        self._launch_reset(seed32, reseed=seed is not None)
        return self._t["obs"].clone()

    def step(self, actions: torch.Tensor):
        """One step of every env (auto-reset where an episode ended). Returns fresh tensors; see VecEnv."""
        check_actions(actions, self.num_envs, self.device)
        if self.check_action_range and bool(((actions < 0) | (actions >= self.num_actions)).any()):
            bad = actions[(actions < 0) | (actions >= self.num_actions)][:5].tolist()
            raise ValueError(f"step: actions must be in 0..{self.num_actions - 1}, got values {bad}")
        t = self._t
        t["actions"].copy_(actions)
        if self._pool is None:
            self._step_cmds[0].launch(**self._stream())
        else:
            pending = [self._pool.submit(cmd.launch) for cmd in self._step_cmds[1:]]
            self._step_cmds[0].launch()
            for job in pending:
                job.result()
        f32, flags, i32 = t["out_f32"].clone(), t["out_bool"].clone(), t["out_i32"].clone()
        info = {
            "final_obs": self._take(t["final_obs"]),
            "episode_return": f32[OUT_EPISODE_RETURN],
            "episode_length": i32[OUT_EPISODE_LENGTH],
            "success": flags[OUT_SUCCESS],
            "food_eaten": i32[OUT_FOOD_EATEN],
            "poison_eaten": i32[OUT_POISON_EATEN],
        }
        return self._take(t["obs"]), f32[OUT_REWARD], flags[OUT_TERMINATED], flags[OUT_TRUNCATED], info

    def state_dict(self) -> dict[str, Any]:
        """Everything a restored env needs to continue identically: worlds, agents, counters, RNG, episode stats.

        CPU tensors (the RNG's uint32 states as int64). Not included: the constructor options, which
        come from the config; load_state_dict checks num_envs and grid_size match.
        """
        self._sync()
        arrays = {name: torch.from_numpy(getattr(self, "_" + name).numpy().copy()) for name in self._STATE}
        arrays["rng"] = arrays["rng"].to(torch.int64)
        return {"version": _STATE_VERSION, "num_envs": self.num_envs, "grid_size": self.grid_size,
                "seed": self._seed, **arrays}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore a state_dict(); call observe() afterwards for the current observation."""
        where = "ForagingEnv.load_state_dict"
        missing = [k for k in ("version", "num_envs", "grid_size", *self._STATE) if k not in state]
        if missing:
            raise StateError(f"{where}: state is missing {missing}; expected a ForagingEnv.state_dict()")
        if state["version"] != _STATE_VERSION:
            raise StateError(f"{where}: version must be {_STATE_VERSION}, got {state['version']!r}")
        for key, mine in (("num_envs", self.num_envs), ("grid_size", self.grid_size)):
            if state[key] != mine:
                raise StateError(f"{where}: {key} must be {mine} (this env), got {state[key]!r}")
        for name in self._STATE:
            dst, src = getattr(self, "_" + name), torch.as_tensor(state[name]).cpu().numpy()
            if src.shape != dst.shape:
                raise StateError(f"{where}: {name} must have shape {list(dst.shape)}, got {list(src.shape)}")
            dst.assign(src.astype(wp.dtype_to_numpy(dst.dtype)))
        self._seed = state.get("seed", self._seed)
        self._sync()

    # ------------------------------------------------------------------ extras
    _STATE = ("grid", "agent", "energy", "step_count", "episode_return", "food_eaten", "poison_eaten", "invalid",
              "rng")

    def observe(self) -> torch.Tensor:
        """The observation of the current state (e.g. after load_state_dict or set_layout)."""
        wp.launch(render_kernel, dim=self.num_envs, inputs=[self.params, self._grid, self._agent, self._energy,
                                                             self._obs], **self._launch_where())
        return self._t["obs"].clone()

    def invalid_action_count(self) -> int:
        """Total actions outside 0..7 seen since construction (treated as "stay"). Syncs the host."""
        return int(self._t["invalid"].sum().item())

    def set_layout(self, cells, agent, energy: float | None = None) -> torch.Tensor:
        """Place a hand-built world in every env (tests and demos); returns its observation.

        cells: ints in {EMPTY, WALL, FOOD, POISON}, shape [S, S] (same for all envs) or [N, S, S],
        with S = grid_size and walls on the whole border; agent: (y, x) or [N, 2] on an empty interior
        cell; energy: None for start_energy. Step counters and episode statistics restart from 0.
        """
        n, s = self.num_envs, self.grid_size
        cells = np.asarray(cells)
        if cells.shape == (s, s):
            cells = np.broadcast_to(cells, (n, s, s))
        if cells.shape != (n, s, s) or not np.issubdtype(cells.dtype, np.integer):
            raise ValueError(f"set_layout: cells must be ints of shape [S, S]=[{s}, {s}] or [N, S, S]=[{n}, {s}, {s}], "
                             f"got {cells.dtype} {list(cells.shape)}")
        if cells.min() < EMPTY or cells.max() > POISON:
            raise ValueError(f"set_layout: cells must be in 0..3 {CELL_NAMES}, got range {cells.min()}..{cells.max()}")
        border = np.ones((s, s), bool)
        border[1:-1, 1:-1] = False
        if not (cells[:, border] == WALL).all():
            raise ValueError("set_layout: every border cell must be WALL (1)")
        agent = np.asarray(agent, dtype=np.int64)
        if agent.shape == (2,):
            agent = np.broadcast_to(agent, (n, 2))
        if agent.shape != (n, 2):
            raise ValueError(f"set_layout: agent must be (y, x) or shape [N, 2]=[{n}, 2], got {list(agent.shape)}")
        if (agent < 1).any() or (agent > s - 2).any():
            raise ValueError(f"set_layout: agent positions must be interior cells (1..{s - 2}), got {agent.tolist()}")
        if (cells[np.arange(n), agent[:, 0], agent[:, 1]] != EMPTY).any():
            raise ValueError("set_layout: the agent must stand on an EMPTY cell")
        e = self.params.start_energy if energy is None else check_float("energy", energy, 0.0, strict_min=True)
        self._grid.assign(np.ascontiguousarray(cells, dtype=np.int32))
        self._agent.assign(np.ascontiguousarray(agent, dtype=np.int32))
        self._energy.fill_(e)
        for arr in (self._step_count, self._episode_return, self._food_eaten, self._poison_eaten):
            arr.zero_()
        self._sync()
        return self.observe()

    @property
    def energy(self) -> torch.Tensor:
        return wp.to_torch(self._energy).clone()

    @property
    def agent_pos(self) -> torch.Tensor:
        """int32 [N, 2] (y, x) of each agent."""
        return wp.to_torch(self._agent).clone()

    @property
    def grid(self) -> torch.Tensor:
        """int32 [N, S, S] cell types (EMPTY, WALL, FOOD, POISON)."""
        return wp.to_torch(self._grid).clone()

    @property
    def step_count(self) -> torch.Tensor:
        """int32 [N]: steps taken in each env's current episode."""
        return wp.to_torch(self._step_count).clone()

    # ------------------------------------------------------------------ internals
    def _stream(self) -> dict:
        """On CUDA: launch on torch's current stream, so kernels order correctly with the torch ops around them."""
        if self.device.type == "cuda":
            return {"stream": wp.stream_from_torch(torch.cuda.current_stream(self.device))}
        return {}

    def _record_step(self, lo: int, hi: int) -> wp.Launch:
        """The step launch for envs lo..hi-1 (views into the shared buffers)."""
        per_env = [self._actions, self._grid, self._agent, self._energy, self._step_count, self._episode_return,
                   self._food_eaten, self._poison_eaten, self._invalid, self._rng, self._obs, self._final_obs]
        per_row = [self._out_f32, self._out_bool, self._out_i32]
        return wp.launch(step_kernel, dim=hi - lo, inputs=[
            self.params, *(a[lo:hi] for a in per_env), *(a[:, lo:hi] for a in per_row)],
            device=self._wp_device, record_cmd=True)

    def _sync(self) -> None:
        """Order host-side reads/writes of state (assign, numpy) with kernels on torch's CUDA stream."""
        if self.device.type == "cuda":
            torch.cuda.current_stream(self.device).synchronize()
            wp.synchronize_device(self._wp_device)

    def _launch_where(self) -> dict:
        return self._stream() or {"device": self._wp_device}

    def _launch_reset(self, seed: int, reseed: bool) -> None:
        wp.launch(reset_kernel, dim=self.num_envs, inputs=[
            self.params, seed, int(reseed), self._grid, self._agent, self._energy, self._step_count,
            self._episode_return, self._food_eaten, self._poison_eaten, self._rng, self._obs], **self._launch_where())

    def __repr__(self) -> str:
        return (f"ForagingEnv(num_envs={self.num_envs}, device={str(self.device)!r}, obs_mode={self.obs_mode!r}, "
                f"grid_size={self.grid_size}, view_size={self.view_size}, max_steps={self.max_steps})")
