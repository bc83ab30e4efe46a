"""hamlet (gbx_lightning/roms/hamlet.asm) for the tests: its symbols, its maps read back from the ROM image, and
machines playing its stage traces. No pytest side effects here."""
from __future__ import annotations

import functools
from collections import deque
from dataclasses import dataclass

import numpy as np

from gbx_lightning.roms import asm, build_rom, hamlet, rom_source_path

ROM_NAME = "hamlet"
STEP_FRAMES = 24        # GameBoyEnv's default frames_per_step (hamlet.action_inputs' default)


@functools.lru_cache(maxsize=None)
def rom_and_symbols() -> tuple[bytes, dict]:
    path = rom_source_path(ROM_NAME)
    return asm.assemble_with_symbols(path.read_text(), origin_file=str(path), include_dirs=(str(path.parent),))


def word(rom: bytes, addr: int) -> int:
    return rom[addr] | rom[addr + 1] << 8


@dataclass
class MapData:
    """One map as the ROM holds it (hamlet_maps.inc; MH_* offsets in hamlet_world.inc)."""

    number: int
    width: int
    height: int
    song: int
    border: str
    rows: list[str]
    solid: set[str]                 # metatile codes whose collision bit is set
    warps: list[tuple[int, int, int, int, int]]
    objects: list[tuple[int, ...]]  # kind, x, y, facing, move, script, event, x2, y2
    signs: list[tuple[int, int, int]]

    def walkable(self, x: int, y: int) -> bool:
        return 0 <= x < self.width and 0 <= y < self.height and self.rows[y][x] not in self.solid


def read_maps(rom: bytes, s: dict) -> list[MapData]:
    maps = []
    for number in range(hamlet.MAP_SHRINE + 1):
        header = word(rom, s["MapHeaders"] + 2 * number)
        width, height, song, border = rom[header:header + 4]
        layout, _, collision, warps, objects, signs = (word(rom, header + 4 + 2 * k) for k in range(6))
        rows = [rom[layout + width * y: layout + width * (y + 1)].decode("latin-1") for y in range(height)]
        solid = {chr(0x20 + c) for c in range(96) if rom[collision + c] & 1}
        wl = [tuple(rom[warps + 1 + 5 * k: warps + 6 + 5 * k]) for k in range(rom[warps])]
        ol = [tuple(rom[objects + 1 + 9 * k: objects + 10 + 9 * k]) for k in range(rom[objects])]
        sl = [tuple(rom[signs + 1 + 3 * k: signs + 4 + 3 * k]) for k in range(rom[signs])]
        maps.append(MapData(number, width, height, song, chr(border), rows, solid, wl, ol, sl))
    return maps


def reachable(m: MapData, start: tuple[int, int], blocked: set[tuple[int, int]] = frozenset()) -> set:
    """Steps reachable on foot from `start` (4-neighbours, walkable, not in `blocked`, not through warps: a step
    onto a warp leaves the map)."""
    warps = {(w[0], w[1]) for w in m.warps}
    seen, todo = {start}, deque([start])
    while todo:
        x, y = todo.popleft()
        if (x, y) in warps and (x, y) != start:
            continue
        for nx, ny in ((x + 1, y), (x - 1, y), (x, y + 1), (x, y - 1)):
            if m.walkable(nx, ny) and (nx, ny) not in blocked and (nx, ny) not in seen:
                seen.add((nx, ny))
                todo.append((nx, ny))
    return seen


def stage_route_masks(stage: int, actions: str | None = None) -> np.ndarray:
    """uint8 [frames]: the stage-select inputs, then the route's actions as GameBoyEnv takes them (the stage's
    shortest route, hamlet.ROUTES, unless `actions`)."""
    actions = hamlet.ROUTES[stage] if actions is None else actions
    start = hamlet.stage_start_frames(stage)
    trace = hamlet.stage_inputs(stage) + hamlet.action_inputs(actions, start)
    return np.array(hamlet.buttons_per_frame(trace, start + STEP_FRAMES * len(actions)), np.uint8)


def machine(num_envs: int):
    import warp as wp

    from gbx_lightning.emu.machine import VecGameBoy

    wp.config.quiet = True
    return VecGameBoy(rom_and_symbols()[0], num_envs)


def wram(gb, env: int = 0) -> dict:
    """The variables the tests read, by hamlet.py's names."""
    b = gb.read_memory(env, 0xC100, 0x120)
    return {"map": b[0], "events": b[1] | b[2] << 8, "bag": list(b[4:4 + b[3]]), "pc": list(b[9:9 + b[8]]),
            "text_speed": b[0x0D], "sound": b[0x0E], "saves": b[0x0F], "ui": b[0x10], "ctx": b[0x11],
            "late": b[0x17], "steps": b[0x18] | b[0x19] << 8, "stage": b[0x1A],
            "x": b[0x101], "y": b[0x102], "facing": b[0x103], "walk": b[0x104]}


def build_rom_bytes() -> bytes:
    return build_rom(ROM_NAME)
