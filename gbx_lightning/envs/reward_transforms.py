"""Reward pipelines: an env's reward as an ordered list of small pieces, configured in YAML.

Game Boy rewards are compositions (a goal-template term, game-RAM terms, a price per step, a
bonus at the end, clipping or normalisation), and a new term should not need an edit of the
env. A task's ``reward`` (``envs/task.py``) is a preset name or a list of items, run in list order
at every step of every env:

    reward:                                         # model.init_args.env.init_args.task.reward
      - {name: step_cost, cost: -0.01}
      - {name: goal_distance}                      # alpha: the goal's JSON (or the task's alpha)
      - {name: goal_distance, gamma: 0.997}        # the same as potential-based shaping for a learner's gamma
      - {name: ram, address: 0xC0A4, weight: 0.1}  # +0.1 per step the byte at $C0A4 counts up
      - {name: success_bonus, bonus: 1.0}
      - {name: clip, low: -1.0, high: 1.0}
      - {name: return_norm, gamma: 0.99}
      - {name: mypackage.rewards.Curiosity, weight: 0.01}   # your own, by import path

The preset is such a list: ``goal`` = step_cost, goal_distance, success_bonus, fail_penalty
(their values from the task's ``step_cost``, ``alpha``, ``goal_bonus``, ``fail_penalty``, which
default to the goal's JSON). In a list, an item that leaves out one of those values takes the
task's. (A game's own terms are items too: orchard's task files show ``goal`` plus a ``ram``
term on its seeds-eaten byte.)

Two kinds of item (``BUILTINS`` lists the built-in ones, each with its formula in its file):

* a **term** computes a value per env and adds it to the reward: ``step_cost``,
  ``goal_distance``, ``ram``, ``success_bonus``, ``fail_penalty`` (``reward_items.py``), the RAM map's ``explore``,
  ``ram_bits``, ``ram_sum``, ``ram_max`` (``envs/ram_rewards.py``: fields by name from the task's
  ``ram_map``), ``screen_novelty`` (``envs/screen_novelty.py``: new screens, from the pixels alone, for a game
  without a RAM map), and yours (the default kind);
* a **transform** maps the reward summed so far: ``scale``, ``clip``, ``return_norm``, and
  yours with ``kind: transform``. A term listed after a transform is added untransformed.

Three stages:

1. *Per step*: every item runs at every step of every env (a step's reward is computed from
   its last screen and RAM, before the ended envs are reset).
2. *Per episode*: ``success_bonus`` and ``fail_penalty`` are non-zero only on the step an
   episode ends by termination (the goal or fail template matched; never on truncation), the
   step whose reward they belong to. ``return_norm`` zeroes an env's return accumulator on
   the step its episode ends, terminated or truncated, after that step's update.
3. *At sampling time*, in the learner: reward or advantage normalisation over a rollout, per
   batch or per env (``gbx_lightning/rl/normalize.py``, ``model.init_args.sample_transforms``).

Which return is which. The agent trains on the pipeline's output (the reward ``step`` returns).
``info["episode_return"]`` (the logs' ``episode_return_mean``, evaluation's ``return_mean``) is
the *game return*: the episode's sum of the terms, each with its weight, before any transform,
so it does not move when you add clipping or normalisation and compares across runs and papers
(CleanRL and SB3 record their episode statistics before their reward wrappers too). With a
transform in the list, ``info["trained_return"]`` (``episode_trained_return_mean``) is the
episode's sum of the rewards trained on; without one the two are the same and it is left out.

Running state. ``return_norm``'s statistic (mean, variance, count: float64 on the env's device)
and its per-env accumulators are in the env's ``state_dict``, so in every checkpoint: a resumed
run normalises exactly as the uninterrupted one. When a checkpoint leaves the env state out
(over ``--env_state_max_mb``, said in one line when it starts) the statistic is still kept
(``RolloutStream``). Under DDP each
process keeps the statistic of its own envs (per rank, saved per rank), as each has its envs.

Your own item, by import path (``name: package.module.Attr``; the module must be importable):

* a function ``f(ctx, **params) -> float32 [N]`` (a term) or ``f(reward, ctx, **params)``
  (``kind: transform``); the item's other keys are its ``params``;
* or a class, built once as ``Attr(**params)`` (plus ``num_envs=`` and ``device=`` if its
  constructor names them) and called as ``obj(ctx)`` / ``obj(reward, ctx)``. It may define
  ``sync(env)`` (called after every reset and load: read what it remembers from the env),
  ``reset()``, ``state_dict()`` / ``load_state_dict(state)`` (saved in checkpoints, with the
  envs' state).

A term's value is multiplied by ``weight`` (default 1), once: a function or class that names a
parameter ``weight`` of its own is handed the item's weight instead (its own default when the item
gives none) and the pipeline multiplies by 1. ``ctx`` is a ``RewardContext``: the env
(``ctx.env.read_ram(addr, length)``), and bool/float [N] tensors ``terminated``, ``truncated``,
``done``, ``success``, ``failed``, ``dist``, ``prev_dist``; a per-episode term of your own is
``torch.where(ctx.done, value, 0.0)``. Every item is checked (names, values, imports, signatures)
by ``check_reward_spec`` before any env is built, each problem in one line naming the list
index and field (``reward[2].factor must be a number, got 'x'``).

The protocol every item follows is ``envs/reward_item.py``'s. A new built-in item is one file (importing the
protocol from ``reward_item.py``, never this file, which imports the items) and one line in ``BUILTINS`` below.
"""

from __future__ import annotations

import importlib
import inspect
import warnings
from typing import Callable

import torch

from gbx_lightning.checks import number_problem

from .base import OptionError
from .ram_map import RamMap, resolve_field
from .ram_rewards import Explore, RamBits, RamMax, RamSum
from .reward_item import REQUIRED, WRAM, Param, RewardContext, RewardItem, RewardSpecError, param_problem
from .reward_items import Clip, FailPenalty, GoalDistance, RamTerm, ReturnNorm, Scale, StepCost, SuccessBonus
from .screen_novelty import ScreenNovelty
from .world import require_world

__all__ = ["BUILTINS", "PRESETS", "Param", "RewardContext", "RewardItem", "RewardPipeline", "RewardSpecError", "WRAM",
           "build_reward_pipeline", "check_reward_spec", "preset_spec"]

PRESETS = ("goal",)

# the built-in items by name: one line each (the class in its own file, on the protocol of reward_item.py)
BUILTINS: dict[str, type[RewardItem]] = {
    "step_cost": StepCost,
    "goal_distance": GoalDistance,
    "ram": RamTerm,
    "success_bonus": SuccessBonus,
    "fail_penalty": FailPenalty,
    "scale": Scale,
    "clip": Clip,
    "return_norm": ReturnNorm,
    "explore": Explore,                 # ram_rewards.py: over the task's RAM map
    "ram_bits": RamBits,
    "ram_sum": RamSum,
    "ram_max": RamMax,
    "screen_novelty": ScreenNovelty,    # screen_novelty.py: new screens, from the pixels alone
}


class UserItem(RewardItem):
    """An item of yours, by import path (module docstring): a function called with its params, or a class built
    once with them. A term's value is checked (shape [N], floating point, device) and multiplied by ``weight``."""

    def __init__(self, label: str, target: Callable, kind: str, weight: float, params: dict, num_envs: int,
                 device: torch.device):
        self.label, self.kind, self.weight = label, kind, float(weight)
        self.shape, self.device = (num_envs,), device
        if inspect.isclass(target):
            names = inspect.signature(target).parameters
            extra = {k: v for k, v in (("num_envs", num_envs), ("device", device)) if k in names}
            self.fn = target(**params, **extra)
        else:
            self.fn = (lambda *args: target(*args, **params)) if params else target

    def __call__(self, *args) -> torch.Tensor:
        value = self.fn(*args)
        if (not isinstance(value, torch.Tensor) or tuple(value.shape) != self.shape or not value.is_floating_point()
                or value.device != self.device):
            got = (f"{value.dtype} {list(value.shape)} on {value.device}" if isinstance(value, torch.Tensor)
                   else type(value).__name__)
            raise ValueError(f"reward item {self.label} must return a floating point tensor of shape "
                             f"[N]={list(self.shape)} on {self.device}, got {got}")
        value = value.to(torch.float32)
        return self.weight * value if self.kind == "term" else value

    def _hook(self, name: str):
        hook = getattr(self.fn, name, None)
        return hook if callable(hook) and not inspect.isfunction(self.fn) else None

    def sync(self, env) -> None:
        if self._hook("sync"):
            self.fn.sync(env)

    def reset(self) -> None:
        if self._hook("reset"):
            self.fn.reset()

    def state_dict(self, per_env: bool = True) -> dict:
        # your item's state is saved with the envs (a checkpoint that leaves them out keeps none of it)
        return self.fn.state_dict() if per_env and self._hook("state_dict") else {}

    def load_state_dict(self, state: dict) -> None:
        if self._hook("load_state_dict"):
            self.fn.load_state_dict(state)


# ---------------------------------------------------------------------------------------------- specs
_USER_KEYS = ("name", "kind", "weight")


def preset_spec(preset: str) -> list[dict]:
    """A preset as the list it stands for; left-out values come from the task (step_cost, alpha, ...).
    The order is the sum's order, so the preset gives the rewards it gave before lists existed, bit for bit."""
    if preset == "goal":
        return [{"name": "step_cost"}, {"name": "goal_distance"}, {"name": "success_bonus"}, {"name": "fail_penalty"}]
    raise ValueError(f"reward must be one of {PRESETS} or a list of items, got {preset!r}")


def _import(path: str):
    module_name, _, attr = path.rpartition(".")
    return getattr(importlib.import_module(module_name), attr)


def _user_item(i: int, item: dict) -> tuple[Callable, str, float, dict]:
    """(target, kind, weight, params) of an item naming an import path; RewardSpecError on any problem."""
    where = f"reward[{i}]"
    try:
        target = _import(item["name"])
    except Exception as err:  # noqa: BLE001 - whatever importing user code raises: one line naming the item
        raise RewardSpecError(f"{where}.name", f"cannot be imported: {item['name']!r} ({type(err).__name__}: "
                                               f"{err})") from None
    if not callable(target):
        raise RewardSpecError(f"{where}.name", f"must name a function or a class, got {item['name']!r} "
                                               f"({type(target).__name__})")
    kind = item.get("kind", "term")
    if kind not in ("term", "transform"):
        raise RewardSpecError(f"{where}.kind", f"must be one of ['term', 'transform'], got {kind!r}")
    try:
        sig = inspect.signature(target)
    except (TypeError, ValueError):
        sig = None                            # a builtin without a signature: called as is
    # a function or class that names a parameter `weight` owns it: the item's weight is passed to it (its own
    # default when the item has none) and the pipeline multiplies by 1, never by both (the double scaling of a
    # class with weight=0.01 given weight: 0.02 was 0.0002)
    owns_weight = sig is not None and "weight" in sig.parameters and \
        sig.parameters["weight"].kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    weight = item.get("weight", 1.0)
    if "weight" in item and kind == "transform" and not owns_weight:
        raise RewardSpecError(f"{where}.weight", "applies to terms only (this item is a transform); leave it out")
    problem = number_problem(weight)
    if problem is not None:
        raise RewardSpecError(f"{where}.weight", problem)
    params = {k: v for k, v in item.items() if k not in _USER_KEYS or k == "weight" and owns_weight}
    if owns_weight:
        weight = 1.0
    if sig is None:
        return target, kind, weight, params
    names = sig.parameters
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in names.values())
    if inspect.isclass(target):
        fixed = ()
        injected = {k: None for k in ("num_envs", "device") if k in names}
    else:
        fixed = (None,) if kind == "term" else (None, None)   # ctx / reward, ctx
        injected = {}
    for key in params:
        if not takes_any and (key not in names or key in ("num_envs", "device") and inspect.isclass(target)):
            known = [k for k in names if k not in ("num_envs", "device", "ctx", "reward", "self")]
            raise RewardSpecError(f"{where}.{key}", f"is not a parameter of {item['name']}; parameters: "
                                                    f"{', '.join(known) or '(none)'}")
    try:
        sig.bind(*fixed, **params, **injected)
    except TypeError as err:
        call = "(**params)" if inspect.isclass(target) else "(ctx, **params)" if kind == "term" else \
            "(reward, ctx, **params)"
        raise RewardSpecError(where, f"does not fit {item['name']}{call}: {err}") from None
    return target, kind, weight, params


def _builtin_params(i: int, item: dict, ram_map: RamMap | None = None) -> tuple[type[RewardItem], dict]:
    """The built-in's class and its params with plain defaults filled in (env defaults left as None) and the RAM
    map's fields resolved (``FIELD_PARAMS``)."""
    cls = BUILTINS[item["name"]]
    where = f"reward[{i}]"
    for key in item:
        if key != "name" and key not in cls.PARAMS:
            raise RewardSpecError(f"{where}.{key}", f"is not a parameter of {item['name']}; parameters: "
                                                    f"{', '.join(cls.PARAMS) or '(none)'}")
    params = {}
    for key, spec in cls.PARAMS.items():
        if key in item:
            problem = param_problem(spec, item[key])
            if problem is not None:
                raise RewardSpecError(f"{where}.{key}", problem)
            params[key] = item[key]
        elif spec.env is not None:
            params[key] = None
        elif spec.default is REQUIRED:
            raise RewardSpecError(f"{where}.{key}", f"is required by {item['name']} (missing)")
        else:
            params[key] = spec.default
    bad = cls.check(params)
    if bad is not None:
        raise RewardSpecError(f"{where}.{bad[0]}", bad[1])
    return cls, _resolve_fields(cls, params, ram_map, where)


def _resolve_fields(cls, params: dict, ram_map: RamMap | None, where: str) -> dict:
    """``params`` with the names of ``cls.FIELD_PARAMS`` replaced by RamFields (RewardSpecError naming the item's
    field, e.g. ``reward[2].fields[1]``)."""
    out = dict(params)
    for key, many in cls.FIELD_PARAMS.items():
        value = params.get(key)
        if value is None:
            continue
        try:
            if many:
                out[key] = [resolve_field(ram_map, ref, f"{where}.{key}[{j}]") for j, ref in enumerate(value)]
            else:
                out[key] = resolve_field(ram_map, value, f"{where}.{key}")
        except OptionError as err:
            raise RewardSpecError(err.option, err.message) from None
    if "world" in cls.PARAMS:       # world: true -> the RAM map's world layout (envs/world.py); false -> None
        try:
            out["world"] = require_world(ram_map, f"{where}.world") if params.get("world") else None
        except OptionError as err:
            raise RewardSpecError(err.option, err.message) from None
    bad = cls.check_fields(out)
    if bad is not None:
        raise RewardSpecError(f"{where}.{bad[0]}", bad[1])
    return out


def _items(spec) -> list:
    if isinstance(spec, str):
        raise RewardSpecError("reward", f"must be one of {PRESETS} or a list of items, got {spec!r}")
    if not isinstance(spec, (list, tuple)):
        raise RewardSpecError("reward", f"must be one of {PRESETS} or a list of items ({{name: ..., ...}}), got "
                                        f"{spec!r}")
    if not spec:
        raise RewardSpecError("reward", "must list at least one item (an empty list would train on 0)")
    for i, item in enumerate(spec):
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            raise RewardSpecError(f"reward[{i}]", f"must be a mapping with a name (one of {sorted(BUILTINS)} or an "
                                                  f"import path package.module.Name), got {item!r}")
        if item["name"] not in BUILTINS and "." not in item["name"]:
            raise RewardSpecError(f"reward[{i}].name", f"must be one of {sorted(BUILTINS)} or an import path "
                                                       f"package.module.Name, got {item['name']!r}")
    return list(spec)


def check_reward_spec(spec, *, has_goal: bool, has_fail: bool, ram_map: RamMap | None = None,
                      has_success: bool = False) -> None:
    """Check a ``reward`` list without building anything (user items are imported and their signatures
    checked). Raises RewardSpecError naming the item and field. ``has_goal``/``has_fail``: whether the env
    will have a goal / fail template (goal_distance reads the goal; fail_penalty the fail); success_bonus needs a
    way to succeed: the goal, or ``has_success`` (a milestone with ``success: true``)."""
    templates = {"goal": has_goal, "fail": has_fail, "success": has_goal or has_success}
    for i, item in enumerate(_items(spec)):
        if item["name"] in BUILTINS:
            cls, _ = _builtin_params(i, item, ram_map)
            for need in cls.needs:
                if not templates[need] and need == "success":
                    raise RewardSpecError(f"reward[{i}]", f"({item['name']}) needs a way to succeed: a goal "
                                                          f"template (tools/capture_goal.py makes one) or a "
                                                          f"ram_goal (a RAM map field's value)")
                if not templates[need]:
                    raise RewardSpecError(f"reward[{i}]", f"({item['name']}) needs a {need} template: set the "
                                                          f"task's {need} (tools/capture_goal.py makes one)")
        else:
            _user_item(i, item)


def build_reward_pipeline(spec, num_envs: int, device: torch.device, env_defaults: dict,
                          ram_map: RamMap | None = None) -> "RewardPipeline":
    """The pipeline of a preset name or a list (checked here too, without the template requirements: the
    presets include the goal and fail terms whether or not the env has the templates, which then add 0).
    ``env_defaults``: the env's resolved step_cost, alpha, goal_bonus, fail_penalty (the task's, or its goal's)."""
    if isinstance(spec, str):
        spec = preset_spec(spec)
    items = []
    for i, item in enumerate(_items(spec)):
        label = f"{i}:{item['name']}"
        if item["name"] in BUILTINS:
            cls, params = _builtin_params(i, item, ram_map)
            params = {k: env_defaults[cls.PARAMS[k].env] if v is None and cls.PARAMS[k].env else v
                      for k, v in params.items()}
            items.append((label, cls(**params, num_envs=num_envs, device=device)))
        else:
            target, kind, weight, params = _user_item(i, item)
            items.append((label, UserItem(label, target, kind, weight, params, num_envs, device)))
    return RewardPipeline(items, num_envs, device)


# ---------------------------------------------------------------------------------------------- the pipeline
class RewardPipeline:
    """The items in order; ``pipeline(ctx) -> (reward, game_reward)`` (module docstring: which is which).

    The env calls ``sync(env)`` after every reset (its own and the auto-resets inside ``step``) and after
    ``load_state_dict``, ``reset()`` from its ``reset``. Tensor ops only: no host sync, no loop over envs.
    """

    def __init__(self, items: list[tuple[str, RewardItem]], num_envs: int, device: torch.device):
        self.items = items
        self.labels = [label for label, _ in items]
        self.num_envs, self.device = num_envs, device
        self.has_transforms = any(item.kind == "transform" for _, item in items)

    def __call__(self, ctx: RewardContext) -> tuple[torch.Tensor, torch.Tensor]:
        """(reward trained on, game reward = the sum of the terms). The same tensor when nothing transforms."""
        reward = game = None
        for _, item in self.items:
            if item.kind == "term":
                value = item(ctx)
                # the first term is the sum so far as it is (no 0 + x): presets reproduce the old sums bit for bit
                reward = value if reward is None else reward + value
                if self.has_transforms:
                    game = value if game is None else game + value
            else:
                reward = item(self._zeros() if reward is None else reward, ctx)
        reward = self._zeros() if reward is None else reward
        if not self.has_transforms:
            return reward, reward
        return reward, self._zeros() if game is None else game

    def _zeros(self) -> torch.Tensor:
        return torch.zeros(self.num_envs, dtype=torch.float32, device=self.device)

    def sync(self, env) -> None:
        for _, item in self.items:
            item.sync(env)

    def reset(self) -> None:
        for _, item in self.items:
            item.reset()

    def state_dict(self, per_env: bool = True) -> dict[str, dict]:
        """{label: state} of the stateful items (label "index:name"); ``per_env=False``: only statistics that
        belong to no particular env (what a checkpoint keeps when it leaves the envs out)."""
        out = {}
        for label, item in self.items:
            state = item.state_dict(per_env)
            if state:
                out[label] = state
        if not per_env:
            out["per_env"] = False   # the envs' own state was left out: a resume says so once, not per item
        return out

    def load_state_dict(self, state: dict[str, dict]) -> None:
        """Restore the items' states by label; an item with no saved state (the list changed since the
        checkpoint) starts fresh, with a warning. A ``state_dict(per_env=False)`` (a checkpoint that left the envs
        out) lacks every item's per-env state by design: only a missing statistic is warned of."""
        per_env = state.get("per_env", True) is not False
        for label, item in self.items:
            if label in state:
                item.load_state_dict(state[label])
            elif item.state_dict(per_env):
                warnings.warn(f"reward item {label}: no state in the checkpoint (the reward list changed?); it "
                              f"starts fresh", stacklevel=2)

    @property
    def state_nbytes(self) -> int:
        return sum(t.numel() * t.element_size() for state in self.state_dict().values() for t in state.values()
                   if isinstance(t, torch.Tensor))
