"""The learners: one file per algorithm (``a2c.py``, ``ppo.py``, ``reinforce.py``), each its arguments and its
update read top to bottom, on ``base.RLModule`` (what they share). Adding one (a file and a config): ``base.RLModule``'s docstring."""

from gbx_lightning.algos.a2c import A2CModule
from gbx_lightning.algos.base import RLModule, world_size_problem
from gbx_lightning.algos.config import ConfigError
from gbx_lightning.algos.ppo import LinearAnneal, PPOModule
from gbx_lightning.algos.reinforce import REINFORCEModule

__all__ = ["A2CModule", "ConfigError", "LinearAnneal", "PPOModule", "REINFORCEModule", "RLModule",
           "world_size_problem"]
