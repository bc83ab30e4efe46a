"""The training log's numbers: one table of every record key (its logger name and meaning), and one on-device
accumulator that sums a log interval's values and reads them once.

``METRICS`` is the only place a record key is named: ``callbacks.logger_metrics`` takes the loggers' names from it,
and a loss term is tracked under its key (``LossMetrics``), so a term an algorithm returns that has no row here is
an error at its first optimizer step, not a curve silently missing from TensorBoard.

``DeviceSums`` is what both sides of a record share: the stream's episode statistics (``data.IntervalStats``) and
the module's loss terms and gradient norm (``LossMetrics``). Per step it keeps references to device tensors (no
tensor op, no host sync on the hot path); every ``fold_every`` steps they are reduced in one batch of ops; a read
(once per log record) costs one host transfer. Its ``state_dict`` holds the steps not folded yet as they are, so a
run resumed from any step folds at the same steps as the straight run and writes the same records.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

__all__ = ["METRICS", "LOGGER_NAMES", "LOSS_TERMS", "Metric", "DeviceSums", "LossMetrics", "metrics_table"]


@dataclass(frozen=True)
class Metric:
    """One key of the training log's per-step records."""

    key: str                 # the JSONL key
    logger: str              # its name for every Lightning logger (grouped as CleanRL and SB3 do)
    meaning: str
    term: str | None = None  # a loss term: the key the algorithm's loss dict holds it under (tracked per opt step)
    nan_ok: bool = False     # a loss term that is NaN where undefined: left out of the means, not a failure


METRICS: tuple[Metric, ...] = (
    Metric("env_steps", "charts/env_steps", "env transitions so far (all N envs count)"),
    Metric("opt_steps", "charts/opt_steps", "optimizer steps so far (= trainer.global_step)"),
    Metric("sps", "charts/SPS", "env steps per second over the interval"),
    Metric("episode_return_mean", "charts/episodic_return", "mean return of the episodes ended in the interval"),
    Metric("episode_length_mean", "charts/episodic_length", "their mean length (env steps)"),
    Metric("success_rate", "charts/success_rate", "their fraction that succeeded"),
    Metric("episodes", "charts/episodes", "how many ended"),
    Metric("episode_<x>_mean", "charts/episodic_<x>", "an env's extra per-episode counter (ForagingEnv food_eaten, "
           "orchard seeds_eaten, ...)"),
    Metric("reward_mean", "charts/reward_mean", "reward per env step"),
    Metric("done_rate", "charts/done_rate", "fraction of env steps that ended an episode"),
    Metric("trunc_rate", "charts/trunc_rate", "fraction of env steps that were truncated (time limit)"),
    Metric("lr", "charts/learning_rate", "the learning rate of the next optimizer step"),
    # loss terms, in the order records list them (means over the interval's optimizer steps)
    Metric("loss", "losses/loss", "total loss", term="loss"),
    Metric("loss_policy", "losses/policy_loss", "policy-gradient term", term="policy_loss"),
    Metric("loss_value", "losses/value_loss", "value term (0.5 * squared error)", term="value_loss"),
    Metric("entropy", "losses/entropy", "mean policy entropy", term="entropy"),
    Metric("value_mean", "losses/value_mean", "mean V(s) of the batch", term="value_mean"),
    Metric("advantage_mean", "losses/advantage_mean", "A2C: mean TD(0) advantage", term="advantage_mean"),
    Metric("approx_kl", "losses/approx_kl", "PPO: mean((ratio - 1) - log ratio)", term="approx_kl"),
    Metric("clipfrac", "losses/clipfrac", "PPO: fraction of samples with a clipped ratio", term="clipfrac"),
    Metric("explained_variance", "losses/explained_variance", "1 - Var(returns - V) / Var(returns) (undefined, "
           "left out, when the returns did not vary)", term="explained_variance", nan_ok=True),
    Metric("complete_fraction", "losses/complete_fraction", "REINFORCE: share of samples whose episode ended",
           term="complete_fraction"),
    Metric("grad_norm", "losses/grad_norm", "mean pre-clip gradient norm"),
    Metric("wall_time_s", "time/wall_s", "training wall time, summed over fit segments"),
    Metric("time_act_s", "time/act_s", "policy forward + sampling (seconds in interval)"),
    Metric("time_env_s", "time/env_s", "env.step"),
    Metric("time_update_s", "time/update_s", "training_step (bootstrap, GAE, forward, loss, backward, optimizer)"),
    Metric("time_other_s", "time/other_s", "the rest: Lightning's loop, logging, checkpoints"),
)
LOGGER_NAMES: dict[str, str] = {m.key: m.logger for m in METRICS if "<" not in m.key}
LOSS_TERMS: dict[str, Metric] = {m.term: m for m in METRICS if m.term is not None}   # loss dict key -> its row
METRIC_OF: dict[str, Metric] = {m.key: m for m in METRICS}
_TERM_OF: dict[str, str] = {m.key: m.term for m in METRICS if m.term is not None}   # JSONL key -> loss dict key


def metrics_table() -> str:
    """``METRICS`` as a Markdown table (for the README and docs)."""
    rows = ["| JSONL key | logger name | meaning |", "|---|---|---|"]
    rows += [f"| `{m.key}` | `{m.logger}` | {m.meaning} |" for m in METRICS]
    return "\n".join(rows)


class DeviceSums:
    """Per-step device values of a log interval, summed on device; ``take`` hands the sums over (module docstring).

    ``add(*values)`` keeps the step's tensors by reference. At ``fold_every`` pending steps, and before ``take``,
    the pending steps are stacked per argument (``[S, ...]`` each) and passed to ``fold_columns``, which returns
    their sums as a 1-D float tensor (and may keep more of them: ``LossMetrics``); the sums of the interval
    accumulate in ``sums``. A subclass defines ``fold_columns`` and what its sums mean.
    """

    fold_every = 256

    def __init__(self) -> None:
        self.sums: torch.Tensor | None = None
        self._pending: list[tuple[torch.Tensor, ...]] = []

    def add(self, *values: torch.Tensor) -> None:
        self._pending.append(values)
        if len(self._pending) >= self.fold_every:
            self.fold()

    def fold_columns(self, columns: list[torch.Tensor]) -> torch.Tensor:  # pragma: no cover - subclasses define it
        raise NotImplementedError

    def pending_columns(self) -> list[torch.Tensor] | None:
        """The steps not folded yet, stacked per argument of ``add`` (None if there are none); they stay pending."""
        return [torch.stack(column) for column in zip(*self._pending)] if self._pending else None

    def fold(self) -> None:
        columns = self.pending_columns()
        if columns is None:
            return
        self._pending = []
        part = self.fold_columns(columns)
        self.sums = part if self.sums is None else self.sums + part

    def take(self) -> torch.Tensor | None:
        """The interval's sums, on device (None if nothing was added); the next interval starts from zero."""
        self.fold()
        sums, self.sums = self.sums, None
        return sums

    def state_dict(self) -> dict[str, Any]:
        columns = self.pending_columns()
        return {"sums": None if self.sums is None else self.sums.cpu(),
                "pending": None if columns is None else [c.cpu() for c in columns]}

    def load_state_dict(self, state: dict[str, Any], device: torch.device) -> None:
        self.sums = None if state["sums"] is None else state["sums"].to(device)
        columns = [c.to(device) for c in state["pending"]] if state["pending"] is not None else []
        self._pending = list(zip(*[list(c) for c in columns])) if columns else []


class LossMetrics(DeviceSums):
    """The loss terms and the pre-clip gradient norm of every optimizer step; their interval means, and the first
    optimizer step at which each went non-finite.

    ``add(step, terms, grad_norm)``: ``terms`` is the algorithm's loss dict, every key a ``term`` of ``METRICS``.
    The columns (``names``: JSONL keys, then ``grad_norm``) are fixed by the first step. ``sums`` holds the finite
    values' sums, then their counts (non-finite values are left out of the means). ``first_nonfinite_steps``
    reads, per column, the first step it was NaN/inf (``NEVER``: not yet; ``nan_ok`` terms never count) from the
    folded steps and the pending ones, without folding them.
    """

    NEVER = 1 << 62

    def __init__(self) -> None:
        super().__init__()
        self.names: list[str] | None = None
        self.first_step = 0                                  # optimizer step of the first pending row
        self._first_nonfinite: torch.Tensor | None = None    # of the folded rows, per column

    def add(self, step: int, terms: dict[str, torch.Tensor], grad_norm: torch.Tensor) -> None:
        if self.names is None:
            unknown = [k for k in terms if k not in LOSS_TERMS]
            if unknown:
                raise KeyError(f"loss term(s) {unknown} have no row in gbx_lightning.metrics.METRICS (their JSONL key, "
                               f"logger name and meaning): add one, or they would be missing from the logs")
            self.names = [LOSS_TERMS[k].key for k in LOSS_TERMS if k in terms] + ["grad_norm"]
        if not self._pending:
            self.first_step = step
        # detached: a reference must not keep the step's autograd graph alive until the fold
        super().add(*(terms[_TERM_OF[key]].detach() for key in self.names[:-1]), grad_norm.detach())

    def _rows(self, columns: list[torch.Tensor]) -> torch.Tensor:
        return torch.stack([c.float() for c in columns], 1)   # [S, K]

    def fold_columns(self, columns: list[torch.Tensor]) -> torch.Tensor:
        rows = self._rows(columns)
        self._first_nonfinite = self._first_bad(rows)
        finite = rows.isfinite()
        return torch.cat([torch.where(finite, rows, 0.0).sum(0), finite.sum(0).to(rows.dtype)])

    def _first_bad(self, rows: torch.Tensor) -> torch.Tensor:
        steps = torch.arange(rows.shape[0], device=rows.device) + self.first_step
        first = torch.where(rows.isfinite(), self.NEVER, steps[:, None]).amin(0)
        for i, key in enumerate(self.names[:-1]):
            if METRIC_OF[key].nan_ok:
                first[i] = self.NEVER
        return first if self._first_nonfinite is None else torch.minimum(self._first_nonfinite, first)

    def first_nonfinite_steps(self) -> torch.Tensor | None:
        """Per column, the first optimizer step it was non-finite (``NEVER``: not yet), on device; None before any
        step. The pending steps are read, not folded (folding at another step would change the sums' rounding)."""
        columns = self.pending_columns()
        return self._first_nonfinite if columns is None else self._first_bad(self._rows(columns))

    def means(self, sums: torch.Tensor) -> torch.Tensor:
        """Per column, the mean of its finite values (NaN where there were none) from ``take``'s sums."""
        k = sums.numel() // 2
        return sums[:k] / sums[k:]

    def state_dict(self) -> dict[str, Any]:
        first = self._first_nonfinite
        return {**super().state_dict(), "names": self.names, "first_step": self.first_step,
                "first_nonfinite": None if first is None else first.cpu()}

    def load_state_dict(self, state: dict[str, Any], device: torch.device) -> None:
        if "rows" in state:   # a checkpoint of before this class: rows [S, K], sums and counts apart
            rows, sums, counts = state["rows"], state["sums"], state["counts"]
            names = None if state["names"] is None else [LOSS_TERMS[n].key for n in state["names"]] + ["grad_norm"]
            state = {**state, "names": names, "pending": None if rows is None else list(rows.unbind(1)),
                     "sums": None if sums is None else torch.cat([sums, counts.to(sums)])}
        super().load_state_dict(state, device)
        self.names, self.first_step = state["names"], int(state["first_step"])
        first = state["first_nonfinite"]
        self._first_nonfinite = None if first is None else first.to(device)
