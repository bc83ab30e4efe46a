"""Import PyBoy savestates (``PyBoy.save_state``, PyBoy 2.8.x, state version 29) into VecGameBoy.

Why: the product resets GameBoyEnv from user savestates (e.g. a Pokémon Red save made in
PyBoy), so an episode can start deep inside a game without replaying its inputs.

The format (facts read from PyBoy 2.8.1's ``save_state`` methods) is a plain byte stream,
little endian, one block per component and no lengths or tags, in this order:
version byte, motherboard flags (boot ROM mapped, KEY0, KEY1, double speed, CGB), CPU
(A F B C D E, HL SP PC, IME, EI delay, halted, stopped, IE, queued, IF, cycles), OAM DMA,
LCD (VRAM, OAM, LCDC BGP OBP0 OBP1 STAT LY LYC SCY SCX WY WX, per-line scroll log, frame
clock), sound (sample buffer, frame sequencer, four channels), renderer (the 160x144 RGBA
screen buffer, the window's WY latch), RAM (WRAM, $FEA0-$FEFF, the I/O page, HRAM), WRAM
bank, timer (DIV, TIMA, the 16-bit system counter, TMA, TAC, reload state), cartridge
(ROM/RAM bank, RAM enable, MBC1 mode, all cartridge RAM, the RTC, MBC-specific bytes),
joypad, serial, Super Game Boy. Only version 29 (PyBoy 2.8.0/2.8.1) is accepted; another
version byte is refused naming the PyBoy releases that write it (PYBOY_RELEASES_BY_STATE_VERSION:
10 = 2.0-2.2.1, 11 = 2.2.2-2.3, 12 = 2.4, 14 = 2.5, 15 = 2.6-2.7) and how to make a new one:
the older layouts lack fields the import needs (EI delay, TIMA reload state, OAM DMA, the
window's WY latch) and differ in the sound, RTC and RAM blocks, and PyBoy 2.8.1 itself fails
to load a 2.7.0 state (checked), so there is no conversion path through PyBoy. Blocks whose size depends on the cartridge (RAM banks, RTC, MBC1 bank
registers, MBC5 rumble) are sized from the loaded ROM's header, and the file's length must
then come out exactly: a state from a cartridge with another RAM size or MBC is refused
(the state holds no ROM checksum, so a state of a different game with the same cartridge
layout cannot be detected).

What maps exactly: CPU registers (PC, see HALT below), IME, EI delay, HALT/STOP, IE, IF,
WRAM, HRAM, VRAM, OAM, the PPU registers, the timer registers and the system counter (DIV
to the T-cycle), the TIMA reload in progress, joypad buttons, serial registers, sound
registers and wave RAM (as state; VecGameBoy makes no sound), OAM DMA in progress, the
MBC banking registers (rebuilt by replaying register writes with ``mbc_regs_after_writes``;
MBC1, MBC1M, MBC2, MBC3, MBC5), all cartridge RAM (MBC2: the 512 nibbles, which PyBoy keeps as
value | $F0 in the first 512 bytes of its 8 KiB bank), the MBC3 RTC counters, the screen (PyBoy's screen buffer, by luminance:
exact for grey palettes). Time: T_NOW = PyBoy's CPU cycle counter.

What PyBoy does not store, and the nearest consistent value chosen:
- HALT: PyBoy leaves PC on the HALT opcode while halted; VecGameBoy (like the hardware)
  has fetched it, so PC = PyBoy's PC + 1 for a halted CPU. PyBoy's "halted right after EI"
  flag is not saved (PyBoy itself loses it too).
- PPU: PyBoy keeps a frame clock (T-cycles since line 0 of the current frame); the line
  and the dot within it follow from it, and the PPU phase at that dot is VecGameBoy's own
  (mode 2 to dot 80, mode 3, mode 0; the one-M-cycle line-start phases; line 153's LY=0).
  The current line's mode-3 length is PyBoy's while PyBoy is in mode 3, else 172 + SCX
  mod 8. The window's internal line counter is not saved: it is taken as the number of
  lines from WY to the current line (exact unless the window was toggled or moved
  mid-frame). The STAT interrupt line is recomputed from the imported registers. A state
  saved in the first frame after the LCD was switched on keeps that frame blank.
- Frames: the two cut frames at different places. PyBoy's tick() ends where line 0
  starts (and when the LCD is switched on); VecGameBoy's run_frames ends a frame where
  VBlank starts (line 144; the VBlank interrupt is then taken in the next call). The
  import sets the frame window (T_FRAME_START, where the previous frame ended) to the
  last VBlank start, so the first run_frames call after a load ends at the next VBlank
  start, also for a state saved inside VBlank. From a state PyBoy saved at the end of a
  tick, PyBoy's tick n (n = 1, 2, ...) and our call n run lines 0-143 of the same frame
  (same screen after both), and our call n+1 runs the VBlank at the end of tick n: give
  it tick n's buttons for a game that reads the joypad in VBlank. A game's RAM agrees
  at the same emulated time, e.g. where its per-frame work is done (the cart loop and
  orchard in tests/test_pyboy_state.py), not at the two frame ends. With the LCD off
  both run 70224-cycle frames; the window then keeps PyBoy's alignment (T_FRAME_START =
  PyBoy's line 0), so inputs per frame land on the same cycles until the LCD goes on.
- Timer: exact (PyBoy stores the 16-bit system counter and the reload countdown).
- Serial: PyBoy does not keep SB during a transfer (it reads $FF) nor the bits shifted;
  a transfer in progress ends when PyBoy's would. serial_output() starts empty (the
  output ring is not part of the state).
- OAM DMA in progress: VecGameBoy copies all 160 bytes at the start of a DMA and times
  only the bus conflict, so the bytes PyBoy has not copied yet are copied at import (from
  the imported WRAM/VRAM/ROM/cart RAM) and the conflict window keeps PyBoy's start time.
- MBC1M: PyBoy takes a 1 MiB MBC1 cart for a multicart only when all 64 banks start with
  the logo (we follow Pan Docs: the logo in bank $10, cartridge.is_mbc1_multicart). A state
  PyBoy saved while running an MBC1M cart as a plain MBC1 still imports: the bank registers
  are the hardware's, and the banks then follow the MBC1M wiring.
- ROM only vs MBC2: the two cartridge blocks have the same size; an MBC2 state at ROM bank 1
  with RAM off loads into a ROM-only cart (PyBoy's ROM-only mapper allows nothing else, so
  other MBC2 states are refused there).
- MBC3 RTC: the latched registers are not saved; they are set to the live counters (as
  if latched at the save). PyBoy advances the RTC by host time between save and load;
  VecGameBoy runs it on emulated time only, so it resumes where it was saved.
- Sound: the registers, wave RAM, channel flags, length timers, CH1's sweep state and the
  frame sequencer's step map exactly; PyBoy times its DIV-APU events from its own counter,
  not from DIV's bit 4, so the next event's time is VecGameBoy's (DIV's) and CH3's next wave
  RAM read is taken from PyBoy's period timer (approximate: PyBoy's sound runs behind the CPU).
  A state saved with ``sound_emulated=False`` has no sound state; its registers load as they
  read in PyBoy then (APU off).
Not supported: CGB-mode states, states saved while PyBoy's boot ROM was still mapped
(unless the VecGameBoy was built with a boot ROM), double speed.
"""
from __future__ import annotations

import os
import struct
from dataclasses import dataclass, field

import numpy as np
import warp as wp

from . import state as S
from .cartridge import CART_TYPE_NAMES, MBC1, MBC2, MBC3, MBC5, MBC_NONE
from .mbc import (RAM_MBC2, REG_RAM_BASE, REG_ROMX_BASE, REG_RTC_DH, REG_RTC_LATCHED, REG_RTC_S,
                  REG_RTC_SUBSEC, REG_RTC_T_HI, REG_RTC_T_LO, mbc_regs_after_writes)
from .ppu import (LCD_ON_LINE0_LEAD, LCD_ON_PIPE_DELAY_T, LINE_STEP_T, LY153_GAP_T, LY153_ZERO_T, MODE3_START_T,
                  PH_LCD_ON_LINE0, PH_LINE0_START, PH_LINE_START, PH_LY153, PH_LY153_GAP, PH_VBLANK_LINE,
                  PH_VBLANK_START, R_LCD_WARMUP)
from .savestate import masked_copy

__all__ = ["PYBOY_STATE_VERSION", "PyBoyStateError", "PyBoyState", "parse_pyboy_state",
           "machine_rows", "load_pyboy_state"]

PYBOY_STATE_VERSION = 29          # what PyBoy 2.8.1 writes (pyboy.utils.STATE_VERSION)
FRAME = S.FRAME_CYCLES
LINE = 456
VBLANK_AT = 144 * LINE + LINE_STEP_T   # the VBlank request (where run_frames' frames end), T into the frame
NEVER_PY = 1 << 62
RTC_SECOND = 4194304

# Fixed sizes of the blocks after the cartridge: joypad (2), serial (4 flags + 4 x u64),
# Super Game Boy (7 flags, 4 joypad bytes, border tiles $2000, map $800, palettes $80).
_JOYPAD_BYTES = 2
_SERIAL_BYTES = 4 + 4 * 8
_SGB_BYTES = 7 + 4 + 0x2000 + 0x800 + 0x80
_TAIL_BYTES = _JOYPAD_BYTES + _SERIAL_BYTES + _SGB_BYTES
_RTC_BYTES = 8 + 9 + 8 + 8
_RUMBLE_TYPES = (0x1C, 0x1D, 0x1E)
# PyBoy allocates max(1, header RAM banks) 8 KiB banks and saves them all.
_PYBOY_RAM_BANKS = {0x00: 1, 0x01: 1, 0x02: 1, 0x03: 4, 0x04: 16, 0x05: 8}


class PyBoyStateError(ValueError):
    """A PyBoy savestate that cannot be imported; the message names the file and the reason."""


class _Reader:
    """Sequential little-endian reads; running off the end names the file and the field."""

    def __init__(self, data: bytes, name: str):
        self.data = data
        self.name = name
        self.pos = 0

    def take(self, n: int, what: str) -> bytes:
        if self.pos + n > len(self.data):
            raise PyBoyStateError(
                f"{self.name}: truncated PyBoy savestate: expected {n} byte(s) of {what} at "
                f"offset {self.pos}, but the file ends at {len(self.data)} bytes")
        b = self.data[self.pos:self.pos + n]
        self.pos += n
        return b

    def u8(self, what: str) -> int:
        return self.take(1, what)[0]

    def u16(self, what: str) -> int:
        return int.from_bytes(self.take(2, what), "little")

    def u64(self, what: str) -> int:
        return int.from_bytes(self.take(8, what), "little")

    def i64(self, what: str) -> int:
        return int.from_bytes(self.take(8, what), "little", signed=True)

    def f64(self, what: str) -> float:
        return struct.unpack("<d", self.take(8, what))[0]

    def array(self, n: int, what: str) -> np.ndarray:
        return np.frombuffer(self.take(n, what), dtype=np.uint8).copy()

    def flag(self, what: str, limit: int = 1) -> int:
        """A byte that must be 0..limit (catches garbage early, with its offset)."""
        v = self.u8(what)
        if v > limit:
            raise PyBoyStateError(f"{self.name}: not a PyBoy savestate: {what} at offset "
                                  f"{self.pos - 1} is {v}, expected 0..{limit}")
        return v


@dataclass
class PyBoyState:
    """The parts of a PyBoy savestate VecGameBoy can use (raw PyBoy values)."""
    version: int
    bootrom_enabled: int
    cpu: dict
    dma: dict
    lcd: dict
    vram: np.ndarray
    oam: np.ndarray
    sound_io: np.ndarray          # $FF10-$FF3F as written (rebuilt from the channel fields)
    screen: np.ndarray            # uint32 [144, 160] PyBoy screen buffer (RGBA)
    wy_activated: int
    wram: np.ndarray
    io_ports: np.ndarray          # PyBoy's own $FF00-$FF4B bytes (P1 is the one it uses)
    hram: np.ndarray              # $FF80-$FFFE
    timer: dict
    cart: dict
    joypad: dict
    serial: dict
    extra: dict = field(default_factory=dict)


# ------------------------------------------------------------------------------ parsing
def _parse_tone(r: _Reader, ch: str) -> dict:
    d = {}
    for k in ("wave_duty", "init_length_timer", "envelope_volume", "envelope_direction",
              "envelope_pace"):
        d[k] = r.u8(f"{ch} {k}")
    d["sound_period"] = r.u16(f"{ch} period")
    d["length_enable"] = r.u8(f"{ch} length enable")
    d["enable"] = r.u8(f"{ch} enable")
    d["lengthtimer"] = r.u64(f"{ch} length timer")
    r.take(5 * 8, f"{ch} timers")
    r.take(3, f"{ch} duty flags")
    return d


def _parse_sound(r: _Reader) -> tuple[np.ndarray, dict]:
    """$FF10-$FF3F as written, and the counters the APU model keeps (raw PyBoy values)."""
    r.u64("sound buffer head")
    spf = r.u64("sound samples per frame")
    if spf > 1 << 20:
        raise PyBoyStateError(f"{r.name}: not a PyBoy savestate: sound samples per frame at offset "
                              f"{r.pos - 8} is {spf}, expected a few thousand")
    r.take(8, "sound cycles per sample")
    r.take((spf + 1) * 2, "sound sample buffer")
    r.u8("sound speed shift")
    r.take(8 + 8 + 8 + 8 + 8, "sound timing")
    div_apu_counter = r.u64("DIV-APU skip counter")
    div_apu = r.u64("DIV-APU counter")
    r.u8("APU power-on-after-DIV flag")
    poweron = r.u8("APU power")
    r.u8("sound sampling flag")
    pan = 0
    for _ in range(8):
        pan |= r.u8("NR51 panning")
    nr50 = r.u8("NR50")
    sweep = _parse_tone(r, "channel 1")
    sweep["sweep_pace"] = r.u8("channel 1 sweep pace")
    sweep["sweep_direction"] = r.u8("channel 1 sweep direction")
    sweep["sweep_magnitude"] = r.u8("channel 1 sweep step")
    sweep["sweeptimer"] = r.u64("channel 1 sweep timer")
    r.take(3 * 8, "channel 1 sweep timers")
    sweep["negate_used"] = r.u8("channel 1 sweep negate used")
    sweep["sweepenable"] = r.u8("channel 1 sweep enable")
    sweep["shadow"] = r.u64("channel 1 sweep shadow")
    tone = _parse_tone(r, "channel 2")
    wave_table = r.array(16, "wave RAM")
    wave = {k: r.u8(f"channel 3 {k}") for k in ("dacpow", "init_length_timer", "volreg")}
    wave["sound_period"] = r.u16("channel 3 period")
    wave["length_enable"] = r.u8("channel 3 length enable")
    wave["enable"] = r.u8("channel 3 enable")
    for k in ("lengthtimer", "periodtimer", "period", "waveframe"):
        wave[k] = r.u64(f"channel 3 {k}")
    r.take(1 + 8 + 1, "channel 3 sample flags")
    wave["restart_pending"] = r.u8("channel 3 restart pending")
    r.take(8, "channel 3 sample frame")
    noise = {k: r.u8(f"channel 4 {k}") for k in (
        "init_length_timer", "envelope_volume", "envelope_direction", "envelope_pace", "clkpow",
        "regwid", "clkdiv", "length_enable", "enable")}
    noise["lengthtimer"] = r.u64("channel 4 length timer")
    r.take(9 * 8 + 1, "channel 4 timers")

    io = np.zeros(0x30, np.uint8)        # index = register - $FF10

    def env(c):
        return (c["envelope_volume"] << 4) | (c["envelope_direction"] << 3) | c["envelope_pace"]

    for base, c in ((0x00, sweep), (0x05, tone)):
        io[base + 1] = ((c["wave_duty"] & 3) << 6) | (c["init_length_timer"] & 0x3F)
        io[base + 2] = env(c)
        io[base + 3] = c["sound_period"] & 0xFF
        io[base + 4] = ((c["length_enable"] & 1) << 6) | ((c["sound_period"] >> 8) & 7)
    io[0x00] = ((sweep["sweep_pace"] & 7) << 4) | ((sweep["sweep_direction"] & 1) << 3) | (
        sweep["sweep_magnitude"] & 7)
    io[0x0A] = (wave["dacpow"] & 1) << 7
    io[0x0B] = wave["init_length_timer"]
    io[0x0C] = (wave["volreg"] & 3) << 5
    io[0x0D] = wave["sound_period"] & 0xFF
    io[0x0E] = ((wave["length_enable"] & 1) << 6) | ((wave["sound_period"] >> 8) & 7)
    io[0x10] = noise["init_length_timer"] & 0x3F
    io[0x11] = env(noise)
    io[0x12] = ((noise["clkpow"] & 0xF) << 4) | ((noise["regwid"] & 1) << 3) | (noise["clkdiv"] & 7)
    io[0x13] = (noise["length_enable"] & 1) << 6
    io[0x14] = nr50
    io[0x15] = pan & 0xFF
    status = (sweep["enable"] | tone["enable"] | wave["enable"] | noise["enable"]) & 0x0F
    io[0x16] = (poweron & 0x80) | (status if poweron & 0x80 else 0)
    io[0x20:0x30] = wave_table
    # PyBoy counts DIV-APU events since power-on in div_apu and runs an event after incrementing
    # it (lengths on odd counts), so its next event runs our step div_apu % 8. Its skip counter:
    # 2 or 5, the next event is skipped (then step 0: it set div_apu = 1); 1, the next event runs
    # without the increment (our step (div_apu - 1) % 8).
    step = div_apu % 8
    if div_apu_counter in (2, 5):
        step = -1
    elif div_apu_counter == 1:
        step = (div_apu - 1) % 8
    apu = {"step": step,
           "lengths": [min(c["lengthtimer"], 256) for c in (sweep, tone, wave, noise)],
           "shadow": sweep["shadow"] & 0x7FF, "sweeptimer": min(sweep["sweeptimer"], 8),
           "sweepenable": sweep["sweepenable"] & 1, "negate_used": sweep["negate_used"] & 1,
           "wave_periodtimer": min(wave["periodtimer"], 4096), "wave_period": min(wave["period"], 4096),
           "wave_next_pos": 1 if wave["restart_pending"] else (wave["waveframe"] + 1) % 32}
    return io, apu


def _cart_layout(cart) -> tuple[int, int, int]:
    """(PyBoy RAM bytes, RTC bytes, MBC-specific trailing bytes) of this cartridge's block."""
    ram = _PYBOY_RAM_BANKS.get(int(cart.rom[0x149]), 1) * 0x2000
    rtc = _RTC_BYTES if cart.has_rtc else 0
    extra = {MBC1: 2, MBC5: 2 if cart.cart_type in _RUMBLE_TYPES else 1}.get(cart.mbc, 0)
    return ram, rtc, extra


def _parse_cart(r: _Reader, cart) -> dict:
    ram_bytes, rtc_bytes, extra = _cart_layout(cart)
    expected = 4 + ram_bytes + rtc_bytes + extra
    have = len(r.data) - r.pos - _TAIL_BYTES
    if have != expected:
        kind = f"${cart.cart_type:02X} {CART_TYPE_NAMES.get(cart.cart_type, '?')}"
        raise PyBoyStateError(
            f"{r.name}: the savestate does not match the loaded ROM {cart.title!r}: its cartridge "
            f"block is {have} bytes, but this cartridge ({kind}, {ram_bytes // 1024} KiB RAM as "
            f"PyBoy stores it, RTC {'yes' if cart.has_rtc else 'no'}) needs {expected}; the "
            f"state was saved with a different cartridge")
    c = {"rombank": r.u8("ROM bank"), "rambank": r.u8("RAM bank"),
         "ram_enabled": r.flag("RAM enable"), "mode": r.flag("MBC1 banking mode")}
    c["ram"] = r.array(ram_bytes, "cartridge RAM")
    if rtc_bytes:
        r.f64("RTC time zero")
        r.take(2, "RTC flags")
        c["rtc"] = {k: r.u8(f"RTC {k}") for k in ("s", "m", "h", "dl", "dh", "halt", "carry")}
        c["rtc"]["cycles"] = r.u64("RTC sub-second cycles") % RTC_SECOND
        r.f64("RTC save time")
    if cart.mbc == MBC1:
        c["bank1"] = r.u8("MBC1 bank register 1")
        c["bank2"] = r.u8("MBC1 bank register 2")
    elif cart.mbc == MBC5:
        rumble = r.flag("MBC5 rumble flag")
        if rumble != int(cart.cart_type in _RUMBLE_TYPES):
            raise PyBoyStateError(
                f"{r.name}: the savestate's MBC5 rumble flag is {rumble}, but the loaded ROM's "
                f"type ${cart.cart_type:02X} says {int(cart.cart_type in _RUMBLE_TYPES)}: saved "
                f"with a different cartridge")
        if rumble:
            r.u8("MBC5 rumble state")
    return c


# Which PyBoy 2.x releases write which state version (pyboy.utils.STATE_VERSION, read from the
# release wheels 2.0.0, 2.1.0, 2.2.0-2.2.2, 2.3.0, 2.4.0-2.4.1, 2.5.0, 2.5.4, 2.6.0-2.6.1, 2.7.0,
# 2.8.0-2.8.1; 2.8.0 and 2.8.1 save the same layout). Versions only go up between releases.
PYBOY_RELEASES_BY_STATE_VERSION = {10: "2.0.0-2.2.1", 11: "2.2.2-2.3.x", 12: "2.4.x", 14: "2.5.x",
                                   15: "2.6.x-2.7.x", 29: "2.8.x"}


def _writer_of(version: int) -> str:
    if version in PYBOY_RELEASES_BY_STATE_VERSION:
        return f"written by PyBoy {PYBOY_RELEASES_BY_STATE_VERSION[version]}"
    if version < 10:
        return "written by PyBoy 1.x or older"
    if version < PYBOY_STATE_VERSION:
        return "not a PyBoy release's version: a development build before 2.8"
    return "not written by PyBoy 2.8 or older"


def parse_pyboy_state(data: bytes, cart, name: str = "<bytes>") -> PyBoyState:
    """Parse a PyBoy 2.8.x savestate for cartridge `cart` (an emu.cartridge.Cartridge)."""
    r = _Reader(bytes(data), name)
    if len(r.data) == 0:
        raise PyBoyStateError(f"{name}: empty file, expected a PyBoy savestate "
                              f"(version {PYBOY_STATE_VERSION})")
    version = r.u8("state version")
    if version != PYBOY_STATE_VERSION:
        raise PyBoyStateError(
            f"{name}: PyBoy savestate version {version} ({_writer_of(version)}) is not supported: "
            f"this importer reads version {PYBOY_STATE_VERSION}, written by PyBoy 2.8.x. PyBoy 2.8 "
            "does not load older states either, so make the state again with PyBoy 2.8 (pip "
            "install 'pyboy>=2.8,<2.9'; play or replay to the same point, then PyBoy.save_state)")
    bootrom = r.flag("boot ROM flag")
    key0 = r.u8("KEY0")
    r.u8("KEY1")
    double_speed = r.flag("double speed flag")
    cgb = r.flag("CGB flag")
    if cgb or double_speed:
        raise PyBoyStateError(f"{name}: a CGB-mode PyBoy savestate (CGB flag {cgb}, double speed "
                              f"{double_speed}); VecGameBoy is a DMG: save with PyBoy(cgb=False)")
    cpu = {k: r.u8(f"CPU register {k.upper()}") for k in ("a", "f", "b", "c", "d", "e")}
    hl = r.u16("CPU register HL")
    cpu["h"], cpu["l"] = hl >> 8, hl & 0xFF
    cpu["sp"] = r.u16("CPU register SP")
    cpu["pc"] = r.u16("CPU register PC")
    cpu["ime"] = r.flag("IME")
    cpu["ei_delay"] = r.flag("EI delay", 2)
    cpu["halted"] = r.flag("HALT flag")
    cpu["stopped"] = r.flag("STOP flag")
    cpu["ie"] = r.u8("IE")
    r.u8("interrupt queued flag")
    cpu["if"] = r.u8("IF")
    cpu["cycles"] = r.u64("CPU cycle counter")
    if cpu["cycles"] >= 1 << 61:
        raise PyBoyStateError(f"{name}: not a PyBoy savestate: CPU cycle counter {cpu['cycles']}")
    dma = {"active": r.flag("OAM DMA active"), "reading": r.flag("OAM DMA reading"),
           "source": r.u8("OAM DMA source"), "index": r.u8("OAM DMA index"),
           "start": r.i64("OAM DMA start cycle")}
    vram = r.array(0x2000, "VRAM")
    oam = r.array(0xA0, "OAM")
    lcd = {k: r.u8(k.upper()) for k in ("lcdc", "bgp", "obp0", "obp1", "stat", "ly", "lyc",
                                          "scy", "scx", "wy", "wx")}
    r.u8("object priority mode")
    r.take(144 * 5, "LCD scanline parameters")
    lcd_cgb = r.flag("LCD CGB flag")
    r.flag("LCD downgraded flag")
    speed = r.u8("LCD speed shift")
    if lcd_cgb or speed:
        raise PyBoyStateError(f"{name}: a CGB-mode PyBoy savestate (LCD CGB flag {lcd_cgb}, "
                              f"speed shift {speed}); VecGameBoy is a DMG")
    lcd["frame_done"] = r.flag("LCD frame done flag")
    lcd["first_frame"] = r.flag("LCD first frame flag")
    lcd["reset"] = r.flag("LCD reset flag")
    lcd["last_cycles"] = r.i64("LCD last cycles")
    lcd["clock"] = r.i64("LCD clock")
    lcd["clock_target"] = r.i64("LCD clock target")
    lcd["next_mode"] = r.u8("LCD next mode")
    lcd["transition"] = r.u8("LCD transition")
    if lcd["ly"] > 153:
        raise PyBoyStateError(f"{name}: not a PyBoy savestate: LY is {lcd['ly']}, expected 0..153")
    sound_io, apu = _parse_sound(r)
    screen = np.frombuffer(r.take(144 * 160 * 5, "screen buffer"), dtype=np.uint8).reshape(
        144, 160, 5)
    screen = screen[:, :, :4].copy().view("<u4")[:, :, 0]
    wy_activated = r.flag("window WY latch")
    wram = r.array(0x2000, "WRAM")
    r.take(0x60, "$FEA0-$FEFF")
    io_ports = r.array(0x4C, "I/O ports")
    hram = r.array(0x7F, "HRAM")
    r.u8("WRAM bank")
    timer = {"div": r.u8("DIV"), "tima": r.u8("TIMA"), "counter": r.u16("DIV counter"),
             "tima_counter": r.u16("TIMA reload countdown"), "tma": r.u8("TMA"),
             "tac": r.u8("TAC"), "reload_state": r.flag("TIMA reload state", 2),
             "last_cycles": r.i64("timer last cycles")}
    r.i64("timer cycles to interrupt")
    cart_state = _parse_cart(r, cart)
    joypad = {"directional": r.u8("joypad directions"), "standard": r.u8("joypad buttons")}
    serial = {"sb": r.u8("SB"), "sc": r.u8("SC"), "transfer": r.u8("serial transfer flag"),
              "internal": r.u8("serial clock flag"), "last_cycles": r.i64("serial last cycles")}
    r.i64("serial cycles to interrupt")
    serial["clock"] = r.i64("serial clock")
    serial["clock_target"] = r.i64("serial clock target")
    r.take(_SGB_BYTES, "Super Game Boy state")
    if r.pos != len(r.data):      # cannot happen: the cartridge check sized the tail
        raise PyBoyStateError(f"{name}: {len(r.data) - r.pos} unexpected trailing bytes")
    return PyBoyState(version, bootrom, cpu, dma, lcd, vram, oam, sound_io, screen, wy_activated,
                      wram, io_ports, hram, timer, cart_state, joypad, serial, {"key0": key0, "apu": apu})


# ------------------------------------------------------------------------------ mapping
def _screen_shades(screen: np.ndarray) -> np.ndarray:
    """DMG shades 0 (lightest) .. 3 from PyBoy's RGBA pixels, by luminance."""
    rgb = np.stack([(screen >> s) & 0xFF for s in (0, 8, 16)]).astype(np.int32)
    lum = rgb.sum(axis=0) / 3.0
    return np.clip(np.rint((255.0 - lum) / 85.0), 0, 3).astype(np.uint8)


def _stat_line(io: np.ndarray, phase: int, ly: int) -> int:
    """ppu._line_of_sources on the host: OR of the enabled STAT sources in this PPU state."""
    if not io[0x40] & 0x80:
        return 0
    stat = int(io[0x41])
    mode = {PH_LINE_START: 2, PH_VBLANK_START: 2, PH_VBLANK_LINE: 1, PH_LY153: 1, PH_LY153_GAP: 1,
            PH_LINE0_START: 1, PH_LCD_ON_LINE0: 3, 2: 3}.get(phase, phase)
    compared = ly
    if phase in (PH_LINE_START, PH_VBLANK_START, PH_VBLANK_LINE, PH_LY153_GAP):
        compared = -1
    elif ly == 153 and phase != PH_LY153:
        compared = 0
    line = (stat & 0x40 and compared == io[0x45]) or (stat & 0x08 and mode == 0) or (
        stat & 0x10 and mode == 1) or (stat & 0x20 and mode == 2)
    return int(bool(line))


def _ppu_rows(st: PyBoyState, t_now: int, io, r32, r64) -> int:
    """PPU state at t_now from PyBoy's frame clock; returns the T_FRAME_START to use.

    T_FRAME_START is where run_frames' previous frame ended: with the LCD on, the last
    VBlank request (2 T into line 144), so the next frame ends at the next one; with the LCD off,
    PyBoy's line 0 (both then cut 70224-cycle frames, in step)."""
    lcd = st.lcd
    lag = max(0, st.cpu["cycles"] - lcd["last_cycles"])
    pos = (lcd["clock"] + lag) % FRAME
    if not io[0x40] & 0x80:
        r32[S.R_LY], r32[S.R_PPU_MODE] = 0, 0
        r64[S.T_LINE_START], r64[S.T_PPU_EVENT] = t_now, NEVER_PY
        io[0x44] = 0
        return t_now - pos
    if lcd["reset"]:                 # LCD just switched on: PyBoy starts line 0 at its next tick
        ly, dot, frame_start = 0, LCD_ON_LINE0_LEAD, t_now   # (the first VBlank comes before t_now + FRAME)
    else:
        ly, dot = divmod(pos, LINE)
        frame_start = t_now - (pos - VBLANK_AT) % FRAME
    ls = t_now - dot
    first = lcd["first_frame"] or lcd["reset"]
    m3_start = int(MODE3_START_T)
    if ly < 144:
        m3 = 172 + (int(io[0x43]) & 7)
        remaining = lcd["clock_target"] - (lcd["clock"] + lag)
        if (lcd["stat"] & 3) == 3 and remaining > 0 and dot >= m3_start:
            m3 = dot + remaining - m3_start      # PyBoy's own mode-3 end for this line
        if ly == 0 and first and dot < m3_start + LCD_ON_PIPE_DELAY_T:   # (its mode 3 starts 2 T later)
            phase, event = PH_LCD_ON_LINE0, ls + m3_start + LCD_ON_PIPE_DELAY_T
        elif dot < LINE_STEP_T:
            phase, event = (PH_LINE0_START if ly == 0 else PH_LINE_START), ls + LINE_STEP_T
        elif dot < m3_start:
            phase, event = 2, ls + m3_start
        elif dot < m3_start + m3:
            phase, event = 3, ls + m3_start + m3
        else:
            phase, event = 0, ls + LINE
        r32[S.R_MODE3_LEN] = m3
    elif dot < LINE_STEP_T:
        phase, event = (PH_VBLANK_START if ly == 144 else PH_VBLANK_LINE), ls + LINE_STEP_T
    elif ly == 153 and dot < LY153_GAP_T:
        phase, event = PH_LY153, ls + LY153_GAP_T
    elif ly == 153 and dot < LY153_ZERO_T:
        phase, event = PH_LY153_GAP, ls + LY153_ZERO_T
    else:
        phase, event = 1, ls + LINE
    r32[S.R_LY], r32[S.R_PPU_MODE] = ly, phase
    r64[S.T_LINE_START], r64[S.T_PPU_EVENT] = ls, event
    r32[R_LCD_WARMUP] = int(bool(first) and ly < 144)    # the blank frame ends at VBlank
    wy, wx = int(io[0x4A]), int(io[0x4B])
    r32[S.R_WY_TRIGGERED] = int(bool(st.wy_activated))
    win_lines = 0
    if st.wy_activated and io[0x40] & 0x20 and wx <= 166 and ly < 144:
        win_lines = max(0, ly - wy) + (1 if phase == 0 and ly >= wy else 0)
    r32[S.R_WIN_LINE] = win_lines
    io[0x44] = 0 if (ly == 153 and dot >= 4) else ly
    r32[S.R_STAT_LINE] = _stat_line(io, phase, ly)
    return frame_start


def _timer_rows(st: PyBoyState, t_now: int, io, r64) -> None:
    """DIV/TIMA/TMA/TAC and the reload in progress, as of PyBoy's last timer update."""
    tm = st.timer
    t = t_now - max(0, st.cpu["cycles"] - tm["last_cycles"])
    r64[S.T_DIV_BASE] = t - tm["counter"]
    r64[S.T_TIMER_LAST] = t
    io[0x05], io[0x06], io[0x07] = tm["tima"], tm["tma"], tm["tac"] & 7
    io[0x04] = tm["counter"] >> 8
    r64[S.T_TIMA_OVERFLOW] = -1
    r64[S.T_TIMA_RELOADED] = -1000
    left = min(max(tm["tima_counter"], 0), 4)
    if tm["reload_state"] == 1:          # overflowed `4 - left` cycles ago; TIMA reads 0
        io[0x05] = 0
        r64[S.T_TIMA_OVERFLOW] = t - (4 - left)
    elif tm["reload_state"] == 2:        # reloaded from TMA (and IF set) `4 - left` cycles ago
        r64[S.T_TIMA_RELOADED] = t - (4 - left)
    # next timer event (timer.timer_schedule)
    ov = int(r64[S.T_TIMA_OVERFLOW])
    tac = int(io[0x07])
    if ov >= 0:
        ev = ov + 4
    elif tac & 4:
        bit = {0: 9, 1: 3, 2: 5, 3: 7}[tac & 3]
        period = 1 << (bit + 1)
        base = int(r64[S.T_DIV_BASE])
        first = ((t - base) // period + 1) * period + base
        ev = first + (255 - int(io[0x05])) * period + 4
    else:
        ev = NEVER_PY
    r64[S.T_TIMER_EVENT] = ev


def _mbc_row(st: PyBoyState, cart, spec, t_now: int, name: str) -> np.ndarray:
    """Banking registers rebuilt as the register writes that produce PyBoy's state."""
    c = st.cart
    enable = 0x0A if c["ram_enabled"] else 0x00
    banks = int(cart.rom_banks)
    ram_banks = int(cart.ram_bytes) // 0x2000

    def bad(what):
        return PyBoyStateError(f"{name}: the savestate's {what} does not fit the loaded ROM "
                               f"{cart.title!r} ({banks} ROM banks, {ram_banks} RAM banks): saved "
                               f"with a different cartridge")

    writes = []
    if cart.mbc == MBC_NONE:
        # PyBoy's ROM-only mapper keeps bank 0/1 and RAM on iff the type has RAM: anything
        # else is a banked cart's state (MBC2's block has the same size as this one)
        if c["rombank"] > 1 or c["mode"] or c["ram_enabled"] != int(cart.cart_type in (0x08, 0x09)):
            raise bad(f"ROM bank {c['rombank']} / RAM enable {c['ram_enabled']}")
    elif cart.mbc == MBC1:
        b1, b2 = c["bank1"], c["bank2"]
        # PyBoy's own bank from these registers: plain wiring, or (when PyBoy took the cart for
        # a multicart: 64 banks, the logo in every bank) MBC1M's. An MBC1M cart PyBoy ran as
        # plain MBC1 still imports: the registers are the hardware's, the banks follow them.
        plain = ((b2 << 5) | b1) % banks
        multi = ((b2 << 4) | (b1 & 0xF)) % banks       # (b1 is never 0: PyBoy stores 0 as 1)
        allowed = (plain, multi) if cart.multicart else (plain,)
        if not 1 <= b1 <= 31 or b2 > 3 or c["rombank"] not in allowed:
            raise bad(f"MBC1 bank registers ({b1}, {b2}, ROM bank {c['rombank']})")
        writes = [(0x0000, enable), (0x2000, b1), (0x4000, b2), (0x6000, c["mode"])]
    elif cart.mbc == MBC2:
        # PyBoy keeps (value & $F or 1) % banks: bank 0 there came from a write of `banks` (< 16)
        if c["rombank"] >= banks or (c["rombank"] == 0 and banks == 16):
            raise bad(f"ROM bank {c['rombank']}")
        writes = [(0x0000, enable), (0x0100, c["rombank"] or banks)]
    elif cart.mbc == MBC3:
        if c["rombank"] >= banks:
            raise bad(f"ROM bank {c['rombank']}")
        sel = c["rambank"]
        if not (sel < max(ram_banks, 1) or (cart.has_rtc and 8 <= sel <= 12)):
            raise bad(f"RAM bank select ${sel:02X}")
        # PyBoy keeps bank % banks; bank 0 there came from a write of a multiple of `banks`
        writes = [(0x0000, enable), (0x2000, c["rombank"] or banks), (0x4000, sel)]
    elif cart.mbc == MBC5:
        if c["rombank"] >= banks or c["rambank"] >= max(ram_banks, 1):
            raise bad(f"ROM bank {c['rombank']} / RAM bank {c['rambank']}")
        writes = [(0x0000, enable), (0x2000, c["rombank"] & 0xFF), (0x3000, c["rombank"] >> 8),
                  (0x4000, c["rambank"])]
    regs = mbc_regs_after_writes(spec, writes, t_now)
    if cart.mbc == MBC3 and cart.has_rtc and "rtc" in c:
        rtc = c["rtc"]
        live = [rtc["s"] & 0x3F, rtc["m"] & 0x3F, rtc["h"] & 0x1F, rtc["dl"] & 0xFF,
                (rtc["dh"] & 1) | ((rtc["halt"] & 1) << 6) | ((rtc["carry"] & 1) << 7)]
        regs[REG_RTC_S:REG_RTC_DH + 1] = live
        regs[REG_RTC_LATCHED:REG_RTC_LATCHED + 5] = live
        regs[REG_RTC_SUBSEC] = rtc["cycles"]
        regs[REG_RTC_T_LO] = t_now & 0x7FFFFFFF
        regs[REG_RTC_T_HI] = t_now >> 31
    return regs


def _dma_source_byte(rows: dict, cart, addr: int) -> int:
    """A byte the OAM DMA reads, from the imported state (DMG: sources $E0-$FF read WRAM)."""
    if addr < 0x4000:
        return int(cart.rom[addr])
    if addr < 0x8000:
        return int(cart.rom[(int(rows["mbc"][REG_ROMX_BASE]) + addr) % len(cart.rom)])
    if addr < 0xA000:
        return int(rows["vram"][addr - 0x8000])
    if addr < 0xC000:
        base = int(rows["mbc"][REG_RAM_BASE])
        if base == RAM_MBC2:
            return int(rows["cart_ram"][addr & 0x1FF]) | 0xF0
        return int(rows["cart_ram"][base + addr - 0xA000]) if base >= 0 and cart.ram_bytes else 0xFF
    return int(rows["wram"][(addr - 0xC000) & 0x1FFF])


def _apu_row(st: PyBoyState, t_now: int, apu: np.ndarray) -> None:
    """The APU model's counters (emu/apu.py) from PyBoy's: the frame sequencer's next step, the
    length timers, CH1's sweep, CH3's next wave RAM read (at PyBoy's period timer)."""
    a = st.extra.get("apu")
    if a is None:
        return
    apu[S.A_SYNC_T] = t_now
    apu[S.A_STEP] = a["step"]
    apu[S.A_LEN1:S.A_LEN1 + 4] = a["lengths"]
    apu[S.A_SHADOW], apu[S.A_SWEEP_TIMER] = a["shadow"], a["sweeptimer"]
    apu[S.A_SWEEP_ON], apu[S.A_NEG_USED] = a["sweepenable"], a["negate_used"]
    apu[S.A_WAVE_PERIOD] = max(2, a["wave_period"])
    apu[S.A_WAVE_T] = t_now + max(0, a["wave_periodtimer"])
    apu[S.A_WAVE_POS] = a["wave_next_pos"]


def machine_rows(st: PyBoyState, gb, name: str = "<bytes>") -> dict:
    """One env's state arrays (VecGameBoy's per-env layout) for the parsed state."""
    cart = gb.cart
    spec = cart.spec()
    rows = {k: v.copy() for k, v in gb._power_on_template(spec).items()}
    cpu = st.cpu
    t_now = int(cpu["cycles"])
    r32, r64, io = rows["r32"], rows["r64"], rows["io"]
    # CPU
    for reg in ("a", "b", "c", "d", "e", "h", "l", "sp", "pc"):
        r32[S.REG_SLOTS[reg]] = cpu[reg]
    r32[S.REG_SLOTS["f"]] = cpu["f"] & 0xF0
    if cpu["halted"]:
        r32[S.R_PC] = (cpu["pc"] + 1) & 0xFFFF    # PyBoy keeps PC on the HALT opcode
    r32[S.R_IME] = cpu["ime"]
    r32[S.R_EI_PENDING] = int(cpu["ei_delay"] != 0 and not cpu["ime"])
    r32[S.R_HALTED], r32[S.R_STOPPED] = cpu["halted"], cpu["stopped"]
    r32[S.R_LOCKED] = r32[S.R_HALT_BUG] = 0
    r64[S.T_NOW] = t_now
    if st.bootrom_enabled:
        if gb._boot is None:
            raise PyBoyStateError(f"{name}: the state was saved while PyBoy's boot ROM was still "
                                  f"mapped (PC=${cpu['pc']:04X}); load a state saved after $0100, "
                                  f"or build the VecGameBoy with boot_rom=")
        r64[S.T_BOOT_MAPPED] = 1
    else:
        r64[S.T_BOOT_MAPPED] = 0
        io[0x50] = 0x01
    # memories
    rows["wram"][:] = st.wram
    rows["vram"][:] = st.vram
    rows["oam"][:] = st.oam
    rows["hram"][:127] = st.hram
    rows["hram"][127] = cpu["ie"]
    n = min(len(st.cart["ram"]), int(cart.ram_bytes))
    rows["cart_ram"][:n] = st.cart["ram"][:n]
    if cart.mbc == MBC2:           # PyBoy keeps the nibbles as value | $F0 in its first 512 bytes
        rows["cart_ram"][:n] &= 0x0F
    rows["mbc"][:] = _mbc_row(st, cart, spec, t_now, name)
    # I/O page
    io[0x00] = 0xC0 | (int(st.io_ports[0]) & 0x30)
    io[0x0F] = cpu["if"] & 0x1F
    io[0x10:0x40] = st.sound_io
    _apu_row(st, t_now, rows["apu"])
    lcd = st.lcd
    io[0x40], io[0x41], io[0x42], io[0x43] = lcd["lcdc"], lcd["stat"] & 0x78, lcd["scy"], lcd["scx"]
    io[0x45], io[0x47], io[0x48], io[0x49] = lcd["lyc"], lcd["bgp"], lcd["obp0"], lcd["obp1"]
    io[0x4A], io[0x4B], io[0x46] = lcd["wy"], lcd["wx"], st.dma["source"]
    # joypad (PyBoy: 0 = pressed, directions in the low nibble, as in docs/design.md)
    pressed = ((~st.joypad["directional"]) & 0xF) | (((~st.joypad["standard"]) & 0xF) << 4)
    r32[S.R_BUTTONS] = pressed
    lines = 0xF
    if not io[0] & 0x10:
        lines &= (pressed & 0xF) ^ 0xF
    if not io[0] & 0x20:
        lines &= ((pressed >> 4) & 0xF) ^ 0xF
    r32[S.R_JOYP_LINES] = lines
    # serial (PyBoy: no partner, SB reads $FF; a transfer takes 1024 T-cycles)
    ser = st.serial
    io[0x01], io[0x02] = ser["sb"], ser["sc"] & 0x81
    r32[S.R_SERIAL_COUNT] = 0
    r64[S.T_SERIAL_END] = NEVER_PY
    if ser["transfer"] and ser["internal"] and ser["sc"] & 0x81 == 0x81:
        lag = max(0, cpu["cycles"] - ser["last_cycles"])
        r64[S.T_SERIAL_END] = t_now + max(0, ser["clock_target"] - ser["clock"] - lag)
        rows["serial"][0] = ser["sb"]
        r32[S.R_SERIAL_COUNT] = 1
    # timer, PPU, DMA
    _timer_rows(st, t_now, io, r64)
    r64[S.T_FRAME_START] = _ppu_rows(st, t_now, io, r32, r64)
    r64[S.T_DMA_START] = r64[S.T_DMA_END] = r64[S.T_DMA_BLOCK] = r64[S.T_DMA_COPY] = 0
    dma = st.dma
    if dma["active"]:
        src = dma["source"] << 8
        if src >= 0xFE00:
            src -= 0x2000
        for i in range(dma["index"], 0xA0):
            rows["oam"][i] = _dma_source_byte(rows, cart, src + i)
        r64[S.T_DMA_START] = t_now - (cpu["cycles"] - dma["start"])
        r64[S.T_DMA_END] = r64[S.T_DMA_START] + 640
        r64[S.T_DMA_BLOCK] = r64[S.T_DMA_START]
    r64[S.T_NEXT_EVENT] = min(r64[S.T_TIMER_EVENT], r64[S.T_PPU_EVENT], r64[S.T_SERIAL_END])
    # screen
    shades = _screen_shades(st.screen)
    rows["frame"][:] = shades
    rows["obs"][:] = shades[::2, ::2]
    return rows


def _read_source(source) -> tuple[bytes, str]:
    if isinstance(source, (bytes, bytearray, memoryview)):
        return bytes(source), "<bytes>"
    if hasattr(source, "read"):
        data = source.read()
        if not isinstance(data, (bytes, bytearray)):
            raise TypeError(f"path_or_bytes: expected a binary file object, got one that read "
                            f"{type(data).__name__}")
        return bytes(data), getattr(source, "name", "<file object>")
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        if not os.path.isfile(path):
            raise FileNotFoundError(f"path_or_bytes: no PyBoy savestate file at {path!r}")
        with open(path, "rb") as f:
            return f.read(), path
    raise TypeError(f"path_or_bytes: expected a path, bytes or a binary file object (a PyBoy "
                    f"savestate), got {type(source).__name__}")


def load_pyboy_state(gb, path_or_bytes, mask=None) -> PyBoyState:
    """Load a PyBoy savestate into every env of VecGameBoy `gb` (or those in `mask`).

    The state is parsed and checked against gb's cartridge on the host, turned into one
    env's rows, then broadcast to the selected envs with the masked-copy kernels (no Python
    loop over envs). Returns the parsed state.
    """
    data, name = _read_source(path_or_bytes)
    m = gb._mask_array(mask)                    # validate mask before any work
    st = parse_pyboy_state(data, gb.cart, name)
    rows = machine_rows(st, gb, name)
    for key, arr in gb._arrays.items():
        src = wp.array(np.ascontiguousarray(rows[key])[None], dtype=arr.dtype, device=gb.device)
        masked_copy(src, arr, m, broadcast=True)
    return st
