"""REINFORCE (Williams 1992): Monte-Carlo returns, an optional learned baseline, an entropy bonus, and ``accumulate``
rollouts per optimizer step.

Per batch (a rollout of T = ``rollout_steps`` steps of all N envs, acted with the current weights):

    1. returns     G_t = r_t + gamma * (1 - done_t) * G_{t+1}  to each episode's end inside the rollout
                   (``rl.monte_carlo_returns``; ``bootstrap_truncated``: + gamma * V(s') at a truncation);
                   complete_t = whether step t's episode ended inside the rollout
    2. advantages  A_t = G_t - V(s_t) with ``baseline`` (else G_t), normalised per rollout if
                   ``normalize_advantages``
    3. loss        summed over the complete steps (``rl.reinforce_loss``):
                   -A_t * log pi(a_t|s_t) + value_coef * 0.5 * (V(s_t) - G_t)^2 - entropy_coef * H
    4. update      backward now; at every ``accumulate``-th rollout divide the summed gradient by the used
                   samples (= the gradient of the mean over all of them), clip, step

Whole episodes from a stream of fixed-length rollouts: N envs auto-reset at different times, and the reverse
scan over T (vectorised over N) stops at each episode end, so a reset inside the rollout leaks nothing across
episodes. Each env's steps after its last episode end in the rollout have no return yet: they are dropped from
the loss, not carried over. Carrying them into the next rollout would mix two policies in one return (the steps
before the update were acted with the old weights) and make REINFORCE off-policy; dropped, every sample is
on-policy and the update needs its own rollout only, so the stream's state is all a checkpoint needs (plus a
partial accumulation, below). What dropping costs: the env steps of the tails are spent without a gradient, and
an episode that straddles two rollouts trains only its later steps, so early-episode states weigh less than
on-policy. With every episode cut at the time limit L and T = L about half the steps are dropped; with episodes
much shorter than T, about half an episode per env and rollout. Each record logs the used share
(``complete_fraction``). ``rollout_steps`` must be >= the env's ``max_steps`` (a config error otherwise): then
every env ends an episode in every rollout, and no step is beyond reach of a return.

Truncation (the env's time limit) ends the return like termination does: plain Monte Carlo, the return of the
time-limited episode the env defines. ``bootstrap_truncated`` (needs ``baseline``) instead completes a truncated
step's return with gamma * V(final_obs), as A2C and PPO bootstrap through a time limit; a terminated return is
never bootstrapped. ``normalize_advantages`` (on by default: it makes the step size independent of the return
scale) normalises the advantages per rollout.

Gradient accumulation: the ``accumulate`` rollouts of one optimizer step are all acted with the same weights (no
step between them), so together they are one on-policy batch. Each rollout's summed loss is backwarded when it
comes (its graph freed); at the last one the summed gradient is divided by the total number of used samples,
which is exactly the gradient of the mean over all of them (tests/test_reinforce.py checks it; with
``normalize_advantages`` each rollout is normalised with its own statistics). A stop between two rollouts of one
step saves the partial gradient and sums in the checkpoint, so the resume is exact. Counting:
``trainer.max_steps`` = optimizer steps, ``opt_steps = env_steps / (rollout_steps * num_envs * accumulate)``;
``val_check_interval`` counts rollouts.
"""

from __future__ import annotations

import time
from typing import Any

import torch

from gbx_lightning.algos.base import RLModule
from gbx_lightning.algos.config import ConfigError, episode_limit, require_number
from gbx_lightning.rl import monte_carlo_returns, reinforce_loss

__all__ = ["REINFORCEModule"]

# what the accumulated sums hold per rollout (over its used samples, but `total`: all its samples)
_SUMS = ("loss", "policy_loss", "value_loss", "entropy", "samples", "total", "value", "ret", "ret_sq", "err", "err_sq")


class REINFORCEModule(RLModule):
    """REINFORCE: Monte-Carlo returns, an optional learned baseline, ``accumulate`` rollouts per optimizer step (the
    algorithm: this file's docstring)."""

    rollout_field = "rollout_steps"

    def __init__(self, *, rollout_steps: int = 200, accumulate: int = 1, baseline: bool = True,
                 normalize_advantages: bool = True, bootstrap_truncated: bool = False, **kwargs):
        """
        Args:
            rollout_steps: T, env steps of all N envs per rollout (>= the env's episode limit).
            accumulate: rollouts per optimizer step (gradient accumulation, exact).
            baseline: learn V(s) and use G - V(s) as the advantage.
            normalize_advantages: normalise each rollout's advantages (mean 0, std 1).
            bootstrap_truncated: complete a truncated episode's return with gamma * V(s') (needs baseline).
            **kwargs: the arguments every algorithm takes (``RLModule``: env, policy, gamma, lr, ...).
        """
        super().__init__(**kwargs)
        self._parts = 0                                   # rollouts backwarded since the last optimizer step
        self._sums: torch.Tensor | None = None            # their loss terms and counts, summed (_SUMS)
        self._restored_accumulation: dict | None = None   # a checkpoint's partial accumulation, applied at train start

    @classmethod
    def check_args(cls, hp: dict[str, Any]) -> None:
        for name in ("rollout_steps", "accumulate"):
            require_number(name, hp[name], low=1, integer=True)
        if hp["bootstrap_truncated"] and not hp["baseline"]:
            raise ConfigError("bootstrap_truncated", "needs baseline: true (a truncated return is completed with the "
                              "learned V(s')), got baseline: false")
        limit = episode_limit(hp)
        if limit is not None and hp["rollout_steps"] < limit:
            raise ConfigError("rollout_steps", f"must be >= the env's episode limit env.max_steps = {limit} "
                              f"(Monte-Carlo returns need every episode to end inside one rollout), got "
                              f"{hp['rollout_steps']}")

    def batch_budget(self, max_steps: int) -> int:
        """``accumulate`` rollouts per optimizer step."""
        return max_steps * self.hparams.accumulate if max_steps > 0 else super().batch_budget(max_steps)

    def training_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> None:
        """Backward one [T, N] rollout's REINFORCE loss; every ``accumulate`` rollouts, one optimizer step."""
        t0 = time.perf_counter()
        hp = self.hparams
        T, N = batch["rewards"].shape
        # 1. Monte-Carlo returns to each episode's end, and which steps have one (their episode ended in the rollout)
        with torch.no_grad():
            truncation_values = None
            if hp.bootstrap_truncated:   # V(s') completes a truncated return
                truncation_values = self.bootstrap_values(batch).view(T, N)
            returns, complete = monte_carlo_returns(batch["rewards"], batch["terminated"], batch["truncated"],
                                                    hp.gamma, truncation_values)
        # 2-3. log pi(a|s), H, V(s) with gradient; advantages and the loss summed over the steps that have a return
        returns, complete = returns.flatten(), complete.flatten()
        logprobs, entropy, values = self.evaluate_rollout(batch)
        out = reinforce_loss(logprobs, entropy, returns, complete, values if hp.baseline else None,
                             value_coef=hp.value_coef, entropy_coef=hp.entropy_coef,
                             normalize_advantages=hp.normalize_advantages, reduction="sum")
        loss = out["loss"] if hp.baseline else out["loss"] + 0.0 * values.sum()  # DDP wants every parameter used
        # 4. accumulate the gradient; the last rollout of the step divides it by the used samples and steps
        self.manual_backward(loss)
        self._add_sums(out, values.detach(), returns, complete)
        self._parts += 1
        if self._parts >= hp.accumulate:
            self._step()
        self.time_update_s += time.perf_counter() - t0

    def _add_sums(self, out: dict[str, torch.Tensor], values: torch.Tensor, returns: torch.Tensor,
                  complete: torch.Tensor) -> None:
        """Add this rollout's loss sums and value-fit moments to ``_sums`` (float64, summed over the DDP ranks)."""
        m = complete.double()
        v, g = values.double(), returns.double()
        e = g - v
        part = torch.stack([out["loss"].detach().double(), out["policy_loss"].double(), out["value_loss"].double(),
                            out["entropy"].double(), out["samples"].double(), torch.full_like(m[0], m.numel()),
                            (v * m).sum(), (g * m).sum(), (g * g * m).sum(), (e * m).sum(), (e * e * m).sum()])
        part = self.sum_over_ranks(part)   # every rank holds the same sums (and checkpoints rank 0's)
        self._sums = part if self._sums is None else self._sums + part

    def _step(self) -> None:
        """Gradient / used samples (the mean over the accumulated batch; DDP averaged it over the ranks: x ranks),
        then clip and step; log the accumulated batch's means."""
        s = dict(zip(_SUMS, self._sums.unbind()))
        n = s["samples"].clamp(min=1.0)
        scale = (self.ranks()[1] / n).float()
        for p in self.policy.parameters():
            if p.grad is not None:
                p.grad.mul_(scale)
        out = {k: (s[k] / n).float() for k in ("loss", "policy_loss", "value_loss", "entropy")}
        if self.hparams.baseline:
            mean_ret, mean_err = s["ret"] / n, s["err"] / n
            var_ret = s["ret_sq"] / n - mean_ret ** 2
            var_err = s["err_sq"] / n - mean_err ** 2
            defined = var_ret > 1e-12 * (s["ret_sq"] / n)   # constant returns: undefined, as rl.explained_variance
            out["value_mean"] = (s["value"] / n).float()
            out["explained_variance"] = torch.where(defined, 1.0 - var_err / var_ret, float("nan")).float()
        out["complete_fraction"] = (s["samples"] / s["total"]).float()
        self._parts, self._sums = 0, None
        self.apply_gradients(out)

    # ---- a partial accumulation in the checkpoint ----------------------------------------------------
    def on_save_checkpoint(self, checkpoint: dict) -> None:
        super().on_save_checkpoint(checkpoint)
        grads = [None if p.grad is None else p.grad.detach().cpu() for p in self.policy.parameters()] \
            if self._parts else None
        checkpoint["gbx_reinforce"] = {"parts": self._parts, "grads": grads,
                                       "sums": None if self._sums is None else self._sums.cpu()}

    def on_load_checkpoint(self, checkpoint: dict) -> None:
        super().on_load_checkpoint(checkpoint)
        self._restored_accumulation = checkpoint.get("gbx_reinforce")

    def on_train_start(self) -> None:
        super().on_train_start()
        state, self._restored_accumulation = self._restored_accumulation, None
        if state is None or not state["parts"]:
            return
        self._parts = int(state["parts"])
        self._sums = state["sums"].to(self.device)
        for p, g in zip(self.policy.parameters(), state["grads"]):
            p.grad = None if g is None else g.to(device=p.device, dtype=p.dtype)
