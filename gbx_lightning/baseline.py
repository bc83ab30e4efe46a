"""The random policy's figures on the evaluation episodes: the line every learning curve is read against.

A learned policy can end up worse than pressing buttons at random (a critic that learns "near the exit is costly"
steers the agent away from it), and a success rate alone does not show it. So at the start of a fit, once per run,
a uniformly random policy plays the same evaluation episodes as validation (the eval env, the eval seed):

* one line on the console: ``random policy on the evaluation episodes: success_rate 0.35 ...``;
* ``eval/random_success_rate`` (and the other ``eval/random_*`` means) logged once, at the run's first env step,
  to every logger, and in the JSONL's meta line (``"random_baseline"``; this callback runs before ``TrainingLog``);
* after each evaluation of the fit whose success rate is below it, one warning line naming both.

The figures are kept in the checkpoint (this callback's state): a resumed run neither replays nor re-logs them.
``--random_baseline false`` skips it all (it costs one evaluation's time at the start).
"""
from __future__ import annotations

import sys
import time
from typing import Any

import torch
from lightning.pytorch import Callback
from torch import nn

__all__ = ["RandomBaseline", "UniformPolicy"]


class UniformPolicy(nn.Module):
    """Every action equally likely (logits 0), value 0: what ``tools/random_policy.py`` plays too."""

    def __init__(self, num_actions: int):
        super().__init__()
        self.num_actions = int(num_actions)

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        n = obs.shape[0]
        return obs.new_zeros((n, self.num_actions), dtype=torch.float32), obs.new_zeros(n, dtype=torch.float32)


class RandomBaseline(Callback):
    """See the module docstring."""

    def __init__(self):
        self.metrics: dict[str, float] | None = None   # eval/random_* -> value, once measured

    @property
    def success_rate(self) -> float | None:
        return None if self.metrics is None else self.metrics.get("eval/random_success_rate")

    def state_dict(self) -> dict[str, Any]:
        return {"metrics": self.metrics}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.metrics = state.get("metrics")

    def on_fit_start(self, trainer, pl_module) -> None:
        if self.metrics is not None or not hasattr(pl_module, "evaluate_policy"):
            return
        start = time.perf_counter()
        env = pl_module.eval_env_built()
        results = pl_module.evaluate_policy(UniformPolicy(env.num_actions), prefix="eval")
        # eval/success_rate -> eval/random_success_rate; NaN (steps_to_success without a success) -> None
        self.metrics = {"eval/random_" + k.split("/", 1)[1]: (None if float(v) != float(v) else float(v))
                        for k, v in results.items()}
        seconds = time.perf_counter() - start
        if not trainer.is_global_zero:
            return
        numbers = {k: v for k, v in self.metrics.items() if v is not None}
        for logger in trainer.loggers:
            logger.log_metrics(numbers, step=pl_module.env_steps)
        episodes = int(self.metrics.get("eval/random_episodes") or 0)
        body = "  ".join(f"{k.split('/', 1)[1][len('random_'):]} " + ("n/a" if v is None else f"{v:.4g}")
                         for k, v in self.metrics.items() if k != "eval/random_episodes")
        print(f"random policy on the {episodes} evaluation episodes: {body}  ({seconds:.0f} s; the baseline each "
              f"evaluation's success_rate is compared with)", file=sys.stderr, flush=True)

    def on_validation_end(self, trainer, pl_module) -> None:
        if trainer.sanity_checking or trainer.state.fn != "fit" or self.success_rate is None:
            return
        value = trainer.callback_metrics.get("eval/success_rate")
        if value is None or not trainer.is_global_zero:
            return
        value = float(value)
        if value < self.success_rate:
            print(f"warning: evaluation success_rate {value:.3f} at env_steps {pl_module.env_steps} is below a "
                  f"random policy's {self.success_rate:.3f} on the same episodes (docs/training.md: 'Below random')",
                  file=sys.stderr, flush=True)
