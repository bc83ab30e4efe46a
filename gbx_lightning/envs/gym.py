"""Our vector envs behind gymnasium's vector API (gymnasium >= 1.0, an optional extra: ``pip install
gbx_lightning[gym]``), for training stacks of your own (CleanRL-style scripts, gymnasium wrappers).

    import gymnasium as gym
    import gbx_lightning.envs.gym                      # registers the ids below
    envs = gym.make_vec("gbx_lightning/GameBoy-v0", num_envs=64, vectorization_mode="vector_entry_point",
                        task="orchard/level1", stack_k=4)
    obs, info = envs.reset(seed=0)                     # uint8 [64, 4, 72, 80]
    obs, reward, terminated, truncated, info = envs.step(envs.action_space.sample())

or wrap an env you built: ``GymVectorEnv(GameBoyEnv(...))``.

Autoreset: ``AutoresetMode.SAME_STEP`` (in ``metadata["autoreset_mode"]``), which is what our envs do:
an env whose episode ended is reset inside ``step``, the returned ``obs`` is the new episode's first
observation, and ``info["final_obs"]`` holds the true next observation s'. Unlike gymnasium's own
vector envs, which put s' in an object array only where an episode ended, ``final_obs`` here is a
dense array for every env (equal to ``obs`` where nothing ended); ``info["_final_obs"]`` marks the
envs that ended. ``info["episode"]`` = ``{"r": returns, "l": lengths}`` with mask ``info["_episode"]``,
as gymnasium's RecordEpisodeStatistics writes it (CleanRL reads these), plus ``info["success"]``.

Arrays: numpy on the host by default (gymnasium's convention); ``tensors=True`` returns torch tensors
on the env's device instead and takes actions as tensors too (no host round trip: the fast path on a
GPU). Seeding: ``reset(seed=s)`` reseeds the whole batch (one int; each env's stream derives from
it and its index), ``reset()`` continues the streams. Per-env seed lists are refused: our envs
seed the batch, not each env.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import torch

try:
    import gymnasium
    from gymnasium import spaces
    from gymnasium.vector import AutoresetMode, VectorEnv
    from gymnasium.vector.utils import batch_space
except ImportError as err:  # pragma: no cover - exercised only without the extra
    raise ImportError("gbx_lightning.envs.gym needs gymnasium >= 1.0: pip install 'gbx_lightning[gym]'") from err

from .base import VecEnv

__all__ = ["GymVectorEnv", "make_gameboy_vec", "make_foraging_vec"]


class GymVectorEnv(VectorEnv):
    """A ``gymnasium.vector.VectorEnv`` over one of our vector envs (see the module docstring)."""

    metadata = {"autoreset_mode": AutoresetMode.SAME_STEP, "render_modes": []}

    def __init__(self, env: VecEnv, *, tensors: bool = False):
        if not isinstance(env, VecEnv):
            raise TypeError(f"env: expected one of gbx_lightning's vector envs (GameBoyEnv, ForagingEnv), "
                            f"got {type(env).__name__}")
        self.env = env
        self.tensors = bool(tensors)
        self.num_envs = env.num_envs
        if env.obs_dtype == torch.uint8:
            high = np.full(env.obs_shape, 3 if hasattr(env, "rom_sha256") else 255, np.uint8)  # Game Boy shades 0..3
            if getattr(env, "obs_vector", 0):
                high[0] = 255       # GameBoyEnv's obs: the data plane in front of the frames holds bytes
            self.single_observation_space = spaces.Box(0, high, env.obs_shape, np.uint8)
        else:
            self.single_observation_space = spaces.Box(-np.inf, np.inf, env.obs_shape, np.float32)
        self.single_action_space = spaces.Discrete(env.num_actions)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self._episode_return = None

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        if seed is not None and not isinstance(seed, (int, np.integer)):
            raise ValueError(f"seed: expected one int for the whole batch (or None), got {seed!r}; "
                             f"gbx_lightning envs derive each env's stream from it and the env's index")
        if options:
            raise ValueError(f"options: none are supported, got {sorted(options)}")
        if seed is not None:
            self.action_space.seed(int(seed))
        obs = self.env.reset(seed=None if seed is None else int(seed))
        return self._out(obs), {}

    def step(self, actions):
        if isinstance(actions, torch.Tensor):
            a = actions.to(device=self.env.device, dtype=torch.int32)
        else:
            a = torch.as_tensor(np.asarray(actions), dtype=torch.int32).to(self.env.device)
        obs, reward, terminated, truncated, info = self.env.step(a)
        done = terminated | truncated
        out_info = {"final_obs": self._out(info["final_obs"]), "_final_obs": self._out(done),
                    "episode": {"r": self._out(info["episode_return"]), "l": self._out(info["episode_length"])},
                    "_episode": self._out(done), "success": self._out(info["success"])}
        for key, value in info.items():
            if key not in ("final_obs", "episode_return", "episode_length", "success"):
                out_info[key] = self._out(value)
        return self._out(obs), self._out(reward), self._out(terminated), self._out(truncated), out_info

    def _out(self, t: torch.Tensor):
        return t if self.tensors else t.cpu().numpy()

    def close_extras(self, **kwargs):
        pass

    def __repr__(self) -> str:
        return f"GymVectorEnv({self.env!r}, tensors={self.tensors})"


def make_gameboy_vec(num_envs: int = 64, *, tensors: bool = False, **options) -> GymVectorEnv:
    """``gym.make_vec("gbx_lightning/GameBoy-v0", ...)``: a GameBoyEnv (``options`` as its keywords)."""
    from .gameboy import GameBoyEnv

    return GymVectorEnv(GameBoyEnv(num_envs, **options), tensors=tensors)


def make_foraging_vec(num_envs: int = 64, *, tensors: bool = False, **options) -> GymVectorEnv:
    """``gym.make_vec("gbx_lightning/Foraging-v0", ...)``: a ForagingEnv (``options`` as its keywords)."""
    from .foraging import ForagingEnv

    return GymVectorEnv(ForagingEnv(num_envs, **options), tensors=tensors)


for _id, _fn in (("gbx_lightning/GameBoy-v0", make_gameboy_vec), ("gbx_lightning/Foraging-v0", make_foraging_vec)):
    if _id not in gymnasium.registry:
        gymnasium.register(_id, vector_entry_point=_fn)
