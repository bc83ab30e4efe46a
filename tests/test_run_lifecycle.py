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


def test_a_constant_rate_run_resumed_with_a_held_anneal_takes_the_schedule_at_its_step(cfg, tmp_path):
    """8 steps at a constant rate, then resumed with anneal_lr (held for half of max_steps 16, falling after): the
    checkpoint holds no schedule, and the one the resume builds counts from the checkpoint's step 8, not from 0:
    lr_k = 0.01 up to k = 8, then 0.01 * (16 - k) / 8 (a fresh held run's rates at the same steps)."""
    runs = tmp_path / "runs"
    assert _run(cfg, runs, "--model.init_args.anneal_lr", "false") == 0
    assert _run(cfg, runs, "--ckpt_path", "last", "--trainer.max_steps", "16", "--model.init_args.anneal_from",
                "0.5") == 0
    _, steps, _ = _records(runs / "tiny" / "version_0" / "train.jsonl")
    assert [r["opt_steps"] for r in steps] == [4, 8, 12, 16]
    assert [r["lr"] for r in steps] == pytest.approx([0.01, 0.01, 0.01 * 4 / 8, 0.0])


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
    assert not (runs / "tiny").exists()


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


# ---------------------------------------------------------------- what a user sees: no noise, the numbers that matter
def test_a_resume_and_a_validate_print_no_warning_a_user_learns_to_ignore(cfg, tmp_path, capfd):
    """Lightning's "Checkpoint directory ... exists and is not empty" (every resume: the run's own directory) and
    "Please add the following callbacks" (validate of a checkpoint whose fit had callbacks with state) are not said."""
    runs = tmp_path / "runs"
    assert _run(cfg, runs, "--trainer.max_time", "00:01:00:00") == 0
    capfd.readouterr()
    assert _run(cfg, runs, "--ckpt_path", "last", "--trainer.max_steps", "12", "--trainer.max_time", "00:01:00:00") == 0
    assert _run(cfg, runs, sub="validate") == 0
    assert _run(cfg, runs, sub="test") == 0
    out = "".join(capfd.readouterr())
    assert "exists and is not empty" not in out and "Please add the following callbacks" not in out
    assert "validate: episodes 3" in out and "test: episodes 3" in out


def test_the_progress_bar_counts_the_whole_run_and_says_train(cfg, tmp_path, monkeypatch):
    """One bar for the run: after a resume it goes on from the batches done (not from 0), out of the run's total,
    and it is named "train" (Lightning's "Epoch 0/-2" names an epoch the run does not have)."""
    from lightning.pytorch.callbacks import RichProgressBar

    seen = []
    real = RichProgressBar._update

    def spy(self, bar_id, current, *args, **kwargs):
        if bar_id is not None and bar_id == self.train_progress_bar_id:
            task = self.progress.tasks[bar_id]
            seen.append((int(current), int(task.total), task.description.strip()))
        return real(self, bar_id, current, *args, **kwargs)

    monkeypatch.setattr(RichProgressBar, "_update", spy)
    runs = tmp_path / "runs"
    assert _run(cfg, runs, "--progress_refresh", "1") == 0   # 8 optimizer steps = 2 rollouts of 4
    assert seen == [(1, 2, "train"), (2, 2, "train")]
    seen.clear()
    assert _run(cfg, runs, "--progress_refresh", "1", "--ckpt_path", "last", "--trainer.max_steps", "16") == 0
    assert seen == [(3, 4, "train"), (4, 4, "train")]


def test_validate_and_test_evaluate_held_out_episodes_unless_asked_and_say_which(cfg, tmp_path, capsys):
    """--ckpt_path best was chosen on fit's evaluation episodes; scored again on those its number would be biased
    up. By default validate and test play other episodes (seed eval_seed + HELD_OUT) and print the seed;
    --eval_seed fit replays fit's (the registry's number exactly), --eval_seed N any."""
    from gbx_lightning.cli.app import HELD_OUT
    from gbx_lightning.registry import best_checkpoint

    runs = tmp_path / "runs"
    assert _run(cfg, runs) == 0
    run_dir = runs / "tiny" / "version_0"
    best = best_checkpoint(run_dir).entry
    capsys.readouterr()

    def evaluate(*extra):
        assert _run(cfg, runs, "--ckpt_path", "best", *extra, sub="validate") == 0
        err = capsys.readouterr().err
        line = next(ln for ln in err.splitlines() if ln.startswith("validate: evaluation episodes of seed"))
        return line, _records(run_dir / "train.jsonl")[2][-1]["eval"]

    line, held_out = evaluate()
    assert line == (f"validate: evaluation episodes of seed {1_000_003 + HELD_OUT} (held out: fit evaluated on seed "
                    f"1000003; --eval_seed fit replays those)")
    line, replayed = evaluate("--eval_seed", "fit")
    assert line == "validate: evaluation episodes of seed 1000003 (the episodes fit evaluated on)"
    assert replayed["eval/return_mean"] == best["metrics"]["return_mean"] and replayed["opt_steps"] == best["opt_steps"]
    assert held_out["eval/return_mean"] != replayed["eval/return_mean"]   # other episodes
    line, chosen = evaluate("--eval_seed", "7")
    assert line == "validate: evaluation episodes of seed 7 (--eval_seed)"
    assert _run(cfg, runs, "--ckpt_path", "best", "--eval_seed", "7", sub="test") == 0
    assert "test: evaluation episodes of seed 7" in capsys.readouterr().err
    assert _records(run_dir / "train.jsonl")[2][-1]["eval"]["test/return_mean"] == chosen["eval/return_mean"]


def test_max_time_stops_within_an_update_with_no_evaluation_after_and_resumes(cfg, tmp_path, capsys):
    """trainer.max_time stops the run between two updates, as a signal does: last.ckpt saved, a stop record, the
    resume command printed, exit 0, and no evaluation at the stop (Lightning's Timer runs one there, and a long
    one made runs overshoot the limit). The clock is the run's: resumed with the same limit, it stops at once."""
    runs = tmp_path / "runs"
    args = ["--trainer.max_steps", "-1", "--model.init_args.anneal_lr", "false", "--trainer.val_check_interval",
            "1000000", "--trainer.max_time", "00:00:00:02", "--checkpoint_every", "1000000"]
    assert _run(cfg, runs, *args) == 0
    err = capsys.readouterr().err
    run_dir = runs / "tiny" / "version_0"
    records = [json.loads(line) for line in (run_dir / "train.jsonl").read_text().splitlines()]
    stop = records[-1]["stop"]
    assert stop["signal"] == "max_time" and stop["opt_steps"] > 0 and not any("eval" in r for r in records)
    assert f"max_time: stopped after optimizer step {stop['opt_steps']}" in err and "larger --trainer.max_time" in err
    ckpt = torch.load(run_dir / "checkpoints" / "last.ckpt", map_location="cpu", weights_only=False)
    assert ckpt["global_step"] == stop["opt_steps"] and ckpt["callbacks"]["StopOnSignal"]["train_time_s"] >= 2
    assert "Timer" not in ckpt["callbacks"]   # Lightning's Timer is not in the run
    assert _run(cfg, runs, *args, "--ckpt_path", "last") == 0   # the run's 2 s are spent: no update more
    assert json.loads((run_dir / "train.jsonl").read_text().splitlines()[-1])["stop"]["opt_steps"] == stop["opt_steps"]


def test_play_acts_as_evaluation_does_unless_told_and_says_how(tmp_path, capsys):
    """play samples from the policy by default, as evaluation does (model.eval_greedy false), and says so;
    --greedy true acts by argmax and says that is not what evaluation does."""
    cfg = tmp_path / "gb.yaml"
    cfg.write_text(TINY_GB)
    runs = tmp_path / "runs"
    assert main(["fit", "--config", str(cfg), "--runs_dir", str(runs)]) == 0
    capsys.readouterr()
    for extra, said in (([], "play: acting by sampling from the policy, as evaluation does"),
                        (["--greedy", "true"], "play: acting greedily (argmax), not as evaluation does "
                                               "(model.eval_greedy: false)")):
        assert main(["play", "--config", str(cfg), "--runs_dir", str(runs), "--ckpt_path", "last", "--out",
                     str(tmp_path / "clip.gif"), "--max_steps", "6", *extra]) == 0
        assert said in capsys.readouterr().err.splitlines()


TINY_GB = """
seed_everything: 5
trainer: {max_steps: 2, accelerator: cpu, devices: 1, val_check_interval: 100, check_val_every_n_epoch: null}
model:
  class_path: gbx_lightning.algos.A2CModule
  init_args:
    env:
      class_path: gbx_lightning.envs.GameBoyEnv
      init_args: {task: {base: orchard/level1, start: {variants: 1}}, stack_k: 1, action_codec: dpad_noop,
                  max_steps: 6, cpu_threads: 1}
    num_envs: 2
    policy: {class_path: gbx_lightning.models.PixelCNNPolicy, init_args: {channels: [4, 8], hidden: 16}}
    update_every: 2
    eval_episodes: 2
progress_refresh: 0
image_every: 0
"""


def test_an_old_env_state_in_the_checkpoint_is_one_line_no_traceback(tmp_path, capsys):
    """A checkpoint whose env state an earlier layout saved (GameBoyEnv's version 1): the resume stops in one line
    saying what and what to do, with no traceback before it."""
    cfg = tmp_path / "gb.yaml"
    cfg.write_text(TINY_GB)
    runs = tmp_path / "runs"
    assert main(["fit", "--config", str(cfg), "--runs_dir", str(runs)]) == 0
    last = runs / "gb" / "version_0" / "checkpoints" / "last.ckpt"
    ckpt = torch.load(last, map_location="cpu", weights_only=False)
    ckpt["loops"]["fit_loop"]["state_dict"]["combined_loader"][0]["env"]["version"] = 1
    torch.save(ckpt, last)
    capsys.readouterr()
    assert main(["fit", "--config", str(cfg), "--runs_dir", str(runs), "--ckpt_path", "last",
                 "--trainer.max_steps", "4"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.strip().splitlines()[-1].startswith(
        "error: --ckpt_path: GameBoyEnv.load_state_dict: this env state was saved by the old GameBoyEnv layout "
        "(version 1, before tasks")


def test_init_from_starts_a_new_run_from_another_runs_policy(cfg, tmp_path, capsys):
    """--init_from: the policy starts as the other run's checkpoint left it (compared after one update at a learning
    rate too small to move it), while counters, optimizer and logs start fresh; a resume ignores it and says so."""
    runs = tmp_path / "runs"
    assert _run(cfg, runs) == 0
    source = runs / "tiny" / "version_0" / "checkpoints" / "last.ckpt"
    trained = {k: v for k, v in torch.load(source, weights_only=False)["state_dict"].items() if k.startswith("policy.")}
    assert _run(cfg, runs, "--run_name", "warm", "--init_from", str(source), "--trainer.max_steps", "4",
                "--model.init_args.lr", "1e-12", "--model.init_args.anneal_lr", "false") == 0
    assert _run(cfg, runs, "--run_name", "cold", "--trainer.max_steps", "4", "--model.init_args.lr", "1e-12",
                "--model.init_args.anneal_lr", "false") == 0
    warm = torch.load(runs / "warm" / "version_0" / "checkpoints" / "last.ckpt", weights_only=False)
    cold = torch.load(runs / "cold" / "version_0" / "checkpoints" / "last.ckpt", weights_only=False)
    for name, value in trained.items():
        torch.testing.assert_close(warm["state_dict"][name], value, rtol=0, atol=1e-8)
    assert max((cold["state_dict"][k] - v).abs().max().item() for k, v in trained.items()) > 0.01
    assert warm["gbx"]["opt_steps"] == cold["gbx"]["opt_steps"] == 4     # its own counters, not the source's 8
    assert warm["gbx"]["env_steps"] == cold["gbx"]["env_steps"]
    capsys.readouterr()
    assert _run(cfg, runs, "--run_name", "warm", "--ckpt_path", "last", "--init_from", str(source),
                "--trainer.max_steps", "8") == 0
    assert (f"fit: resuming: --init_from {source} is not used (the checkpoint holds the weights)"
            in capsys.readouterr().err)


def test_init_from_refuses_what_cannot_be_this_policy_in_one_line(cfg, tmp_path, capsys):
    runs = tmp_path / "runs"
    assert _run(cfg, runs) == 0
    source = runs / "tiny" / "version_0" / "checkpoints" / "last.ckpt"
    assert _run(cfg, runs, "--run_name", "a", "--init_from", str(tmp_path / "nope.ckpt")) != 0
    assert capsys.readouterr().err.strip().splitlines()[-1].endswith(f"--init_from {tmp_path / 'nope.ckpt'}: no such file")
    assert _run(cfg, runs, "--run_name", "b", "--init_from", str(source),
                "--model.init_args.policy.init_args.hidden", "[32]") != 0
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        "config error: init_from policy weight body.1.weight has shape [16, 150] there, [32, 150] here (another "
        "observation, action set or policy size)")
