"""A world layout: where each map of a game with many lies in one world grid, so that dashboards and rewards can
speak of world tiles (one visit heatmap of a whole region; tiles counted across maps without aliasing).

It is data in the RAM map (``envs/ram_map.py``), under ``world``:

    world:
      map: map          # the RAM map fields: the current map's id and the player's y, x on it
      y: y
      x: x
      source: pret/pokered data/maps/headers/*.asm ...     # where the offsets come from (a string, optional)
      maps:             # map id -> the map's top-left corner (y, x) in world tiles and its size (h, w)
        2: {name: village, y: 1, x: 0, h: 16, w: 16}
        4: {name: route, y: 0, x: 16, h: 16, w: 12}

Coordinates are the units of the y/x fields (Pokemon Red's and hamlet's: 16x16-pixel steps). World offsets are
>= 0; the world is the box from (0, 0) to the furthest map's far corner. Maps may not overlap (two maps on one world
tile would alias, the thing a layout is for). A map not listed (Pokemon's houses and caves) and a position outside
its map's box (a coordinate mid-transition) are *off the world*: the world heatmap does not draw them, and world
tile counts (``explore``/``distinct`` with ``world: true``) count them as (map, y, x) cells of their own, apart
from every world tile. A layout may place indoor maps too (hamlet's does, beside its outdoor maps), so the whole
game is one picture.

``WorldTransform`` holds the layout as one table on the device; ``to_world`` maps (map, y, x) tensors to world
(Y, X) with torch ops only (a gather and compares: no loop over envs, no host sync).
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import torch

from .base import OptionError
from .ram_fields import FieldReader, RamField

__all__ = ["MAX_WORLD_SIDE", "WorldMap", "WorldRect", "WorldTransform", "parse_world", "require_world", "to_world"]

MAX_WORLD_SIDE = 4096           # world tiles per axis (a world heatmap of 4096 x 4096 int64 counts: 128 MB)
MAX_MAP_BITS = 12               # a map id field of at most 12 bits: the device table has 2**bits rows
_WORLD_KEYS = ("map", "y", "x", "source", "maps")
_RECT_KEYS = ("name", "y", "x", "h", "w")


@dataclass(frozen=True)
class WorldRect:
    """One map's box in the world: top-left (y, x) and size (h, w), in world tiles."""
    map_id: int
    name: str
    y: int
    x: int
    h: int
    w: int

    def label(self) -> str:
        return f"{self.map_id} ({self.name})" if self.name else str(self.map_id)


@dataclass
class WorldMap:
    """A RAM map's world layout (module docstring): the fields it reads and each listed map's box."""
    map: RamField
    y: RamField
    x: RamField
    rects: dict[int, WorldRect] = field(default_factory=dict)
    source: str = ""

    @property
    def height(self) -> int:
        return max(r.y + r.h for r in self.rects.values())

    @property
    def width(self) -> int:
        return max(r.x + r.w for r in self.rects.values())

    def position(self, map_id: int, y: int, x: int) -> tuple[int, int] | None:
        """World (Y, X) of one position, or None off the world (plain ints: for tests and tools)."""
        r = self.rects.get(map_id)
        if r is None or not (0 <= y < r.h and 0 <= x < r.w):
            return None
        return r.y + y, r.x + x


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _int(where: str, value, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise OptionError(where, f"must be an int in {low}..{high}, got {_short(value)}")
    return value


def parse_world(data, fields: dict[str, RamField], where: str = "ram_map.world") -> WorldMap:
    """The layout of a RAM map's ``world`` mapping, its field names resolved in ``fields`` (the map's own);
    OptionError naming the first problem (an unknown key or field, a negative size, two maps that overlap)."""
    if not isinstance(data, Mapping):
        raise OptionError(where, f"must be a mapping ({', '.join(_WORLD_KEYS)}), got {_short(data)}")
    for key in data:
        if key not in _WORLD_KEYS:
            raise OptionError(f"{where}.{key}", f"is not a world layout key; keys: {', '.join(_WORLD_KEYS)}")
    resolved = {}
    for key in ("map", "y", "x"):
        name = data.get(key)
        if name is None:
            raise OptionError(f"{where}.{key}", "is required (missing): the RAM map field it reads")
        if not isinstance(name, str) or name not in fields:
            listed = ", ".join(list(fields)[:12])
            raise OptionError(f"{where}.{key}", f"must name a field of this RAM map ({listed}), got {_short(name)}")
        f = resolved[key] = fields[name]
        if f.count != 1:
            raise OptionError(f"{where}.{key}", f"must be one number per env, got {f.describe()}")
    if resolved["map"].bits > MAX_MAP_BITS:
        raise OptionError(f"{where}.map", f"must be a field of at most {MAX_MAP_BITS} bits (a map id), got "
                                          f"{resolved['map'].describe()}")
    source = data.get("source", "")
    if not isinstance(source, str):
        raise OptionError(f"{where}.source", f"must be a string, got {_short(source)}")
    maps = data.get("maps")
    if not isinstance(maps, Mapping) or not maps:
        raise OptionError(f"{where}.maps", f"must map map ids to boxes ({{y, x, h, w}}), got {_short(maps)}")
    rects: dict[int, WorldRect] = {}
    id_max = (1 << resolved["map"].bits) - 1
    for map_id, spec in maps.items():
        at = f"{where}.maps.{map_id}"
        if isinstance(map_id, bool) or not isinstance(map_id, int) or not 0 <= map_id <= id_max:
            raise OptionError(at, f"must be keyed by a map id, an int in 0..{id_max} (the {resolved['map'].name} "
                                  f"field's values), got {_short(map_id)}")
        if not isinstance(spec, Mapping):
            raise OptionError(at, f"must be a mapping ({', '.join(_RECT_KEYS)}), got {_short(spec)}")
        for key in spec:
            if key not in _RECT_KEYS:
                raise OptionError(f"{at}.{key}", f"is not a map box key; keys: {', '.join(_RECT_KEYS)}")
        for key in ("y", "x", "h", "w"):
            if key not in spec:
                raise OptionError(f"{at}.{key}", "is required (missing)")
        name = spec.get("name", "")
        if not isinstance(name, str):
            raise OptionError(f"{at}.name", f"must be a string, got {_short(name)}")
        y = _int(f"{at}.y", spec["y"], 0, MAX_WORLD_SIDE - 1)
        x = _int(f"{at}.x", spec["x"], 0, MAX_WORLD_SIDE - 1)
        # a map's size: at least one tile, and no more than its coordinate field can say
        h = _int(f"{at}.h", spec["h"], 1, min(1 << resolved["y"].bits, MAX_WORLD_SIDE - y))
        w = _int(f"{at}.w", spec["w"], 1, min(1 << resolved["x"].bits, MAX_WORLD_SIDE - x))
        rect = WorldRect(map_id, name, y, x, h, w)
        for other in rects.values():
            if rect.y < other.y + other.h and other.y < rect.y + rect.h and \
                    rect.x < other.x + other.w and other.x < rect.x + rect.w:
                rows = (max(rect.y, other.y), min(rect.y + rect.h, other.y + other.h) - 1)
                cols = (max(rect.x, other.x), min(rect.x + rect.w, other.x + other.w) - 1)
                raise OptionError(at, f"overlaps map {other.label()}: world rows {rows[0]}..{rows[1]}, columns "
                                      f"{cols[0]}..{cols[1]} (maps must not share world tiles)")
        rects[map_id] = rect
    return WorldMap(resolved["map"], resolved["y"], resolved["x"], rects, source)


def require_world(ram_map, where: str) -> WorldMap:
    """The RAM map's world layout (``envs/world.py``) for an option ``world: true``; OptionError naming ``where``
    when the task's RAM map has none."""
    if ram_map is None or ram_map.world is None:
        whose = "the task has no ram_map" if ram_map is None else f"its RAM map ({ram_map.game or 'inline'}) has none"
        raise OptionError(where, f"counts world tiles, which needs a world layout in the RAM map, but {whose}: add "
                                 f"world: {{map, y, x, maps}} to the RAM map (docs/training.md, World maps)")
    return ram_map.world


def to_world(map_id: torch.Tensor, y: torch.Tensor, x: torch.Tensor,
             table: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(Y, X, inside) int64/int64/bool [N] of positions (map_id, y, x) int64 [N], ``table`` int64 [M, 5]: row m is
    map m's (listed, top, left, height, width) (``WorldTransform.table``):

        inside = listed[m] and 0 <= y < height[m] and 0 <= x < width[m]
        (Y, X) = (top[m] + y, left[m] + x) where inside, else (0, 0)

    ``map_id`` must be < M (a field of ``bits`` bits and a table of 2**bits rows)."""
    row = table[map_id]                                                     # [N, 5]
    inside = (row[:, 0] == 1) & (y >= 0) & (y < row[:, 3]) & (x >= 0) & (x < row[:, 4])
    zero = torch.zeros_like(y)
    return torch.where(inside, row[:, 1] + y, zero), torch.where(inside, row[:, 2] + x, zero), inside


class WorldTransform:
    """A world layout on the device: reads the (map, y, x) fields of every env and maps them to the world."""

    def __init__(self, world: WorldMap, device: torch.device):
        self.world = world
        self.readers = [FieldReader(f, device) for f in (world.map, world.y, world.x)]
        table = torch.zeros((1 << world.map.bits, 5), dtype=torch.int64)
        for r in world.rects.values():
            table[r.map_id] = torch.tensor([1, r.y, r.x, r.h, r.w])
        self.table = table.to(device)
        self.height, self.width = world.height, world.width
        # cell widths: region (0 = the world, m + 1 = off-world map m), then Y and X wide enough for world and
        # local coordinates alike
        self.cell_widths = [world.map.bits + 1, max(world.y.bits, (self.height - 1).bit_length()),
                            max(world.x.bits, (self.width - 1).bit_length())]

    def read(self, env) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(map, y, x) int64 [N] of every env now."""
        return tuple(r(env)[:, 0] for r in self.readers)

    def __call__(self, map_id: torch.Tensor, y: torch.Tensor, x: torch.Tensor):
        return to_world(map_id, y, x, self.table)

    def positions(self, env) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(Y, X, inside) [N] of every env now (``to_world``)."""
        return self(*self.read(env))

    def cell_values(self, map_id: torch.Tensor, y: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """int64 [N, 3]: a world tile as (0, Y, X); a position off the world as (map + 1, y, x). Distinct positions
        of the world are distinct tuples, and no off-world tuple equals a world one (``cell_widths`` bits each)."""
        wy, wx, inside = self(map_id, y, x)
        region = torch.where(inside, torch.zeros_like(map_id), map_id + 1)
        return torch.stack([region, torch.where(inside, wy, y), torch.where(inside, wx, x)], 1)

    def cells(self, env) -> torch.Tensor:
        return self.cell_values(*self.read(env))
