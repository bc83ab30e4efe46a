"""Which checkpoint was best? The checkpoint registry of a run, and ``--ckpt_path best``.

Every evaluation during ``fit`` (the scheduled ones and the final one) appends one line to
``<run>/checkpoints/registry.jsonl`` naming the checkpoint file that holds exactly the evaluated weights
(there while it ranks among the ``best_keep`` kept):

    {"checkpoint": {"path": "checkpoints/eval/step00000008.ckpt", "global_step": 8, "opt_steps": 8,
                    "env_steps": 24, "metrics": {"success_rate": 0.667, "return_mean": 1.5, ...},
                    "wall_time_s": 3.2, "written_at": "2026-11-30T10:00:00+00:00",
                    "linked_from": "checkpoints/step00000008.ckpt"}}

How the evaluated weights and the file agree: Lightning evaluates right after a training batch, at the
``global_step`` that batch ended on, before any further update. ``CheckpointRegistry.on_validation_end``
then gives that step a file of its own under ``checkpoints/eval/``: a hard link to the checkpoint that
``ModelCheckpoint`` (or ``last.ckpt``'s save at the end of training) wrote at this very step, when there
is one (no second write, no extra disk), otherwise a checkpoint saved there and then (a collective
under DDP, as every save). A checkpoint saved at the end of an evaluation resumes exactly: Lightning
knows its loop stood after that batch's evaluation and does not repeat it.

Why files of its own rather than pointing at ``stepNNNNNNNN.ckpt``: ``ModelCheckpoint``'s ``save_top_k``
rotation deletes the older step files, and vetoing its deletions would mean overriding its private
methods. A hard link is a second name for the same bytes, so the rotation removing its name leaves ours
whole, and a later ``last.ckpt`` (written by rename, a new file) leaves it untouched. Where the
filesystem has no hard links the file is copied. The registry keeps the ``best_keep`` best files
(by ``best_metric``, among the entries whose files exist) and deletes its other ones; it never deletes a
file outside ``checkpoints/eval/``. An evaluation that does not rank among those kept is recorded without
a file: saving one (up to ``--env_state_max_mb`` of env state) only to delete it at once would be waste.

Resume: the registry continues in the run's directory. Each fit segment that finds a registry first
appends ``{"segment": {"global_step": S, ...}}``, S = the step it starts from; entries of earlier
segments beyond S (a crashed segment's evaluations after the checkpoint resumed from) are superseded, so
they neither shadow the resumed run's entries of the same steps nor compete for ``best``. An entry of a
step evaluated again replaces the older one. Lines are appended whole (one write, then fsync); a last
line without its newline (kill -9 mid-write) is left out when read and cut before the next append.

``best``: the entry with the highest ``best_metric`` (``steps_to_success``: the lowest; a missing value
ranks last), ties broken by the higher ``return_mean``, then the later step. Entries whose file is gone are
passed over, and the resolver says which. ``validate``/``test``/``play --ckpt_path best`` take that file;
``fit`` refuses it (cli/runs.py). Only fit's evaluations are recorded: a later ``validate`` of some checkpoint
does not change the registry.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

from lightning.pytorch.callbacks import Checkpoint

from gbx_lightning.callbacks import drop_torn_line
from gbx_lightning.checks import ConfigError

__all__ = ["CORE_METRICS", "Best", "CheckpointRegistry", "RegistryError", "append_record", "best_checkpoint",
           "choose_best", "describe", "eval_checkpoint_name", "files_to_remove", "known_metrics", "live_entries",
           "metric_problem", "print_registry_table", "rank", "read_records", "registry_path", "table_rows"]

REGISTRY_NAME = "registry.jsonl"
EVAL_DIR = "checkpoints/eval"   # relative to the run directory
CORE_METRICS = ("success_rate", "return_mean", "steps_to_success")   # what every env's evaluation gives
LOWER_IS_BETTER = frozenset({"steps_to_success"})
# eval metrics that rank nothing: a count, and a length that is good short (a goal reached) or long (survival)
NOT_SCORES = frozenset({"episodes", "length_mean"})


class RegistryError(RuntimeError):
    """The registry cannot answer (none, nothing scored, a damaged line): one line saying what to do."""


def registry_path(run_dir: str | os.PathLike) -> Path:
    return Path(run_dir) / "checkpoints" / REGISTRY_NAME


def eval_checkpoint_name(step: int) -> str:
    """The registry's file for an evaluation at optimizer step ``step``, relative to the run directory."""
    return f"{EVAL_DIR}/step{step:08d}.ckpt"


# ---- reading: pure functions of the records --------------------------------------------------------------------
def read_records(path: str | os.PathLike) -> list[dict[str, Any]]:
    """The registry's records in order. A last line without its newline is a write cut short (it is cut before the
    next append, ``drop_torn_line``) and left out; any other line that is not a JSON object raises RegistryError."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    lines = text.split("\n")
    lines.pop()   # after the last newline: "" or a torn line
    records = []
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            record = None
        if not _well_formed(record):
            raise RegistryError(f"{path}: line {i + 1} is not a registry record: {line[:80]!r} (fix or delete it)")
        records.append(record)
    return records


def _well_formed(record: Any) -> bool:
    """A segment line with its start step, or a checkpoint line with a path, a step and a metrics dict."""
    if not isinstance(record, dict):
        return False
    step = lambda d: isinstance(d.get("global_step"), int) and not isinstance(d.get("global_step"), bool)  # noqa: E731
    if isinstance(record.get("segment"), dict):
        return step(record["segment"])
    entry = record.get("checkpoint")
    return (isinstance(entry, dict) and step(entry) and isinstance(entry.get("path"), str)
            and isinstance(entry.get("metrics"), dict))


def live_entries(records: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The checkpoint entries that describe the run as it stands, by step: a segment starting from step S
    supersedes the earlier entries beyond S, and an entry of a step evaluated again replaces the older one."""
    by_step: dict[int, dict[str, Any]] = {}
    for record in records:
        if "segment" in record:
            start = int(record["segment"]["global_step"])
            by_step = {s: e for s, e in by_step.items() if s <= start}
        elif "checkpoint" in record:
            entry = record["checkpoint"]
            by_step[int(entry["global_step"])] = entry
    return [by_step[s] for s in sorted(by_step)]


def known_metrics(entries: Iterable[dict[str, Any]] = ()) -> list[str]:
    """Metrics ``best`` can rank by: the core ones, and any other score the entries hold (an env's extra counter's
    mean, higher is better)."""
    names = set(CORE_METRICS)
    for entry in entries:
        names.update(entry.get("metrics", {}))
    return sorted(names - NOT_SCORES)


def metric_problem(metric: Any, known: Iterable[str]) -> str | None:
    known = sorted(known)
    if isinstance(metric, str) and metric in known:
        return None
    return f"must be one of {known}, got {metric!r}"


def _value(entry: dict[str, Any], metric: str) -> float:
    """The entry's ``metric`` as a number where larger is better; missing or non-finite ranks last."""
    value = entry.get("metrics", {}).get(metric)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return -math.inf
    return -float(value) if metric in LOWER_IS_BETTER else float(value)


def score(entry: dict[str, Any], metric: str) -> tuple[float, float, int]:
    """Sort key, larger is better: ``metric``, then mean return, then the later step."""
    return _value(entry, metric), _value(entry, "return_mean"), int(entry["global_step"])


def rank(entries: Iterable[dict[str, Any]], metric: str) -> list[dict[str, Any]]:
    """Entries best first."""
    return sorted(entries, key=lambda e: score(e, metric), reverse=True)


def choose_best(entries: Iterable[dict[str, Any]], metric: str,
                exists: Callable[[str], bool]) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """(the best entry whose file ``exists``, the better-ranked entries passed over because theirs is gone)."""
    skipped = []
    for entry in rank(entries, metric):
        if exists(entry["path"]):
            return entry, skipped
        skipped.append(entry)
    return None, skipped


def files_to_remove(records: list[dict[str, Any]], metric: str, keep: int,
                    exists: Callable[[str], bool]) -> list[str]:
    """The registry's files to delete so that only the ``keep`` best live entries' files remain (``keep`` -1: all
    live entries' files): those of other entries, superseded ones included, that exist. Only files under
    ``checkpoints/eval/`` are ever named."""
    live = [e for e in live_entries(records) if exists(e["path"])]
    kept = {e["path"] for e in (rank(live, metric) if keep < 0 else rank(live, metric)[:keep])}
    named = dict.fromkeys(r["checkpoint"]["path"] for r in records if "checkpoint" in r)
    return [p for p in named if p not in kept and p.startswith(EVAL_DIR + "/") and ".." not in p.split("/")
            and exists(p)]


# ---- writing ---------------------------------------------------------------------------------------------------
def _clean(value: Any) -> Any:
    return None if isinstance(value, float) and not math.isfinite(value) else value


def append_record(path: str | os.PathLike, record: dict[str, Any]) -> None:
    """Append one line atomically enough for a log: a torn last line is cut first, then the whole line goes in
    one write and is fsynced (a kill -9 leaves at most a torn last line, which readers leave out)."""
    path = os.fspath(path)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    drop_torn_line(path)
    data = (json.dumps(record, allow_nan=False) + "\n").encode()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    finally:
        os.close(fd)


def _link_or_copy(source: Path, target: Path) -> None:
    """``target`` becomes a second name of ``source`` (a copy where hard links fail), replaced atomically."""
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.exists() and os.path.samefile(source, target):
        return
    tmp = target.parent / f".tmp-link-{os.getpid()}-{target.name}"   # .tmp-*.ckpt: AtomicCheckpointIO sweeps it
    if tmp.exists():
        tmp.unlink()
    try:
        os.link(source, tmp)
    except OSError:
        shutil.copyfile(source, tmp)
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
    os.replace(tmp, target)


# ---- resolving `best` ------------------------------------------------------------------------------------------
@dataclass
class Best:
    """The resolved best checkpoint of a run: its entry, its file, and the better-ranked entries whose file is gone."""

    run_dir: Path
    entry: dict[str, Any]
    skipped: list[dict[str, Any]] = field(default_factory=list)

    @property
    def file(self) -> Path:
        return self.run_dir / self.entry["path"]


def best_checkpoint(run_dir: str | os.PathLike, metric: str = "success_rate") -> Best:
    """The best checkpoint in ``run_dir``'s registry by ``metric``; RegistryError (one line) when there is none,
    ConfigError naming ``best_metric`` when the registry has no such metric."""
    run_dir = Path(run_dir)
    path = registry_path(run_dir)
    if not path.is_file():
        raise RegistryError(f"--ckpt_path best: no checkpoint registry, {path} does not exist (fit writes it at every "
                            f"evaluation: train with evaluations on, or pass --ckpt_path last or a FILE)")
    entries = live_entries(read_records(path))
    if not entries:
        raise RegistryError(f"--ckpt_path best: {path} records no evaluated checkpoint yet (let fit evaluate: "
                            f"trainer.val_check_interval; or pass --ckpt_path last or a FILE)")
    problem = metric_problem(metric, known_metrics(entries))
    if problem is not None:
        raise ConfigError("best_metric", f"{problem} (the metrics of {path})")
    entry, skipped = choose_best(entries, metric, lambda rel: (run_dir / rel).is_file())
    if entry is None:
        raise RegistryError(f"--ckpt_path best: none of the {len(entries)} checkpoint files named in {path} exists "
                            f"any more (pass --ckpt_path last or a FILE)")
    return Best(run_dir, entry, skipped)


def _fmt(value: Any) -> str:
    return "n/a" if value is None else f"{value:.4g}" if isinstance(value, float) else str(value)


def describe(best: Best, metric: str) -> list[str]:
    """What ``--ckpt_path best`` chose and passed over, one line each."""
    e = best.entry
    shown = dict.fromkeys([metric, "success_rate", "return_mean"])
    scores = ", ".join(f"{m} {_fmt(e['metrics'].get(m))}" for m in shown)
    lines = []
    if best.skipped:
        steps = ", ".join(str(s["global_step"]) for s in best.skipped)
        lines.append(f"--ckpt_path best: passed over step(s) {steps}, ranked higher by {metric}: their files are gone "
                     f"(kept: the best best_keep by fit's best_metric)")
    lines.append(f"--ckpt_path best (by {metric}): step {e['global_step']} (env steps {e['env_steps']}; {scores}): "
                 f"{best.file}")
    return lines


def table_rows(entries: list[dict[str, Any]], metric: str, exists: Callable[[str], bool],
               limit: int = 12) -> tuple[list[dict[str, Any]], int]:
    """(rows to show, by step, each ``{"entry", "best", "kept"}``; how many entries are left out): all of them up to
    ``limit``, else the latest three, the best, and the next best by ``metric`` up to ``limit``."""
    best, _ = choose_best(entries, metric, exists)
    shown = entries
    if len(entries) > limit:
        keep = {e["global_step"] for e in entries[-3:]} | ({best["global_step"]} if best is not None else set())
        for e in rank(entries, metric):
            if len(keep) >= limit:
                break
            keep.add(e["global_step"])
        shown = [e for e in entries if e["global_step"] in keep]
    rows = [{"entry": e, "best": e is best, "kept": exists(e["path"])} for e in shown]
    return rows, len(entries) - len(shown)


def print_registry_table(run_dir: str | os.PathLike, metric: str, file=None) -> None:
    """The registry as a compact table (step, env steps, success, return, file, best marked), on stderr."""
    from rich.console import Console
    from rich.table import Table

    run_dir = Path(run_dir)
    path = registry_path(run_dir)
    entries = live_entries(read_records(path)) if path.is_file() else []
    if not entries:
        return
    rows, left_out = table_rows(entries, metric, lambda rel: (run_dir / rel).is_file())
    table = Table(box=None, pad_edge=False, header_style="bold")
    columns = ["", "step", "env steps", "success", "return"] + ([metric] if metric not in CORE_METRICS[:2] else [])
    for name in columns:
        table.add_column(name, justify="right")
    table.add_column("file")
    for row in rows:
        e = row["entry"]
        m = e.get("metrics", {})
        values = [_fmt(m.get("success_rate")), _fmt(m.get("return_mean"))]
        values += [_fmt(m.get(metric))] if len(columns) > 5 else []
        table.add_row("best" if row["best"] else "", str(e["global_step"]), str(e["env_steps"]), *values,
                      e["path"] if row["kept"] else "(not kept)")
    console = Console(file=file or sys.stderr, width=max(100, shutil.get_terminal_size().columns),
                      highlight=False, markup=False, emoji=False)
    console.print(f"checkpoint registry ({path}), best by {metric}", soft_wrap=True)
    console.print(table)
    if left_out:
        console.print(f"({left_out} more evaluation(s) in {path})")


# ---- the callback ---------------------------------------------------------------------------------------------
class CheckpointRegistry(Checkpoint):
    """Records every evaluation of ``fit`` with a checkpoint file of the evaluated step where that file is among the
    best kept, and deletes the others (module docstring). A ``Checkpoint`` so that Lightning runs it after
    ``ModelCheckpoint``; rank 0 writes, and a save it needs is made by every rank together.

    Args:
        run_dir: the run's version directory.
        best_metric: what ``best`` ranks by (``known_metrics``).
        best_keep: how many of the best files to keep (-1: every evaluated checkpoint's).
        training_log: where the training wall time comes from (``TrainingLog``), if any.
    """

    def __init__(self, run_dir: str | os.PathLike, best_metric: str = "success_rate", best_keep: int = 3,
                 training_log=None):
        if isinstance(best_keep, bool) or not isinstance(best_keep, int) or best_keep == 0 or best_keep < -1:
            raise ValueError(f"CheckpointRegistry: best_keep must be -1 (all) or an int >= 1, got {best_keep!r}")
        self.run_dir = Path(run_dir)
        self.path = registry_path(self.run_dir)
        self.best_metric, self.best_keep, self.training_log = best_metric, best_keep, training_log

    def on_train_start(self, trainer, pl_module) -> None:
        # a registry from an earlier segment: entries beyond the step this one starts from are superseded
        if trainer.is_global_zero and self.path.is_file():
            append_record(self.path, {"segment": {
                "global_step": trainer.global_step, "resumed_from": None if trainer.ckpt_path is None
                else _relative(trainer.ckpt_path, self.run_dir), "started_at": _now()}})

    def on_validation_end(self, trainer, pl_module) -> None:
        fn = trainer.state.fn
        if trainer.sanity_checking or fn not in ("fit", "validate"):
            return
        metrics = {k.split("/", 1)[1]: _clean(float(v)) for k, v in trainer.callback_metrics.items()
                   if k.startswith("eval/")}
        if not metrics:
            return
        step = trainer.global_step
        entry = {"path": eval_checkpoint_name(step), "global_step": step, "opt_steps": int(pl_module.opt_steps),
                 "env_steps": int(pl_module.env_steps), "metrics": metrics,
                 "wall_time_s": getattr(self.training_log, "wall_time_s", None), "written_at": _now(),
                 "linked_from": None}
        target = self.run_dir / entry["path"]
        action, source = None, None
        if trainer.is_global_zero:
            source = self._file_of_step(trainer, step)
            action = self._action(entry, source, can_save=fn == "fit")
        if fn == "fit" and trainer.world_size > 1:   # rank 0 alone knows; a save is every rank's or none
            action = trainer.strategy.broadcast(action, src=0)
        if action == "save":
            trainer.save_checkpoint(target, weights_only=False)
        if not trainer.is_global_zero or action is None:
            return
        if action == "link":
            _link_or_copy(Path(source), target)
            entry["linked_from"] = _relative(source, self.run_dir)
        elif action == "skip":
            target.unlink(missing_ok=True)   # a superseded segment's file of this step must not stand for this entry
        append_record(self.path, {"checkpoint": entry})
        self._rotate()

    def _action(self, entry: dict[str, Any], source: str | None, can_save: bool) -> str | None:
        """What the evaluated step's file needs (rank 0): "skip" when it would not be among the ``best_keep`` kept
        (no write only to delete it: the entry is recorded, without a file), "link" to the file written at this
        step, "save" one now; None when none can be had (after training: the evaluation is not recorded)."""
        records = read_records(self.path) if self.path.is_file() else []
        rel = entry["path"]
        if rel in files_to_remove(records + [{"checkpoint": entry}], self.best_metric, self.best_keep,
                                  lambda p: p == rel or (self.run_dir / p).is_file()):
            return "skip"
        if source is not None:
            return "link"
        if can_save:
            return "save"
        if not any(e["global_step"] == entry["global_step"] for e in live_entries(records)):
            print(f"registry: no checkpoint file holds step {entry['global_step']}; this evaluation is not recorded",
                  file=sys.stderr, flush=True)
        return None

    def _file_of_step(self, trainer, step: int) -> str | None:
        """A checkpoint this process wrote at ``step`` that is still there (``AtomicCheckpointIO`` records them)."""
        saved = getattr(trainer.strategy.checkpoint_io, "saved_steps", {})
        eval_dir = os.path.abspath(self.run_dir / EVAL_DIR)
        found = [path for path, saved_step in saved.items()
                 if saved_step == step and os.path.dirname(path) != eval_dir and os.path.isfile(path)]
        found.sort(key=lambda path: os.path.basename(path) == "last.ckpt")   # a step file's name says more
        return found[0] if found else None

    def _rotate(self) -> None:
        records = read_records(self.path)
        for rel in files_to_remove(records, self.best_metric, self.best_keep, lambda p: (self.run_dir / p).is_file()):
            (self.run_dir / rel).unlink(missing_ok=True)


def _relative(path: str | os.PathLike, run_dir: Path) -> str:
    try:
        return Path(os.path.abspath(path)).relative_to(os.path.abspath(run_dir)).as_posix()
    except ValueError:   # a checkpoint from outside the run
        return os.fspath(path)


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
