"""Project-authored ROMs, kept as assembly source and built on demand.

The embedded default task must not depend on a user-supplied ROM, so its
source lives in this package and is assembled by :mod:`gbx_lightning.roms.asm`
(which is deterministic: the same source always gives the same bytes).
"""
from __future__ import annotations

import functools
from pathlib import Path

from gbx_lightning.roms.asm import AsmError, assemble

__all__ = ["ROM_DIR", "AsmError", "assemble", "available_roms", "build_rom", "rom_source_path"]

ROM_DIR = Path(__file__).resolve().parent


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
