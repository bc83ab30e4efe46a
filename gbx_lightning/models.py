"""Actor-critic policies: ``forward(obs) -> (logits [N, A], value [N])``.

A config names one by class (``model.policy: {class_path: gbx_lightning.models.PixelCNNPolicy, init_args:
{...}}``); the module builds it with the env's observation shape and number of actions. ``POLICY_REGISTRY``
gives them short names for tools and tests. Two families, chosen by the observation the env produces:

* ``mlp`` (``MLPPolicy``) and ``cnn`` (``GridCNNPolicy``) take float observations such as ForagingEnv's
  egocentric one-hot view ``[C, V, V]``.
* ``pixel_cnn``, ``nature_cnn`` and ``impala_cnn`` (``PixelCNNPolicy``, ...) take uint8 Game Boy pixel
  stacks ``[K, 72, 80]`` with shades 0..3 and normalise inside the model
  (``x.float() / 3``), so the env and the rollout buffer stay uint8.
  ``pixel_cnn`` (two convolutions, ~0.5 M parameters) is the one that learns
  the built-in task on a laptop CPU in minutes: per sample, a forward pass
  costs about a quarter of the Nature CNN's on one core (measured on
  [1, 72, 80] stacks, batch 256); IMPALA's is ~15x the Nature CNN's there.

All use orthogonal initialisation as is usual for PPO/A2C: hidden layers with
gain sqrt(2), the policy head with gain 0.01 (a near-uniform initial policy, so
early exploration does not depend on the seed) and the value head with gain 1.
"""

from __future__ import annotations

import functools
import math
import os
import shutil
import time
from typing import Callable

import torch
from torch import nn

from gbx_lightning.heap import ReusedTensors

__all__ = ["POLICY_REGISTRY", "ActorCritic", "RecurrentActorCritic", "make_policy", "MLPPolicy", "GridCNNPolicy",
           "PixelCNNPolicy", "NatureCNNPolicy", "ImpalaCNNPolicy", "PixelVectorPolicy", "PixelLSTMPolicy",
           "PixelVectorLSTMPolicy", "MLPLSTMPolicy", "is_recurrent", "logprob_entropy", "sample_actions", "cpp_compiler"]

PIXEL_SHADES = 3.0  # DMG shades are 0..3; dividing by 3 maps them to [0, 1]

@functools.lru_cache(maxsize=1)
def cpp_compiler() -> str | None:
    """The C++ compiler torch.compile's CPU backend (Inductor) builds its kernels with (``compile_update``), or None
    if there is none (it looks for ``$CXX``/g++ and runs ``--version``)."""
    try:
        from torch._inductor.cpp_builder import get_cpp_compiler
    except ImportError:   # another torch layout: look for the usual names
        return next((c for c in (os.environ.get("CXX"), "g++", "c++", "clang++") if c and shutil.which(c)), None)
    try:
        return get_cpp_compiler()
    except Exception:  # noqa: BLE001 - InvalidCxxCompiler and whatever the search raises: none usable
        return None


def logprob_entropy(logits: torch.Tensor, actions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The categorical policy pi = softmax(logits): log pi(a|s) of ``actions`` and the entropy H(pi(.|s)).

        log pi(.|s) = log_softmax(logits)
        H           = -sum_a pi(a|s) log pi(a|s)

    logits [B, A], actions [B] (int) -> ([B], [B]). The one place this math is written (acting, PPO, A2C).
    """
    log_pi = torch.log_softmax(logits, dim=-1)
    return log_pi.gather(1, actions.long().unsqueeze(1)).squeeze(1), -(log_pi.exp() * log_pi).sum(-1)


def sample_actions(logits: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """Sample a ~ softmax(logits) per row by Gumbel-max: argmax(logits + Gumbel noise), int64 [B].

    Drawn with ``generator`` (a stream's own, stored in checkpoints) so a resumed run samples
    what the uninterrupted one would.
    """
    u = torch.rand(logits.shape, generator=generator, device=logits.device, dtype=logits.dtype)
    gumbel = -torch.log(-torch.log(u.clamp_(min=1e-20)))
    return (logits + gumbel).argmax(-1)


def _init(layer: nn.Module, gain: float) -> nn.Module:
    nn.init.orthogonal_(layer.weight, gain)
    nn.init.zeros_(layer.bias)
    return layer


class ActorCritic(nn.Module):
    """Shared torso + linear policy and value heads; subclasses build the torso."""

    def __init__(self, obs_shape: tuple[int, ...], num_actions: int, obs_dtype: torch.dtype):
        super().__init__()
        self.obs_shape = tuple(int(s) for s in obs_shape)
        self.num_actions = int(num_actions)
        self.obs_dtype = obs_dtype

    def _heads(self, features: int) -> None:
        self.policy_head = _init(nn.Linear(features, self.num_actions), 0.01)
        self.value_head = _init(nn.Linear(features, 1), 1.0)

    def torso(self, obs: torch.Tensor) -> torch.Tensor:  # pragma: no cover - abstract
        raise NotImplementedError

    def check_obs(self, obs: torch.Tensor, lead: str = "N") -> None:
        """Shape ``[<lead dims>, *obs_shape]`` and dtype; Python attribute reads only (no host sync)."""
        dims = len(lead.split(", "))
        if tuple(obs.shape[dims:]) != self.obs_shape or obs.dim() != len(self.obs_shape) + dims:
            raise ValueError(f"{type(self).__name__}: obs must have shape [{lead}, "
                             f"{', '.join(map(str, self.obs_shape))}], got {list(obs.shape)}")
        if obs.dtype != self.obs_dtype:
            raise ValueError(f"{type(self).__name__}: obs must have dtype {self.obs_dtype}, got {obs.dtype}")

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        self.check_obs(obs)
        h = self.torso(obs)
        return self.policy_head(h), self.value_head(h).squeeze(-1)

    def evaluate(self, obs: torch.Tensor, actions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(log pi(a|s), H(pi(.|s)), V(s)) for taken ``actions``: what the losses need, in one forward pass."""
        logits, value = self(obs)
        logprob, entropy = logprob_entropy(logits, actions)
        return logprob, entropy, value


class MLPPolicy(ActorCritic):
    """Flatten -> ``len(hidden)`` tanh layers; the simplest baseline for any float observation.

    Args:
        hidden: the hidden layers' widths.
    """

    def __init__(self, obs_shape: tuple[int, ...], num_actions: int, hidden: tuple[int, ...] = (128, 128)):
        super().__init__(obs_shape, num_actions, torch.float32)
        self.body, width = _tanh_mlp(math.prod(self.obs_shape), hidden)
        self._heads(width)

    def torso(self, obs):
        return self.body(obs)


class GridCNNPolicy(ActorCritic):
    """Small CNN for egocentric grids [C, V, V]: 3x3 conv, 3x3 stride-2 conv, one dense layer.

    The stride-2 layer halves the view before the dense layer, which keeps the network (and
    each streaming update on a CPU) small: ~0.2 M parameters for the default 6x11x11 view.

    Args:
        channels: the two convolutions' output channels.
        hidden: the dense layer's width.
    """

    def __init__(self, obs_shape: tuple[int, ...], num_actions: int, channels: tuple[int, int] = (16, 32),
                 hidden: int = 128):
        super().__init__(obs_shape, num_actions, torch.float32)
        if len(self.obs_shape) != 3:
            raise ValueError(f"cnn policy: obs_shape must be [C, H, W], got {list(self.obs_shape)}")
        c, h, w = self.obs_shape
        c1, c2 = (int(x) for x in channels)
        g = math.sqrt(2)
        self.body = nn.Sequential(
            _init(nn.Conv2d(c, c1, 3, padding=1), g), nn.ReLU(),
            _init(nn.Conv2d(c1, c2, 3, stride=2, padding=1), g), nn.ReLU(),
            nn.Flatten(),
        )
        flat = c2 * ((h + 1) // 2) * ((w + 1) // 2)
        self.dense = nn.Sequential(_init(nn.Linear(flat, int(hidden)), g), nn.ReLU())
        self._heads(int(hidden))

    def torso(self, obs):
        return self.dense(self.body(obs))


def _tanh_mlp(width: int, hidden: tuple[int, ...]) -> tuple[nn.Sequential, int]:
    """Flatten, then Linear + Tanh per width of ``hidden`` (orthogonal, gain sqrt 2): the MLP torsos' body and
    its output width."""
    layers: list[nn.Module] = [nn.Flatten()]
    for h in hidden:
        layers += [_init(nn.Linear(width, int(h)), math.sqrt(2)), nn.Tanh()]
        width = int(h)
    return nn.Sequential(*layers), width


def _check_pixels(name: str, obs_shape: tuple[int, ...], min_hw: int) -> None:
    if len(obs_shape) != 3 or obs_shape[1] < min_hw or obs_shape[2] < min_hw:
        raise ValueError(f"{name} policy: obs_shape must be [K, H, W] with H, W >= {min_hw} "
                         f"(uint8 pixel stack, e.g. [4, 72, 80]), got {list(obs_shape)}")


def _dense_after(convs: nn.Module, obs_shape: tuple[int, ...], hidden: int, extra: int = 0) -> nn.Module:
    """One dense ReLU layer of ``hidden`` units on ``convs``' flattened output for one ``obs_shape`` input, and
    ``extra`` more inputs concatenated after it (PixelVectorPolicy's vector features)."""
    with torch.no_grad():
        flat = convs(torch.zeros(1, *obs_shape)).shape[1]
    return nn.Sequential(_init(nn.Linear(flat + extra, int(hidden)), math.sqrt(2)), nn.ReLU())


def _small_pixel_convs(k: int, channels: tuple[int, int]) -> nn.Sequential:
    """``PixelCNNPolicy``'s convolutions: 8x8/4 and 4x4/2 (the Nature CNN's first two), ReLU, flattened."""
    c1, c2 = (int(c) for c in channels)
    g = math.sqrt(2)
    return nn.Sequential(
        _init(nn.Conv2d(k, c1, 8, stride=4), g), nn.ReLU(),
        _init(nn.Conv2d(c1, c2, 4, stride=2), g), nn.ReLU(),
        nn.Flatten(),
    )


def _pixel_input(obs: torch.Tensor, channels_last: bool, reused: ReusedTensors | None = None) -> torch.Tensor:
    """uint8 shades 0..3 -> float [0, 1] (the values of ``obs.float() / 3``), NHWC in memory where the convolutions
    are (``channels_last``). The frames are interleaved while still uint8 (``stack`` of the K channel planes: on a
    CPU much faster than a uint8 ``contiguous(channels_last)``), then converted and divided in place. With
    ``reused`` (the policy's ``ReusedTensors``) both are written into memory kept from the previous call: a fresh
    94 MB float minibatch per update step was page-faulted in each time (``gbx_lightning/heap.py``)."""
    get = reused.get if reused is not None else (lambda name, shape, dtype, device:
                                                 torch.empty(shape, dtype=dtype, device=device))
    if channels_last and obs.dim() == 4:
        n, k, h, w = obs.shape
        nhwc = torch.stack(obs.unbind(1), dim=-1, out=get("nhwc_u8", (n, h, w, k), torch.uint8, obs.device))
        out = get("nhwc", (n, h, w, k), torch.float32, obs.device).copy_(nhwc).div_(PIXEL_SHADES)
        return out.permute(0, 3, 1, 2)                                  # [N, K, H, W], channels_last strides
    # copy, then divide in place: torch.div(uint8, out=float) converts into a temporary of the output's size first
    return get("pixels", obs.shape, torch.float32, obs.device).copy_(obs).div_(PIXEL_SHADES)


def _to_channels_last(convs: nn.Module, channels_last: bool) -> nn.Module:
    """The convolutions' weights NHWC (``channels_last``): on a CPU oneDNN then runs them without converting each
    call, the larger the batch the more it saves (PPO's minibatches; ``tools/bench_trainer.py --variants``). The
    same model either way: only the memory layout differs."""
    return convs.to(memory_format=torch.channels_last) if channels_last else convs


class _PixelPolicy(ActorCritic):
    """What the pixel CNNs share: ``self.convs`` (set by the subclass), one dense layer on its flattened
    output, the heads; shades 0..3 scaled to [0, 1]; ``channels_last`` (bool) lays the convolutions out NHWC;
    ``compile_update`` (bool) runs ``evaluate`` through torch.compile."""

    channels_last = False
    compile_update = False

    def _dense_and_heads(self, hidden: int, channels_last: bool = False, compile_update: bool = False) -> None:
        self.dense = _dense_after(self.convs, self.obs_shape, hidden)
        self._heads(int(hidden))
        self.channels_last = bool(channels_last)
        _to_channels_last(self.convs, self.channels_last)
        self.compile_update = bool(compile_update)
        self._inputs = ReusedTensors()   # the float pixels of the last call's batch, rewritten by the next
        self._compiled_evaluate = None   # torch.compile's wrapper, made at the first update
        self.compile_seconds: float | None = None   # wall time of the first compiled update (compiling included)

    def torso(self, obs):
        reused = None if torch.compiler.is_compiling() else self._inputs   # compiled: Inductor plans the memory
        return self.dense(self.convs(_pixel_input(obs, self.channels_last, reused)))

    def evaluate(self, obs: torch.Tensor, actions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``ActorCritic.evaluate``; with ``compile_update`` through ``torch.compile`` (Inductor: C++ on a CPU),
        compiled on the first update (``compile_seconds``: how long that one took) and again for each new batch
        size (PPO's last minibatch when T * N does not divide): the forward and backward of every update then run
        as generated kernels. Acting stays eager."""
        if not self.compile_update:
            return super().evaluate(obs, actions)
        if self._compiled_evaluate is None:
            self._compiled_evaluate = torch.compile(super().evaluate, dynamic=False)
            t0 = time.perf_counter()
            out = self._compiled_evaluate(obs, actions)
            self.compile_seconds = time.perf_counter() - t0
            return out
        return self._compiled_evaluate(obs, actions)


class PixelCNNPolicy(_PixelPolicy):
    """A small CNN for Game Boy pixel stacks: 8x8/4 and 4x4/2 convolutions, one dense layer.

    The Nature CNN's first two layers with half the channels and without its third
    convolution: on a [K, 72, 80] stack the features are 32 x 7 x 8, which the dense
    layer reads directly.

    Args:
        channels: the two convolutions' output channels.
        hidden: the dense layer's width.
        channels_last: lay the convolutions out NHWC (faster on a CPU at PPO's minibatch sizes; same model).
        compile_update: run the updates' forward and backward through ``torch.compile`` (needs a C++ compiler on
            a CPU; the first update compiles, ~30 s; at the Pokemon configs' sizes no faster than ``channels_last``
            without it: ``docs/training.md``, CPU speed).
    """

    def __init__(self, obs_shape: tuple[int, ...], num_actions: int, channels: tuple[int, int] = (16, 32),
                 hidden: int = 256, channels_last: bool = False, compile_update: bool = False):
        super().__init__(obs_shape, num_actions, torch.uint8)
        _check_pixels("pixel_cnn", self.obs_shape, 20)
        self.convs = _small_pixel_convs(self.obs_shape[0], channels)
        self._dense_and_heads(hidden, channels_last, compile_update)


class NatureCNNPolicy(_PixelPolicy):
    """The DQN "Nature" CNN (Mnih et al. 2015): 8x8/4, 4x4/2, 3x3/1 convolutions, 512 dense units.

    Args:
        hidden: the dense layer's width.
        channels_last: lay the convolutions out NHWC (faster on a CPU at PPO's minibatch sizes; same model).
        compile_update: run the updates' forward and backward through ``torch.compile`` (needs a C++ compiler on
            a CPU; the first update compiles, ~30 s; at the Pokemon configs' sizes no faster than ``channels_last``
            without it: ``docs/training.md``, CPU speed).
    """

    def __init__(self, obs_shape: tuple[int, ...], num_actions: int, hidden: int = 512, channels_last: bool = False,
                 compile_update: bool = False):
        super().__init__(obs_shape, num_actions, torch.uint8)
        _check_pixels("nature_cnn", self.obs_shape, 36)
        k = self.obs_shape[0]
        g = math.sqrt(2)
        self.convs = nn.Sequential(
            _init(nn.Conv2d(k, 32, 8, stride=4), g), nn.ReLU(),
            _init(nn.Conv2d(32, 64, 4, stride=2), g), nn.ReLU(),
            _init(nn.Conv2d(64, 64, 3, stride=1), g), nn.ReLU(),
            nn.Flatten(),
        )
        self._dense_and_heads(hidden, channels_last, compile_update)


class _ResidualBlock(nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        self.conv0 = nn.Conv2d(channels, channels, 3, padding=1)
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1)

    def forward(self, x):
        return x + self.conv1(torch.relu(self.conv0(torch.relu(x))))


class ImpalaCNNPolicy(_PixelPolicy):
    """IMPALA's residual CNN (Espeholt et al. 2018): per stage conv 3x3, max-pool 3x3/2, two residual blocks.

    Args:
        channels: each stage's channels (one stage per entry).
        hidden: the dense layer's width.
        channels_last: lay the convolutions out NHWC (same model).
        compile_update: run the updates' forward and backward through ``torch.compile`` (needs a C++ compiler on
            a CPU; the first update compiles, ~30 s; at the Pokemon configs' sizes no faster than ``channels_last``
            without it: ``docs/training.md``, CPU speed).
    """

    def __init__(self, obs_shape: tuple[int, ...], num_actions: int, channels: tuple[int, ...] = (16, 32, 32),
                 hidden: int = 256, channels_last: bool = False, compile_update: bool = False):
        super().__init__(obs_shape, num_actions, torch.uint8)
        _check_pixels("impala_cnn", self.obs_shape, 8)
        k = self.obs_shape[0]
        stages: list[nn.Module] = []
        c_in = k
        for c in channels:
            stages += [nn.Conv2d(c_in, int(c), 3, padding=1), nn.MaxPool2d(3, stride=2, padding=1),
                       _ResidualBlock(int(c)), _ResidualBlock(int(c))]
            c_in = int(c)
        # convolutions keep PyTorch's default init: orthogonal sqrt(2) gains compound through the
        # residual sums and blow up the features (and the initial logits)
        self.convs = nn.Sequential(*stages, nn.ReLU(), nn.Flatten())
        self._dense_and_heads(hidden, channels_last, compile_update)


# ---- recurrent policies ----------------------------------------------------------------------------------------
def is_recurrent(policy) -> bool:
    """Whether ``policy`` (a policy, or its class) carries a recurrent state (``RecurrentActorCritic``)."""
    return bool(getattr(policy, "recurrent", False))


class RecurrentActorCritic(ActorCritic):
    """A torso, then an LSTM whose state each env carries from step to step, then the heads (as CleanRL's
    ppo_atari_lstm and pokemonred_puffer's policy). A subclass builds the torso and calls ``_lstm_and_heads``.

    The state of N envs is one tensor ``[N, 2, layers, size]``: the LSTM's (h, c) per env, env first so that a
    subset of envs is ``state[envs]``; ``initial_state`` is zeros. ``starts`` (bool ``[N]``) marks the envs whose
    observation begins an episode (the previous step ended one, terminated or truncated): their state is zeroed
    before the step, so an episode never sees the one before it:

        (h, c) <- (1 - start) * (h, c);   (out, (h, c)) = LSTM(torso(obs), (h, c));   logits, V = heads(out)

    ``step`` is one env step of N envs (acting); ``unroll`` replays a ``[T, N]`` sequence from a saved state, the
    torso in one batch and the LSTM step by step (training: the gradient flows through the whole sequence);
    ``evaluate_sequences`` gives what the losses need from it. ``forward(obs)`` alone has no meaning here.
    """

    recurrent = True

    def _lstm_and_heads(self, features: int, size: int, layers: int) -> None:
        if int(size) < 1 or int(layers) < 1:
            raise ValueError(f"{type(self).__name__}: lstm_size and lstm_layers must be >= 1, got {size}, {layers}")
        self.lstm = nn.LSTM(int(features), int(size), int(layers))
        for name, param in self.lstm.named_parameters():   # CleanRL's: orthogonal weights (gain 1), zero biases
            if name.startswith("bias"):
                nn.init.zeros_(param)
            else:
                nn.init.orthogonal_(param, 1.0)
        self._heads(int(size))

    def initial_state(self, num_envs: int, device: torch.device | str | None = None) -> torch.Tensor:
        """Zeros ``[num_envs, 2, layers, size]``: (h, c) of every env before its first step."""
        return torch.zeros(num_envs, 2, self.lstm.num_layers, self.lstm.hidden_size, device=device)

    def forward(self, obs: torch.Tensor):
        raise TypeError(f"{type(self).__name__} is recurrent: act with step(obs, state, starts) and train with "
                        f"unroll / evaluate_sequences (the state each env carries is an input)")

    def _check_state(self, state: torch.Tensor, n: int) -> None:
        expected = (n, 2, self.lstm.num_layers, self.lstm.hidden_size)
        if tuple(state.shape) != expected:
            raise ValueError(f"{type(self).__name__}: state must have shape {list(expected)}, got {list(state.shape)}")

    def _lstm_step(self, features: torch.Tensor, state: torch.Tensor, starts: torch.Tensor | None):
        """One LSTM step: features [N, F], state [N, 2, L, H] -> (out [N, H], state after [N, 2, L, H])."""
        if starts is not None:
            state = state * (~starts).to(state.dtype)[:, None, None, None]
        h, c = state.transpose(0, 2).unbind(1)            # [L, N, H] each
        out, (h, c) = self.lstm(features.unsqueeze(0), (h.contiguous(), c.contiguous()))
        return out.squeeze(0), torch.stack((h, c), 1).transpose(0, 2)

    def step(self, obs: torch.Tensor, state: torch.Tensor, starts: torch.Tensor | None = None):
        """One env step of N envs: obs [N, ...], state [N, 2, L, H], starts bool [N] (None: no episode begins) ->
        (logits [N, A], V [N], state after the step)."""
        self.check_obs(obs)
        self._check_state(state, obs.shape[0])
        out, state = self._lstm_step(self.torso(obs), state, starts)
        return self.policy_head(out), self.value_head(out).squeeze(-1), state

    def unroll(self, obs: torch.Tensor, state: torch.Tensor, starts: torch.Tensor):
        """A [T, N] sequence from ``state`` (each env's state before step 0): obs [T, N, ...], starts bool [T, N]
        -> (logits [T, N, A], V [T, N], state after the last step)."""
        self.check_obs(obs, "T, N")
        T, N = obs.shape[:2]
        self._check_state(state, N)
        features = self.torso(obs.flatten(0, 1)).view(T, N, -1)
        outs = []
        for t in range(T):
            out, state = self._lstm_step(features[t], state, starts[t])
            outs.append(out)
        out = torch.stack(outs)
        return self.policy_head(out), self.value_head(out).squeeze(-1), state

    def evaluate_sequences(self, obs: torch.Tensor, actions: torch.Tensor, state: torch.Tensor,
                           starts: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(log pi(a|s), H(pi(.|s)), V(s)), each [T, N], of a [T, N] sequence replayed from ``state``."""
        logits, values, _ = self.unroll(obs, state, starts)
        logprob, entropy = logprob_entropy(logits.flatten(0, 1), actions.flatten())
        return logprob.view(values.shape), entropy.view(values.shape), values

    def evaluate(self, obs, actions):
        raise TypeError(f"{type(self).__name__} is recurrent: use evaluate_sequences(obs, actions, state, starts)")


class PixelLSTMPolicy(RecurrentActorCritic):
    """``PixelCNNPolicy``'s torso (8x8/4, 4x4/2 convolutions, one dense layer), then an LSTM, then the heads.

    For games where what matters left the screen (a menu closed, a door passed): the frame stack remembers
    ``stack_k`` steps, the LSTM's state the whole episode. Its state is in every checkpoint (exact resume).

    Args:
        channels: the two convolutions' output channels.
        hidden: the dense layer's width (the LSTM's input).
        lstm_size: the LSTM's state width (the heads' input).
        lstm_layers: stacked LSTM layers.
        channels_last: lay the convolutions out NHWC (same model).
    """

    def __init__(self, obs_shape: tuple[int, ...], num_actions: int, channels: tuple[int, int] = (16, 32),
                 hidden: int = 256, lstm_size: int = 128, lstm_layers: int = 1, channels_last: bool = False):
        super().__init__(obs_shape, num_actions, torch.uint8)
        _check_pixels("pixel_lstm", self.obs_shape, 20)
        self.convs = _small_pixel_convs(self.obs_shape[0], channels)
        self.dense = _dense_after(self.convs, self.obs_shape, hidden)
        self._lstm_and_heads(hidden, lstm_size, lstm_layers)
        self.channels_last = bool(channels_last)
        _to_channels_last(self.convs, self.channels_last)
        self._inputs = ReusedTensors()

    def torso(self, obs):
        return self.dense(self.convs(_pixel_input(obs, self.channels_last, self._inputs)))


class MLPLSTMPolicy(RecurrentActorCritic):
    """``MLPPolicy``'s tanh layers, then an LSTM, then the heads: the recurrent baseline for float observations.

    Args:
        hidden: the hidden layers' widths (the last is the LSTM's input).
        lstm_size: the LSTM's state width.
        lstm_layers: stacked LSTM layers.
    """

    def __init__(self, obs_shape: tuple[int, ...], num_actions: int, hidden: tuple[int, ...] = (128,),
                 lstm_size: int = 64, lstm_layers: int = 1):
        super().__init__(obs_shape, num_actions, torch.float32)
        self.body, width = _tanh_mlp(math.prod(self.obs_shape), hidden)
        self._lstm_and_heads(width, lstm_size, lstm_layers)

    def torso(self, obs):
        return self.body(obs)


class PixelVectorPolicy(ActorCritic):
    """Pixels and a vector: ``PixelCNNPolicy``'s convolutions over the frames beside an MLP over the vector that a
    GameBoyEnv's ``obs`` adds (``envs/observations.py``: RAM fields, visited cells), their features concatenated
    into one dense layer. The observation is ``[1 + K, 72, 80]``: ``obs[:, 0]`` the data plane, its first
    ``vector_size`` bytes the vector (scaled by 1/255), then the K frames (shades 0..3, scaled by 1/3).

    Args:
        vector_size: the vector's length, given by the module from the env (``GameBoyEnv.obs_vector``): leave it
            out of configs.
        channels: the two convolutions' output channels.
        vector_hidden: the vector MLP's layers' widths (ReLU).
        hidden: the dense layer's width.
        vector_bits: each byte's 8 bits (0 or 1) beside its scaled value, as the vector MLP's input. Scaled by
            1/255, a flag byte (orchard's beetle directions: 1, 2, 4, 8) or a few pixels' difference in a
            coordinate moves the input by 0.004-0.03: too little for the MLP to draw the narrow windows a
            timing decision needs (when a patrol has just passed); the bits make them plain.
        channels_last: lay the convolutions out NHWC (faster on a CPU at PPO's minibatch sizes; same model).
    """

    def __init__(self, obs_shape: tuple[int, ...], num_actions: int, vector_size: int | None = None,
                 channels: tuple[int, int] = (16, 32), vector_hidden: tuple[int, ...] = (64,), hidden: int = 256,
                 vector_bits: bool = False, channels_last: bool = False):
        super().__init__(obs_shape, num_actions, torch.uint8)
        _pixel_vector_layers(self, "pixel_vector", vector_size, channels, vector_hidden, hidden, vector_bits,
                             channels_last)
        self._heads(int(hidden))

    def torso(self, obs):
        return _pixel_vector_features(self, obs)


def _pixel_vector_layers(policy: ActorCritic, name: str, vector_size, channels, vector_hidden, hidden,
                         vector_bits: bool = False, channels_last: bool = False) -> None:
    """PixelVectorPolicy's layers (``convs``, ``vector_mlp``, ``dense``) on ``policy``: shared with its LSTM form."""
    _check_pixels(name, policy.obs_shape, 20)
    plane = policy.obs_shape[1] * policy.obs_shape[2]
    if policy.obs_shape[0] < 2 or isinstance(vector_size, bool) or not isinstance(vector_size, int) or \
            not 1 <= vector_size <= plane:
        raise ValueError(f"{name} policy: needs an observation with a data plane in front of the frames "
                         f"(GameBoyEnv's obs: {{ram: [...], visited: {{...}}}}) and its vector_size in "
                         f"1..{plane}, got obs_shape {list(policy.obs_shape)} and vector_size {vector_size!r}")
    if not isinstance(vector_bits, bool):
        raise ValueError(f"{name} policy: vector_bits must be true or false, got {vector_bits!r}")
    policy.vector_size, policy.vector_bits = vector_size, vector_bits
    policy.register_buffer("_bit_shifts", torch.arange(8, dtype=torch.uint8), persistent=False)
    policy.channels_last = bool(channels_last)
    policy.convs = _to_channels_last(_small_pixel_convs(policy.obs_shape[0] - 1, channels), policy.channels_last)
    g = math.sqrt(2)
    layers: list[nn.Module] = []
    width = vector_size * (9 if vector_bits else 1)
    for h in vector_hidden:
        layers += [_init(nn.Linear(width, int(h)), g), nn.ReLU()]
        width = int(h)
    policy.vector_mlp = nn.Sequential(*layers)
    policy.dense = _dense_after(policy.convs, (policy.obs_shape[0] - 1, *policy.obs_shape[1:]), hidden, width)
    policy._inputs = ReusedTensors()


def _pixel_vector_features(policy: ActorCritic, obs: torch.Tensor) -> torch.Tensor:
    frames = _pixel_input(obs[:, 1:], policy.channels_last, policy._inputs)
    raw = obs[:, 0].reshape(obs.shape[0], -1)[:, :policy.vector_size]
    vector = raw.float() / 255.0
    if policy.vector_bits:   # bit i of byte j at input vector_size + 8 j + i
        bits = (raw[:, :, None] >> policy._bit_shifts) & 1
        vector = torch.cat([vector, bits.reshape(raw.shape[0], -1).float()], 1)
    return policy.dense(torch.cat([policy.convs(frames), policy.vector_mlp(vector)], 1))


class PixelVectorLSTMPolicy(RecurrentActorCritic):
    """``PixelVectorPolicy``'s torso, then an LSTM, then the heads: structured observations (the vector) and memory
    (the LSTM's state) together. Args: ``PixelVectorPolicy``'s, and ``PixelLSTMPolicy``'s ``lstm_size``,
    ``lstm_layers``."""

    def __init__(self, obs_shape: tuple[int, ...], num_actions: int, vector_size: int | None = None,
                 channels: tuple[int, int] = (16, 32), vector_hidden: tuple[int, ...] = (64,), hidden: int = 256,
                 lstm_size: int = 128, lstm_layers: int = 1, vector_bits: bool = False, channels_last: bool = False):
        super().__init__(obs_shape, num_actions, torch.uint8)
        _pixel_vector_layers(self, "pixel_vector_lstm", vector_size, channels, vector_hidden, hidden, vector_bits,
                             channels_last)
        self._lstm_and_heads(int(hidden), lstm_size, lstm_layers)

    def torso(self, obs):
        return _pixel_vector_features(self, obs)


POLICY_REGISTRY: dict[str, Callable[..., ActorCritic]] = {
    "mlp": MLPPolicy,
    "cnn": GridCNNPolicy,
    "pixel_cnn": PixelCNNPolicy,
    "nature_cnn": NatureCNNPolicy,
    "impala_cnn": ImpalaCNNPolicy,
    "pixel_lstm": PixelLSTMPolicy,
    "mlp_lstm": MLPLSTMPolicy,
}


def make_policy(name: str, obs_shape: tuple[int, ...], num_actions: int, **kwargs) -> ActorCritic:
    """Build a registered policy by name; unknown names list the known ones."""
    if name not in POLICY_REGISTRY:
        raise ValueError(f"unknown policy {name!r}; expected one of {sorted(POLICY_REGISTRY)}")
    if not isinstance(num_actions, int) or num_actions < 1:
        raise ValueError(f"make_policy: num_actions must be an int >= 1, got {num_actions!r}")
    return POLICY_REGISTRY[name](tuple(obs_shape), num_actions, **kwargs)
