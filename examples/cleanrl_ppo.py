"""PPO in one file, CleanRL-style, on any gymnasium vector env: the built-in Game Boy task by default.

    pip install -e ".[gym]"
    python examples/cleanrl_ppo.py                         # orchard level 1, 32 envs, ~1-2 minutes on 2 cores
    python examples/cleanrl_ppo.py --level 2 --total-steps 400000

This is what a user with a training stack of their own does with our envs: gymnasium's vector API
and nothing of Lightning. The loop follows CleanRL's ppo.py (rollout, GAE, epochs x minibatches of
the clipped objective), with two changes for vector envs that reset inside ``step``
(``AutoresetMode.SAME_STEP``): a truncated episode bootstraps from V(final_obs) (CleanRL's script
treats a truncation as an end), and episode statistics come from ``info["episode"]``.
``run(envs, ...)`` is importable: tools/bench_vs_pyboy.py runs it on our env and on PyBoy.
"""
from __future__ import annotations

import argparse
import time
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn as nn
from torch.distributions.categorical import Categorical


def layer_init(layer, std=np.sqrt(2), bias_const=0.0):
    torch.nn.init.orthogonal_(layer.weight, std)
    torch.nn.init.constant_(layer.bias, bias_const)
    return layer


class Agent(nn.Module):
    """A small CNN over uint8 screens of shades 0..3 (the pixel_cnn of gbx_lightning.models)."""

    def __init__(self, obs_shape, num_actions):
        super().__init__()
        k, h, w = obs_shape
        self.network = nn.Sequential(
            layer_init(nn.Conv2d(k, 16, 8, stride=4)), nn.ReLU(),
            layer_init(nn.Conv2d(16, 32, 4, stride=2)), nn.ReLU(), nn.Flatten())
        with torch.no_grad():
            flat = self.network(torch.zeros(1, k, h, w)).shape[1]
        self.network.append(layer_init(nn.Linear(flat, 256)))
        self.network.append(nn.ReLU())
        self.actor = layer_init(nn.Linear(256, num_actions), std=0.01)
        self.critic = layer_init(nn.Linear(256, 1), std=1)

    def get_value(self, x):
        return self.critic(self.network(x.float() / 3.0)).squeeze(-1)

    def get_action_and_value(self, x, action=None):
        hidden = self.network(x.float() / 3.0)
        probs = Categorical(logits=self.actor(hidden))
        if action is None:
            action = probs.sample()
        return action, probs.log_prob(action), probs.entropy(), self.critic(hidden).squeeze(-1)


@dataclass
class Args:
    total_steps: int = 100_000
    num_steps: int = 32          # rollout length T per env
    learning_rate: float = 2.5e-4
    anneal_lr: bool = True
    gamma: float = 0.99
    gae_lambda: float = 0.95
    num_minibatches: int = 4
    update_epochs: int = 4
    clip_coef: float = 0.2
    ent_coef: float = 0.01
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5
    seed: int = 0


def run(envs, args: Args, log=print) -> list[dict]:
    """Train PPO on `envs` (a gymnasium VectorEnv, SAME_STEP autoreset); returns one record per iteration."""
    torch.manual_seed(args.seed)
    n = envs.num_envs
    obs_shape = envs.single_observation_space.shape
    agent = Agent(obs_shape, envs.single_action_space.n)
    optimizer = torch.optim.Adam(agent.parameters(), lr=args.learning_rate, eps=1e-5)
    batch_size = n * args.num_steps
    minibatch_size = batch_size // args.num_minibatches
    iterations = max(1, args.total_steps // batch_size)

    obs = torch.zeros((args.num_steps, n) + obs_shape, dtype=torch.uint8)
    actions = torch.zeros((args.num_steps, n), dtype=torch.long)
    logprobs = torch.zeros((args.num_steps, n))
    rewards = torch.zeros((args.num_steps, n))
    dones = torch.zeros((args.num_steps, n))
    values = torch.zeros((args.num_steps, n))

    next_obs, _ = envs.reset(seed=args.seed)
    next_obs = torch.as_tensor(next_obs)
    next_done = torch.zeros(n)
    history, start, steps = [], time.perf_counter(), 0
    for iteration in range(1, iterations + 1):
        if args.anneal_lr:
            optimizer.param_groups[0]["lr"] = (1.0 - (iteration - 1.0) / iterations) * args.learning_rate
        returns, successes = [], []
        for step in range(args.num_steps):
            steps += n
            obs[step], dones[step] = next_obs, next_done
            with torch.no_grad():
                action, logprob, _, value = agent.get_action_and_value(next_obs)
            values[step], actions[step], logprobs[step] = value, action, logprob
            next_obs, reward, terminated, truncated, info = envs.step(action.numpy())
            reward = torch.as_tensor(reward, dtype=torch.float32)
            truncated_t = torch.as_tensor(truncated)
            if truncated_t.any():   # time limit, not an end: bootstrap from the true next state
                with torch.no_grad():
                    final_value = agent.get_value(torch.as_tensor(info["final_obs"]))
                reward = reward + args.gamma * final_value * truncated_t
            rewards[step] = reward
            next_obs = torch.as_tensor(next_obs)
            next_done = torch.as_tensor(np.logical_or(terminated, truncated), dtype=torch.float32)
            ended = np.asarray(info["_episode"])
            returns += np.asarray(info["episode"]["r"])[ended].tolist()
            successes += np.asarray(info["success"])[ended].tolist()

        # bootstrap value and GAE (Schulman et al. 2016)
        with torch.no_grad():
            next_value = agent.get_value(next_obs)
            advantages = torch.zeros_like(rewards)
            lastgaelam = 0
            for t in reversed(range(args.num_steps)):
                nextnonterminal = 1.0 - (next_done if t == args.num_steps - 1 else dones[t + 1])
                nextvalues = next_value if t == args.num_steps - 1 else values[t + 1]
                delta = rewards[t] + args.gamma * nextvalues * nextnonterminal - values[t]
                advantages[t] = lastgaelam = delta + args.gamma * args.gae_lambda * nextnonterminal * lastgaelam
            returns_t = advantages + values

        b_obs = obs.reshape((-1,) + obs_shape)
        b_logprobs, b_actions = logprobs.reshape(-1), actions.reshape(-1)
        b_advantages, b_returns, b_values = advantages.reshape(-1), returns_t.reshape(-1), values.reshape(-1)
        for _ in range(args.update_epochs):
            for mb in torch.randperm(batch_size).split(minibatch_size):
                _, newlogprob, entropy, newvalue = agent.get_action_and_value(b_obs[mb], b_actions[mb])
                ratio = (newlogprob - b_logprobs[mb]).exp()
                mb_adv = b_advantages[mb]
                mb_adv = (mb_adv - mb_adv.mean()) / (mb_adv.std() + 1e-8)
                pg_loss = torch.max(-mb_adv * ratio,
                                    -mb_adv * torch.clamp(ratio, 1 - args.clip_coef, 1 + args.clip_coef)).mean()
                v_loss = 0.5 * ((newvalue - b_returns[mb]) ** 2).mean()
                loss = pg_loss - args.ent_coef * entropy.mean() + v_loss * args.vf_coef
                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(agent.parameters(), args.max_grad_norm)
                optimizer.step()

        record = {"iteration": iteration, "env_steps": steps, "sps": steps / (time.perf_counter() - start),
                  "episodes": len(returns), "episodic_return": float(np.mean(returns)) if returns else None,
                  "success_rate": float(np.mean(successes)) if successes else None}
        history.append(record)
        if log is not None and (iteration % 10 == 0 or iteration == iterations):
            ret = "n/a" if record["episodic_return"] is None else f"{record['episodic_return']:.3f}"
            succ = "n/a" if record["success_rate"] is None else f"{record['success_rate']:.2f}"
            log(f"iteration {iteration}/{iterations}  env_steps {steps}  SPS {record['sps']:.0f}  "
                f"episodic_return {ret}  success {succ}")
    return history


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--num-envs", type=int, default=32)
    p.add_argument("--level", type=int, default=1)
    p.add_argument("--total-steps", type=int, default=100_000)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    import gymnasium as gym
    import warp as wp

    import gbx_lightning.envs.gym  # noqa: F401  (registers gbx_lightning/GameBoy-v0)

    wp.config.quiet = True
    torch.set_num_threads(1)
    envs = gym.make_vec("gbx_lightning/GameBoy-v0", num_envs=a.num_envs, vectorization_mode="vector_entry_point",
                        task=f"orchard/level{a.level}", stack_k=1, action_codec="dpad_noop", max_steps=50)
    run(envs, Args(total_steps=a.total_steps, seed=a.seed))


if __name__ == "__main__":
    main()
