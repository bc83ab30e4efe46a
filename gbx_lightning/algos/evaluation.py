"""Evaluation results: one batch of finished episodes (``data.EvalEpisodes``) -> the ``eval/*`` or ``test/*`` means."""

from __future__ import annotations

from typing import Callable

import torch

__all__ = ["episode_means"]

_FIELDS = ("finished", "episode_return", "success", "episode_length", "clip")


def episode_means(batch: dict[str, torch.Tensor], prefix: str,
                  sum_over_ranks: Callable[[torch.Tensor], torch.Tensor]) -> dict[str, torch.Tensor]:
    """Success rate over all evaluation episodes (one that did not finish counts as a failure), the other means
    over finished episodes (an env's extra counters as ``<counter>_mean``); ``steps_to_success`` over successful
    ones (NaN if none).

    Under DDP each rank ran its share of the episodes: the sums are added over the ranks (one collective) before
    dividing, so the means are over all episodes (a mean of per-rank means would weigh them wrongly).
    """
    finished = batch["finished"]
    wins = (batch["success"] & finished).float()
    extras = [k for k in batch if k not in _FIELDS]
    sums = torch.stack([finished.float().sum(), finished.new_tensor(finished.shape[0], dtype=torch.float),
                        (batch["episode_return"].float() * finished).sum(), wins.sum(),
                        (batch["episode_length"].float() * wins).sum(),
                        (batch["episode_length"].float() * finished).sum()]
                       + [(batch[k].float() * finished).sum() for k in extras])
    ended, total, ret, won, won_length, length, *extra_sums = sum_over_ranks(sums)
    denom = ended.clamp(min=1)
    metrics = {f"{prefix}/episodes": ended, f"{prefix}/return_mean": ret / denom,
               f"{prefix}/success_rate": won / total, f"{prefix}/steps_to_success": won_length / won,
               f"{prefix}/length_mean": length / denom}
    for k, v in zip(extras, extra_sums):
        metrics[f"{prefix}/{k}_mean"] = v / denom
    return metrics
