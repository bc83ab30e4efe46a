"""Learning evidence on ForagingEnv: trained runs against a uniformly random policy.

For each run directory (``lightning_logs/<run_name>`` written by ``fit``) it prints

* ``train_return_last10``: mean episode return over the last 10% of the run's env steps, from
  its ``train.jsonl`` (episode-weighted: the training policy, sampling, as it learned);
* ``eval_*``: the final checkpoint's policy on ``--episodes`` fresh episodes (sampled actions),
  in the run's own env configuration: mean return, success rate, food and poison eaten per episode;

and a uniformly random policy on the same env configurations (the baseline).

    python tools/eval_foraging.py lightning_logs/ppo lightning_logs/foraging_ppo_proxy
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402
import yaml  # noqa: E402

from gbx_lightning.algos.build import factory_parts  # noqa: E402
from gbx_lightning.data import EvalEpisodes  # noqa: E402
from gbx_lightning.envs import make_env  # noqa: E402


class UniformPolicy(torch.nn.Module):
    """Equal logits for every action: sampling from it is uniformly random."""

    def __init__(self, num_actions: int):
        super().__init__()
        self.num_actions = num_actions

    def forward(self, obs):
        return torch.zeros(obs.shape[0], self.num_actions), torch.zeros(obs.shape[0])


def train_return_last10(jsonl: Path) -> tuple[float, int, float, float]:
    """(mean return, episodes, poison/episode, food/episode) over records in the last 10% of env steps."""
    recs = [r for r in map(json.loads, jsonl.read_text().splitlines()) if "env_steps" in r and "sps" in r]
    # a resumed run may repeat a tail of env_steps: keep the latest record per env_steps value
    latest = {r["env_steps"]: r for r in recs}
    recs = [latest[k] for k in sorted(latest)]
    cut = 0.9 * recs[-1]["env_steps"]
    tail = [r for r in recs if r["env_steps"] > cut and r["episodes"]]
    eps = sum(r["episodes"] for r in tail)

    def mean(key):
        return sum(r[key] * r["episodes"] for r in tail) / eps

    return mean("episode_return_mean"), eps, mean("episode_poison_eaten_mean"), mean("episode_food_eaten_mean")


def evaluate(policy, env_kwargs: dict, episodes: int, seed: int) -> dict[str, float]:
    env = make_env("foraging", num_envs=episodes, **env_kwargs)
    batch = next(iter(EvalEpisodes(env, policy, seed=seed)))
    done = batch["finished"]
    out = {"episodes": int(done.sum())}
    for k in ("episode_return", "success", "food_eaten", "poison_eaten", "episode_length"):
        out[k] = float(batch[k].float()[done].mean())
    return out


def load_run(run_dir: Path):
    cfg = yaml.safe_load((run_dir / "config.yaml").read_text())
    init = cfg["model"]["init_args"]
    _, env_kwargs = factory_parts(init["env"])
    probe = make_env("foraging", num_envs=1, **env_kwargs)
    policy_class, policy_kwargs = factory_parts(init["policy"])
    policy = policy_class(probe.obs_shape, probe.num_actions, **policy_kwargs)
    state = torch.load(run_dir / "checkpoints" / "last.ckpt", map_location="cpu", weights_only=False)
    policy.load_state_dict({k[len("policy."):]: v for k, v in state["state_dict"].items() if k.startswith("policy.")})
    policy.eval()
    return policy, env_kwargs, state["gbx"]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("runs", nargs="+", type=Path, help="run directories")
    p.add_argument("--episodes", type=int, default=256)
    p.add_argument("--seed", type=int, default=12345)
    args = p.parse_args()
    import warp as wp

    wp.config.log_level = wp.LOG_WARNING
    for run in args.runs:
        policy, env_kwargs, counters = load_run(run)
        mode = env_kwargs.get("obs_mode", "ground_truth")
        ret, eps, poison, food = train_return_last10(run / "train.jsonl")
        print(f"{run.name} [{mode}] after {counters['env_steps']} env steps / {counters['opt_steps']} opt steps")
        print(f"  train_return_last10 {ret:.2f} over {eps} episodes; poison/ep {poison:.2f}, food/ep {food:.2f}")
        for name, pol in (("trained", policy), ("random", UniformPolicy(probe_actions := 8))):
            r = evaluate(pol, env_kwargs, args.episodes, args.seed)
            print(f"  eval {name:7s} return {r['episode_return']:7.2f}  success {r['success']:.3f}  "
                  f"food/ep {r['food_eaten']:.2f}  poison/ep {r['poison_eaten']:.2f}  length {r['episode_length']:.1f}"
                  f"  ({r['episodes']} episodes)")


if __name__ == "__main__":
    main()
