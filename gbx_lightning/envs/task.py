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
                     variant_frames=None),   # None: the env's frames_per_step
         goal=Template(path, tau=None, k_consecutive=None),   # success screen (tools/capture_goal.py);
         fail=Template(...),                                  # failure screen; None values: the PNG's JSON
         reward="goal",                # a preset or a list of reward items (envs/reward_transforms.py)
         step_cost=None, alpha=None, goal_bonus=None,   # the goal terms' values; None: the goal's JSON
         fail_penalty=-1.0,
         counters=[Counter(name, address, size=1, bits=None)],   # reported per episode in info[name]
         ram_map=None,                 # the game's RAM map (envs/ram_map.py): a built-in name, a YAML file or a
                                       # mapping; reward items, counters and milestones name its fields
         milestones=[Milestone(name, kind, field=None, fields=None, at_least=None, bits=4096)],
                                       # per-episode progress in info[name]: distinct / peak / bits / increase
         pool=Pool(score, ...),        # states harvested on progress, sampled on reset, swarmed (envs/pool.py)
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

Milestones (``envs/milestones.py``): what a long episode achieved, per episode, from the RAM map's fields
(``info[name]``, the logs' ``episode_<name>_mean``): ``distinct`` tuples seen (maps visited), the ``peak`` rise of
a number (levels), the ``bits`` newly set (badges, events), the ``increase`` of a counter; ``at_least: k`` makes
one a flag (1 once it reached k). A ``pool`` (``envs/pool.py``) harvests states whose milestones rose into a
device-side pool that resets sample from, and swarms the best env's state to others.

Checks: ``load_task`` checks every value (one-line ``OptionError`` naming ``task.<field>``);
``check_task`` checks the files against the ROM (start states, input trace, templates), both in
milliseconds, before any kernel work.
"""
from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Required, TypedDict, Union, get_type_hints

import numpy as np
import yaml

from gbx_lightning.checks import number_problem
from gbx_lightning.emu import state as S
from gbx_lightning.emu.buttons import read_trace
from gbx_lightning.emu.pyboy_state import PyBoyStateError, parse_pyboy_state
from gbx_lightning.emu.savestate import STATE_FILE_FORMAT, StateFileError, read_state_file
from gbx_lightning.roms import available_roms, available_tasks, task_path

from .base import OptionError
from .goal import GoalError, load_goal
from .heatmap import check_heatmap
from .ram_map import RamMap, load_ram_map, resolve_field
from .reward_transforms import PRESETS, WRAM, RewardSpecError, check_reward_spec

__all__ = ["Counter", "Milestone", "Pool", "Start", "Swarm", "Task", "TaskFields", "Template", "check_task",
           "is_state_file", "load_start_state", "load_task"]

_ZIP_MAGIC = b"PK\x03\x04"   # our state files are .npz (zip); PyBoy states start with a version byte
# info keys every env reports (base.VecEnv) and GameBoyEnv's own: a counter may not take them
_RESERVED_INFO = ("final_obs", "episode_return", "episode_length", "success", "failed", "trained_return")


@dataclass
class Start:
    """How episodes start: run once per start state, at construction, on a one-env machine; the states
    sit in a cache on the device and ended envs are restored from it."""
    state: str | list[str] | None = None
    inputs: str | list | None = None
    frames: int = 0
    variants: int = 4
    variant_frames: int | None = None


@dataclass
class Template:
    """A screen that ends an episode: the PNG of ``tools/capture_goal.py`` (its JSON beside it gives the
    defaults); matched when mean |screen - template| / 3 over its region < ``tau`` for ``k_consecutive``
    steps (``envs/rewards.py``)."""
    path: str
    tau: float | None = None
    k_consecutive: int | None = None


@dataclass
class Counter:
    """A WRAM number counted per episode: its increase (mod ``2**bits``, ``bits`` default ``8 * size``)
    summed step by step, reported as ``info[name]`` on the step the episode ends. ``field`` (a RAM map name)
    instead of ``address``: its address and size."""
    name: str
    address: int | None = None
    size: Literal[1, 2] = 1
    bits: int | None = None
    field: str | None = None


MILESTONE_KINDS = ("distinct", "peak", "bits", "increase")


@dataclass
class Milestone:
    """Progress of an episode, reported as ``info[name]`` when it ends (``envs/milestones.py``):

        distinct  ``fields``: how many different tuples of their values the episode showed at step ends (its start
                  included; a bitset of ``bits`` cells, exact when the fields fit, else hashed): maps visited
        peak      ``field``: the highest rise of its value (the sum of its numbers) over the episode's start
        bits      ``field``: the highest rise of its number of 1 bits (badges, event flags)
        increase  ``field``: the sum of its step-to-step increases (mod 2**bits: a counter that wraps)

    ``at_least: k``: report 1 where the value reached k, else 0 (a flag: "got the first badge")."""
    name: str
    kind: str
    field: str | int | None = None
    fields: list | None = None
    at_least: int | None = None
    bits: int = 4096


@dataclass
class Swarm:
    """Every ``every`` steps, the best env (highest score, not terminated) is copied to up to ``fraction`` of the
    envs, drawn at random among those scoring less: their episodes end as truncated and restart from its state."""
    every: int = 1000
    fraction: float = 0.25


@dataclass
class Pool:
    """A pool of states harvested from training envs (``envs/pool.py``). ``score``: milestone name -> weight, a
    state's progress (the milestones' sum, carried over from the state an episode started from). A state is
    harvested on a step its score rose (``when: rise``) or rose above every state harvested so far (``record``), at
    most ``per_step`` a step (the best), into ``max_mb`` MB on the device (the lowest-scored, then oldest, state is
    replaced when full). A reset starts from a pooled state with probability ``sample`` (weight
    ``(1 + score) ** priority``), else from the task's start states. ``swarm``: see Swarm (null: off)."""
    score: dict = field(default_factory=dict)
    max_mb: float = 64.0
    per_step: int = 4
    when: str = "rise"
    sample: float = 0.5
    priority: float = 0.0
    swarm: Swarm | None = None


@dataclass
class Heatmap:
    """A map-visit heatmap for the dashboards (``envs/heatmap.py``): visits counted at each (``y``, ``x``) of
    the RAM map's fields, over all training envs, drawn as the image ``agent/visit_heatmap``; with ``map``, only
    where that field equals ``map_value`` (one map of a game with many). ``cell``: coordinates per grid cell (8 for
    pixel coordinates on 8x8 tiles)."""
    y: str | int
    x: str | int
    map: str | int | None = None
    map_value: int = 0
    cell: int = 1


@dataclass
class Task:
    """A game's task (module docstring): start recipe, goal/fail templates, reward, counters."""
    rom: str | None = None
    start: Start = field(default_factory=Start)
    goal: Template | None = None
    fail: Template | None = None
    reward: str | list[dict] = "goal"
    step_cost: float | None = None
    alpha: float | None = None
    goal_bonus: float | None = None
    fail_penalty: float = -1.0
    counters: list[Counter] = field(default_factory=list)
    ram_map: RamMap | None = None
    milestones: list[Milestone] = field(default_factory=list)
    pool: Pool | None = None
    heatmap: Heatmap | None = None
    requires: list[str] = field(default_factory=list)
    name: str = ""        # a label for logs and repr (a built-in task's name, a file's path)


# ---------------------------------------------------------------------------------------------- config types
def _fields_of(cls, doc: str, replace: dict | None = None, required: tuple[str, ...] = (),
               extra: dict | None = None) -> type:
    """A TypedDict with ``cls``'s fields, each optional but ``required``: a mapping of some of the fields, as a
    config spells a task. The parser checks every key and value type against it (an unknown field, a string for
    an int), and keeps only the keys given, so a ``base`` task's fields stay where the mapping says nothing.
    Built from the dataclass, so a new field is spelt in configs at once."""
    hints = get_type_hints(cls)
    fields = {}
    for f in dataclasses.fields(cls):
        kind = (replace or {}).get(f.name, hints[f.name])
        fields[f.name] = Required[kind] if f.name in required else kind
    spec = TypedDict(f"{cls.__name__}Fields", {**fields, **(extra or {})}, total=False)
    spec.__doc__ = doc
    return spec


StartFields = _fields_of(Start, "Start's fields, as a config spells them (any of them; the rest: the base's, or "
                                "Start's defaults).")
TemplateFields = _fields_of(Template, "A template's fields (over the base's template, or path required).")
CounterFields = _fields_of(Counter, "A counter's fields (name, and address or a RAM map field, required).",
                          required=("name",))
MilestoneFields = _fields_of(Milestone, "A milestone's fields (name and kind required).", required=("name", "kind"))
HeatmapFields = _fields_of(Heatmap, "A heatmap's fields (y and x required).", required=("y", "x"))
SwarmFields = _fields_of(Swarm, "Swarm's fields (the rest: Swarm's defaults).")
PoolFields = _fields_of(Pool, "A state pool's fields (score required).", required=("score",),
                        replace={"score": dict[str, float], "swarm": Union[SwarmFields, None]})
TaskFields = _fields_of(Task, "A task as a mapping of its fields (module docstring); ``base`` names the task they "
                              "replace fields of.",
                        replace={"start": Union[StartFields, None], "goal": Union[str, TemplateFields, None],
                                 "fail": Union[str, TemplateFields, None], "counters": list[CounterFields],
                                 # a built-in map's name, a RAM map file, or one inline (ram_map.py checks it)
                                 "ram_map": Union[str, dict, None], "milestones": list[MilestoneFields],
                                 "pool": Union[PoolFields, None], "heatmap": Union[HeatmapFields, None]},
                        extra={"base": str})   # a built-in task name or a task file


# ---------------------------------------------------------------------------------------------- reading
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
                                  f"or a mapping of task fields, got {_short(spec)}")
    _check_values(task, "task")
    return task


def _copy(task: Task) -> Task:
    def listed(value):
        return list(value) if isinstance(value, list) else value
    return dataclasses.replace(task, start=dataclasses.replace(task.start) if isinstance(task.start, Start) else
                               task.start, counters=listed(task.counters), milestones=listed(task.milestones),
                               requires=listed(task.requires))


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _read(spec, where: str, check: bool = False) -> Task:
    """A built-in task by name, or a task YAML file (``check``: its values too, errors naming the file; a base
    is checked with what is built on it)."""
    text = os.fspath(spec)
    path = task_path(text)
    if path is None:
        try:
            found = Path(text).is_file()
        except (OSError, ValueError):   # a name the file system refuses (too long, a NUL byte)
            found = False
        if not found:
            raise OptionError(where, f"is neither a built-in task ({', '.join(available_tasks())}) nor a task file: "
                                     f"no file at {_short(text)}")
        path = Path(text)
    try:
        data = yaml.safe_load(path.read_text())
    except (yaml.YAMLError, UnicodeDecodeError, OSError) as err:
        raise OptionError(where, f"{path}: not a readable YAML task file ({' '.join(str(err).split())})") from None
    if not isinstance(data, Mapping):
        raise OptionError(where, f"{path}: must hold a mapping of task fields, got {type(data).__name__}")
    try:
        task = _from_mapping(data, where, path.parent)
        if not task.name or "base" in data and "name" not in data:
            task.name = text
        if check:
            _check_values(task, where)
    except OptionError as err:
        raise OptionError(err.option, f"{err.message} (in {path})") from None
    return task


def _from_mapping(data: Mapping, where: str, base_dir: Path | None) -> Task:
    """The fields of ``data`` over Task() (or over its ``base``); paths relative to ``base_dir`` (a file's)."""
    data = dict(data)
    task = Task()
    if "base" in data:
        base = data.pop("base")
        if not isinstance(base, (str, os.PathLike)):
            raise OptionError(f"{where}.base", f"must be a built-in task name ({', '.join(available_tasks())}) or "
                                               f"a task file, got {_short(base)}")
        if base_dir is not None and task_path(os.fspath(base)) is None:
            base = _beside(base_dir, base)  # a file beside this one
        task = _read(base, f"{where}.base")
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
                raise OptionError(at, f"must be a list of {{name: ..., {second}: ...}} mappings, got {_short(value)}")
            value = [_merge(cls, None, item, f"{at}[{i}]", None) for i, item in enumerate(value)]
        elif key == "ram_map":
            value = load_ram_map(value, at, base_dir)
        elif key == "pool":
            value = _pool(value, at)
        elif key == "heatmap":
            value = None if value is None else _merge(Heatmap, None, value, at, None)
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
                                 f"({', '.join(f.name for f in dataclasses.fields(cls))}), got {_short(value)}")
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
        raise OptionError(where, f"must be a mapping of Pool fields ({names}) or null, got {_short(value)}")
    value = dict(value)
    if isinstance(value.get("swarm"), Mapping):
        value["swarm"] = _merge(Swarm, None, value["swarm"], f"{where}.swarm", None)
    return _merge(Pool, None, value, where, None)


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
    if isinstance(inputs, str) and "\n" not in inputs and _exists(base_dir / inputs):
        values["inputs"] = _beside(base_dir, inputs)
    return values


def _beside(base_dir: Path, path) -> str:
    """``path`` read relative to a task file's folder (an absolute path stays itself)."""
    return os.path.normpath(base_dir / path)


def _exists(path: Path) -> bool:
    try:
        return path.is_file()
    except (OSError, ValueError):
        return False


# ---------------------------------------------------------------------------------------------- values
def _number(where: str, value, **bounds) -> None:
    problem = number_problem(value, **bounds)
    if problem is not None:
        raise OptionError(where, problem)


def _is_path(value) -> bool:
    return isinstance(value, (str, os.PathLike)) and os.fspath(value) != ""


def _check_values(task: Task, where: str) -> None:
    """Every field's type and range (no file is read here but user reward items' modules, imported)."""
    if not isinstance(task.name, str):
        raise OptionError(f"{where}.name", f"must be a string, got {_short(task.name)}")
    if task.rom is not None and not _is_path(task.rom):
        raise OptionError(f"{where}.rom", f"must be a built-in ROM name ({', '.join(available_roms())}) or a .gb "
                                          f"file path, got {_short(task.rom)}")
    s, at = task.start, f"{where}.start"
    if not isinstance(s, Start):
        raise OptionError(at, f"must be a Start, got {_short(s)}")
    states = s.state if isinstance(s.state, list) else [s.state]
    if s.state is not None and (not states or not all(_is_path(p) for p in states)):
        raise OptionError(f"{at}.state", f"must be a savestate path, a list of them, or null (power-on), got "
                                         f"{_short(s.state)}")
    if s.inputs is not None and not isinstance(s.inputs, (str, os.PathLike, list)):
        raise OptionError(f"{at}.inputs", f"must be a trace file, trace text or a list of [frame, buttons] pairs, "
                                          f"got {_short(s.inputs)}")
    _number(f"{at}.frames", s.frames, low=0, integer=True)
    _number(f"{at}.variants", s.variants, low=1, high=256, integer=True)
    _number(f"{at}.variant_frames", s.variant_frames, low=1, integer=True, none="null")
    for name in ("goal", "fail"):
        t, at = getattr(task, name), f"{where}.{name}"
        if t is None:
            continue
        if not isinstance(t, Template):
            raise OptionError(at, f"must be a Template, a PNG path or null, got {_short(t)}")
        if not _is_path(t.path):
            raise OptionError(f"{at}.path", f"must be a goal template PNG path (tools/capture_goal.py), got "
                                            f"{_short(t.path)}")
        _number(f"{at}.tau", t.tau, low=0.0, high=1.0, low_open=True, none="null")
        _number(f"{at}.k_consecutive", t.k_consecutive, low=1, integer=True, none="null")
    for name in ("step_cost", "alpha", "goal_bonus"):
        _number(f"{where}.{name}", getattr(task, name), none="null")
    _number(f"{where}.fail_penalty", task.fail_penalty, high=0.0)
    if task.ram_map is not None and not isinstance(task.ram_map, RamMap):
        raise OptionError(f"{where}.ram_map", f"must be a RamMap (envs/ram_map.py), got {_short(task.ram_map)}")
    _check_counters(task.counters, f"{where}.counters", task.ram_map)
    _check_milestones(task.milestones, f"{where}.milestones", task.ram_map, [c.name for c in task.counters])
    _check_pool(task.pool, f"{where}.pool", [m.name for m in task.milestones])
    if task.heatmap is not None:
        if not isinstance(task.heatmap, Heatmap):
            raise OptionError(f"{where}.heatmap", f"must be a mapping of y, x (RAM map fields), got {_short(task.heatmap)}")
        check_heatmap(task.heatmap, task.ram_map, f"{where}.heatmap")
    _check_requires(task, where)
    reward = task.reward
    try:
        if isinstance(reward, str) and reward in PRESETS:
            pass
        elif isinstance(reward, str) or not isinstance(reward, (list, tuple)):
            raise RewardSpecError("reward", f"must be one of {PRESETS} or a list of reward items, got {_short(reward)}")
        else:
            check_reward_spec(reward, has_goal=task.goal is not None, has_fail=task.fail is not None,
                              ram_map=task.ram_map)
    except RewardSpecError as err:
        raise OptionError(f"{where}.{err.field}", err.message) from None


def _check_counters(counters, at: str, ram_map: RamMap | None = None) -> None:
    if not isinstance(counters, list):
        raise OptionError(at, f"must be a list of counters, got {_short(counters)}")
    seen = set()
    for i, c in enumerate(counters):
        where = f"{at}[{i}]"
        if not isinstance(c, Counter):
            raise OptionError(where, f"must be a Counter, got {_short(c)}")
        if not isinstance(c.name, str) or not c.name.isidentifier() or c.name in _RESERVED_INFO or c.name in seen:
            raise OptionError(f"{where}.name", f"must be a new identifier (not one of {list(_RESERVED_INFO)} nor "
                                               f"another counter's), got {_short(c.name)}")
        seen.add(c.name)
        if (c.address is None) == (c.field is None):
            raise OptionError(f"{where}.address", "or field (a RAM map name): give exactly one of them")
        if c.field is not None:
            size = counter_location(c, ram_map, where)[1]
        else:
            size = c.size
            if c.size not in (1, 2) or isinstance(c.size, bool):
                raise OptionError(f"{where}.size", f"must be one of [1, 2] (bytes, little endian), got "
                                                   f"{_short(c.size)}")
            if isinstance(c.address, bool) or not isinstance(c.address, int) or not \
                    WRAM[0] <= c.address <= WRAM[1] - c.size + 1:
                raise OptionError(f"{where}.address", f"must be a WRAM address, an int in 0x{WRAM[0]:X}.."
                                                      f"0x{WRAM[1] - c.size + 1:X}, got {_short(c.address)}")
        _number(f"{where}.bits", c.bits, low=1, high=8 * size, integer=True, none="null")


def counter_location(c: Counter, ram_map: RamMap | None, where: str = "task.counters") -> tuple[int, int]:
    """(address, size) of a counter: its own, or its RAM map field's (one number of 1 or 2 bytes, little endian)."""
    if c.field is None:
        return c.address, c.size
    f = resolve_field(ram_map, c.field, f"{where}.field")
    if f.count != 1 or f.size > 2 or f.endian != "little" and f.size > 1 or f.bcd:
        raise OptionError(f"{where}.field", f"must be one binary number of 1 or 2 bytes, little endian, got "
                                            f"{f.describe()} (a milestone of kind increase reads any field)")
    return f.address, f.size


_POOL_INFO = ("from_pool",)   # GameBoyEnv reports it with a pool: whether the ended episode started from a pooled state


def _check_milestones(milestones, at: str, ram_map: RamMap | None, counters: list[str]) -> None:
    if not isinstance(milestones, list):
        raise OptionError(at, f"must be a list of milestones, got {_short(milestones)}")
    seen = set(counters)
    for i, m in enumerate(milestones):
        where = f"{at}[{i}]"
        if not isinstance(m, Milestone):
            raise OptionError(where, f"must be a Milestone, got {_short(m)}")
        if not isinstance(m.name, str) or not m.name.isidentifier() or m.name in (*_RESERVED_INFO, *_POOL_INFO) \
                or m.name in seen:
            raise OptionError(f"{where}.name", f"must be a new identifier (not one of "
                                               f"{list(_RESERVED_INFO + _POOL_INFO)} nor a counter's or another "
                                               f"milestone's), got {_short(m.name)}")
        seen.add(m.name)
        if m.kind not in MILESTONE_KINDS:
            raise OptionError(f"{where}.kind", f"must be one of {list(MILESTONE_KINDS)}, got {_short(m.kind)}")
        if m.kind == "distinct":
            refs = m.fields if m.fields is not None else [m.field] if m.field is not None else None
            if m.field is not None and m.fields is not None or not isinstance(refs, list) or not refs:
                raise OptionError(f"{where}.fields", f"must list the fields whose distinct tuples are counted (e.g. "
                                                     f"[map]), got {_short(m.fields if m.field is None else m.field)}")
            for j, ref in enumerate(refs):
                f = resolve_field(ram_map, ref, f"{where}.fields[{j}]")
                if f.count != 1:
                    raise OptionError(f"{where}.fields[{j}]", f"must be one number per env, got {f.describe()}")
            bits = m.bits
            if isinstance(bits, bool) or not isinstance(bits, int) or not 64 <= bits <= 1 << 24 or bits & (bits - 1):
                raise OptionError(f"{where}.bits", f"must be a power of two in 64..{1 << 24}, got {_short(bits)}")
        else:
            if m.fields is not None or m.field is None:
                raise OptionError(f"{where}.field", f"must name one RAM map field ({m.kind} reads one), got "
                                                    f"{_short(m.field if m.fields is None else m.fields)}")
            f = resolve_field(ram_map, m.field, f"{where}.field")
            if m.kind == "increase" and f.count != 1:
                raise OptionError(f"{where}.field", f"must be one number (a counter), got {f.describe()}")
        _number(f"{where}.at_least", m.at_least, low=1, integer=True, none="null")


def _check_pool(pool, at: str, milestones: list[str]) -> None:
    if pool is None:
        return
    if not isinstance(pool, Pool):
        raise OptionError(at, f"must be a Pool, got {_short(pool)}")
    if not isinstance(pool.score, Mapping) or not pool.score:
        raise OptionError(f"{at}.score", f"must map milestone names to weights (e.g. {{maps_visited: 1.0}}), got "
                                         f"{_short(pool.score)}")
    for name, weight in pool.score.items():
        if name not in milestones:
            listed = ", ".join(milestones) or "none: add milestones"
            raise OptionError(f"{at}.score.{name}", f"is not one of the task's milestones ({listed})")
        _number(f"{at}.score.{name}", weight, low=0.0, low_open=True)
    _number(f"{at}.max_mb", pool.max_mb, low=0.0, low_open=True)
    _number(f"{at}.per_step", pool.per_step, low=1, high=1024, integer=True)
    if pool.when not in ("rise", "record"):
        raise OptionError(f"{at}.when", f"must be one of ['rise', 'record'], got {_short(pool.when)}")
    _number(f"{at}.sample", pool.sample, low=0.0, high=1.0)
    _number(f"{at}.priority", pool.priority, low=0.0)
    if pool.swarm is not None:
        if not isinstance(pool.swarm, Swarm):
            raise OptionError(f"{at}.swarm", f"must be a mapping (every, fraction) or null, got {_short(pool.swarm)}")
        _number(f"{at}.swarm.every", pool.swarm.every, low=1, integer=True)
        _number(f"{at}.swarm.fraction", pool.swarm.fraction, low=0.0, high=1.0, low_open=True)


_REQUIRABLE = {"rom": lambda t: t.rom, "start.state": lambda t: t.start.state, "goal": lambda t: t.goal,
               "fail": lambda t: t.fail, "ram_map": lambda t: t.ram_map}


def _check_requires(task: Task, where: str) -> None:
    if not isinstance(task.requires, list) or not all(r in _REQUIRABLE for r in task.requires):
        raise OptionError(f"{where}.requires", f"must list fields a user must set, of {list(_REQUIRABLE)}, got "
                                               f"{_short(task.requires)}")


def missing_required(task: Task, options_rom=None) -> str | None:
    """The first field ``task.requires`` names that is still unset (the env's rom option counts for rom), else
    None: a task for a game we cannot ship names what its user supplies."""
    for name in task.requires:
        value = options_rom if name == "rom" and options_rom is not None else _REQUIRABLE[name](task)
        if value is None:
            return name
    return None


# ---------------------------------------------------------------------------------------------- files
def is_state_file(path) -> bool:
    """A state file of ours (an .npz: a zip), not a PyBoy state."""
    with open(path, "rb") as f:
        return f.read(4) == _ZIP_MAGIC


def load_start_state(gb, path) -> None:
    """Load a start state file into every env of VecGameBoy ``gb``: ours or PyBoy's, told by its first bytes."""
    path = os.fspath(path)
    if is_state_file(path):
        gb.load_state(path)
    else:
        gb.load_pyboy_state(path)


def start_states(task: Task) -> list:
    """The start's state files (None: power-on), one cache group each."""
    return list(task.start.state) if isinstance(task.start.state, list) else [task.start.state]


def check_task(task: Task, cart, rom_name: str) -> None:
    """The task's files against the cartridge ``cart`` (``emu.cartridge``): start states (format, and the ROM
    they were made for where the file tells), the start trace, the goal/fail templates (shape, ROM)."""
    for path in (p for p in start_states(task) if p is not None):
        if not _exists(Path(path)):
            raise OptionError("task.start.state", f"does not exist: no savestate file at {os.fspath(path)!r}")
        data = Path(path).read_bytes()
        try:
            if data[:4] == _ZIP_MAGIC:
                with np.load(path, allow_pickle=False) as z:
                    if str(z.get("format", "")) != STATE_FILE_FORMAT:
                        raise StateFileError(f"{path}: not a gbx_lightning state file")
                    theirs = str(z.get("rom_sha256", ""))
                if theirs != cart.sha256:
                    raise StateFileError(f"{path} was saved for another ROM (sha256 {theirs[:12]}...), "
                                         f"{rom_name} has {cart.sha256[:12]}...")
                # then read it whole, as the env will: every field, its digest and its clock words checked
                layout = S.per_env_layout(int(cart.ram_bytes), len(S.mbc_power_on_regs(cart.spec())))
                read_state_file(path, [(n, tuple(shape), dt) for n, shape, dt in layout], cart.sha256)
            else:
                parse_pyboy_state(data, cart, os.fspath(path))
        except (StateFileError, PyBoyStateError, ValueError, OSError) as err:
            raise OptionError("task.start.state", f"cannot be loaded: {err}") from None
        except Exception as err:  # noqa: BLE001 - a damaged file: whatever the parser tripped on, one line
            raise OptionError("task.start.state", f"cannot be loaded: {path}: not a savestate we can read "
                                                  f"({type(err).__name__}: {err})") from None
    if task.start.inputs is not None:
        try:
            read_trace(task.start.inputs, "task.start.inputs")
        except (ValueError, FileNotFoundError, TypeError) as err:
            raise OptionError("task.start.inputs", f"is not an input trace: {err}") from None
    if task.ram_map is not None and task.ram_map.titles and cart.title not in task.ram_map.titles:
        game = task.ram_map.game or task.ram_map.path or "another game"
        raise OptionError("task.ram_map", f"is for {game} (cartridge titles {task.ram_map.titles}), but {rom_name} is "
                                          f"{cart.title!r}: its addresses would read another game's memory")
    for name in ("goal", "fail"):
        template = getattr(task, name)
        if template is None:
            continue
        try:
            loaded = load_goal(template.path, field=f"task.{name}")
        except GoalError as err:
            raise OptionError(f"task.{name}", f"cannot be loaded: {str(err).removeprefix(f'task.{name}: ')}") from None
        if loaded.rom_sha256 not in (None, cart.sha256):
            raise OptionError(f"task.{name}", f"was captured from another ROM: {template.path} has ROM sha256 "
                                              f"{loaded.rom_sha256[:12]}..., {rom_name} has {cart.sha256[:12]}...")
