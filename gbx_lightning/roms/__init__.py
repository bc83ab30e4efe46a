"""Project-authored ROMs, kept as assembly source and built on demand, and the built-in tasks.

The embedded default task must not depend on a user-supplied ROM, so its
source lives in this package and is assembled by :mod:`gbx_lightning.roms.asm`
(which is deterministic: the same source always gives the same bytes).

Built-in tasks are YAML files under ``tasks/``: the task ``GAME/NAME`` (e.g.
``orchard/level1``) is ``tasks/GAME/NAME.yaml`` (``gbx_lightning/envs/task.py``
reads them); ``tasks/GAME/ram.yaml`` is that game's RAM map (``envs/ram_map.py``). ``resolve_rom`` turns a ROM option (a built-in name or a file path)
into what the emulator loads. Pure Python: no torch or warp import.
"""
from __future__ import annotations

import functools
import os
from pathlib import Path

from gbx_lightning.roms.asm import AsmError, assemble

__all__ = ["ROM_DIR", "TASK_DIR", "AsmError", "assemble", "available_roms", "available_tasks", "build_rom",
           "resolve_rom", "rom_source_path", "task_path"]

ROM_DIR = Path(__file__).resolve().parent
TASK_DIR = ROM_DIR / "tasks"


def available_roms() -> list[str]:
    """Names of the ROM sources shipped in this package (without .asm)."""
    return sorted(p.stem for p in ROM_DIR.glob("*.asm"))


def rom_source_path(name: str) -> Path:
    """Path of the packaged source `name` (with or without the .asm suffix)."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"name: expected a ROM name such as {available_roms() or ['<none yet>']}, got {name!r}")
    stem = name[:-4] if name.endswith(".asm") else name
    path = ROM_DIR / f"{stem}.asm"
    if "/" in stem or "\\" in stem or not path.is_file():
        raise ValueError(f"name: no packaged ROM source {stem!r}; available: {available_roms()}")
    return path


@functools.lru_cache(maxsize=None)
def build_rom(name: str) -> bytes:
    """Assemble the packaged ROM `name` once per process and return its image."""
    path = rom_source_path(name)
    return assemble(path.read_text(), origin_file=str(path), include_dirs=(str(ROM_DIR),))


def resolve_rom(rom: str | os.PathLike) -> tuple[bytes | str, str]:
    """A built-in ROM name (``available_roms()``; a file of that name wins) or a ROM file path ->
    (what VecGameBoy loads: the built image or the path, a display name). FileNotFoundError for a
    missing file, TypeError for anything else."""
    if not isinstance(rom, (str, os.PathLike)):
        raise TypeError(f"rom must be a built-in ROM name {available_roms()} or a .gb file path, got {rom!r}")
    try:
        is_file = Path(rom).is_file()
    except (OSError, ValueError):   # a name the file system refuses (too long, a NUL byte): not a file
        is_file = False
    if not is_file and str(rom) in available_roms():
        return build_rom(str(rom)), str(rom)
    if not is_file:
        raise FileNotFoundError(f"no ROM file at {os.fspath(rom)!r} "
                                f"(built-in ROMs: {', '.join(available_roms())})")
    return os.fspath(rom), os.fspath(rom)


def available_tasks() -> list[str]:
    """Names of the built-in tasks ("orchard/level1", ...): the YAML files under tasks/ (a game's RAM map,
    tasks/GAME/ram.yaml, is not a task: envs/ram_map.py)."""
    return sorted(p.relative_to(TASK_DIR).with_suffix("").as_posix() for p in TASK_DIR.glob("*/*.yaml")
                  if p.name != "ram.yaml")


def task_path(name: str) -> Path | None:
    """The file of the built-in task `name` ("GAME/NAME" -> tasks/GAME/NAME.yaml), None if there is none."""
    if not isinstance(name, str) or name not in available_tasks():
        return None
    return TASK_DIR / f"{name}.yaml"
