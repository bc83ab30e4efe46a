"""A uniformly random policy's evaluation figures for a config's env: the baseline beside a learning curve.

    python tools/random_policy.py configs/a2c.yaml [--episodes 1024] [--seed S]

Builds the env exactly as the config's module would (``model.env``: class_path, init_args), runs one episode per
env with uniformly random actions through the same evaluation loop as ``validate``
(``data.EvalEpisodes``; default seed: the config's ``eval_seed``), and prints what ``validate``
prints: success rate (an episode that did not end counts as a failure), mean steps to success,
mean return and length, and the env's per-episode extras.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def env_from_config(config: str, num_envs: int, task=None):
    """The env of ``config``'s module (``model.env``: class_path, init_args) with ``num_envs`` envs on the CPU (its
    task replaced by ``task`` where given) in eval mode, as evaluation plays (the task's own starts: no train_starts
    or pooled states), and the module's init_args (its ``eval_seed``, ``policy``)."""
    import yaml

    from gbx_lightning.algos.build import factory_parts

    init = yaml.safe_load(Path(config).read_text())["model"]["init_args"]
    env_class, options = factory_parts(init["env"])
    if task is not None:
        options = {**options, "task": task}
    env = env_class(num_envs, "cpu", **options)
    if hasattr(env, "eval"):
        env.eval()
    return env, init


def uniform_policy(num_actions: int):
    """A policy whose logits are all equal: uniformly random actions (value 0)."""
    import torch
    from torch import nn

    class Uniform(nn.Module):
        def forward(self, obs):
            return torch.zeros(obs.shape[0], num_actions), torch.zeros(obs.shape[0])

    return Uniform()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("config", help="a training config (YAML)")
    ap.add_argument("--episodes", type=int, default=1024)
    ap.add_argument("--seed", type=int, default=None, help="default: the config's model.init_args.eval_seed")
    args = ap.parse_args(argv)

    import warp as wp

    wp.config.quiet = True
    wp.config.log_level = wp.LOG_WARNING
    from gbx_lightning.data import EvalEpisodes

    env, init = env_from_config(args.config, args.episodes)
    seed = args.seed if args.seed is not None else init.get("eval_seed", 1_000_003)
    batch = next(iter(EvalEpisodes(env, uniform_policy(env.num_actions), seed)))
    done, wins = batch["finished"], batch["success"] & batch["finished"]
    length = batch["episode_length"].float()
    parts = [f"episodes {args.episodes}", f"success_rate {wins.float().mean():.4f}",
             f"steps_to_success {(length * wins).sum() / max(int(wins.sum()), 1):.2f}" if wins.any() else
             "steps_to_success n/a",
             f"return_mean {batch['episode_return'][done].mean():.4f}", f"length_mean {length[done].mean():.2f}"]
    for key, value in batch.items():
        if key not in ("finished", "success", "episode_length", "episode_return"):
            parts.append(f"{key}_mean {value[done].float().mean():.4g}")
    print(f"random policy on {Path(args.config).name}: " + "  ".join(parts))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
