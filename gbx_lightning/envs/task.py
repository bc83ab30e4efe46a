"""Task: what a game is to an agent. GameBoyEnv is the engine (Game Boys stepped together, pixels in,
buttons out) and names no game; a Task says where episodes start, which screens end them, what each
step pays and which RAM values are counted per episode.

    Task(rom=None,                     # the ROM it was made for: a built-in name or a .gb path (the env's
                                       # rom option wins); None: the env's rom must be given
         start=Start(state=None,       # a PyBoy .state, a state file of ours, or a list of them; None: power-on
                     inputs=None,      # buttons pressed over the start frames: a trace file, trace text or
                                       # [[frame, buttons], ...] ("from frame F on, hold these buttons")
                     frames=0,         # frames run after power-on / loading the state
                     variants=4,       # start states per state: `variant_frames` idle frames apart
                     variant_frames=None,    # None: the env's frames_per_step
                     ram=None,         # {RAM map field or WRAM address: value} written after `frames`
                     score=0.0),       # the pool's score of its states: a later stage's worth (train_starts)
         goal=Template(path, tau=None, k_consecutive=None),   # success screen (tools/capture_goal.py);
         fail=Template(...),                                  # failure screen; None values: the PNG's JSON
         ram_goal=RamGoal(field, at_least),   # success read from RAM: a RAM map field's value >= at_least
         reward="goal",                # a preset or a list of reward items (envs/reward_transforms.py)
         step_cost=None, alpha=None, goal_bonus=None,   # the goal terms' values; None: the goal's JSON
         fail_penalty=-1.0,
         counters=[Counter(name, address, size=1, bits=None)],   # reported per episode in info[name]
         ram_map=None,                 # the game's RAM map (envs/ram_map.py): a built-in name, a YAML file or a
                                       # mapping; reward items, counters and milestones name its fields
         milestones=[Milestone(name, kind, field=None, fields=None, at_least=None, bits=4096)],
                                       # per-episode progress in info[name]: distinct / peak / bits / increase
         pool=Pool(score, ...),        # states harvested on progress, sampled on reset, swarmed (envs/features/pool.py)
         train_starts=TrainStarts(starts=[Start(...), ...], share=0.5,    # training-only starts (a curriculum):
                                  adapt=None),                    # a reset takes one with probability share;
                                       # evaluation starts at `start`; adapt: drawn by need (features/curriculum.py)
         requires=[])                  # fields a user must set (e.g. start.state of a game we cannot ship)

Where a task comes from (``load_task``; every spelling ends as the same checked Task):
  * a built-in name, ``orchard/level1``: the file ``gbx_lightning/roms/tasks/orchard/level1.yaml``;
  * a YAML file path: its fields as above (``start``, ``goal``... as mappings; a template may be just
    its PNG path); relative paths in it are relative to the file;
  * a mapping of fields, e.g. inline in a config; ``base: NAME_OR_FILE`` starts from that task and
    the mapping's fields replace its own (``start``, ``goal`` and ``fail`` field by field, so a
    start state over orchard/level1 would still be followed by its select inputs unless
    ``inputs: null, frames: 0`` say otherwise):
        task: {base: orchard/level3, start: {frames: 47}, reward: [{name: success_bonus}]}

Counters: a WRAM number (``size`` bytes, little endian, wrapping at ``2**bits``; or a RAM map ``field``) whose
increase over the episode is reported when it ends (``info[name]``, int32, 0 where nothing ended): orchard's
``seeds_eaten``. Its state rides in the env's checkpoints only when the task has counters.

Milestones (``envs/features/milestones.py``): what a long episode achieved, per episode, from the RAM map's fields
(``info[name]``, the logs' ``episode_<name>_mean``): ``distinct`` tuples seen (maps visited), the ``peak`` rise of
a number (levels), the ``bits`` newly set (badges, events), the ``increase`` of a counter; ``at_least: k`` makes
one a flag (1 once it reached k). ``ram_goal`` (``envs/features/ram_goal.py``) ends an episode as a success where
a field's value reaches ``at_least``. A ``pool`` (``envs/features/pool.py``) harvests states whose milestones rose into a
device-side pool that resets sample from, and swarms the best env's state to others. ``train_starts`` are start
recipes that only training resets draw (a ``share`` of them): later stages of a game from the first update on, while
evaluation starts from ``start``; a recipe's ``ram`` writes RAM map fields after its frames (a state inputs alone do
not reach); ``adapt`` draws them by need, the starts that pass least most (``envs/features/curriculum.py``).

Checks: ``load_task`` checks every value (one-line ``OptionError`` naming ``task.<field>``);
``check_task`` checks the files against the ROM (start states, input trace, templates), both in
milliseconds, before any kernel work (``task_checks.py``). The dataclasses are ``task_types.py``'s;
this file reads a task from its spellings.
"""
from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Mapping
from pathlib import Path

import yaml

from gbx_lightning.roms import available_roms, available_tasks, task_path

from .base import OptionError
from .ram_map import load_ram_map
from .task_checks import (check_task, check_values, counter_location, file_exists, is_state_file, load_start_state,
                          missing_required, short)
from .task_types import (Adapt, Counter, Heatmap, Milestone, Pool, RamGoal, Start, Swarm, Task, TaskFields, Template,
                         TrainStarts, start_recipes, start_states)

__all__ = ["Counter", "Heatmap", "Milestone", "Pool", "RamGoal", "Start", "Swarm", "Task", "TaskFields", "Template",
           "TrainStarts", "check_task", "counter_location", "is_state_file", "load_start_state", "load_task",
           "missing_required", "start_recipes", "start_states"]


def load_task(spec: Task | str | os.PathLike | Mapping | None) -> Task:
    """A Task from a Task, a built-in name (``available_tasks()``; it wins over a file of that name), a YAML
    file or a mapping of fields (module docstring); every value checked. OptionError("task.<field>", ...) names
    the first problem."""
    if spec is None:
        task = Task()
    elif isinstance(spec, Task):
        task = _copy(spec)
    elif isinstance(spec, (str, os.PathLike)):
        task = _read(spec, "task", check=True)
    elif isinstance(spec, Mapping):
        task = _from_mapping(spec, "task", None)
    else:
        raise OptionError("task", f"must be a built-in task name ({', '.join(available_tasks())}), a task YAML file "
                                  f"or a mapping of task fields, got {short(spec)}")
    check_values(task, "task")
    return task


def _copy(task: Task) -> Task:
    def listed(value):
        return list(value) if isinstance(value, list) else value
    return dataclasses.replace(task, start=dataclasses.replace(task.start) if isinstance(task.start, Start) else
                               task.start, counters=listed(task.counters), milestones=listed(task.milestones),
                               requires=listed(task.requires))


def _read(spec, where: str, check: bool = False, chain: tuple[str, ...] = ()) -> Task:
    """A built-in task by name, or a task YAML file (``check``: its values too, errors naming the file; a base
    is checked with what is built on it). ``chain``: the files whose ``base`` led here (a loop is refused)."""
    text = os.fspath(spec)
    path = task_path(text)
    if path is None:
        try:
            found = Path(text).is_file()
        except (OSError, ValueError):   # a name the file system refuses (too long, a NUL byte)
            found = False
        if not found:
            raise OptionError(where, f"is neither a built-in task ({', '.join(available_tasks())}) nor a task file: "
                                     f"no file at {short(text)}")
        path = Path(text)
    key = os.path.realpath(path)
    if key in chain:
        names = [os.path.basename(c) for c in (*chain, key)]
        raise OptionError(where, f"loops back to a task it is the base of: {' -> '.join(names)} (a base may not lead "
                                 f"back to the task itself)")
    try:
        data = yaml.safe_load(path.read_text())
    except (yaml.YAMLError, UnicodeDecodeError, OSError) as err:
        raise OptionError(where, f"{path}: not a readable YAML task file ({' '.join(str(err).split())})") from None
    if not isinstance(data, Mapping):
        raise OptionError(where, f"{path}: must hold a mapping of task fields, got {type(data).__name__}")
    try:
        task = _from_mapping(data, where, path.parent, (*chain, key))
        if not task.name or "base" in data and "name" not in data:
            task.name = text
        if check:
            check_values(task, where)
    except OptionError as err:
        where_from = "" if re.search(r" \(in [^()]+\)$", err.message) else f" (in {path})"
        raise OptionError(err.option, f"{err.message}{where_from}") from None   # the innermost file names it
    return task


def _from_mapping(data: Mapping, where: str, base_dir: Path | None, chain: tuple[str, ...] = ()) -> Task:
    """The fields of ``data`` over Task() (or over its ``base``); paths relative to ``base_dir`` (a file's)."""
    data = dict(data)
    task = Task()
    if "base" in data:
        base = data.pop("base")
        if not isinstance(base, (str, os.PathLike)):
            raise OptionError(f"{where}.base", f"must be a built-in task name ({', '.join(available_tasks())}) or "
                                               f"a task file, got {short(base)}")
        if base_dir is not None and task_path(os.fspath(base)) is None:
            base = _beside(base_dir, base)  # a file beside this one
        task = _read(base, f"{where}.base", chain=chain)
        changed = [str(k) for k in data if k != "name"]
        task.name = f"{task.name} with {', '.join(changed)}" if changed else task.name
    fields = [f.name for f in dataclasses.fields(Task)]
    for key, value in data.items():
        at = f"{where}.{key}"
        if key not in fields:
            raise OptionError(at, f"is not a field of Task; fields: {', '.join(['base', *fields])}")
        if key == "start":
            value = _merge(Start, task.start, value, at, base_dir)
        elif key in ("goal", "fail"):
            value = _template(getattr(task, key), value, at, base_dir)
        elif key in ("counters", "milestones"):
            cls = Counter if key == "counters" else Milestone
            if not isinstance(value, list):
                second = "address" if cls is Counter else "kind"
                raise OptionError(at, f"must be a list of {{name: ..., {second}: ...}} mappings, got {short(value)}")
            value = [_merge(cls, None, item, f"{at}[{i}]", None) for i, item in enumerate(value)]
        elif key == "ram_map":
            value = load_ram_map(value, at, base_dir)
        elif key == "pool":
            value = _pool(value, at)
        elif key == "train_starts":
            value = _train_starts(value, at, base_dir)
        elif key == "heatmap":
            value = None if value is None else _merge(Heatmap, None, value, at, None)
        elif key == "ram_goal":
            value = None if value is None else _merge(RamGoal, None, value, at, None)
        elif key == "rom" and isinstance(value, str) and base_dir is not None and value not in available_roms():
            value = _beside(base_dir, value)
        setattr(task, key, value)
    return task


def _merge(cls, current, value, where: str, base_dir: Path | None):
    """A mapping of ``cls``'s fields over ``current`` (or over cls's defaults); None keeps the defaults."""
    if value is None and cls is Start:
        return Start()
    if not isinstance(value, Mapping):
        raise OptionError(where, f"must be a mapping of {cls.__name__} fields "
                                 f"({', '.join(f.name for f in dataclasses.fields(cls))}), got {short(value)}")
    names = [f.name for f in dataclasses.fields(cls)]
    for key in value:
        if key not in names:
            raise OptionError(f"{where}.{key}", f"is not a field of {cls.__name__}; fields: {', '.join(names)}")
    values = dict(value)
    if base_dir is not None and cls is Start:
        values = _start_paths(values, base_dir)
    if current is not None:
        return dataclasses.replace(current, **values)
    missing = [f.name for f in dataclasses.fields(cls) if f.default is dataclasses.MISSING
               and f.default_factory is dataclasses.MISSING and f.name not in values]
    if missing:
        raise OptionError(f"{where}.{missing[0]}", f"is required by {cls.__name__} (missing)")
    return cls(**values)


def _pool(value, where: str) -> Pool | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        names = ", ".join(f.name for f in dataclasses.fields(Pool))
        raise OptionError(where, f"must be a mapping of Pool fields ({names}) or null, got {short(value)}")
    value = dict(value)
    if isinstance(value.get("swarm"), Mapping):
        value["swarm"] = _merge(Swarm, None, value["swarm"], f"{where}.swarm", None)
    return _merge(Pool, None, value, where, None)


def _train_starts(value, where: str, base_dir: Path | None) -> TrainStarts | None:
    if value is None:
        return None
    if not isinstance(value, Mapping) or not isinstance(value.get("starts"), list):
        raise OptionError(where, f"must be a mapping {{starts: [Start recipe or task, ...], share: 0..1}} or null, "
                                 f"got {short(value)}")
    starts = [_task_start(s, f"{where}.starts[{i}]", base_dir) if isinstance(s, (str, os.PathLike)) else
              _merge(Start, None, s, f"{where}.starts[{i}]", base_dir) for i, s in enumerate(value["starts"])]
    adapt = value.get("adapt")
    if adapt is not None:
        adapt = _merge(Adapt, None, adapt, f"{where}.adapt", None)
    return _merge(TrainStarts, None, {**value, "starts": starts, "adapt": adapt}, where, None)


def _task_start(spec, where: str, base_dir: Path | None) -> Start:
    """The start recipe of a task named in ``train_starts`` (a built-in name or a task file beside this one)."""
    if base_dir is not None and task_path(os.fspath(spec)) is None:
        spec = _beside(base_dir, spec)
    return _read(spec, where).start


def _template(current: Template | None, value, where: str, base_dir: Path | None) -> Template | None:
    if value is None:
        return None
    if isinstance(value, (str, os.PathLike)):
        value = {"path": value}
    if isinstance(value, Mapping) and base_dir is not None and isinstance(value.get("path"), (str, os.PathLike)):
        value = {**value, "path": _beside(base_dir, value["path"])}
    return _merge(Template, current if isinstance(value, Mapping) and "path" not in value else None, value, where,
                  None)


def _start_paths(values: dict, base_dir: Path) -> dict:
    """A task file's start paths, relative to the file (inputs: when it names a file there, not trace text)."""
    state = values.get("state")
    if isinstance(state, str):
        values["state"] = _beside(base_dir, state)
    elif isinstance(state, list):
        values["state"] = [_beside(base_dir, s) if isinstance(s, str) else s for s in state]
    inputs = values.get("inputs")
    if isinstance(inputs, str) and "\n" not in inputs and file_exists(base_dir / inputs):
        values["inputs"] = _beside(base_dir, inputs)
    return values


def _beside(base_dir: Path, path) -> str:
    """``path`` read relative to a task file's folder (an absolute path stays itself)."""
    return os.path.normpath(base_dir / path)
