"""RL losses as pure tensor functions: no env, no Lightning, one function per formula."""

from .a2c import a2c_td0
from .gae import gae
from .normalize import apply_sample_transforms, normalize_advantages, normalize_rewards
from .ppo import ppo_loss
from .reinforce import monte_carlo_returns, reinforce_loss
from .stats import explained_variance

__all__ = ["a2c_td0", "apply_sample_transforms", "explained_variance", "gae", "monte_carlo_returns",
           "normalize_advantages", "normalize_rewards", "ppo_loss", "reinforce_loss"]
