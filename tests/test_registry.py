"""The checkpoint registry (gbx_lightning.registry) and ``--ckpt_path best``.

Known answers: the resolver on hand-written registries (ties, missing files, torn and superseded lines, a metric
where lower is better); and real fits on a tiny ForagingEnv with an evaluation after every PPO rollout (4 optimizer
steps), checkpoints every 8 steps: every evaluation has a file of its step (a hard link to ModelCheckpoint's at 8,
16, ..., its own save at 4, 12, ...), ``best`` is the step whose metrics in train.jsonl are the max (computed here
from the JSONL, not from the registry), the best files outlive ModelCheckpoint's rotation, ``validate --ckpt_path
best`` evaluates that file, and a resumed run's registry equals the uninterrupted run's.
"""

import contextlib
import io
import json
import os
from pathlib import Path

import pytest
import torch

from gbx_lightning.callbacks import AtomicCheckpointIO, read_training_log
from gbx_lightning.cli import main
from gbx_lightning.registry import (RegistryError, append_record, best_checkpoint, choose_best, describe,
                                    files_to_remove, live_entries, read_records, table_rows)

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::DeprecationWarning")

# small and food-rich enough that evaluations differ from one rollout to the next
ENV_KWARGS = {"obs_mode": "ground_truth", "max_steps": 12, "grid_size": 6, "view_size": 5,
              "food_range": [4, 6], "poison_range": [1, 2], "start_energy": 3.0, "step_cost": 0.5}
TINY_PPO = f"""
seed_everything: 3
trainer:
  max_steps: 32
  accelerator: cpu
  devices: 1
  val_check_interval: 1
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
    lr: 0.02
    eval_episodes: 8
checkpoint_every: 8
checkpoint_keep: 1
best_keep: 3
log_every: 4
progress_refresh: 0
"""
VOLATILE = {"wall_time_s", "written_at"}   # an entry's wall-clock fields


# ---------------------------------------------------------------- the resolver, on hand-written registries
def _entry(step, success, ret, **more):
    return {"checkpoint": {"path": f"checkpoints/eval/step{step:08d}.ckpt", "global_step": step, "opt_steps": step,
                           "env_steps": 3 * step, "metrics": {"success_rate": success, "return_mean": ret, **more}}}


def _write(run_dir: Path, records, files=None, tail: str = "") -> Path:
    """A registry of `records` (plus raw `tail` text), and the checkpoint files named by `files` (default: all)."""
    path = run_dir / "checkpoints" / "registry.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records) + tail)
    for r in records:
        if "checkpoint" in r and (files is None or r["checkpoint"]["global_step"] in files):
            (run_dir / r["checkpoint"]["path"]).parent.mkdir(parents=True, exist_ok=True)
            (run_dir / r["checkpoint"]["path"]).write_bytes(b"x")
    return path


def test_best_is_the_highest_success_then_return_then_the_later_step(tmp_path):
    _write(tmp_path, [_entry(4, 0.5, 1.0), _entry(8, 0.75, 2.0), _entry(12, 0.75, 3.0), _entry(16, 0.75, 3.0),
                      _entry(20, 0.25, 9.0)])
    assert best_checkpoint(tmp_path).entry["global_step"] == 16        # 0.75 thrice; return 3.0 twice; later step
    assert best_checkpoint(tmp_path, "return_mean").entry["global_step"] == 20
    assert best_checkpoint(tmp_path).file == tmp_path / "checkpoints" / "eval" / "step00000016.ckpt"


def test_steps_to_success_is_lower_better_and_a_missing_value_ranks_last(tmp_path):
    _write(tmp_path, [_entry(4, 0.5, 1.0, steps_to_success=9.0), _entry(8, 0.0, 0.0, steps_to_success=None),
                      _entry(12, 0.5, 0.5, steps_to_success=7.0), _entry(16, 0.5, 2.0, steps_to_success=7.0)])
    assert best_checkpoint(tmp_path, "steps_to_success").entry["global_step"] == 16   # 7 twice: the higher return
    _write(tmp_path, [_entry(4, 0.5, 1.0, steps_to_success=None), _entry(8, 0.0, 0.0, steps_to_success=30.0)])
    assert best_checkpoint(tmp_path, "steps_to_success").entry["global_step"] == 8


def test_an_entry_whose_file_is_gone_is_passed_over_and_named(tmp_path):
    _write(tmp_path, [_entry(4, 0.5, 1.0), _entry(8, 1.0, 2.0), _entry(12, 0.75, 2.0)], files={4, 12})
    best = best_checkpoint(tmp_path)
    assert best.entry["global_step"] == 12 and [e["global_step"] for e in best.skipped] == [8]
    _write(tmp_path, [_entry(4, 0.5, 1.0)], files=set())
    (tmp_path / "checkpoints" / "eval" / "step00000004.ckpt").unlink()
    with pytest.raises(RegistryError, match=r"none of the 1 checkpoint files named in .* exists any more"):
        best_checkpoint(tmp_path)


def test_a_torn_last_line_is_left_out_and_cut_before_the_next_append(tmp_path):
    path = _write(tmp_path, [_entry(4, 0.5, 1.0), _entry(8, 0.75, 2.0)], tail='{"checkpoint": {"path": "checkp')
    assert [e["global_step"] for e in live_entries(read_records(path))] == [4, 8]
    # a torn line that happens to be whole JSON is still a write cut short (no newline): left out, as it is cut
    path.write_text(path.read_text().rsplit("\n", 1)[0] + "\n" + json.dumps(_entry(12, 1.0, 5.0)))
    assert best_checkpoint(tmp_path).entry["global_step"] == 8
    append_record(path, _entry(16, 0.25, 0.0))
    assert path.read_text().count("\n") == 3 and [r["checkpoint"]["global_step"] for r in read_records(path)] == \
        [4, 8, 16]


def test_a_damaged_line_inside_the_registry_is_one_line_error(tmp_path):
    path = _write(tmp_path, [_entry(4, 0.5, 1.0)], tail="garbage\n" + json.dumps(_entry(8, 1.0, 1.0)) + "\n")
    with pytest.raises(RegistryError) as err:
        best_checkpoint(tmp_path)
    assert str(err.value) == f"{path}: line 2 is not a registry record: 'garbage' (fix or delete it)"
    path.write_text(json.dumps(_entry(4, 0.5, 1.0)) + "\n" + '{"checkpoint": {"path": "x.ckpt", "global_step": "8"}}\n')
    with pytest.raises(RegistryError, match="line 2 is not a registry record"):
        best_checkpoint(tmp_path)


def test_a_segment_supersedes_the_entries_beyond_its_start(tmp_path):
    """A crashed segment evaluated steps 4-16; the run resumed from step 8: its 12 and 16 are gone, even where the
    resumed run has not evaluated again (16), and the resumed run's 12 stands alone."""
    records = [_entry(4, 0.5, 1.0), _entry(8, 0.5, 2.0), _entry(12, 1.0, 9.0), _entry(16, 1.0, 9.0),
               {"segment": {"global_step": 8}}, _entry(12, 0.25, 0.0)]
    _write(tmp_path, records)
    live = live_entries(records)
    assert [(e["global_step"], e["metrics"]["success_rate"]) for e in live] == [(4, 0.5), (8, 0.5), (12, 0.25)]
    assert best_checkpoint(tmp_path).entry["global_step"] == 8
    # a fresh start in the same version (global step 0) supersedes everything before it
    assert live_entries(records + [{"segment": {"global_step": 0}}]) == []


def test_rotation_keeps_the_best_n_live_files_and_nothing_outside_checkpoints_eval(tmp_path):
    records = [_entry(4, 0.5, 1.0), _entry(8, 1.0, 2.0), _entry(12, 0.75, 2.0), _entry(16, 1.0, 1.0),
               {"segment": {"global_step": 12}}, _entry(16, 0.0, 0.0)]
    exists = lambda p: True  # noqa: E731
    # live: 4 (0.5), 8 (1.0), 12 (0.75), 16 (0.0): best two are 8 and 12
    assert files_to_remove(records, "success_rate", 2, exists) == ["checkpoints/eval/step00000004.ckpt",
                                                                    "checkpoints/eval/step00000016.ckpt"]
    assert files_to_remove(records, "success_rate", -1, exists) == []
    # a file already gone does not hold a place among the best: 8 gone, so 12 and 4 are kept
    assert files_to_remove(records, "success_rate", 2, lambda p: "00000008" not in p) == \
        ["checkpoints/eval/step00000016.ckpt"]
    outside = [{"checkpoint": {**_entry(4, 0.0, 0.0)["checkpoint"], "path": "checkpoints/last.ckpt"}},
               _entry(8, 1.0, 1.0)]
    assert files_to_remove(outside, "success_rate", 1, exists) == []


def test_the_table_shows_the_best_with_files_and_the_latest_when_long():
    entries = [_entry(s, (s % 7) / 7, 0.0)["checkpoint"] for s in range(1, 21)]   # 6/7 at 6, 13, 20; 5/7 at 5, 12, 19
    rows, left_out = table_rows(entries, "success_rate", lambda p: True, limit=6)
    # the latest three (18, 19, 20), then down the ranking (20, 13, 6, 19, 12) until six
    assert [r["entry"]["global_step"] for r in rows] == [6, 12, 13, 18, 19, 20] and left_out == 14
    assert [r["entry"]["global_step"] for r in rows if r["best"]] == [20]
    best, skipped = choose_best(entries, "success_rate", lambda p: "00000020" not in p)
    assert best["global_step"] == 13 and [e["global_step"] for e in skipped] == [20]


def test_what_best_says_it_chose_and_passed_over(tmp_path):
    _write(tmp_path, [_entry(4, 0.5, 1.0, steps_to_success=6.0), _entry(8, 1.0, 2.0, steps_to_success=5.0),
                      _entry(12, 0.75, 2.5, steps_to_success=4.0)], files={4, 8})
    best = best_checkpoint(tmp_path, "steps_to_success")
    assert describe(best, "steps_to_success") == [
        "--ckpt_path best: passed over step(s) 12, ranked higher by steps_to_success: their files are gone (kept: "
        "the best best_keep by fit's best_metric)",
        "--ckpt_path best (by steps_to_success): step 8 (env steps 24; steps_to_success 5, success_rate 1, "
        f"return_mean 2): {tmp_path / 'checkpoints' / 'eval' / 'step00000008.ckpt'}"]


# ---------------------------------------------------------------- a real run
def _fit(cfg, runs, *extra, sub="fit"):
    return main([sub, "--config", str(cfg), "--runs_dir", str(runs), *extra])


def _jsonl_evals(path: Path) -> dict[int, dict]:
    """The fit's evaluations as train.jsonl has them, by optimizer step; a resumed segment's meta line supersedes
    the records beyond its start (how train.jsonl is read)."""
    evals: dict[int, dict] = {}
    for rec in read_training_log(path):
        if "meta" in rec:
            evals = {s: e for s, e in evals.items() if s <= rec["meta"]["opt_steps"]}
        elif "eval" in rec and rec["eval"]["stage"] == "validate":
            evals[rec["eval"]["opt_steps"]] = rec["eval"]
    return evals


def _ranked_steps(evals: dict[int, dict]) -> list[int]:
    """Best first by success rate, then mean return, then the later step: the rule, applied to the JSONL."""
    return sorted(evals, key=lambda s: (evals[s]["eval/success_rate"], evals[s]["eval/return_mean"], s), reverse=True)


def _live(run_dir: Path, leave_out=()) -> list[dict]:
    return [{k: v for k, v in e.items() if k not in VOLATILE and k not in leave_out}
            for e in live_entries(read_records(run_dir / "checkpoints" / "registry.jsonl"))]


@pytest.fixture(scope="module")
def straight(tmp_path_factory):
    """32 optimizer steps, an evaluation every 4 (8 in all), checkpoints every 8 with only the newest kept."""
    tmp = tmp_path_factory.mktemp("registry")
    cfg = tmp / "tiny.yaml"
    cfg.write_text(TINY_PPO)
    runs = tmp / "runs"
    err = io.StringIO()
    with contextlib.redirect_stderr(err), pytest.MonkeyPatch.context() as mp:
        mp.setattr(AtomicCheckpointIO, "save_checkpoint", _counting_saves(AtomicCheckpointIO.save_checkpoint))
        assert _fit(cfg, runs) == 0
    run_dir = runs / "tiny" / "version_0"
    return cfg, runs, run_dir, _jsonl_evals(run_dir / "train.jsonl"), err.getvalue()


SAVED: list[str] = []   # every checkpoint the straight run wrote, in order


def _counting_saves(save):
    def counting(self, checkpoint, path, storage_options=None):
        SAVED.append(os.fspath(path))
        return save(self, checkpoint, path, storage_options)
    return counting


def _kept_when_evaluated(evals: dict[int, dict], keep: int = 3) -> list[int]:
    """The steps whose evaluation ranked among the `keep` best of those made so far (when it was made)."""
    return [s for s in sorted(evals) if s in _ranked_steps({t: evals[t] for t in evals if t <= s})[:keep]]


def test_every_evaluation_is_recorded_with_a_file_of_its_step(straight):
    _, _, run_dir, evals, _ = straight
    assert sorted(evals) == [4, 8, 12, 16, 20, 24, 28, 32]
    entries = live_entries(read_records(run_dir / "checkpoints" / "registry.jsonl"))
    assert [e["global_step"] for e in entries] == [4, 8, 12, 16, 20, 24, 28, 32]
    for e in entries:
        step = e["global_step"]
        logged = evals[step]
        assert e["path"] == f"checkpoints/eval/step{step:08d}.ckpt"
        assert (e["opt_steps"], e["env_steps"]) == (logged["opt_steps"], logged["env_steps"]) == (step, 3 * step)
        assert e["metrics"] == {k.split("/", 1)[1]: v for k, v in logged.items() if k.startswith("eval/")}
        assert e["wall_time_s"] > 0
    # a file only for an evaluation that ranked among the 3 best so far: on ModelCheckpoint's steps (8, 16, ...)
    # its step file linked, between them one the registry saved itself (and nothing written for the others)
    kept = _kept_when_evaluated(evals)
    assert 0 < len(kept) < 8
    assert [e["linked_from"] for e in entries] == [f"checkpoints/step{s:08d}.ckpt" if s in kept and s % 8 == 0
                                                   else None for s in sorted(evals)]
    eval_dir = run_dir / "checkpoints" / "eval"
    assert [p for p in SAVED if Path(p).parent == eval_dir] == \
        [str(eval_dir / f"step{s:08d}.ckpt") for s in kept if s % 8]
    assert any(s % 8 for s in kept) and any(s % 8 == 0 for s in kept)   # both ways taken (the run's known outcome)


def test_the_evaluated_file_holds_the_weights_of_its_step(straight, tmp_path):
    """The same run without evaluations, checkpointing every 4 steps: its step files hold the same weights as the
    registry's files of those steps (the saves at evaluations did not move the training either)."""
    cfg, _, run_dir, _, _ = straight
    runs = tmp_path / "runs"
    assert _fit(cfg, runs, "--trainer.limit_val_batches", "0", "--checkpoint_every", "4", "--checkpoint_keep",
                "-1") == 0
    plain = runs / "tiny" / "version_0" / "checkpoints"
    assert not (plain / "registry.jsonl").exists()   # nothing evaluated, nothing recorded
    kept = sorted((run_dir / "checkpoints" / "eval").glob("step*.ckpt"))
    assert kept
    for path in kept:
        ours = torch.load(path, weights_only=False)
        theirs = torch.load(plain / path.name, weights_only=False)
        assert ours["global_step"] == theirs["global_step"] == int(path.stem[4:])
        assert ours["gbx"] == theirs["gbx"]
        for k, v in theirs["state_dict"].items():
            assert torch.equal(ours["state_dict"][k], v), (path.name, k)


def test_best_is_the_max_of_the_jsonl_evaluations_and_its_file_outlives_rotation(straight):
    _, _, run_dir, evals, _ = straight
    ranked = _ranked_steps(evals)
    best = best_checkpoint(run_dir)
    assert best.entry["global_step"] == ranked[0] and best.skipped == []
    assert best.file == run_dir / "checkpoints" / "eval" / f"step{ranked[0]:08d}.ckpt"
    assert torch.load(best.file, weights_only=False)["global_step"] == ranked[0]
    # best_keep 3: the three best evaluated files stay; ModelCheckpoint kept only its newest (checkpoint_keep 1)
    assert sorted(p.name for p in (run_dir / "checkpoints" / "eval").iterdir()) == \
        sorted(f"step{s:08d}.ckpt" for s in ranked[:3])
    assert sorted(p.name for p in (run_dir / "checkpoints").glob("*.ckpt")) == ["last.ckpt", "step00000032.ckpt"]
    linked = [s for s in ranked[:3] if s % 8 == 0 and s != 32]
    assert linked, "a kept file whose ModelCheckpoint step file was rotated away"   # (the run's known outcome)
    for s in linked:
        saved = torch.load(run_dir / "checkpoints" / "eval" / f"step{s:08d}.ckpt", weights_only=False)
        assert saved["global_step"] == s


def test_fit_ends_with_a_table_of_the_registry_the_best_marked(straight):
    _, _, _, evals, err = straight
    ranked = _ranked_steps(evals)
    lines = err.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("checkpoint registry ("))
    assert lines[head].endswith("best by success_rate")
    assert lines[head + 1].split() == ["step", "env", "steps", "success", "return", "file"]
    rows = [line.replace("(not kept)", "(not-kept)").split() for line in lines[head + 2:head + 10]]
    assert [int(r[-5]) for r in rows] == sorted(evals)
    for r in rows:
        step = int(r[-5])
        assert (r[0] == "best") == (step == ranked[0])
        assert r[-1] == (f"checkpoints/eval/step{step:08d}.ckpt" if step in ranked[:3] else "(not-kept)")
        assert float(r[-3]) == pytest.approx(evals[step]["eval/success_rate"], abs=1e-4)


def test_validate_and_test_with_ckpt_path_best_evaluate_that_file(straight, capsys):
    cfg, runs, run_dir, evals, _ = straight
    step = _ranked_steps(evals)[0]
    # on the episodes fit evaluated on (the default is held-out ones: tests/test_run_lifecycle.py)
    assert _fit(cfg, runs, "--ckpt_path", "best", "--eval_seed", "fit", sub="validate") == 0
    err = capsys.readouterr().err
    e = evals[step]
    assert (f"validate: --ckpt_path best (by success_rate): step {step} (env steps {3 * step}; success_rate "
            f"{e['eval/success_rate']:.4g}, return_mean {e['eval/return_mean']:.4g}): "
            f"{run_dir / 'checkpoints' / 'eval' / f'step{step:08d}.ckpt'}") in err
    # the evaluation it logged (into the run's own train.jsonl) is the one fit made of that step: same weights
    last = read_training_log(run_dir / "train.jsonl")[-1]["eval"]
    assert last == evals[step]
    assert _fit(cfg, runs, "--ckpt_path", "best", "--eval_seed", "fit", sub="test") == 0
    test = read_training_log(run_dir / "train.jsonl")[-1]["eval"]
    assert test["stage"] == "test" and test["opt_steps"] == step
    assert test["test/success_rate"] == e["eval/success_rate"] and test["test/return_mean"] == e["eval/return_mean"]
    assert len(live_entries(read_records(run_dir / "checkpoints" / "registry.jsonl"))) == 8   # not recorded


def test_play_with_ckpt_path_best_plays_that_file(straight, monkeypatch, capsys):
    cfg, runs, run_dir, evals, _ = straight
    played = []
    monkeypatch.setattr("gbx_lightning.play.play",
                        lambda module, device, ckpt_path, out, **kw: played.append(ckpt_path))
    assert _fit(cfg, runs, "--ckpt_path", "best", "--out", str(runs / "clip.gif"), sub="play") == 0
    assert played == [str(run_dir / "checkpoints" / "eval" / f"step{_ranked_steps(evals)[0]:08d}.ckpt")]
    assert "play: --ckpt_path best (by success_rate): step" in capsys.readouterr().err


def test_fit_refuses_best_and_names_the_file(straight, capsys):
    cfg, runs, run_dir, evals, _ = straight
    assert _fit(cfg, runs, "--ckpt_path", "best") == 2
    step = _ranked_steps(evals)[0]
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        "error: --ckpt_path best is for validate, test and play: fit goes on from the last checkpoint (--ckpt_path "
        "last); to train on from the best one instead (the run's later records and registry entries are then "
        f"superseded), pass its file: --ckpt_path {run_dir / 'checkpoints' / 'eval' / f'step{step:08d}.ckpt'}")


_METRICS = "['food_eaten_mean', 'poison_eaten_mean', 'return_mean', 'steps_to_success', 'success_rate']"


@pytest.mark.parametrize("args,message", [
    (["--best_metric", "accuracy"], f"config error: best_metric must be one of {_METRICS}, got 'accuracy' (the "
     "metrics of {registry})"),
    (["--best_metric", "length_mean"], f"config error: best_metric must be one of {_METRICS}, got 'length_mean' "
     "(the metrics of {registry})"),
    (["--best_keep", "0"], "config error: best_keep must be -1 (all) or an int >= 1 (the best evaluated checkpoints "
     "to keep), got 0"),
    (["--version", "7"], "error: --ckpt_path best: no checkpoint registry, {runs}/tiny/version_7/checkpoints/"
     "registry.jsonl does not exist (fit writes it at every evaluation: train the run with evaluations on, or pass "
     "--ckpt_path last or a FILE)"),
])
def test_what_best_refuses_is_one_line(straight, capsys, args, message):
    cfg, runs, run_dir, _, _ = straight
    assert _fit(cfg, runs, "--ckpt_path", "best", *args, sub="validate") == 2
    expected = message.format(registry=run_dir / "checkpoints" / "registry.jsonl", runs=runs)
    assert capsys.readouterr().err.strip().splitlines()[-1] == expected


def test_an_extra_metric_of_the_registry_ranks_and_an_unknown_one_is_refused_before_fit(straight, tmp_path, capsys):
    cfg, runs, run_dir, evals, _ = straight
    assert _fit(cfg, runs, "--ckpt_path", "best", "--best_metric", "food_eaten_mean", sub="validate") == 0
    assert "--ckpt_path best (by food_eaten_mean): step" in capsys.readouterr().err
    assert _fit(cfg, tmp_path / "fresh", "--best_metric", "food_eaten_mean") == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        "config error: best_metric must be one of ['return_mean', 'steps_to_success', 'success_rate'], got "
        "'food_eaten_mean' (other metrics: those in the run's registry)")
    assert not (tmp_path / "fresh").exists()   # refused before anything was built or written


def test_the_final_evaluation_after_fit_is_recorded_with_last_ckpt_of_its_step(straight, tmp_path, capsys):
    """Evaluations every 3 rollouts, 5 rollouts (20 steps): the scheduled one at 12 saves its file, the final one
    (after training ended, where nothing may be saved) links last.ckpt, written at step 20. Resumed with nothing
    left to train, the evaluation of step 20 again finds it recorded already."""
    cfg = straight[0]
    runs = tmp_path / "runs"
    assert _fit(cfg, runs, "--trainer.val_check_interval", "3", "--trainer.max_steps", "20") == 0
    run_dir = runs / "tiny" / "version_0"
    registry = run_dir / "checkpoints" / "registry.jsonl"
    assert [(e["global_step"], e["linked_from"]) for e in live_entries(read_records(registry))] == \
        [(12, None), (20, "checkpoints/last.ckpt")]
    assert torch.load(run_dir / "checkpoints" / "eval" / "step00000020.ckpt", weights_only=False)["global_step"] == 20
    before = _live(run_dir)
    capsys.readouterr()
    assert _fit(cfg, runs, "--trainer.val_check_interval", "3", "--trainer.max_steps", "20", "--ckpt_path", "last") == 0
    assert _live(run_dir) == before and "not recorded" not in capsys.readouterr().err
    assert [r["eval"]["opt_steps"] for r in read_training_log(run_dir / "train.jsonl") if "eval" in r] == [12, 20, 20]


TINY_GB_A2C = """
seed_everything: 5
trainer: {max_steps: 6, accelerator: cpu, devices: 1, val_check_interval: 3, check_val_every_n_epoch: null}
model:
  class_path: gbx_lightning.algos.A2CModule
  init_args:
    env:
      class_path: gbx_lightning.envs.GameBoyEnv
      init_args: {task: {base: orchard/level1, start: {variants: 2}}, stack_k: 2, action_codec: dpad_noop,
                 max_steps: 6, cpu_threads: 2}
    num_envs: 3
    policy:
      class_path: gbx_lightning.models.PixelCNNPolicy
      init_args: {channels: [4, 8], hidden: 16}
    update_every: 2
    lr: 0.001
    eval_episodes: 2
checkpoint_every: 100
log_every: 1
image_every: 0
progress_refresh: 0
"""


def test_play_best_on_the_game_boy_writes_the_clip_of_that_file(tmp_path, capsys):
    cfg = tmp_path / "gb.yaml"
    cfg.write_text(TINY_GB_A2C)
    runs = tmp_path / "runs"
    assert _fit(cfg, runs) == 0
    run_dir = runs / "gb" / "version_0"
    evals = _jsonl_evals(run_dir / "train.jsonl")
    assert sorted(evals) == [3, 6]
    best = run_dir / "checkpoints" / "eval" / f"step{_ranked_steps(evals)[0]:08d}.ckpt"
    capsys.readouterr()
    assert _fit(cfg, runs, "--ckpt_path", "best", "--out", str(tmp_path / "best.gif"), sub="play") == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-2].endswith(f": {best}") and err[-1] == "play: acting by sampling from the policy, as evaluation does"
    assert _fit(cfg, runs, "--ckpt_path", str(best), "--out", str(tmp_path / "file.gif"), sub="play") == 0
    assert (tmp_path / "best.gif").read_bytes() == (tmp_path / "file.gif").read_bytes()


def test_a_damaged_registry_stops_a_resume_before_training(straight, tmp_path, capsys):
    cfg = straight[0]
    runs = tmp_path / "runs"
    assert _fit(cfg, runs, "--trainer.max_steps", "8") == 0
    registry = runs / "tiny" / "version_0" / "checkpoints" / "registry.jsonl"
    registry.write_text("not json\n" + registry.read_text())
    assert _fit(cfg, runs, "--ckpt_path", "last") == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"error: {registry}: line 1 is not a registry record: 'not json' (fix or delete it)")
    assert read_training_log(runs / "tiny" / "version_0" / "train.jsonl")[-1]["eval"]["opt_steps"] == 8  # no new segment


# ---------------------------------------------------------------- resume
def test_a_stopped_and_resumed_run_has_the_uninterrupted_runs_registry_and_best(straight, tmp_path):
    cfg, _, run_dir, _, _ = straight
    runs = tmp_path / "runs"
    assert _fit(cfg, runs, "--trainer.max_steps", "16") == 0
    assert _fit(cfg, runs, "--ckpt_path", "last") == 0
    split = runs / "tiny" / "version_0"
    assert _live(split) == _live(run_dir)
    assert best_checkpoint(split).entry["path"] == best_checkpoint(run_dir).entry["path"]
    assert sorted(p.name for p in (split / "checkpoints" / "eval").iterdir()) == \
        sorted(p.name for p in (run_dir / "checkpoints" / "eval").iterdir())
    segments = [r["segment"] for r in read_records(split / "checkpoints" / "registry.jsonl") if "segment" in r]
    assert [(s["global_step"], s["resumed_from"]) for s in segments] == [(16, "checkpoints/last.ckpt")]


def test_a_resume_from_an_evaluations_own_checkpoint_is_exact(straight, tmp_path):
    """Crash after step 32, resume from the file the registry saved at step 12's evaluation (saved at the end of
    that evaluation, not by ModelCheckpoint): the entries beyond 12 are made again, equal, and the run logs on in
    its own version."""
    cfg, _, run_dir, evals, _ = straight
    runs = tmp_path / "runs"
    assert _fit(cfg, runs, "--best_keep", "-1") == 0
    crashed = runs / "tiny" / "version_0"
    assert _fit(cfg, runs, "--best_keep", "-1", "--ckpt_path", str(crashed / "checkpoints" / "eval" /
                                                                   "step00000012.ckpt")) == 0
    assert sorted(p.name for p in (runs / "tiny").iterdir()) == ["version_0"]
    assert _live(crashed, {"linked_from"}) == _live(run_dir, {"linked_from"})   # (best_keep -1 here: all linked)
    assert _jsonl_evals(crashed / "train.jsonl") == evals
    assert sorted(p.name for p in (crashed / "checkpoints" / "eval").iterdir()) == \
        [f"step{s:08d}.ckpt" for s in range(4, 33, 4)]   # best_keep -1: every evaluated file


def test_a_crashed_segments_entries_do_not_shadow_the_resumed_runs(straight, tmp_path):
    """The run went to 32 and is resumed from step 12 with another learning rate (a different future): its entries
    of 16..32 replace the crashed segment's, which differ, and best is computed over 4..12 (first segment) and the
    resumed run's 16..32, as train.jsonl (read with its resume rule) has them."""
    cfg, _, run_dir, first, _ = straight
    runs = tmp_path / "runs"
    assert _fit(cfg, runs, "--best_keep", "-1") == 0
    crashed = runs / "tiny" / "version_0"
    assert _fit(cfg, runs, "--best_keep", "-1", "--model.init_args.lr", "1e-6", "--ckpt_path",
                str(crashed / "checkpoints" / "eval" / "step00000012.ckpt")) == 0
    evals = _jsonl_evals(crashed / "train.jsonl")
    assert sorted(evals) == [4, 8, 12, 16, 20, 24, 28, 32]
    assert any(evals[s] != first[s] for s in (16, 20, 24, 28, 32))   # the resumed future differs
    live = live_entries(read_records(crashed / "checkpoints" / "registry.jsonl"))
    for e in live:
        assert e["metrics"] == {k.split("/", 1)[1]: v for k, v in evals[e["global_step"]].items()
                                if k.startswith("eval/")}
    best = best_checkpoint(crashed)
    assert best.entry["global_step"] == _ranked_steps(evals)[0]
    assert torch.load(best.file, weights_only=False)["global_step"] == best.entry["global_step"]


# ---------------------------------------------------------------- a small piece of the shell
def test_a_filesystem_without_hard_links_gets_a_copy(tmp_path, monkeypatch):
    from gbx_lightning import registry

    source = tmp_path / "step00000008.ckpt"
    source.write_bytes(b"weights")
    target = tmp_path / "eval" / "step00000008.ckpt"

    def no_links(src, dst):
        raise OSError(1, "Operation not permitted")

    monkeypatch.setattr(os, "link", no_links)
    registry._link_or_copy(source, target)
    assert target.read_bytes() == b"weights" and not os.path.samefile(source, target)
    assert sorted(p.name for p in target.parent.iterdir()) == ["step00000008.ckpt"]   # no temporary left


# ---------------------------------------------------------------- DDP
def test_under_ddp_the_save_at_an_evaluation_is_every_ranks_and_rank_0_records_it(tmp_path):
    """2 processes (gloo), an evaluation after each rollout (steps 4, 8), ModelCheckpoint every 8: the file of step 4
    is a save all ranks make together (it holds both ranks' streams), step 8's a link; one line per evaluation; a
    resume from step 4's file remakes step 8's entry equal."""
    import subprocess
    import sys

    cfg = tmp_path / "tiny.yaml"
    cfg.write_text(TINY_PPO.replace("devices: 1", "devices: 2\n  strategy: ddp")
                   .replace("max_steps: 32", "max_steps: 8"))
    runs = tmp_path / "runs"
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(root)}
    env.pop("OMP_NUM_THREADS", None)

    def fit(*extra):
        proc = subprocess.run([sys.executable, "-m", "gbx_lightning", "fit", "--config", str(cfg), "--runs_dir",
                               str(runs), *extra], env=env, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr[-3000:]

    fit()
    run_dir = runs / "tiny" / "version_0"
    records = read_records(run_dir / "checkpoints" / "registry.jsonl")
    assert [(r["checkpoint"]["global_step"], r["checkpoint"]["linked_from"]) for r in records] == \
        [(4, None), (8, "checkpoints/step00000008.ckpt")]
    saved = torch.load(run_dir / "checkpoints" / "eval" / "step00000004.ckpt", weights_only=False)
    assert saved["global_step"] == 4 and saved["gbx"]["world_size"] == 2 and saved["gbx"]["env_steps"] == 2 * 4 * 3
    before = _live(run_dir)
    fit("--ckpt_path", str(run_dir / "checkpoints" / "eval" / "step00000004.ckpt"))
    assert _live(run_dir) == before
    assert [r.get("segment", {}).get("global_step") for r in read_records(run_dir / "checkpoints" / "registry.jsonl")] \
        == [None, None, 4, None]
