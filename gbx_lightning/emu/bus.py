"""The CPU's address space: every access is timed (t = start of its M-cycle, T-cycles).

Map (DMG): 0000-7FFF cartridge ROM (boot ROM over 0000-00FF until $FF50 is written),
8000-9FFF VRAM, A000-BFFF cartridge RAM/RTC, C000-DFFF WRAM, E000-FDFF echo of WRAM,
FE00-FE9F OAM, FEA0-FEFF unusable (reads $00, writes ignored), FF00-FF7F I/O,
FF80-FFFE HRAM, FFFF IE. In flat mode (SM83 conformance cases) the whole space is one
64 KiB RAM with no side effects.
"""
import warp as wp

from .dma import dma_blocks, dma_write
from .interrupts import raise_if
from .joypad import joypad_update, p1_read
from .ppu import (lcdc_write, ly_read, ly_visible, ppu_reg_write, ppu_sync, stat_read,
                  stat_value)
from .serial import sc_write, serial_sync
from .state import (T_BOOT_MAPPED, CartSpec, T_DMA_END, T_NEXT_EVENT, T_PPU_EVENT, T_SERIAL_END, T_TIMER_EVENT,
                    Machine, cart_read, cart_write)
from .timer import (div_write, system_counter, tac_write, tima_write, timer_sync, tma_write)


@wp.func
def reschedule(m: Machine, env: int):
    """r64[T_NEXT_EVENT] = earliest peripheral event (the run loop stops there)."""
    ev = m.r64[env, T_TIMER_EVENT]
    ev = wp.min(ev, m.r64[env, T_PPU_EVENT])
    ev = wp.min(ev, m.r64[env, T_SERIAL_END])
    m.r64[env, T_NEXT_EVENT] = ev


@wp.func(inline=False)
def events_sync(m: Machine, env: int, now: wp.int64):
    """Catch every peripheral up to `now` (raising any IF bits due by then)."""
    timer_sync(m, env, now)
    ppu_sync(m, env, now)
    serial_sync(m, env, now)
    reschedule(m, env)


@wp.func(inline=False)
def io_read(m: Machine, env: int, reg: int, t: wp.int64) -> int:
    v = 0xFF
    if reg == 0x00:
        v = p1_read(m, env)
    elif reg == 0x04:
        v = system_counter(m, env, t) >> 8
    elif reg == 0x05:
        timer_sync(m, env, t)
        reschedule(m, env)
        v = int(m.io[env, 5])
    elif reg == 0x0F:
        events_sync(m, env, t)
        v = int(m.io[env, 0x0F]) | 0xE0
    elif reg == 0x01 or reg == 0x02:
        serial_sync(m, env, t)
        reschedule(m, env)
        v = int(m.io[env, reg]) | int(m.io_rmask[reg])
    elif reg == 0x41:
        v = stat_read(m, env, t)
        reschedule(m, env)
    elif reg == 0x44:
        v = ly_read(m, env, t)
        reschedule(m, env)
    else:
        v = int(m.io[env, reg]) | int(m.io_rmask[reg])
    return v


@wp.func(inline=False)
def io_write(m: Machine, env: int, reg: int, value: int, t: wp.int64):
    if reg == 0x00:
        m.io[env, 0] = wp.uint8((value & 0x30) | 0xC0)
        joypad_update(m, env)
    elif reg == 0x01:
        serial_sync(m, env, t)
        m.io[env, 1] = wp.uint8(value)
    elif reg == 0x02:
        sc_write(m, env, value, t)
    elif reg == 0x04:
        div_write(m, env, t)
    elif reg == 0x05:
        tima_write(m, env, value, t)
    elif reg == 0x06:
        tma_write(m, env, value, t)
    elif reg == 0x07:
        tac_write(m, env, value, t)
    elif reg == 0x0F:
        events_sync(m, env, t)
        m.io[env, 0x0F] = wp.uint8(value & 0x1F)
    elif reg == 0x40:
        lcdc_write(m, env, value, t)
    elif reg == 0x46:
        dma_write(m, env, value, t)
    elif reg >= 0x41 and reg <= 0x4B:
        ppu_reg_write(m, env, reg, value, t)
    elif reg == 0x50:
        if value != 0:
            m.r64[env, T_BOOT_MAPPED] = wp.int64(0)
        m.io[env, 0x50] = wp.uint8(value)
    else:
        m.io[env, reg] = wp.uint8(value)
    reschedule(m, env)


@wp.func
def flat_read(m: Machine, env: int, addr: int) -> int:
    """Flat 64 KiB RAM of a conformance case, stored sparsely (only touched addresses)."""
    v = int(0)
    for k in range(m.flat_addr.shape[1]):
        if m.flat_addr[env, k] == addr:
            v = int(m.flat_val[env, k])
    return v


@wp.func
def flat_write(m: Machine, env: int, addr: int, value: int):
    done = int(0)
    for k in range(m.flat_addr.shape[1]):
        if done == 0 and (m.flat_addr[env, k] == addr or m.flat_addr[env, k] < 0):
            m.flat_addr[env, k] = addr
            m.flat_val[env, k] = wp.uint8(value)
            done = 1


@wp.func(inline=True)
def bus_read_fast(rom: wp.array(dtype=wp.uint8), cart_ram: wp.array2d(dtype=wp.uint8),
                  mbc: wp.array2d(dtype=wp.int32), spec: CartSpec,
                  wram: wp.array2d(dtype=wp.uint8), vram: wp.array2d(dtype=wp.uint8),
                  hram: wp.array2d(dtype=wp.uint8), r64: wp.array2d(dtype=wp.int64),
                  flat: int, env: int, addr: int, t: wp.int64) -> int:
    """Hot path (ROM, VRAM, WRAM, HRAM outside OAM DMA) on plain arrays; -1 means "use
    bus_read". Plain array parameters, not the Machine struct: a struct parameter of an
    inlined function that reaches an out-of-line call is copied whole on every call."""
    v = int(-1)
    if flat == 0 and t >= r64[env, T_DMA_END]:
        if addr < 0x8000:
            if addr >= 0x100 or r64[env, T_BOOT_MAPPED] == wp.int64(0):
                v = cart_read(rom, cart_ram, mbc, spec, env, addr, t)
        elif addr < 0xA000:
            v = int(vram[env, addr - 0x8000])
        elif addr >= 0xC000 and addr < 0xE000:
            v = int(wram[env, addr - 0xC000])
        elif addr >= 0xFF80:
            v = int(hram[env, addr - 0xFF80])
    return v


@wp.func(inline=False)
def bus_read(m: Machine, env: int, addr: int, t: wp.int64) -> int:
    v = 0xFF
    if m.flat_mode != 0:
        v = flat_read(m, env, addr)
    elif addr >= 0xFF00:
        if addr >= 0xFF80:
            v = int(m.hram[env, addr - 0xFF80])
        else:
            v = io_read(m, env, addr - 0xFF00, t)
    elif dma_blocks(m, env, t):
        v = 0xFF
    elif addr < 0x8000:
        if addr < 0x100 and m.r64[env, T_BOOT_MAPPED] != wp.int64(0):
            v = int(m.boot[addr])
        else:
            v = cart_read(m.rom, m.cart_ram, m.mbc, m.spec, env, addr, t)
    elif addr < 0xA000:
        v = int(m.vram[env, addr - 0x8000])
    elif addr < 0xC000:
        v = cart_read(m.rom, m.cart_ram, m.mbc, m.spec, env, addr, t)
    elif addr < 0xFE00:
        v = int(m.wram[env, (addr - 0xC000) & 0x1FFF])
    elif addr < 0xFEA0:
        v = int(m.oam[env, addr - 0xFE00])
    else:
        v = 0x00
    return v


@wp.func(inline=True)
def bus_write_fast(wram: wp.array2d(dtype=wp.uint8), vram: wp.array2d(dtype=wp.uint8),
                   hram: wp.array2d(dtype=wp.uint8), r64: wp.array2d(dtype=wp.int64),
                   flat: int, env: int, addr: int, value: int, t: wp.int64) -> int:
    """Hot path writes (VRAM, WRAM, HRAM outside OAM DMA); returns 0 if bus_write must
    handle the access."""
    done = int(0)
    if flat == 0 and t >= r64[env, T_DMA_END]:
        if addr >= 0x8000 and addr < 0xA000:
            vram[env, addr - 0x8000] = wp.uint8(value)
            done = 1
        elif addr >= 0xC000 and addr < 0xE000:
            wram[env, addr - 0xC000] = wp.uint8(value)
            done = 1
        elif addr >= 0xFF80:
            hram[env, addr - 0xFF80] = wp.uint8(value)
            done = 1
    return done


@wp.func(inline=False)
def bus_write(m: Machine, env: int, addr: int, value: int, t: wp.int64):
    if m.flat_mode != 0:
        flat_write(m, env, addr, value)
    elif addr >= 0xFF00:
        if addr >= 0xFF80:
            m.hram[env, addr - 0xFF80] = wp.uint8(value)
        else:
            io_write(m, env, addr - 0xFF00, value, t)
    elif dma_blocks(m, env, t):
        pass
    elif addr < 0x8000:
        cart_write(m.rom, m.cart_ram, m.mbc, m.spec, env, addr, value, t)
    elif addr < 0xA000:
        m.vram[env, addr - 0x8000] = wp.uint8(value)
    elif addr < 0xC000:
        cart_write(m.rom, m.cart_ram, m.mbc, m.spec, env, addr, value, t)
    elif addr < 0xFE00:
        m.wram[env, (addr - 0xC000) & 0x1FFF] = wp.uint8(value)
    elif addr < 0xFEA0:
        m.oam[env, addr - 0xFE00] = wp.uint8(value)


@wp.func
def bus_peek(m: Machine, env: int, addr: int, t: wp.int64) -> int:
    """Side-effect-free read for debuggers/tests (state is synced at the end of each run)."""
    v = 0xFF
    if m.flat_mode != 0:
        v = flat_read(m, env, addr)
    elif addr >= 0xFF80:
        v = int(m.hram[env, addr - 0xFF80])
    elif addr >= 0xFF00:
        reg = addr - 0xFF00
        if reg == 0x00:
            v = p1_read(m, env)
        elif reg == 0x04:
            v = system_counter(m, env, t) >> 8
        elif reg == 0x41:
            v = stat_value(m, env, t)
        elif reg == 0x44:
            v = ly_visible(m, env, t)
        else:
            v = int(m.io[env, reg]) | int(m.io_rmask[reg])
    elif addr < 0x8000:
        if addr < 0x100 and m.r64[env, T_BOOT_MAPPED] != wp.int64(0):
            v = int(m.boot[addr])
        else:
            v = cart_read(m.rom, m.cart_ram, m.mbc, m.spec, env, addr, t)
    elif addr < 0xA000:
        v = int(m.vram[env, addr - 0x8000])
    elif addr < 0xC000:
        v = cart_read(m.rom, m.cart_ram, m.mbc, m.spec, env, addr, t)
    elif addr < 0xFE00:
        v = int(m.wram[env, (addr - 0xC000) & 0x1FFF])
    elif addr < 0xFEA0:
        v = int(m.oam[env, addr - 0xFE00])
    else:
        v = 0x00
    return v
