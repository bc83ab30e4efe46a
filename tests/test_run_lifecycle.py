"""A run as a user lives it, through the CLI on a tiny ForagingEnv: resume with a raised max_steps, validate,
the saved config reused, a CSV logger added, checkpoints kept, TensorBoard after a crash, the final evaluation."""

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from gbx_lightning.cli import main

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::DeprecationWarning")

ROOT = Path(__file__).resolve().parents[1]
ENV_KWARGS = {"obs_mode": "ground_truth", "max_steps": 12, "grid_size": 8, "view_size": 5,
              "food_range": [2, 3], "poison_range": [1, 2], "start_energy": 3.0, "step_cost": 0.5}

TINY_PPO = f"""
seed_everything: 3
trainer:
  max_steps: 8
  accelerator: cpu
  devices: 1
  val_check_interval: 2
  check_val_every_n_epoch: null
model:
  class_path: gbx_lightning.algos.PPOModule
  init_args:
    env:
      class_path: gbx_lightning.envs.ForagingEnv
      init_args: {json.dumps(ENV_KWARGS)}
    num_envs: 4
    policy:
      class_path: gbx_lightning.models.MLPPolicy
      init_args: {{hidden: [16]}}
    rollout_steps: 3
    epochs: 2
    minibatches: 2
    anneal_lr: true
    lr: 0.01
    eval_episodes: 3
checkpoint_every: 4
log_every: 3
progress_refresh: 0
"""


def _records(path):
    meta, steps, evals = [], [], []
    for line in Path(path).read_text().splitlines():
        rec = json.loads(line)
        (meta if "meta" in rec else evals if "eval" in rec else steps).append(rec)
    return meta, steps, evals


@pytest.fixture
def cfg(tmp_path):
    path = tmp_path / "tiny.yaml"
    path.write_text(TINY_PPO)
    return path


def _run(cfg, runs, *extra, sub="fit"):
    return main([sub, "--config", str(cfg), "--runs_dir", str(runs), *extra])


def test_resume_with_raised_max_steps_keeps_logging_and_the_lr_continues(cfg, tmp_path):
    """Records are written whenever opt_steps crosses a multiple of log_every (3 here, 4 steps per rollout), before
    and after a resume; the annealed lr continues from its last rate down to 0 at the new max_steps (no jump)."""
    runs = tmp_path / "runs"
    assert _run(cfg, runs) == 0
    assert _run(cfg, runs, "--ckpt_path", "last", "--trainer.max_steps", "24") == 0
    _, steps, _ = _records(runs / "tiny" / "version_0" / "train.jsonl")
    assert [r["opt_steps"] for r in steps] == [4, 8, 12, 16, 20, 24]  # each crossed 3, 6, 9, ... once
    lrs = [r["lr"] for r in steps]  # the rate of the next optimizer step
    # first segment: lr_k = 0.01 * (1 - k / 8); the last step taken (k = 7) used 0.01 / 8
    assert lrs[:2] == pytest.approx([0.01 * (1 - 4 / 8), 0.0])
    # resumed: from step 7's rate, 0.00125, linearly to 0 at step 24
    assert lrs[2:] == pytest.approx([0.00125 * (24 - k) / (24 - 7) for k in (12, 16, 20, 24)])
    assert all(a >= b for a, b in zip(lrs[2:], lrs[3:]))


def test_configured_values_win_over_the_checkpoints_on_resume(cfg, tmp_path):
    runs = tmp_path / "runs"
    assert _run(cfg, runs, "--model.init_args.anneal_lr", "false") == 0
    assert _run(cfg, runs, "--ckpt_path", "last", "--trainer.max_steps", "12", "--model.init_args.anneal_lr", "false",
                "--model.init_args.entropy_coef", "0.5", "--model.init_args.lr", "0.002") == 0
    ckpt = torch.load(runs / "tiny" / "version_0" / "checkpoints" / "last.ckpt", weights_only=False)
    assert ckpt["hyper_parameters"]["entropy_coef"] == 0.5 and ckpt["hyper_parameters"]["lr"] == 0.002
    meta, steps, _ = _records(runs / "tiny" / "version_0" / "train.jsonl")
    assert meta[1]["meta"]["config"]["model"]["init_args"]["entropy_coef"] == 0.5
    assert [r["lr"] for r in steps] == [0.01, 0.01, 0.002]  # the optimizer state's lr gives way to the config's


def test_validate_without_ckpt_path_evaluates_the_last_checkpoint_and_says_so(cfg, tmp_path, capsys):
    runs = tmp_path / "runs"
    assert _run(cfg, runs, sub="validate") == 2  # nothing trained yet: refused, nothing written
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err == (f"error: validate: nothing to evaluate, {runs / 'tiny' / 'version_*' / 'checkpoints' / 'last.ckpt'}"
                   f" does not exist (train the run first, or pass --ckpt_path FILE)")
    assert not runs.exists()
    assert _run(cfg, runs) == 0
    capsys.readouterr()
    assert _run(cfg, runs, sub="validate") == 0
    captured = capsys.readouterr()
    last = runs / "tiny" / "version_0" / "checkpoints" / "last.ckpt"
    assert f"validate: no --ckpt_path given: evaluating {last}" in captured.err
    assert "(env_steps 24, opt_steps 8)" in captured.out
    _, _, evals = _records(runs / "tiny" / "version_0" / "train.jsonl")
    assert evals[-1]["eval"]["stage"] == "validate" and evals[-1]["eval"]["env_steps"] == 24


def test_the_saved_config_is_reusable(cfg, tmp_path):
    runs = tmp_path / "runs"
    assert _run(cfg, runs, "--model.init_args.lr", "0.003") == 0
    saved = runs / "tiny" / "version_0" / "config.yaml"
    text = saved.read_text()
    assert "run_name: tiny" in text and "ckpt_path: null" in text and "lr: 0.003" in text
    # the same run, resumed from its own saved config; a fresh fit of it is the run's next version
    assert main(["fit", "--config", str(saved), "--ckpt_path", "last", "--trainer.max_steps", "12"]) == 0
    assert torch.load(runs / "tiny" / "version_0" / "checkpoints" / "last.ckpt", weights_only=False)["global_step"] == 12
    assert main(["fit", "--config", str(saved)]) == 0
    assert sorted(p.name for p in (runs / "tiny").iterdir()) == ["version_0", "version_1"]
    meta, _, _ = _records(runs / "tiny" / "version_1" / "train.jsonl")
    assert meta[0]["meta"]["config"]["model"]["init_args"]["lr"] == 0.003


def test_a_csv_logger_gets_the_scalars_tensorboard_gets(cfg, tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    runs = tmp_path / "runs"
    assert _run(cfg, runs, "--trainer.logger", "CSVLogger", "--trainer.logger.save_dir", str(tmp_path / "csv")) == 0
    run_dir = runs / "tiny" / "version_0"
    acc = EventAccumulator(str(run_dir))
    acc.Reload()
    rows = list(csv.DictReader(open(tmp_path / "csv" / "lightning_logs" / "version_0" / "metrics.csv")))
    tags = set(acc.Tags()["scalars"])
    assert {"charts/episodic_return", "charts/SPS", "losses/value_loss", "losses/explained_variance",
            "losses/approx_kl", "eval/success_rate"} <= tags
    for tag in tags:
        from_csv = [(int(r["step"]), float(r[tag])) for r in rows if r.get(tag)]
        assert [(e.step, pytest.approx(e.value, rel=1e-6)) for e in acc.Scalars(tag)] == from_csv, tag


def test_step_checkpoints_are_kept_as_asked(cfg, tmp_path):
    runs = tmp_path / "runs"
    assert _run(cfg, runs, "--trainer.max_steps", "16") == 0  # every 4 steps: all kept by default
    names = sorted(p.name for p in (runs / "tiny" / "version_0" / "checkpoints").glob("*.ckpt"))
    assert names == ["last.ckpt"] + [f"step{s:08d}.ckpt" for s in (4, 8, 12, 16)]
    assert _run(cfg, runs, "--trainer.max_steps", "16", "--checkpoint_keep", "2", "--checkpoint_every", "6") == 0
    names = sorted(p.name for p in (runs / "tiny" / "version_1" / "checkpoints").glob("*.ckpt"))
    assert names == ["last.ckpt", "step00000008.ckpt", "step00000016.ckpt"]  # every 6 -> 8 (whole rollouts), newest 2


def test_tensorboard_after_a_crash_and_resume_shows_each_step_once(cfg, tmp_path):
    """Resuming from an earlier checkpoint (what a crash after it amounts to): TensorBoard hides what the
    first segment logged after that checkpoint (purge_step)."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    runs = tmp_path / "runs"
    assert _run(cfg, runs, "--log_every", "1") == 0  # logged up to env step 24 (8 opt steps)
    step4 = runs / "tiny" / "version_0" / "checkpoints" / "step00000004.ckpt"
    assert _run(cfg, runs, "--log_every", "1", "--ckpt_path", str(step4)) == 0  # back to env step 12
    acc = EventAccumulator(str(runs / "tiny" / "version_0"))
    acc.Reload()
    for tag in ("losses/loss", "charts/SPS", "eval/success_rate"):
        steps = [e.step for e in acc.Scalars(tag)]
        assert steps == sorted(set(steps)), (tag, steps)
    assert [e.step for e in acc.Scalars("losses/loss")] == [12, 24]


def test_fit_ends_with_an_evaluation(cfg, tmp_path, capsys):
    runs = tmp_path / "runs"
    assert _run(cfg, runs, "--trainer.val_check_interval", "3", "--trainer.max_steps", "16") == 0  # evals at rollout 3
    _, _, evals = _records(runs / "tiny" / "version_0" / "train.jsonl")
    assert [e["eval"]["opt_steps"] for e in evals] == [12, 16]  # the scheduled one, then the final one
    assert "validate: episodes 3" in capsys.readouterr().out
    assert (runs / "tiny" / "version_0" / "clips").exists() is False  # ForagingEnv: no pixels, no clips


def test_hyper_parameters_reach_tensorboards_hparams_tab(cfg, tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from tensorboard.plugins.hparams import plugin_data_pb2

    runs = tmp_path / "runs"
    assert _run(cfg, runs) == 0
    acc = EventAccumulator(str(runs / "tiny" / "version_0"))
    acc.Reload()
    content = acc.PluginTagToContent("hparams")
    data = plugin_data_pb2.HParamsPluginData.FromString(content["_hparams_/session_start_info"])
    hparams = data.session_start_info.hparams
    assert hparams["lr"].number_value == 0.01 and hparams["rollout_steps"].number_value == 3
    assert hparams["env/class_path"].string_value == "gbx_lightning.envs.ForagingEnv"
    assert hparams["env/init_args/view_size"].number_value == 5 and hparams["max_steps"].number_value == 8
    experiment = plugin_data_pb2.HParamsPluginData.FromString(content["_hparams_/experiment"]).experiment
    assert "eval/success_rate" in [m.name.tag for m in experiment.metric_infos]


def test_an_env_option_the_env_rejects_is_one_line_and_leaves_nothing(cfg, tmp_path, capsys):
    runs = tmp_path / "runs"
    assert _run(cfg, runs, "--model.env.view_size", "4") == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        "config error: model.env rejected by ForagingEnv: view_size must be odd (the agent sits at the centre), got 4")
    assert not list((runs / "tiny").iterdir())


@pytest.mark.parametrize("args,expected", [
    (["predict"], "argument subcommand: invalid choice: 'predict' (choose from 'fit', 'validate', 'test', 'play')"),
    (["fit", "--trainer.max_step", "5"], "unrecognized arguments: --trainer.max_step 5"),  # no prefix matching
])
def test_what_the_parser_refuses(cfg, tmp_path, capsys, args, expected):
    assert main([*args[:1], "--config", str(cfg), "--runs_dir", str(tmp_path), *args[1:]]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == f"error: {expected}"


def test_a_cpu_run_prints_no_tips_and_no_cuda_warning(cfg, tmp_path):
    proc = subprocess.run([sys.executable, "-m", "gbx_lightning", "fit", "--config", str(cfg), "--runs_dir",
                           str(tmp_path / "runs"), "--trainer.max_steps", "4"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout + proc.stderr
    assert "Traceback" not in out and "litlogger" not in out and "Tip" not in out
    if not torch.cuda.is_available():
        assert "CUDA driver" not in out


def test_default_root_dir_is_where_runs_go_and_logger_false_keeps_only_the_jsonl(cfg, tmp_path):
    assert main(["fit", "--config", str(cfg), "--trainer.default_root_dir", str(tmp_path / "elsewhere"),
                 "--trainer.logger", "false", "--trainer.enable_progress_bar", "false"]) == 0
    run_dir = tmp_path / "elsewhere" / "tiny" / "version_0"
    assert (run_dir / "train.jsonl").is_file() and (run_dir / "checkpoints" / "last.ckpt").is_file()
    assert (run_dir / "config.yaml").is_file() and not list(run_dir.glob("events.out.tfevents.*"))
    assert main(["fit", "--config", str(cfg), "--trainer.default_root_dir", str(tmp_path / "a"), "--runs_dir",
                 str(tmp_path / "b")]) == 2
