"""Streaming data: the env stepped by the module's current policy, as iterables Lightning can consume.

``RolloutStream`` is an ``IterableDataset`` used with ``num_workers=0`` (the env and
the policy live in the training process, on the training device). Each item is one
batch for one ``training_step``:

* A2C (``rollout_steps=None``): ``steps_per_batch`` consecutive transitions of all N envs
  (the A2C module's ``update_every``), flattened to ``steps_per_batch * N`` rows
  ``{obs, actions, rewards, final_obs, terminated, truncated}``. Each row is one T = 1
  transition with its own TD(0) target. All of them are acted with the same parameters:
  the optimizer steps only between batches, so acting the window here and updating once
  is the same computation as one batch per env step with gradient accumulation, and it
  pays Lightning's per-batch bookkeeping once per update instead of once per env step.
* PPO (``rollout_steps=T``): one batch per rollout. A T-step rollout is collected, GAE
  advantages and returns are computed with ``rl.gae`` (``next_values = V(final_obs)``),
  and the flattened T*N samples are yielded as one batch ``{obs, actions, logprobs,
  values, advantages, returns}``. ``PPOModule.training_step`` runs the epochs x
  minibatches update loop on it (shuffling with this stream's ``generator``), so
  Lightning's per-batch work is paid once per rollout, not once per minibatch.

Why the stream reports a length: Lightning pre-fetches one batch ahead from an
iterable without ``__len__``; for on-policy RL that would act with parameters one
update old. With a length Lightning fetches each batch only when the previous
``training_step`` has finished, so every batch comes from the current policy.

Hot path: no host synchronisation per env step. Actions are sampled on device
(Gumbel-max with the stream's own generator), episode statistics are summed on
device in one small vector and read once per log record (``pop_stats``).

The module hands the stream to Lightning as the train "dataloader" itself (Lightning
accepts any iterable). That is ``DataLoader(stream, batch_size=None, num_workers=0)``
without the DataLoader layer: the batches are already on the device, there is nothing
to collate or to fetch in parallel, and its per-batch bookkeeping is measurable next
to a ~1 ms env step (tools/bench_trainer.py).

The stream is stateful (``state_dict``/``load_state_dict``: counters, sampling
RNG, env state, current observation). Lightning's fit loop saves the state of every
train loader that has these methods in each checkpoint (``loops.fit_loop.state_dict
["combined_loader"]``) and restores it before the first batch of a resumed run.
"""

from __future__ import annotations

import time
from typing import Any, Iterator

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import IterableDataset

__all__ = ["RolloutStream", "EvalEpisodes", "EpisodeStats", "sample_actions"]

_KNOWN_INFO = {"final_obs", "episode_return", "episode_length", "success"}
UNBOUNDED = 1 << 40  # "length" of a stream with no step budget


def sample_actions(logits: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """Sample a ~ softmax(logits) per row by Gumbel-max: argmax(logits + Gumbel noise). int64 [N]."""
    u = torch.rand(logits.shape, generator=generator, device=logits.device, dtype=logits.dtype)
    gumbel = -torch.log(-torch.log(u.clamp_(min=1e-20)))
    return (logits + gumbel).argmax(-1)


class EpisodeStats:
    """Per-env-step and per-episode sums kept on device; ``pop`` reads them once and starts a new interval.

    Sums are over env-steps (N per step): reward, done (terminated | truncated), truncated;
    and over episodes that ended: return, length, success and any extra per-episode
    integer/float counters the env reports in ``info`` (e.g. ForagingEnv's
    ``food_eaten``/``poison_eaten``), which the env sets to 0 where nothing ended.

    ``add`` only keeps references to the step's tensors (no tensor op on the hot path); they
    are reduced in one batch of ops every ``fold_every`` steps and at ``pop``.
    """

    def __init__(self, fold_every: int = 256) -> None:
        self.extra_keys: list[str] | None = None
        self.sums: torch.Tensor | None = None
        self.env_steps = 0
        self.fold_every = fold_every
        self._pending: list[tuple] = []

    def add(self, rewards, terminated, truncated, info) -> None:
        if self.extra_keys is None:
            n = rewards.shape[0]
            self.extra_keys = sorted(k for k, v in info.items() if k not in _KNOWN_INFO and isinstance(v, torch.Tensor)
                                     and v.shape == (n,))
        self._pending.append((rewards, terminated, truncated, info["episode_return"], info["episode_length"],
                              info["success"], *(info[k] for k in self.extra_keys)))
        self.env_steps += rewards.shape[0]
        if len(self._pending) >= self.fold_every:
            self._fold()

    def _fold(self) -> None:
        if not self._pending:
            return
        cols = list(zip(*self._pending))
        self._pending = []
        stacked = [torch.stack(c) for c in cols]  # [steps, N] each
        rew, term, trunc = stacked[:3]
        rows = [rew.float().sum(), (term | trunc).sum(), trunc.sum()] + [x.sum() for x in stacked[3:]]
        step_sums = torch.stack([r.float() for r in rows])
        self.sums = step_sums if self.sums is None else self.sums + step_sums

    def pop(self) -> dict[str, float | None]:
        """Means over the interval since the last pop (None where undefined), with one host read."""
        self._fold()
        steps, self.env_steps = self.env_steps, 0
        if self.sums is None or steps == 0:
            return {"reward_mean": None, "done_rate": None, "trunc_rate": None, "episodes": 0,
                    "episode_return_mean": None, "episode_length_mean": None, "success_rate": None}
        vals = self.sums.tolist()
        self.sums = None
        reward, done, trunc, ret, length, success = vals[:6]
        episodes = int(round(done))
        out: dict[str, float | None] = {
            "reward_mean": reward / steps, "done_rate": done / steps, "trunc_rate": trunc / steps,
            "episodes": episodes,
            "episode_return_mean": ret / episodes if episodes else None,
            "episode_length_mean": length / episodes if episodes else None,
            "success_rate": success / episodes if episodes else None,
        }
        for k, v in zip(self.extra_keys or [], vals[6:]):
            out[f"episode_{k}_mean"] = v / episodes if episodes else None
        return out


class RolloutStream(IterableDataset):
    """Acts with ``policy`` in ``env`` and yields one training batch per ``training_step`` (see module docstring).

    Args:
        env: a vector env following the protocol in ``gbx_lightning.envs``.
        policy: actor-critic ``nn.Module`` (``forward(obs) -> (logits, value)``), the module's own.
        seed: seeds the first ``env.reset`` and the action-sampling generator.
        num_batches: batches to report as length (one Lightning epoch); ``None`` = unbounded.
        steps_per_batch: A2C mode: env steps (of all N envs) per batch.
        rollout_steps, gamma, gae_lambda: PPO mode when ``rollout_steps`` is set (one batch per rollout).
    """

    def __init__(self, env, policy: nn.Module, seed: int, num_batches: int | None = None, *,
                 steps_per_batch: int = 1, rollout_steps: int | None = None, gamma: float = 0.99, gae_lambda: float = 0.95):
        super().__init__()
        self.env = env
        self.policy = policy
        self.seed = int(seed)
        self.num_batches = num_batches
        self.steps_per_batch = int(steps_per_batch)
        if self.steps_per_batch < 1:
            raise ValueError(f"RolloutStream: steps_per_batch must be an int >= 1, got {steps_per_batch!r}")
        self.rollout_steps = rollout_steps
        self.gamma = float(gamma)
        self.gae_lambda = float(gae_lambda)
        self.device = torch.device(env.device)
        # action sampling, and PPO's minibatch shuffles (PPOModule.training_step) in the same sequence
        self.generator = torch.Generator(device=self.device)
        self.generator.manual_seed(self.seed)
        self.env_steps = 0  # total env transitions (all N envs count), continues across resume
        self.iterations = 0  # PPO rollouts collected
        self.obs: torch.Tensor | None = None
        self.stats = EpisodeStats()
        self.time_act_s = 0.0  # policy forward + sampling (+ V(final_obs) and GAE for PPO)
        self.time_env_s = 0.0  # env.step
        self._restored: dict[str, Any] | None = None

    # ---- Lightning / DataLoader protocol -------------------------------------------------------
    def __len__(self) -> int:
        return UNBOUNDED if self.num_batches is None else int(self.num_batches)

    def __iter__(self) -> Iterator[dict[str, torch.Tensor]]:
        self._start()
        if self.rollout_steps is None:
            return self._transitions()
        return self._rollouts()

    def state_dict(self) -> dict[str, Any]:
        return {
            "env_steps": self.env_steps,
            "iterations": self.iterations,
            "generator": self.generator.get_state(),
            "env": self.env.state_dict(),
            "obs": None if self.obs is None else self.obs.detach().cpu(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore counters now; env, RNG and observation are applied when iteration starts."""
        self.env_steps = int(state["env_steps"])
        self.iterations = int(state["iterations"])
        self._restored = state

    # ---- internals -------------------------------------------------------------------------------
    def _start(self) -> None:
        if self._restored is not None:
            state, self._restored = self._restored, None
            self.generator.set_state(state["generator"])
            self.env.load_state_dict(state["env"])
            if state["obs"] is not None:
                self.obs = state["obs"].to(self.device)
        if self.obs is None:
            self.obs = self.env.reset(seed=self.seed)

    @torch.no_grad()
    def _act(self, obs: torch.Tensor, logprobs: bool = True):
        logits, values = self.policy(obs)
        actions = sample_actions(logits, self.generator)
        if not logprobs:
            return actions, None, values
        return actions, F.log_softmax(logits, -1).gather(1, actions.unsqueeze(1)).squeeze(1), values

    def _env_step(self, actions: torch.Tensor):
        t = time.perf_counter()
        out = self.env.step(actions.to(torch.int32))
        self.time_env_s += time.perf_counter() - t
        obs, rewards, terminated, truncated, info = out
        self.stats.add(rewards, terminated, truncated, info)
        self.env_steps += rewards.shape[0]
        return out

    @torch.no_grad()
    def _collect(self, steps: int, logprobs: bool, flat: bool = False) -> dict[str, torch.Tensor]:
        """Act and step ``steps`` times with the current policy; each field stacked once to [steps, N, ...]
        (``flat``: concatenated to [steps * N, ...] instead, the same rows in the same order)."""
        keys = ("obs", "final_obs", "actions", "rewards", "terminated", "truncated")
        if logprobs:
            keys += ("logprobs", "values")
        # per-step tensors are kept by reference and stacked once: one copy per field per batch
        cols: dict[str, list[torch.Tensor]] = {k: [] for k in keys}
        for _ in range(steps):
            t0 = time.perf_counter()
            obs = self.obs
            actions, lp, values = self._act(obs, logprobs=logprobs)
            self.time_act_s += time.perf_counter() - t0
            next_obs, rewards, terminated, truncated, info = self._env_step(actions)
            if next_obs.data_ptr() == obs.data_ptr() or info["final_obs"].data_ptr() == obs.data_ptr():
                raise RuntimeError("env.step returned an observation in the same memory as the previous one; "
                                   "RolloutStream keeps observations by reference until the batch is built and "
                                   "needs fresh tensors from step() (clone inside the env)")
            step = {"obs": obs, "final_obs": info["final_obs"], "actions": actions, "rewards": rewards,
                    "terminated": terminated, "truncated": truncated, "logprobs": lp, "values": values}
            for k in keys:
                cols[k].append(step[k])
            self.obs = next_obs
        join = torch.cat if flat else torch.stack
        return {k: join(v) for k, v in cols.items()}

    def _transitions(self) -> Iterator[dict[str, torch.Tensor]]:
        """A2C: ``steps_per_batch`` transitions of all N envs per batch, rows flattened to [steps_per_batch * N]."""
        batch = None
        while True:
            # rebinding keeps the previous batch alive until the next one is built, as a plain loop's
            # `batch = collect()` does, so both free batch memory in the same order
            batch = self._collect(self.steps_per_batch, logprobs=False, flat=True)
            yield batch

    @torch.no_grad()
    def _collect_rollout(self) -> dict[str, torch.Tensor]:
        from gbx_lightning.rl import gae

        T, n = self.rollout_steps, self.env.num_envs
        buf = self._collect(T, logprobs=True)  # [T, N, ...]
        t0 = time.perf_counter()
        # V(s') for every transition in one batched forward: bootstraps truncations and the rollout's end.
        _, next_values = self.policy(buf["final_obs"].flatten(0, 1))
        advantages, returns = gae(buf["rewards"], buf["values"], next_values.view(T, n), buf["terminated"],
                                  buf["truncated"], self.gamma, self.gae_lambda)
        self.time_act_s += time.perf_counter() - t0
        self.iterations += 1
        return {"obs": buf["obs"].flatten(0, 1), "actions": buf["actions"].flatten(),
                "logprobs": buf["logprobs"].flatten(), "values": buf["values"].flatten(),
                "advantages": advantages.flatten(), "returns": returns.flatten()}

    def _rollouts(self) -> Iterator[dict[str, torch.Tensor]]:
        """PPO: one T-step rollout of all N envs per batch, T*N flattened samples with GAE advantages/returns."""
        batch = None
        while True:
            batch = self._collect_rollout()  # the previous rollout is freed after this one is built (see above)
            yield batch


class EvalEpisodes(IterableDataset):
    """Runs exactly one episode in each of the env's N envs (N = number of evaluation episodes).

    Yields a single batch of per-episode results ``{episode_return, episode_length, success,
    finished, <extra per-episode counters>}`` (each [N]). Every evaluation re-seeds the env and
    the sampling generator with ``seed``, so evaluations of different checkpoints see the same
    episode starts. Envs that have not finished within ``max_steps`` are marked ``finished=False``.

    With ``record_clip`` and a pixel env (uint8 observations [K, H, W]) the batch also holds
    ``clip``: env 0's screens from its first observation to its last (the newest frame of each
    stack, the terminal screen included), uint8 [T, H, W], for a video of the agent.
    """

    def __init__(self, env, policy: nn.Module, seed: int, greedy: bool = False, max_steps: int = 100_000,
                 check_every: int = 16, record_clip: bool = False):
        super().__init__()
        self.env, self.policy, self.seed = env, policy, int(seed)
        self.greedy, self.max_steps, self.check_every = bool(greedy), int(max_steps), int(check_every)
        self.record_clip = bool(record_clip)

    def __len__(self) -> int:
        return 1

    @torch.no_grad()
    def __iter__(self):
        env = self.env
        device = torch.device(env.device)
        gen = torch.Generator(device=device)
        gen.manual_seed(self.seed)
        obs = env.reset(seed=self.seed)
        n = env.num_envs
        finished = torch.zeros(n, dtype=torch.bool, device=device)
        results: dict[str, torch.Tensor] = {}
        pixels = self.record_clip and obs.dtype == torch.uint8 and obs.dim() == 4
        clip = [obs[0, -1].clone()] if pixels else []
        for step in range(self.max_steps):
            logits, _ = self.policy(obs)
            actions = logits.argmax(-1) if self.greedy else sample_actions(logits, gen)
            obs, _, terminated, truncated, info = env.step(actions.to(torch.int32))
            if pixels and not bool(finished[0]):  # one host read per step, only while recording a clip
                clip.append(info["final_obs"][0, -1].clone())
            ended = (terminated | truncated) & ~finished
            if not results:
                keys = ["episode_return", "episode_length", "success"] + sorted(
                    k for k, v in info.items() if k not in _KNOWN_INFO and isinstance(v, torch.Tensor)
                    and v.shape == (n,))
                results = {k: torch.zeros_like(info[k]) for k in keys}
            for k, v in results.items():
                results[k] = torch.where(ended, info[k], v)
            finished |= ended
            # a host read every few steps only: evaluation is off the training hot path
            if (step + 1) % self.check_every == 0 and bool(finished.all()):
                break
        results["finished"] = finished
        if pixels:
            results["clip"] = torch.stack(clip)
        yield results

