"""The task's checks: every value of a Task (``check_values``: types, ranges, names, the reward list) and its files
against the cartridge (``check_task``: start states, the input trace, templates, the RAM map's game), each problem
one ``OptionError`` line naming ``task.<field>``, in milliseconds, before any kernel work.
"""
from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from gbx_lightning.checks import number_problem
from gbx_lightning.emu import state as S
from gbx_lightning.emu.buttons import read_trace
from gbx_lightning.emu.pyboy_state import PyBoyStateError, parse_pyboy_state
from gbx_lightning.emu.savestate import STATE_FILE_FORMAT, StateFileError, read_state_file
from gbx_lightning.roms import available_roms

from .base import OptionError
from .goal import GoalError, load_goal
from .ram_map import RamField, RamMap, resolve_field
from .world import require_world
from .reward_item import WRAM, RewardSpecError
from .reward_transforms import PRESETS, check_reward_spec
from .task_types import (MILESTONE_KINDS, Adapt, Counter, Heatmap, Milestone, Pool, RamGoal, Start, Swarm, Task,
                         Template, TrainStarts, start_recipes, start_states)

__all__ = ["MAX_AXIS_BITS", "RESERVED_INFO", "check_heatmap", "check_task", "check_values", "counter_location",
           "file_exists", "is_state_file", "load_start_state", "missing_required", "ram_write", "short"]

ZIP_MAGIC = b"PK\x03\x04"   # our state files are .npz (zip); PyBoy states start with a version byte
# info keys every env reports (base.VecEnv) and GameBoyEnv's features' own (features/*.py INFO): a counter or a
# milestone may not take them
RESERVED_INFO = ("final_obs", "episode_return", "episode_length", "success", "failed", "trained_return", "from_pool")
MAX_AXIS_BITS = 10     # a heatmap field of up to 10 bits per axis: at most a 1024 x 1024 grid (8 MB of int64 counts)


def short(value) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def file_exists(path: Path) -> bool:
    try:
        return path.is_file()
    except (OSError, ValueError):
        return False


def _number(where: str, value, **bounds) -> None:
    problem = number_problem(value, **bounds)
    if problem is not None:
        raise OptionError(where, problem)


def _is_path(value) -> bool:
    return isinstance(value, (str, os.PathLike)) and os.fspath(value) != ""


def check_values(task: Task, where: str) -> None:
    """Every field's type and range (no file is read here but user reward items' modules, imported)."""
    if not isinstance(task.name, str):
        raise OptionError(f"{where}.name", f"must be a string, got {short(task.name)}")
    if task.rom is not None and not _is_path(task.rom):
        raise OptionError(f"{where}.rom", f"must be a built-in ROM name ({', '.join(available_roms())}) or a .gb "
                                          f"file path, got {short(task.rom)}")
    _check_start(task.start, f"{where}.start", task.ram_map)
    if task.train_starts is not None:
        t, at = task.train_starts, f"{where}.train_starts"
        if not isinstance(t, TrainStarts):
            raise OptionError(at, f"must be a mapping {{starts: [Start recipe or task, ...], share: 0..1}} or null, "
                                  f"got {short(t)}")
        if not isinstance(t.starts, list) or not t.starts:
            raise OptionError(f"{at}.starts", f"must be a non-empty list of Start recipes, got {short(t.starts)}")
        for i, recipe in enumerate(t.starts):
            _check_start(recipe, f"{at}.starts[{i}]", task.ram_map)
        _number(f"{at}.share", t.share, low=0.0, high=1.0)
        _check_adapt(t.adapt, f"{at}.adapt", task.milestones)
    for name in ("goal", "fail"):
        t, at = getattr(task, name), f"{where}.{name}"
        if t is None:
            continue
        if not isinstance(t, Template):
            raise OptionError(at, f"must be a Template, a PNG path or null, got {short(t)}")
        if not _is_path(t.path):
            raise OptionError(f"{at}.path", f"must be a goal template PNG path (tools/capture_goal.py), got "
                                            f"{short(t.path)}")
        _number(f"{at}.tau", t.tau, low=0.0, high=1.0, low_open=True, none="null")
        _number(f"{at}.k_consecutive", t.k_consecutive, low=1, integer=True, none="null")
    for name in ("step_cost", "alpha", "goal_bonus"):
        _number(f"{where}.{name}", getattr(task, name), none="null")
    _number(f"{where}.fail_penalty", task.fail_penalty, high=0.0)
    if task.ram_map is not None and not isinstance(task.ram_map, RamMap):
        raise OptionError(f"{where}.ram_map", f"must be a RamMap (envs/ram_map.py), got {short(task.ram_map)}")
    _check_counters(task.counters, f"{where}.counters", task.ram_map)
    _check_milestones(task.milestones, f"{where}.milestones", task.ram_map, [c.name for c in task.counters])
    _check_pool(task.pool, f"{where}.pool", [m.name for m in task.milestones])
    if task.ram_goal is not None:
        g, at = task.ram_goal, f"{where}.ram_goal"
        if not isinstance(g, RamGoal):
            raise OptionError(at, f"must be a mapping of field and at_least, got {short(g)}")
        resolve_field(task.ram_map, g.field, f"{at}.field")
        _number(f"{at}.at_least", g.at_least, low=1, integer=True)
    if task.heatmap is not None:
        if not isinstance(task.heatmap, Heatmap):
            raise OptionError(f"{where}.heatmap", f"must be a mapping of y, x (RAM map fields), got {short(task.heatmap)}")
        check_heatmap(task.heatmap, task.ram_map, f"{where}.heatmap")
    _check_requires(task, where)
    reward = task.reward
    try:
        if isinstance(reward, str) and reward in PRESETS:
            pass
        elif isinstance(reward, str) or not isinstance(reward, (list, tuple)):
            raise RewardSpecError("reward", f"must be one of {PRESETS} or a list of reward items, got {short(reward)}")
        else:
            check_reward_spec(reward, has_goal=task.goal is not None, has_fail=task.fail is not None,
                              ram_map=task.ram_map, has_success=task.ram_goal is not None)
    except RewardSpecError as err:
        raise OptionError(f"{where}.{err.field}", err.message) from None


def _check_start(s, at: str, ram_map: RamMap | None) -> None:
    if not isinstance(s, Start):
        raise OptionError(at, f"must be a Start, got {short(s)}")
    states = s.state if isinstance(s.state, list) else [s.state]
    if s.state is not None and (not states or not all(_is_path(p) for p in states)):
        raise OptionError(f"{at}.state", f"must be a savestate path, a list of them, or null (power-on), got "
                                         f"{short(s.state)}")
    if s.inputs is not None and not isinstance(s.inputs, (str, os.PathLike, list)):
        raise OptionError(f"{at}.inputs", f"must be a trace file, trace text or a list of [frame, buttons] pairs, "
                                          f"got {short(s.inputs)}")
    _number(f"{at}.frames", s.frames, low=0, integer=True)
    _number(f"{at}.variants", s.variants, low=1, high=256, integer=True)
    _number(f"{at}.variant_frames", s.variant_frames, low=1, integer=True, none="null")
    _number(f"{at}.score", s.score, low=0.0)
    if s.ram is not None:
        if not isinstance(s.ram, Mapping) or not s.ram:
            raise OptionError(f"{at}.ram", f"must be a mapping {{RAM map field or WRAM address: value}}, got "
                                           f"{short(s.ram)}")
        for ref, value in s.ram.items():
            ram_write(ram_map, ref, value, f"{at}.ram")


def ram_write(ram_map: RamMap | None, ref, value, where: str) -> tuple[int, bytes]:
    """(address, bytes) of a start's RAM write ``ref: value`` (a RAM map field of one number, or a WRAM address: one
    byte); OptionError naming ``where`` otherwise."""
    f = resolve_field(ram_map, ref, f"{where}.{ref}")
    if f.count != 1 or f.bcd:
        raise OptionError(f"{where}.{ref}", f"must be a field of one binary number to be written, {f.name!r} is "
                                            f"{'BCD' if f.bcd else f'{f.count} numbers'}")
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 1 << (8 * f.size):
        raise OptionError(f"{where}.{ref}", f"must be an int in 0..{(1 << (8 * f.size)) - 1} ({f.size} byte"
                                            f"{'s' if f.size > 1 else ''}), got {short(value)}")
    if not (WRAM[0] <= f.address and f.address + f.size - 1 <= WRAM[1]):
        raise OptionError(f"{where}.{ref}", f"must lie in WRAM (0x{WRAM[0]:X}..0x{WRAM[1]:X}) to be written, "
                                            f"{f.describe()} does not")
    return f.address, value.to_bytes(f.size, "little" if f.endian == "little" else "big")


def _check_counters(counters, at: str, ram_map: RamMap | None = None) -> None:
    if not isinstance(counters, list):
        raise OptionError(at, f"must be a list of counters, got {short(counters)}")
    seen = set()
    for i, c in enumerate(counters):
        where = f"{at}[{i}]"
        if not isinstance(c, Counter):
            raise OptionError(where, f"must be a Counter, got {short(c)}")
        if not isinstance(c.name, str) or not c.name.isidentifier() or c.name in RESERVED_INFO or c.name in seen:
            raise OptionError(f"{where}.name", f"must be a new identifier (not one of {list(RESERVED_INFO)} nor "
                                               f"another counter's), got {short(c.name)}")
        seen.add(c.name)
        if (c.address is None) == (c.field is None):
            raise OptionError(f"{where}.address", "or field (a RAM map name): give exactly one of them")
        if c.field is not None:
            size = counter_location(c, ram_map, where)[1]
        else:
            size = c.size
            if c.size not in (1, 2) or isinstance(c.size, bool):
                raise OptionError(f"{where}.size", f"must be one of [1, 2] (bytes, little endian), got "
                                                   f"{short(c.size)}")
            if isinstance(c.address, bool) or not isinstance(c.address, int) or not \
                    WRAM[0] <= c.address <= WRAM[1] - c.size + 1:
                raise OptionError(f"{where}.address", f"must be a WRAM address, an int in 0x{WRAM[0]:X}.."
                                                      f"0x{WRAM[1] - c.size + 1:X}, got {short(c.address)}")
        _number(f"{where}.bits", c.bits, low=1, high=8 * size, integer=True, none="null")


def _check_adapt(adapt, at: str, milestones: list) -> None:
    if adapt is None:
        return
    if not isinstance(adapt, Adapt):
        raise OptionError(at, f"must be a mapping of Adapt fields (milestone, at_least, window, mix) or null, "
                              f"got {short(adapt)}")
    names = [m.name for m in milestones]
    if adapt.milestone is not None and adapt.milestone not in names:
        raise OptionError(f"{at}.milestone", f"must be one of the task's milestones {names} (or null: the episode's "
                                             f"success), got {short(adapt.milestone)}")
    _number(f"{at}.at_least", adapt.at_least, low=1, integer=True)
    _number(f"{at}.window", adapt.window, low=1.0)
    _number(f"{at}.mix", adapt.mix, low=0.0, high=1.0)


def counter_location(c: Counter, ram_map: RamMap | None, where: str = "task.counters") -> tuple[int, int]:
    """(address, size) of a counter: its own, or its RAM map field's (one number of 1 or 2 bytes, little endian)."""
    if c.field is None:
        return c.address, c.size
    f = resolve_field(ram_map, c.field, f"{where}.field")
    if f.count != 1 or f.size > 2 or f.endian != "little" and f.size > 1 or f.bcd:
        raise OptionError(f"{where}.field", f"must be one binary number of 1 or 2 bytes, little endian, got "
                                            f"{f.describe()} (a milestone of kind increase reads any field)")
    return f.address, f.size


BITS_COUNTS = ("now", "peak")   # a bits milestone: the new bits set now, or the peak of their count


def _check_milestones(milestones, at: str, ram_map: RamMap | None, counters: list[str]) -> None:
    if not isinstance(milestones, list):
        raise OptionError(at, f"must be a list of milestones, got {short(milestones)}")
    seen = set(counters)
    for i, m in enumerate(milestones):
        where = f"{at}[{i}]"
        if not isinstance(m, Milestone):
            raise OptionError(where, f"must be a Milestone, got {short(m)}")
        if not isinstance(m.name, str) or not m.name.isidentifier() or m.name in RESERVED_INFO or m.name in seen:
            raise OptionError(f"{where}.name", f"must be a new identifier (not one of "
                                               f"{list(RESERVED_INFO)} nor a counter's or another "
                                               f"milestone's), got {short(m.name)}")
        seen.add(m.name)
        if m.kind not in MILESTONE_KINDS:
            raise OptionError(f"{where}.kind", f"must be one of {list(MILESTONE_KINDS)}, got {short(m.kind)}")
        if not isinstance(m.world, bool) or m.world and m.kind != "distinct":
            on = "" if m.kind == "distinct" else f" on a {m.kind}"
            raise OptionError(f"{where}.world", f"must be true (distinct milestones only: world tiles) or false, got "
                                                f"{short(m.world)}{on}")
        if m.world:
            if m.field is not None or m.fields is not None:
                raise OptionError(f"{where}.fields", "must be left out with world: true (the world layout names the "
                                                     "fields it reads)")
            require_world(ram_map, f"{where}.world")
        if m.kind == "distinct":
            refs = m.fields if m.fields is not None else [m.field] if m.field is not None else None
            if not m.world and (m.field is not None and m.fields is not None or not isinstance(refs, list) or not refs):
                raise OptionError(f"{where}.fields", f"must list the fields whose distinct tuples are counted (e.g. "
                                                     f"[map]), got {short(m.fields if m.field is None else m.field)}")
            for j, ref in enumerate(refs or []):
                f = resolve_field(ram_map, ref, f"{where}.fields[{j}]")
                if f.count != 1:
                    raise OptionError(f"{where}.fields[{j}]", f"must be one number per env, got {f.describe()}")
            bits = m.bits
            if isinstance(bits, bool) or not isinstance(bits, int) or not 64 <= bits <= 1 << 24 or bits & (bits - 1):
                raise OptionError(f"{where}.bits", f"must be a power of two in 64..{1 << 24}, got {short(bits)}")
        else:
            if m.fields is not None or m.field is None:
                raise OptionError(f"{where}.field", f"must name one RAM map field ({m.kind} reads one), got "
                                                    f"{short(m.field if m.fields is None else m.fields)}")
            f = resolve_field(ram_map, m.field, f"{where}.field")
            if m.kind == "increase" and f.count != 1:
                raise OptionError(f"{where}.field", f"must be one number (a counter), got {f.describe()}")
        _number(f"{where}.at_least", m.at_least, low=1, integer=True, none="null")
        if m.count not in BITS_COUNTS or m.count != "now" and m.kind != "bits":
            raise OptionError(f"{where}.count", f"must be one of {list(BITS_COUNTS)} (bits milestones only), got "
                                                f"{short(m.count)}" + ("" if m.kind == "bits" else f" on a {m.kind}"))


def _check_pool(pool, at: str, milestones: list[str]) -> None:
    if pool is None:
        return
    if not isinstance(pool, Pool):
        raise OptionError(at, f"must be a Pool, got {short(pool)}")
    if not isinstance(pool.score, Mapping) or not pool.score:
        raise OptionError(f"{at}.score", f"must map milestone names to weights (e.g. {{maps_visited: 1.0}}), got "
                                         f"{short(pool.score)}")
    for name, weight in pool.score.items():
        if name not in milestones:
            listed = ", ".join(milestones) or "none: add milestones"
            raise OptionError(f"{at}.score.{name}", f"is not one of the task's milestones ({listed})")
        _number(f"{at}.score.{name}", weight, low=0.0, low_open=True)
    _number(f"{at}.max_mb", pool.max_mb, low=0.0, low_open=True)
    _number(f"{at}.per_step", pool.per_step, low=1, high=1024, integer=True)
    if pool.when not in ("rise", "record"):
        raise OptionError(f"{at}.when", f"must be one of ['rise', 'record'], got {short(pool.when)}")
    _number(f"{at}.sample", pool.sample, low=0.0, high=1.0)
    _number(f"{at}.priority", pool.priority, low=0.0)
    if pool.swarm is not None:
        if not isinstance(pool.swarm, Swarm):
            raise OptionError(f"{at}.swarm", f"must be a mapping (every, fraction) or null, got {short(pool.swarm)}")
        _number(f"{at}.swarm.every", pool.swarm.every, low=1, integer=True)
        _number(f"{at}.swarm.fraction", pool.swarm.fraction, low=0.0, high=1.0, low_open=True)


_REQUIRABLE = {"rom": lambda t: t.rom, "start.state": lambda t: t.start.state, "goal": lambda t: t.goal,
               "fail": lambda t: t.fail, "ram_map": lambda t: t.ram_map}


def _check_requires(task: Task, where: str) -> None:
    if not isinstance(task.requires, list) or not all(r in _REQUIRABLE for r in task.requires):
        raise OptionError(f"{where}.requires", f"must list fields a user must set, of {list(_REQUIRABLE)}, got "
                                               f"{short(task.requires)}")


def missing_required(task: Task, options_rom=None) -> str | None:
    """The first field ``task.requires`` names that is still unset (the env's rom option counts for rom), else
    None: a task for a game we cannot ship names what its user supplies."""
    for name in task.requires:
        value = options_rom if name == "rom" and options_rom is not None else _REQUIRABLE[name](task)
        if value is None:
            return name
    return None


def check_heatmap(spec, ram_map: RamMap | None, where: str = "task.heatmap") -> dict[str, RamField | None]:
    """The heatmap's fields (y, x, map) from the RAM map (its world layout's, with ``world: true``); OptionError
    naming the first bad one."""
    if not isinstance(spec.world, bool):
        raise OptionError(f"{where}.world", f"must be true or false, got {spec.world!r}")
    if spec.world:
        for key in ("y", "x", "map"):
            if getattr(spec, key) is not None:
                raise OptionError(f"{where}.{key}", "must be left out with world: true (the world layout names the "
                                                    "fields it reads)")
        world = require_world(ram_map, f"{where}.world")
        if not isinstance(spec.cell, int) or isinstance(spec.cell, bool) or spec.cell < 1:
            raise OptionError(f"{where}.cell", f"must be an int >= 1, got {spec.cell!r}")
        return {"y": world.y, "x": world.x, "map": world.map}
    for axis in ("y", "x"):
        if getattr(spec, axis) is None:
            raise OptionError(f"{where}.{axis}", "is required (a RAM map field), unless world: true")
    fields = {}
    for axis in ("y", "x"):
        f = fields[axis] = resolve_field(ram_map, getattr(spec, axis), f"{where}.{axis}")
        if f.count != 1 or f.bits > MAX_AXIS_BITS:
            raise OptionError(f"{where}.{axis}", f"must be one number of at most {MAX_AXIS_BITS} bits per env (a grid "
                                                 f"coordinate), got {f.describe()}")
    fields["map"] = None if spec.map is None else resolve_field(ram_map, spec.map, f"{where}.map")
    if fields["map"] is not None and fields["map"].count != 1:
        raise OptionError(f"{where}.map", f"must be one number per env, got {fields['map'].describe()}")
    for name in ("map_value", "cell"):
        value, low = getattr(spec, name), 0 if name == "map_value" else 1
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise OptionError(f"{where}.{name}", f"must be an int >= {low}, got {value!r}")
    return fields


def is_state_file(path) -> bool:
    """A state file of ours (an .npz: a zip), not a PyBoy state."""
    with open(path, "rb") as f:
        return f.read(4) == ZIP_MAGIC


def load_start_state(gb, path) -> None:
    """Load a start state file into every env of VecGameBoy ``gb``: ours or PyBoy's, told by its first bytes."""
    path = os.fspath(path)
    if is_state_file(path):
        gb.load_state(path)
    else:
        gb.load_pyboy_state(path)


def _check_state_file(path, at: str, cart, rom_name: str) -> None:
    """A start state file against the cartridge: its format, the ROM it was made for, every field."""
    if not file_exists(Path(path)):
        raise OptionError(at, f"does not exist: no savestate file at {os.fspath(path)!r}")
    data = Path(path).read_bytes()
    try:
        if data[:4] == ZIP_MAGIC:
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
        raise OptionError(at, f"cannot be loaded: {err}") from None
    except Exception as err:  # noqa: BLE001 - a damaged file: whatever the parser tripped on, one line
        raise OptionError(at, f"cannot be loaded: {path}: not a savestate we can read "
                              f"({type(err).__name__}: {err})") from None


def check_task(task: Task, cart, rom_name: str) -> None:
    """The task's files against the cartridge ``cart`` (``emu.cartridge``): start states (format, and the ROM
    they were made for where the file tells), the start trace, the goal/fail templates (shape, ROM)."""
    for at, recipe in start_recipes(task):
        for path in (p for p in start_states(recipe) if p is not None):
            _check_state_file(path, f"{at}.state", cart, rom_name)
        if recipe.inputs is not None:
            try:
                read_trace(recipe.inputs, f"{at}.inputs")
            except (ValueError, FileNotFoundError, TypeError) as err:
                raise OptionError(f"{at}.inputs", f"is not an input trace: {err}") from None
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
