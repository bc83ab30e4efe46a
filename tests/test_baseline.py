"""The random policy's baseline (gbx_lightning/baseline.py): measured once per run on the evaluation episodes (the
same numbers as a direct evaluation of a uniform policy on the eval env and seed), in the meta line, restored (not
replayed) on resume, off with --random_baseline false; a warning line for an evaluation below it, none otherwise."""

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from gbx_lightning.algos import base
from gbx_lightning.baseline import RandomBaseline, UniformPolicy
from gbx_lightning.cli import main
from gbx_lightning.data import EvalEpisodes
from gbx_lightning.envs import ForagingEnv

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::DeprecationWarning")

ENV_KWARGS = {"obs_mode": "ground_truth", "max_steps": 12, "grid_size": 8, "view_size": 5,
              "food_range": [2, 3], "poison_range": [1, 2], "start_energy": 3.0, "step_cost": 0.5}
EVAL_SEED, EPISODES = 77, 24

TINY = f"""
seed_everything: 3
trainer: {{max_steps: 4, accelerator: cpu, devices: 1, val_check_interval: 1, check_val_every_n_epoch: null}}
model:
  class_path: gbx_lightning.algos.A2CModule
  init_args:
    env: {{class_path: gbx_lightning.envs.ForagingEnv, init_args: {json.dumps(ENV_KWARGS)}}}
    num_envs: 4
    policy: {{class_path: gbx_lightning.models.MLPPolicy, init_args: {{hidden: [16]}}}}
    update_every: 3
    eval_episodes: {EPISODES}
    eval_seed: {EVAL_SEED}
checkpoint_every: 2
progress_refresh: 0
"""


def _metas(run_dir):
    return [json.loads(line)["meta"] for line in (run_dir / "train.jsonl").read_text().splitlines()
            if line.startswith('{"meta"')]


def test_measured_once_per_run_equal_to_a_direct_uniform_evaluation(tmp_path, monkeypatch):
    cfg = tmp_path / "tiny.yaml"
    cfg.write_text(TINY)
    calls = []
    real = base.RLModule.evaluate_policy
    monkeypatch.setattr(base.RLModule, "evaluate_policy", lambda self, *a, **k: calls.append(1) or real(self, *a, **k))
    assert main(["fit", "--config", str(cfg), "--runs_dir", str(tmp_path / "runs")]) == 0
    assert main(["fit", "--config", str(cfg), "--runs_dir", str(tmp_path / "runs"), "--ckpt_path", "last",
                 "--trainer.max_steps", "8"]) == 0
    assert len(calls) == 1                                     # the resume restored it from the checkpoint
    first, resumed = _metas(tmp_path / "runs" / "tiny" / "version_0")
    assert first["random_baseline"] == resumed["random_baseline"]

    env = ForagingEnv(EPISODES, **ENV_KWARGS)
    batch = next(iter(EvalEpisodes(env, UniformPolicy(env.num_actions), EVAL_SEED)))
    wins = batch["success"] & batch["finished"]
    got = first["random_baseline"]
    assert got["eval/random_episodes"] == EPISODES
    assert got["eval/random_success_rate"] == pytest.approx(wins.float().mean().item())
    assert got["eval/random_return_mean"] == pytest.approx(batch["episode_return"][batch["finished"]].mean().item())

    assert main(["fit", "--config", str(cfg), "--runs_dir", str(tmp_path / "runs"), "--random_baseline", "false"]) == 0
    assert _metas(tmp_path / "runs" / "tiny" / "version_1")[0]["random_baseline"] is None
    assert len(calls) == 1


def _trainer(success, fn="fit"):
    return SimpleNamespace(sanity_checking=False, state=SimpleNamespace(fn=fn), is_global_zero=True,
                           callback_metrics={"eval/success_rate": torch.tensor(success)})


def test_a_warning_line_only_below_random(capsys):
    cb = RandomBaseline()
    cb.load_state_dict({"metrics": {"eval/random_success_rate": 0.375}})
    module = SimpleNamespace(env_steps=81920)
    cb.on_validation_end(_trainer(0.0), module)
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["warning: evaluation success_rate 0.000 at env_steps 81920 is below a random policy's 0.375 on "
                   "the same episodes (docs/training.md: 'Below random')"]
    for success, fn in ((0.375, "fit"), (0.9, "fit"), (0.0, "validate")):
        cb.on_validation_end(_trainer(success, fn), module)
    assert capsys.readouterr().err == ""


def test_uniform_policy_is_uniform():
    logits, value = UniformPolicy(5)(torch.zeros(3, 2, 7, 7, dtype=torch.uint8))
    assert logits.shape == (3, 5) and torch.equal(logits, torch.zeros(3, 5)) and torch.equal(value, torch.zeros(3))
