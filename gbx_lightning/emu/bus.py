"""The CPU's address space: every access is timed (t = start of its M-cycle, T-cycles).

Map (DMG): 0000-7FFF cartridge ROM (boot ROM over 0000-00FF until $FF50 is written),
8000-9FFF VRAM, A000-BFFF cartridge RAM/RTC, C000-DFFF WRAM, E000-FDFF echo of WRAM,
FE00-FE9F OAM, FEA0-FEFF unusable (reads $00, writes ignored), FF00-FF7F I/O,
FF80-FFFE HRAM, FFFF IE. In flat mode (SM83 conformance cases) the whole space is one
64 KiB RAM with no side effects.

Two layers: the instruction loop's accesses (``read8``/``read_data8``/``write8``/
``write_data8``, inlined into the kernel on env rows and locals it caches: ROM via the MBC's
bank bases, WRAM, HRAM, VRAM outside mode 3, the I/O registers games poll) answer the
common accesses; ``bus_read``/``bus_write`` (out of line, through the machine's address)
do everything: I/O registers with lazy catch-up of the timer/PPU/serial, VRAM/OAM with the
PPU's access rules, OAM DMA bus conflicts, MBC writes, the boot ROM overlay, the flat bus.
"""
import warp as wp

from .apu import apu_div_write, apu_read, apu_sync, apu_write
from .dma import dma_blocks, dma_index, dma_source_read, dma_sync, dma_write
from .idle import idle_polled
from .joypad import p1_read, p1_value, p1_write
from .ppu import (LINE_STEP_T, PH_VBLANK_START, READ_PHASE, lcdc_write, line_start_from, ly_at, ly_read,
                  ly_visible, next_vblank_start, oam_accessible, ppu_reg_write, ppu_sync, stat_of, stat_read,
                  stat_value, vram_accessible, vram_free)
from .serial import sb_read, sc_write, serial_sync
from .state import (IO, NEVER, R32, R64, R_HALTED, R_IDLE, R_LY, R_PPU_MODE, T_BOOT_MAPPED, T_DIV_BASE,
                    T_LINE_START, T_NEXT_EVENT, T_PPU_EVENT, T_SERIAL_END, T_TIMER_EVENT, MachinePtr,
                    MachineRef, cart_read, cart_write, io_row, machine, machine_ptr, r32_row)
from .timer import (div_write, system_counter, tac_write, tima_write, timer_sync, tma_write)


@wp.func
def ppu_wake(ms: MachinePtr, env: int) -> wp.int64:
    """When the run loop must next stop for the PPU.

    The PPU is lazy: its events are processed when the CPU can tell — any PPU register
    write, STAT read, VRAM/OAM slow-path access, IF read, IE write or OAM DMA start first
    syncs it to that moment; the kernel's VRAM and STAT fast paths take the stored state
    only before its next event, and LY follows from the stored line start. So
    the loop only has to stop where an interrupt the CPU could take may be requested:
    - STAT (IE bit 1) with the mode 0 or mode 2 source enabled: every PPU event;
    - else the line start before each other possible request: line 144 (IE bit 0, or
      the STAT mode 1 source: both requested 2 T in; the VBlank request itself once line
      144 has started), line LYC (STAT LYC source; line 153 for LYC = 0, whose match
      begins there). From a line start the loop then steps event by event, because the
      wake-up is never earlier than the PPU's next event.
    IF bits whose IE bit is clear may be raised late; nothing reads them before a sync
    (IE&IF masks them; IF reads and IE writes sync). Stale state is fine: lines follow
    each other every 456 T while the LCD is on, so any earlier line start predicts the
    later ones, and a wake-up already past just syncs at once."""
    m = machine(ms)
    ev = m.r64[env, T_PPU_EVENT]
    if (int(m.io[env, 0x40]) & 0x80) != 0:
        ie = int(m.hram[env, 127])
        stat = int(0)
        if (ie & 0x02) != 0:
            stat = int(m.io[env, 0x41]) & 0x78
        if (stat & 0x28) == 0:
            ly = m.r32[env, R_LY]
            ls = m.r64[env, T_LINE_START]
            wake = NEVER
            if (ie & 0x01) != 0:                   # VBlank: requested 2 T into line 144
                if ly == 144 and m.r32[env, R_PPU_MODE] == PH_VBLANK_START:
                    wake = ls + wp.int64(LINE_STEP_T)
                else:
                    wake = next_vblank_start(ls, ly)
            if (stat & 0x10) != 0:                 # STAT mode 1 rises 2 T into line 144
                wake = wp.min(wake, line_start_from(ls, ly, 144))
            if (stat & 0x40) != 0:
                lyc = int(m.io[env, 0x45])
                if lyc <= 153:
                    target = lyc
                    if lyc == 0:
                        target = 153
                    wake = wp.min(wake, line_start_from(ls, ly, target))
            ev = wp.max(ev, wake)
    return ev


@wp.func
def reschedule(ms: MachinePtr, env: int):
    """r64[T_NEXT_EVENT] = earliest peripheral event the run loop must stop at."""
    m = machine(ms)
    ev = m.r64[env, T_TIMER_EVENT]
    ev = wp.min(ev, ppu_wake(ms, env))
    ev = wp.min(ev, m.r64[env, T_SERIAL_END])
    m.r64[env, T_NEXT_EVENT] = ev


@wp.func(inline=False)
def events_sync(ms: MachinePtr, env: int, now: wp.int64):
    """Catch every peripheral whose event is due up to `now` (raising any IF bits due by
    then); the others are already current for what the CPU can observe."""
    m = machine(ms)
    if m.r64[env, T_TIMER_EVENT] <= now:
        timer_sync(ms, env, now)
    if m.r64[env, T_PPU_EVENT] <= now:
        ppu_sync(ms, env, now)
    if m.r64[env, T_SERIAL_END] <= now:
        serial_sync(ms, env, now)
    reschedule(ms, env)


@wp.func(inline=False)
def sleep_until(ms: MachinePtr, env: int, t: wp.int64, t_end: wp.int64, wake_on_irq: int) -> wp.int64:
    """HALT/STOP/locked: run the peripherals event by event from t towards t_end and return
    the time the CPU wakes (the first M-cycle boundary at or after the event after which
    IE&IF != 0, if wake_on_irq), or t_end. One out-of-line call per sleep instead of one
    per event. Each event is processed at its own time (events already due at t too), so
    the request's time is known: if it lies 2 T or more before the boundary the CPU wakes
    at, leaving HALT takes no extra M-cycle and r32[R_HALTED] is set to 2 for the
    scheduler (DMG: mooneye halt_ime1_timing2 - a HALT with IME=1 dispatches a VBlank
    exactly as a run of NOPs would; the STAT mode-0 request with SCX, hblank_ly_scx_timing)."""
    m = machine(ms)
    now = t
    # The CPU's M-cycles start at t + 4k. It sleeps to the boundary at or after t_end, and
    # the events before that boundary are processed here, so that a request made between
    # t_end and the boundary (the VBlank request that ends a frame) still times the wake.
    stop = t + (wp.max(t_end - t, wp.int64(0)) + wp.int64(3)) // wp.int64(4) * wp.int64(4)
    going = int(1)
    while going == 1:
        at = m.r64[env, T_NEXT_EVENT]
        if at >= stop:
            now = wp.max(now, stop)
            going = 0
        else:
            events_sync(ms, env, at)
            boundary = t + (wp.max(at - t, wp.int64(0)) + wp.int64(3)) // wp.int64(4) * wp.int64(4)
            if wake_on_irq != 0 and (int(m.hram[env, 127]) & int(m.io[env, 0x0F]) & 0x1F) != 0:
                going = 0
                now = boundary
                if boundary - at >= wp.int64(2):
                    m.r32[env, R_HALTED] = 2
            else:
                now = wp.max(now, at)
    return now


@wp.func(inline=False)
def div_reset(ms: MachinePtr, env: int, t: wp.int64):
    """The system counter resets (a DIV write, STOP): the timer's and the serial clock's next
    events move, and if DIV bit 4 was set its fall is a DIV-APU event."""
    apu_div_write(ms, env, t)
    div_write(ms, env, t)


@wp.func(inline=False)
def stop_enter(ms: MachinePtr, env: int, t: wp.int64):
    """STOP: the system counter resets (DIV). Out of line: the instruction loop keeps only
    a call."""
    div_reset(ms, env, t)
    events_sync(ms, env, t)


@wp.func(inline=False)
def sync_all(ms: MachinePtr, env: int, now: wp.int64):
    """Bring every peripheral's stored state up to `now` (end of a launch, IF reads), so
    peeks and snapshots see current TIMA/LY/IF. Not the sound unit: nothing it does raises a
    request, and it catches up on every access to it (bus_peek's NR52 included); leaving it
    out keeps the machine kernel's spills as they were (docs/gpu.md, Kernel footprint)."""
    m = machine(ms)
    timer_sync(ms, env, now)
    ppu_sync(ms, env, now)
    serial_sync(ms, env, now)
    dma_sync(ms, env, now)
    reschedule(ms, env)


@wp.func
def _io_load(ms: MachinePtr, env: int, reg: int, t: wp.int64) -> int:
    """io_read's cases; each returns: a value assigned in a chain of branches gets a select
    per level, which on CUDA spilled (docs/gpu.md, Kernel footprint)."""
    m = machine(ms)
    if reg == 0x00:
        return p1_read(ms, env)
    if reg == 0x04:
        return system_counter(ms, env, t) >> 8
    if reg == 0x05:
        timer_sync(ms, env, t)
        return int(m.io[env, 5])
    if reg == 0x0F:
        sync_all(ms, env, t)
        return int(m.io[env, 0x0F]) | 0xE0
    if reg == 0x01:
        return sb_read(ms, env, t)
    if reg == 0x41:
        return stat_read(ms, env, t)
    if reg == 0x44:
        return ly_read(ms, env, t)
    if reg >= 0x10 and reg < 0x40:
        return apu_read(ms, env, reg, t) | int(m.io_rmask[reg])   # (NR52's channels, wave RAM)
    if reg == 0x02:
        serial_sync(ms, env, t)        # (SC's transfer bit, then the stored byte below)
    return int(m.io[env, reg]) | int(m.io_rmask[reg])


@wp.func(inline=False)
def io_read(ms: MachinePtr, env: int, reg: int, t: wp.int64) -> int:
    """An I/O register read, its peripheral brought up to t first where it has one (and the
    next event rescheduled after that catch-up: one reschedule for all of them)."""
    v = _io_load(ms, env, reg, t)
    if reg == 0x01 or reg == 0x02 or reg == 0x05 or reg == 0x41 or reg == 0x44:
        reschedule(ms, env)
    return v


@wp.func
def _io_store(ms: MachinePtr, env: int, reg: int, value: int, t: wp.int64) -> int:
    """io_write's cases, before the reschedule they share; each returns (as in io_read)."""
    m = machine(ms)
    if reg == 0x00:
        return p1_write(io_row(ms, env), r32_row(ms, env), int(m.hram[env, 127]), value)
    if reg == 0x01:
        serial_sync(ms, env, t)
        m.io[env, 1] = wp.uint8(value)
        return 0
    if reg == 0x02:
        sc_write(ms, env, value, t)
        return 1
    if reg == 0x04:
        div_reset(ms, env, t)
        return 1
    if reg == 0x05:
        tima_write(ms, env, value, t)
        return 1
    if reg == 0x06:
        tma_write(ms, env, value, t)
        return 1
    if reg == 0x07:
        tac_write(ms, env, value, t)
        return 1
    if reg == 0x0F:
        sync_all(ms, env, t)
        m.io[env, 0x0F] = wp.uint8(value & 0x1F)
        return 1
    if reg == 0x40:
        lcdc_write(ms, env, value, t)
        return 1
    if reg == 0x46:
        ppu_sync(ms, env, t)       # lines before the copy see the old OAM (lazy PPU)
        dma_write(ms, env, value, t)
        return 1
    if reg >= 0x41 and reg <= 0x4B:
        moved = ppu_reg_write(ms, env, reg, value, t)
        if reg == 0x41 or reg == 0x45 or moved != 0:   # STAT and LYC move the STAT line and
            return 1                                    # ppu_wake; a mode-3 write its end
        return 0
    if reg >= 0x10 and reg < 0x40:
        apu_write(ms, env, reg, value, t)
        return 0
    if reg == 0x50:
        if value != 0:
            m.r64[env, T_BOOT_MAPPED] = wp.int64(0)
        m.io[env, 0x50] = wp.uint8(value)
        return 1
    m.io[env, reg] = wp.uint8(value)
    return 0


@wp.func(inline=False)
def io_write(ms: MachinePtr, env: int, reg: int, value: int, t: wp.int64) -> int:
    """Write an I/O register. Returns 1 if the write can change what the scheduler decided
    (the next event, a pending interrupt, the frame end, the fast paths' DMA window): the
    instruction loop then ends its run. Scroll, palette and window registers, the sound
    registers and SB change none of it (their catch-up to t raises nothing the CPU could
    take before the next event: see read8)."""
    end = _io_store(ms, env, reg, value, t)
    reschedule(ms, env)
    return end


@wp.func
def flat_read(ms: MachinePtr, env: int, addr: int) -> int:
    """Flat 64 KiB RAM of a conformance case, stored sparsely (only touched addresses)."""
    m = machine(ms)
    v = int(0)
    for k in range(m.flat_addr.shape[1]):
        if m.flat_addr[env, k] == addr:
            v = int(m.flat_val[env, k])
    return v


@wp.func
def flat_write(ms: MachinePtr, env: int, addr: int, value: int):
    m = machine(ms)
    done = int(0)
    for k in range(m.flat_addr.shape[1]):
        if done == 0 and (m.flat_addr[env, k] == addr or m.flat_addr[env, k] < 0):
            m.flat_addr[env, k] = addr
            m.flat_val[env, k] = wp.uint8(value)
            done = 1


@wp.func
def dma_conflict(ms: MachinePtr, env: int, addr: int, t: wp.int64) -> int:
    """During OAM DMA (DMG): 1 if the CPU's access at `addr` shares the bus the DMA is reading
    (external bus: ROM, cart RAM, WRAM/echo; or the VRAM bus), 2 for OAM/$FEA0-$FEFF, else 0."""
    m = machine(ms)
    r = int(0)
    if dma_blocks(ms, env, t) and addr < 0xFF00:
        if addr >= 0xFE00:
            r = 2
        else:
            src_vram = (int(m.io[env, 0x46]) & 0xE0) == 0x80
            addr_vram = addr >= 0x8000 and addr < 0xA000
            if src_vram == addr_vram:
                r = 1
    return r


@wp.func_native("""
#if defined(__CUDA_ARCH__)
    return 0;
#else
    return 1;
#endif
""")
def io_first() -> int:
    """1 on the CPU: bus_read and bus_write take HRAM and the I/O registers before they read the
    Machine. There `m = machine(ms)` followed by the R_IDLE store loaded every field of the Machine on
    every call (the store might change them), ~100 x86 instructions before the first test; an I/O
    access needs none of them. 0 on CUDA, where that path is compiled out: on sm_90 it grew the
    machine kernel's frame by 8 B and its spill stores by 4 B (tools/kernel_report.py)."""
    ...


@wp.func(inline=False)
def bus_read(ms: MachinePtr, env: int, addr: int, t: wp.int64) -> int:
    """Every CPU read (the fast path's fallback): I/O registers, OAM/VRAM with the PPU's
    access rules, OAM DMA bus conflicts (the CPU sees the byte the DMA is moving; OAM reads
    $FF), the boot ROM overlay, the flat conformance bus."""
    if io_first() != 0:
        r32_row(ms, env)[R_IDLE] = 0   # (as below)
        if addr >= 0xFF00 and machine(ms).flat_mode == 0:
            if addr >= 0xFF80:
                return int(machine(ms).hram[env, addr - 0xFF80])
            return io_read(ms, env, addr - 0xFF00, t)
    m = machine(ms)
    m.r32[env, R_IDLE] = 0     # (for the idle-loop check, a value whose lifetime it does not know)
    # (each case returns, as in io_read)
    if m.flat_mode != 0:
        return flat_read(ms, env, addr)
    if addr >= 0xFF80:
        return int(m.hram[env, addr - 0xFF80])
    if addr >= 0xFF00:
        return io_read(ms, env, addr - 0xFF00, t)
    conflict = dma_conflict(ms, env, addr, t)
    if conflict == 1:
        return dma_source_read(ms, env, (int(m.io[env, 0x46]) << 8) + dma_index(ms, env, t), t)
    if conflict == 2:
        return 0xFF
    if addr < 0x8000:
        if addr < 0x100 and m.r64[env, T_BOOT_MAPPED] != wp.int64(0):
            return int(m.boot[addr])
        return cart_read(m.rom, m.cart_ram, m.mbc, m.spec, env, addr, t)
    if addr < 0xA000:
        if vram_accessible(ms, env, t, 0):
            return int(m.vram[env, addr - 0x8000])
        return 0xFF
    if addr < 0xC000:
        return cart_read(m.rom, m.cart_ram, m.mbc, m.spec, env, addr, t)
    if addr < 0xFE00:
        return int(m.wram[env, (addr - 0xC000) & 0x1FFF])
    if oam_accessible(ms, env, t, 0):
        if addr < 0xFEA0:
            dma_sync(ms, env, t)
            return int(m.oam[env, addr - 0xFE00])
        return 0x00
    return 0xFF


@wp.func(inline=False)
def bus_write(ms: MachinePtr, env: int, addr: int, value: int, t: wp.int64) -> int:
    """Every CPU write (the fast paths' fallback); writes on the bus an OAM DMA is using, to
    OAM during DMA, and to VRAM/OAM while the PPU holds them, are lost. Returns 1 if the
    instruction loop must end its run (io_write; IE; MBC registers: the ROM bank offsets
    the fetch caches)."""
    if io_first() != 0:
        r32_row(ms, env)[R_IDLE] = 0   # (as below)
        if addr >= 0xFF00 and addr < 0xFFFF and machine(ms).flat_mode == 0:
            if addr >= 0xFF80:
                machine(ms).hram[env, addr - 0xFF80] = wp.uint8(value)
                return 0
            return io_write(ms, env, addr - 0xFF00, value, t)
    m = machine(ms)
    m.r32[env, R_IDLE] = 0     # (the idle-loop check: something was written)
    # (each case returns, as in io_read)
    if m.flat_mode != 0:
        flat_write(ms, env, addr, value)
        return 0
    if addr == 0xFFFF:
        sync_all(ms, env, t)   # IF bits raised late while IE masked them (ppu_wake)
        m.hram[env, 127] = wp.uint8(value)
        reschedule(ms, env)
        return 1
    if addr >= 0xFF80:
        m.hram[env, addr - 0xFF80] = wp.uint8(value)
        return 0
    if addr >= 0xFF00:
        return io_write(ms, env, addr - 0xFF00, value, t)
    if dma_conflict(ms, env, addr, t) != 0:
        return 0
    if addr < 0x8000:
        cart_write(m.rom, m.cart_ram, m.mbc, m.spec, env, addr, value, t)
        return 1               # MBC registers: the ROM bank offsets the fetch caches
    if addr < 0xA000:
        if vram_accessible(ms, env, t, 1):
            m.vram[env, addr - 0x8000] = wp.uint8(value)
    elif addr < 0xC000:
        cart_write(m.rom, m.cart_ram, m.mbc, m.spec, env, addr, value, t)
    elif addr < 0xFE00:
        m.wram[env, (addr - 0xC000) & 0x1FFF] = wp.uint8(value)
    elif addr < 0xFEA0:
        if oam_accessible(ms, env, t, 1):
            dma_sync(ms, env, t)
            m.oam[env, addr - 0xFE00] = wp.uint8(value)
    return 0


# The instruction loop's run limit once an access changed what the scheduler decided:
# `c.t < limit` fails, the run ends and the scheduler reloads what the loop caches.
END_RUN = wp.constant(wp.int64(-1))


# ---- the instruction loop's accesses (cpu.machine_kernel) ---------------------------------
# Each takes this env's rows as 1-d views that the kernel builds (an access is one add on a
# local base pointer, no stride multiply) and the locals it caches per run: `fast` (False
# during OAM DMA, while a boot ROM is mapped and on the flat bus), `hram_fast` (False only on
# the flat bus), the MBC's bank offsets (romx_off: ROM index of $4000). Plain arrays and
# scalars, not the Machine: a struct parameter of an inlined function that reaches an
# out-of-line call is copied whole on every call. Operand, opcode and stack accesses take
# read8/write8 (ROM, WRAM, HRAM); data accesses (LD (HL), LDH, LD (nn), ...) read_data8 /
# write_data8, which add VRAM and the I/O registers the CPU polls.

@wp.func(inline=True)
def read8(ms: MachinePtr, env: int, rom: wp.array(dtype=wp.uint8), wram: wp.array(dtype=wp.uint8),
          hram: wp.array(dtype=wp.uint8), fast: bool, hram_fast: bool, rom0_base: int, romx_off: int,
          addr: int, t: wp.int64) -> int:
    """An opcode, operand or stack read: ROM, WRAM, HRAM directly, else bus_read.

    No read ends the run: what bus_read does (bring the PPU, timer or serial up to t)
    changes nothing the loop caches - a catch-up to a time before the next event raises no
    request the CPU could take (ppu_wake) and only moves the next event later."""
    v = int(-1)
    if fast and addr < 0x8000:             # operands: ROM first, as the opcode fetch
        v = int(rom[wp.where(addr < 0x4000, rom0_base, romx_off) + (addr & 0x3FFF)])
    elif addr >= 0xFF80:
        if hram_fast:                      # HRAM stays reachable during OAM DMA
            v = int(hram[addr - 0xFF80])
    elif fast and addr >= 0xC000 and addr < 0xE000:
        v = int(wram[addr - 0xC000])
    if v < 0:
        v = bus_read(ms, env, addr, t)
    return v


@wp.func(inline=True)
def io_read_fast(io: IO, r32: R32, r64: R64, reg: int, t: wp.int64) -> int:
    """The I/O registers games poll, read from the stored state without a catch-up: P1 (a
    function of the select bits and the frame's buttons), LY (from the line the lazy PPU
    last stored, ppu.ly_at), DIV, STAT while no PPU event is due. -1: ask bus_read.
    Each read tells the idle-loop check until when its value stays the same (P1: the whole
    run; emu/idle.py)."""
    v = int(-1)
    until = NEVER
    if reg == 0x00:
        v = p1_value(io, r32)
    elif reg == 0x44:
        ly, next_ly = ly_at(io, r32, r64, t)
        v = ly
        until = next_ly
    elif reg == 0x41:
        if t + READ_PHASE < r64[T_PPU_EVENT]:       # (the read sees the PPU at t + READ_PHASE)
            v = stat_of(io, r32)
            until = r64[T_PPU_EVENT] - READ_PHASE
    elif reg == 0x04:
        since = t - r64[T_DIV_BASE]
        v = int((since >> wp.int64(8)) & wp.int64(0xFF))
        until = t + wp.int64(256) - (since & wp.int64(0xFF))
    if v >= 0:
        idle_polled(r32, r64, until)   # a polling loop, perhaps (emu/idle.py)
    return v


@wp.func(inline=True)
def read_data8(ms: MachinePtr, env: int, rom: wp.array(dtype=wp.uint8), wram: wp.array(dtype=wp.uint8),
               hram: wp.array(dtype=wp.uint8), vram: wp.array(dtype=wp.uint8), io: IO, r32: R32, r64: R64,
               fast: bool, hram_fast: bool, rom0_base: int, romx_off: int, addr: int, t: wp.int64) -> int:
    """A data read: read8's direct paths, VRAM while the PPU does not hold it (ppu.vram_free,
    from the stored state), and the polled I/O registers (io_read_fast); else bus_read
    (which does not end the run either)."""
    v = int(-1)
    if fast and addr < 0x8000:
        v = int(rom[wp.where(addr < 0x4000, rom0_base, romx_off) + (addr & 0x3FFF)])
    elif addr >= 0xFF00:
        if hram_fast:                      # I/O and HRAM are not on the OAM DMA's buses
            if addr >= 0xFF80:
                v = int(hram[addr - 0xFF80])
            else:
                v = io_read_fast(io, r32, r64, addr - 0xFF00, t)
    elif fast:
        if addr >= 0xC000 and addr < 0xE000:
            v = int(wram[addr - 0xC000])
        elif addr >= 0x8000 and addr < 0xA000:
            if vram_free(io, r32, r64, t):
                v = int(vram[addr - 0x8000])
                r32[R_IDLE] = 0                # (not checked for idle loops: mode 3 may hide it)
    if v < 0:
        v = bus_read(ms, env, addr, t)
    return v


@wp.func(inline=True)
def write8(ms: MachinePtr, env: int, wram: wp.array(dtype=wp.uint8), hram: wp.array(dtype=wp.uint8), r32: R32,
           fast: bool, hram_fast: bool, addr: int, value: int, t: wp.int64, limit: wp.int64):
    """A stack write: WRAM and HRAM (not IE) directly, else bus_write; if that changed what
    the scheduler decided, the run ends and the instruction's later accesses take the slow
    path. A write that changes the byte tells the idle-loop check (a CALL in a polling loop
    pushes the same return address each time). Returns (limit, fast): the loop's own
    locals, which a Warp function returns rather than assigns."""
    done = int(0)
    if addr >= 0xFF80:
        if hram_fast and addr < 0xFFFF:    # IE ($FFFF) goes out of line: the scheduler
            if int(hram[addr - 0xFF80]) != value:   # must re-check IE&IF
                r32[R_IDLE] = 0
            hram[addr - 0xFF80] = wp.uint8(value)
            done = 1
    elif fast:
        if addr >= 0xC000 and addr < 0xE000:
            if int(wram[addr - 0xC000]) != value:
                r32[R_IDLE] = 0
            wram[addr - 0xC000] = wp.uint8(value)
            done = 1
    if done == 0:
        if bus_write(ms, env, addr, value, t) != 0:
            limit = END_RUN
            fast = False
    return limit, fast


@wp.func(inline=True)
def write_data8(ms: MachinePtr, env: int, wram: wp.array(dtype=wp.uint8), hram: wp.array(dtype=wp.uint8),
                vram: wp.array(dtype=wp.uint8), io: IO, r32: R32, r64: R64, fast: bool, hram_fast: bool,
                addr: int, value: int, t: wp.int64, limit: wp.int64):
    """A data write: write8's direct paths, VRAM while the PPU does not hold it, and P1
    (joypad.p1_write: the run ends only if the write can raise an enabled joypad
    interrupt); else bus_write as in write8."""
    done = int(0)
    if addr >= 0xFF00:
        if hram_fast:
            if addr >= 0xFF80:
                if addr < 0xFFFF:
                    hram[addr - 0xFF80] = wp.uint8(value)
                    r32[R_IDLE] = 0
                    done = 1
            elif addr == 0xFF00:           # (the idle check compares the P1 state itself)
                if p1_write(io, r32, int(hram[127]), value) != 0:
                    limit = END_RUN
                done = 1
    elif fast:
        if addr >= 0xC000 and addr < 0xE000:
            wram[addr - 0xC000] = wp.uint8(value)
            r32[R_IDLE] = 0                # (the idle-loop check: something was written)
            done = 1
        elif addr >= 0x8000 and addr < 0xA000:
            if vram_free(io, r32, r64, t):
                vram[addr - 0x8000] = wp.uint8(value)
                r32[R_IDLE] = 0
                done = 1
    if done == 0:
        if bus_write(ms, env, addr, value, t) != 0:
            limit = END_RUN
            fast = False
    return limit, fast


# ---- the CPU shape's data accesses (cpu.machine_kernel, staged = False) -----------------------
# read_data8 / write_data8 with WRAM and its echo ($C000-$FDFF) decided first, by one unsigned range
# test, and reached by plain loads and stores on the row's address (an array index tests its index
# for the negative wrap). The CUDA shape keeps read_data8 / write_data8 (its footprint: docs/gpu.md).

@wp.func_native("return ((const unsigned char*)ptr)[i];")
def load_u8(ptr: wp.uint64, i: int) -> int:
    """The byte at ptr + i, a plain load (the CPU shape's opcode fetch from ROM, its decode table and
    its WRAM data accesses: the address is valid by construction, where Warp's array index would test
    i for its negative-index wrap)."""
    ...


@wp.func_native("((unsigned char*)ptr)[i] = (unsigned char)v;")
def store_u8(ptr: wp.uint64, i: int, v: int):
    """The byte at ptr + i = v, a plain store (as load_u8)."""
    ...


@wp.func(inline=True)
def operand8_cpu(ms: MachinePtr, env: int, rom: wp.array(dtype=wp.uint8), wram: wp.array(dtype=wp.uint8),
                 hram: wp.array(dtype=wp.uint8), fast: bool, hram_fast: bool, rom0_base: int, romx_off: int,
                 rom0_at: wp.uint64, romx_at: wp.uint64, rom_lim: int, addr: int, t: wp.int64) -> int:
    """An operand read (the bytes after the opcode, at PC) in the CPU shape: the opcode fetch's plain
    load at addr + the half's bank base (rom0_at / romx_at: the address of ROM byte addr in each half)
    when addr < rom_lim (the run's ROM limit: $8000 while the fast paths hold, else 0), else read8.
    The fetch's one compare instead of read8's tests of `fast` and of the address against ROM."""
    v = int(0)
    if addr < rom_lim:
        v = load_u8(wp.where(addr < 0x4000, rom0_at, romx_at), addr)
    else:
        v = read8(ms, env, rom, wram, hram, fast, hram_fast, rom0_base, romx_off, addr, t)
    return v


@wp.func(inline=True)
def stack_read8_cpu(ms: MachinePtr, env: int, rom: wp.array(dtype=wp.uint8), wram: wp.array(dtype=wp.uint8),
                    wram_at: wp.uint64, hram: wp.array(dtype=wp.uint8), fast: bool, hram_fast: bool,
                    rom0_base: int, romx_off: int, addr: int, t: wp.int64) -> int:
    """A stack read (POP, RET) in the CPU shape: WRAM ($C000-$DFFF, where stacks live) first, by one
    unsigned range test and a plain load on the row's address (wram_at), then HRAM and ROM as read8
    takes them, else bus_read. (read8 itself called here: the same work, timed 1.5-3% slower natively,
    docs/performance.md.)"""
    v = int(-1)
    w = addr - 0xC000
    if fast and wp.uint32(w) < wp.uint32(0x2000):
        v = load_u8(wram_at, w)
    elif addr >= 0xFF80:
        if hram_fast:                      # HRAM stays reachable during OAM DMA
            v = int(hram[addr - 0xFF80])
    elif fast and addr < 0x8000:
        # a stack in ROM, as read8 (the CUDA shape's) reads it: without bus_read, which would reset
        # the idle-loop check's state that the CUDA shape keeps
        v = int(rom[wp.where(addr < 0x4000, rom0_base, romx_off) + (addr & 0x3FFF)])
    if v < 0:
        v = bus_read(ms, env, addr, t)     # (a stack in echo RAM, VRAM, ...: rare)
    return v


@wp.func(inline=True)
def stack_write8_cpu(ms: MachinePtr, env: int, wram: wp.array(dtype=wp.uint8), wram_at: wp.uint64,
                     hram: wp.array(dtype=wp.uint8), r32: R32, fast: bool, hram_fast: bool, addr: int, value: int,
                     t: wp.int64, limit: wp.int64):
    """A stack write (PUSH, CALL, RST) in the CPU shape: WRAM first as stack_read8_cpu (a write that
    changes the byte tells the idle-loop check, as in write8), else write8. Returns (limit, fast)."""
    w = addr - 0xC000
    if fast and wp.uint32(w) < wp.uint32(0x2000):
        if load_u8(wram_at, w) != value:
            r32[R_IDLE] = 0
        store_u8(wram_at, w, value)
    else:
        limit, fast = write8(ms, env, wram, hram, r32, fast, hram_fast, addr, value, t, limit)
    return limit, fast


@wp.func(inline=True)
def read_data8_cpu(ms: MachinePtr, env: int, rom: wp.array(dtype=wp.uint8), wram_at: wp.uint64,
                   hram: wp.array(dtype=wp.uint8), vram: wp.array(dtype=wp.uint8), io: IO, r32: R32, r64: R64,
                   fast: bool, hram_fast: bool, rom0_base: int, romx_off: int, addr: int, t: wp.int64) -> int:
    """read_data8 with WRAM and echo RAM first (wram_at: this env's WRAM row's address). Echo
    reads took bus_read before (the same byte: fast is False during OAM DMA, whose bus conflicts
    bus_read handles); they still reset the idle-loop check's state as bus_read does, as the CUDA
    shape's read_data8 leaves it (an echo read in a polling loop: not checked)."""
    v = int(-1)
    w = addr - 0xC000
    if fast and wp.uint32(w) < wp.uint32(0x2000):
        v = load_u8(wram_at, w)
    elif fast and wp.uint32(w) < wp.uint32(0x3E00):
        v = load_u8(wram_at, w - 0x2000)
        r32[R_IDLE] = 0
    elif fast and addr < 0x8000:
        v = int(rom[wp.where(addr < 0x4000, rom0_base, romx_off) + (addr & 0x3FFF)])
    elif addr >= 0xFF00:
        if hram_fast:                      # I/O and HRAM are not on the OAM DMA's buses
            if addr >= 0xFF80:
                v = int(hram[addr - 0xFF80])
            else:
                v = io_read_fast(io, r32, r64, addr - 0xFF00, t)
    elif fast and addr >= 0x8000 and addr < 0xA000:
        if vram_free(io, r32, r64, t):
            v = int(vram[addr - 0x8000])
            r32[R_IDLE] = 0                # (not checked for idle loops: mode 3 may hide it)
    if v < 0:
        v = bus_read(ms, env, addr, t)
    return v


@wp.func(inline=True)
def write_data8_cpu(ms: MachinePtr, env: int, wram_at: wp.uint64, hram: wp.array(dtype=wp.uint8),
                    vram: wp.array(dtype=wp.uint8), io: IO, r32: R32, r64: R64, fast: bool, hram_fast: bool,
                    addr: int, value: int, t: wp.int64, limit: wp.int64):
    """write_data8 with WRAM and echo RAM first (as read_data8_cpu)."""
    done = int(0)
    w = addr - 0xC000
    if fast and wp.uint32(w) < wp.uint32(0x3E00):
        store_u8(wram_at, w & 0x1FFF, value)
        r32[R_IDLE] = 0                    # (the idle-loop check: something was written)
        done = 1
    elif addr >= 0xFF00:
        if hram_fast:
            if addr >= 0xFF80:
                if addr < 0xFFFF:
                    hram[addr - 0xFF80] = wp.uint8(value)
                    r32[R_IDLE] = 0
                    done = 1
            elif addr == 0xFF00:           # (the idle check compares the P1 state itself)
                if p1_write(io, r32, int(hram[127]), value) != 0:
                    limit = END_RUN
                done = 1
    elif fast and addr >= 0x8000 and addr < 0xA000:
        if vram_free(io, r32, r64, t):
            vram[addr - 0x8000] = wp.uint8(value)
            r32[R_IDLE] = 0
            done = 1
    if done == 0:
        if bus_write(ms, env, addr, value, t) != 0:
            limit = END_RUN
            fast = False
    return limit, fast


@wp.func
def bus_peek(ms: MachinePtr, env: int, addr: int, t: wp.int64) -> int:
    """Side-effect-free read for debuggers/tests (state is synced at the end of each run)."""
    m = machine(ms)
    v = 0xFF
    if m.flat_mode != 0:
        v = flat_read(ms, env, addr)
    elif addr >= 0xFF80:
        v = int(m.hram[env, addr - 0xFF80])
    elif addr >= 0xFF00:
        reg = addr - 0xFF00
        if reg == 0x00:
            v = p1_read(ms, env)
        elif reg == 0x04:
            v = system_counter(ms, env, t) >> 8
        elif reg == 0x41:
            v = stat_value(ms, env, t)
        elif reg == 0x44:
            v = ly_visible(ms, env, t)
        elif reg == 0x26:
            apu_sync(ms, env, t)       # (the sound unit is lazy: its channel flags as of t)
            v = int(m.io[env, reg]) | int(m.io_rmask[reg])
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


@wp.func
def bus_peek(mref: MachineRef, env: int, addr: int, t: wp.int64) -> int:
    """bus_peek for a kernel's MachineRef argument."""
    return bus_peek(machine_ptr(mref), env, addr, t)
