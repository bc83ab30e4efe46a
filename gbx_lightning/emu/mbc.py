"""Cartridge memory bank controllers (ROM only, MBC1, MBC3 with RTC, MBC5) as Warp functions.

The ROM image is one shared array; each env owns a row of MBC registers
(``mbc[env, :]``, ``MBC_REGS`` int32 words) and a row of cartridge RAM.

The read path runs on every opcode fetch, so writes to the MBC precompute the
byte offsets reads need (``REG_ROM0_BASE``, ``REG_ROMX_BASE``, ``REG_RAM_BASE``):
a ROM read is one register load plus one array load, whatever the MBC.

Hardware facts (Pan Docs, "MBC1", "MBC3", "MBC5"):

- MBC1: $2000-$3FFF holds a 5-bit bank register where 0 reads as 1 *within
  those 5 bits* ($20/$40/$60 select $21/$41/$61); $4000-$5FFF holds 2 more bits;
  in mode 1 ($6000-$7FFF = 1) those 2 bits also bank $0000-$3FFF and the RAM.
- MBC3: 7-bit ROM bank (0 -> 1); $4000-$5FFF selects RAM bank 0-3 or RTC
  register $08-$0C; writing $00 then $01 to $6000-$7FFF latches the clock.
- MBC5: 9-bit ROM bank ($2000-$2FFF low 8 bits, $3000-$3FFF bit 8), bank 0
  selectable; 4-bit RAM bank.
- RAM is enabled by $0A in the low nibble of a $0000-$1FFF write (MBC5 wants
  exactly $0A); disabled or absent RAM reads $FF.
"""
from __future__ import annotations

import numpy as np
import warp as wp

__all__ = [
    "CartSpec", "MBC_NONE", "MBC1", "MBC3", "MBC5", "MBC_REGS", "make_cart_spec",
    "mbc_power_on_regs", "cart_read", "cart_write", "RTC_T_CYCLES_PER_SECOND",
    "RAM_UNMAPPED", "RAM_RTC",
]

MBC_NONE, MBC1, MBC3, MBC5 = 0, 1, 3, 5

# One second of the RTC's 32.768 kHz crystal, in CPU T-cycles (4.194304 MHz).
RTC_T_CYCLES_PER_SECOND = 4194304

# Per-env register layout: mbc[env, i]. Values the read path uses come first.
REG_ROM0_BASE = 0    # rom index of $0000 (non-zero only for MBC1 mode 1 on big ROMs)
REG_ROMX_BASE = 1    # rom index = REG_ROMX_BASE + addr for $4000-$7FFF (bank*$4000 - $4000)
REG_RAM_BASE = 2     # cart_ram index = REG_RAM_BASE + (addr - $A000); or RAM_UNMAPPED / RAM_RTC
REG_RAM_ENABLE = 3   # 1 after $0A was written to $0000-$1FFF
REG_BANK_LO = 4      # MBC1: 5-bit BANK1; MBC3: 7-bit bank; MBC5: low 8 bits
REG_BANK_HI = 5      # MBC1: 2-bit BANK2; MBC5: bank bit 8
REG_RAM_SELECT = 6   # MBC3: $00-$03 RAM bank or $08-$0C RTC register; MBC5: RAM bank
REG_MODE = 7         # MBC1 banking mode (0/1)
REG_LATCH_LAST = 8   # MBC3: last value written to $6000-$7FFF (latch on $00 -> $01)
REG_RTC_S = 9        # live RTC counters: seconds, minutes, hours, day low, day high
REG_RTC_M = 10
REG_RTC_H = 11
REG_RTC_DL = 12
REG_RTC_DH = 13      # bit 0 day bit 8, bit 6 halt, bit 7 day-counter carry
REG_RTC_SUBSEC = 14  # T-cycles into the current second
REG_RTC_T_LO = 15    # emulated time of the last RTC update: low 31 bits ...
REG_RTC_T_HI = 16    # ... and the bits above
REG_RTC_LATCHED = 17  # 17..21: latched S, M, H, DL, DH (what $A000 reads)
MBC_REGS = 22

RAM_UNMAPPED = -1    # REG_RAM_BASE: reads $FF, writes ignored
RAM_RTC = -2         # REG_RAM_BASE: an RTC register is mapped at $A000-$BFFF


@wp.struct
class CartSpec:
    """Cartridge facts shared by all envs (from the header)."""

    kind: int        # MBC_NONE, MBC1, MBC3 or MBC5
    rom_banks: int   # 16 KiB banks in the ROM file (a power of two)
    ram_banks: int   # 8 KiB banks of cartridge RAM (0 = none)
    has_rtc: int     # 1 for MBC3+TIMER


def make_cart_spec(kind: int, rom_banks: int, ram_banks: int, has_rtc: bool = False) -> CartSpec:
    """Build a CartSpec, checking what the kernels rely on (bank counts are powers of two)."""
    if kind not in (MBC_NONE, MBC1, MBC3, MBC5):
        raise ValueError(f"kind: expected one of MBC_NONE=0, MBC1=1, MBC3=3, MBC5=5, got {kind!r}")
    if rom_banks < 2 or rom_banks & (rom_banks - 1):
        raise ValueError(f"rom_banks: expected a power of two >= 2, got {rom_banks!r}")
    if ram_banks < 0 or (ram_banks & (ram_banks - 1)):
        raise ValueError(f"ram_banks: expected 0 or a power of two, got {ram_banks!r}")
    spec = CartSpec()
    spec.kind = int(kind)
    spec.rom_banks = int(rom_banks)
    spec.ram_banks = int(ram_banks)
    spec.has_rtc = int(bool(has_rtc))
    return spec


def mbc_power_on_regs(spec: CartSpec) -> np.ndarray:
    """Register row of a freshly powered cartridge: bank 1 at $4000, RAM disabled, RTC at 0."""
    regs = np.zeros(MBC_REGS, dtype=np.int32)
    regs[REG_ROM0_BASE] = 0
    regs[REG_ROMX_BASE] = 0            # bank 1: index = 1*$4000 - $4000 + addr
    regs[REG_BANK_LO] = 1
    # Without an MBC there is no enable register: RAM (if any) is always mapped.
    if spec.kind == MBC_NONE and spec.ram_banks > 0:
        regs[REG_RAM_ENABLE] = 1
        regs[REG_RAM_BASE] = 0
    else:
        regs[REG_RAM_BASE] = RAM_UNMAPPED
    regs[REG_LATCH_LAST] = 0xFF
    return regs


# --------------------------------------------------------------------------
# Read path
# --------------------------------------------------------------------------
@wp.func
def cart_read(rom: wp.array(dtype=wp.uint8), cart_ram: wp.array2d(dtype=wp.uint8),
              mbc: wp.array2d(dtype=wp.int32), spec: CartSpec, env: int, addr: int,
              t_now: wp.int64) -> int:
    """Byte at `addr` ($0000-$7FFF ROM, $A000-$BFFF RAM/RTC) as the cartridge drives it."""
    if addr < 0x4000:
        return int(rom[mbc[env, 0] + addr])
    if addr < 0x8000:
        return int(rom[mbc[env, 1] + addr])
    base = mbc[env, 2]
    if base >= 0:
        return int(cart_ram[env, base + (addr & 0x1FFF)])
    if base == -2:
        # RTC registers read their latched copy (selected register $08-$0C).
        return mbc[env, 17 + mbc[env, 6] - 8]
    return 0xFF


# --------------------------------------------------------------------------
# Write path (MBC registers, RAM, RTC)
# --------------------------------------------------------------------------
@wp.func
def _mbc_remap(mbc: wp.array2d(dtype=wp.int32), spec: CartSpec, env: int):
    """Recompute the read-path offsets from the bank registers."""
    rom_bank = int(1)
    rom0_bank = int(0)
    ram_bank = int(0)
    enabled = mbc[env, 3]
    mapped_rtc = int(0)
    if spec.kind == 1:
        lo = mbc[env, 4]
        hi = mbc[env, 5]
        rom_bank = (hi << 5) | lo
        if mbc[env, 7] == 1:
            rom0_bank = hi << 5
            ram_bank = hi
    elif spec.kind == 3:
        rom_bank = mbc[env, 4]
        sel = mbc[env, 6]
        if sel >= 8:
            if spec.has_rtc == 1 and sel <= 12:
                mapped_rtc = 1
            else:
                enabled = 0
        else:
            ram_bank = sel
    elif spec.kind == 5:
        rom_bank = (mbc[env, 5] << 8) | mbc[env, 4]
        ram_bank = mbc[env, 6]
    else:
        enabled = 1
    rom_bank = rom_bank % spec.rom_banks
    rom0_bank = rom0_bank % spec.rom_banks
    mbc[env, 0] = rom0_bank * 0x4000
    mbc[env, 1] = rom_bank * 0x4000 - 0x4000
    if enabled == 0:
        mbc[env, 2] = -1
    elif mapped_rtc == 1:
        mbc[env, 2] = -2
    elif spec.ram_banks > 0:
        mbc[env, 2] = (ram_bank % spec.ram_banks) * 0x2000
    else:
        mbc[env, 2] = -1


@wp.func
def _rtc_field_add(value: int, n: int, modulus: int, width: int) -> wp.vec2i:
    """Add n ticks to a counter that carries at `modulus` but is `width` wide.

    A value at or past `modulus` (written by software) counts up to `width` and
    wraps to 0 without a carry, as the MBC3 counters do. Returns (value, carries).
    """
    if n == 0:
        return wp.vec2i(value, 0)
    if value >= modulus:
        to_wrap = width - value
        if n < to_wrap:
            return wp.vec2i(value + n, 0)
        n = n - to_wrap
        value = 0
    total = value + n
    return wp.vec2i(total % modulus, total / modulus)


@wp.func
def _rtc_sync(mbc: wp.array2d(dtype=wp.int32), env: int, t_now: wp.int64):
    """Bring the live RTC counters up to emulated time `t_now`."""
    t_last = (wp.int64(mbc[env, 16]) << wp.int64(31)) | wp.int64(mbc[env, 15])
    elapsed = t_now - t_last
    if elapsed < wp.int64(0):
        elapsed = wp.int64(0)
    mbc[env, 15] = int(t_now & wp.int64(0x7FFFFFFF))
    mbc[env, 16] = int(t_now >> wp.int64(31))
    dh = mbc[env, 13]
    if (dh & 0x40) != 0:
        return      # halted: time passes without the clock
    total = wp.int64(mbc[env, 14]) + elapsed
    per_second = wp.int64(4194304)
    secs64 = total / per_second
    mbc[env, 14] = int(total - secs64 * per_second)
    if secs64 == wp.int64(0):
        return
    # Split whole seconds into days and a remainder so int32 math cannot overflow.
    days_bulk = int(secs64 / wp.int64(86400))
    secs = int(secs64 - wp.int64(days_bulk) * wp.int64(86400))
    r = _rtc_field_add(mbc[env, 9], secs, 60, 64)
    mbc[env, 9] = r[0]
    r = _rtc_field_add(mbc[env, 10], r[1], 60, 64)
    mbc[env, 10] = r[0]
    r = _rtc_field_add(mbc[env, 11], r[1], 24, 32)
    mbc[env, 11] = r[0]
    days = (mbc[env, 12] | ((dh & 1) << 8)) + r[1] + (days_bulk % 512)
    carry = dh & 0x80
    if days >= 512 or days_bulk >= 512:
        carry = 0x80
    days = days % 512
    mbc[env, 12] = days & 0xFF
    mbc[env, 13] = carry | (dh & 0x40) | (days >> 8)


@wp.func
def cart_write(rom: wp.array(dtype=wp.uint8), cart_ram: wp.array2d(dtype=wp.uint8),
               mbc: wp.array2d(dtype=wp.int32), spec: CartSpec, env: int, addr: int,
               value: int, t_now: wp.int64):
    """CPU write of `value` to `addr` in $0000-$7FFF (MBC registers) or $A000-$BFFF (RAM/RTC)."""
    value = value & 0xFF
    if addr >= 0xA000:
        base = mbc[env, 2]
        if base >= 0:
            cart_ram[env, base + (addr & 0x1FFF)] = wp.uint8(value)
        elif base == -2:
            _rtc_sync(mbc, env, t_now)
            sel = mbc[env, 6]
            masked = value
            if sel == 8:
                masked = value & 0x3F
                mbc[env, 14] = 0           # writing seconds restarts the second
            elif sel == 9:
                masked = value & 0x3F
            elif sel == 10:
                masked = value & 0x1F
            elif sel == 12:
                masked = value & 0xC1
            mbc[env, 9 + sel - 8] = masked
            mbc[env, 17 + sel - 8] = masked   # reads before the next latch see the new value
        return
    if spec.kind == 0:
        return
    region = addr >> 13          # 0: $0000-$1FFF, 1: $2000-$3FFF, 2: $4000-$5FFF, 3: $6000-$7FFF
    if region == 0:
        enable = int(0)
        if spec.kind == 5:
            if value == 0x0A:
                enable = 1
        elif (value & 0x0F) == 0x0A:
            enable = 1
        mbc[env, 3] = enable
    elif region == 1:
        if spec.kind == 1:
            lo = value & 0x1F
            if lo == 0:
                lo = 1
            mbc[env, 4] = lo
        elif spec.kind == 3:
            lo = value & 0x7F
            if lo == 0:
                lo = 1
            mbc[env, 4] = lo
        else:
            if addr < 0x3000:
                mbc[env, 4] = value
            else:
                mbc[env, 5] = value & 1
    elif region == 2:
        if spec.kind == 1:
            mbc[env, 5] = value & 3
        elif spec.kind == 3:
            mbc[env, 6] = value & 0x0F
        else:
            mbc[env, 6] = value & 0x0F
    else:
        if spec.kind == 1:
            mbc[env, 7] = value & 1
        elif spec.kind == 3:
            if mbc[env, 8] == 0 and value == 1 and spec.has_rtc == 1:
                _rtc_sync(mbc, env, t_now)
                for i in range(5):
                    mbc[env, 17 + i] = mbc[env, 9 + i]
            mbc[env, 8] = value
    _mbc_remap(mbc, spec, env)
