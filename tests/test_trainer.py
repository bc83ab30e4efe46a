"""Training application: step accounting, stream state round-trip, fit -> resume via the CLI, logs."""

import json
from functools import partial
from pathlib import Path

import pytest

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::DeprecationWarning")
import torch
from lightning.pytorch import Callback, Trainer
from lightning.pytorch.callbacks import ModelCheckpoint

from gbx_lightning.callbacks import AtomicCheckpointIO, TrainingLog
from gbx_lightning.algos import A2CModule, PPOModule
from gbx_lightning.cli import main
from gbx_lightning.data import RolloutStream
from gbx_lightning.envs import ForagingEnv, make_env
from gbx_lightning.models import MLPPolicy, logprob_entropy, make_policy
from gbx_lightning.rl import a2c_td0

ENV_KWARGS = {"obs_mode": "ground_truth", "max_steps": 12, "grid_size": 8, "view_size": 5,
              "food_range": [2, 3], "poison_range": [1, 2], "start_energy": 3.0, "step_cost": 0.5}

TINY_A2C = f"""
seed_everything: 3
trainer:
  max_steps: 4
  accelerator: cpu
  devices: 1
  val_check_interval: 4
  check_val_every_n_epoch: null
model:
  class_path: gbx_lightning.algos.A2CModule
  init_args:
    env:
      class_path: gbx_lightning.envs.ForagingEnv
      init_args: {json.dumps(ENV_KWARGS)}
    num_envs: 4
    policy:
      class_path: gbx_lightning.models.MLPPolicy
      init_args: {{hidden: [16]}}
    update_every: 3
    lr: 0.01
    eval_episodes: 3
checkpoint_every: 2
log_every: 1
progress_refresh: 0
"""


def _tiny_trainer(max_steps, **kw):
    return Trainer(max_steps=max_steps, accelerator="cpu", devices=1, logger=False, enable_checkpointing=False,
                   enable_progress_bar=False, enable_model_summary=False, num_sanity_val_steps=0,
                   limit_val_batches=0, **kw)


def test_a2c_opt_steps_are_env_steps_per_env_over_update_every():
    module = A2CModule(env=partial(ForagingEnv, **ENV_KWARGS), num_envs=4, policy=partial(MLPPolicy, hidden=[16]),
                       update_every=3, seed=0)
    trainer = _tiny_trainer(5)
    trainer.fit(module)
    assert module.opt_steps == 5 == trainer.global_step
    assert module.env_steps == 5 * 3 * 4  # env_steps counts all N envs
    assert module.opt_steps == (module.env_steps // 4) // 3


def test_ppo_steps_per_rollout():
    module = PPOModule(env=partial(ForagingEnv, **ENV_KWARGS), num_envs=4, policy=partial(MLPPolicy, hidden=[16]),
                       rollout_steps=6, epochs=2, minibatches=3, seed=0)
    trainer = _tiny_trainer(12)  # 2 rollouts x (2 epochs x 3 minibatches)
    trainer.fit(module)
    assert module.opt_steps == 12 == trainer.global_step
    assert module.env_steps == 2 * 6 * 4
    assert module.stream.iterations == 2


def _take(it, k):
    return [next(it) for _ in range(k)]


@pytest.mark.parametrize("rollout_steps", [1, 2])
def test_stream_state_dict_round_trip_continues_identically(rollout_steps):
    def fresh():
        torch.manual_seed(0)
        env = make_env("foraging", num_envs=3, **ENV_KWARGS)
        return RolloutStream(env, make_policy("mlp", env.obs_shape, env.num_actions, hidden=[8]), seed=7,
                             rollout_steps=rollout_steps)

    a = fresh()
    it = iter(a)
    _take(it, 7)
    state = a.state_dict()
    expected = _take(it, 6)  # crosses episode ends (max_steps 12, start_energy 3)
    b = fresh()
    b.load_state_dict(state)
    assert b.env_steps == 7 * 3 * rollout_steps
    got = _take(iter(b), 6)
    assert b.env_steps == a.env_steps == 13 * 3 * rollout_steps
    assert expected[0]["obs"].shape[:2] == (rollout_steps, 3)  # [T, N, ...]
    assert any(bool((e["terminated"] | e["truncated"]).any()) for e in expected)
    for e, g in zip(expected, got):
        for k in e:
            torch.testing.assert_close(g[k], e[k], msg=k)


def _stream(num_envs, seed, rollout_steps, policy_state=None):
    env = make_env("foraging", num_envs=num_envs, **ENV_KWARGS)
    policy = make_policy("mlp", env.obs_shape, env.num_actions, hidden=[16])
    if policy_state is not None:
        policy.load_state_dict(policy_state)
    return RolloutStream(env, policy, seed=seed, rollout_steps=rollout_steps)


def test_a_rollout_is_its_steps_stacked():
    torch.manual_seed(0)
    window = _stream(4, 5, rollout_steps=3)
    per_step = _stream(4, 5, rollout_steps=1, policy_state=window.policy.state_dict())
    w_it, s_it = iter(window), iter(per_step)
    for _ in range(4):  # 12 env steps: crosses episode ends (max_steps 12, start_energy 3)
        batch = next(w_it)
        steps = _take(s_it, 3)
        for k in batch:
            torch.testing.assert_close(batch[k], torch.cat([s[k] for s in steps]), msg=k)
    assert window.env_steps == per_step.env_steps == 12 * 4


def test_rollout_logprobs_and_values_are_the_acting_policys():
    torch.manual_seed(0)
    stream = _stream(4, 5, rollout_steps=3)
    batch = next(iter(stream))
    logprobs, _, values = stream.policy.evaluate(batch["obs"].flatten(0, 1), batch["actions"].flatten())
    torch.testing.assert_close(batch["logprobs"].flatten(), logprobs)
    torch.testing.assert_close(batch["values"].flatten(), values)


class _GradsBeforeStep(Callback):
    """Keeps the policy's initial weights and the gradient handed to the first optimizer step."""

    def on_train_start(self, trainer, pl_module):
        self.initial = {k: v.clone() for k, v in pl_module.policy.state_dict().items()}

    def on_before_optimizer_step(self, trainer, pl_module, optimizer):
        if not hasattr(self, "grads"):
            self.grads = {n: p.grad.clone() for n, p in pl_module.policy.named_parameters()}


def test_a2c_update_gradient_equals_accumulated_per_step_gradients():
    """One A2C update from an update_every-step window == accumulating update_every per-step TD(0) gradients
    (1/update_every each) on the same transitions with the same weights: what the module's docstring claims."""
    k, n, seed = 3, 4, 11
    torch.manual_seed(0)
    module = A2CModule(env=partial(ForagingEnv, **ENV_KWARGS), num_envs=n, policy=partial(MLPPolicy, hidden=[16]),
                       update_every=k, max_grad_norm=None, entropy_coef=0.01,
                       seed=seed)
    spy = _GradsBeforeStep()
    _tiny_trainer(1, callbacks=[spy]).fit(module)
    assert module.env_steps == k * n

    stream = _stream(n, seed, rollout_steps=1, policy_state=spy.initial)
    policy = stream.policy
    policy.zero_grad()
    for step in _take(iter(stream), k):  # the same k transitions of all n envs, acted with the same weights
        step = {key: v[0] for key, v in step.items()}  # T = 1
        with torch.no_grad():
            _, next_values = policy(step["final_obs"])
        logits, values = policy(step["obs"])
        logprobs, entropy = logprob_entropy(logits, step["actions"])
        out = a2c_td0(logprobs, entropy, values, step["rewards"], next_values, step["terminated"],
                      gamma=0.99, value_coef=0.5, entropy_coef=0.01)
        (out["loss"] / k).backward()
    for name, p in policy.named_parameters():
        assert p.grad.abs().sum() > 0, name
        torch.testing.assert_close(spy.grads[name], p.grad, msg=name)


def _records(path):
    meta, steps, evals = [], [], []
    for line in Path(path).read_text().splitlines():
        rec = json.loads(line)
        (meta if "meta" in rec else evals if "eval" in rec else steps).append(rec)
    return meta, steps, evals

def _assert_straight_run_matches(cfg, runs, max_steps, steps, ckpt):
    """A run of max_steps without interruption logs the same losses (`steps`, the resumed
    run's records) and ends with the same weights (`ckpt`) as the interrupted, resumed run."""
    assert _fit(cfg, runs, "--run_name", "straight", "--trainer.max_steps", str(max_steps)) == 0
    _, straight, _ = _records(runs / "straight" / "version_0" / "train.jsonl")
    assert [r["loss"] for r in straight] == pytest.approx([r["loss"] for r in steps], rel=1e-5)
    w1 = torch.load(runs / "straight" / "version_0" / "checkpoints" / "last.ckpt", weights_only=False)["state_dict"]
    for k, v in ckpt["state_dict"].items():
        torch.testing.assert_close(w1[k], v, msg=k)



def _fit(cfg, runs, *extra):
    return main(["fit", "--config", str(cfg), "--runs_dir", str(runs), *extra])


def test_fit_then_resume_continues_counters_logs_and_matches_uninterrupted_run(tmp_path):
    cfg = tmp_path / "tiny.yaml"
    cfg.write_text(TINY_A2C)
    runs = tmp_path / "runs"
    assert _fit(cfg, runs) == 0
    run_dir = runs / "tiny" / "version_0"
    ckpt = torch.load(run_dir / "checkpoints" / "last.ckpt", weights_only=False)
    assert ckpt["global_step"] == 4 and ckpt["gbx"] == {"env_steps": 4 * 3 * 4, "opt_steps": 4, "world_size": 1}
    stream_state = ckpt["loops"]["fit_loop"]["state_dict"]["combined_loader"][0]
    assert stream_state["env_steps"] == 48 and "generator" in stream_state and "env" in stream_state

    assert _fit(cfg, runs, "--ckpt_path", "last", "--trainer.max_steps", "8") == 0
    ckpt = torch.load(run_dir / "checkpoints" / "last.ckpt", weights_only=False)
    assert ckpt["global_step"] == 8 and ckpt["gbx"] == {"env_steps": 96, "opt_steps": 8, "world_size": 1}

    meta, steps, evals = _records(run_dir / "train.jsonl")
    assert [m["meta"]["segment"] for m in meta] == ["start", "resume"]
    assert meta[0]["meta"]["run_id"] == meta[1]["meta"]["run_id"]
    assert meta[1]["meta"]["env_steps"] == 48 and meta[1]["meta"]["opt_steps"] == 4
    assert [r["opt_steps"] for r in steps] == list(range(1, 9))
    assert [r["env_steps"] for r in steps] == [12 * k for k in range(1, 9)]
    wall = [r["wall_time_s"] for r in steps]
    assert wall == sorted(wall)
    for key in ("sps", "reward_mean", "done_rate", "trunc_rate", "episode_return_mean", "success_rate", "loss",
                "loss_policy", "loss_value", "entropy", "value_mean", "grad_norm", "lr", "time_env_s",
                "time_act_s", "time_update_s", "episode_poison_eaten_mean"):
        assert key in steps[-1], key
    # eval ran at batch 4 and 8 (= opt steps 4 and 8): 3 episodes each
    assert [(e["eval"]["opt_steps"], e["eval"]["eval/episodes"]) for e in evals] == [(4, 3.0), (8, 3.0)]
    # TensorBoard continues in the same version directory (two event files)
    assert len(list(run_dir.glob("events.out.tfevents.*"))) == 2
    assert [p.name for p in (runs / "tiny").iterdir()] == ["version_0"]

    # the resumed run is the uninterrupted run: same losses, same final weights
    _assert_straight_run_matches(cfg, runs, 8, steps, ckpt)


def test_a_fresh_fit_starts_the_next_version_and_last_resumes_the_newest(tmp_path, capsys):
    """Runs of a sweep never collide: each fresh fit is version_N+1; --ckpt_path last (or validate without
    --ckpt_path) takes the newest version holding a last.ckpt; --version picks another."""
    cfg = tmp_path / "tiny.yaml"
    cfg.write_text(TINY_A2C)
    runs = tmp_path / "runs"
    assert _fit(cfg, runs, "--trainer.max_steps", "2") == 0
    assert _fit(cfg, runs, "--trainer.max_steps", "2", "--model.init_args.lr", "0.02") == 0
    assert sorted(p.name for p in (runs / "tiny").iterdir()) == ["version_0", "version_1"]
    (runs / "tiny" / "version_2").mkdir()  # a run that died before its first checkpoint: nothing to resume
    capsys.readouterr()
    assert _fit(cfg, runs, "--ckpt_path", "last", "--trainer.max_steps", "4") == 0
    meta, _, _ = _records(runs / "tiny" / "version_1" / "train.jsonl")
    assert [m["meta"]["segment"] for m in meta] == ["start", "resume"]
    assert meta[1]["meta"]["resumed_from"] == str(runs / "tiny" / "version_1" / "checkpoints" / "last.ckpt")
    assert _fit(cfg, runs, "--ckpt_path", "last", "--version", "0", "--trainer.max_steps", "4") == 0
    assert torch.load(runs / "tiny" / "version_0" / "checkpoints" / "last.ckpt", weights_only=False)["global_step"] == 4
    # --version of a run that exists, without --ckpt_path: refused, not overwritten
    assert _fit(cfg, runs, "--version", "0") == 2
    assert capsys.readouterr().err.strip().splitlines()[-1].startswith(
        f"error: {runs / 'tiny' / 'version_0'} already holds a run; resume it with --ckpt_path last")


def test_validate_reports_mean_return_and_success_rate(tmp_path, capsys):
    cfg = tmp_path / "tiny.yaml"
    cfg.write_text(TINY_A2C)
    runs = tmp_path / "runs"
    assert _fit(cfg, runs, "--trainer.max_steps", "2") == 0
    capsys.readouterr()
    assert main(["validate", "--config", str(cfg), "--runs_dir", str(runs), "--ckpt_path", "last"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("validate: episodes 3  return_mean ") and "success_rate" in out
    _, _, evals = _records(runs / "tiny" / "version_0" / "train.jsonl")
    assert evals[-1]["eval"]["stage"] == "validate" and evals[-1]["eval"]["eval/episodes"] == 3.0
    assert evals[-1]["eval"]["opt_steps"] == 2


class _Boom(Callback):
    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        if batch_idx == 2:
            raise RuntimeError("env exploded")


def test_a_dying_run_writes_an_error_record_and_a_checkpoint(tmp_path):
    module = A2CModule(env=partial(ForagingEnv, **ENV_KWARGS), num_envs=2, policy=partial(MLPPolicy, hidden=[8]),
                       update_every=2, seed=0)
    log = TrainingLog(tmp_path / "train.jsonl", config={}, log_every=1)
    ckpt = ModelCheckpoint(dirpath=tmp_path / "ckpt", save_last=True, every_n_train_steps=100, save_on_exception=True)
    trainer = Trainer(max_steps=10, accelerator="cpu", logger=False, callbacks=[log, ckpt, _Boom()],
                      enable_progress_bar=False, enable_model_summary=False, limit_val_batches=0,
                      plugins=[AtomicCheckpointIO()])
    with pytest.raises(RuntimeError, match="env exploded"):
        trainer.fit(module)
    lines = [json.loads(x) for x in (tmp_path / "train.jsonl").read_text().splitlines()]
    assert "meta" in lines[0]
    assert [r["opt_steps"] for r in lines[1:-1]] == [1, 2, 3]
    assert lines[-1] == {"error": {"type": "RuntimeError", "message": "env exploded", "env_steps": 12,
                                   "opt_steps": 3, "wall_time_s": lines[-1]["error"]["wall_time_s"]}}
    saved = torch.load(tmp_path / "ckpt" / "last.ckpt", weights_only=False)
    assert saved["gbx"] == {"env_steps": 12, "opt_steps": 3, "world_size": 1}


class _Unpicklable:
    def __reduce__(self):
        raise TypeError("cannot pickle this")


def test_atomic_checkpoint_io_never_leaves_a_torn_file(tmp_path):
    io = AtomicCheckpointIO()
    path = tmp_path / "last.ckpt"
    io.save_checkpoint({"step": 1}, path)
    assert torch.load(path, weights_only=False) == {"step": 1}
    with pytest.raises(TypeError, match="cannot pickle"):
        io.save_checkpoint({"step": 2, "bad": _Unpicklable()}, path)
    assert torch.load(path, weights_only=False) == {"step": 1}  # the previous complete file survives
    assert sorted(p.name for p in tmp_path.iterdir()) == ["last.ckpt"]  # no temporary left behind


TINY_PPO = TINY_A2C.replace("gbx_lightning.algos.A2CModule", "gbx_lightning.algos.PPOModule").replace(
    "    update_every: 3\n", "    rollout_steps: 3\n    epochs: 2\n    minibatches: 2\n").replace(
    "checkpoint_every: 2", "checkpoint_every: 4").replace("val_check_interval: 4", "val_check_interval: 1")


def test_ppo_resume_matches_uninterrupted_run(tmp_path):
    """One batch = one rollout, updated epochs x minibatches times inside training_step; resume stays exact."""
    cfg = tmp_path / "tiny.yaml"
    cfg.write_text(TINY_PPO)
    runs = tmp_path / "runs"
    assert _fit(cfg, runs, "--trainer.max_steps", "8") == 0  # 2 rollouts x 4 opt steps
    assert _fit(cfg, runs, "--ckpt_path", "last", "--trainer.max_steps", "16") == 0
    ckpt = torch.load(runs / "tiny" / "version_0" / "checkpoints" / "last.ckpt", weights_only=False)
    assert ckpt["global_step"] == 16 and ckpt["gbx"] == {"env_steps": 4 * 3 * 4, "opt_steps": 16, "world_size": 1}
    _, steps, evals = _records(runs / "tiny" / "version_0" / "train.jsonl")
    assert [r["opt_steps"] for r in steps] == list(range(4, 17, 4))  # log_every 1: one record per batch
    assert [e["eval"]["opt_steps"] for e in evals] == [4, 8, 12, 16]  # val_check_interval counts rollouts
    _assert_straight_run_matches(cfg, runs, 16, steps, ckpt)


def test_ppo_refuses_a_max_steps_inside_a_rollout():
    """A run stopped inside a rollout's epochs x minibatches loop would lose the rest of that update on resume."""
    from gbx_lightning.algos import ConfigError

    module = PPOModule(env=partial(ForagingEnv, **ENV_KWARGS), num_envs=4, policy=partial(MLPPolicy, hidden=[16]),
                       rollout_steps=3, epochs=2, minibatches=2, seed=0)
    with pytest.raises(ConfigError, match=r"^trainer.max_steps must be a multiple of epochs \* minibatches = 4 "
                                          r"\(PPO updates whole rollouts\), got 6; use 8 or 4$"):
        _tiny_trainer(6).fit(module)


def test_linear_anneal_known_values_and_extension():
    from gbx_lightning.algos import LinearAnneal

    anneal = LinearAnneal(8)
    assert [anneal(k) for k in (0, 4, 7, 8, 9)] == [1.0, 0.5, 0.125, 0.0, 0.0]
    anneal.extend_to(8, 24)  # a finished run resumed with max_steps 24: from step 7's 0.125 down to 0 at 24
    assert [anneal(k) for k in (7, 8, 24)] == pytest.approx([0.125, 0.125 * 16 / 17, 0.0])
    state = torch.optim.lr_scheduler.LambdaLR(torch.optim.SGD([torch.zeros(1)], lr=1.0), anneal).state_dict()
    assert state["lr_lambdas"] == [{"start": 7, "start_factor": 0.125, "end": 24, "hold": 0.0}]  # saved in checkpoints


def test_linear_anneal_held_then_falling_and_extended():
    from gbx_lightning.algos import LinearAnneal

    anneal = LinearAnneal(10, hold=0.6)  # lr for steps 0..6, then (10 - k) / 4 of it
    assert [anneal(k) for k in range(11)] == [1.0] * 7 + [0.75, 0.5, 0.25, 0.0]
    anneal.extend_to(4, 20)  # resumed inside the hold with max_steps 20: held to step 12 (0.6 of 20), then the line
    assert [anneal(k) for k in (3, 12, 16, 19, 20)] == pytest.approx([1.0, 1.0, 0.5, 0.125, 0.0])
    anneal.extend_to(16, 36)  # resumed past the hold: from step 15's 0.625 down to 0 at 36, no second hold
    assert [anneal(k) for k in (15, 16, 36)] == pytest.approx([0.625, 0.625 * 20 / 21, 0.0])
