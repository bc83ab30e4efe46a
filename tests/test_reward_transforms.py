"""Reward pipelines (envs/reward_transforms.py) and sampling-time transforms (rl/normalize.py) against
hand-computed numbers: per-step terms and transforms, per-episode bonuses on the right step, return
normalisation's running statistic (by hand, and against gymnasium's wrapper), RAM terms on a real
GameBoyEnv, state round trips, a resumed fit equal to the uninterrupted one, and one-line config errors."""

import json
import math
from functools import partial
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from gbx_lightning.envs import ForagingEnv, GameBoyEnv
from gbx_lightning.envs.reward_transforms import (RewardContext, RewardSpecError, build_reward_pipeline,
                                                  check_reward_spec)
from gbx_lightning.envs.rewards import ram_delta, ram_level, ram_value, update_moments
from gbx_lightning.models import MLPPolicy
from gbx_lightning.rl import normalize_advantages, normalize_rewards, ppo_loss
from gbx_lightning.rl.normalize import apply_sample_transforms
from gbx_lightning.roms import orchard

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::DeprecationWarning")

NOOP, R, L, U, D = range(5)   # the dpad_noop codec
LEVEL1_ROUTE = [U, D, D, U, L, L, R, R, R]   # eats level 1's four seeds; LEVEL CLEAR ends step 9 (test_orchard_env)


def _ctx(env, n, terminated=(), truncated=(), success=(), failed=()):
    """A RewardContext for n envs; the tuples list the envs where each flag is set."""
    def flags(on):
        t = torch.zeros(n, dtype=torch.bool)
        t[list(on)] = True
        return t
    zeros = torch.zeros(n)
    return RewardContext(env, flags(terminated), flags(truncated), flags(success), flags(failed), zeros, zeros)


def _pipeline(spec, n, **defaults):
    return build_reward_pipeline(spec, n, torch.device("cpu"), defaults)


# ---------------------------------------------------------------------------------------------- per step
def test_scale_clip_step_cost_on_three_envs_for_four_steps():
    """A game reward (a term of the user's, by import path), then scale 2, clip to [-1, 1], step cost -0.1."""
    pipe = _pipeline([{"name": "tests._reward_items.given_reward"}, {"name": "scale", "factor": 2.0},
                      {"name": "clip", "low": -1.0, "high": 1.0}, {"name": "step_cost", "cost": -0.1}], 3)
    base = [[0.2, -0.7, 1.5], [0.6, 0.0, -3.0], [-0.3, 0.45, 0.5], [2.0, -0.5, 0.1]]
    # x2: [0.4, -1.4, 3.0] [1.2, 0.0, -6.0] [-0.6, 0.9, 1.0] [4.0, -1.0, 0.2]; clipped; then -0.1
    trained = [[0.3, -1.1, 0.9], [0.9, -0.1, -1.1], [-0.7, 0.8, 0.9], [0.9, -1.1, 0.1]]
    game = [[0.1, -0.8, 1.4], [0.5, -0.1, -3.1], [-0.4, 0.35, 0.4], [1.9, -0.6, 0.0]]   # the terms: base - 0.1
    assert pipe.has_transforms
    for t in range(4):
        env = SimpleNamespace(base=torch.tensor(base[t]))
        reward, game_reward = pipe(_ctx(env, 3))
        assert reward.dtype == torch.float32 and reward.tolist() == pytest.approx(trained[t], abs=1e-6)
        assert game_reward.tolist() == pytest.approx(game[t], abs=1e-6)


def test_a_transform_of_your_own_and_a_term_after_it():
    """negate (kind: transform) maps the sum so far; the step cost after it is added untransformed."""
    pipe = _pipeline([{"name": "tests._reward_items.given_reward"},
                      {"name": "tests._reward_items.negate", "kind": "transform"},
                      {"name": "step_cost", "cost": -0.5}], 2)
    reward, game = pipe(_ctx(SimpleNamespace(base=torch.tensor([1.0, -3.0])), 2))
    assert reward.tolist() == [-1.5, 2.5] and game.tolist() == [0.5, -3.5]


def test_without_a_transform_the_trained_reward_is_the_game_reward():
    pipe = _pipeline([{"name": "tests._reward_items.given_reward", "weight": 3.0}, {"name": "step_cost", "cost": 1.0}],
                     2)
    reward, game = pipe(_ctx(SimpleNamespace(base=torch.tensor([0.5, -1.0])), 2))
    assert not pipe.has_transforms and game is reward and reward.tolist() == [2.5, -2.0]


def test_the_presets_sum_their_terms_as_the_env_did_before_lists_bit_for_bit():
    """The old GameBoyEnv reward, written with the pure functions in its order: goal_reward, + fail_penalty *
    failed, + seed_reward * seeds (the former preset orchard_seeds, now a list in orchard's task files). The preset
    and the list must give the same float32 bits (sign of zero included), so shipped configs train on exactly the
    rewards they did."""
    from gbx_lightning.envs.rewards import goal_reward, ram_counter_delta

    g = torch.Generator().manual_seed(0)
    n = 4096
    dist, prev = torch.rand(n, generator=g), torch.rand(n, generator=g)
    prev[:64] = dist[:64]                                     # no progress: where a -0.0 could show
    success, failed = torch.rand(n, generator=g) < 0.1, torch.rand(n, generator=g) < 0.1
    failed &= ~success
    before, now = (torch.randint(0, 256, (n,), generator=g, dtype=torch.int32) for _ in range(2))
    ram = {"now": now}
    env = SimpleNamespace(read_ram=lambda addr, length: ram["now"].to(torch.uint8)[:, None])
    defaults = dict(step_cost=-0.01, alpha=1.3, goal_bonus=1.0, fail_penalty=-1.0)
    ctx = RewardContext(env, success | failed, torch.zeros(n, dtype=torch.bool), success, failed, dist, prev)
    old = goal_reward(dist, prev, success, -0.01, 1.3, 1.0) + -1.0 * failed.to(torch.float32)
    assert torch.equal(_pipeline("goal", n, **defaults)(ctx)[0].view(torch.int32), old.view(torch.int32))
    seeds = _pipeline([{"name": "step_cost"}, {"name": "goal_distance"}, {"name": "success_bonus"},
                       {"name": "fail_penalty"}, {"name": "ram", "address": orchard.SEEDS_EATEN, "weight": 0.1}], n,
                      **defaults)
    ram["now"] = before
    seeds.sync(env)                                           # the bytes at the step's start
    ram["now"] = now
    want = old + 0.1 * ram_counter_delta(now, before)
    assert torch.equal(seeds(ctx)[0].view(torch.int32), want.view(torch.int32))


def test_goal_distance_potential_form_by_hand_and_its_telescoping_sum():
    """gamma set: alpha * (prev - gamma * dist), alpha * prev on the terminating step (phi = 0 there). Over an
    episode of distances d0..d3 ending in termination the discounted sum is -phi(s0) = alpha * d0 whatever the
    path: the shaping cannot change the optimal policy (Ng et al. 1999). The seed's form (no gamma) is unchanged."""
    alpha, gamma = 2.0, 0.5
    pipe = _pipeline([{"name": "goal_distance", "gamma": gamma}], 2, alpha=alpha)
    prev, dist = torch.tensor([0.8, 0.4]), torch.tensor([0.6, 0.1])
    ctx = RewardContext(None, torch.tensor([False, True]), torch.zeros(2, dtype=torch.bool),
                        torch.tensor([False, True]), torch.zeros(2, dtype=torch.bool), dist, prev)
    assert pipe(ctx)[0].tolist() == pytest.approx([2.0 * (0.8 - 0.5 * 0.6), 2.0 * 0.4])
    seed_form = _pipeline([{"name": "goal_distance"}], 2, alpha=alpha)
    assert seed_form(ctx)[0].tolist() == pytest.approx([2.0 * (0.8 - 0.6), 2.0 * (0.4 - 0.1)])
    for path in ([0.9, 0.7, 0.95, 0.0], [0.9, 0.2, 0.2, 0.6]):     # d0..d3, the last step terminates
        total = 0.0
        for t in range(3):
            end = t == 2
            ctx = RewardContext(None, torch.tensor([end]), torch.tensor([False]), torch.tensor([end]),
                                torch.tensor([False]), torch.tensor([path[t + 1]]), torch.tensor([path[t]]))
            total += gamma ** t * _pipeline([{"name": "goal_distance", "gamma": gamma}], 1, alpha=alpha)(ctx)[0].item()
        assert total == pytest.approx(alpha * path[0])


@pytest.mark.parametrize("gamma", [0.0, 1.5, "x", True])
def test_goal_distance_gamma_must_be_in_zero_one(gamma):
    with pytest.raises(RewardSpecError, match=r"reward\[0\]\.gamma must be a number in \(0.0, 1.0\]"):
        check_reward_spec([{"name": "goal_distance", "gamma": gamma}], has_goal=True, has_fail=False)


# ---------------------------------------------------------------------------------------------- per episode
def test_success_bonus_and_fail_penalty_land_on_the_step_the_episode_ends():
    """3 envs, 4 steps: env 0 succeeds at step 1, env 1 fails at step 2, env 2 is truncated at step 3 (no bonus:
    truncation is not success). Presets' values come from the env's options (here bonus 5, penalty -2)."""
    pipe = _pipeline([{"name": "success_bonus"}, {"name": "fail_penalty"}], 3, goal_bonus=5.0, fail_penalty=-2.0)
    outcomes = [dict(), dict(terminated=[0], success=[0]), dict(terminated=[1], failed=[1]), dict(truncated=[2])]
    rewards = [pipe(_ctx(None, 3, **o))[0].tolist() for o in outcomes]
    assert rewards == [[0, 0, 0], [5, 0, 0], [0, -2, 0], [0, 0, 0]]


def test_success_bonus_on_a_real_game_boy_lands_on_the_clearing_step():
    """The level 1 route: LEVEL CLEAR at step 9, and nowhere else (env 1 idles)."""
    env = GameBoyEnv(2, task={"base": "orchard/level1", "start": {"variants": 1},
                              "reward": [{"name": "success_bonus", "bonus": 5.0}]},
                     action_codec="dpad_noop", stack_k=1, max_steps=50, cpu_threads=1)
    env.reset(seed=0)
    rewards = []
    for a in LEVEL1_ROUTE:
        _, reward, term, _, info = env.step(torch.tensor([a, NOOP], dtype=torch.int32))
        rewards.append(reward.tolist())
    assert rewards == [[0.0, 0.0]] * 8 + [[5.0, 0.0]]
    assert term.tolist() == [True, False] and info["episode_return"].tolist() == [5.0, 0.0]
    assert "trained_return" not in info                 # nothing transforms: the two returns are one


# ---------------------------------------------------------------------------------------------- return_norm
def _pooled_var(values, prior=1e-4):
    """By hand: the variance of the values pooled with a pseudo-sample of weight `prior`, mean 0, variance 1."""
    n, s, s2 = len(values), sum(values), sum(v * v for v in values)
    mean = s / (n + prior)
    return (prior * 1.0 + s2) / (n + prior) - mean * mean, mean, n + prior


def test_return_norm_running_variance_against_the_formula_by_hand():
    """2 envs, gamma 0.5, rewards [1, 2], [2, 0], [0, 4]; env 1's episode ends at step 2 (terminated).
    Accumulators: [1, 2]; [0.5*1 + 2, 0.5*2 + 0] = [2.5, 1], then env 1's is zeroed;
    [0.5*2.5 + 0, 0 + 4] = [1.25, 4]."""
    pipe = _pipeline([{"name": "tests._reward_items.given_reward"}, {"name": "return_norm", "gamma": 0.5}], 2)
    norm = pipe.items[1][1]
    seen = []
    for rewards, accs, ended in (([1.0, 2.0], [1.0, 2.0], ()), ([2.0, 0.0], [2.5, 1.0], (1,)),
                                 ([0.0, 4.0], [1.25, 4.0], ())):
        out, game = pipe(_ctx(SimpleNamespace(base=torch.tensor(rewards)), 2, terminated=ended))
        seen += accs
        var, mean, count = _pooled_var(seen)
        assert float(norm.var) == pytest.approx(var, rel=1e-12) and float(norm.mean) == pytest.approx(mean, rel=1e-12)
        assert float(norm.count) == pytest.approx(count, rel=1e-15)
        assert out.tolist() == pytest.approx([r / math.sqrt(var + 1e-8) for r in rewards], rel=1e-6)
        assert game.tolist() == rewards                  # the game reward is untouched
    # after step 3: 6 values, sum 11.75, sum of squares 29.8125
    assert float(norm.mean) == pytest.approx(11.75 / 6.0001) and float(norm.count) == pytest.approx(6.0001)
    assert float(norm.var) == pytest.approx((1e-4 + 29.8125) / 6.0001 - (11.75 / 6.0001) ** 2)
    assert norm.acc.tolist() == [1.25, 4.0]


def test_update_moments_is_the_pooled_variance_in_any_batching():
    values = torch.tensor([3.0, -1.0, 4.0, 1.0, -5.0, 9.0, 2.0], dtype=torch.float64)
    state = (torch.zeros((), dtype=torch.float64), torch.ones((), dtype=torch.float64),
             torch.full((), 1e-4, dtype=torch.float64))
    for chunk in (values[:1], values[1:4], values[4:]):
        state = update_moments(*state, chunk)
    var, mean, count = _pooled_var(values.tolist())
    assert [float(x) for x in state] == pytest.approx([mean, var, count], rel=1e-12)


def test_return_norm_equals_gymnasiums_normalize_reward_with_truncations():
    """gymnasium's vector NormalizeReward (same-step autoreset) as an oracle, 3 envs x 40 steps of random rewards
    and truncations. (At a termination gymnasium drops the accumulator before adding the step's reward; we keep
    that step's reward in the return it ends, as SB3 does: the module docstring says so.)"""
    gym = pytest.importorskip("gymnasium")
    from gymnasium.vector import AutoresetMode, VectorEnv
    from gymnasium.wrappers.vector import NormalizeReward

    rng = np.random.default_rng(0)
    steps, n = 40, 3
    rewards, truncated = rng.normal(size=(steps, n)) * 3, rng.random((steps, n)) < 0.15
    rewards = rewards.astype(np.float32).astype(np.float64)   # what our float32 rewards hold

    class Replay(VectorEnv):
        metadata = {"autoreset_mode": AutoresetMode.SAME_STEP}

        def __init__(self):
            self.num_envs, self.t = n, 0
            self.single_observation_space = gym.spaces.Box(-1, 1, (1,))
            self.single_action_space = gym.spaces.Discrete(2)
            self.observation_space = gym.vector.utils.batch_space(self.single_observation_space, n)
            self.action_space = gym.vector.utils.batch_space(self.single_action_space, n)

        def reset(self, seed=None, options=None):
            return np.zeros((n, 1), np.float32), {}

        def step(self, actions):
            self.t += 1
            return np.zeros((n, 1), np.float32), rewards[self.t - 1], np.zeros(n, bool), truncated[self.t - 1], {}

    oracle = NormalizeReward(Replay(), gamma=0.9, epsilon=1e-8)
    oracle.reset()
    pipe = _pipeline([{"name": "tests._reward_items.given_reward"}, {"name": "return_norm", "gamma": 0.9}], n)
    for t in range(steps):
        want = oracle.step(np.zeros(n, int))[1]
        env = SimpleNamespace(base=torch.tensor(rewards[t], dtype=torch.float32))
        got = pipe(_ctx(env, n, truncated=np.nonzero(truncated[t])[0].tolist()))[0]
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-6)   # ours float32, gymnasium's float64
    assert float(pipe.items[1][1].var) == pytest.approx(oracle.return_rms.var, rel=1e-6)


def test_pipeline_state_dict_round_trip_and_statistics_only():
    spec = [{"name": "tests._reward_items.StepCounter", "start": 2.0}, {"name": "return_norm", "gamma": 0.9}]
    a, b = _pipeline(spec, 2), _pipeline(spec, 2)
    for t in range(3):
        a(_ctx(None, 2, truncated=[0] if t == 1 else []))
    state = a.state_dict()
    assert sorted(state) == ["0:tests._reward_items.StepCounter", "1:return_norm"]
    assert state["0:tests._reward_items.StepCounter"]["count"].tolist() == [1.0, 5.0]   # env 0 restarted at step 2
    b.load_state_dict(state)
    for t in range(3):
        ra, rb = a(_ctx(None, 2, terminated=[1] if t == 0 else [])), b(_ctx(None, 2, terminated=[1] if t == 0 else []))
        assert torch.equal(ra[0], rb[0]) and torch.equal(ra[1], rb[1])
    stats = a.state_dict(per_env=False)["1:return_norm"]
    assert sorted(stats) == ["count", "mean", "var"]     # what a checkpoint keeps when it leaves the envs out
    c = _pipeline(spec, 2)
    c.load_state_dict({"1:return_norm": stats})
    assert float(c.items[1][1].var) == float(a.items[1][1].var) and c.items[1][1].acc.tolist() == [0.0, 0.0]


# ---------------------------------------------------------------------------------------------- RAM terms
def test_ram_formulas_by_hand():
    assert ram_value(torch.tensor([[0x34, 0x12], [0xFF, 0x00]], dtype=torch.uint8)).tolist() == [0x1234, 255]
    now, before = torch.tensor([3, 1, 200]), torch.tensor([5, 255, 100])
    assert ram_delta(now, before, 8, signed=False).tolist() == [254.0, 2.0, 100.0]
    assert ram_delta(now, before, 8, signed=True).tolist() == [-2.0, 2.0, 100.0]
    assert ram_delta(torch.tensor([0x0000]), torch.tensor([0xFFFF]), 16, signed=False).tolist() == [1.0]
    assert ram_level(torch.tensor([0xFF, 0x7F, 0x1F]), 8, signed=True).tolist() == [-1.0, 127.0, 31.0]
    assert ram_level(torch.tensor([0x1F]), 4, signed=False).tolist() == [15.0]   # a 4-bit counter's low bits


def test_ram_terms_on_a_real_game_boy_read_the_seeds_eaten_byte():
    """Level 1's route eats its four seeds (test_orchard_env): a delta term at orchard.SEEDS_EATEN pays 0.5 per
    seed on the step it is eaten, summing to 2.0; a level term pays the byte's value, which ends at 4 more than
    it started; both agree with the env's own seeds count."""
    spec = [{"name": "ram", "address": orchard.SEEDS_EATEN, "weight": 0.5}]
    options = dict(action_codec="dpad_noop", stack_k=1, max_steps=50, cpu_threads=1)
    task = {"base": "orchard/level1", "start": {"variants": 1}}
    delta = GameBoyEnv(2, task={**task, "reward": spec}, **options)
    level = GameBoyEnv(2, task={**task, "reward": [{"name": "ram", "address": orchard.SEEDS_EATEN, "mode": "level"}]},
                       **options)
    delta.reset(seed=0)
    level.reset(seed=0)
    start = int(level.read_ram(orchard.SEEDS_EATEN)[0, 0])
    paid, values = [], []
    for a in LEVEL1_ROUTE:
        actions = torch.tensor([a, NOOP], dtype=torch.int32)
        _, reward, _, _, info = delta.step(actions)
        paid.append(float(reward[0]))
        values.append(level.step(actions)[1].tolist())
    assert sorted(set(paid)) == [0.0, 0.5] and sum(paid) == 2.0 and int(info["seeds_eaten"][0]) == 4
    assert values[-1] == [start + 4.0, float(start)]      # env 1 idled: its byte did not move
    assert all(v[1] == start for v in values)


# ---------------------------------------------------------------------------------------------- env state
def _env(**kw):
    options = dict(action_codec="dpad_noop", stack_k=1, max_steps=7, cpu_threads=1)
    task = {"base": "orchard/level1", "start": {"variants": 2},
            "reward": [{"name": "step_cost"}, {"name": "goal_distance"}, {"name": "success_bonus"},
                       {"name": "clip", "low": -0.05, "high": 0.5}, {"name": "return_norm", "gamma": 0.9}]}
    return GameBoyEnv(3, task=task, **{**options, **kw})


def test_game_boy_env_state_round_trip_continues_the_normalised_rewards():
    g = torch.Generator().manual_seed(3)
    actions = [torch.randint(0, 5, (3,), generator=g, dtype=torch.int32) for _ in range(20)]
    a = _env()
    a.reset(seed=1)
    for act in actions[:9]:
        a.step(act)
    state = a.state_dict()
    assert state["features"]["reward"]["pipeline"]["4:return_norm"]["count"].item() == pytest.approx(9 * 3 + 1e-4)
    assert state["features"]["reward"]["trained_stats"]["running_return"].shape == (3,)
    b = _env(seed=5)
    b.load_state_dict(state)
    def nbytes(obj):
        if isinstance(obj, torch.Tensor):
            return obj.numel() * obj.element_size()
        return sum(nbytes(v) for v in obj.values()) if isinstance(obj, dict) else 0
    assert a.state_nbytes == b.state_nbytes == nbytes(state)   # what a checkpoint's env-state plan reports
    for act in actions[9:]:
        ra, rb = a.step(act), b.step(act)
        assert torch.equal(ra[1], rb[1])
        for key in ("episode_return", "trained_return"):
            assert torch.equal(ra[4][key], rb[4][key]), key


# ---------------------------------------------------------------------------------------------- sampling time
def test_sampling_time_normalisations_by_hand():
    adv = torch.tensor([[1.0, 2.0], [3.0, 6.0]])   # [T=2, N=2]
    # per batch: mean 3, population variance (4 + 1 + 0 + 9) / 4 = 3.5
    s = math.sqrt(3.5)
    assert normalize_advantages(adv).flatten().tolist() == pytest.approx([-2 / s, -1 / s, 0.0, 3 / s], rel=1e-6)
    # per env (over T): env 0 [1, 3] mean 2 std 1; env 1 [2, 6] mean 4 std 2
    assert normalize_advantages(adv, dim=0).flatten().tolist() == pytest.approx([-1.0, -1.0, 1.0, 1.0], rel=1e-6)
    rewards = torch.tensor([[3.0, -4.0], [0.0, 0.0]])
    # per batch: mean square (9 + 16) / 4 = 6.25, rms 2.5
    assert normalize_rewards(rewards).flatten().tolist() == pytest.approx([1.2, -1.6, 0.0, 0.0], rel=1e-6)
    # per env: rms sqrt(4.5) and sqrt(8)
    assert normalize_rewards(rewards, dim=0).flatten().tolist() == pytest.approx([3 / 4.5 ** 0.5, -4 / 8 ** 0.5, 0, 0],
                                                                                  rel=1e-6)
    # a step cost and nothing else: about -1 (not -0.01 / 0), and all zeros stay 0
    want = -0.01 / math.sqrt(0.01 ** 2 + 1e-8)
    assert normalize_rewards(torch.full((3, 2), -0.01)).flatten().tolist() == pytest.approx([want] * 6, rel=1e-6)
    assert normalize_rewards(torch.zeros(3, 2)).flatten().tolist() == [0.0] * 6
    both = [{"name": "reward_norm"}, {"name": "advantage_norm", "per": "env"}]
    assert torch.equal(apply_sample_transforms(both, "rewards", rewards), normalize_rewards(rewards))
    assert torch.equal(apply_sample_transforms(both, "advantages", adv), normalize_advantages(adv, dim=0))
    assert apply_sample_transforms(None, "rewards", rewards) is rewards


def test_ppo_loss_advantage_normalisation_is_normalize_advantages_per_minibatch():
    g = torch.Generator().manual_seed(0)
    new, old, adv, v, v_old, ret, ent = (torch.randn(8, generator=g) for _ in range(7))
    ours = ppo_loss(new, old, adv, v, v_old, ret, ent, normalize_advantages=True)
    theirs = ppo_loss(new, old, normalize_advantages(adv), v, v_old, ret, ent, normalize_advantages=False)
    for key in ours:
        assert torch.equal(ours[key], theirs[key]), key


def test_learners_apply_the_sample_transforms_where_they_belong(monkeypatch):
    """PPO: reward_norm on the rollout's rewards before GAE, advantage_norm (per env) on GAE's advantages; the
    value targets stay GAE's returns. Spied on one rollout of a tiny fit."""
    import gbx_lightning.algos.ppo as module_mod
    from lightning.pytorch import Trainer

    seen = {}
    real_gae, real_loss = module_mod.gae, module_mod.ppo_loss

    def gae(rewards, *args):
        seen["gae_rewards"] = rewards
        seen["gae_out"] = real_gae(rewards, *args)
        return seen["gae_out"]

    def loss(new, old, adv, new_v, old_v, returns, ent, **kw):
        seen.setdefault("minibatches", []).append((adv, returns, kw["normalize_advantages"]))
        return real_loss(new, old, adv, new_v, old_v, returns, ent, **kw)

    monkeypatch.setattr(module_mod, "gae", gae)
    monkeypatch.setattr(module_mod, "ppo_loss", loss)
    batches = []
    monkeypatch.setattr(module_mod.PPOModule, "on_train_batch_start", lambda self, batch, i: batches.append(batch))
    env_kwargs = {"obs_mode": "ground_truth", "max_steps": 12, "grid_size": 8, "view_size": 5}
    model = module_mod.PPOModule(env=partial(ForagingEnv, **env_kwargs), num_envs=4,
                                 policy=partial(MLPPolicy, hidden=[8]), rollout_steps=5, epochs=1, minibatches=2, seed=0,
                                 normalize_advantages=False,
                                 sample_transforms=[{"name": "reward_norm"}, {"name": "advantage_norm", "per": "env"}])
    Trainer(max_steps=2, accelerator="cpu", devices=1, logger=False, enable_checkpointing=False,
            enable_progress_bar=False, enable_model_summary=False, num_sanity_val_steps=0,
            limit_val_batches=0).fit(model)
    assert torch.equal(seen["gae_rewards"], normalize_rewards(batches[0]["rewards"]))
    adv, returns = seen["gae_out"]
    got_adv = torch.cat([mb[0] for mb in seen["minibatches"]])
    got_ret = torch.cat([mb[1] for mb in seen["minibatches"]])
    want = normalize_advantages(adv, dim=0).flatten()
    assert torch.equal(got_adv.sort().values, want.sort().values)      # the minibatches are a shuffle of it
    assert torch.equal(got_ret.sort().values, returns.flatten().sort().values)
    assert not any(mb[2] for mb in seen["minibatches"])


# ---------------------------------------------------------------------------------------------- a resumed fit
TINY = """
seed_everything: 5
trainer:
  max_steps: 6
  accelerator: cpu
  devices: 1
  val_check_interval: 3
  check_val_every_n_epoch: null
model:
  class_path: gbx_lightning.algos.A2CModule
  init_args:
    env:
      class_path: gbx_lightning.envs.GameBoyEnv
      init_args:
        task:
          base: orchard/level1
          start: {variants: 2}
          reward:
            - {name: step_cost}
            - {name: goal_distance}
            - {name: success_bonus}
            - {name: clip, low: -0.05, high: 0.5}
            - {name: return_norm, gamma: 0.9}
        stack_k: 1
        action_codec: dpad_noop
        max_steps: 6
        cpu_threads: 2
    num_envs: 3
    policy:
      class_path: gbx_lightning.models.PixelCNNPolicy
      init_args: {channels: [4, 8], hidden: 16}
    update_every: 2
    lr: 0.001
    eval_episodes: 2
    sample_transforms: [{name: reward_norm, per: env}]
checkpoint_every: 3
log_every: 1
image_every: 0
progress_refresh: 0
"""


def _records(path):
    steps, evals = [], []
    for line in Path(path).read_text().splitlines():
        rec = json.loads(line)
        (evals if "eval" in rec else steps if "meta" not in rec else []).append(rec)
    return steps, evals


def test_a_resumed_fit_with_return_norm_equals_the_uninterrupted_one(tmp_path):
    from gbx_lightning.cli import main

    cfg = tmp_path / "gb.yaml"
    cfg.write_text(TINY)
    runs = tmp_path / "runs"
    fit = ["fit", "--config", str(cfg), "--runs_dir", str(runs)]
    assert main(fit) == 0
    assert main(fit + ["--ckpt_path", "last", "--trainer.max_steps", "12"]) == 0
    assert main(fit + ["--run_name", "straight", "--trainer.max_steps", "12"]) == 0
    ckpt = torch.load(runs / "gb" / "version_0" / "checkpoints" / "last.ckpt", weights_only=False)
    norm = ckpt["loops"]["fit_loop"]["state_dict"]["combined_loader"][0]["env"]["features"]["reward"]["pipeline"]["4:return_norm"]
    assert float(norm["count"]) == pytest.approx(12 * 2 * 3 + 1e-4)    # every env step of the run, resumed or not
    resumed, resumed_evals = _records(runs / "gb" / "version_0" / "train.jsonl")
    straight, straight_evals = _records(runs / "straight" / "version_0" / "train.jsonl")
    wall = {"wall_time_s", "sps", "time_env_s", "time_act_s", "time_update_s", "time_other_s"}
    assert [{k: v for k, v in r.items() if k not in wall} for r in resumed] == \
        [{k: v for k, v in r.items() if k not in wall} for r in straight]
    assert [e["eval"] for e in resumed_evals] == [e["eval"] for e in straight_evals]
    assert any(r.get("episode_trained_return_mean") is not None for r in resumed)   # both returns are logged
    assert not any("trained_return" in key for e in resumed_evals for key in e["eval"])
    weights = torch.load(runs / "straight" / "version_0" / "checkpoints" / "last.ckpt",
                         weights_only=False)["state_dict"]
    for k, v in ckpt["state_dict"].items():
        assert torch.equal(weights[k], v), k


def test_the_statistic_survives_a_checkpoint_that_leaves_the_envs_out():
    """Over the env-state cap the envs restart on resume; return_norm's statistic is kept (RolloutStream)."""
    from gbx_lightning.data import RolloutStream
    from gbx_lightning.models import make_policy

    env = _env()
    policy = make_policy("pixel_cnn", env.obs_shape, env.num_actions, channels=[4, 8], hidden=8)
    stream = RolloutStream(env, policy, seed=0, rollout_steps=4, env_state_max_bytes=0)
    it = iter(stream)
    next(it), next(it)
    state = stream.state_dict()
    assert state["env"] is None and float(state["reward_stats"]["4:return_norm"]["count"]) == pytest.approx(24.0001)
    env2 = _env()
    stream2 = RolloutStream(env2, policy, seed=0, rollout_steps=4, env_state_max_bytes=0)
    stream2.load_state_dict(state)
    next(iter(stream2))
    norm, norm2 = env.reward_pipeline.items[4][1], env2.reward_pipeline.items[4][1]
    assert float(norm2.count) == pytest.approx(36.0001)   # continued from 24 values, not started over
    assert float(norm2.var) != float(norm.var)


# ---------------------------------------------------------------------------------------------- config errors
def _hp(reward=None, **kw):
    """The module's arguments as the parser hands them to ``check_config``: the env and policy as class_path specs."""
    env_kwargs = {"task": {"base": "orchard/level1"}, "action_codec": "dpad_noop"}
    if reward is not None:
        env_kwargs["task"]["reward"] = reward
    return dict(env={"class_path": "gbx_lightning.envs.GameBoyEnv", "init_args": env_kwargs}, num_envs=2,
                policy={"class_path": "gbx_lightning.models.PixelCNNPolicy"}, gamma=0.99, lr=1e-3,
                max_grad_norm=0.5, value_coef=0.5, entropy_coef=0.01, adam_eps=1e-5, seed=0, eval_episodes=2, **kw)


@pytest.mark.parametrize("reward, message", [
    ([{"name": "step_cost"}, {"name": "goal_distance"}, {"name": "scale", "factor": "x"}],
     "env.task.reward[2].factor must be a number, got 'x'"),
    ([{"name": "sclae", "factor": 2}],
     "env.task.reward[0].name must be one of ['clip', 'explore', 'fail_penalty', 'goal_distance', 'ram', "
     "'ram_bits', 'ram_max', 'ram_sum', 'return_norm', 'scale', 'screen_novelty', 'step_cost', 'success_bonus'] or an import path "
     "package.module.Name, got 'sclae'"),
    ([{"name": "scale", "facter": 2}],
     "env.task.reward[0].facter is not a parameter of scale; parameters: factor"),
    ([{"name": "scale"}], "env.task.reward[0].factor is required by scale (missing)"),
    ([{"name": "clip", "low": 1.0, "high": -1.0}], "env.task.reward[0].high must be >= low = 1.0, got -1.0"),
    ([{"name": "return_norm", "gamma": 1.5}], "env.task.reward[0].gamma must be a number in [0, 1], got 1.5"),
    ([{"name": "fail_penalty", "penalty": 1}], "env.task.reward[0].penalty must be a number <= 0.0, got 1"),
    ([{"name": "ram", "address": 0x8000}],
     "env.task.reward[0].address must be a WRAM address, an int in 0xC000..0xDFFF, got 32768"),
    ([{"name": "ram", "address": 0xC000, "bits": 12}],
     "env.task.reward[0].bits must be <= 8 * size = 8, got 12"),
    ([{"name": "ram", "address": 0xDFFF, "size": 2}],
     "env.task.reward[0].address + size - 1 must be <= 0xDFFF (WRAM), got 0xDFFF + 2"),
    ([{"name": "ram", "address": "0xC000"}],
     "env.task.reward[0].address must be a WRAM address, an int in 0xC000..0xDFFF, got '0xC000'"),
    ([{"name": "ram", "address": 0xC000, "mode": "max"}],
     "env.task.reward[0].mode must be one of ['delta', 'level'], got 'max'"),
    ([{"name": "ram", "address": 0xC000, "size": 2, "signed": "yes"}],
     "env.task.reward[0].signed must be one of [False, True], got 'yes'"),
    ([{"name": "tests._reward_items.nope"}],
     "env.task.reward[0].name cannot be imported: 'tests._reward_items.nope' (AttributeError: module "
     "'tests._reward_items' has no attribute 'nope')"),
    ([{"name": "tests._reward_items.NOT_CALLABLE"}],
     "env.task.reward[0].name must name a function or a class, got 'tests._reward_items.NOT_CALLABLE' (int)"),
    ([{"name": "tests._reward_items.given_reward", "colum": "x"}],
     "env.task.reward[0].colum is not a parameter of tests._reward_items.given_reward; parameters: column"),
    ([{"name": "tests._reward_items.negate", "kind": "transform", "weight": 2}],
     "env.task.reward[0].weight applies to terms only (this item is a transform); leave it out"),
    ([{"name": "tests._reward_items.negate"}],
     "env.task.reward[0] does not fit tests._reward_items.negate(ctx, **params): missing a required argument: "
     "'ctx'"),
    ([], "env.task.reward must list at least one item (an empty list would train on 0)"),
    (["scale"], "env.task.reward[0] must be a mapping with a name (one of ['clip', 'explore', "
                "'fail_penalty', 'goal_distance', 'ram', 'ram_bits', 'ram_max', 'ram_sum', 'return_norm', 'scale', "
                "'screen_novelty', 'step_cost', 'success_bonus'] or an import path package.module.Name), got 'scale'"),
    ("shaped", "env.task.reward must be one of ('goal',) or a list of reward items, got 'shaped'"),
])
def test_bad_reward_items_are_one_line_config_errors(reward, message):
    from gbx_lightning.algos import A2CModule, ConfigError

    with pytest.raises(ConfigError) as err:
        A2CModule.check_config(**_hp(reward))
    assert str(err.value) == message


def test_a_goal_term_without_a_goal_template_is_refused(tmp_path):
    """A game of your own (here the built-in ROM as a file: no banner templates come with it)."""
    from gbx_lightning.algos import A2CModule, ConfigError
    from gbx_lightning.roms import build_rom

    rom = tmp_path / "game.gb"
    rom.write_bytes(build_rom("orchard"))
    hp = _hp([{"name": "step_cost"}, {"name": "success_bonus"}])
    hp["env"]["init_args"] = {"rom": str(rom), "task": {"reward": hp["env"]["init_args"]["task"]["reward"]}}
    with pytest.raises(ConfigError) as err:
        A2CModule.check_config(**hp)
    assert str(err.value) == ("env.task.reward[1] (success_bonus) needs a way to succeed: a goal template "
                              "(tools/capture_goal.py makes one) or a ram_goal (a RAM map field's value)")
    with pytest.raises(RewardSpecError, match=r"^reward\[0\] \(fail_penalty\) needs a fail template"):
        check_reward_spec([{"name": "fail_penalty"}], has_goal=True, has_fail=False)


@pytest.mark.parametrize("cls, transforms, message", [
    ("A2CModule", [{"name": "advantage_norm"}],
     "sample_transforms[0].name must be one of ['reward_norm'] for this learner, got 'advantage_norm'"),
    ("A2CModule", [{"name": "reward_norm", "per": "episode"}],
     "sample_transforms[0].per must be one of ['batch', 'env'], got 'episode'"),
    ("A2CModule", [{"name": "reward_norm", "eps": 0}], "sample_transforms[0].eps must be a number > 0, got 0"),
    ("PPOModule", [{"name": "advantage_norm", "per": "env"}],
     "sample_transforms[0] must be used with normalize_advantages: false (that one normalises every minibatch's "
     "advantages again; set it false to normalise by this item), got {'name': 'advantage_norm', 'per': 'env'}"),
])
def test_bad_sample_transforms_are_one_line_config_errors(cls, transforms, message):
    import gbx_lightning.algos as algos

    with pytest.raises(algos.ConfigError) as err:
        getattr(algos, cls).check_config(**_hp(sample_transforms=transforms))
    assert str(err.value) == message


def test_the_cli_prints_the_reward_error_in_one_line_before_building_anything(tmp_path, capsys):
    from gbx_lightning.cli import main

    cfg = tmp_path / "gb.yaml"
    cfg.write_text(TINY)
    code = main(["fit", "--config", str(cfg), "--runs_dir", str(tmp_path / "runs"), "--model.env.task",
                 '{base: orchard/level1, reward: [{name: step_cost}, {name: goal_distance}, {name: scale, factor: x}]}'])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and err == ["config error: model.env.task.reward[2].factor must be a number, got 'x'"]
    assert not (tmp_path / "runs").exists()
