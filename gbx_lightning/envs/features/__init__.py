"""GameBoyEnv's features: what a task switches on, one file each, behind one protocol (``base.py``).

``FEATURES`` is the order the engine builds them in and calls every hook in (docs/design.md, "GameBoyEnv's
features"). It matters:

* ``templates`` first, then ``ram_goal``: the goal and fail screens and the RAM goal decide termination before
  anything reads it;
* ``heatmap``, ``milestones``: read the step's end; the milestones' progress is the pool's score;
* ``curriculum`` after the milestones (an episode passes on a milestone's report), before the pool (its draw of
  train starts comes first, the pool's on top);
* ``pool`` after the milestones: its swarm ends episodes (truncated) before the reward sees them, and it
  harvests (``before_reset``) before the resets read the cache;
* ``obs`` before the reward: the final observation shows the explore item's cells before it marks them;
* ``reward`` after every feature that ends episodes: its items see the step's final ``done``;
* ``counters`` last (independent of the rest).

Adding a feature: a file here with a ``Feature`` subclass, and its class in ``FEATURES``.
"""
from __future__ import annotations

from .base import Feature, Step
from .counters import Counters
from .curriculum import Curriculum
from .heatmap import VisitHeatmap
from .milestones import MilestoneTracker
from .observations import DataPlane
from .pool import StatePoolFeature
from .ram_goal import RamGoalFeature
from .reward import Reward
from .templates import Templates

FEATURES: tuple[type[Feature], ...] = (Templates, RamGoalFeature, VisitHeatmap, MilestoneTracker, Curriculum,
                                       StatePoolFeature, DataPlane, Reward, Counters)

__all__ = ["FEATURES", "Feature", "Step"]
