"""Cartridge memory bank controllers (ROM only, MBC1 and MBC1M, MBC2, MBC3 with RTC, MBC5) as Warp functions.

The ROM image is one shared array; each env owns a row of MBC registers
(``mbc[env, :]``, ``MBC_REGS`` int32 words) and a row of cartridge RAM.

The read path runs on every opcode fetch, so writes to the MBC precompute the
byte offsets reads need (``REG_ROM0_BASE``, ``REG_ROMX_BASE``, ``REG_RAM_BASE``):
a ROM read is one register load plus one array load, whatever the MBC.

Hardware facts (Pan Docs, "MBC1", "MBC2", "MBC3", "MBC5"):

- MBC1: $2000-$3FFF holds a 5-bit bank register where 0 reads as 1 *within
  those 5 bits* ($20/$40/$60 select $21/$41/$61); $4000-$5FFF holds 2 more bits;
  in mode 1 ($6000-$7FFF = 1) those 2 bits also bank $0000-$3FFF and the RAM.
- MBC1M (1 MiB multi-game carts, ``CartSpec.variant`` 1 on an MBC1): the 2-bit register
  drives ROM bank bits 4-5 and only the low 4 bits of the 5-bit register are
  wired (its 0 -> 1 rule still looks at all 5): bank = BANK2 << 4 | (BANK1 & $F);
  mode 1 maps bank BANK2 << 4 at $0000-$3FFF. The RAM is not banked.
- MBC2: registers only in $0000-$3FFF, chosen by address bit 8: clear = RAM
  enable ($A in the low nibble), set = 4-bit ROM bank (0 -> 1). 512 x 4-bit
  RAM inside the chip at $A000-$A1FF, echoed through $BFFF (address bits 0-8);
  the upper nibble is undefined on hardware, here it reads as 1s.
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
    "CartSpec", "MBC_NONE", "MBC1", "MBC2", "MBC3", "MBC5", "MBC_REGS", "MBC2_RAM_BYTES",
    "make_cart_spec", "make_cart_arrays",
    "mbc_regs_after_writes",
    "mbc_power_on_regs", "cart_read", "cart_write", "RTC_T_CYCLES_PER_SECOND",
    "RAM_UNMAPPED", "RAM_RTC", "RAM_MBC2",
]

MBC_NONE, MBC1, MBC2, MBC3, MBC5 = (wp.constant(0), wp.constant(1), wp.constant(2), wp.constant(3),
                                    wp.constant(5))
MBC2_RAM_BYTES = 512              # 512 x 4 bits built into the MBC2 (one nibble per byte here)

# One second of the RTC's 32.768 kHz crystal, in CPU T-cycles (4.194304 MHz).
RTC_T_CYCLES_PER_SECOND = wp.constant(4194304)

# Per-env register layout: mbc[env, i]. Values the read path uses come first.
REG_ROM0_BASE = wp.constant(0)    # rom index of $0000 (non-zero only for MBC1 mode 1 on big ROMs)
REG_ROMX_BASE = wp.constant(1)    # rom index = REG_ROMX_BASE + addr for $4000-$7FFF (bank*$4000 - $4000)
REG_RAM_BASE = wp.constant(2)     # cart_ram index = REG_RAM_BASE + (addr - $A000); or RAM_UNMAPPED / RAM_RTC / RAM_MBC2
REG_RAM_ENABLE = wp.constant(3)   # 1 after $0A was written to $0000-$1FFF
REG_BANK_LO = wp.constant(4)      # MBC1: 5-bit BANK1; MBC2: 4-bit bank; MBC3: 7-bit bank; MBC5: low 8 bits
REG_BANK_HI = wp.constant(5)      # MBC1: 2-bit BANK2; MBC5: bank bit 8
REG_RAM_SELECT = wp.constant(6)   # MBC3: $00-$03 RAM bank or $08-$0C RTC register; MBC5: RAM bank
REG_MODE = wp.constant(7)         # MBC1 banking mode (0/1)
REG_LATCH_LAST = wp.constant(8)   # MBC3: last value written to $6000-$7FFF (latch on $00 -> $01)
REG_RTC_S = wp.constant(9)        # live RTC counters: seconds, minutes, hours, day low, day high
REG_RTC_M = wp.constant(10)
REG_RTC_H = wp.constant(11)
REG_RTC_DL = wp.constant(12)
REG_RTC_DH = wp.constant(13)      # bit 0 day bit 8, bit 6 halt, bit 7 day-counter carry
REG_RTC_SUBSEC = wp.constant(14)  # T-cycles into the current second
REG_RTC_T_LO = wp.constant(15)    # emulated time of the last RTC update: low 31 bits ...
REG_RTC_T_HI = wp.constant(16)    # ... and the bits above
REG_RTC_LATCHED = wp.constant(17)  # 17..21: latched S, M, H, DL, DH (what $A000 reads)
MBC_REGS = wp.constant(22)

RAM_UNMAPPED = wp.constant(-1)    # REG_RAM_BASE: reads $FF, writes ignored
RAM_RTC = wp.constant(-2)         # REG_RAM_BASE: an RTC register is mapped at $A000-$BFFF
RAM_MBC2 = wp.constant(-3)        # REG_RAM_BASE: MBC2's nibble RAM is enabled (index = addr & $1FF)


@wp.struct
class CartSpec:
    """Cartridge facts shared by all envs (from the header)."""

    kind: int        # MBC_NONE, MBC1, MBC2, MBC3 or MBC5
    rom_banks: int   # 16 KiB banks in the ROM file (a power of two)
    ram_banks: int   # 8 KiB banks of cartridge RAM (0 = none; MBC2's built-in RAM is not counted)
    variant: int     # 1 for MBC3 with the RTC (MBC3+TIMER), or MBC1 wired as MBC1M; else 0
    # One field for both variants, not two: a fifth field in this struct (it sits in Machine) changed
    # LLVM's code for the whole CPU loop and cost 19% on a memcpy-heavy ROM (tools/ab_emu.py, paired).


def make_cart_spec(kind: int, rom_banks: int, ram_banks: int, has_rtc: bool = False,
                   multicart: bool = False) -> CartSpec:
    """Build a CartSpec, checking what the kernels rely on (bank counts are powers of two)."""
    if kind not in (MBC_NONE, MBC1, MBC2, MBC3, MBC5):
        raise ValueError(f"kind: expected one of MBC_NONE=0, MBC1=1, MBC2=2, MBC3=3, MBC5=5, got {kind!r}")
    if rom_banks < 2 or rom_banks & (rom_banks - 1):
        raise ValueError(f"rom_banks: expected a power of two >= 2, got {rom_banks!r}")
    if ram_banks < 0 or (ram_banks & (ram_banks - 1)):
        raise ValueError(f"ram_banks: expected 0 or a power of two, got {ram_banks!r}")
    if kind == MBC2 and (rom_banks > 16 or ram_banks):
        raise ValueError(f"MBC2: expected at most 16 ROM banks and no external RAM, got "
                         f"rom_banks={rom_banks}, ram_banks={ram_banks}")
    if has_rtc and kind != MBC3:
        raise ValueError(f"has_rtc: only an MBC3 has a clock, got kind={kind}")
    if multicart and (kind != MBC1 or rom_banks != 64):
        raise ValueError(f"multicart: MBC1M is an MBC1 with 64 ROM banks (1 MiB), got kind={kind}, "
                         f"rom_banks={rom_banks}")
    spec = CartSpec()
    spec.kind = int(kind)
    spec.rom_banks = int(rom_banks)
    spec.ram_banks = int(ram_banks)
    spec.variant = int(bool(has_rtc) or bool(multicart))   # has_rtc only for MBC3, multicart only for MBC1
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


def make_cart_arrays(cart, num_envs: int, device=None):
    """Device arrays for `num_envs` copies of `cart` at power-on.

    Returns (spec, rom, cart_ram, mbc): the ROM once (shared by all envs),
    cart RAM [num_envs, max(ram_bytes, 1)] zeroed (512 for MBC2), MBC registers
    [num_envs, MBC_REGS] from mbc_power_on_regs.
    """
    if not isinstance(num_envs, int) or num_envs < 1:
        raise ValueError(f"num_envs: expected a positive int, got {num_envs!r}")
    spec = cart.spec()
    rom = wp.array(np.ascontiguousarray(cart.rom), dtype=wp.uint8, device=device)
    cart_ram = wp.zeros((num_envs, max(cart.ram_bytes, 1)), dtype=wp.uint8, device=device)
    regs = np.tile(mbc_power_on_regs(spec), (num_envs, 1))
    mbc = wp.array(regs, dtype=wp.int32, device=device)
    return spec, rom, cart_ram, mbc


# --------------------------------------------------------------------------
# Read path
# --------------------------------------------------------------------------
@wp.func
def cart_read(rom: wp.array(dtype=wp.uint8), cart_ram: wp.array2d(dtype=wp.uint8),
              mbc: wp.array2d(dtype=wp.int32), spec: CartSpec, env: int, addr: int,
              t_now: wp.int64) -> int:
    """Byte at `addr` ($0000-$7FFF ROM, $A000-$BFFF RAM/RTC) as the cartridge drives it."""
    if addr < 0x4000:
        return int(rom[mbc[env, REG_ROM0_BASE] + addr])
    if addr < 0x8000:
        return int(rom[mbc[env, REG_ROMX_BASE] + addr])
    base = mbc[env, REG_RAM_BASE]
    if base >= 0 and spec.ram_banks > 0:   # (a zeroed register row must not reach past 1-byte RAM)
        return int(cart_ram[env, base + (addr & 0x1FFF)])
    if base == RAM_RTC:
        # RTC registers read their latched copy (selected register $08-$0C).
        return mbc[env, REG_RTC_LATCHED + mbc[env, REG_RAM_SELECT] - 8]
    if base == RAM_MBC2:
        # 512 nibbles indexed by address bits 0-8 (15 echoes up to $BFFF); upper nibble undriven.
        return int(cart_ram[env, addr & 0x1FF]) | 0xF0
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
    enabled = mbc[env, REG_RAM_ENABLE]
    mapped_rtc = int(0)
    if spec.kind == MBC1:
        lo = mbc[env, REG_BANK_LO]
        hi = mbc[env, REG_BANK_HI]
        if spec.variant == 1:   # MBC1M
            # MBC1M: BANK2 on ROM address lines 18-19, BANK1 bit 4 unconnected; no RAM banking.
            rom_bank = (hi << 4) | (lo & 0x0F)
            if mbc[env, REG_MODE] == 1:
                rom0_bank = hi << 4
        else:
            rom_bank = (hi << 5) | lo
            if mbc[env, REG_MODE] == 1:
                rom0_bank = hi << 5
                ram_bank = hi
    elif spec.kind == MBC2:
        rom_bank = mbc[env, REG_BANK_LO]
    elif spec.kind == MBC3:
        rom_bank = mbc[env, REG_BANK_LO]
        sel = mbc[env, REG_RAM_SELECT]
        if sel >= 8:
            if spec.variant == 1 and sel <= 12:   # the RTC is there
                mapped_rtc = 1
            else:
                enabled = 0
        else:
            ram_bank = sel
    elif spec.kind == MBC5:
        rom_bank = (mbc[env, REG_BANK_HI] << 8) | mbc[env, REG_BANK_LO]
        ram_bank = mbc[env, REG_RAM_SELECT]
    else:
        enabled = 1
    rom_bank = rom_bank % spec.rom_banks
    rom0_bank = rom0_bank % spec.rom_banks
    mbc[env, REG_ROM0_BASE] = rom0_bank * 0x4000
    mbc[env, REG_ROMX_BASE] = rom_bank * 0x4000 - 0x4000
    if enabled == 0:
        mbc[env, REG_RAM_BASE] = RAM_UNMAPPED
    elif mapped_rtc == 1:
        mbc[env, REG_RAM_BASE] = RAM_RTC
    elif spec.kind == MBC2:
        mbc[env, REG_RAM_BASE] = RAM_MBC2
    elif spec.ram_banks > 0:
        mbc[env, REG_RAM_BASE] = (ram_bank % spec.ram_banks) * 0x2000
    else:
        mbc[env, REG_RAM_BASE] = RAM_UNMAPPED


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
    t_last = (wp.int64(mbc[env, REG_RTC_T_HI]) << wp.int64(31)) | wp.int64(mbc[env, REG_RTC_T_LO])
    elapsed = t_now - t_last
    if elapsed < wp.int64(0):
        elapsed = wp.int64(0)
    mbc[env, REG_RTC_T_LO] = int(t_now & wp.int64(0x7FFFFFFF))
    mbc[env, REG_RTC_T_HI] = int(t_now >> wp.int64(31))
    dh = mbc[env, REG_RTC_DH]
    if (dh & 0x40) != 0:
        return      # halted: time passes without the clock
    total = wp.int64(mbc[env, REG_RTC_SUBSEC]) + elapsed
    per_second = wp.int64(RTC_T_CYCLES_PER_SECOND)
    secs64 = total / per_second
    mbc[env, REG_RTC_SUBSEC] = int(total - secs64 * per_second)
    if secs64 == wp.int64(0):
        return
    # Split whole seconds into days and a remainder so int32 math cannot overflow.
    days_bulk = int(secs64 / wp.int64(86400))
    secs = int(secs64 - wp.int64(days_bulk) * wp.int64(86400))
    r = _rtc_field_add(mbc[env, REG_RTC_S], secs, 60, 64)
    mbc[env, REG_RTC_S] = r[0]
    r = _rtc_field_add(mbc[env, REG_RTC_M], r[1], 60, 64)
    mbc[env, REG_RTC_M] = r[0]
    r = _rtc_field_add(mbc[env, REG_RTC_H], r[1], 24, 32)
    mbc[env, REG_RTC_H] = r[0]
    days = (mbc[env, REG_RTC_DL] | ((dh & 1) << 8)) + r[1] + (days_bulk % 512)
    carry = dh & 0x80
    if days >= 512 or days_bulk >= 512:
        carry = 0x80
    days = days % 512
    mbc[env, REG_RTC_DL] = days & 0xFF
    mbc[env, REG_RTC_DH] = carry | (dh & 0x40) | (days >> 8)


@wp.func
def cart_write(rom: wp.array(dtype=wp.uint8), cart_ram: wp.array2d(dtype=wp.uint8),
               mbc: wp.array2d(dtype=wp.int32), spec: CartSpec, env: int, addr: int,
               value: int, t_now: wp.int64):
    """CPU write of `value` to `addr` in $0000-$7FFF (MBC registers) or $A000-$BFFF (RAM/RTC)."""
    value = value & 0xFF
    if addr >= 0xA000:
        base = mbc[env, REG_RAM_BASE]
        if base >= 0 and spec.ram_banks > 0:
            cart_ram[env, base + (addr & 0x1FFF)] = wp.uint8(value)
        elif base == RAM_MBC2:
            cart_ram[env, addr & 0x1FF] = wp.uint8(value & 0x0F)   # 4-bit cells
        elif base == RAM_RTC:
            _rtc_sync(mbc, env, t_now)
            sel = mbc[env, REG_RAM_SELECT]
            masked = value
            if sel == 8:
                masked = value & 0x3F
                mbc[env, REG_RTC_SUBSEC] = 0           # writing seconds restarts the second
            elif sel == 9:
                masked = value & 0x3F
            elif sel == 10:
                masked = value & 0x1F
            elif sel == 12:
                masked = value & 0xC1
            mbc[env, REG_RTC_S + sel - 8] = masked
            mbc[env, REG_RTC_LATCHED + sel - 8] = masked   # reads before the next latch see the new value
        return
    if spec.kind == MBC_NONE:
        return
    if spec.kind == MBC2:
        # One register pair across $0000-$3FFF, picked by address bit 8; $4000-$7FFF is nothing.
        if addr < 0x4000:
            if (addr & 0x100) == 0:
                enable = int(0)
                if (value & 0x0F) == 0x0A:
                    enable = 1
                mbc[env, REG_RAM_ENABLE] = enable
            else:
                bank = value & 0x0F
                if bank == 0:
                    bank = 1
                mbc[env, REG_BANK_LO] = bank
            _mbc_remap(mbc, spec, env)
        return
    region = addr >> 13          # 0: $0000-$1FFF, 1: $2000-$3FFF, 2: $4000-$5FFF, 3: $6000-$7FFF
    if region == 0:
        enable = int(0)
        if spec.kind == MBC5:
            if value == 0x0A:
                enable = 1
        elif (value & 0x0F) == 0x0A:
            enable = 1
        mbc[env, REG_RAM_ENABLE] = enable
    elif region == 1:
        if spec.kind == MBC1:
            lo = value & 0x1F
            if lo == 0:
                lo = 1
            mbc[env, REG_BANK_LO] = lo
        elif spec.kind == MBC3:
            lo = value & 0x7F
            if lo == 0:
                lo = 1
            mbc[env, REG_BANK_LO] = lo
        else:
            if addr < 0x3000:
                mbc[env, REG_BANK_LO] = value
            else:
                mbc[env, REG_BANK_HI] = value & 1
    elif region == 2:
        if spec.kind == MBC1:
            mbc[env, REG_BANK_HI] = value & 3
        else:
            mbc[env, REG_RAM_SELECT] = value & 0x0F    # MBC3: RAM bank or RTC register; MBC5: RAM bank
    elif region == 3:
        if spec.kind == MBC1:
            mbc[env, REG_MODE] = value & 1
        elif spec.kind == MBC3:
            if mbc[env, REG_LATCH_LAST] == 0 and value == 1 and spec.variant == 1:   # RTC latch
                _rtc_sync(mbc, env, t_now)
                for i in range(5):
                    mbc[env, REG_RTC_LATCHED + i] = mbc[env, REG_RTC_S + i]
            mbc[env, REG_LATCH_LAST] = value
    _mbc_remap(mbc, spec, env)


@wp.kernel(enable_backward=False)
def _replay_writes(rom: wp.array(dtype=wp.uint8), cart_ram: wp.array2d(dtype=wp.uint8),
                   mbc: wp.array2d(dtype=wp.int32), spec: CartSpec,
                   writes: wp.array2d(dtype=wp.int32), t_now: wp.int64):
    for k in range(writes.shape[0]):
        cart_write(rom, cart_ram, mbc, spec, 0, writes[k, 0], writes[k, 1], t_now)


def mbc_regs_after_writes(spec: CartSpec, writes, t_now: int = 0) -> np.ndarray:
    """Register row after power-on and the CPU writes [(addr, value), ...] to $0000-$7FFF.

    For importing other emulators' save states: express their MBC state as the
    register writes that produce it (e.g. MBC1 ROM bank 5, RAM on: [(0x0000, 0x0A),
    (0x2000, 5)]) and get a row consistent with cart_write by construction.
    """
    rows = np.asarray(list(writes), dtype=np.int32).reshape(-1, 2)
    if rows.size and (rows[:, 0].min() < 0 or rows[:, 0].max() > 0x7FFF):
        raise ValueError(f"writes: expected MBC register addresses in $0000-$7FFF, got {rows[:, 0].tolist()}")
    mbc = wp.array(mbc_power_on_regs(spec)[None, :], dtype=wp.int32, device="cpu")
    rom = wp.zeros(1, dtype=wp.uint8, device="cpu")
    ram = wp.zeros((1, 1), dtype=wp.uint8, device="cpu")
    wp.launch(_replay_writes, dim=1, device="cpu",
              inputs=[rom, ram, mbc, spec, wp.array(rows, dtype=wp.int32, device="cpu"), wp.int64(t_now)])
    return mbc.numpy()[0]
