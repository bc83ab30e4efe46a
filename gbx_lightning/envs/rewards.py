"""Rewards for Game Boy envs, as pure tensor functions (no env, no state; all batched over envs).

The goal-template reward (the streaming trainer's design) needs no knowledge of the game's
RAM, so it serves any game: a goal screen is captured once (``tools/capture_goal.py``) and
every step measures how far the screen is from it.

    dist_t   = mean over the goal's region of |frame_t - goal| / 3          (0 = identical, 1 = opposite)
    hits_t   = hits_{t-1} + 1 if dist_t < tau else 0                          (consecutive close frames)
    reached  = hits_t >= k_consecutive
    reward_t = step_cost + alpha * (dist_{t-1} - dist_t) + goal_bonus * reached

``step_cost`` is usually negative (a price per step: be quick); the ``alpha`` term pays for
moving the screen toward the goal and takes it back for moving away, so it sums to
``alpha * (dist_0 - dist_T)`` over an episode and cannot be farmed by oscillating.
"""
from __future__ import annotations

import torch

__all__ = ["goal_distance", "consecutive_hits", "goal_reward", "ram_counter_delta"]

SHADE_MAX = 3.0  # DMG shades are 0..3


def goal_distance(frames: torch.Tensor, goal: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """dist[n] = sum(weights * |frames[n] - goal|) / (3 * sum(weights)), in [0, 1].

    frames: uint8 [N, H, W] shades 0..3 (the newest observation of each env); goal: uint8 [H, W];
    weights: float [H, W], 1 inside the goal's region and 0 outside (a rectangle or a mask).
    """
    diff = (frames.to(torch.int16) - goal.to(torch.int16)).abs_().to(weights.dtype)
    return (diff * weights).sum(dim=(-2, -1)) / (SHADE_MAX * weights.sum())


def consecutive_hits(dist: torch.Tensor, hits: torch.Tensor, tau: float,
                     k_consecutive: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(hits', reached): hits' = (hits + 1) where dist < tau, else 0; reached = hits' >= k_consecutive."""
    close = dist < tau
    new_hits = torch.where(close, hits + 1, torch.zeros_like(hits))
    return new_hits, new_hits >= k_consecutive


def goal_reward(dist: torch.Tensor, prev_dist: torch.Tensor, reached: torch.Tensor, step_cost: float,
                alpha: float, goal_bonus: float) -> torch.Tensor:
    """reward = step_cost + alpha * (prev_dist - dist) + goal_bonus * reached  (float32 [N])."""
    return step_cost + alpha * (prev_dist - dist) + goal_bonus * reached.to(dist.dtype)


def ram_counter_delta(now: torch.Tensor, before: torch.Tensor, bits: int = 8) -> torch.Tensor:
    """How far a wrapping RAM counter advanced: (now - before) mod 2**bits, as float32.

    Game counters wrap (a byte of seeds eaten goes 255 -> 0); taking the difference modulo
    the counter's range counts the wrap as +1, not -255.
    """
    return torch.remainder(now.to(torch.int32) - before.to(torch.int32), 1 << bits).to(torch.float32)
