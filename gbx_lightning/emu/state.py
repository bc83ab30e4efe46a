"""Machine state as structure-of-arrays over envs, and the post-boot power-on values.

The ROM (and an optional boot ROM) is stored once and shared by every env; per env
only what the hardware can write is stored: WRAM, VRAM, OAM, HRAM (+IE), the I/O
page, cartridge RAM and MBC registers, plus bookkeeping words for the CPU, timer,
PPU, serial and DMA (``r32`` int32 words and ``r64`` int64 timestamps in T-cycles).
"""
from __future__ import annotations

import os

import numpy as np
import warp as wp


# Cartridge interface: the cart helper's emu/mbc.py (cart_read/cart_write Warp funcs).
from .mbc import CartSpec, MBC_REGS, cart_read, cart_write, mbc_power_on_regs  # noqa: F401

# ---- the per-env bookkeeping words: every slot of r32 and r64 is defined here ------------
# (check_slot_map, run at import, fails if two names share a slot or one is out of range).

# int32 words, r32[env, R_*]. The register file first, in the opcode's r-field order with F
# in the (HL) slot: B C D E H L F A (the kernel indexes it by opcode fields).
R_B, R_C, R_D, R_E, R_H, R_L, R_F, R_A = (wp.constant(i) for i in range(8))
REG_SLOTS = {"b": 0, "c": 1, "d": 2, "e": 3, "h": 4, "l": 5, "f": 6, "a": 7, "sp": 8, "pc": 9}
R_SP = wp.constant(8)
R_PC = wp.constant(9)
R_IME = wp.constant(10)
R_EI_PENDING = wp.constant(11)   # EI executed; IME turns on after the next instruction
R_HALTED = wp.constant(12)       # 1: in HALT; 2: woken with no extra M-cycle due (bus.sleep_until)
R_LOCKED = wp.constant(13)       # illegal opcode executed: CPU hung until reset
R_STOPPED = wp.constant(14)      # STOP low-power state, left on a joypad press
R_HALT_BUG = wp.constant(15)     # next opcode fetch does not increment PC
R_BUTTONS = wp.constant(16)      # pressed buttons, docs/design.md bit order
R_JOYP_LINES = wp.constant(17)   # last P1 low nibble (for press edge -> IF bit 4)
R_SERIAL_COUNT = wp.constant(18) # bytes ever latched (ring index = count % SERIAL_CAP)
R_LY = wp.constant(19)
R_PPU_MODE = wp.constant(20)     # PPU mode 0-3, or one of ppu.PH_* (a line's first M-cycle)
R_STAT_LINE = wp.constant(21)    # OR of enabled STAT sources (interrupt on its rising edge)
R_WIN_LINE = wp.constant(22)     # window internal line counter
R_WY_TRIGGERED = wp.constant(23)
R_LCD_OFF_COINCIDENCE = wp.constant(24)  # STAT bit 2 frozen when the LCD went off
R_OBJ_SEL_LO = wp.constant(25)   # the line's OAM selection kept from mode 3 start (ppu.py):
R_MODE3_LEN = wp.constant(26)    # current line's mode-3 length in T-cycles
R_IDLE = wp.constant(27)         # idle-loop check (emu/idle.py): polled read, no write since
R_LCD_WARMUP = wp.constant(28)   # 1 from LCD on until the first VBlank (that frame is blank)
R_OBJ_SEL_HI = wp.constant(29)   # ... mask bits 20-39
R_OBJ_SEL_T = wp.constant(30)    # ... and the mode-3 start it belongs to
R_RENDER_NOW = wp.constant(31)   # render mode in effect: the launch's in its last frame, else none
NUM_R32 = 32

# int64 timestamps, r64[env, T_*], all in T-cycles since reset.
T_NOW = wp.constant(0)           # CPU time: start of the next instruction
T_FRAME_START = wp.constant(1)   # start of the current 70224-cycle frame window
T_NEXT_EVENT = wp.constant(2)    # min of the peripheral event times below
T_DIV_BASE = wp.constant(3)      # system counter = (t - T_DIV_BASE) mod 2^16
T_TIMER_LAST = wp.constant(4)    # TIMA is up to date for edges at times <= this
T_TIMA_OVERFLOW = wp.constant(5) # time TIMA overflowed, reload pending (-1: none)
T_TIMA_RELOADED = wp.constant(6) # time of the last TMA reload (its M-cycle ignores TIMA writes)
T_TIMER_EVENT = wp.constant(7)   # next time the timer must be synced (reload / overflow)
T_LINE_START = wp.constant(8)    # start of the current scanline
T_PPU_EVENT = wp.constant(9)     # next PPU mode change
T_SERIAL_END = wp.constant(10)   # transfer completion time (NEVER when idle)
T_DMA_START = wp.constant(11)
T_DMA_END = wp.constant(12)
T_BOOT_MAPPED = wp.constant(13)  # 1: boot ROM visible at 0000-00FF until FF50 is written
T_COUNT_INSTR = wp.constant(14)  # counter build only (cpu.COUNTERS): instructions run
T_COUNT_RUNS = wp.constant(15)   # counter build only: runs of the instruction loop ended
T_IDLE_HEAD = wp.constant(16)    # idle-loop check (emu/idle.py): the head of the last check,
T_IDLE_SIG = wp.constant(17)     #   the CPU state and time there, and until when the polled
T_IDLE_SIG2 = wp.constant(18)    #   values read since then stay the same
T_IDLE_T = wp.constant(19)
T_IDLE_VALID = wp.constant(20)
T_IDLE_SKIPS = wp.constant(21)   # idle-loop skips made (emu/idle.py), for tests and tools
T_DMA_BLOCK = wp.constant(22)    # OAM DMA: the CPU's buses are taken from here to T_DMA_END (dma.py)
T_DMA_COPY = wp.constant(23)     # OAM DMA: when its bytes land in OAM (0: none pending; dma.py)
NUM_R64 = 24                     # (padded: an env's row is three cache lines)


def slot_map() -> dict[str, dict[str, int]]:
    """Every named slot of r32 ("R_*") and r64 ("T_*") defined above (REG_SLOTS names the
    register file's words and is checked with them)."""
    g = globals()
    return {prefix: {k: int(v) for k, v in g.items() if k.startswith(prefix) and k[len(prefix):].isupper()
                     and isinstance(v, int) and not isinstance(v, bool)}
            for prefix in ("R_", "T_")}


def check_slot_map() -> None:
    """Raise if two r32 or r64 names share a slot (R_PC/"pc" and the register names are the
    same words as REG_SLOTS by design) or a slot is outside its array."""
    slots = slot_map()
    for prefix, size in (("R_", NUM_R32), ("T_", NUM_R64)):
        seen: dict[int, str] = {}
        for name, slot in sorted(slots[prefix].items(), key=lambda kv: kv[1]):
            if not 0 <= slot < size:
                raise AssertionError(f"state: {name} = {slot} is outside r{32 if prefix == 'R_' else 64}'s "
                                     f"{size} words")
            if slot in seen:
                raise AssertionError(f"state: {name} and {seen[slot]} both use slot {slot}")
            seen[slot] = name
    for reg, slot in REG_SLOTS.items():
        if slots["R_"].get(f"R_{reg.upper()}") != slot:
            raise AssertionError(f"state: REG_SLOTS[{reg!r}] = {slot} is not R_{reg.upper()}")


check_slot_map()

# int64 words of the sound unit, apu[env, A_*] (emu/apu.py: what each one means and when it is current).
A_SYNC_T = wp.constant(0)        # the frame sequencer and length timers are current up to this time
A_STEP = wp.constant(1)          # the step the next DIV-APU event runs (0-7); -1: that event is skipped
A_LEN1 = wp.constant(2)          # length timers of CH1..CH4: clocks left until the channel turns off
A_LEN2 = wp.constant(3)
A_LEN3 = wp.constant(4)
A_LEN4 = wp.constant(5)
A_SHADOW = wp.constant(6)        # CH1 sweep: shadow period, timer (sweep clocks to the next iteration),
A_SWEEP_TIMER = wp.constant(7)   #   enabled flag, a negate-mode calculation made since the trigger
A_SWEEP_ON = wp.constant(8)
A_NEG_USED = wp.constant(9)
A_WAVE_T = wp.constant(10)       # CH3: the time of one wave RAM read (fetch), the sample index it read,
A_WAVE_POS = wp.constant(11)     #   and the T-cycles between reads from then on
A_WAVE_PERIOD = wp.constant(12)
NUM_APU = 16

NEVER = wp.constant(wp.int64(1 << 62))
PPU_LOG_WORDS = 48   # the mode-3 write log per env (ppu_dots.py: 8 words, then up to 40 writes)
FRAME_CYCLES = 70224
FRAME_CYCLES_T = wp.constant(wp.int64(FRAME_CYCLES))
SERIAL_CAP = wp.constant(4096)
SERIAL_CAP_PY = 4096

# Bits of P1 lines etc.
IF_VBLANK, IF_STAT, IF_TIMER, IF_SERIAL, IF_JOYPAD = 1, 2, 4, 8, 16

# System counter value at PC=0100 on a DMG after its boot ROM (DIV reads $AB).
POST_BOOT_SYSTEM_COUNTER = 0xABCC

# Post-boot DMG I/O page (Pan Docs, Power Up Sequence, "Hardware registers").
POST_BOOT_IO = {
    0x00: 0xCF, 0x01: 0x00, 0x02: 0x7E, 0x05: 0x00, 0x06: 0x00, 0x07: 0xF8, 0x0F: 0xE1,
    0x10: 0x80, 0x11: 0xBF, 0x12: 0xF3, 0x13: 0xFF, 0x14: 0xBF, 0x16: 0x3F, 0x17: 0x00,
    0x18: 0xFF, 0x19: 0xBF, 0x1A: 0x7F, 0x1B: 0xFF, 0x1C: 0x9F, 0x1D: 0xFF, 0x1E: 0xBF,
    0x20: 0xFF, 0x21: 0x00, 0x22: 0x00, 0x23: 0xBF, 0x24: 0x77, 0x25: 0xF3, 0x26: 0xF1,
    0x40: 0x91, 0x41: 0x85, 0x42: 0x00, 0x43: 0x00, 0x44: 0x00, 0x45: 0x00, 0x46: 0xFF,
    0x47: 0xFC, 0x48: 0xFF, 0x49: 0xFF, 0x4A: 0x00, 0x4B: 0x00,
}

# Bits that read back as 1 whatever was written (unused bits, write-only regs, holes).
def _io_read_mask() -> np.ndarray:
    mask = np.full(128, 0xFF, dtype=np.uint8)      # unmapped registers read $FF
    known = {
        0x00: 0xC0, 0x01: 0x00, 0x02: 0x7E, 0x04: 0x00, 0x05: 0x00, 0x06: 0x00, 0x07: 0xF8,
        0x0F: 0xE0, 0x10: 0x80, 0x11: 0x3F, 0x12: 0x00, 0x13: 0xFF, 0x14: 0xBF, 0x16: 0x3F,
        0x17: 0x00, 0x18: 0xFF, 0x19: 0xBF, 0x1A: 0x7F, 0x1B: 0xFF, 0x1C: 0x9F, 0x1D: 0xFF,
        0x1E: 0xBF, 0x20: 0xFF, 0x21: 0x00, 0x22: 0x00, 0x23: 0xBF, 0x24: 0x00, 0x25: 0x00,
        0x26: 0x70, 0x40: 0x00, 0x41: 0x80, 0x42: 0x00, 0x43: 0x00, 0x44: 0x00, 0x45: 0x00,
        0x46: 0x00, 0x47: 0x00, 0x48: 0x00, 0x49: 0x00, 0x4A: 0x00, 0x4B: 0x00,
    }
    for reg, m in known.items():
        mask[reg] = m
    mask[0x30:0x40] = 0x00                          # wave RAM
    return mask

IO_READ_MASK = _io_read_mask()


@wp.struct
class Machine:
    """Every array the kernel touches, passed as one struct value."""
    rom: wp.array(dtype=wp.uint8)          # shared by all envs
    boot: wp.array(dtype=wp.uint8)         # shared optional 256-byte boot ROM
    io_rmask: wp.array(dtype=wp.uint8)     # shared: read-as-1 bits per I/O register
    spec: CartSpec
    cart_ram: wp.array2d(dtype=wp.uint8)
    mbc: wp.array2d(dtype=wp.int32)
    wram: wp.array2d(dtype=wp.uint8)
    vram: wp.array2d(dtype=wp.uint8)
    oam: wp.array2d(dtype=wp.uint8)
    hram: wp.array2d(dtype=wp.uint8)       # FF80-FFFE, index 127 = IE (FFFF)
    io: wp.array2d(dtype=wp.uint8)         # FF00-FF7F raw register bytes
    r32: wp.array2d(dtype=wp.int32)
    r64: wp.array2d(dtype=wp.int64)
    serial: wp.array2d(dtype=wp.uint8)     # ring of latched SB bytes
    frame: wp.array3d(dtype=wp.uint8)      # [N,144,160] shades
    obs: wp.array3d(dtype=wp.uint8)        # [N,72,80] shades
    line_buf: wp.array2d(dtype=wp.uint64)  # [N,66] scratch of the renderer (not state)
    bit_bytes: wp.array(dtype=wp.uint64)   # shared: the renderer's tile-row table (render.BIT_BYTES)
    flat_addr: wp.array2d(dtype=wp.int32)  # conformance flat RAM, sparse: addresses [N,K]
    flat_val: wp.array2d(dtype=wp.uint8)   # ... and their bytes (K slots, -1 = free)
    flat_mode: int                         # 1: flat RAM bus, no I/O, no events (SM83 cases)
    render_mode: int                       # RENDER_NONE / OBS / FULL for this launch
    idle_skip: int                         # 1: skip the iterations of idle loops (emu/idle.py)
    apu: wp.array2d(dtype=wp.int64)        # [N, NUM_APU] the sound unit's counters (emu/apu.py, A_*)
    ppu_log: wp.array2d(dtype=wp.int32)    # [N,48] the PPU register writes of the current mode 3 (ppu_dots.py)


# How kernels take the machine: a one-element array of Machine (MachineRef), not the struct
# itself (Warp passes structs by value: ~1 KB of array descriptors per call).
MachineRef = wp.array(dtype=Machine)
# How functions take it: the address of that Machine (MachinePtr, a uint64 that travels in a
# register). Each function loads the fields it uses (`m = machine(ms)` at its top). Through
# the 56-byte MachineRef, every out-of-line call copied the handle to the stack with narrow
# stores that the callee read back with wide loads (store-forwarding stalls, ~11% of the
# samples of a joypad-polling game's profile).
MachinePtr = wp.uint64


@wp.func
def machine(ms: MachinePtr) -> Machine:
    """The Machine at address ms (a MachineRef's data: machine_ptr)."""
    return wp.array(ptr=ms, shape=(1,), dtype=Machine)[0]


@wp.func
def machine_ptr(mref: MachineRef) -> MachinePtr:
    """The MachinePtr of a kernel's MachineRef argument."""
    return wp.uint64(mref.ptr)


# The layout of r32/r64 (issue 24). "rows": env-major ([env, slot] in memory), an env's words in
# one or a few cache lines: the CPU's, where a launch thread runs one env at a time. "soa":
# env-fastest ([slot, env] in memory), so a GPU warp's 32 threads (32 envs in step) reading one
# slot touch one cache line instead of 32. Either way the machine holds the same logical
# [env, slot] Warp array (soa: a transposed view, strides swapped), so `m.r32[env, k]`, `.numpy()`,
# `wp.to_torch` and state files see the same indices; only code that does pointer math on them
# must know (r32_row / r64_row below, VecGameBoy). Chosen when this module is imported, as the
# code is built for it: GBX_EMU_LAYOUT=soa builds the views from the arrays' strides (either
# layout runs) on the CPU and CUDA, and makes soa the machines' default; otherwise both targets
# build the constant-stride row views (rows only). CUDA stays on rows by default: on sm_90 the
# strided views grow machine_kernel_staged from 1,976 / 928 / 1,106 B (stack frame / spill
# stores / loads; 255 registers either way) to 2,256 / 1,252 / 2,062 B (the slot stride is a
# runtime value: address math the row views fold into load offsets), which a device has to show
# the coalescing pays for first (SOA_ON_CUDA below; tests/test_kernel_report.py pins the rows).
LAYOUTS = ("rows", "soa")
SOA_ON_CPU = os.environ.get("GBX_EMU_LAYOUT", "") == "soa"
SOA_ON_CUDA = os.environ.get("GBX_EMU_LAYOUT", "") == "soa"


def soa_built(device) -> bool:
    """Whether the code built for `device` reads r32/r64 in the soa layout (it reads rows either way)."""
    return SOA_ON_CUDA if wp.get_device(device).is_cuda else SOA_ON_CPU


def default_layout(device) -> str:
    """The r32/r64 layout a machine on `device` uses unless told otherwise."""
    return "soa" if soa_built(device) else "rows"


def check_layout(layout: str, device) -> str:
    """`layout` if the code built for `device` reads it (soa only with GBX_EMU_LAYOUT=soa)."""
    if layout not in LAYOUTS:
        raise ValueError(f"layout: expected one of {list(LAYOUTS)}, got {layout!r}")
    if layout == "soa" and not soa_built(device):
        raise ValueError("layout: 'soa' needs GBX_EMU_LAYOUT=soa set before gbx_lightning.emu is imported (the "
                         "code is built for rows only otherwise)")
    return layout


def per_env_zeros(num_envs: int, shape: tuple, dtype, device, layout: str = "rows") -> wp.array:
    """A zeroed [num_envs, *shape] array; with layout "soa" (1-d shape only) stored [slot, env] and
    returned as the transposed [env, slot] view (which keeps the storage alive)."""
    if layout == "soa":
        if len(shape) != 1:
            raise ValueError(f"per_env_zeros: the soa layout is for [env, slot] arrays, got shape {shape}")
        return wp.zeros((shape[0], num_envs), dtype=dtype, device=device).transpose()
    return wp.zeros((num_envs,) + tuple(shape), dtype=dtype, device=device)


def layout_of(arr: wp.array) -> str:
    """"rows" or "soa" for a 2-d per-env array as per_env_zeros makes them (ValueError otherwise)."""
    size = wp.types.type_size_in_bytes(arr.dtype)
    if arr.ndim == 2 and arr.strides == (arr.shape[1] * size, size):
        return "rows"
    if arr.ndim == 2 and arr.strides == (size, arr.shape[0] * size):
        return "soa"
    raise ValueError(f"expected a [env, slot] array in the rows or soa layout, got shape {arr.shape} "
                     f"strides {arr.strides}")


@wp.func_native(f"""
#if defined(__CUDA_ARCH__)
    return {int(SOA_ON_CUDA)};
#else
    return {int(SOA_ON_CPU)};
#endif
""")
def soa_here() -> int:
    """1 in code built for a target that reads r32/r64 in the soa layout (SOA_ON_CUDA on a GPU,
    SOA_ON_CPU on a CPU), else 0: a constant, so the compiler drops the other layout's branch."""
    ...


# One env's rows of io/r32/r64 as 1-d views: on the CPU (rows) constant strides and descriptors
# that live in registers, where the 2-d machine arrays made every access reload their strides
# after each byte store. The instruction loop and the PPU's catch-up work on these. Where soa is
# built (SOA_ON_CPU / SOA_ON_CUDA), r32/r64's views are the arrays' row `env` with their own
# strides: the soa layout's slot stride is num_envs words.
IO = wp.array(dtype=wp.uint8)
R32 = wp.array(dtype=wp.int32)
R64 = wp.array(dtype=wp.int64)


@wp.func
def io_row(ms: MachinePtr, env: int) -> IO:
    """env's 128 I/O register bytes."""
    m = machine(ms)
    return wp.array(ptr=wp.uint64(m.io.ptr) + wp.uint64(env * 128), shape=(128,), dtype=wp.uint8)


@wp.func
def r32_row(ms: MachinePtr, env: int) -> R32:
    """env's NUM_R32 int32 words (the register file first)."""
    m = machine(ms)
    if wp.static(SOA_ON_CPU or SOA_ON_CUDA):   # (rows everywhere: not generated at all)
        if soa_here() != 0:
            return m.r32[env]
    return wp.array(ptr=wp.uint64(m.r32.ptr) + wp.uint64(env * NUM_R32 * 4), shape=(NUM_R32,), dtype=wp.int32)


@wp.func
def r64_row(ms: MachinePtr, env: int) -> R64:
    """env's NUM_R64 int64 timestamps."""
    m = machine(ms)
    if wp.static(SOA_ON_CPU or SOA_ON_CUDA):   # (rows everywhere: not generated at all)
        if soa_here() != 0:
            return m.r64[env]
    return wp.array(ptr=wp.uint64(m.r64.ptr) + wp.uint64(env * NUM_R64 * 8), shape=(NUM_R64,), dtype=wp.int64)


def machine_ref(m: Machine) -> wp.array:
    """The MachineRef handle of a Machine (built per launch: it holds the struct by value,
    render_mode included)."""
    return wp.array([m], dtype=Machine, device=m.rom.device)

# Per-env arrays that make up the snapshot, in a fixed order (name, per-env shape, dtype).
def per_env_layout(cart_ram_bytes: int, mbc_regs: int) -> list[tuple[str, tuple, type]]:
    return [
        ("cart_ram", (max(cart_ram_bytes, 1),), np.uint8),
        ("mbc", (mbc_regs,), np.int32),
        ("wram", (8192,), np.uint8),
        ("vram", (8192,), np.uint8),
        ("oam", (160,), np.uint8),
        ("hram", (128,), np.uint8),
        ("io", (128,), np.uint8),
        ("r32", (NUM_R32,), np.int32),
        ("r64", (NUM_R64,), np.int64),
        ("serial", (SERIAL_CAP_PY,), np.uint8),
        ("frame", (144, 160), np.uint8),
        ("obs", (72, 80), np.uint8),
        ("apu", (NUM_APU,), np.int64),
        ("ppu_log", (PPU_LOG_WORDS,), np.int32),   # (appended: older layouts lack it) ppu_dots.py
    ]
