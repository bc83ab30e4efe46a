"""Hybrid mode: an env emulated on one device (the CPU's cores) presented on another (the learner's GPU).

``DeviceBridge(env, device)`` is a VecEnv on ``device`` whose steps run ``env`` where it lives. Per step:
the actions come back to the env's device (the one host wait hybrid mode cannot avoid: the CPU cannot
step before it has them), the env steps, and everything ``step`` returns is copied once into pinned
(page-locked) host buffers and sent to ``device`` with non-blocking copies, so the learner's next
forward queues behind the copies on the GPU instead of the host waiting for them. A CUDA event
recorded after the copies guards the pinned buffers: the next step waits on it (already passed in
practice: the actions it needed were computed after those copies) before overwriting them.

Why: a pixel CNN's forward and backward are most of ``fit``'s time on the CPU, and on a GPU the
emulator's one-thread-per-Game-Boy kernel meets divergent branches and a large per-thread state.
Emulating on the CPU's cores and learning on the GPU is what PyBoy users do today; which mode is
faster depends on the game and the machine (README, "GPU").

On a machine without a GPU (both devices the CPU) the bridge runs the same copies through ordinary
buffers and returns fresh tensors, so a run through it is bit-identical to the same run without it
(tests/test_bridge.py).
"""
from __future__ import annotations

from typing import Any

import torch

from .base import check_actions, resolve_device


class DeviceBridge:
    """``env`` (on its own device) stepped for a learner on ``device``; see the module docstring.

    Everything else (``state_dict``, ``reward_pipeline``, ``rom_sha256``, ...) is the wrapped env's own:
    state dicts hold host tensors either way.
    """

    def __init__(self, env, device: str | torch.device):
        self.env = env
        self.device = resolve_device(device)
        self.env_device = torch.device(env.device)
        if self.env_device.type != "cpu":
            raise ValueError(f"env_device: hybrid mode emulates on the CPU, got an env on {self.env_device}")
        self.num_envs, self.num_actions = env.num_envs, env.num_actions
        self.obs_shape, self.obs_dtype = env.obs_shape, env.obs_dtype
        self._pin = self.device.type == "cuda"
        self._staging: dict[str, torch.Tensor] = {}   # name -> host buffer (pinned when sending to a GPU)
        self._sent: torch.cuda.Event | None = None     # recorded after the last step's copies
        self._actions = torch.empty(self.num_envs, dtype=torch.int32, pin_memory=self._pin)

    def __getattr__(self, name: str) -> Any:       # only called for what the bridge does not define
        if name == "env":
            raise AttributeError(name)
        return getattr(self.env, name)

    # ---- the copies -------------------------------------------------------------------------------
    def _send(self, name: str, src: torch.Tensor) -> torch.Tensor:
        """``src`` (on the env's device) -> a fresh tensor on the learner's device, through a pinned buffer."""
        buf = self._staging.get(name)
        if buf is None or buf.shape != src.shape or buf.dtype != src.dtype:
            buf = self._staging[name] = torch.empty(src.shape, dtype=src.dtype, pin_memory=self._pin)
        buf.copy_(src)
        out = torch.empty(src.shape, dtype=src.dtype, device=self.device)
        out.copy_(buf, non_blocking=True)
        return out

    def _wait_sent(self) -> None:
        """The pinned buffers are free again once the last step's copies have left them."""
        if self._sent is not None:
            self._sent.synchronize()
            self._sent = None

    def _sent_now(self) -> None:
        if self._pin:
            self._sent = torch.cuda.Event()
            self._sent.record(torch.cuda.current_stream(self.device))

    def _send_all(self, tensors: dict[str, Any]) -> dict[str, Any]:
        self._wait_sent()
        out = {k: self._send(k, v) if isinstance(v, torch.Tensor) else v for k, v in tensors.items()}
        self._sent_now()
        return out

    # ---- the VecEnv protocol ----------------------------------------------------------------------
    def reset(self, seed: int | None = None) -> torch.Tensor:
        return self._send_all({"obs": self.env.reset(seed=seed)})["obs"]

    def observe(self) -> torch.Tensor:
        return self._send_all({"obs": self.env.observe()})["obs"]

    def step(self, actions: torch.Tensor):
        check_actions(actions, self.num_envs, self.device)
        self._actions.copy_(actions)           # waits for the policy that computed them (unavoidable)
        obs, reward, terminated, truncated, info = self.env.step(self._actions)
        sent = self._send_all({"obs": obs, "reward": reward, "terminated": terminated, "truncated": truncated,
                               **{f"info.{k}": v for k, v in info.items()}})
        info = {k[5:]: v for k, v in sent.items() if k.startswith("info.")}
        return sent["obs"], sent["reward"], sent["terminated"], sent["truncated"], info

    def state_dict(self) -> dict[str, Any]:
        return self.env.state_dict()

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.env.load_state_dict(state)
