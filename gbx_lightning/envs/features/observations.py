"""Structured observations (a feature): named RAM fields, a visited-cells grid and a grid of the things near the
player beside the pixels (``GameBoyEnv``'s ``obs``).

    obs:
      ram: [player_y, player_x, seeds_left]    # fields of the task's RAM map (or WRAM addresses: one byte each)
      visited: {radius: 2, stride: 8}          # the explore item's cells around the player: a 5 x 5 grid
      nearby: {things: [hazard_y, hazard_x], around: [player_y, player_x], radius: 3, stride: 8,
               value: hazard_dir, count: num_hazards}   # where the beetles are, seen from the player: 7 x 7

Pixels only (``obs: null``, the default) is unchanged: ``[K, 72, 80]``. With ``obs`` the observation gains one
plane in front, the *data plane*: ``obs[:, 0]`` (uint8 ``[72, 80]``, read row-major as 5,760 bytes) holds a
vector, and the frames follow (``obs[:, 1:]``, the newest last, as before). The vector, in order:

  * each ``ram`` field's numbers (its ``count``), each as ``size`` bytes, little endian, of the value
    ``FieldReader`` decodes (big-endian and BCD fields decoded; a one-byte field is the byte ``read_ram`` reads);
  * with ``visited``, ``(2r + 1)**2`` bytes, row-major from ``(dy, dx) = (-r, -r)`` to ``(r, r)``: 255 where the
    cell ``(y + dy * stride, x + dx * stride)`` (the other fields as they are now) is one the task's ``explore``
    reward item has marked in this episode, else 0 (also 0 outside the fields' range; an explore item with
    ``world: true``: the world tiles around the player's, across map edges). ``y, x``: the explore
    item's last two fields (Pokemon Red's ``[map, y, x]``, orchard's ``[player_y, player_x]``); the middle
    byte, the player's own cell, is always 255. It is what the item pays for, so it can be hashed like it;
  * with ``nearby``, ``(2r + 1)**2`` bytes, row-major from ``(dy, dx) = (-r, -r)``: the cell of each thing
    (``things``: a y and an x field with one number per thing, e.g. a sprite table) at its offset from
    ``around`` (the player's y and x), rounded to the nearest ``stride`` (half up); 0 where nothing is, 255
    where something is, or with ``value`` (a field with a number per thing) ``0x80 | value & 0x7F`` OR'd over
    the things in the cell. ``count``: a field holding how many of the things are live (the first ones);
    ``empty_value``: the ``value`` that marks an empty slot (hamlet's NPC kind 0), not drawn.
    Positions the screen shows at 72 x 80 are there too, but as pixels anywhere on it: a danger two tiles
    ahead is one byte here, the same byte wherever the player stands;
  * zeros to the end of the plane.

``GameBoyEnv.obs_vector`` is the vector's length (0 for pixels only); the module hands it to a policy that takes
``vector_size`` (``models.PixelVectorPolicy``: a CNN over the frames beside an MLP over the vector).

None of it is env state: it is read from the machines' RAM and the explore item's bitset (both in checkpoints)
each time an observation is made, on the device for every env at once, so a restored env observes what the saved
one did and a pixels-only env's checkpoints are what they were.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TypedDict

import torch

from ..base import OptionError
from ..ram_map import FieldReader, RamField, RamMap, resolve_field
from ..rewards import cell_index
from .base import Feature, Step

__all__ = ["DATA_PLANE_BYTES", "DataPlane", "Nearby", "NearbyFields", "ObsFields", "ObsLayout", "StructuredObs",
           "VisitedFields", "check_obs", "nearby_grid"]

DATA_PLANE_BYTES = 72 * 80   # one frame plane
MAX_RADIUS = 15              # a 31 x 31 grid at most
VISITED = 255


class VisitedFields(TypedDict, total=False):
    """The visited-cells grid: ``radius`` cells each side of the player's (0..15), ``stride`` the fields' units
    from one cell to the next (1: tiles; orchard's coordinates are pixels, 8 a tile)."""
    radius: int
    stride: int


class NearbyFields(TypedDict, total=False):
    """The grid of things near the player: ``things`` [y field, x field] (a number per thing each), ``around``
    [y field, x field] (the player's), ``radius`` cells each side (0..15), ``stride`` the fields' units per cell,
    ``value`` a field (a number per thing) stored in the cell, ``count`` a field: how many things are live,
    ``empty_value`` the value of an empty slot (not drawn)."""
    things: list[str | int]
    around: list[str | int]
    radius: int
    stride: int
    value: str | int | None
    count: str | int | None
    empty_value: int | None


class ObsFields(TypedDict, total=False):
    """What ``obs`` adds beside the pixels (module docstring): RAM map fields, the visited-cells grid, things near
    the player."""
    ram: list[str | int]
    visited: VisitedFields | None
    nearby: NearbyFields | None


@dataclass(frozen=True)
class Nearby:
    """A checked ``obs.nearby``."""
    things: tuple[RamField, RamField]
    around: tuple[RamField, RamField]
    radius: int
    stride: int
    value: RamField | None
    count: RamField | None
    empty_value: int | None = None

    @property
    def length(self) -> int:
        return (2 * self.radius + 1) ** 2


@dataclass(frozen=True)
class ObsLayout:
    """A checked ``obs``: the fields, the grid (radius None: none) and where the explore item is in the reward,
    the grid of things nearby (None: none)."""
    fields: tuple[RamField, ...]
    radius: int | None
    stride: int
    explore_index: int | None   # the explore item's index in the task's reward list
    nearby: Nearby | None = None

    @property
    def grid(self) -> int:
        return 0 if self.radius is None else (2 * self.radius + 1) ** 2

    @property
    def length(self) -> int:
        near = 0 if self.nearby is None else self.nearby.length
        return sum(f.count * f.size for f in self.fields) + self.grid + near


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _int_in(where: str, value, low: int, high: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low or high is not None and value > high:
        span = f"in [{low}, {high}]" if high is not None else f">= {low}"
        raise OptionError(where, f"must be an int {span}, got {_short(value)}")
    return value


def _no_unknown(where: str, spec: Mapping, fields: type) -> None:
    """OptionError("<where>.<key>", ...) for the first key of ``spec`` that ``fields`` (a TypedDict) lacks."""
    unknown = sorted(set(spec) - set(fields.__annotations__), key=str)
    if unknown:
        raise OptionError(f"{where}.{unknown[0]}", f"is not a field of {where.rsplit('.', 1)[-1]}; fields: "
                                                  f"{', '.join(fields.__annotations__)}")


def check_obs(spec, reward, ram_map: RamMap | None) -> ObsLayout | None:
    """The layout of ``spec`` (the env's ``obs`` option) for a task's ``reward`` list and ``ram_map``; None for
    pixels only. OptionError("obs.<field>", ...) names the first problem."""
    if spec is None:
        return None
    if not isinstance(spec, Mapping):
        raise OptionError("obs", f"must be a mapping (ram: [fields], visited: {{radius: r}}) or null (pixels only), "
                                 f"got {_short(spec)}")
    _no_unknown("obs", spec, ObsFields)
    refs = spec.get("ram") or []
    if not isinstance(refs, (list, tuple)):
        raise OptionError("obs.ram", f"must be a list of RAM map field names (or WRAM addresses), got {_short(refs)}")
    fields = tuple(resolve_field(ram_map, ref, f"obs.ram[{i}]") for i, ref in enumerate(refs))
    visited = spec.get("visited")
    radius, stride, explore_index = None, 1, None
    if visited is not None:
        if not isinstance(visited, Mapping):
            raise OptionError("obs.visited", f"must be a mapping (radius, stride) or null, got {_short(visited)}")
        _no_unknown("obs.visited", visited, VisitedFields)
        radius = _int_in("obs.visited.radius", visited.get("radius", 2), 0, MAX_RADIUS)
        stride = _int_in("obs.visited.stride", visited.get("stride", 1), 1)
        items = reward if isinstance(reward, (list, tuple)) else []
        explore_index = next((i for i, item in enumerate(items) if isinstance(item, Mapping) and
                              item.get("name") == "explore"), None)
        if explore_index is None:
            raise OptionError("obs.visited", "needs an explore item in the task's reward (its fields' last two are the "
                                             "player's y and x; e.g. {name: explore, fields: [map, y, x]}): the "
                                             "grid shows the cells it has marked")
        if not items[explore_index].get("world") and len(items[explore_index].get("fields") or []) < 2:
            raise OptionError("obs.visited", f"needs the task's explore item (reward[{explore_index}]) to have at "
                                             f"least two fields, the player's y and x last")
    nearby = _check_nearby(spec.get("nearby"), ram_map)
    if not fields and radius is None and nearby is None:
        raise OptionError("obs", "adds nothing: give ram (a list of RAM map fields), visited or nearby, or obs: null "
                                 "for pixels only")
    layout = ObsLayout(fields, radius, stride, explore_index, nearby)
    if layout.length > DATA_PLANE_BYTES:
        raise OptionError("obs", f"needs {layout.length} bytes, more than the data plane's {DATA_PLANE_BYTES} "
                                 f"(72 x 80): fewer or smaller ram fields, or a smaller visited radius")
    return layout


def _check_nearby(spec, ram_map: RamMap | None) -> Nearby | None:
    """``obs.nearby`` checked (``Nearby``), or None; OptionError("obs.nearby.<field>", ...) names the problem."""
    if spec is None:
        return None
    if not isinstance(spec, Mapping):
        raise OptionError("obs.nearby", f"must be a mapping (things: [y, x], around: [y, x], radius, stride, value, "
                                        f"count) or null, got {_short(spec)}")
    _no_unknown("obs.nearby", spec, NearbyFields)
    pairs = {}
    for key in ("things", "around"):
        refs = spec.get(key)
        if not isinstance(refs, (list, tuple)) or len(refs) != 2:
            raise OptionError(f"obs.nearby.{key}", f"must be two RAM map fields, y then x, got {_short(refs)}")
        pairs[key] = tuple(resolve_field(ram_map, ref, f"obs.nearby.{key}[{i}]") for i, ref in enumerate(refs))
    (ty, tx), (ay, ax) = pairs["things"], pairs["around"]
    if ty.count != tx.count:
        raise OptionError("obs.nearby.things", f"y and x must hold as many numbers: {ty.name} has {ty.count}, "
                                               f"{tx.name} {tx.count}")
    if ay.count != 1 or ax.count != 1:
        raise OptionError("obs.nearby.around", f"must be one number each (the player's y and x), got "
                                               f"{ay.count} and {ax.count}")
    value = count = None
    if spec.get("value") is not None:
        value = resolve_field(ram_map, spec["value"], "obs.nearby.value")
        if value.count != ty.count:
            raise OptionError("obs.nearby.value", f"must hold a number per thing ({ty.count}), {value.name} has "
                                                  f"{value.count}")
    if spec.get("count") is not None:
        count = resolve_field(ram_map, spec["count"], "obs.nearby.count")
        if count.count != 1:
            raise OptionError("obs.nearby.count", f"must be one number, {count.name} has {count.count}")
    empty = spec.get("empty_value")
    if empty is not None:
        if value is None:
            raise OptionError("obs.nearby.empty_value", "needs value: the field whose number marks an empty slot")
        empty = _int_in("obs.nearby.empty_value", empty, 0)
    radius = _int_in("obs.nearby.radius", spec.get("radius", 2), 0, MAX_RADIUS)
    stride = _int_in("obs.nearby.stride", spec.get("stride", 1), 1)
    return Nearby((ty, tx), (ay, ax), radius, stride, value, count, empty)


def nearby_grid(things_y: torch.Tensor, things_x: torch.Tensor, y: torch.Tensor, x: torch.Tensor, radius: int,
                stride: int, value: torch.Tensor | None = None, live: torch.Tensor | None = None) -> torch.Tensor:
    """int64 [N, (2r+1)^2] (module docstring, ``nearby``): things at int64 [N, T] (y, x), the player at [N];
    ``value`` [N, T] stored as ``0x80 | value & 0x7F`` (OR'd per cell; None: 255), ``live`` bool [N, T] (None:
    all). A loop over the T things, never over the envs."""
    side = 2 * radius + 1
    cy = torch.div(things_y - y[:, None] + stride // 2, stride, rounding_mode="floor")
    cx = torch.div(things_x - x[:, None] + stride // 2, stride, rounding_mode="floor")
    inside = (cy.abs() <= radius) & (cx.abs() <= radius)
    if live is not None:
        inside &= live
    index = ((cy + radius) * side + (cx + radius)).clamp(0, side * side - 1)
    mark = torch.full_like(cy, 255) if value is None else 0x80 | (value & 0x7F)
    mark = torch.where(inside, mark, 0)
    grid = torch.zeros((cy.shape[0], side * side), dtype=torch.int64, device=cy.device)
    for t in range(cy.shape[1]):
        cell = index[:, t:t + 1]
        grid.scatter_(1, cell, grid.gather(1, cell) | mark[:, t:t + 1])
    return grid


class StructuredObs:
    """The data plane of ``layout`` for every env (module docstring); ``explore``: the task's explore item
    (``ram_rewards.Explore``, its bitset read, never written) when the layout has a grid."""

    def __init__(self, layout: ObsLayout, explore, device: torch.device):
        self.layout = layout
        self.readers = [FieldReader(f, device) for f in layout.fields]
        self.shifts = [8 * torch.arange(f.size, device=device) for f in layout.fields]
        # where every number's bytes are its RAM bytes in order (binary, little endian or one byte): one gather
        self.raw = None
        if layout.fields and all(not f.bcd and (f.size == 1 or f.endian == "little") for f in layout.fields):
            addresses = [f.address + k * f.step + j for f in layout.fields for k in range(f.count) for j in range(f.size)]
            base = min(addresses)
            self.raw = (base, max(addresses) - base + 1, torch.tensor([a - base for a in addresses], device=device))
        self.explore = explore
        if layout.radius is not None:
            r, s = layout.radius, layout.stride
            steps = torch.arange(-r, r + 1, device=device) * s
            self.dy = steps[:, None].expand(-1, 2 * r + 1).reshape(-1)     # [(2r+1)^2], row-major
            self.dx = steps[None, :].expand(2 * r + 1, -1).reshape(-1)
            # the largest y and x the explore item's fields hold (made once: no host-to-device copy per step)
            self.limits = torch.tensor([(1 << w) - 1 for w in explore.widths[-2:]], device=device)
        near = layout.nearby
        if near is not None:
            self.near_readers = {k: FieldReader(f, device) for k, f in (("ty", near.things[0]), ("tx", near.things[1]),
                                 ("y", near.around[0]), ("x", near.around[1]), ("value", near.value),
                                 ("count", near.count)) if f is not None}
            self.near_slots = torch.arange(near.things[0].count, device=device)

    @property
    def length(self) -> int:
        return self.layout.length

    def vector(self, env, mark_current: bool = False) -> torch.Tensor:
        """uint8 [N, length] from the env's RAM now and the explore item's bitset. ``mark_current``: as the bitset
        will be once the explore item has marked the cells the envs stand on (a step's final observation, read
        before the item marks them and forgets the episodes that ended)."""
        if self.raw is not None:
            base, span, offsets = self.raw
            parts = [env.read_ram(base, span)[:, offsets]]
        else:
            parts = [((values[:, :, None] >> shifts) & 0xFF).reshape(values.shape[0], -1)
                     for values, shifts in ((r(env), sh) for r, sh in zip(self.readers, self.shifts))]
        if self.layout.radius is not None:
            parts.append(self.visited_grid(env, mark_current))
        if self.layout.nearby is not None:
            parts.append(self.nearby_grid(env))
        return torch.cat(parts, 1).to(torch.uint8)

    def nearby_grid(self, env) -> torch.Tensor:
        """int64 [N, (2r+1)^2]: ``nearby_grid`` of the RAM now."""
        near, read = self.layout.nearby, {k: r(env) for k, r in self.near_readers.items()}
        live = self.near_slots[None, :] < read["count"] if "count" in read else None
        if near.empty_value is not None:
            filled = read["value"] != near.empty_value
            live = filled if live is None else live & filled
        return nearby_grid(read["ty"], read["tx"], read["y"][:, 0], read["x"][:, 0], near.radius, near.stride,
                           read.get("value"), live)

    def visited_grid(self, env, mark_current: bool = False) -> torch.Tensor:
        """int64 [N, (2r+1)^2]: 255 where the cell at each offset from the player's is marked, else 0."""
        e = self.explore
        # int64 [N, F]; an explore item over world tiles: (region, Y, X), the grid's neighbours in the world
        values = e.world.cells(env) if e.world is not None else torch.stack([r(env)[:, 0] for r in e.readers], 1)
        n, g = values.shape[0], self.dy.shape[0]
        cells = values[:, None, :].expand(n, g, -1).clone()                # [N, G, F]
        cells[:, :, -2] += self.dy
        cells[:, :, -1] += self.dx
        limits = self.limits
        inside = ((cells[:, :, -2:] >= 0) & (cells[:, :, -2:] <= limits)).all(-1)           # [N, G]
        cells[:, :, -2:] = torch.minimum(cells[:, :, -2:].clamp(min=0), limits)
        index = cell_index(cells.reshape(n * g, -1), e.widths, e.log2_bits).reshape(n, g)
        marked = ((e.visited.gather(1, index >> 6) >> (index & 63)) & 1).bool()
        if mark_current:
            here = cell_index(values, e.widths, e.log2_bits)
            marked = marked | (index == here[:, None])
        return torch.where(marked & inside, VISITED, 0)

    @staticmethod
    def plane(vector: torch.Tensor) -> torch.Tensor:
        """uint8 [N, 1, 72, 80]: the vector, then zeros."""
        n = vector.shape[0]
        out = torch.zeros((n, DATA_PLANE_BYTES), dtype=torch.uint8, device=vector.device)
        out[:, :vector.shape[1]] = vector
        return out.view(n, 1, 72, 80)


class DataPlane(Feature):
    """The env's ``obs`` option as a feature: one plane in front of the frames (``obs_vector`` bytes of it). The
    step's final observation reads the RAM and the explore item's cells as they are at the step's end (``after_step``,
    before the reward items run: the explore item then marks the cells and forgets the episodes that ended); the
    next observation reads them after the resets."""
    name = "obs"
    title = "(none)"
    obs_planes = 1

    @classmethod
    def check(cls, task, options: dict, cart) -> None:
        check_obs(options.get("obs"), task.reward, task.ram_map)

    @classmethod
    def build(cls, task, env) -> "DataPlane | None":
        layout = check_obs(env.options.get("obs"), task.reward, task.ram_map)
        return cls(layout, env) if layout is not None else None

    def __init__(self, layout: ObsLayout, env):
        self.layout, self.env = layout, env
        self.obs_vector = layout.length
        self._data = None
        self._final = None
        self._next = None   # the next observation's vector, where the step's final one is it (nothing reset)

    @property
    def data(self) -> StructuredObs:
        """The plane's reader, made at first use: the explore item it reads is the reward feature's, built after
        this one's place in the order."""
        if self._data is None:
            index = self.layout.explore_index
            explore = None if index is None else self.env.reward_pipeline.items[index][1]
            self._data = StructuredObs(self.layout, explore, self.env.device)
        return self._data

    def after_step(self, step: Step) -> None:
        # this step's RAM, the cells as the explore item is about to mark them. Where no episode ended, nothing is
        # restored and the item marks exactly those cells: the final vector is then the next one, read once (later)
        self._final = None if step.none_ended else self.data.vector(self.env, mark_current=True)

    def reset(self, step: Step | None) -> None:
        self._next = None

    def observation(self, final: bool) -> torch.Tensor:
        if final:
            if self._final is None:
                self._final = self._next = self.data.vector(self.env)
            return StructuredObs.plane(self._final)
        vector, self._next = self._next, None
        return StructuredObs.plane(vector if vector is not None else self.data.vector(self.env))
