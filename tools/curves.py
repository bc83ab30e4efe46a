"""Learning curves of finished runs as a markdown table: each evaluation's success rate by env steps, one column per
run, the random policy's figure on the same episodes (the JSONL meta line's ``random_baseline``), the minutes at
each evaluation, and whether any evaluation fell below random. Minutes are wall clock from the run's setup (its
``config.yaml`` written, or the meta line's ``started_at`` if earlier) to the evaluation's checkpoint
(``checkpoints/registry.jsonl``'s ``written_at``): what a user waits, the random policy's episodes and every
evaluation included (not the ~20 s of imports before); without a registry, the training records' ``wall_time_s``
(training only).

    python tools/curves.py lightning_logs/hamlet_house_ppo/version_0 lightning_logs/hamlet_house_ppo/version_1 ...
    python tools/curves.py RUN... --metric eval/success_rate --minutes 15

``--minutes M``: also print, per run, the best and the last success rate reached within M minutes. "Worse than
random" compares in the metric's direction: lower is better for failures and steps to success (``LOWER_IS_BETTER``),
higher for the rest; episode length has no direction (longer is better where an agent must survive, worse where it
must finish quickly) and gets no such line.
"""
from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

LOWER_IS_BETTER = ("failed_mean", "steps_to_success")
NO_DIRECTION = ("length_mean",)


def worse_than_random(metric: str, value: float, random: float) -> bool | None:
    """Whether ``value`` is worse than the random policy's ``random`` on ``metric``; None: no direction."""
    name = metric.removeprefix("eval/")
    if name in NO_DIRECTION:
        return None
    return value > random if name in LOWER_IS_BETTER else value < random


def _written_at(run_dir: Path) -> dict[int, datetime]:
    """env_steps -> when that evaluation's checkpoint was written (the registry's last word for each)."""
    path, at = run_dir / "checkpoints" / "registry.jsonl", {}
    if path.exists():
        for line in path.read_text().splitlines():
            c = json.loads(line).get("checkpoint") if line.strip() else None
            if c and c.get("written_at"):
                at[c["env_steps"]] = datetime.fromisoformat(c["written_at"])
    return at


def run_version(path: Path) -> Path:
    """The folder holding train.jsonl: ``path`` itself, or its latest ``version_N`` (a run name as ``fit`` makes it)."""
    if (path / "train.jsonl").exists():
        return path
    versions = sorted((int(v.name[8:]), v) for v in path.glob("version_*")
                      if v.name[8:].isdigit() and (v / "train.jsonl").exists())
    if not versions:
        raise SystemExit(f"curves.py: {path} has no train.jsonl (give a run's folder, e.g. runs/NAME/version_0)")
    return versions[-1][1]


def read_run(run_dir: Path, metric: str) -> dict:
    """{"evals": [(env_steps, value, seconds)], "random": value or None} of one run's train.jsonl."""
    from gbx_lightning.callbacks import read_training_log

    records = read_training_log(run_dir / "train.jsonl")
    random, evals, wall, started, written = None, {}, 0.0, None, _written_at(run_dir)
    for rec in records:
        if "meta" in rec:
            base = rec["meta"].get("random_baseline") or {}
            random = base.get(metric.replace("eval/", "eval/random_"), random)
            if rec["meta"].get("segment") == "start" and rec["meta"].get("started_at"):
                started = datetime.fromisoformat(rec["meta"]["started_at"])
                config = run_dir / "config.yaml"
                if config.exists():
                    started = min(started, datetime.fromtimestamp(config.stat().st_mtime, tz=started.tzinfo))
        elif "eval" in rec and rec["eval"].get("stage") == "validate":
            e = rec["eval"]
            at = written.get(e["env_steps"])
            seconds = (at - started).total_seconds() if at and started else wall
            evals[e["env_steps"]] = (e["env_steps"], e.get(metric), seconds)   # a resumed segment supersedes
        elif "wall_time_s" in rec and rec.get("wall_time_s") is not None:
            wall = rec["wall_time_s"]
    return {"evals": sorted(evals.values()), "random": random}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="+", type=Path)
    ap.add_argument("--metric", default="eval/success_rate",
                    help="an evaluation metric as logged (eval/mazes_mean) or as the registry names it (mazes_mean)")
    ap.add_argument("--minutes", type=float, default=None)
    args = ap.parse_args(argv)
    metric = args.metric if args.metric.startswith("eval/") else f"eval/{args.metric}"
    runs = {str(r): read_run(r, metric) for r in map(run_version, args.runs)}
    steps = sorted({s for run in runs.values() for s, _, _ in run["evals"]})
    names = [Path(r).parent.name + "/" + Path(r).name for r in runs]
    print("| env steps | " + " | ".join(names) + " |")
    print("|---:|" + "---:|" * len(names))
    for s in steps:
        cells = []
        for run in runs.values():
            hit = [(v, w) for t, v, w in run["evals"] if t == s]
            cells.append("" if not hit or hit[0][0] is None else f"{hit[0][0]:.3f} ({hit[0][1] / 60:.1f} min)")
        print(f"| {s:,} | " + " | ".join(cells) + " |")
    print("| random policy | " + " | ".join("" if r["random"] is None else f"{r['random']:.3f}"
                                            for r in runs.values()) + " |")
    for name, run in zip(names, runs.values()):
        worse = [s for s, v, _ in run["evals"] if v is not None and run["random"] is not None
                 and worse_than_random(metric, v, run["random"])]
        line = f"{name}: {len(run['evals'])} evaluations"
        if metric.removeprefix("eval/") not in NO_DIRECTION:
            line += f", worse than random at {worse or 'none'}"
        if args.minutes is not None:
            within = [v for _, v, w in run["evals"] if v is not None and w <= args.minutes * 60]
            line += (f"; within {args.minutes:g} min: best {max(within):.3f}, last {within[-1]:.3f}" if within else
                     f"; no evaluation within {args.minutes:g} min")
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
