"""Streaming data: the env stepped by the module's current policy, as iterables Lightning can consume.

``RolloutStream`` is an ``IterableDataset`` used with ``num_workers=0`` (the env and the policy
live in the training process, on the training device). Each item is one rollout of
``rollout_steps`` (T) env steps of all N envs, acted with the policy as it is when the rollout
starts, stacked time-major as CleanRL stores them, one training batch for one ``training_step``:

    obs [T, N, *obs_shape]   actions [T, N]   logprobs [T, N]   values [T, N]
    rewards [T, N]   terminated [T, N]   truncated [T, N]   final_obs [T, N, *obs_shape]

``final_obs[t]`` is the true s' of step t (``info["final_obs"]``), what value targets bootstrap
from. With a recurrent policy (``models.RecurrentActorCritic``) the stream carries each env's state from step
to step and across rollouts (zeroed where an episode begins), and a rollout also holds

    starts [T, N]   (step t's observation begins an episode: the state was zeroed before it)
    policy_states [T + 1, N, 2, layers, size]   (the state before step 0, then after each step t)

so a learner replays any env's sequence from ``policy_states[0]`` (PPO's env-wise minibatches) and bootstraps
V(final_obs[t]) from ``policy_states[t + 1]``. Every algorithm takes the same rollouts (``gbx_lightning.algos``): A2C (T = ``update_every``)
computes TD(0) targets row by row; PPO (T = ``rollout_steps``) bootstraps, computes GAE and runs
its epochs x minibatches loop; REINFORCE computes Monte-Carlo returns inside the rollout.

Why the stream reports a length: Lightning pre-fetches one batch ahead from an iterable without
``__len__`` (to know which batch is the last); for on-policy RL that would act with parameters
one update old. With a length Lightning fetches each batch only when the previous
``training_step`` has finished, so every rollout comes from the current policy
(tests/test_trainer.py checks it, so a Lightning upgrade that changes this fails loudly).

Hot path: no host synchronisation per env step. Actions are sampled on device (Gumbel-max with
the stream's own generator); episode statistics are summed on device in one small vector and
read once per log record (``IntervalStats.pop``).

The module hands the stream to Lightning as the train "dataloader" itself (Lightning accepts any
iterable). That is ``DataLoader(stream, batch_size=None, num_workers=0)`` without the DataLoader
layer: the batches are already on the device, there is nothing to collate or to fetch in
parallel.

The stream is stateful (``state_dict``/``load_state_dict``: counters, sampling RNG, env state,
current observation). Lightning's fit loop saves the state of every train loader that has these
methods in each checkpoint (``loops.fit_loop.state_dict["combined_loader"]``) and restores it
before the first batch of a resumed run. A checkpoint that leaves the env state out (over the size cap)
still keeps the env's reward statistics (``reward_stats``: e.g. ``return_norm``'s running variance,
``envs/reward_transforms.py``). Under DDP every rank has a stream of its own envs, and
Lightning keeps rank 0's loader state only: ``state_dict`` gathers every rank's on rank 0 and each
rank takes its own back (``RolloutStream.state_dict``).
"""

from __future__ import annotations

import time
from typing import Any, Callable, Iterator

import torch
from torch import nn
from torch.utils.data import IterableDataset

from gbx_lightning.metrics import DeviceSums
from gbx_lightning.models import is_recurrent, logprob_entropy, sample_actions

__all__ = ["RolloutStream", "EvalEpisodes", "IntervalStats", "sample_actions", "saved_stream_state"]

_KNOWN_INFO = {"final_obs", "episode_return", "episode_length", "success"}
# per-episode extras an evaluation leaves out: the return of the rewards trained on (normalised by the eval env's
# own running statistic) says nothing about the policy; evaluation reports game returns
_NOT_EVALUATED = {"trained_return"}
UNBOUNDED = 1 << 40  # "length" of a stream with no step budget


class IntervalStats(DeviceSums):
    """Per-env-step and per-episode sums over a log interval, kept on device; ``pop`` reads them once.

    (Not to be confused with ``envs.EpisodeStats``, an env's running return and length per env.)
    Sums are over env-steps (N per step): reward, done (terminated | truncated), truncated;
    and over episodes that ended: return, length, success and any extra per-episode
    integer/float counters the env reports in ``info`` (e.g. ForagingEnv's
    ``food_eaten``/``poison_eaten``), which the env sets to 0 where nothing ended.
    Accumulated as ``metrics.DeviceSums`` accumulates the module's loss terms: references only per
    step, reduced every ``fold_every`` steps and at ``pop``, the unfolded steps kept as they are in
    ``state_dict`` (exact resume).
    """

    def __init__(self, fold_every: int = 256) -> None:
        super().__init__()
        self.fold_every = fold_every
        self.extra_keys: list[str] | None = None
        self.env_steps = 0   # since the last pop

    def add(self, rewards, terminated, truncated, info) -> None:
        if self.extra_keys is None:
            n = rewards.shape[0]
            self.extra_keys = sorted(k for k, v in info.items() if k not in _KNOWN_INFO and isinstance(v, torch.Tensor)
                                     and v.shape == (n,))
        self.env_steps += rewards.shape[0]
        super().add(rewards, terminated, truncated, info["episode_return"], info["episode_length"], info["success"],
                    *(info[k] for k in self.extra_keys))

    def fold_columns(self, columns: list[torch.Tensor]) -> torch.Tensor:
        rew, term, trunc = columns[:3]   # [steps, N] each
        sums = [rew.float().sum(), (term | trunc).sum(), trunc.sum()] + [x.sum() for x in columns[3:]]
        return torch.stack([s.float() for s in sums])

    def state_dict(self) -> dict[str, Any]:
        return {**super().state_dict(), "extra_keys": self.extra_keys, "env_steps": self.env_steps}

    def load_state_dict(self, state: dict[str, Any], device: torch.device) -> None:
        super().load_state_dict(state, device)
        self.extra_keys, self.env_steps = state["extra_keys"], int(state["env_steps"])

    def pop(self, sum_over_ranks: Callable[[torch.Tensor], torch.Tensor] | None = None) -> dict[str, float | None]:
        """Means over the interval since the last pop (None where undefined), with one host read.

        ``sum_over_ranks`` (DDP: every process calls ``pop`` at the same step) sums the env-step count and the
        sums over the processes before the means are taken, so the means are over every rank's env steps and
        episodes, not rank 0's.
        """
        vals = self.take()
        steps, self.env_steps = self.env_steps, 0
        if vals is None or steps == 0:
            return {"reward_mean": None, "done_rate": None, "trunc_rate": None, "episodes": 0,
                    "episode_return_mean": None, "episode_length_mean": None, "success_rate": None}
        if sum_over_ranks is not None:
            vals = sum_over_ranks(torch.cat([vals, vals.new_tensor([steps])]))  # a fresh tensor: reduced in place
        vals = vals.tolist()
        if sum_over_ranks is not None:
            steps = int(round(vals.pop()))
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


def saved_stream_state(checkpoint: dict) -> dict:
    """The stream's ``state_dict`` in a fit checkpoint (its ``env`` state, counters, RNG): where Lightning's fit loop
    keeps it (module docstring). KeyError, IndexError or TypeError where the checkpoint holds none."""
    return checkpoint["loops"]["fit_loop"]["state_dict"]["combined_loader"][0]


def _tensors(obj) -> Iterator[torch.Tensor]:
    if isinstance(obj, torch.Tensor):
        yield obj
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from _tensors(v)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            yield from _tensors(v)


class RolloutStream(IterableDataset):
    """Acts with ``policy`` in ``env`` and yields one ``[T, N]`` rollout per ``training_step`` (module docstring).

    Args:
        env: a vector env following the protocol in ``gbx_lightning.envs``.
        policy: actor-critic ``nn.Module`` (``forward(obs) -> (logits, value)``), the module's own.
        seed: seeds the first ``env.reset`` and the action-sampling generator.
        num_batches: rollouts to report as length (one Lightning epoch); ``None`` = unbounded.
        rollout_steps: T, env steps of all N envs per rollout.
        env_state_max_bytes: env state larger than this is left out of ``state_dict`` (a resume then restarts
            the envs from their reset states, ``env_state_plan`` says so); None: no limit.
        rank, world_size: this process's global rank and the number of processes (DDP); each process has a
            stream of its own envs. ``state_dict`` then holds every rank's state (see there).
    """

    def __init__(self, env, policy: nn.Module, seed: int, num_batches: int | None = None, rollout_steps: int = 1,
                 env_state_max_bytes: int | None = None, rank: int = 0, world_size: int = 1):
        super().__init__()
        if isinstance(rollout_steps, bool) or not isinstance(rollout_steps, int) or rollout_steps < 1:
            raise ValueError(f"RolloutStream: rollout_steps must be an int >= 1, got {rollout_steps!r}")
        if not 0 <= rank < world_size:
            raise ValueError(f"RolloutStream: rank must be in [0, world_size={world_size}), got {rank!r}")
        self.rank, self.world_size = int(rank), int(world_size)
        self.env = env
        self.policy = policy
        self.seed = int(seed)
        self.num_batches = num_batches
        self.rollout_steps = rollout_steps
        self.device = torch.device(env.device)
        # action sampling, and PPO's minibatch shuffles (PPOModule.training_step) in the same sequence
        self.generator = torch.Generator(device=self.device)
        self.generator.manual_seed(self.seed)
        self.env_steps = 0  # total env transitions (all N envs count), continues across resume
        self.iterations = 0  # rollouts collected
        self.obs: torch.Tensor | None = None
        # a recurrent policy's state [N, ...] and which envs begin an episode at the next step (bool [N])
        self.recurrent = is_recurrent(policy)
        self.policy_state: torch.Tensor | None = None
        self.starts: torch.Tensor | None = None
        self.stats = IntervalStats()
        self.time_act_s = 0.0  # policy forward + sampling
        self.time_env_s = 0.0  # env.step
        self._restored: dict[str, Any] | None = None
        self.env_state_max_bytes = env_state_max_bytes

    # ---- Lightning / DataLoader protocol -------------------------------------------------------
    def __len__(self) -> int:
        return UNBOUNDED if self.num_batches is None else int(self.num_batches)

    def __iter__(self) -> Iterator[dict[str, torch.Tensor]]:
        self._start()
        batch = None
        while True:
            # rebinding keeps the previous rollout alive until the next one is built, as a plain loop's
            # `batch = collect()` does, so both free batch memory in the same order
            batch = self.collect()
            yield batch

    def env_state_plan(self) -> dict[str, Any]:
        """What ``state_dict`` does with the env: its state's size and whether it is saved (under the cap)."""
        nbytes = getattr(self.env, "state_nbytes", None)
        if nbytes is None:   # an env that cannot tell: measure its state
            nbytes = sum(t.numel() * t.element_size() for t in _tensors(self.env.state_dict()))
        if not self._env_observes() and self.obs is not None:
            nbytes += self.obs.numel() * self.obs.element_size()
        saved = self.env_state_max_bytes is None or nbytes <= self.env_state_max_bytes
        return {"saved": bool(saved), "bytes": int(nbytes), "num_envs": int(self.env.num_envs),
                "max_bytes": self.env_state_max_bytes}

    def _reward_pipeline(self):
        return getattr(self.env, "reward_pipeline", None)

    def _env_observes(self) -> bool:
        # an env with observe() gives the current observation back after load_state_dict: not stored twice
        return callable(getattr(self.env, "observe", None))

    def state_dict(self) -> dict[str, Any]:
        """This stream's counters, RNG, env and observation; under DDP, every rank's, gathered on rank 0.

        Lightning saves the train loader's state as rank 0 has it (only rank 0 writes the checkpoint), so
        with ``world_size > 1`` this is a collective (Lightning's checkpointing runs on every rank):
        ``{"world_size": W, "ranks": [state of rank 0, ..., rank W-1]}`` on rank 0, and each rank takes
        its own entry back in ``load_state_dict``.
        """
        if self._restored is not None:   # asked again before iteration applied a restore: that state, unchanged
            own = dict(self._restored)
        else:
            plan = self.env_state_plan()
            keep_obs = plan["saved"] and not self._env_observes() and self.obs is not None
            own = {
                "env_steps": self.env_steps,
                "iterations": self.iterations,
                "generator": self.generator.get_state(),
                "env": self.env.state_dict() if plan["saved"] else None,
                # envs left out: their reward pipeline's running statistics are still kept (envs/reward_transforms.py)
                "reward_stats": None if plan["saved"] or self._reward_pipeline() is None
                else self._reward_pipeline().state_dict(per_env=False),
                "obs": self.obs.detach().cpu() if keep_obs else None,
                # a recurrent policy's state goes with the envs it belongs to (reset with them when they are left out)
                "policy_state": (self.policy_state.cpu(), self.starts.cpu())
                if plan["saved"] and self.policy_state is not None else None,
                "env_state": plan,
                "stats": self.stats.state_dict(),
            }
        if self.world_size == 1:
            return own
        import torch.distributed as dist
        from lightning_utilities import apply_to_collection

        own = apply_to_collection(own, torch.Tensor, lambda t: t.cpu())  # pickled to rank 0: no device tensors
        states = [None] * self.world_size if self.rank == 0 else None
        dist.gather_object(own, states, dst=0)
        return {"world_size": self.world_size, "ranks": states}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore counters now; env, RNG and observation are applied when iteration starts. A DDP state
        (``ranks``) must come from as many processes as there are now; each rank takes its own."""
        saved = int(state.get("world_size", 1))
        if saved != self.world_size:
            raise ValueError(f"RolloutStream.load_state_dict: the state was saved by {saved} process(es), this run "
                             f"has {self.world_size}; resume with the same number of processes")
        if "ranks" in state:
            state = state["ranks"][self.rank]
        self.env_steps = int(state["env_steps"])
        self.iterations = int(state["iterations"])
        self._restored = state

    # ---- internals -------------------------------------------------------------------------------
    def _start(self) -> None:
        if self._restored is not None:
            state, self._restored = self._restored, None
            self.policy_state = self.starts = None   # the checkpoint's, below, or zeros with the envs' reset
            self.generator.set_state(state["generator"])
            if state.get("stats") is not None:
                self.stats.load_state_dict(state["stats"], self.device)
            if state["env"] is None:   # left out (over the size cap): the envs restart from their reset states,
                # seeded by the run seed and the rollouts done, so they do not replay the run's first episodes
                self.obs = self.env.reset(seed=(self.seed * 1_000_003 + self.iterations) % (1 << 31))
                if state.get("reward_stats") is not None and self._reward_pipeline() is not None:
                    self._reward_pipeline().load_state_dict(state["reward_stats"])
            else:
                self.env.load_state_dict(state["env"])
                self.obs = state["obs"].to(self.device) if state["obs"] is not None else self.env.observe()
                if self.recurrent and state.get("policy_state") is not None:
                    self.policy_state, self.starts = (t.to(self.device) for t in state["policy_state"])
        if self.obs is None:
            self.obs = self.env.reset(seed=self.seed)
        if self.recurrent and self.policy_state is None:   # every env begins an episode, from a zero state
            self.policy_state = self.policy.initial_state(self.env.num_envs, self.device)
            self.starts = torch.ones(self.env.num_envs, dtype=torch.bool, device=self.device)

    @torch.no_grad()
    def collect(self) -> dict[str, torch.Tensor]:
        """One rollout: act and step T times with the current policy; each field stacked once to [T, N, ...]."""
        keys = ("obs", "actions", "logprobs", "values", "rewards", "terminated", "truncated", "final_obs")
        keys += ("starts", "policy_states") if self.recurrent else ()
        # per-step tensors are kept by reference and stacked once: one copy per field per rollout
        cols: dict[str, list[torch.Tensor]] = {k: [] for k in keys}
        for _ in range(self.rollout_steps):
            t0 = time.perf_counter()
            obs = self.obs
            if self.recurrent:   # the state before this step (zeroed inside step() where an episode begins)
                cols["starts"].append(self.starts)
                cols["policy_states"].append(self.policy_state)
                logits, values, self.policy_state = self.policy.step(obs, self.policy_state, self.starts)
            else:
                logits, values = self.policy(obs)
            actions = sample_actions(logits, self.generator)
            logprobs, _ = logprob_entropy(logits, actions)
            t1 = time.perf_counter()
            next_obs, rewards, terminated, truncated, info = self.env.step(actions.to(torch.int32))
            t2 = time.perf_counter()
            self.time_act_s += t1 - t0
            self.time_env_s += t2 - t1
            if next_obs.data_ptr() == obs.data_ptr() or info["final_obs"].data_ptr() == obs.data_ptr():
                raise RuntimeError("env.step returned an observation in the same memory as the previous one; "
                                   "RolloutStream keeps observations by reference until the rollout is built and "
                                   "needs fresh tensors from step() (clone inside the env)")
            self.stats.add(rewards, terminated, truncated, info)
            self.env_steps += rewards.shape[0]
            step = {"obs": obs, "actions": actions, "logprobs": logprobs, "values": values, "rewards": rewards,
                    "terminated": terminated, "truncated": truncated, "final_obs": info["final_obs"]}
            for k in step:
                cols[k].append(step[k])
            self.obs = next_obs
            if self.recurrent:
                self.starts = terminated | truncated
        if self.recurrent:
            cols["policy_states"].append(self.policy_state)   # after the last step: [T + 1, N, ...]
        self.iterations += 1
        return {k: torch.stack(v) for k, v in cols.items()}


class EvalEpisodes(IterableDataset):
    """Runs exactly one episode in each of the env's N envs (N = number of evaluation episodes).

    Yields a single batch of per-episode results ``{episode_return, episode_length, success,
    finished, <extra per-episode counters>}`` (each [N]). Every evaluation re-seeds the env and
    the sampling generator with ``seed``, so evaluations of different checkpoints see the same
    episode starts. Envs that have not finished within ``max_steps`` are marked ``finished=False``.

    With ``record_clip`` and a pixel env (uint8 observations [K, H, W]) the batch also holds
    ``clip``: env 0's screens from its first observation to its last (the newest frame of each
    stack, the terminal screen included), uint8 [T, H, W], for a video of the agent.

    ``before_step(env)``, when given, returns ``{name: tensor [N]}`` read before each step; the batch holds each
    episode's values from its last step (``tools/episode_ends.py``: the cell each episode ended on).
    """

    def __init__(self, env, policy: nn.Module, seed: int, greedy: bool = False, max_steps: int = 100_000,
                 check_every: int = 16, record_clip: bool = False, before_step=None):
        super().__init__()
        self.env, self.policy, self.seed = env, policy, int(seed)
        self.greedy, self.max_steps, self.check_every = bool(greedy), int(max_steps), int(check_every)
        self.record_clip = bool(record_clip)
        self.before_step = before_step

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
        recurrent = is_recurrent(self.policy)   # evaluation carries a state of its own, from zeros
        state = self.policy.initial_state(n, device) if recurrent else None
        starts = torch.ones(n, dtype=torch.bool, device=device)
        for step in range(self.max_steps):
            before = self.before_step(env) if self.before_step is not None else {}
            if recurrent:
                logits, _, state = self.policy.step(obs, state, starts)
            else:
                logits, _ = self.policy(obs)
            actions = logits.argmax(-1) if self.greedy else sample_actions(logits, gen)
            obs, _, terminated, truncated, info = env.step(actions.to(torch.int32))
            starts = terminated | truncated
            if pixels and not bool(finished[0]):  # one host read per step, only while recording a clip
                clip.append(info["final_obs"][0, -1].clone())
            ended = (terminated | truncated) & ~finished
            if not results:
                keys = ["episode_return", "episode_length", "success"] + sorted(
                    k for k, v in info.items() if k not in _KNOWN_INFO | _NOT_EVALUATED
                    and isinstance(v, torch.Tensor) and v.shape == (n,))
                results = {k: torch.zeros_like(info[k]) for k in keys}
                results.update({k: torch.zeros_like(v) for k, v in before.items()})
            for k, v in results.items():
                results[k] = torch.where(ended, before[k] if k in before else info[k], v)
            finished |= ended
            # a host read every few steps only: evaluation is off the training hot path
            if (step + 1) % self.check_every == 0 and bool(finished.all()):
                break
        results["finished"] = finished
        if pixels:
            results["clip"] = torch.stack(clip)
        yield results

