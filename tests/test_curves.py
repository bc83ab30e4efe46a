"""tools/curves.py: evaluation curves read back from a run's train.jsonl, and "worse than random" in each metric's
direction (fewer failures is better; a lower success rate is worse)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))

import curves  # noqa: E402


def _run(tmp_path: Path) -> Path:
    run = tmp_path / "exp" / "version_0"
    run.mkdir(parents=True)
    lines = [{"meta": {"segment": "start", "random_baseline": {"eval/random_success_rate": 0.25,
                                                                "eval/random_failed_mean": 0.5,
                                                                "eval/random_length_mean": 60.0}}},
             {"env_steps": 100, "wall_time_s": 30.0},
             {"eval": {"stage": "validate", "env_steps": 100, "eval/success_rate": 0.125,
                       "eval/failed_mean": 0.75, "eval/length_mean": 40.0}},
             {"env_steps": 200, "wall_time_s": 90.0},
             {"eval": {"stage": "validate", "env_steps": 200, "eval/success_rate": 0.5,
                       "eval/failed_mean": 0.25, "eval/length_mean": 80.0}}]
    (run / "train.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    return run


def test_worse_than_random_follows_the_metric_direction():
    assert curves.worse_than_random("eval/success_rate", 0.1, 0.2) is True
    assert curves.worse_than_random("eval/success_rate", 0.3, 0.2) is False
    assert curves.worse_than_random("failed_mean", 0.9, 0.5) is True      # more failures than random: worse
    assert curves.worse_than_random("eval/failed_mean", 0.3, 0.5) is False
    assert curves.worse_than_random("steps_to_success", 120.0, 100.0) is True
    assert curves.worse_than_random("length_mean", 10.0, 50.0) is None


def test_curves_table_and_worse_than_random_line(tmp_path, capsys):
    run = _run(tmp_path)
    assert curves.read_run(run, "eval/failed_mean") == {"evals": [(100, 0.75, 30.0), (200, 0.25, 90.0)],
                                                        "random": 0.5}
    curves.main([str(run), "--metric", "failed_mean"])
    out = capsys.readouterr().out.splitlines()
    assert out[2] == "| 100 | 0.750 (0.5 min) |" and out[3] == "| 200 | 0.250 (1.5 min) |"
    assert out[-1] == "exp/version_0: 2 evaluations, worse than random at [100]"
    curves.main([str(run)])
    assert capsys.readouterr().out.splitlines()[-1] == "exp/version_0: 2 evaluations, worse than random at [100]"
    curves.main([str(run), "--metric", "length_mean"])
    assert capsys.readouterr().out.splitlines()[-1] == "exp/version_0: 2 evaluations"


def test_a_run_name_reads_its_latest_version(tmp_path, capsys):
    run = _run(tmp_path)                                     # exp/version_0
    for name, rate in (("version_2", "0.25"), ("version_10", "0.375")):   # the latest by number: version_10
        (run.parent / name).mkdir()
        (run.parent / name / "train.jsonl").write_text((run / "train.jsonl").read_text().replace("0.125", rate))
    (run.parent / "version_11").mkdir()                      # no train.jsonl: not a version of this run
    assert curves.run_version(run.parent) == run.parent / "version_10"
    assert curves.run_version(run) == run
    curves.main([str(run.parent)])
    assert capsys.readouterr().out.splitlines()[2] == "| 100 | 0.375 (0.5 min) |"
    with pytest.raises(SystemExit, match=r"^curves.py: .*empty has no train.jsonl \(give a run's folder"):
        curves.main([str(tmp_path / "empty")])
