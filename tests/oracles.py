"""Reference emulators as test oracles: gambatte (via gambaterm) and PyBoy.

Both run a ROM image (bytes) for a number of frames under scripted buttons and
return what they can tell: screen frames as DMG shades 0..3, memory reads, and
the test-ROM verdict.

What each oracle can and cannot tell
------------------------------------
gambatte (``gambaterm.libgambatte.GB``, loaded with ``NO_BIOS`` and without
``CGB_MODE``: a DMG in its post-boot state at PC=$0100):
  * cycle-accurate CPU, timer, interrupts, serial, DMA and PPU — the reference
    for timing and pixels.
  * frames: ``run_for`` returns when a video frame completes (the start of
    VBlank), so one call = one frame; the first frame ends ~65.7k T-cycles after
    power-on (the post-boot PPU phase), later ones every 70224 T-cycles.  With
    the LCD off no frame completes and a call runs one frame's worth of time.
  * memory: the binding has no peek, so memory comes from a save state written
    to a temporary directory and parsed (``parse_gambatte_state``): WRAM, VRAM,
    cart RAM, OAM/IO/HRAM ($FE00-$FFFF) and the CPU registers.  IO values there
    are gambatte's stored register bytes, not always what a CPU read returns
    (DIV, TIMA, LY, STAT are computed lazily by gambatte) — trust WRAM/HRAM/VRAM.
  * no serial output: the binding does not expose it.  Our test ROMs therefore
    also log every byte they send to a WRAM buffer (``SERIAL_LOG``), which the
    oracle decodes into the same text.
PyBoy 2.8.1 (``window="null"``, sound off, DMG mode):
  * serial output (``_serial()``), memory reads (``pyboy.memory``), registers and
    frames (``screen.ndarray``).
  * PyBoy has no "skip boot ROM" switch: it runs its own short boot ROM, so we
    hook $0100 and set the documented post-boot CPU registers there; IO and DIV
    remain whatever PyBoy's boot ROM left — power-on checks are meaningless.
  * known hardware disagreements (a second opinion only): fails instruction
    timing, takes EI's effect immediately, models the HALT bug as a skip, and
    times timer/serial/DMA/PPU coarsely.  Frame boundaries differ from gambatte
    by a partial frame.

Button masks use the project's order (``VecGameBoy.run_frames``): bit0 Right,
bit1 Left, bit2 Up, bit3 Down, bit4 A, bit5 B, bit6 Select, bit7 Start.
"""

from __future__ import annotations

import io
import os
import tempfile
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

# Test-ROM convention (CONTRACTS.md): $C000 holds $A5 on pass, $5A on fail.
RESULT_ADDR = 0xC000
RESULT_PASS = 0xA5
RESULT_FAIL = 0x5A
# tests/roms/testlib.asm also appends each serial byte here (NUL-terminated) so
# that oracles without serial output can read the verdict text.
SERIAL_LOG = 0xC010
SERIAL_LOG_LEN = 0xF0

FRAME_T_CYCLES = 70224
BUTTON_NAMES = ("right", "left", "up", "down", "a", "b", "select", "start")

# DMG post-boot CPU registers (Pan Docs, Power Up Sequence), DMG model.
POST_BOOT_REGS = dict(a=0x01, f=0xB0, b=0x00, c=0x13, d=0x00, e=0xD8, h=0x01, l=0x4D, sp=0xFFFE, pc=0x0100)

Buttons = int | Sequence[int] | Callable[[int], int] | None


def button_mask(buttons: Buttons, frame: int) -> int:
    """Button mask for ``frame``: a fixed int, a per-frame sequence (past its end: released), or a callable."""
    if buttons is None:
        return 0
    if callable(buttons):
        return int(buttons(frame)) & 0xFF
    if isinstance(buttons, (int, np.integer)):
        return int(buttons) & 0xFF
    return int(buttons[frame]) & 0xFF if frame < len(buttons) else 0


def _to_gambatte_buttons(mask: int) -> int:
    """Project order (d-pad low nibble) -> gambatte order (A B Select Start low, Right Left Up Down high)."""
    return ((mask >> 4) & 0x0F) | ((mask & 0x0F) << 4)


def rgb_to_shades(rgb: np.ndarray, levels: Sequence[int]) -> np.ndarray:
    """Map grey RGB pixels [..., >=3] to shades 0..3 by the nearest of the 4 grey ``levels`` (white first)."""
    grey = rgb[..., :3].astype(np.int32).mean(axis=-1)
    lv = np.asarray(levels, dtype=np.float64)
    return np.abs(grey[..., None] - lv).argmin(axis=-1).astype(np.uint8)


@dataclass
class OracleResult:
    """What one oracle run produced."""

    name: str
    frames: np.ndarray | None  # uint8[F, 144, 160] shades, when kept
    memory: Callable[[int, int], bytes]  # read(addr, length) after the last frame
    registers: dict = field(default_factory=dict)
    serial: bytes | None = None  # bytes sent over serial (None: oracle cannot see serial)

    @property
    def result_byte(self) -> int:
        return self.memory(RESULT_ADDR, 1)[0]

    @property
    def serial_log(self) -> bytes:
        """The test ROM's WRAM copy of its serial output (up to the first NUL)."""
        log = self.memory(SERIAL_LOG, SERIAL_LOG_LEN)
        return log.split(b"\0", 1)[0]

    @property
    def verdict(self) -> str:
        """The verdict text: serial output where visible, else the WRAM log."""
        text = self.serial if self.serial is not None else self.serial_log
        return text.decode("latin-1")

    @property
    def passed(self) -> bool:
        return self.result_byte == RESULT_PASS and self.verdict.startswith("PASS")


# ---------------------------------------------------------------- gambatte

GAMBATTE_LEVELS = (0xFF, 0xA5, 0x52, 0x00)  # grey levels of gambatte's default DMG palette (measured)
GAMBATTE_SAMPLES_PER_FRAME = 35112  # one audio sample per 2 T-cycles


def gambatte_available() -> bool:
    try:
        from gambaterm.libgambatte import GB  # noqa: F401
    except Exception:  # pragma: no cover - depends on the installation
        return False
    return True


def parse_gambatte_state(data: bytes) -> dict[str, bytes]:
    """Parse a gambatte save state: 0xFF, version, 24-bit-sized thumbnail, then (label NUL, 24-bit size, bytes)*."""
    if len(data) < 6 or data[0] != 0xFF:
        raise ValueError(f"not a gambatte save state: first byte {data[:1].hex()!r}, expected 'ff'")
    i = 3
    n = int.from_bytes(data[i : i + 3], "big")
    i += 3 + n
    out: dict[str, bytes] = {}
    while i < len(data):
        j = data.index(0, i)
        label = data[i:j].decode("latin-1")
        i = j + 1
        n = int.from_bytes(data[i : i + 3], "big")
        i += 3
        out[label] = data[i : i + n]
        i += n
    return out


class GambatteMemory:
    """CPU-address reads from a parsed gambatte state (see module docstring for what is trustworthy)."""

    def __init__(self, rom: bytes, state: dict[str, bytes]):
        self.rom = rom
        self.state = state

    def read(self, addr: int, length: int) -> bytes:
        return bytes(self.read_byte(a & 0xFFFF) for a in range(addr, addr + length))

    def read_byte(self, a: int) -> int:
        s = self.state
        if a < 0x4000:
            return self.rom[a]
        if a < 0x8000:  # current ROM bank
            bank = int.from_bytes(s.get("rombank", b"\x00\x01"), "big") or 1
            off = bank * 0x4000 + (a - 0x4000)
            return self.rom[off % len(self.rom)]
        if a < 0xA000:
            return s["vram"][a - 0x8000]
        if a < 0xC000:
            sram = s.get("sram", b"")
            return sram[(a - 0xA000) % len(sram)] if sram else 0xFF
        if a < 0xE000:
            return s["wram"][a - 0xC000]
        if a < 0xFE00:
            return s["wram"][a - 0xE000]
        return s["hram"][a - 0xFE00]

    def registers(self) -> dict:
        s = self.state
        r = {k: s[k][0] for k in ("a", "b", "c", "d", "e", "f", "h", "l") if k in s}
        r["sp"] = int.from_bytes(s["sp"], "big")
        r["pc"] = int.from_bytes(s["pc"], "big")
        r["ime"] = s["ime"][0]
        r["halted"] = s["halt"][0]
        r["cycles"] = int.from_bytes(s["cc"], "big")
        return r


class Gambatte:
    """One gambatte DMG, post-boot, stepped frame by frame."""

    def __init__(self, rom: bytes):
        from gambaterm.libgambatte import GB

        self.rom = bytes(rom)
        self._dir = tempfile.TemporaryDirectory(prefix="gbx_gambatte_")
        path = os.path.join(self._dir.name, "rom.gb")
        with open(path, "wb") as f:
            f.write(self.rom)
        self.gb = GB()
        self.gb.set_save_directory(self._dir.name)
        rc = self.gb.load(path, GB.LoadFlag.NO_BIOS)
        if rc != 0:
            raise RuntimeError(f"gambatte could not load the ROM (code {rc})")
        self.video = np.zeros((144, 160), np.uint32)
        self.audio = np.zeros((GAMBATTE_SAMPLES_PER_FRAME + 4096, 2), np.int16)
        self.frame_count = 0

    def step(self, mask: int = 0) -> bool:
        """Run to the end of the next video frame (or one frame's time with the LCD off); True if a frame completed."""
        self.gb.set_input(_to_gambatte_buttons(mask))
        offset, _ = self.gb.run_for(self.video, 160, self.audio, GAMBATTE_SAMPLES_PER_FRAME)
        self.frame_count += 1
        return offset >= 0

    def shades(self) -> np.ndarray:
        v = self.video
        rgb = np.stack([(v >> 16) & 0xFF, (v >> 8) & 0xFF, v & 0xFF], axis=-1)
        return rgb_to_shades(rgb, GAMBATTE_LEVELS)

    def state(self) -> dict[str, bytes]:
        slot = self.gb.current_state()
        if not self.gb.save_state(None, 160):
            raise RuntimeError("gambatte could not write a save state")
        path = os.path.join(self._dir.name, f"rom_{slot}.gqs")
        with open(path, "rb") as f:
            data = f.read()
        os.remove(path)
        return parse_gambatte_state(data)

    def memory(self) -> GambatteMemory:
        return GambatteMemory(self.rom, self.state())

    def close(self) -> None:
        self._dir.cleanup()


def run_gambatte(rom: bytes, frames: int, buttons: Buttons = None, *, keep_frames: bool = False) -> OracleResult:
    """Run ``rom`` on gambatte for ``frames`` frames; memory and registers are read after the last one."""
    g = Gambatte(rom)
    try:
        kept = []
        for i in range(frames):
            g.step(button_mask(buttons, i))
            if keep_frames:
                kept.append(g.shades())
        mem = g.memory()
        return OracleResult(
            name="gambatte",
            frames=np.stack(kept) if kept else None,
            memory=mem.read,
            registers=mem.registers(),
            serial=None,
        )
    finally:
        g.close()


# ------------------------------------------------------------------- PyBoy

PYBOY_PALETTE = (0xFFFFFF, 0xAAAAAA, 0x555555, 0x000000)
PYBOY_LEVELS = (0xFF, 0xAA, 0x55, 0x00)


def pyboy_available() -> bool:
    try:
        import pyboy  # noqa: F401
    except Exception:  # pragma: no cover
        return False
    return True


class PyBoyOracle:
    """One PyBoy DMG; its boot ROM runs first, then the post-boot CPU registers are set at $0100."""

    MAX_BOOT_FRAMES = 600

    def __init__(self, rom: bytes):
        import logging
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from pyboy import PyBoy
        logging.getLogger("pyboy").setLevel(logging.ERROR)
        self.pb = PyBoy(
            io.BytesIO(bytes(rom)),
            window="null",
            sound_emulated=False,
            cgb=False,
            color_palette=PYBOY_PALETTE,
            log_level="ERROR",
        )
        self.pb.set_emulation_speed(0)
        self._booted = False
        self.pb.hook_register(0, 0x0100, self._at_entry, None)
        for _ in range(self.MAX_BOOT_FRAMES):
            if self._booted:
                break
            self.pb.tick(1, False, False)
        else:
            raise RuntimeError("PyBoy's boot ROM did not reach $0100")
        self.serial = bytearray()
        self.frame_count = 0

    def _at_entry(self, _context) -> None:
        rf = self.pb.register_file
        p = POST_BOOT_REGS
        rf.A, rf.F, rf.B, rf.C, rf.D, rf.E = p["a"], p["f"], p["b"], p["c"], p["d"], p["e"]
        rf.HL = (p["h"] << 8) | p["l"]
        rf.SP = p["sp"]
        self._booted = True

    def step(self, mask: int = 0, render: bool = True) -> None:
        for bit, name in enumerate(BUTTON_NAMES):
            if mask >> bit & 1:
                self.pb.button_press(name)
            else:
                self.pb.button_release(name)
        self.pb.tick(1, render, False)
        self.serial += self.pb._serial().encode("latin-1")
        self.frame_count += 1

    def shades(self) -> np.ndarray:
        return rgb_to_shades(self.pb.screen.ndarray, PYBOY_LEVELS)

    def read(self, addr: int, length: int) -> bytes:
        return bytes(self.pb.memory[a & 0xFFFF] for a in range(addr, addr + length))

    def registers(self) -> dict:
        rf = self.pb.register_file
        return dict(a=rf.A, f=rf.F, b=rf.B, c=rf.C, d=rf.D, e=rf.E, h=rf.HL >> 8, l=rf.HL & 0xFF, sp=rf.SP, pc=rf.PC)

    def close(self) -> None:
        self.pb.stop(save=False)


def run_pyboy(rom: bytes, frames: int, buttons: Buttons = None, *, keep_frames: bool = False) -> OracleResult:
    """Run ``rom`` on PyBoy for ``frames`` frames after its boot ROM; serial, memory and registers afterwards."""
    p = PyBoyOracle(rom)
    try:
        kept = []
        for i in range(frames):
            p.step(button_mask(buttons, i), render=keep_frames or i == frames - 1)
            if keep_frames:
                kept.append(p.shades())
        snapshot = bytes(p.pb.memory[0:0x10000])
        return OracleResult(
            name="pyboy",
            frames=np.stack(kept) if kept else None,
            memory=lambda addr, length: bytes(snapshot[(addr + k) & 0xFFFF] for k in range(length)),
            registers=p.registers(),
            serial=bytes(p.serial),
        )
    finally:
        p.close()


ORACLES = {"gambatte": run_gambatte, "pyboy": run_pyboy}
