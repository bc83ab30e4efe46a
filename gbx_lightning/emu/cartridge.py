"""Cartridge loading: read a ROM, parse its header, refuse what we cannot run.

Everything here is checked on the host before any kernel work, so a bad file
fails with one clear line instead of a crash deep in a Warp launch. Header
layout and codes: Pan Docs, "The Cartridge Header".
"""
from __future__ import annotations

import hashlib
import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

__all__ = [
    "RomError", "RomWarning", "Cartridge", "load_cartridge", "load_boot_rom",
    "CART_TYPE_NAMES", "SUPPORTED_CART_TYPES", "MBC_NONE", "MBC1", "MBC2", "MBC3", "MBC5",
    "NINTENDO_LOGO", "is_mbc1_multicart",
]

MBC_NONE, MBC1, MBC2, MBC3, MBC5 = 0, 1, 2, 3, 5   # same values as emu.mbc
MBC2_RAM_BYTES = 512                              # 512 x 4 bits inside the MBC2 (emu.mbc)

BANK_SIZE = 0x4000
MIN_ROM_SIZE = 2 * BANK_SIZE
MAX_ROM_SIZE = 512 * BANK_SIZE      # 8 MiB, header code $08: the most an MBC5 reaches
BOOT_ROM_SIZE = 256


class RomError(ValueError):
    """A ROM (or boot ROM) the emulator cannot run; the message says what and why."""


class RomWarning(UserWarning):
    """Something odd in a ROM that still runs (e.g. a bad header checksum in homebrew)."""


# $0147 cartridge type -> name (Pan Docs). All of them are named in errors;
# only those in SUPPORTED_CART_TYPES run.
CART_TYPE_NAMES = {
    0x00: "ROM ONLY", 0x01: "MBC1", 0x02: "MBC1+RAM", 0x03: "MBC1+RAM+BATTERY",
    0x05: "MBC2", 0x06: "MBC2+BATTERY", 0x08: "ROM+RAM", 0x09: "ROM+RAM+BATTERY",
    0x0B: "MMM01", 0x0C: "MMM01+RAM", 0x0D: "MMM01+RAM+BATTERY",
    0x0F: "MBC3+TIMER+BATTERY", 0x10: "MBC3+TIMER+RAM+BATTERY", 0x11: "MBC3",
    0x12: "MBC3+RAM", 0x13: "MBC3+RAM+BATTERY",
    0x19: "MBC5", 0x1A: "MBC5+RAM", 0x1B: "MBC5+RAM+BATTERY", 0x1C: "MBC5+RUMBLE",
    0x1D: "MBC5+RUMBLE+RAM", 0x1E: "MBC5+RUMBLE+RAM+BATTERY",
    0x20: "MBC6", 0x22: "MBC7+SENSOR+RUMBLE+RAM+BATTERY",
    0xFC: "POCKET CAMERA", 0xFD: "BANDAI TAMA5", 0xFE: "HuC3", 0xFF: "HuC1+RAM+BATTERY",
}

# type -> (mbc kind, has RAM, has battery, has RTC)
SUPPORTED_CART_TYPES = {
    0x00: (MBC_NONE, False, False, False),
    0x08: (MBC_NONE, True, False, False),
    0x09: (MBC_NONE, True, True, False),
    0x01: (MBC1, False, False, False),
    0x02: (MBC1, True, False, False),
    0x03: (MBC1, True, True, False),
    0x05: (MBC2, False, False, False),     # (RAM built into the MBC2: sized below, not from $0149)
    0x06: (MBC2, False, True, False),
    0x0F: (MBC3, False, True, True),
    0x10: (MBC3, True, True, True),
    0x11: (MBC3, False, False, False),
    0x12: (MBC3, True, False, False),
    0x13: (MBC3, True, True, False),
    0x19: (MBC5, False, False, False),
    0x1A: (MBC5, True, False, False),
    0x1B: (MBC5, True, True, False),
    0x1C: (MBC5, False, False, False),
    0x1D: (MBC5, True, False, False),
    0x1E: (MBC5, True, True, False),
}
_SUPPORTED_TEXT = ("$00 ROM ONLY, $08/$09 ROM+RAM, $01-$03 MBC1 (and MBC1M multicarts), "
                   "$05/$06 MBC2, $0F-$13 MBC3, $19-$1E MBC5")

# The 48-byte logo at $0104-$0133 that the boot ROM compares (Pan Docs, "The Cartridge Header").
NINTENDO_LOGO = bytes.fromhex(
    "CEED6666CC0D000B03730083000C000D0008111F8889000E"
    "DCCC6EE6DDDDD999BBBB67636E0EECCCDDDC999FBBB9333E"
)
MULTICART_SIZE = 1024 * 1024
SUB_ROM_SIZE = 256 * 1024

# $0149 RAM size code -> 8 KiB banks. Code $01 is unused by licensed carts
# (old docs say 2 KiB); we give it one 8 KiB bank so such homebrew still runs.
RAM_BANKS_BY_CODE = {0x00: 0, 0x01: 1, 0x02: 1, 0x03: 4, 0x04: 16, 0x05: 8}


def is_mbc1_multicart(rom: np.ndarray) -> bool:
    """True for an MBC1M multi-game cart: a 1 MiB image whose second 256 KiB sub-ROM (bank $10)
    starts with its own header, i.e. the Nintendo logo at $40104.

    Pan Docs (MBC1, "MBC1M 1 MiB Multi-Game Compilation Carts"): "These carts can normally be
    identified by having a Nintendo copyright header in bank $10." A plain 1 MiB MBC1 game has
    code or data there, not a second logo. (The sub-ROMs at $80000/$C0000 usually repeat it
    too; one logo is enough, as Pan Docs states it. Other emulators differ: PyBoy 2.8 wants
    the logo in all 64 banks; gambatte, when asked for multicart support, takes every 1 MiB
    MBC1 without RAM for one.)
    """
    if rom.size != MULTICART_SIZE:
        return False
    at = SUB_ROM_SIZE + 0x104
    return bytes(rom[at:at + len(NINTENDO_LOGO)]) == NINTENDO_LOGO


def _header_checksum(rom: np.ndarray) -> int:
    x = 0
    for b in rom[0x134:0x14D].tolist():
        x = (x - b - 1) & 0xFF
    return x


@dataclass(frozen=True, eq=False)
class Cartridge:
    """A validated ROM image and what its header says about the hardware."""

    rom: np.ndarray            # uint8, the whole file (read-only)
    title: str
    cart_type: int             # header byte $0147
    mbc: int                   # MBC_NONE / MBC1 / MBC2 / MBC3 / MBC5
    rom_banks: int             # 16 KiB banks
    ram_bytes: int             # cartridge RAM the emulator allocates per env (MBC2: 512 nibbles)
    has_battery: bool
    has_rtc: bool
    header_checksum_ok: bool
    global_checksum_ok: bool
    sha256: str
    source: str = field(default="<bytes>")   # path, or "<bytes>"
    multicart: bool = False    # MBC1M wiring (see is_mbc1_multicart)

    @property
    def ram_banks(self) -> int:
        """8 KiB banks of external RAM (0 for MBC2, whose 512 nibbles are inside the MBC)."""
        return self.ram_bytes // 0x2000

    @property
    def cart_type_name(self) -> str:
        name = CART_TYPE_NAMES.get(self.cart_type, "unknown")
        return name.replace("MBC1", "MBC1M", 1) if self.multicart else name

    def spec(self):
        """The Warp CartSpec for the kernels (imports Warp only when asked)."""
        from .mbc import make_cart_spec
        return make_cart_spec(self.mbc, self.rom_banks, self.ram_banks, self.has_rtc, self.multicart)

    def __repr__(self) -> str:
        return (f"Cartridge({self.title!r}, type=${self.cart_type:02X} {self.cart_type_name}, "
                f"rom={self.rom_banks}x16KiB, ram={self.ram_bytes}B, sha256={self.sha256[:12]})")


def _read_source(rom, what: str) -> tuple[bytes, str]:
    """Bytes and a display name from a path or a bytes-like object."""
    if isinstance(rom, (bytes, bytearray, memoryview)):
        return bytes(rom), f"<{len(rom)} bytes>"
    if isinstance(rom, np.ndarray):
        if rom.dtype != np.uint8 or rom.ndim != 1:
            raise TypeError(f"{what}: expected a 1-D uint8 array, got {rom.dtype} with shape {rom.shape}")
        return rom.tobytes(), f"<{rom.size} bytes>"
    if isinstance(rom, (str, os.PathLike)):
        path = Path(rom)
        if not path.exists():
            raise RomError(f"{what}: file not found: {str(path)!r}")
        if not path.is_file():
            raise RomError(f"{what}: {str(path)!r} is not a file")
        return path.read_bytes(), str(path)
    raise TypeError(f"{what}: expected a file path or bytes, got {type(rom).__name__}")


def load_cartridge(rom) -> Cartridge:
    """Load and validate a ROM from a path or bytes; raises RomError naming what is wrong."""
    data, name = _read_source(rom, "rom")
    size = len(data)
    if size < MIN_ROM_SIZE:
        raise RomError(f"ROM {name} is {size} bytes; a Game Boy ROM is at least "
                       f"{MIN_ROM_SIZE} bytes (32 KiB)")
    if size % BANK_SIZE:
        raise RomError(f"ROM {name} is {size} bytes, not a multiple of {BANK_SIZE} "
                       "(16 KiB banks); the file is truncated or padded")
    arr = np.frombuffer(data, dtype=np.uint8).copy()
    arr.setflags(write=False)

    rom_code = int(arr[0x148])
    if rom_code > 8:
        raise RomError(f"ROM {name}: header byte $0148 (ROM size) is ${rom_code:02X}; "
                       "known codes are $00-$08 (32 KiB << code)")
    declared = MIN_ROM_SIZE << rom_code
    if declared > size:
        raise RomError(f"ROM {name}: header byte $0148 = ${rom_code:02X} declares {declared // 1024} KiB "
                       f"({declared // BANK_SIZE} banks) but the file is {size} bytes "
                       f"({size / 1024:g} KiB, {size // BANK_SIZE} banks)")
    if declared < size:
        # A file larger than its header says runs as the file (gambatte, PyBoy): the MBC's bank
        # lines reach every bank of it (gbmicrotest's mbc1_rom_banks: 32 KiB declared, 2 MiB file).
        # Bank numbers wrap at a power of two, so only such a size can be the whole of a cart.
        if size & (size - 1) or size > MAX_ROM_SIZE:
            raise RomError(f"ROM {name}: header byte $0148 = ${rom_code:02X} declares {declared // 1024} KiB "
                           f"but the file is {size} bytes ({size // BANK_SIZE} banks); a file larger "
                           f"than its header must be a power of two up to {MAX_ROM_SIZE // 1024} KiB")
        warnings.warn(f"ROM {name}: header byte $0148 = ${rom_code:02X} declares {declared // 1024} KiB "
                      f"but the file is {size // 1024} KiB; using all {size // BANK_SIZE} banks of the "
                      "file", RomWarning, stacklevel=2)

    cart_type = int(arr[0x147])
    if cart_type not in SUPPORTED_CART_TYPES:
        label = CART_TYPE_NAMES.get(cart_type, "unknown type")
        raise RomError(f"ROM {name}: cartridge type ${cart_type:02X} ({label}) is not supported; "
                       f"supported: {_SUPPORTED_TEXT}")
    kind, has_ram, has_battery, has_rtc = SUPPORTED_CART_TYPES[cart_type]

    ram_code = int(arr[0x149])
    if ram_code not in RAM_BANKS_BY_CODE:
        raise RomError(f"ROM {name}: header byte $0149 (RAM size) is ${ram_code:02X}; "
                       "valid codes are $00-$05")
    ram_banks = RAM_BANKS_BY_CODE[ram_code]
    if kind == MBC2:
        # Pan Docs, $0149: an MBC2 cart must declare $00; its 512 x 4 bits are in the MBC itself.
        if ram_code:
            warnings.warn(f"ROM {name}: header byte $0149 = ${ram_code:02X}, but an MBC2 cartridge "
                          "declares $00 (its 512 x 4-bit RAM is built into the MBC2); using the "
                          "built-in RAM only", RomWarning, stacklevel=2)
        ram_banks = 0
    elif ram_banks and not has_ram:
        warnings.warn(f"ROM {name}: header declares RAM (code ${ram_code:02X}) but cartridge type "
                      f"${cart_type:02X} ({CART_TYPE_NAMES[cart_type]}) has none; ignoring it",
                      RomWarning, stacklevel=2)
        ram_banks = 0
    if kind == MBC1 and ram_banks > 4:
        # Its 2 RAM bank bits reach 4 banks; a header asking for more (gbmicrotest's
        # mbc1_rom_banks: 128 KiB) gets those 4: the rest could never be selected.
        warnings.warn(f"ROM {name}: header byte $0149 = ${ram_code:02X} asks for {ram_banks * 8} KiB of "
                      "RAM, but an MBC1 addresses 32 KiB (4 banks); using 32 KiB", RomWarning, stacklevel=2)
        ram_banks = 4
    if kind == MBC1 and size > 2 * 1024 * 1024:
        raise RomError(f"ROM {name}: MBC1 addresses at most 2 MiB of ROM, the file is {size // 1024} KiB")
    if kind == MBC2 and size > 256 * 1024:
        raise RomError(f"ROM {name}: MBC2 addresses at most 256 KiB of ROM (16 banks), the file "
                       f"is {size // 1024} KiB")
    if kind == MBC3 and size > 2 * 1024 * 1024:
        raise RomError(f"ROM {name}: MBC3 addresses at most 2 MiB of ROM, the file is {size // 1024} KiB")

    header_ok = _header_checksum(arr) == int(arr[0x14D])
    if not header_ok:
        warnings.warn(f"ROM {name}: header checksum at $014D is ${int(arr[0x14D]):02X}, computed "
                      f"${_header_checksum(arr):02X} (real hardware would refuse to boot it)",
                      RomWarning, stacklevel=2)
    total = (int(arr.sum(dtype=np.int64)) - int(arr[0x14E]) - int(arr[0x14F])) & 0xFFFF
    global_ok = total == (int(arr[0x14E]) << 8 | int(arr[0x14F]))
    if int(arr[0x143]) == 0xC0:
        warnings.warn(f"ROM {name}: header byte $0143 = $C0 marks a Game Boy Color-only game; "
                      "this emulator is a DMG and the game may refuse to run", RomWarning, stacklevel=2)

    return Cartridge(
        rom=arr,
        title=_decode_title(arr),
        cart_type=cart_type,
        mbc=kind,
        rom_banks=size // BANK_SIZE,
        ram_bytes=MBC2_RAM_BYTES if kind == MBC2 else ram_banks * 0x2000,
        has_battery=has_battery,
        has_rtc=has_rtc,
        header_checksum_ok=header_ok,
        global_checksum_ok=global_ok,
        sha256=hashlib.sha256(data).hexdigest(),
        source=name,
        multicart=kind == MBC1 and is_mbc1_multicart(arr),
    )


def _decode_title(arr: np.ndarray) -> str:
    # 16 bytes at $0134; CGB-era carts reuse $0143 (and $013F-$0142) for flags.
    raw = bytes(arr[0x134:0x144])
    if raw[15] & 0x80:
        raw = raw[:15]
    raw = raw.split(b"\x00", 1)[0]
    return "".join(chr(b) if 0x20 <= b < 0x7F else "?" for b in raw).rstrip()


def load_boot_rom(boot_rom) -> np.ndarray:
    """Load a 256-byte DMG boot ROM from a path or bytes, as a read-only uint8 array."""
    data, name = _read_source(boot_rom, "boot_rom")
    if len(data) != BOOT_ROM_SIZE:
        raise RomError(f"boot ROM {name} is {len(data)} bytes; a DMG boot ROM is exactly "
                       f"{BOOT_ROM_SIZE} bytes")
    arr = np.frombuffer(data, dtype=np.uint8).copy()
    arr.setflags(write=False)
    return arr
