"""Reward formulas as pure tensor functions (no env, no state; all batched over envs, on their device).

Each function is one formula; ``envs/reward_transforms.py`` composes them into a configured
pipeline (which pieces, in which order, with which running state).

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

__all__ = ["goal_distance", "consecutive_hits", "goal_reward", "progress_reward", "ram_counter_delta", "ram_value",
           "ram_delta", "ram_level", "scale_reward", "clip_reward", "discounted_return", "update_moments",
           "normalize_by_return_std", "popcount_bytes", "progress_gain", "cell_index", "visit_cells"]

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


def progress_reward(dist: torch.Tensor, prev_dist: torch.Tensor, alpha: float) -> torch.Tensor:
    """reward = alpha * (prev_dist - dist): paid for moving the screen toward the goal, taken back for moving away
    (it telescopes to alpha * (dist_0 - dist_T) over an episode, so oscillating earns nothing)."""
    return alpha * (prev_dist - dist)


def potential_shaping(dist: torch.Tensor, prev_dist: torch.Tensor, alpha: float, gamma: float,
                      terminated: torch.Tensor) -> torch.Tensor:
    """F = gamma * phi(s') - phi(s) with phi(s) = -alpha * dist(s) and phi = 0 at a terminal state (Ng, Harada and
    Russell 1999): alpha * (prev_dist - gamma * dist), and alpha * prev_dist on a step that terminates. Its
    discounted sum over an episode telescopes to -phi(s_0) (plus gamma^T phi(s_T) on truncation, which the
    bootstrap carries), so it cannot change which policy is optimal. ``progress_reward`` is the gamma = 1 form:
    with a learner that discounts (gamma < 1) it is not potential-based and can change the optimal policy."""
    return alpha * (prev_dist - torch.where(terminated, torch.zeros_like(dist), gamma * dist))


def ram_counter_delta(now: torch.Tensor, before: torch.Tensor, bits: int = 8) -> torch.Tensor:
    """How far a wrapping RAM counter advanced: (now - before) mod 2**bits, as float32.

    Game counters wrap (a byte of seeds eaten goes 255 -> 0); taking the difference modulo
    the counter's range counts the wrap as +1, not -255.
    """
    return torch.remainder(now.to(torch.int32) - before.to(torch.int32), 1 << bits).to(torch.float32)


def ram_value(raw: torch.Tensor) -> torch.Tensor:
    """value[n] = sum_i raw[n, i] * 256**i: the little-endian number in RAM bytes uint8 [N, size], as int32
    (the SM83 stores 16-bit values low byte first)."""
    value = raw[:, 0].to(torch.int32)
    for i in range(1, raw.shape[1]):
        value = value | (raw[:, i].to(torch.int32) << (8 * i))
    return value


def _as_signed(x: torch.Tensor, bits: int) -> torch.Tensor:
    """Two's complement: x in [0, 2**bits) -> x - 2**bits where x >= 2**(bits - 1)."""
    return torch.where(x >= (1 << (bits - 1)), x - (1 << bits), x)


def ram_delta(now: torch.Tensor, before: torch.Tensor, bits: int, signed: bool) -> torch.Tensor:
    """d = (now - before) mod 2**bits, and d - 2**bits where ``signed`` and d >= 2**(bits - 1); float32.

    Unsigned, a counter that only grows (seeds eaten, score) counts its wrap as progress; signed, a value
    that moves both ways (health, x position) counts a small step down as negative: -1, not 2**bits - 1.
    """
    d = torch.remainder(now.to(torch.int32) - before.to(torch.int32), 1 << bits)
    return (_as_signed(d, bits) if signed else d).to(torch.float32)


def ram_level(value: torch.Tensor, bits: int, signed: bool) -> torch.Tensor:
    """v = value mod 2**bits (its low ``bits`` bits), read as two's complement where ``signed``; float32."""
    v = torch.remainder(value.to(torch.int32), 1 << bits)
    return (_as_signed(v, bits) if signed else v).to(torch.float32)


def scale_reward(reward: torch.Tensor, factor: float) -> torch.Tensor:
    """reward' = factor * reward."""
    return factor * reward


def clip_reward(reward: torch.Tensor, low: float, high: float) -> torch.Tensor:
    """reward' = min(max(reward, low), high)."""
    return reward.clamp(low, high)


def discounted_return(acc: torch.Tensor, reward: torch.Tensor, gamma: float) -> torch.Tensor:
    """acc' = gamma * acc + reward: each env's discounted return so far (the caller zeroes acc where an episode
    ended, after using it, so the next episode starts from its own first reward)."""
    return gamma * acc + reward.to(acc.dtype)


def update_moments(mean: torch.Tensor, var: torch.Tensor, count: torch.Tensor,
                   batch: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Running mean and (population) variance of every value seen, updated with a batch of B values at once
    (Chan, Golub and LeVeque's parallel update; 0-dim tensors, no host sync):

        delta  = mean_b - mean                       mean_b, var_b: the batch's mean and population variance
        count' = count + B
        mean'  = mean + delta * B / count'
        var'   = (var * count + var_b * B + delta**2 * count * B / count') / count'

    So (mean', var') are exactly the moments of the pooled values; starting from (0, 1, c) they are those
    of the values seen plus a pseudo-sample of weight c with mean 0 and variance 1 (c = 1e-4 in
    ``return_norm``, as gymnasium's and SB3's running statistics: it keeps the first division finite).
    """
    b = batch.numel()
    batch = batch.to(mean.dtype)
    mean_b = batch.mean()
    var_b = batch.var(correction=0)
    delta = mean_b - mean
    total = count + b
    new_mean = mean + delta * b / total
    new_var = (var * count + var_b * b + delta.square() * count * b / total) / total
    return new_mean, new_var, total


def normalize_by_return_std(reward: torch.Tensor, var: torch.Tensor, eps: float) -> torch.Tensor:
    """reward' = reward / sqrt(var + eps), var the running variance of the discounted returns: rewards on a scale
    where returns have about unit variance. The mean is not subtracted (that would shift every reward and, with
    episodes that end, change which policy is best)."""
    return (reward.to(var.dtype) / torch.sqrt(var + eps)).to(reward.dtype)


# ---------------------------------------------------------------------------------------------- RAM-map progress
# (envs/ram_rewards.py composes these into the explore, ram_bits, ram_sum and ram_max items)
_POPCOUNT = [bin(b).count("1") for b in range(256)]
_POPCOUNT_TABLES: dict[torch.device, torch.Tensor] = {}   # per device, made once: no host-to-device copy per step


def popcount_bytes(raw: torch.Tensor) -> torch.Tensor:
    """bits[n] = number of 1 bits in raw[n, :] (uint8 [N, L] -> int64 [N]): event flags, badges, a Pokedex."""
    table = _POPCOUNT_TABLES.get(raw.device)
    if table is None:
        table = _POPCOUNT_TABLES[raw.device] = torch.tensor(_POPCOUNT, dtype=torch.int64, device=raw.device)
    return table[raw.to(torch.int64)].sum(-1)


def progress_gain(now: torch.Tensor, before: torch.Tensor, best: torch.Tensor,
                  mode: str) -> tuple[torch.Tensor, torch.Tensor]:
    """(gain float32 [N], best') of a game number that measures progress, per env:

        mode delta:    gain = now - before                  (both ways; telescopes over an episode: unfarmable)
        mode increase: gain = max(now - before, 0)          (rises only: healing; going down and up again pays twice)
        mode record:   gain = max(now - best, 0)            (new highs of the episode only: levels, flags, badges)
        best' = max(best, now)
    """
    if mode == "delta":
        gain = now - before
    elif mode == "increase":
        gain = (now - before).clamp(min=0)
    elif mode == "record":
        gain = (now - best).clamp(min=0)
    else:
        raise ValueError(f"progress_gain: mode must be delta, increase or record, got {mode!r}")
    return gain.to(torch.float32), torch.maximum(best, now)


_HASH_MUL = 0x45D9F3B   # Thomas Mueller's 32-bit integer hash: every product stays below 2**59 in int64


def cell_index(values: torch.Tensor, widths: list[int], log2_bits: int) -> torch.Tensor:
    """The bit a cell (one tuple of game numbers per env, int64 [N, F], value f < 2**widths[f]) takes in a
    bitset of 2**log2_bits bits, int64 [N]:

        exact   when sum(widths) <= log2_bits: the numbers side by side, key = sum_f v_f << (sum of the widths after f)
                (no two cells share a bit);
        hashed  otherwise: h = (h * 1000003) ^ v_f over the fields (mod 2**32), then mixed
                (h = ((h >> 16) ^ h) * 0x45d9f3b mod 2**32, twice, h ^= h >> 16) and index = h mod 2**log2_bits
                (two cells may share a bit: the later one then looks visited).
    """
    if sum(widths) <= log2_bits:
        key = torch.zeros(values.shape[0], dtype=torch.int64, device=values.device)
        for f, width in enumerate(widths):
            key = (key << width) | values[:, f]
        return key
    mask = 0xFFFFFFFF
    h = torch.zeros(values.shape[0], dtype=torch.int64, device=values.device)
    for f in range(values.shape[1]):
        h = ((h * 1000003) & mask) ^ (values[:, f] & mask)
    for _ in range(2):
        h = (((h >> 16) ^ h) * _HASH_MUL) & mask
    h = (h >> 16) ^ h
    return h & ((1 << log2_bits) - 1)


def visit_cells(bitset: torch.Tensor, index: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(first bool [N], bitset'): mark cell index[n] in env n's bitset (int64 [N, W], 64 cells a word);
    first[n] where it was not marked before. One word per env is read and written: no two envs touch one row."""
    word = (index >> 6).unsqueeze(1)
    bit = torch.ones_like(index) << (index & 63)
    words = bitset.gather(1, word).squeeze(1)
    first = (words & bit) == 0
    return first, bitset.scatter(1, word, (words | bit).unsqueeze(1))
