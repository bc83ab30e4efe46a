"""Diagnostics of a value function, as CleanRL logs them."""

from __future__ import annotations

import torch


@torch.no_grad()
def explained_variance(values: torch.Tensor, returns: torch.Tensor) -> torch.Tensor:
    """How much of the returns' variance the value predictions explain (population variances):

        explained_variance = 1 - Var(returns - values) / Var(returns)      NaN when Var(returns) = 0

    1 = perfect predictions, 0 = no better than predicting the mean, < 0 = worse. A 0-dim tensor
    on the inputs' device (no host sync).
    """
    var_returns = returns.var(correction=0)
    ev = 1.0 - (returns - values).var(correction=0) / var_returns
    return torch.where(var_returns > 0, ev, torch.full_like(ev, float("nan")))
