"""The built-in reward items but the RAM map's (``ram_rewards.py``): the goal template's terms, a WRAM number,
and the transforms (each class's docstring has its formula; ``rewards.py`` the functions).

    step_cost      term, per step      cost
    goal_distance  term, per step      alpha * (prev_dist - dist); with gamma: alpha * (prev_dist - gamma * dist)
    ram            term, per step      weight * (the change / the level of a WRAM number)
    success_bonus  term, per episode   bonus where the episode ended by success (the goal, a success milestone)
    fail_penalty   term, per episode   penalty where the fail template ended it
    scale, clip, return_norm           transforms of the reward summed so far
"""
from __future__ import annotations

import torch

from .ram_map import FieldReader
from .reward_item import WRAM, Param, RewardContext, RewardItem
from gbx_lightning.checks import number_problem

from .rewards import (clip_reward, discounted_return, normalize_by_return_std, potential_shaping, progress_reward,
                      ram_delta, ram_level, ram_value, scale_reward, update_moments)

__all__ = ["Clip", "FailPenalty", "GoalDistance", "RamTerm", "ReturnNorm", "Scale", "StepCost", "SuccessBonus"]


class StepCost(RewardItem):
    """term, per step: value = cost (usually < 0: a price per step, be quick)."""
    PARAMS = {"cost": Param(env="step_cost", bounds={})}

    def __init__(self, cost: float, num_envs: int, device: torch.device):
        self.cost, self.shape, self.device = float(cost), (num_envs,), device

    def __call__(self, ctx: RewardContext) -> torch.Tensor:
        return torch.full(self.shape, self.cost, dtype=torch.float32, device=self.device)


class GoalDistance(RewardItem):
    """term, per step, the goal-template progress term (``rewards.py``): with ``gamma`` null (the default) the seed's
    form alpha * (prev_dist - dist); with ``gamma`` (set it to the learner's gamma) potential-based shaping,
    gamma * phi(s') - phi(s) with phi = -alpha * dist and phi = 0 at termination (``rewards.potential_shaping``),
    which cannot change the optimal policy of a learner that discounts by gamma."""
    needs = ("goal",)
    PARAMS = {"alpha": Param(env="alpha", bounds={}),
              "gamma": Param(None, problem=lambda v: number_problem(v, low=0.0, high=1.0, low_open=True, none="null"))}

    def __init__(self, alpha: float, gamma: float | None, num_envs: int, device: torch.device):
        self.alpha = float(alpha)
        self.gamma = None if gamma is None else float(gamma)

    def __call__(self, ctx: RewardContext) -> torch.Tensor:
        if self.gamma is None:
            return progress_reward(ctx.dist, ctx.prev_dist, self.alpha)
        return potential_shaping(ctx.dist, ctx.prev_dist, self.alpha, self.gamma, ctx.terminated)


def _wram_address_problem(value) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not WRAM[0] <= value <= WRAM[1]:
        return f"must be a WRAM address, an int in 0x{WRAM[0]:X}..0x{WRAM[1]:X}, got {value!r}"
    return None


def _field_ref_problem(value) -> str | None:
    if value is None or isinstance(value, str) or isinstance(value, int) and not isinstance(value, bool):
        return None
    return f"must be a RAM map field name (or a WRAM address), got {value!r}"


class RamTerm(RewardItem):
    """term, per step: value = weight * x, x read from the game's WRAM at the step's end (``rewards.py``):

        mode delta: x = ram_delta(now, before, bits, signed)   before = the value at the previous step's end
                                                               (or the episode's start)
        mode level: x = ram_level(now, bits, signed)

    ``now`` is the little-endian number in ``size`` bytes (1 or 2) from ``address``, or the task's RAM map
    ``field`` (a name; its size, byte order and BCD, one number of 1 or 2 bytes); ``bits`` (default
    8 * size) is the counter's width, where it wraps.
    """
    PARAMS = {"address": Param(None, problem=_wram_address_problem), "field": Param(None, problem=_field_ref_problem),
              "weight": Param(1.0, bounds={}), "mode": Param("delta", choices=("delta", "level")),
              "size": Param(1, choices=(1, 2)),
              "bits": Param(None, bounds=dict(low=1, high=16, integer=True, none="null")),
              "signed": Param(False, choices=(False, True))}
    FIELD_PARAMS = {"field": False}

    @classmethod
    def check(cls, params: dict) -> tuple[str, str] | None:
        if (params["address"] is None) == (params["field"] is None):
            return "address", "or field (a RAM map name): give exactly one of them"
        if params["field"] is not None:
            return None
        if params["address"] + params["size"] - 1 > WRAM[1]:
            return "address", (f"+ size - 1 must be <= 0x{WRAM[1]:X} (WRAM), got 0x{params['address']:X} + "
                               f"{params['size']}")
        if params["bits"] is not None and params["bits"] > 8 * params["size"]:
            return "bits", f"must be <= 8 * size = {8 * params['size']}, got {params['bits']}"
        return None

    @classmethod
    def check_fields(cls, params: dict) -> tuple[str, str] | None:
        f = params["field"]
        if f is not None and (f.count != 1 or f.size > 2):
            return "field", (f"must be one number of 1 or 2 bytes, got {f.describe()}; ram_sum reads arrays and "
                             f"wider numbers")
        if f is not None and params["bits"] is not None and params["bits"] > f.bits:
            return "bits", f"must be <= the field's {f.bits} bits, got {params['bits']}"
        return None

    def __init__(self, address: int | None, field, weight: float, mode: str, size: int, bits: int | None, signed: bool,
                 num_envs: int, device: torch.device):
        if field is not None:
            address, size = field.address, field.size
        self.reader = FieldReader(field, device) if field is not None else None
        self.address, self.weight, self.mode, self.size = address, float(weight), mode, size
        self.bits, self.signed = 8 * size if bits is None else bits, bool(signed)
        self.before = torch.zeros(num_envs, dtype=torch.int32, device=device)

    def _read(self, env) -> torch.Tensor:
        if self.reader is not None:
            return self.reader(env)[:, 0].to(torch.int32)
        return ram_value(env.read_ram(self.address, self.size))

    def sync(self, env) -> None:
        if self.mode == "delta":   # the value every env shows now (after resets): the next step's "before"
            self.before = self._read(env)

    def __call__(self, ctx: RewardContext) -> torch.Tensor:
        now = self._read(ctx.env)
        x = ram_delta(now, self.before, self.bits, self.signed) if self.mode == "delta" else \
            ram_level(now, self.bits, self.signed)
        return self.weight * x


class SuccessBonus(RewardItem):
    """term, per episode: value = bonus on the step an episode ends by success (the goal template matched for
    k_consecutive steps, or a ``success`` milestone reached its ``at_least``: terminated), else 0."""
    needs = ("success",)
    PARAMS = {"bonus": Param(env="goal_bonus", bounds={})}

    def __init__(self, bonus: float, num_envs: int, device: torch.device):
        self.bonus = float(bonus)

    def __call__(self, ctx: RewardContext) -> torch.Tensor:
        return self.bonus * ctx.success.to(torch.float32)


class FailPenalty(RewardItem):
    """term, per episode: value = penalty (<= 0) on the step an episode ends by failure (the fail template
    matched: terminated), else 0."""
    needs = ("fail",)
    PARAMS = {"penalty": Param(env="fail_penalty", bounds=dict(high=0.0))}

    def __init__(self, penalty: float, num_envs: int, device: torch.device):
        self.penalty = float(penalty)

    def __call__(self, ctx: RewardContext) -> torch.Tensor:
        return self.penalty * ctx.failed.to(torch.float32)


class Scale(RewardItem):
    """transform: reward' = factor * reward."""
    kind = "transform"
    PARAMS = {"factor": Param(bounds={})}

    def __init__(self, factor: float, num_envs: int, device: torch.device):
        self.factor = float(factor)

    def __call__(self, reward: torch.Tensor, ctx: RewardContext) -> torch.Tensor:
        return scale_reward(reward, self.factor)


class Clip(RewardItem):
    """transform: reward' = min(max(reward, low), high) (default [-1, 1], as DQN's Atari rewards)."""
    kind = "transform"
    PARAMS = {"low": Param(-1.0, bounds={}), "high": Param(1.0, bounds={})}

    @classmethod
    def check(cls, params: dict) -> tuple[str, str] | None:
        if params["low"] > params["high"]:
            return "high", f"must be >= low = {params['low']!r}, got {params['high']!r}"
        return None

    def __init__(self, low: float, high: float, num_envs: int, device: torch.device):
        self.low, self.high = float(low), float(high)

    def __call__(self, reward: torch.Tensor, ctx: RewardContext) -> torch.Tensor:
        return clip_reward(reward, self.low, self.high)


class ReturnNorm(RewardItem):
    """transform, per step with an episode-aware accumulator: reward divided by the running standard deviation
    of the discounted return (gymnasium's NormalizeReward, SB3's VecNormalize), per env n at each step:

        acc[n]  = gamma * acc[n] + reward[n]                     (rewards.discounted_return)
        (mean, var, count) updated with the N values acc[:]      (rewards.update_moments; starts at (0, 1, 1e-4))
        reward' = reward / sqrt(var + eps)                       (rewards.normalize_by_return_std)
        acc[n]  = 0 where the episode ended at this step (terminated or truncated)

    As SB3 orders it: the ending step's reward is still part of the return it ends. (gymnasium 1.x's vector
    wrapper instead multiplies acc by (1 - terminated) before adding the reward, so at a terminal step acc is
    that step's reward alone; with truncations only the two agree.) ``gamma`` should be the learner's.
    The statistic keeps learning in every env that has the pipeline (also an evaluation env, whose
    rewards no reported number uses: evaluation reports game returns).
    """
    kind = "transform"
    PARAMS = {"gamma": Param(0.99, bounds=dict(low=0, high=1)), "eps": Param(1e-8, bounds=dict(low=0, low_open=True))}
    COUNT_PRIOR = 1e-4   # the statistic's starting weight (mean 0, variance 1), as gymnasium's and SB3's

    def __init__(self, gamma: float, eps: float, num_envs: int, device: torch.device):
        self.gamma, self.eps = float(gamma), float(eps)
        f64 = dict(dtype=torch.float64, device=device)
        self.acc = torch.zeros(num_envs, **f64)
        self.mean, self.var = torch.zeros((), **f64), torch.ones((), **f64)
        self.count = torch.full((), self.COUNT_PRIOR, **f64)

    def __call__(self, reward: torch.Tensor, ctx: RewardContext) -> torch.Tensor:
        self.acc = discounted_return(self.acc, reward, self.gamma)
        self.mean, self.var, self.count = update_moments(self.mean, self.var, self.count, self.acc)
        out = normalize_by_return_std(reward, self.var, self.eps)
        self.acc = self.acc.masked_fill(ctx.done, 0.0)
        return out

    def reset(self) -> None:
        self.acc = torch.zeros_like(self.acc)

    def state_dict(self, per_env: bool = True) -> dict:
        keys = ("mean", "var", "count", "acc") if per_env else ("mean", "var", "count")
        return {k: getattr(self, k).cpu().clone() for k in keys}

    def load_state_dict(self, state: dict) -> None:
        for key in ("mean", "var", "count", "acc"):
            mine = getattr(self, key)
            if key not in state:   # a statistic saved without the envs' accumulators: episodes start afresh
                setattr(self, key, torch.zeros_like(mine))
                continue
            src = torch.as_tensor(state[key])
            if src.shape != mine.shape:
                raise ValueError(f"return_norm.load_state_dict: {key} must have shape {list(mine.shape)}, got "
                                 f"{list(src.shape)}")
            setattr(self, key, src.to(mine.device, mine.dtype).clone())
