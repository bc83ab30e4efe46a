"""Goal and fail templates: the screens that end an episode (``envs/goal.py`` on disk, ``envs/rewards.py`` formulas).

    dist = mean over the template's region of |screen - template| / 3        (a Warp kernel per CPU shard, in the
                                                                             shard's thread right after its frames)
    hits = hits + 1 where dist < tau, else 0; matched when hits >= k_consecutive

The goal matched: terminated, success. The fail screen matched (and not the goal): terminated, failure. The goal's
distance after and before the step (``dist``, ``prev_dist``) are what the reward's ``goal_distance`` term reads; a
restarted episode's ``prev_dist`` is its start row's distance (the start cache's ``dist`` column). A template's
values default from its PNG's JSON, under the task's own (``task.goal.tau``, ``task.step_cost``, ...); the reward
items take ``step_cost``, ``alpha``, ``goal_bonus`` and ``fail_penalty`` from ``reward_settings`` too.
"""
from __future__ import annotations

import numpy as np
import torch
import warp as wp

from ..base import check_float, check_int
from ..goal import REWARD_DEFAULTS, GoalTemplate, load_goal
from ..pixels import template_distance
from ..rewards import consecutive_hits, goal_distance
from .base import Feature, Step, loaded_tensor

__all__ = ["Templates", "reward_settings"]


def reward_settings(task, goal: GoalTemplate | None) -> dict:
    """The goal terms' values: REWARD_DEFAULTS < the goal PNG's JSON < the task's (step_cost, alpha, goal_bonus;
    tau and k_consecutive of the goal), and fail_penalty (the task's)."""
    goal_json = {**REWARD_DEFAULTS, **(goal.reward if goal is not None else {})}
    given = {"tau": task.goal.tau if task.goal else None,
             "k_consecutive": task.goal.k_consecutive if task.goal else None,
             "step_cost": task.step_cost, "alpha": task.alpha, "goal_bonus": task.goal_bonus}
    settings = {**goal_json, **{k: v for k, v in given.items() if v is not None}}
    return {"tau": check_float("tau", settings["tau"], 0.0, 1.0, strict_min=True),
            "k_consecutive": check_int("k_consecutive", settings["k_consecutive"], minimum=1),
            "step_cost": check_float("step_cost", settings["step_cost"]),
            "alpha": check_float("alpha", settings["alpha"]),
            "goal_bonus": check_float("goal_bonus", settings["goal_bonus"]),
            "fail_penalty": float(task.fail_penalty)}


class Templates(Feature):
    """The task's goal and fail templates for the envs of one GameBoyEnv (module docstring)."""
    name = "templates"
    title = "the goal/fail templates' progress"
    INFO = ("success", "failed")

    @classmethod
    def build(cls, task, env) -> "Templates | None":
        if task.goal is None and task.fail is None:
            return None
        return cls(task, env)

    def __init__(self, task, env):
        self.env = env
        n, dev = env.num_envs, env.device
        self.goal = load_goal(task.goal.path, field="task.goal") if task.goal is not None else None
        self.fail = load_goal(task.fail.path, field="task.fail") if task.fail is not None else None
        settings = reward_settings(task, self.goal)
        self.tau, self.k_consecutive = settings["tau"], settings["k_consecutive"]
        fail_json = self.fail.reward if self.fail is not None else REWARD_DEFAULTS
        self.fail_tau = (float(task.fail.tau) if task.fail is not None and task.fail.tau is not None
                         else float(fail_json["tau"]) if self.fail is not None else 0.0)
        self.fail_k = check_int("k_consecutive", task.fail.k_consecutive if task.fail is not None and
                                task.fail.k_consecutive is not None else fail_json["k_consecutive"], minimum=1)
        self.reward_settings = settings
        self._arrays = self._template_arrays(env.machines[0].device)
        self.dist = torch.zeros((2, n), dtype=torch.float32, device=dev)   # rows: goal, fail
        self._dist_wp = wp.from_torch(self.dist)
        self.prev_dist = torch.zeros(n, device=dev)
        self.hits = torch.zeros(n, dtype=torch.int32, device=dev)
        self.fail_hits = torch.zeros(n, dtype=torch.int32, device=dev)
        # each start row's goal distance: what prev_dist becomes where an episode restarts from it
        screens = env.cache.screens
        start = (goal_distance(screens, torch.from_numpy(self.goal.image).to(dev),
                               torch.from_numpy(self.goal.weights).to(dev))
                 if self.goal is not None else torch.zeros(screens.shape[0], device=dev))
        env.cache.add_column("dist", start, lambda: self.dist[0])

    def _template_arrays(self, device) -> tuple:
        """The goal and fail templates as the distance kernel's inputs (an absent one: an empty box)."""
        images = np.zeros((2, 72, 80), np.uint8)
        weights = np.zeros((2, 72, 80), np.float32)
        boxes = np.zeros((2, 4), np.int32)
        scale = np.zeros(2, np.float32)
        for t, template in enumerate((self.goal, self.fail)):
            if template is None:
                continue
            images[t], weights[t] = template.image, template.weights
            ys, xs = np.nonzero(template.weights)
            boxes[t] = ys.min(), ys.max() + 1, xs.min(), xs.max() + 1
            scale[t] = 1.0 / (3.0 * template.weights.sum())
        return tuple(wp.array(a, device=device) for a in (images, weights, boxes, scale))

    def on_shard(self, shard) -> None:
        wp.launch(template_distance, dim=(2, shard.gb.num_envs), inputs=[shard.obs, *self._arrays, shard.lo,
                                                                         self._dist_wp], device=shard.gb.device)

    def after_step(self, step: Step) -> None:
        dist, fail_dist = self.dist[0], self.dist[1]
        success = failed = None
        if self.goal is not None:
            self.hits, success = consecutive_hits(dist, self.hits, self.tau, self.k_consecutive)
        if self.fail is not None:
            self.fail_hits, failed = consecutive_hits(fail_dist, self.fail_hits, self.fail_tau, self.fail_k)
            failed = failed & ~(success if success is not None else step.success)
        step.terminate(success, failed)
        step.dist, step.prev_dist = dist, self.prev_dist

    def reset(self, step: Step | None) -> None:
        column = self.env.cache.columns["dist"]
        if step is None:
            self.prev_dist = column[self.env.slots].clone()
            self.hits.zero_()
            self.fail_hits.zero_()
            return
        done = step.done
        start_dist = column[0] if column.shape[0] == 1 else column[step.slots]
        self.prev_dist = torch.where(done, start_dist, step.dist)
        zero = torch.zeros((), dtype=torch.int32, device=done.device)
        self.hits = torch.where(done, zero, self.hits)
        self.fail_hits = torch.where(done, zero, self.fail_hits)

    _KEYS = ("prev_dist", "hits", "fail_hits")

    def state_dict(self) -> dict:
        return {k: getattr(self, k).cpu().clone() for k in self._KEYS}

    def load_state_dict(self, state: dict | None, where: str) -> None:
        state = state or {}
        missing = [k for k in self._KEYS if k not in state]
        if missing:
            from ..base import StateError
            raise StateError(f"{where}: templates state is missing {missing} (saved by a task without a goal or fail "
                             f"template?)")
        for key in self._KEYS:
            setattr(self, key, loaded_tensor(where, key, state[key], getattr(self, key)))
