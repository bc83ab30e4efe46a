"""PPO with the clipped surrogate (Schulman et al. 2017) on T-step rollouts of N envs, as CleanRL's ppo.py.

Per batch (a rollout of T = ``rollout_steps`` steps of all N envs, acted with the current weights; its log-probs
and values V_old were kept while acting):

    1. bootstrap   V(s') of every step's true next state (``final_obs``), no gradient
    2. advantages  GAE(lambda) (``rl.gae``):
                   delta_t = r_t + gamma * (1 - terminated_t) * V(s'_t) - V_old(s_t)
                   A_t = delta_t + gamma * lambda * (1 - done_t) * A_{t+1};   returns R_t = A_t + V_old(s_t)
    3. loss        per minibatch (``rl.ppo_loss``): ratio = pi(a|s) / pi_old(a|s),
                   -mean(min(A * ratio, A * clip(ratio, 1 - clip_coef, 1 + clip_coef)))
                   + value_coef * mean(0.5 * (V - R)^2) - entropy_coef * mean(H)
    4. update      ``epochs`` passes over the T*N samples in ``minibatches`` shuffled minibatches, one optimizer
                   step each: one rollout = ``epochs * minibatches`` optimizer steps. With a recurrent policy
                   (``models.RecurrentActorCritic``) a minibatch is whole envs, their T steps in order (the envs
                   shuffled, N / ``minibatches`` each, as CleanRL's ppo_atari_lstm): the LSTM replays each env's
                   sequence from its state before the rollout, so on the first pass pi = pi_old (ratio 1)

``trainer.max_steps`` must be a multiple of ``epochs * minibatches``: a run that stopped inside a rollout would lose
the rest of that rollout's update on resume. ``anneal_lr`` decays the learning rate linearly to 0 at
``trainer.max_steps``, after holding it for the first ``anneal_from`` of the steps (``LinearAnneal``, a ``LambdaLR``
from ``configure_optimizers``, stepped after every optimizer step, saved and restored by Lightning, seen by
``LearningRateMonitor``; resumed with a larger ``max_steps`` it continues from the current rate down to 0 at the new
end, no jump). ``sample_transforms`` (``rl/normalize.py``):
``reward_norm`` before GAE, ``advantage_norm`` after it (per rollout or per env, instead of
``normalize_advantages``' per minibatch); the value targets are GAE's returns either way.
"""

from __future__ import annotations

import time
from typing import Any

import torch

from gbx_lightning.algos.base import RLModule
from gbx_lightning.algos.build import factory_parts
from gbx_lightning.algos.config import ConfigError, require, require_number
from gbx_lightning.heap import ReusedTensors
from gbx_lightning.models import is_recurrent
from gbx_lightning.rl import apply_sample_transforms, explained_variance, gae, ppo_loss

__all__ = ["LinearAnneal", "PPOModule"]


class LinearAnneal:
    """``LambdaLR`` factor held at ``start_factor`` up to step ``start``, then falling linearly to 0 at step ``end``.

    A fresh run's k-th optimizer step (from 0) uses ``lr * (1 - k / max_steps)`` (``hold`` 0: the last step
    ``lr / max_steps``); with ``hold`` h, ``lr`` up to step ``h * max_steps`` and the line from there. ``extend_to``
    re-plans the rest when a resumed run's ``max_steps`` moved: still holding, the hold ends at ``h`` of the new end;
    past it, the line runs from the rate of the last step taken down to 0 at the new end, so the rate continues
    from where it was instead of jumping back up. A callable object (not a lambda), so ``LambdaLR.state_dict``
    saves ``start``/``start_factor``/``end``/``hold`` in checkpoints.
    """

    def __init__(self, end: int, hold: float = 0.0):
        self.hold, self.start_factor, self.end = float(hold), 1.0, int(end)
        self.start = round(self.hold * self.end)

    def __call__(self, step: int) -> float:
        if step >= self.end:
            return 0.0
        if step <= self.start:
            return self.start_factor
        return self.start_factor * (self.end - step) / (self.end - self.start)

    def extend_to(self, step: int, end: int) -> None:
        """Steps ``step``.. (the next to take) as planned for a run ending at ``end`` (the class docstring)."""
        last = max(int(step) - 1, 0)
        held = last < self.start
        self.start_factor, self.end = self(last), int(end)
        self.start = max(round(self.hold * self.end), last) if held else last


class PPOModule(RLModule):
    """PPO with the clipped surrogate: GAE, then ``epochs`` x ``minibatches`` optimizer steps per rollout (the
    algorithm: this file's docstring)."""

    rollout_field = "rollout_steps"
    sample_transform_names = ("reward_norm", "advantage_norm")

    def __init__(self, *, rollout_steps: int = 128, epochs: int = 4, minibatches: int = 4, gae_lambda: float = 0.95,
                 clip_coef: float = 0.2, value_clip: float | None = None, normalize_advantages: bool = True,
                 anneal_lr: bool = False, anneal_from: float = 0.0, lr: float = 2.5e-4,
                 sample_transforms: list[dict] | None = None, **kwargs):
        """
        Args:
            rollout_steps: T, env steps of all N envs per rollout.
            epochs: passes over each rollout.
            minibatches: minibatches per pass (one optimizer step each).
            gae_lambda: GAE's lambda.
            clip_coef: the policy ratio's clip range (1 +- clip_coef).
            value_clip: clip V's change from V_old to +- this in the value loss (null: no clipping).
            normalize_advantages: normalise each minibatch's advantages (mean 0, std 1).
            anneal_lr: decay the learning rate linearly to 0 at trainer.max_steps.
            anneal_from: with anneal_lr, the share of trainer.max_steps (0..1) the rate is held at lr before it
                starts to fall (0: it falls from the first step).
            lr: Adam's learning rate.
            sample_transforms: what to do to a rollout's rewards (before GAE) or advantages (after it), in order
                (``[{name: reward_norm | advantage_norm, per: batch | env}]``, ``rl/normalize.py``); null: nothing.
            **kwargs: the arguments every algorithm takes (``RLModule``: env, policy, gamma, ...).
        """
        super().__init__(lr=lr, **kwargs)
        self.opt_steps_per_batch = epochs * minibatches
        self._minibatch = ReusedTensors()   # the minibatch's observations, gathered into the same memory each step

    @classmethod
    def check_args(cls, hp: dict[str, Any]) -> None:
        for name in ("rollout_steps", "epochs", "minibatches"):
            require_number(name, hp[name], low=1, integer=True)
        require(hp["minibatches"] <= hp["rollout_steps"] * hp["num_envs"], "minibatches",
                f"<= rollout_steps * num_envs = {hp['rollout_steps'] * hp['num_envs']}", hp["minibatches"])
        if is_recurrent(factory_parts(hp["policy"])[0]):
            require(hp["minibatches"] <= hp["num_envs"], "minibatches", f"<= num_envs = {hp['num_envs']} with a "
                    f"recurrent policy (each minibatch is whole envs' sequences)", hp["minibatches"])
        require_number("gae_lambda", hp["gae_lambda"], low=0, high=1)
        require_number("clip_coef", hp["clip_coef"], low=0, low_open=True)
        require_number("anneal_from", hp["anneal_from"], low=0, high=1)
        require(hp["anneal_lr"] or hp["anneal_from"] == 0, "anneal_from", "0 with anneal_lr: false (the rate is "
                "then constant; set anneal_lr: true to hold it and then let it fall)", hp["anneal_from"])
        require_number("value_clip", hp["value_clip"], low=0, low_open=True, none="null")
        for i, item in enumerate(hp["sample_transforms"] or ()):
            require(item["name"] != "advantage_norm" or not hp["normalize_advantages"],
                    f"sample_transforms[{i}]", "used with normalize_advantages: false (that one normalises "
                    "every minibatch's advantages again; set it false to normalise by this item)", item)

    @classmethod
    def check_max_steps(cls, max_steps, **hp: Any) -> None:
        """Whole rollouts only: a run stopped inside one would drop the rest of its update on resume."""
        cycle = hp["epochs"] * hp["minibatches"]
        if isinstance(max_steps, int) and max_steps > 0 and max_steps % cycle:
            down, up = max_steps // cycle * cycle, -(-max_steps // cycle) * cycle
            raise ConfigError("trainer.max_steps", f"must be a multiple of epochs * minibatches = {cycle} (PPO "
                              f"updates whole rollouts), got {max_steps}; use {up}" + (f" or {down}" if down else ""))
        if hp.get("anneal_lr") and not (isinstance(max_steps, int) and max_steps > 0):
            raise ConfigError("trainer.max_steps", f"must be set (> 0) with model.anneal_lr: true (the learning "
                              f"rate reaches 0 there), got {max_steps}")

    def configure_optimizers(self):
        optimizer = super().configure_optimizers()
        if not self.hparams.anneal_lr:
            return optimizer
        anneal = LinearAnneal(self.trainer.max_steps, hold=self.hparams.anneal_from)
        return [optimizer], [torch.optim.lr_scheduler.LambdaLR(optimizer, anneal)]

    def lr_factor_at_start(self) -> float:
        """The anneal's factor at the step training starts from; a resume with another ``max_steps`` re-plans the
        line from there (``LinearAnneal.extend_to``), and the configured ``lr`` is its base. The schedule counts
        optimizer steps from the run's start: a checkpoint saved without it (``anneal_lr`` was false) resumes
        into the schedule at its own step, not at 0."""
        sched = self.lr_schedulers()
        if sched is None:
            return 1.0
        anneal = sched.lr_lambdas[0]
        if anneal.end != self.trainer.max_steps:
            anneal.extend_to(self.trainer.global_step, self.trainer.max_steps)
        sched.base_lrs = [self.hparams.lr for _ in sched.base_lrs]
        sched.last_epoch = self.trainer.global_step
        return anneal(self.trainer.global_step)

    def training_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> None:
        """One PPO update from one [T, N] rollout: bootstrap, GAE, epochs x minibatches clipped-surrogate steps."""
        t0 = time.perf_counter()
        hp = self.hparams
        T, N = batch["rewards"].shape
        # 1. bootstrap: V(s') of every step's true next state (through truncations and the rollout's end), then GAE
        next_values = self.bootstrap_values(batch)
        with torch.no_grad():
            # 2. GAE advantages and returns, with the sample transforms around it
            rewards = apply_sample_transforms(hp.get("sample_transforms"), "rewards", batch["rewards"])
            advantages, returns = gae(rewards, batch["values"], next_values.view(T, N), batch["terminated"],
                                      batch["truncated"], hp.gamma, hp.gae_lambda)
            advantages = apply_sample_transforms(hp.get("sample_transforms"), "advantages", advantages)
        # flatten the rollout into T*N samples
        b_obs, b_actions = batch["obs"].flatten(0, 1), batch["actions"].flatten()
        b_logprobs, b_values = batch["logprobs"].flatten(), batch["values"].flatten()
        b_advantages, b_returns = advantages.flatten(), returns.flatten()
        explained_var = explained_variance(b_values, b_returns)
        # 3-4. optimise the clipped surrogate: `epochs` shuffled passes of `minibatches` minibatches. Shuffled with the
        #    stream's generator, whose state every checkpoint holds, so a resumed run shuffles as the straight one.
        #    A recurrent policy's minibatches are whole envs: sample t * N + e of every t for each env e picked.
        steps = torch.arange(T, device=b_obs.device)[:, None] * N
        for _ in range(hp.epochs):
            if self.recurrent:
                env_perm = torch.randperm(N, generator=self.stream.generator, device=b_obs.device)
                minibatches = [(envs, (steps + envs).flatten()) for envs in env_perm.chunk(hp.minibatches)]
            else:
                perm = torch.randperm(T * N, generator=self.stream.generator, device=b_obs.device)
                minibatches = [(None, mb) for mb in perm.chunk(hp.minibatches)]
            for envs, mb in minibatches:
                if envs is not None:   # the LSTM replays these envs' T steps: [T * len(envs)], time-major as mb
                    new_logprobs, entropy, new_values = self.evaluate_rollout(batch, envs)
                else:
                    mb_obs = torch.index_select(b_obs, 0, mb, out=self._minibatch.get(
                        "obs", (mb.shape[0], *b_obs.shape[1:]), b_obs.dtype, b_obs.device))
                    new_logprobs, entropy, new_values = self.policy.evaluate(mb_obs, b_actions[mb])
                out = ppo_loss(new_logprobs, b_logprobs[mb], b_advantages[mb], new_values, b_values[mb],
                               b_returns[mb], entropy, clip_coef=hp.clip_coef, value_clip=hp.value_clip,
                               normalize_advantages=hp.normalize_advantages, value_coef=hp.value_coef,
                               entropy_coef=hp.entropy_coef)
                out["value_mean"] = new_values.detach().mean()
                out["explained_variance"] = explained_var
                self.step_optimizer(out)
        self.time_update_s += time.perf_counter() - t0
