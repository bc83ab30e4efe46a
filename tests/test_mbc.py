"""MBC behaviour through the Warp functions cart_read / cart_write (CPU device).

A small test kernel replays a list of (op, addr, value, t) per env; each ROM
bank is filled with its own bank number (byte 1 of each bank holds the high
byte) so a read says which bank is mapped.
"""
from __future__ import annotations

import numpy as np
import pytest
import warp as wp

from gbx_lightning.emu import mbc as M
from gbx_lightning.emu.mbc import CartSpec, MBC_REGS, cart_read, cart_write, make_cart_spec, mbc_power_on_regs

wp.config.quiet = True
SEC = M.RTC_T_CYCLES_PER_SECOND
READ, WRITE = 0, 1


@wp.kernel(enable_backward=False)
def _replay(rom: wp.array(dtype=wp.uint8), cart_ram: wp.array2d(dtype=wp.uint8),
            mbc: wp.array2d(dtype=wp.int32), spec: CartSpec, ops: wp.array3d(dtype=wp.int64),
            out: wp.array2d(dtype=wp.int32)):
    env = wp.tid()
    for k in range(ops.shape[1]):
        op = int(ops[env, k, 0])
        addr = int(ops[env, k, 1])
        value = int(ops[env, k, 2])
        t = ops[env, k, 3]
        if op == 0:
            out[env, k] = cart_read(rom, cart_ram, mbc, spec, env, addr, t)
        elif op == 1:
            cart_write(rom, cart_ram, mbc, spec, env, addr, value, t)
            out[env, k] = -1


def banked_rom(banks: int) -> np.ndarray:
    rom = np.repeat((np.arange(banks) & 0xFF).astype(np.uint8), 0x4000)
    rom[np.arange(banks) * 0x4000 + 1] = np.arange(banks) >> 8
    return rom


class Cart:
    """Host-side harness: one ROM, `num_envs` envs of MBC state and cart RAM."""

    def __init__(self, kind, rom_banks, ram_banks=0, has_rtc=False, num_envs=1, rom=None,
                 multicart=False):
        self.spec = make_cart_spec(kind, rom_banks, ram_banks, has_rtc, multicart)
        self.rom = wp.array(banked_rom(rom_banks) if rom is None else rom, dtype=wp.uint8)
        ram_bytes = M.MBC2_RAM_BYTES if kind == M.MBC2 else ram_banks * 0x2000
        self.ram = wp.array(np.zeros((num_envs, max(ram_bytes, 1)), np.uint8), dtype=wp.uint8)
        regs = np.tile(mbc_power_on_regs(self.spec), (num_envs, 1))
        self.mbc = wp.array(regs, dtype=wp.int32)
        self.num_envs = num_envs

    def run(self, *per_env_ops):
        """ops: list of tuples ('r', addr[, t]) or ('w', addr, value[, t]); one list per env."""
        if len(per_env_ops) == 1 and self.num_envs > 1:
            per_env_ops = per_env_ops * self.num_envs
        k = max(len(o) for o in per_env_ops)
        arr = np.full((self.num_envs, k, 4), -1, dtype=np.int64)
        for e, ops in enumerate(per_env_ops):
            for i, op in enumerate(ops):
                if op[0] == "r":
                    arr[e, i] = (READ, op[1], 0, op[2] if len(op) > 2 else 0)
                else:
                    arr[e, i] = (WRITE, op[1], op[2], op[3] if len(op) > 3 else 0)
        out = wp.zeros((self.num_envs, k), dtype=wp.int32)
        wp.launch(_replay, dim=self.num_envs,
                  inputs=[self.rom, self.ram, self.mbc, self.spec, wp.array(arr, dtype=wp.int64), out])
        res = out.numpy()
        reads = [[int(res[e, i]) for i, op in enumerate(ops) if op[0] == "r"]
                 for e, ops in enumerate(per_env_ops)]
        return reads[0] if self.num_envs == 1 else reads

    def bank_at(self, addr=0x4000, setup=()):
        lo, hi = self.run([*setup, ("r", addr), ("r", addr + 1)])
        return lo | hi << 8

    def regs(self, env=0):
        return self.mbc.numpy()[env]


# ---------------------------------------------------------------------------- ROM only
def test_rom_only_maps_flat_32k_and_ignores_writes():
    c = Cart(M.MBC_NONE, 2)
    assert c.run([("r", 0x0000), ("w", 0x2000, 5), ("r", 0x4000), ("r", 0x7FFF)]) == [0, 1, 1]
    assert c.run([("r", 0xA000), ("w", 0xA000, 0x12), ("r", 0xA000)]) == [0xFF, 0xFF]


def test_rom_plus_ram_is_always_enabled():
    c = Cart(M.MBC_NONE, 2, ram_banks=1)
    assert c.run([("w", 0xA123, 0x5A), ("r", 0xA123), ("w", 0x0000, 0x00), ("r", 0xA123)]) == [0x5A, 0x5A]


# ---------------------------------------------------------------------------- MBC1
@pytest.mark.parametrize("banks", [64, 128])   # 1 MiB and 2 MiB
def test_mbc1_bank_register_zero_maps_to_one_within_5_bits(banks):
    c = Cart(M.MBC1, banks)
    assert c.bank_at(0x4000) == 1 and c.bank_at(0x0000) == 0
    assert c.bank_at(setup=[("w", 0x2000, 0x00)]) == 1
    assert c.bank_at(setup=[("w", 0x3FFF, 0x1F)]) == 0x1F
    assert c.bank_at(setup=[("w", 0x2000, 0xE5)]) == 5            # only 5 bits
    for hi, expect in ((1, 0x21), (2, 0x41), (3, 0x61)):
        # $20/$40/$60 are unreachable in mode 0: lower 5 bits of 0 read as 1
        got = c.bank_at(setup=[("w", 0x4000, hi), ("w", 0x2000, 0x00)])
        assert got == expect % banks, (hi, got)
    assert c.bank_at(setup=[("w", 0x4000, 2), ("w", 0x2000, 0x03)]) == 0x43 % banks


def test_mbc1_mode1_banks_the_low_area_on_2mib():
    c = Cart(M.MBC1, 128)
    assert c.bank_at(0x0000, setup=[("w", 0x4000, 2)]) == 0            # mode 0: $0000 is bank 0
    assert c.bank_at(0x0000, setup=[("w", 0x6000, 1)]) == 0x40          # mode 1: bank $40
    assert c.bank_at(0x4000) == 0x41
    assert c.bank_at(0x0000, setup=[("w", 0x4000, 3)]) == 0x60
    assert c.bank_at(0x0000, setup=[("w", 0x6000, 0)]) == 0
    assert c.bank_at(0x4000) == 0x61                                    # upper bits stay on $4000


def test_mbc1_mode1_on_1mib_masks_to_bank_count():
    c = Cart(M.MBC1, 64)
    assert c.bank_at(0x0000, setup=[("w", 0x6000, 1), ("w", 0x4000, 2)]) == 0x40 % 64 == 0
    assert c.bank_at(0x0000, setup=[("w", 0x4000, 1)]) == 0x20
    assert c.bank_at(0x4000, setup=[("w", 0x2000, 0x07)]) == 0x27


def test_mbc1_small_rom_masks_bank_number():
    c = Cart(M.MBC1, 16)                    # 256 KiB
    assert c.bank_at(setup=[("w", 0x2000, 0x11)]) == 1
    assert c.bank_at(setup=[("w", 0x2000, 0x1F)]) == 15


def test_mbc1_ram_enable_and_disable():
    c = Cart(M.MBC1, 4, ram_banks=1)
    assert c.run([("w", 0xA000, 0x11), ("r", 0xA000)]) == [0xFF]      # disabled at power-on
    assert c.run([("w", 0x0000, 0x0A), ("w", 0xA000, 0x11), ("r", 0xA000), ("r", 0xBFFF)]) == [0x11, 0x00]
    assert c.run([("w", 0x1FFF, 0x00), ("r", 0xA000)]) == [0xFF]
    assert c.run([("w", 0x0000, 0x1A), ("r", 0xA000)]) == [0x11]         # low nibble $A enables
    assert c.run([("w", 0x0000, 0x0B), ("r", 0xA000)]) == [0xFF]


def test_mbc1_ram_banking_follows_mode():
    c = Cart(M.MBC1, 4, ram_banks=4)
    ops = [("w", 0x0000, 0x0A), ("w", 0x6000, 1)]
    for bank in range(4):
        ops += [("w", 0x4000, bank), ("w", 0xA010, 0x30 + bank)]
    ops += [("w", 0x4000, 2), ("r", 0xA010), ("w", 0x6000, 0), ("r", 0xA010)]
    assert c.run(ops) == [0x32, 0x30]        # mode 0 always uses RAM bank 0
    assert c.ram.numpy()[0, [0x10, 0x2010, 0x4010, 0x6010]].tolist() == [0x30, 0x31, 0x32, 0x33]


def test_envs_are_independent():
    c = Cart(M.MBC1, 32, num_envs=3)
    reads = c.run([("w", 0x2000, 3), ("r", 0x4000)], [("r", 0x4000)], [("w", 0x2000, 9), ("r", 0x4000)])
    assert reads == [[3], [1], [9]]


# ---------------------------------------------------------------------------- MBC1M
# Pan Docs, MBC1, "MBC1M 1 MiB Multi-Game Compilation Carts": BANK2 drives ROM bank bits 4-5,
# only BANK1's low 4 bits are wired (its 0 -> 1 rule still sees all 5), and mode 1 maps
# bank BANK2 << 4 at $0000-$3FFF.
def test_mbc1m_bank2_drives_bits_4_and_5():
    c = Cart(M.MBC1, 64, multicart=True)
    assert c.bank_at(0x4000) == 1 and c.bank_at(0x0000) == 0
    assert c.bank_at(setup=[("w", 0x4000, 1), ("w", 0x2000, 2)]) == 0x12
    assert c.bank_at(setup=[("w", 0x2000, 0x00)]) == 0x11           # 0 -> 1 before the wiring
    assert c.bank_at(setup=[("w", 0x2000, 0x10)]) == 0x10           # bit 4 unwired, no 0 -> 1
    assert c.bank_at(setup=[("w", 0x2000, 0x1F)]) == 0x1F
    assert c.bank_at(setup=[("w", 0x4000, 3), ("w", 0x2000, 0xE5)]) == 0x35
    assert c.bank_at(0x0000) == 0                                   # mode 0: $0000 is bank 0


def test_mbc1m_mode1_maps_each_sub_rom_at_0000():
    c = Cart(M.MBC1, 64, multicart=True)
    for game in range(4):
        setup = [("w", 0x6000, 1), ("w", 0x4000, game), ("w", 0x2000, 3)]
        assert c.bank_at(0x0000, setup=setup) == game << 4
        assert c.bank_at(0x4000) == (game << 4) | 3
    assert c.bank_at(0x0000, setup=[("w", 0x6000, 0)]) == 0
    assert c.bank_at(0x4000) == 0x33                                # bank 2 bits stay on $4000


def test_mbc1m_every_register_combination():
    combos = [(hi, lo, mode) for hi in range(4) for lo in range(256) for mode in (0, 1)]
    c = Cart(M.MBC1, 64, num_envs=len(combos), multicart=True)
    got = c.run(*[[("w", 0x4000, hi), ("w", 0x2000, lo), ("w", 0x6000, mode),
                   ("r", 0x4000), ("r", 0x0000)] for hi, lo, mode in combos])
    for (hi, lo, mode), reads in zip(combos, got):
        five = lo & 0x1F or 1
        assert reads == [(hi << 4) | (five & 0xF), (hi << 4) if mode else 0], (hi, lo, mode)


# ---------------------------------------------------------------------------- MBC2
# Pan Docs, MBC2: address bit 8 picks the register in $0000-$3FFF (clear: RAM enable, $A in
# the low nibble; set: 4-bit ROM bank, 0 -> 1); 512 x 4-bit RAM at $A000-$A1FF, echoed to $BFFF.
def test_mbc2_rom_bank_register_is_any_address_with_bit_8_set():
    c = Cart(M.MBC2, 16)
    assert c.bank_at(0x4000) == 1 and c.bank_at(0x0000) == 0
    for addr, value, bank in ((0x2100, 5, 5), (0x0100, 7, 7), (0x3FFF, 0x0F, 15), (0x21FF, 0xF3, 3),
                              (0x2100, 0x00, 1), (0x2100, 0x10, 1)):
        assert c.bank_at(setup=[("w", addr, value)]) == bank, (hex(addr), value)
    for addr in (0x2000, 0x20FF, 0x3E00, 0x4000, 0x4100, 0x6100, 0x7FFF):    # bit 8 clear, or past $3FFF
        assert c.bank_at(setup=[("w", 0x2100, 6), ("w", addr, 9)]) == 6, hex(addr)


def test_mbc2_bank_masked_to_rom_size():
    c = Cart(M.MBC2, 8)                       # 128 KiB: 3 bank bits wired
    assert c.bank_at(setup=[("w", 0x2100, 9)]) == 1
    assert c.bank_at(setup=[("w", 0x2100, 8)]) == 0    # 4-bit value 8 is not 0: no 0 -> 1


def test_mbc2_ram_enable_is_any_address_with_bit_8_clear():
    c = Cart(M.MBC2, 4)
    assert c.run([("w", 0xA000, 0x05), ("r", 0xA000)]) == [0xFF]          # disabled at power-on
    for addr in (0x0000, 0x00FF, 0x1E00, 0x2000, 0x3EFF):
        assert c.run([("w", 0x0000, 0x00), ("w", addr, 0x0A), ("r", 0xA000)]) != [0xFF], hex(addr)
    assert c.run([("w", 0x0000, 0x00), ("w", 0x0100, 0x0A), ("r", 0xA000)]) == [0xFF]   # bit 8 set
    assert c.run([("w", 0x0000, 0x5A), ("r", 0xA000)]) != [0xFF]            # low nibble $A enables
    assert c.run([("w", 0x0000, 0x0B), ("r", 0xA000)]) == [0xFF]
    assert c.run([("w", 0xA000, 0x03), ("w", 0x0000, 0x0A), ("r", 0xA000)]) == [0xF0]   # write ignored


def test_mbc2_ram_is_512_nibbles_echoed_through_bfff():
    c = Cart(M.MBC2, 4, num_envs=2)
    reads = c.run([("w", 0x0000, 0x0A), ("w", 0xA000, 0x5A), ("w", 0xA1FF, 0xC3), ("w", 0xA123, 0x07),
                   ("r", 0xA000), ("r", 0xA1FF), ("r", 0xA200), ("r", 0xBE00), ("r", 0xBFFF),
                   ("r", 0xB323), ("w", 0xBDFF, 0x0E), ("r", 0xA1FF)],
                  [("w", 0x0000, 0x0A), ("r", 0xA000)])
    assert reads == [[0xFA, 0xF3, 0xFA, 0xFA, 0xF3, 0xF7, 0xFE], [0xF0]]
    assert c.ram.shape == (2, 512)
    assert c.ram.numpy()[0, [0x000, 0x123, 0x1FF]].tolist() == [0x0A, 0x07, 0x0E]   # nibbles stored


# ---------------------------------------------------------------------------- MBC3
def test_mbc3_7bit_rom_bank_and_ram_banks():
    c = Cart(M.MBC3, 128, ram_banks=4)
    assert c.bank_at(setup=[("w", 0x2000, 0x00)]) == 1
    assert c.bank_at(setup=[("w", 0x2000, 0x20)]) == 0x20              # MBC3 reaches $20/$40/$60
    assert c.bank_at(setup=[("w", 0x2000, 0xFF)]) == 0x7F
    ops = [("w", 0x0000, 0x0A)]
    for bank in range(4):
        ops += [("w", 0x4000, bank), ("w", 0xB000, 0xC0 | bank)]
    for bank in (3, 0, 2):
        ops += [("w", 0x4000, bank), ("r", 0xB000)]
    assert c.run(ops) == [0xC3, 0xC0, 0xC2]


def rtc_cart():
    c = Cart(M.MBC3, 4, ram_banks=1, has_rtc=True)
    c.run([("w", 0x0000, 0x0A)])
    return c


def rtc_set(s, m, h, days, dh_flags=0, t=0):
    """Ops that write the five RTC registers at emulated time t."""
    vals = [s, m, h, days & 0xFF, dh_flags | (days >> 8)]
    ops = []
    for i, v in enumerate(vals):
        ops += [("w", 0x4000, 0x08 + i, t), ("w", 0xA000, v, t)]
    return ops


def rtc_latch_read(t):
    ops = [("w", 0x6000, 0, t), ("w", 0x6000, 1, t)]
    for i in range(5):
        ops += [("w", 0x4000, 0x08 + i, t), ("r", 0xA000, t)]
    return ops


def test_rtc_set_advance_latch_with_all_carries():
    c = rtc_cart()
    t0 = 1000
    reads = c.run(rtc_set(50, 59, 23, 511, t=t0) + rtc_latch_read(t0 + 15 * SEC))
    # 23:59:50 on day 511 + 15 s -> 00:00:05 on day 0 with the day-carry bit set
    assert reads == [5, 0, 0, 0, 0x80]


def test_rtc_counts_only_whole_seconds_and_keeps_the_fraction():
    c = rtc_cart()
    reads = c.run(rtc_set(0, 0, 0, 0) + rtc_latch_read(SEC - 1) + rtc_latch_read(SEC)
                  + rtc_latch_read(SEC + SEC // 2) + rtc_latch_read(2 * SEC))
    assert [reads[i] for i in (0, 5, 10, 15)] == [0, 1, 1, 2]


def test_rtc_long_run_and_day_counter():
    c = rtc_cart()
    n = 1_000_000        # 11 days, 13:46:40
    reads = c.run(rtc_set(0, 0, 0, 0) + rtc_latch_read(n * SEC))
    assert reads == [40, 46, 13, 11, 0]
    c = rtc_cart()
    reads = c.run(rtc_set(0, 0, 0, 255) + rtc_latch_read(86400 * SEC))   # day 255 -> 256: bit 8 in DH
    assert reads == [0, 0, 0, 0, 0x01]


def test_rtc_halt_stops_the_clock_and_carry_is_sticky():
    c = rtc_cart()
    reads = c.run(rtc_set(10, 0, 0, 0, dh_flags=0x40) + rtc_latch_read(100 * SEC))
    assert reads == [10, 0, 0, 0, 0x40]                     # halted: no time passed
    reads = c.run([("w", 0x4000, 0x0C, 100 * SEC), ("w", 0xA000, 0x00, 100 * SEC)]
                  + rtc_latch_read(103 * SEC))
    assert reads[0] == 13                                   # running again from t=100 s
    c = rtc_cart()
    reads = c.run(rtc_set(59, 59, 23, 511) + rtc_latch_read(SEC) + rtc_latch_read(2 * SEC))
    assert reads[4] == 0x80 and reads[9] == 0x80 and reads[5] == 1   # carry stays until written


def test_rtc_latch_freezes_reads_until_next_latch():
    c = rtc_cart()
    c.run(rtc_set(0, 0, 0, 0) + rtc_latch_read(5 * SEC))
    # Time moves on, but without a new $00->$01 latch the register reads the old value.
    reads = c.run([("w", 0x4000, 0x08), ("r", 0xA000, 30 * SEC), ("w", 0x6000, 1, 30 * SEC),
                   ("r", 0xA000, 30 * SEC)])
    assert reads == [5, 5]                                  # writing 1 after 1 does not latch
    reads = c.run(rtc_latch_read(30 * SEC))
    assert reads[0] == 30


def test_rtc_out_of_range_seconds_wrap_without_carry():
    c = rtc_cart()
    reads = c.run(rtc_set(62, 5, 0, 0) + rtc_latch_read(3 * SEC))
    assert reads[:2] == [1, 5]                              # 62, 63, 0, 1: minutes untouched


def test_rtc_registers_need_enable_and_ram_still_works():
    c = Cart(M.MBC3, 4, ram_banks=1, has_rtc=True)
    assert c.run([("w", 0x4000, 0x08), ("r", 0xA000)]) == [0xFF]       # not enabled
    reads = c.run([("w", 0x0000, 0x0A), ("w", 0x4000, 0x00), ("w", 0xA000, 0x77), ("r", 0xA000),
                   ("w", 0x4000, 0x08), ("w", 0xA000, 33), ("r", 0xA000), ("w", 0x4000, 0x00),
                   ("r", 0xA000), ("w", 0x4000, 0x0D), ("r", 0xA000)])
    assert reads == [0x77, 33, 0x77, 0xFF]


def test_mbc3_without_timer_has_no_rtc_registers():
    c = Cart(M.MBC3, 4, ram_banks=1, has_rtc=False)
    assert c.run([("w", 0x0000, 0x0A), ("w", 0x4000, 0x08), ("r", 0xA000)]) == [0xFF]


# ---------------------------------------------------------------------------- MBC5
def test_mbc5_bank_zero_and_nine_bit_banks():
    c = Cart(M.MBC5, 512)                   # 8 MiB
    assert c.bank_at() == 1
    assert c.bank_at(setup=[("w", 0x2000, 0x00)]) == 0                 # bank 0 really is bank 0
    assert c.bank_at(setup=[("w", 0x2000, 0x2C), ("w", 0x3000, 0x01)]) == 0x12C
    assert c.bank_at(setup=[("w", 0x2FFF, 0xFF)]) == 0x1FF
    assert c.bank_at(setup=[("w", 0x3000, 0x00)]) == 0xFF
    assert c.bank_at(0x0000) == 0


def test_mbc5_masks_to_rom_size_and_banks_16_ram_banks():
    c = Cart(M.MBC5, 256, ram_banks=16)     # 4 MiB ROM, 128 KiB RAM
    assert c.bank_at(setup=[("w", 0x2000, 0x05), ("w", 0x3000, 0x01)]) == 5
    ops = [("w", 0x0000, 0x0A)]
    for bank in range(16):
        ops += [("w", 0x4000, bank), ("w", 0xA000, bank * 3)]
    ops += [("w", 0x4000, 13), ("r", 0xA000), ("w", 0x0000, 0x1A), ("r", 0xA000)]
    assert c.run(ops) == [39, 0xFF]          # MBC5 enables RAM only on exactly $0A


def test_power_on_regs_layout():
    spec = make_cart_spec(M.MBC1, 4, 1)
    regs = mbc_power_on_regs(spec)
    assert regs.dtype == np.int32 and regs.shape == (MBC_REGS,)
    assert regs[M.REG_RAM_BASE] == M.RAM_UNMAPPED and regs[M.REG_BANK_LO] == 1
    with pytest.raises(ValueError, match="rom_banks: expected a power of two"):
        make_cart_spec(M.MBC1, 6, 0)
    with pytest.raises(ValueError, match="kind: expected one of"):
        make_cart_spec(4, 4, 0)          # there is no MBC4
    with pytest.raises(ValueError, match="MBC2: expected at most 16 ROM banks"):
        make_cart_spec(M.MBC2, 32, 0)
    with pytest.raises(ValueError, match="multicart: MBC1M is an MBC1 with 64 ROM banks"):
        make_cart_spec(M.MBC1, 128, 0, multicart=True)


@pytest.mark.parametrize("banks", [4, 32, 64, 128])
def test_mbc1_every_register_combination(banks):
    """All 2-bit x 8-bit x mode settings against the Pan Docs rule (also checked on PyBoy
    in test_mbc_rom.py): $4000 = (BANK2<<5 | (BANK1&31 or 1)) mod banks; $0000 = BANK2<<5 in mode 1."""
    combos = [(hi, lo, mode) for hi in range(4) for lo in range(256) for mode in (0, 1)]
    c = Cart(M.MBC1, banks, num_envs=len(combos))
    per_env = [[("w", 0x4000, hi), ("w", 0x2000, lo), ("w", 0x6000, mode),
                ("r", 0x4000), ("r", 0x0000)] for hi, lo, mode in combos]
    got = c.run(*per_env)
    for (hi, lo, mode), reads in zip(combos, got):
        romx = ((hi << 5) | (lo & 0x1F or 1)) % banks
        rom0 = ((hi << 5) % banks) if mode else 0
        assert reads == [romx & 0xFF, rom0 & 0xFF], (hi, lo, mode)


def test_make_cart_arrays_from_a_loaded_cartridge():
    from gbx_lightning.emu.cartridge import load_cartridge
    from gbx_lightning.roms.asm import assemble
    cart = load_cartridge(assemble("cart_type $13\nram_size 3\nbank 3\ndb $33\n"))
    spec, rom, ram, regs = M.make_cart_arrays(cart, 4, device="cpu")
    assert (spec.kind, spec.rom_banks, spec.ram_banks) == (M.MBC3, 4, 4)
    assert rom.shape == (0x10000,) and ram.shape == (4, 32768) and regs.shape == (4, MBC_REGS)
    c = Cart(M.MBC3, 4, 4, num_envs=4)
    c.spec, c.rom, c.ram, c.mbc = spec, rom, ram, regs
    assert c.run([("w", 0x2000, 3), ("r", 0x4000)]) == [[0x33]] * 4
    with pytest.raises(ValueError, match="num_envs: expected a positive int, got 0"):
        M.make_cart_arrays(cart, 0)


def test_regs_after_writes_match_the_kernel_and_guard_zeroed_rows():
    c = Cart(M.MBC1, 64, ram_banks=4)
    writes = [(0x0000, 0x0A), (0x2000, 0x05), (0x4000, 0x01), (0x6000, 0x01)]
    c.run([("w", a, v) for a, v in writes])
    regs = M.mbc_regs_after_writes(c.spec, writes)
    assert regs.tolist() == c.regs().tolist()
    assert regs[M.REG_ROMX_BASE] + 0x4000 == 0x25 * 0x4000 and regs[M.REG_ROM0_BASE] == 0x20 * 0x4000
    with pytest.raises(ValueError, match=r"addresses in \$0000-\$7FFF"):
        M.mbc_regs_after_writes(c.spec, [(0xA000, 1)])
    # A zeroed register row (RAM_BASE 0) on a cart without RAM still reads $FF, never out of bounds.
    c = Cart(M.MBC1, 4)
    c.mbc = wp.zeros((1, MBC_REGS), dtype=wp.int32)
    assert c.run([("w", 0xB000, 1), ("r", 0xB000), ("r", 0x4000)]) == [0xFF, 1]
