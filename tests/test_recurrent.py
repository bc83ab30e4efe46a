"""Recurrent policies (models.RecurrentActorCritic): the state zeroed where an episode begins, carried by the stream
across steps and rollouts, replayed env-wise by PPO with the acting log-probs, in checkpoints (exact resume), and
an evaluation state of its own."""

from functools import partial

import pytest
import torch
from lightning.pytorch import Callback

from gbx_lightning.algos import A2CModule, ConfigError, PPOModule, REINFORCEModule
from gbx_lightning.data import EvalEpisodes, RolloutStream
from gbx_lightning.envs import ForagingEnv
from gbx_lightning.models import MLPLSTMPolicy, PixelLSTMPolicy, is_recurrent, sample_actions
from test_trainer import TINY_A2C, TINY_PPO, _assert_straight_run_matches, _fit, _records, _tiny_trainer

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::DeprecationWarning")

ENV_KWARGS = {"obs_mode": "ground_truth", "max_steps": 12, "grid_size": 8, "view_size": 5,
              "food_range": [2, 3], "poison_range": [1, 2], "start_energy": 3.0, "step_cost": 0.5}
LSTM_SPEC = "      class_path: gbx_lightning.models.MLPLSTMPolicy\n      init_args: {hidden: [16], lstm_size: 8}\n"
MLP_SPEC = "      class_path: gbx_lightning.models.MLPPolicy\n      init_args: {hidden: [16]}\n"


def _policy(seed=0, **kw):
    torch.manual_seed(seed)
    return MLPLSTMPolicy((3, 4), 5, hidden=[6], lstm_size=4, **kw)


def _obs(T, N, seed=1):
    return torch.rand((T, N, 3, 4), generator=torch.Generator().manual_seed(seed))


def test_a_start_zeroes_the_state_so_the_episode_runs_as_from_a_fresh_state():
    """env 0 begins an episode at t=3, env 1 at t=0, env 2 never: from its start each equals an unroll from zeros;
    env 2 (no start) keeps the state it came with, so it does not."""
    policy = _policy(lstm_layers=2)
    T, N = 6, 3
    obs = _obs(T, N)
    state = torch.randn(N, 2, 2, 4, generator=torch.Generator().manual_seed(2))   # a state from earlier steps
    starts = torch.zeros(T, N, dtype=torch.bool)
    starts[3, 0] = starts[0, 1] = True
    with torch.no_grad():
        logits, values, _ = policy.unroll(obs, state, starts)
        no_start = torch.zeros(T, N, dtype=torch.bool)
        fresh0 = policy.unroll(obs[3:, [0]], policy.initial_state(1), no_start[3:, [0]])
        fresh1 = policy.unroll(obs[:, [1]], policy.initial_state(1), no_start[:, [1]])
        fresh2 = policy.unroll(obs[:, [2]], policy.initial_state(1), no_start[:, [2]])
    torch.testing.assert_close(logits[3:, 0], fresh0[0][:, 0])
    torch.testing.assert_close(values[3:, 0], fresh0[1][:, 0])
    torch.testing.assert_close(logits[:, 1], fresh1[0][:, 0])
    torch.testing.assert_close(values[:, 1], fresh1[1][:, 0])
    assert not torch.allclose(values[:3, 0], fresh0[1][:3, 0])   # before its start env 0 ran on its old state
    assert not torch.allclose(values[:, 2], fresh2[1][:, 0])     # no start: the old state matters


def test_step_by_step_acting_equals_the_unroll():
    """What acting computes one step at a time (the stream) is what training replays as a sequence."""
    policy = _policy()
    T, N = 5, 4
    obs = _obs(T, N)
    starts = torch.rand(T, N, generator=torch.Generator().manual_seed(3)) < 0.3
    state0 = torch.randn(N, 2, 1, 4, generator=torch.Generator().manual_seed(4))
    with torch.no_grad():
        logits, values, last = policy.unroll(obs, state0, starts)
        state = state0
        for t in range(T):
            step_logits, step_values, state = policy.step(obs[t], state, starts[t])
            torch.testing.assert_close(step_logits, logits[t])
            torch.testing.assert_close(step_values, values[t])
    torch.testing.assert_close(state, last)


def test_a_recurrent_policy_refuses_the_feedforward_calls_and_bad_states():
    policy = _policy()
    with pytest.raises(TypeError, match="is recurrent: act with step"):
        policy(_obs(1, 2)[0])
    with pytest.raises(ValueError, match=r"state must have shape \[2, 2, 1, 4\], got \[2, 2, 1, 5\]"):
        policy.step(_obs(1, 2)[0], torch.zeros(2, 2, 1, 5))
    assert is_recurrent(policy) and is_recurrent(PixelLSTMPolicy) and not is_recurrent(torch.nn.Linear(1, 1))
    pixels = PixelLSTMPolicy((4, 72, 80), 8)
    logits, value, state = pixels.step(torch.zeros(3, 4, 72, 80, dtype=torch.uint8), pixels.initial_state(3))
    assert logits.shape == (3, 8) and value.shape == (3,) and state.shape == (3, 2, 1, 128)


def _stream(seed=5, T=5, N=4):
    torch.manual_seed(0)
    env = ForagingEnv(N, "cpu", **ENV_KWARGS)
    policy = MLPLSTMPolicy(env.obs_shape, env.num_actions, hidden=[16], lstm_size=8)
    return RolloutStream(env, policy, seed=seed, rollout_steps=T)


def test_the_stream_carries_the_state_and_env_wise_replay_gives_the_acting_logprobs():
    """Across rollouts the state continues (policy_states[0] of a rollout = the last of the one before) and is
    zeroed where an episode began; replaying any subset of envs from policy_states[0] gives the log-probs and values
    acting gave (PPO's first minibatch: ratio 1)."""
    stream = _stream()
    it = iter(stream)
    batches = [next(it) for _ in range(4)]   # 20 steps: episodes (max 12 steps, energy 3) end inside rollouts
    T, N = batches[0]["rewards"].shape
    assert batches[0]["policy_states"].shape == (T + 1, N, 2, 1, 8) and batches[0]["starts"].shape == (T, N)
    assert bool(batches[0]["starts"][0].all()) and not bool(batches[0]["policy_states"][0].any())   # fresh envs
    assert any(bool(b["starts"][1:].any()) for b in batches)   # an episode began inside a rollout
    with torch.no_grad():
        for prev, b in zip(batches, batches[1:]):
            torch.testing.assert_close(b["policy_states"][0], prev["policy_states"][-1])
            torch.testing.assert_close(b["starts"][0], prev["terminated"][-1] | prev["truncated"][-1])
            for envs in (torch.tensor([2, 0]), torch.arange(N)):
                lp, _, v = stream.policy.evaluate_sequences(b["obs"][:, envs], b["actions"][:, envs],
                                                            b["policy_states"][0][envs], b["starts"][:, envs])
                torch.testing.assert_close(lp, b["logprobs"][:, envs], rtol=1e-5, atol=1e-6)
                torch.testing.assert_close(v, b["values"][:, envs], rtol=1e-5, atol=1e-6)


def test_ppo_first_pass_has_ratio_one():
    """One epoch of one minibatch: the loss is computed before any step, on the env-wise replay; ratio 1 exactly up
    to rounding: approx_kl ~ 0, clipfrac 0 (a replay that dropped the state or the starts would not be)."""
    from gbx_lightning.callbacks import TrainingLog

    for policy in (partial(MLPLSTMPolicy, hidden=[16], lstm_size=8),):
        module = PPOModule(env=partial(ForagingEnv, **ENV_KWARGS), num_envs=4, policy=policy, rollout_steps=20,
                           epochs=1, minibatches=1, seed=0)
        log = TrainingLog("/dev/null", config={}, log_every=1)
        records = []
        log._write = lambda trainer, obj: records.append(obj)
        _tiny_trainer(3, callbacks=[log]).fit(module)   # 3 rollouts: the later ones start from carried states
        steps = [r for r in records if "approx_kl" in r]
        assert len(steps) == 3
        for r in steps:
            assert abs(r["approx_kl"]) < 1e-6 and r["clipfrac"] == 0.0, r


def test_ppo_minibatches_are_whole_envs_refused_beyond_num_envs():
    with pytest.raises(ConfigError, match=r"^minibatches must be <= num_envs = 4 with a recurrent policy \(each "
                                          r"minibatch is whole envs' sequences\), got 8$"):
        PPOModule(env=partial(ForagingEnv, **ENV_KWARGS), num_envs=4, policy=partial(MLPLSTMPolicy, hidden=[16]),
                  rollout_steps=8, minibatches=8)


def test_evaluation_carries_a_state_of_its_own_from_zeros():
    """EvalEpisodes with a recurrent policy = a hand loop of policy.step from zero states, zeroed at episode ends;
    the training stream's state is not touched."""
    stream = _stream()
    next(iter(stream))
    before = stream.policy_state.clone()
    env = ForagingEnv(3, "cpu", **ENV_KWARGS)
    got = next(iter(EvalEpisodes(env, stream.policy, seed=9, check_every=1)))
    torch.testing.assert_close(stream.policy_state, before)
    # by hand
    gen = torch.Generator().manual_seed(9)
    obs = env.reset(seed=9)
    state, starts = stream.policy.initial_state(3), torch.ones(3, dtype=torch.bool)
    returns, done = torch.zeros(3), torch.zeros(3, dtype=torch.bool)
    with torch.no_grad():
        while not bool(done.all()):
            logits, _, state = stream.policy.step(obs, state, starts)
            obs, _, term, trunc, info = env.step(sample_actions(logits, gen).to(torch.int32))
            ended = (term | trunc) & ~done
            returns = torch.where(ended, info["episode_return"], returns)
            done |= ended
            starts = term | trunc
    torch.testing.assert_close(got["episode_return"], returns)


class _Initial(Callback):
    def on_train_start(self, trainer, pl_module):
        self.lstm = pl_module.policy.lstm.weight_hh_l0.detach().clone()


def test_a2c_and_reinforce_train_a_recurrent_policy():
    """The same replay serves A2C (one update per window) and REINFORCE (Monte-Carlo over the rollout): the
    gradient reaches the LSTM's recurrent weights (through time)."""
    for module in (A2CModule(env=partial(ForagingEnv, **ENV_KWARGS), num_envs=4, update_every=3, seed=0,
                             policy=partial(MLPLSTMPolicy, hidden=[16], lstm_size=8)),
                   REINFORCEModule(env=partial(ForagingEnv, **ENV_KWARGS), num_envs=4, rollout_steps=12, seed=0,
                                   policy=partial(MLPLSTMPolicy, hidden=[16], lstm_size=8))):
        initial = _Initial()
        _tiny_trainer(2, callbacks=[initial]).fit(module)
        assert module.opt_steps == 2
        assert not torch.equal(module.policy.lstm.weight_hh_l0, initial.lstm), type(module).__name__


@pytest.mark.parametrize("config", [TINY_A2C, TINY_PPO], ids=["a2c", "ppo"])
def test_a_resumed_recurrent_run_equals_the_uninterrupted_one(config, tmp_path):
    """The LSTM state every env carries is in the checkpoint with the envs: a run stopped and resumed logs the same
    losses and ends with the same weights as the run that was never stopped."""
    assert MLP_SPEC in config
    cfg = tmp_path / "tiny.yaml"
    cfg.write_text(config.replace(MLP_SPEC, LSTM_SPEC))
    runs = tmp_path / "runs"
    first, total = (4, 8) if "A2C" in config else (8, 16)
    assert _fit(cfg, runs, "--trainer.max_steps", str(first)) == 0
    ckpt = torch.load(runs / "tiny" / "version_0" / "checkpoints" / "last.ckpt", weights_only=False)
    saved = ckpt["loops"]["fit_loop"]["state_dict"]["combined_loader"][0]["policy_state"]
    assert saved[0].shape == (4, 2, 1, 8) and saved[0].abs().sum() > 0 and saved[1].dtype == torch.bool
    assert _fit(cfg, runs, "--ckpt_path", "last", "--trainer.max_steps", str(total)) == 0
    ckpt = torch.load(runs / "tiny" / "version_0" / "checkpoints" / "last.ckpt", weights_only=False)
    _, steps, evals = _records(runs / "tiny" / "version_0" / "train.jsonl")
    assert steps[-1]["opt_steps"] == total and evals
    _assert_straight_run_matches(cfg, runs, total, steps, ckpt)


def test_recurrent_ppo_loss_on_a_hand_built_batch_equals_a_stepwise_hand_computation():
    """A [T=3, N=4] rollout built by hand (a random state before it, env 1 starting an episode at t=1, env 2
    terminated at t=0, old log-probs moved by +-0.3 so that the clip bites): every minibatch loss PPO computes equals
    one computed env by env, step by step, from that env's state with the formulas written out (GAE, normalised
    advantages, clipped surrogate, value, entropy). The optimizer is not stepped, so every minibatch is checked with
    the same weights; the env-wise split is the stream generator's permutation of the envs."""
    from types import SimpleNamespace

    T, N, gamma, lam, clip, vcoef, ecoef = 3, 4, 0.9, 0.8, 0.2, 0.5, 0.01
    module = PPOModule(env=partial(ForagingEnv, **ENV_KWARGS), num_envs=N, rollout_steps=T, epochs=1, minibatches=2,
                       gamma=gamma, gae_lambda=lam, clip_coef=clip, value_coef=vcoef, entropy_coef=ecoef, seed=0,
                       policy=partial(MLPLSTMPolicy, hidden=[6], lstm_size=4))
    module.policy = policy = _policy()
    g = torch.Generator().manual_seed(11)
    obs, final_obs = _obs(T, N, seed=12), _obs(T, N, seed=13)
    actions = torch.randint(0, 5, (T, N), generator=g)
    rewards = torch.randn(T, N, generator=g)
    terminated = torch.zeros(T, N, dtype=torch.bool)
    truncated = torch.zeros(T, N, dtype=torch.bool)
    terminated[0, 2] = truncated[0, 1] = True
    starts = torch.zeros(T, N, dtype=torch.bool)
    starts[1, 1] = starts[1, 2] = True          # the step after each end begins an episode
    state0 = torch.randn(N, 2, 1, 4, generator=g)

    # by hand, env by env, one step at a time: acting's log-probs, values and states; V(s') from the state after t
    logp = torch.zeros(T, N); ent = torch.zeros(T, N); val = torch.zeros(T, N); next_val = torch.zeros(T, N)
    states = torch.zeros(T + 1, N, 2, 1, 4)
    with torch.no_grad():
        for e in range(N):
            s = state0[e:e + 1]
            states[0, e] = s[0]
            for t in range(T):
                if starts[t, e]:
                    s = torch.zeros_like(s)
                logits, v, s = policy.step(obs[t, e:e + 1], s)
                p = torch.softmax(logits[0], -1)
                logp[t, e] = p[actions[t, e]].log()
                ent[t, e] = -(p * p.log()).sum()
                val[t, e] = v[0]
                states[t + 1, e] = s[0]
                next_val[t, e] = policy.step(final_obs[t, e:e + 1], s)[1][0]
    nudge = torch.tensor([0.3, -0.3, 0.05, -0.05]).repeat(T, 1)
    batch = {"obs": obs, "actions": actions, "logprobs": logp - nudge, "values": val + 0.1, "rewards": rewards,
             "terminated": terminated, "truncated": truncated, "final_obs": final_obs, "starts": starts,
             "policy_states": states}
    # GAE written out: delta = r + gamma V(s') (1 - term) - V; A_t = delta_t + gamma lam (1 - done_t) A_{t+1}
    adv = torch.zeros(T, N)
    for e in range(N):
        running = 0.0
        for t in reversed(range(T)):
            v_old = float(batch["values"][t, e])
            delta = float(rewards[t, e]) + gamma * float(next_val[t, e]) * (not terminated[t, e]) - v_old
            done = bool(terminated[t, e] or truncated[t, e])
            running = delta + gamma * lam * (0.0 if done else running) * (t < T - 1)
            adv[t, e] = running
    returns = adv + batch["values"]

    module.stream = SimpleNamespace(generator=torch.Generator().manual_seed(21))
    losses = []
    module.step_optimizer = lambda out: losses.append(out["loss"].detach())
    module.training_step(batch, 0)
    halves = torch.randperm(N, generator=torch.Generator().manual_seed(21)).chunk(2)
    assert len(losses) == 2
    for envs, got in zip(halves, losses):
        a = adv[:, envs].flatten()
        a = (a - a.mean()) / (a.std(unbiased=False) + 1e-8)
        ratio = (logp[:, envs] - batch["logprobs"][:, envs]).flatten().exp()
        surrogate = torch.maximum(-a * ratio, -a * ratio.clamp(1 - clip, 1 + clip)).mean()
        value = (0.5 * (val[:, envs] - returns[:, envs]) ** 2).mean()
        expected = surrogate + vcoef * value - ecoef * ent[:, envs].mean()
        torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-6)
    assert (logp - batch["logprobs"]).exp().sub(1).abs().max() > clip   # the clip took part (env 0's +0.3)
