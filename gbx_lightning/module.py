"""The learners' old home, kept so that ``class_path: gbx_lightning.module.PPOModule`` (configs, saved
``config.yaml`` files of earlier runs) and old imports keep working. They live in ``gbx_lightning.algos``."""

from gbx_lightning.algos import (A2CModule, ConfigError, LinearAnneal, PPOModule, REINFORCEModule, RLModule,
                                 world_size_problem)
from gbx_lightning.algos.build import GPU_ENVS_PER_CORE, cores_per_process, pick_env_device
from gbx_lightning.algos.config import ENV_DEVICES
from gbx_lightning.algos.config import yaml_values as _yaml_values

__all__ = ["A2CModule", "ConfigError", "ENV_DEVICES", "GPU_ENVS_PER_CORE", "LinearAnneal", "PPOModule",
           "REINFORCEModule", "RLModule", "cores_per_process", "pick_env_device", "world_size_problem"]
