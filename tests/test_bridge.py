"""Hybrid mode (envs/bridge.py): envs on the CPU, the learner elsewhere. On a CPU-only machine both sides
are the CPU and the bridge's copies still run, so a run through it must equal the run without it, bit for bit."""
import json
from pathlib import Path

import pytest
import torch

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::DeprecationWarning")

from gbx_lightning.cli import main
from gbx_lightning.envs import GameBoyEnv
from gbx_lightning.envs.bridge import DeviceBridge

TINY_PPO = """
seed_everything: 5
trainer:
  max_steps: 8
  accelerator: cpu
  devices: 1
  val_check_interval: 1
  check_val_every_n_epoch: null
model:
  class_path: gbx_lightning.algos.PPOModule
  init_args:
    env:
      class_path: gbx_lightning.envs.GameBoyEnv
      init_args: {task: orchard/level1, stack_k: 2, action_codec: dpad_noop, max_steps: 6, cpu_threads: 2}
    num_envs: 4
    policy:
      class_path: gbx_lightning.models.PixelCNNPolicy
    rollout_steps: 4
    epochs: 2
    minibatches: 2
    eval_episodes: 2
checkpoint_every: 4
log_every: 1
progress_refresh: 0
"""


def _fit(cfg, runs, *extra):
    return main(["fit", "--config", str(cfg), "--runs_dir", str(runs), *extra])


def _run(tmp_path, name, *extra):
    cfg = tmp_path / "tiny.yaml"
    cfg.write_text(TINY_PPO)
    assert _fit(cfg, tmp_path / "runs", "--run_name", name, *extra) == 0
    run = tmp_path / "runs" / name / "version_0"
    records = [json.loads(line) for line in (run / "train.jsonl").read_text().splitlines()]
    steps = [(r["opt_steps"], r["loss"], r["reward_mean"], r["episode_return_mean"]) for r in records
             if "loss" in r]
    evals = [r["eval"]["eval/return_mean"] for r in records if "eval" in r]
    weights = torch.load(run / "checkpoints" / "last.ckpt", weights_only=False)["state_dict"]
    return steps, evals, weights


def test_hybrid_fit_equals_the_all_cpu_fit_bit_for_bit_and_resumes_exactly(tmp_path):
    plain = _run(tmp_path, "plain")
    # hybrid, interrupted after one checkpoint and resumed: the checkpoint holds the bridged env's state
    cfg = tmp_path / "tiny.yaml"
    assert _fit(cfg, tmp_path / "runs", "--run_name", "hybrid", "--model.init_args.env_device", "cpu",
                "--trainer.max_steps", "4") == 0
    assert _fit(cfg, tmp_path / "runs", "--run_name", "hybrid", "--model.init_args.env_device", "cpu",
                "--ckpt_path", "last") == 0
    run = tmp_path / "runs" / "hybrid" / "version_0"
    records = [json.loads(line) for line in (run / "train.jsonl").read_text().splitlines()]
    steps = [(r["opt_steps"], r["loss"], r["reward_mean"], r["episode_return_mean"]) for r in records
             if "loss" in r]
    evals = [r["eval"]["eval/return_mean"] for r in records if "eval" in r]
    weights = torch.load(run / "checkpoints" / "last.ckpt", weights_only=False)["state_dict"]
    assert len(plain[0]) == 2 and steps == plain[0]          # exact floats, not approx
    assert len(plain[1]) == 2 and evals == plain[1]
    assert plain[2].keys() == weights.keys()
    for k, v in plain[2].items():
        assert torch.equal(weights[k], v), k


def test_the_bridge_returns_fresh_tensors_on_its_device_and_checks_actions():
    env = DeviceBridge(GameBoyEnv(3, task="orchard/level1", action_codec="dpad_noop", max_steps=4), "cpu")
    assert env.device == torch.device("cpu") and env.num_envs == 3 and env.rom_sha256   # forwarded attribute
    obs = env.reset(seed=0)
    kept, truncs = [obs], []                      # held, as a rollout holds them: new ones must not share their memory
    for t in range(6):
        obs, reward, term, trunc, info = env.step(torch.full((3,), t % 5, dtype=torch.int32))
        assert {obs.data_ptr(), info["final_obs"].data_ptr()}.isdisjoint(k.data_ptr() for k in kept)
        kept += [obs, info["final_obs"]]
        truncs.append(trunc)
        assert reward.dtype == torch.float32 and term.dtype == torch.bool and trunc.shape == (3,)
    assert truncs[3].all() and not truncs[2].any()      # max_steps 4: every episode was cut at its 4th step
    with pytest.raises(TypeError, match="dtype torch.int32"):
        env.step(torch.zeros(3, dtype=torch.int64))


def test_env_device_is_checked_and_auto_emulates_on_the_gpu_only_with_enough_envs_per_core():
    from gbx_lightning.algos import ConfigError
    from gbx_lightning.algos.build import GPU_ENVS_PER_CORE, pick_env_device

    cpu, gpu = torch.device("cpu"), torch.device("cuda", 0)
    with pytest.raises(ConfigError, match="env_device.*Trainer runs on the CPU"):
        pick_env_device("gpu", cpu, 4096, 2)
    assert pick_env_device("auto", cpu, 10**6, 2) == cpu and pick_env_device("cpu", gpu, 10**6, 2) == cpu
    assert pick_env_device("gpu", gpu, 1, 16) == gpu
    edge = GPU_ENVS_PER_CORE * 16
    assert pick_env_device("auto", gpu, edge - 1, 16) == cpu and pick_env_device("auto", gpu, edge, 16) == gpu


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="torch has no CUDA device")
def test_a_bridge_to_the_gpu_returns_what_the_cpu_env_returns():
    kw = dict(task="orchard/level1", stack_k=2, action_codec="dpad_noop", max_steps=7)
    cpu, bridged = GameBoyEnv(8, **kw), DeviceBridge(GameBoyEnv(8, **kw), "cuda")
    assert torch.equal(cpu.reset(seed=3), bridged.reset(seed=3).cpu())
    gen = torch.Generator().manual_seed(0)
    for _ in range(20):
        a = torch.randint(0, cpu.num_actions, (8,), generator=gen, dtype=torch.int32)
        want, got = cpu.step(a), bridged.step(a.cuda())
        assert all(t.is_cuda for t in got[:4]) and got[4]["final_obs"].is_cuda
        for w, g in zip(want[:4], got[:4]):
            assert torch.equal(w, g.cpu())
        assert torch.equal(want[4]["final_obs"], got[4]["final_obs"].cpu())
