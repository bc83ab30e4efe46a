"""REINFORCE: Monte-Carlo returns and the loss against hand-computed numbers (the arithmetic in comments), then
REINFORCEModule: step counting, accumulation equal to the whole batch, resume equal to the uninterrupted run
(also from a stop between two accumulated rollouts), config errors in one line, configs/reinforce.yaml."""

import inspect
import json
import math
import os
import signal
from functools import partial
from pathlib import Path

import pytest
import torch
import yaml
from lightning.pytorch import Callback, Trainer

from gbx_lightning.algos import ConfigError, REINFORCEModule
from gbx_lightning.callbacks import read_training_log
from gbx_lightning.cli import main
from gbx_lightning.data import RolloutStream
from gbx_lightning.envs import ForagingEnv, make_env
from gbx_lightning.models import MLPPolicy, logprob_entropy, make_policy
from gbx_lightning.rl import monte_carlo_returns, reinforce_loss

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::DeprecationWarning")

LN = math.log
ROOT = Path(__file__).resolve().parents[1]


# ---------------------------------------------------------------- monte_carlo_returns
def _rollout():
    # T = 4, N = 3, gamma = 0.5
    #   env0: rewards [1, 1, 1, 1], terminated at t=1, then a new episode that has not ended by t=3
    #   env1: rewards [0, 2, 4, 8], truncated at t=0, terminated at t=3
    #   env2: rewards [1, 0, 0, 3], no end in the rollout
    rewards = torch.tensor([[1.0, 0, 1], [1, 2, 0], [1, 4, 0], [1, 8, 3]])
    terminated = torch.tensor([[False, False, False], [True, False, False], [False, False, False],
                               [False, True, False]])
    truncated = torch.tensor([[False, True, False], [False, False, False], [False, False, False],
                              [False, False, False]])
    return rewards, terminated, truncated


def test_returns_stop_at_each_episode_end_and_tails_are_incomplete():
    rewards, terminated, truncated = _rollout()
    returns, complete = monte_carlo_returns(rewards, terminated, truncated, gamma=0.5)
    # env0: G1 = 1 (terminated), G0 = 1 + 0.5 * 1 = 1.5: the next episode's rewards (t=2, 3) do not leak in;
    #       t=2, 3 belong to an episode still running at the rollout's end: incomplete
    # env1: G3 = 8, G2 = 4 + 0.5 * 8 = 8, G1 = 2 + 0.5 * 8 = 6, G0 = 0 (truncated: the return ends there)
    # env2: no episode end: every step incomplete
    assert complete.tolist() == [[True, True, False], [True, True, False], [False, True, False],
                                 [False, True, False]]
    torch.testing.assert_close(returns[:2, 0], torch.tensor([1.5, 1.0]))
    torch.testing.assert_close(returns[:, 1], torch.tensor([0.0, 6.0, 8.0, 8.0]))


def test_truncation_bootstraps_only_when_values_are_given_and_never_after_termination():
    rewards, terminated, truncated = _rollout()
    values = torch.full((4, 3), 10.0)
    values[1, 0] = 99.0   # V(s') after env0's termination: must not be used
    returns, complete = monte_carlo_returns(rewards, terminated, truncated, gamma=0.5, truncation_values=values)
    # env1 t=0 truncated: G0 = 0 + 0.5 * V(s'_0) = 5; the rest as without bootstrapping
    torch.testing.assert_close(returns[:, 1], torch.tensor([5.0, 6.0, 8.0, 8.0]))
    torch.testing.assert_close(returns[:2, 0], torch.tensor([1.5, 1.0]))
    assert complete.tolist() == monte_carlo_returns(rewards, terminated, truncated, gamma=0.5)[1].tolist()


def test_returns_match_a_plain_per_env_loop_with_random_ends():
    g = torch.Generator().manual_seed(2)
    T, N, gamma = 9, 6, 0.9
    rewards, boot = torch.randn(T, N, generator=g), torch.randn(T, N, generator=g)
    terminated = torch.rand(T, N, generator=g) < 0.2
    truncated = (torch.rand(T, N, generator=g) < 0.15) & ~terminated
    returns, complete = monte_carlo_returns(rewards, terminated, truncated, gamma, truncation_values=boot)
    for n in range(N):
        g_next, seen_end = 0.0, False
        for t in reversed(range(T)):
            if terminated[t, n]:
                g_next, seen_end = rewards[t, n].item(), True
            elif truncated[t, n]:
                g_next, seen_end = rewards[t, n].item() + gamma * boot[t, n].item(), True
            else:
                g_next = rewards[t, n].item() + gamma * g_next
            assert bool(complete[t, n]) == seen_end
            if seen_end:
                assert returns[t, n].item() == pytest.approx(g_next, abs=1e-5)


# ---------------------------------------------------------------- reinforce_loss on a hand-computed 2-step episode
def _two_step_episode():
    # One env, T = 2: r = [0, 2], terminated at t=1, gamma = 0.5 -> G1 = 2, G0 = 0 + 0.5 * 2 = 1
    # t=0: logits [0, 0]     -> pi = [0.5, 0.5],   action 1 -> log pi = ln 0.5 = -0.693147
    # t=1: logits [ln 3, 0]  -> pi = [0.75, 0.25], action 0 -> log pi = ln 0.75 = -0.287682
    returns, complete = monte_carlo_returns(torch.tensor([[0.0], [2.0]]), torch.tensor([[False], [True]]),
                                            torch.tensor([[False], [False]]), gamma=0.5)
    assert returns.flatten().tolist() == [1.0, 2.0] and complete.flatten().tolist() == [True, True]
    logits = torch.tensor([[0.0, 0.0], [LN(3.0), 0.0]], requires_grad=True)
    logprobs, entropy = logprob_entropy(logits, torch.tensor([1, 0]))
    return logits, logprobs, entropy, returns.flatten(), complete.flatten()


H1 = -(0.75 * LN(0.75) + 0.25 * LN(0.25))  # entropy of [0.75, 0.25] = 0.562335


def test_two_step_episode_without_baseline():
    logits, logprobs, entropy, returns, mask = _two_step_episode()
    out = reinforce_loss(logprobs, entropy, returns, mask, None, entropy_coef=0.1)
    # policy  = mean(-G * log pi) = -(1 * ln 0.5 + 2 * ln 0.75) / 2 = (0.693147 + 0.575364) / 2 = 0.634256
    # entropy = (ln 2 + 0.562335) / 2 = 0.627741;  loss = 0.634256 - 0.1 * 0.627741 = 0.571482
    policy = -(1 * LN(0.5) + 2 * LN(0.75)) / 2
    entropy_mean = (LN(2.0) + H1) / 2
    assert out["policy_loss"].item() == pytest.approx(0.634256, abs=1e-6) == policy
    assert out["entropy"].item() == pytest.approx(0.627741, abs=1e-6) == entropy_mean
    assert out["value_loss"].item() == 0.0 and out["samples"].item() == 2.0
    assert out["loss"].item() == pytest.approx(0.571482, abs=1e-6)
    out["loss"].backward()
    # d/dz [-(G_t / 2) log pi(a_t)] = -(G_t / 2) * (onehot(a_t) - pi_t)
    #   t=0: -(1/2) * ([0, 1] - [0.5, 0.5]) = [ 0.25, -0.25]
    #   t=1: -(2/2) * ([1, 0] - [0.75, 0.25]) = [-0.25,  0.25]
    # d/dz_j [-(0.1 / 2) H_t] = 0.05 * pi_j * (ln pi_j + H_t)
    #   t=0: uniform, ln pi_j + H = -ln 2 + ln 2 = 0 -> [0, 0]
    #   t=1: 0.05 * [0.75 * (-0.287682 + 0.562335), 0.25 * (-1.386294 + 0.562335)] = [0.0102995, -0.0102995]
    entropy_grad = 0.05 * 0.75 * (LN(0.75) + H1)
    assert entropy_grad == pytest.approx(0.0102995, abs=1e-7)
    torch.testing.assert_close(logits.grad, torch.tensor([[0.25, -0.25],
                                                          [-0.25 + entropy_grad, 0.25 - entropy_grad]]))


def test_two_step_episode_with_learned_baseline():
    logits, logprobs, entropy, returns, mask = _two_step_episode()
    values = torch.tensor([0.5, 3.0], requires_grad=True)
    out = reinforce_loss(logprobs, entropy, returns, mask, values, value_coef=0.5, entropy_coef=0.0)
    # A = G - V = [1 - 0.5, 2 - 3] = [0.5, -1]
    # policy = -(0.5 * ln 0.5 + (-1) * ln 0.75) / 2 = -(-0.346574 + 0.287682) / 2 = 0.029446
    # value  = mean(0.5 * (V - G)^2) = 0.5 * (0.25 + 1) / 2 = 0.3125;  loss = 0.029446 + 0.5 * 0.3125 = 0.185696
    assert out["policy_loss"].item() == pytest.approx(0.029446, abs=1e-6)
    assert out["value_loss"].item() == pytest.approx(0.3125)
    assert out["loss"].item() == pytest.approx(0.185696, abs=1e-6)
    out["loss"].backward()
    # logits: -(A_t / 2) * (onehot - pi):  t=0: -(0.25) * [-0.5, 0.5] = [0.125, -0.125]
    #                                      t=1: -(-0.5) * [0.25, -0.25] = [0.125, -0.125]
    torch.testing.assert_close(logits.grad, torch.tensor([[0.125, -0.125], [0.125, -0.125]]))
    # values: only the value term (A is detached): 0.5 * (V - G) / 2 = 0.25 * [-0.5, 1] = [-0.125, 0.25]
    torch.testing.assert_close(values.grad, torch.tensor([-0.125, 0.25]))


def test_normalised_advantages_use_the_masked_samples_only():
    logits, logprobs, entropy, returns, mask = _two_step_episode()
    # a third sample whose episode did not end in the rollout: masked out, its huge partial return ignored
    logprobs = torch.cat([logprobs, torch.tensor([LN(0.1)])])
    entropy = torch.cat([entropy, torch.tensor([1.0])])
    returns, mask = torch.cat([returns, torch.tensor([100.0])]), torch.cat([mask, torch.tensor([False])])
    values = torch.tensor([0.5, 3.0, 0.0])
    out = reinforce_loss(logprobs, entropy, returns, mask, values, value_coef=0.0, entropy_coef=0.0,
                         normalize_advantages=True)
    # A = [0.5, -1]: mean -0.25, population std 0.75 -> normalised [1, -1]
    # policy = -(1 * ln 0.5 + (-1) * ln 0.75) / 2 = (0.693147 - 0.287682) / 2 = 0.202733
    assert out["samples"].item() == 2.0
    assert out["policy_loss"].item() == pytest.approx(0.202733, abs=1e-6)
    out["loss"].backward()
    #   t=0: -(1/2) * [-0.5, 0.5] = [0.25, -0.25];  t=1: -(-1/2) * [0.25, -0.25] = [0.125, -0.125]
    torch.testing.assert_close(logits.grad, torch.tensor([[0.25, -0.25], [0.125, -0.125]]))


def test_sum_reduction_is_the_mean_times_the_samples():
    _, logprobs, entropy, returns, mask = _two_step_episode()
    values = torch.tensor([0.5, 3.0])
    mean = reinforce_loss(logprobs, entropy, returns, mask, values)
    total = reinforce_loss(logprobs, entropy, returns, mask, values, reduction="sum")
    for key in ("loss", "policy_loss", "value_loss", "entropy"):
        assert total[key].item() == pytest.approx(2 * mean[key].item()), key


@pytest.mark.parametrize("override, message", [
    (dict(returns=torch.zeros(3)), "reinforce_loss: returns must have shape [B]=[2], got [3]"),
    (dict(mask=torch.ones(2)), "reinforce_loss: mask must have dtype torch.bool, got torch.float32"),
    (dict(values=torch.zeros(2, 1)), "reinforce_loss: values must have shape [B]=[2], got [2, 1]"),
    (dict(entropy_coef=-0.1), "reinforce_loss: entropy_coef must be a number >= 0, got -0.1"),
    (dict(reduction="none"), "reinforce_loss: reduction must be 'mean' or 'sum', got 'none'"),
])
def test_reinforce_loss_rejects_bad_input(override, message):
    _, logprobs, entropy, returns, mask = _two_step_episode()
    case = {**dict(logprobs=logprobs, entropy=entropy, returns=returns, mask=mask, values=None), **override}
    with pytest.raises((ValueError, TypeError)) as err:
        reinforce_loss(**case)
    assert message in str(err.value)


def test_monte_carlo_returns_rejects_bad_input():
    rewards, terminated, truncated = _rollout()
    with pytest.raises(TypeError, match=r"monte_carlo_returns: truncated must have dtype torch.bool"):
        monte_carlo_returns(rewards, terminated, truncated.float(), gamma=0.5)
    with pytest.raises(ValueError, match=r"monte_carlo_returns: truncation_values must have shape \[T, N\]=\[4, 3\]"):
        monte_carlo_returns(rewards, terminated, truncated, 0.5, truncation_values=torch.zeros(4))


# ---------------------------------------------------------------- REINFORCEModule
ENV_KWARGS = {"obs_mode": "ground_truth", "max_steps": 12, "grid_size": 8, "view_size": 5,
              "food_range": [2, 3], "poison_range": [1, 2], "start_energy": 3.0, "step_cost": 0.5}
T = 12  # rollout_steps = the env's episode limit


def _module(**kw):
    options = dict(env=partial(ForagingEnv, **ENV_KWARGS), num_envs=4, policy=partial(MLPPolicy, hidden=[16]),
                   rollout_steps=T, seed=7)
    return REINFORCEModule(**{**options, **kw})


def _trainer(max_steps, **kw):
    return Trainer(max_steps=max_steps, accelerator="cpu", devices=1, logger=False, enable_checkpointing=False,
                   enable_progress_bar=False, enable_model_summary=False, num_sanity_val_steps=0,
                   limit_val_batches=0, **kw)


class _GradsBeforeStep(Callback):
    """The policy's initial weights, the gradient handed to the first optimizer step, and the rollouts fed to it."""

    def __init__(self):
        self.batches = []

    def on_train_start(self, trainer, pl_module):
        self.initial = {k: v.clone() for k, v in pl_module.policy.state_dict().items()}

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
        if not hasattr(self, "grads"):
            self.batches.append(batch)

    def on_before_optimizer_step(self, trainer, pl_module, optimizer):
        if not hasattr(self, "grads"):
            self.grads = {n: p.grad.clone() for n, p in pl_module.policy.named_parameters()}


def test_opt_steps_count_accumulated_rollouts():
    module = _module(accumulate=3)
    _trainer(2).fit(module)
    # 2 optimizer steps x 3 rollouts x 12 steps x 4 envs
    assert module.opt_steps == 2 and module.env_steps == 2 * 3 * T * 4 and module.stream.iterations == 6


@pytest.mark.parametrize("bootstrap_truncated", [False, True])
def test_accumulated_gradient_equals_the_whole_batchs(bootstrap_truncated):
    """Three rollouts backwarded one by one, one optimizer step: the gradient is that of the mean loss over all
    three rollouts' used samples at once (not the mean of the three rollouts' means: their counts differ).
    With bootstrap_truncated, the truncated returns end in gamma * V(final_obs)."""
    module = _module(accumulate=3, max_grad_norm=None, entropy_coef=0.05, normalize_advantages=False,
                     bootstrap_truncated=bootstrap_truncated)
    spy = _GradsBeforeStep()
    _trainer(1, callbacks=[spy]).fit(module)
    assert len(spy.batches) == 3
    assert any(bool(b["truncated"].any()) for b in spy.batches)   # time limits happen: the option is exercised

    policy = make_policy("mlp", module.env.obs_shape, module.env.num_actions, hidden=[16])
    policy.load_state_dict(spy.initial)

    def truncation_values(b):
        with torch.no_grad():
            return policy(b["final_obs"].flatten(0, 1))[1].view(T, 4) if bootstrap_truncated else None

    returns, masks = zip(*(monte_carlo_returns(b["rewards"], b["terminated"], b["truncated"], 0.99,
                                               truncation_values(b)) for b in spy.batches))
    counts = [int(m.sum()) for m in masks]
    assert len(set(counts)) > 1 and sum(counts) < 3 * T * 4   # unequal parts; some tails dropped
    obs = torch.cat([b["obs"].flatten(0, 1) for b in spy.batches])
    actions = torch.cat([b["actions"].flatten() for b in spy.batches])
    logprobs, entropy, values = policy.evaluate(obs, actions)
    whole = reinforce_loss(logprobs, entropy, torch.cat([r.flatten() for r in returns]),
                           torch.cat([m.flatten() for m in masks]), values, value_coef=0.5, entropy_coef=0.05)
    whole["loss"].backward()
    for name, p in policy.named_parameters():
        assert p.grad.abs().sum() > 0, name
        torch.testing.assert_close(spy.grads[name], p.grad, msg=name)


def test_the_rollouts_are_acted_with_the_weights_of_the_step():
    """The accumulated rollouts are one on-policy batch: their log-probs are the policy's at the step."""
    module = _module(accumulate=2)
    spy = _GradsBeforeStep()
    _trainer(1, callbacks=[spy]).fit(module)
    policy = make_policy("mlp", module.env.obs_shape, module.env.num_actions, hidden=[16])
    policy.load_state_dict(spy.initial)
    for b in spy.batches:
        logprobs, _, _ = policy.evaluate(b["obs"].flatten(0, 1), b["actions"].flatten())
        torch.testing.assert_close(b["logprobs"].flatten(), logprobs)


def test_without_baseline_the_value_head_never_moves():
    module = _module(baseline=False, lr=0.05)
    spy = _GradsBeforeStep()
    _trainer(3, callbacks=[spy]).fit(module)
    after = module.policy.state_dict()
    moved = {k for k in after if not torch.equal(after[k], spy.initial[k])}
    # (the value head is in the graph with weight 0, as DDP wants every parameter used: its gradient is 0)
    assert torch.equal(spy.grads["value_head.weight"], torch.zeros_like(spy.grads["value_head.weight"]))
    assert moved == {"body.1.weight", "body.1.bias", "policy_head.weight", "policy_head.bias"}


# ---------------------------------------------------------------- through the CLI: resume, stop mid-accumulation
TINY = f"""
seed_everything: 3
trainer: {{max_steps: 2, accelerator: cpu, devices: 1, val_check_interval: 4, check_val_every_n_epoch: null}}
model:
  class_path: gbx_lightning.algos.REINFORCEModule
  init_args: {{env: {{class_path: gbx_lightning.envs.ForagingEnv, init_args: {json.dumps(ENV_KWARGS)}}}, num_envs: 4,
              policy: {{class_path: gbx_lightning.models.MLPPolicy, init_args: {{hidden: [16]}}}},
              rollout_steps: {T}, accumulate: 2, lr: 0.01, eval_episodes: 3}}
checkpoint_every: 1
log_every: 1
progress_refresh: 0
"""
WALL = {"wall_time_s", "sps", "time_env_s", "time_act_s", "time_update_s", "time_other_s"}


def _fit(cfg, runs, *extra):
    return main(["fit", "--config", str(cfg), "--runs_dir", str(runs), *extra])


def _ckpt(path):
    return torch.load(path, map_location="cpu", weights_only=False)


def _assert_same_run(run_dir, straight_dir):
    """Bitwise equal weights and equal step and eval records (wall-clock fields aside; a record written again
    after a resume supersedes the old one)."""
    a, b = _ckpt(run_dir / "checkpoints" / "last.ckpt"), _ckpt(straight_dir / "checkpoints" / "last.ckpt")
    assert a["global_step"] == b["global_step"] and a["gbx"] == b["gbx"]
    for k, v in b["state_dict"].items():
        assert torch.equal(a["state_dict"][k], v), k

    def records(d):
        recs = read_training_log(d / "train.jsonl")
        steps = {r["opt_steps"]: {k: v for k, v in r.items() if k not in WALL} for r in recs if "loss" in r}
        return steps, [r["eval"] for r in recs if "eval" in r]

    (steps_a, evals_a), (steps_b, evals_b) = records(run_dir), records(straight_dir)
    assert steps_a == steps_b and evals_a == evals_b
    return steps_b


@pytest.fixture
def cfg(tmp_path):
    path = tmp_path / "tiny.yaml"
    path.write_text(TINY)
    return path


def test_resume_equals_the_uninterrupted_run(cfg, tmp_path):
    runs = tmp_path / "runs"
    assert _fit(cfg, runs) == 0
    run_dir = runs / "tiny" / "version_0"
    assert _ckpt(run_dir / "checkpoints" / "last.ckpt")["gbx"]["env_steps"] == 2 * 2 * T * 4
    assert _fit(cfg, runs, "--ckpt_path", "last", "--trainer.max_steps", "4") == 0
    assert _fit(cfg, runs, "--run_name", "straight", "--trainer.max_steps", "4") == 0
    steps = _assert_same_run(run_dir, runs / "straight" / "version_0")
    assert sorted(steps) == [1, 2, 3, 4]
    assert [steps[k]["env_steps"] for k in (1, 2, 3, 4)] == [96 * k for k in (1, 2, 3, 4)]
    for r in steps.values():   # the used share of the samples is logged, and some tails were dropped
        assert 0 < r["complete_fraction"] < 1 and r["explained_variance"] is not None


@pytest.fixture
def stray_signals():
    """A signal that reached no handler is recorded here (and fails the test) instead of killing pytest."""
    stray = []
    old = {s: signal.signal(s, lambda signum, frame: stray.append(signum)) for s in (signal.SIGTERM, signal.SIGINT)}
    yield stray
    for s, handler in old.items():
        signal.signal(s, handler)
    assert not stray, f"signals nobody handled: {stray}"


def test_a_stop_between_two_accumulated_rollouts_resumes_exactly(cfg, tmp_path, monkeypatch, capfd, stray_signals):
    """Ctrl-C during the 30th env step (the third rollout: the first half of optimizer step 2): the run stops after
    that rollout with its gradient half accumulated and saves it; resumed, it equals the straight run."""
    from gbx_lightning.envs.foraging import ForagingEnv

    runs, calls, original = tmp_path / "runs", [], ForagingEnv.step

    def step(self, actions):
        calls.append(1)
        if len(calls) == 30:
            os.kill(os.getpid(), signal.SIGINT)
        return original(self, actions)

    monkeypatch.setattr(ForagingEnv, "step", step)
    off = ("--random_baseline", "false")  # the random policy's episodes would count among the env steps above
    assert _fit(cfg, runs, "--checkpoint_every", "100", "--trainer.max_steps", "3", *off) == 0
    assert "SIGINT: stopped after optimizer step 1 (env step 144)" in capfd.readouterr().err
    run_dir = runs / "tiny" / "version_0"
    saved = _ckpt(run_dir / "checkpoints" / "last.ckpt")
    assert saved["global_step"] == 1 and saved["gbx_reinforce"]["parts"] == 1
    assert all(g is not None and g.abs().sum() > 0 for g in saved["gbx_reinforce"]["grads"])
    monkeypatch.undo()
    assert _fit(cfg, runs, "--checkpoint_every", "100", "--trainer.max_steps", "3", "--ckpt_path", "last", *off) == 0
    assert _fit(cfg, runs, "--checkpoint_every", "100", "--trainer.max_steps", "3", "--run_name", "straight", *off) == 0
    assert sorted(_assert_same_run(run_dir, runs / "straight" / "version_0")) == [1, 2, 3]


# ---------------------------------------------------------------- config errors, the shipped config
@pytest.mark.parametrize("override, message", [
    (dict(rollout_steps=11), "rollout_steps must be >= the env's episode limit env.max_steps = 12 "
                             "(Monte-Carlo returns need every episode to end inside one rollout), got 11"),
    (dict(accumulate=0), "accumulate must be an int >= 1, got 0"),
    (dict(baseline=False, bootstrap_truncated=True),
     "bootstrap_truncated needs baseline: true (a truncated return is completed with the learned V(s')), "
     "got baseline: false"),
])
def test_config_errors_name_the_field(override, message):
    with pytest.raises(ConfigError) as err:
        _module(**override)
    assert str(err.value) == message


def test_the_episode_limit_is_the_envs_default_when_not_given():
    kwargs = {k: v for k, v in ENV_KWARGS.items() if k != "max_steps"}   # ForagingEnv's default: 200
    with pytest.raises(ConfigError, match=r"^rollout_steps must be >= .*env.max_steps = 200 .*, got 12$"):
        _module(env=partial(ForagingEnv, **kwargs))


def test_the_cli_prints_a_config_error_in_one_line(cfg, tmp_path, capsys):
    assert _fit(cfg, tmp_path / "runs", "--model.init_args.rollout_steps", "5") == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        "config error: model.rollout_steps must be >= the env's episode limit env.max_steps = 12 "
        "(Monte-Carlo returns need every episode to end inside one rollout), got 5")
    assert not (tmp_path / "runs").exists()   # refused before any run directory is made


def test_shipped_config_trains_the_built_in_task_for_a2cs_env_steps():
    """configs/reinforce.yaml: the task, policy and evaluation of a2c.yaml, and as many env steps."""
    ours = yaml.safe_load((ROOT / "configs" / "reinforce.yaml").read_text())
    a2c = yaml.safe_load((ROOT / "configs" / "a2c.yaml").read_text())
    m, a = ours["model"]["init_args"], a2c["model"]["init_args"]
    assert ours["model"]["class_path"] == "gbx_lightning.algos.REINFORCEModule"
    for key in ("env", "policy", "eval_episodes"):
        assert m[key] == a[key], key
    env_steps = ours["trainer"]["max_steps"] * m["rollout_steps"] * m["num_envs"] * m.get("accumulate", 1)
    assert env_steps == a2c["trainer"]["max_steps"] * a["update_every"] * a["num_envs"] == 320_000
    defaults = {k: p.default for k, p in inspect.signature(REINFORCEModule).parameters.items()}
    REINFORCEModule.check_config(**{**defaults, **m})   # rollout_steps >= max_steps, and the rest
