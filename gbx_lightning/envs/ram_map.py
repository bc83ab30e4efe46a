"""A game's RAM map as data: names for the WRAM numbers a task reads (reward items, milestones, counters,
later observations and dashboards), so a config says ``map``, ``badges`` or ``party_levels``, not 0xD35E.

A RAM map is a YAML file beside the task (``ram_map: ram.yaml`` in the task file; the built-in maps are
``gbx_lightning/roms/tasks/GAME/ram.yaml``, named ``GAME``) or a mapping inline in the task:

    game: Pokemon Red/Blue (US)
    titles: [POKEMON RED, POKEMON BLUE]     # cartridge header titles it is for; another ROM is refused
    source: pret/pokered pokered.sym ...    # where the addresses come from
    fields:
      map: {address: 0xD35E, meaning: wCurMap, the map the player is on}
      party_levels: {address: 0xD18C, count: 6, stride: 44, meaning: wPartyMon1Level .. wPartyMon6Level}
      party_hp: {address: 0xD16C, size: 2, endian: big, count: 6, stride: 44}
      money: {address: 0xD347, size: 3, endian: big, bcd: true}
      x: 0xD362                              # just an address: one byte
    world: {map: map, y: y, x: x, maps: {0: {name: Pallet Town, y: 234, x: 50, h: 18, w: 20}, ...}}   # optional

``world`` (optional) is the game's world layout: each map's place in one world grid (``envs/world.py``).

A field is ``count`` numbers (default 1), each ``size`` bytes (1..4) from ``address + k * stride`` (stride
default ``size``), little endian unless ``endian: big``, binary unless ``bcd: true`` (two decimal digits a
byte). A byte range such as a flag array is ``count`` one-byte numbers. Every byte must lie in WRAM
($C000-$DFFF): what ``GameBoyEnv.read_ram`` reads on the device.

``FieldReader`` (``ram_fields.py``, with ``RamField``) decodes a field for every env at once (torch ops on the
env's device, no host sync): int64 ``[N, count]``.
"""
from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .base import OptionError
from .ram_fields import FieldReader, RamField
from .world import parse_world

__all__ = ["FieldReader", "RamField", "RamMap", "builtin_ram_maps", "load_ram_map", "resolve_field"]

WRAM = (0xC000, 0xDFFF)
RAM_MAP_FILE = "ram.yaml"       # a built-in map: roms/tasks/GAME/ram.yaml (not a task: roms.available_tasks skips it)
_FIELD_KEYS = ("address", "size", "count", "stride", "endian", "bcd", "meaning")


@dataclass
class RamMap:
    """Named WRAM fields of one game (module docstring)."""
    game: str = ""
    titles: list[str] = field(default_factory=list)
    source: str = ""
    fields: dict[str, RamField] = field(default_factory=dict)
    path: str = ""          # the file it was read from ("" inline)
    world: Any = None       # a WorldMap (envs/world.py): each map's place in one world grid, or None

    def __contains__(self, name) -> bool:
        return name in self.fields

    def names(self) -> str:
        listed = list(self.fields)
        return ", ".join(listed[:12]) + (f", ... ({len(listed)} fields)" if len(listed) > 12 else "")


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def builtin_ram_maps() -> list[str]:
    """Names of the built-in RAM maps: the games under roms/tasks/ with a ram.yaml."""
    from gbx_lightning.roms import TASK_DIR
    return sorted(p.parent.name for p in TASK_DIR.glob(f"*/{RAM_MAP_FILE}"))


def load_ram_map(spec, where: str = "task.ram_map", base_dir: Path | None = None) -> RamMap | None:
    """A RamMap from a RamMap, a built-in name (``builtin_ram_maps()``), a YAML file (relative to ``base_dir``, a
    task file's folder) or a mapping; None stays None. OptionError(where + ".<field>", ...) names the first
    problem."""
    if spec is None or isinstance(spec, RamMap):
        return spec
    if isinstance(spec, (str, os.PathLike)):
        text = os.fspath(spec)
        from gbx_lightning.roms import TASK_DIR
        if text in builtin_ram_maps():
            path = TASK_DIR / text / RAM_MAP_FILE
        else:
            path = Path(text) if base_dir is None or Path(text).is_absolute() else base_dir / text
            try:
                found = path.is_file()
            except (OSError, ValueError):
                found = False
            if not found:
                raise OptionError(where, f"is neither a built-in RAM map ({', '.join(builtin_ram_maps())}) nor a "
                                         f"RAM map file: no file at {_short(os.fspath(path))}")
        try:
            data = yaml.safe_load(path.read_text())
        except (yaml.YAMLError, UnicodeDecodeError, OSError) as err:
            raise OptionError(where, f"{path}: not a readable YAML RAM map ({' '.join(str(err).split())})") from None
        try:
            ram_map = _from_mapping(data, where)
        except OptionError as err:
            raise OptionError(err.option, f"{err.message} (in {path})") from None
        ram_map.path = os.fspath(path)
        return ram_map
    if isinstance(spec, Mapping):
        return _from_mapping(spec, where)
    raise OptionError(where, f"must be a built-in RAM map name ({', '.join(builtin_ram_maps())}), a RAM map YAML file "
                             f"or a mapping with fields, got {_short(spec)}")


def _from_mapping(data, where: str) -> RamMap:
    if not isinstance(data, Mapping):
        raise OptionError(where, f"must be a mapping (game, titles, source, fields, world), got {_short(data)}")
    for key in data:
        if key not in ("game", "titles", "source", "fields", "world"):
            raise OptionError(f"{where}.{key}", "is not a RAM map key; keys: game, titles, source, fields, world")
    for key in ("game", "source"):
        if not isinstance(data.get(key, ""), str):
            raise OptionError(f"{where}.{key}", f"must be a string, got {_short(data[key])}")
    titles = data.get("titles", [])
    if not isinstance(titles, list) or not all(isinstance(t, str) and t for t in titles):
        raise OptionError(f"{where}.titles", f"must be a list of cartridge titles (strings), got {_short(titles)}")
    fields = data.get("fields")
    if not isinstance(fields, Mapping) or not fields:
        raise OptionError(f"{where}.fields", f"must be a mapping of names to fields ({{address: ...}} or an "
                                             f"address), got {_short(fields)}")
    out = {}
    for name, spec in fields.items():
        out[str(name)] = _field(str(name), spec, f"{where}.fields.{name}")
    world = None
    if data.get("world") is not None:
        world = parse_world(data["world"], out, f"{where}.world")
    return RamMap(data.get("game", ""), list(titles), data.get("source", ""), out, world=world)


def _int(where: str, value, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise OptionError(where, f"must be an int in {low}..{high}, got {_short(value)}")
    return value


def _field(name: str, spec, where: str) -> RamField:
    if not name.isidentifier():
        raise OptionError(where, "must be named by an identifier (letters, digits, _)")
    if isinstance(spec, int) and not isinstance(spec, bool):
        spec = {"address": spec}
    if not isinstance(spec, Mapping):
        raise OptionError(where, f"must be an address or a mapping ({', '.join(_FIELD_KEYS)}), got {_short(spec)}")
    for key in spec:
        if key not in _FIELD_KEYS:
            raise OptionError(f"{where}.{key}", f"is not a field key; keys: {', '.join(_FIELD_KEYS)}")
    if "address" not in spec:
        raise OptionError(f"{where}.address", "is required (missing)")
    address = spec["address"]
    if isinstance(address, bool) or not isinstance(address, int) or not WRAM[0] <= address <= WRAM[1]:
        raise OptionError(f"{where}.address", f"must be a WRAM address, an int in 0x{WRAM[0]:X}..0x{WRAM[1]:X}, "
                                              f"got {_short(address)}")
    size = _int(f"{where}.size", spec.get("size", 1), 1, 4)
    count = _int(f"{where}.count", spec.get("count", 1), 1, 0x2000)
    stride = spec.get("stride")
    if stride is not None:
        stride = _int(f"{where}.stride", stride, size, 0x2000)
    endian = spec.get("endian", "little")
    if endian not in ("little", "big"):
        raise OptionError(f"{where}.endian", f"must be one of ['little', 'big'], got {_short(endian)}")
    bcd = spec.get("bcd", False)
    if not isinstance(bcd, bool):
        raise OptionError(f"{where}.bcd", f"must be true or false, got {_short(bcd)}")
    meaning = spec.get("meaning", "")
    if not isinstance(meaning, str):
        raise OptionError(f"{where}.meaning", f"must be a string, got {_short(meaning)}")
    f = RamField(name, address, size, count, stride, endian, bcd, meaning)
    if address + f.span - 1 > WRAM[1]:
        raise OptionError(where, f"ends at 0x{address + f.span - 1:X}, past WRAM's end 0x{WRAM[1]:X}")
    return f


def resolve_field(ram_map: RamMap | None, ref, where: str) -> RamField:
    """A field named in a config: a RAM map name, or a WRAM address (an int: that one byte). OptionError naming
    ``where`` otherwise (the error lists the map's names)."""
    if isinstance(ref, int) and not isinstance(ref, bool):
        if not WRAM[0] <= ref <= WRAM[1]:
            raise OptionError(where, f"must be a RAM map field name or a WRAM address (0x{WRAM[0]:X}..0x{WRAM[1]:X}), "
                                     f"got {_short(ref)}")
        return RamField(f"0x{ref:04X}", ref)
    if not isinstance(ref, str):
        raise OptionError(where, f"must be a RAM map field name or a WRAM address, got {_short(ref)}")
    if ram_map is None:
        raise OptionError(where, f"names the field {ref!r}, but the task has no ram_map: add one (ram_map: FILE or a "
                                 f"built-in, {', '.join(builtin_ram_maps())}) or give a WRAM address")
    if ref not in ram_map:
        game = f" ({ram_map.game})" if ram_map.game else ""
        raise OptionError(where, f"is not a field of the task's RAM map{game}: {ref!r}; fields: {ram_map.names()}")
    return ram_map.fields[ref]


def ram_map_summary(ram_map: RamMap) -> list[dict[str, Any]]:
    """The fields as plain rows (name, address, size, count, stride, meaning): for dashboards and docs."""
    return [{"name": f.name, "address": f"0x{f.address:04X}", "size": f.size, "count": f.count, "stride": f.step,
             "endian": f.endian, "bcd": f.bcd, "meaning": f.meaning} for f in ram_map.fields.values()]
