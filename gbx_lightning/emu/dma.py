"""OAM DMA ($FF46).

Writing XX (in M-cycle d = 0) starts a copy of XX00-XX9F into OAM: M-cycle d = 1 is the
start delay, byte k moves in M-cycle d = k + 2 (160 M-cycles, d = 2..161). Written while
a transfer runs, the new one starts the same way, and the running one keeps the buses
(and OAM closed) until it does (mooneye-gb oam_dma_start, verified on DMG: OAM is not
readable in the M-cycle after a restart).
The CPU cannot change the source while it runs (see below), so the 160 bytes are copied
in one go as byte 0 moves (``dma_sync``, run before OAM is read by the CPU or the PPU),
and only the bus conflict is timed byte by byte: in M-cycle d = 1 OAM still holds its
old bytes (mooneye-gb oam_dma_start). The PPU sees all new bytes from d = 2 on (on
hardware they arrive one per M-cycle; games run OAM DMA in VBlank). During d = 2..161 (DMG):
- a CPU read on the bus the DMA reads from (the external bus: ROM, cart RAM, WRAM/echo;
  or the VRAM bus when XX is $80-$9F) returns the byte being moved in that M-cycle;
- reads of the other bus are normal; OAM and $FEA0-$FEFF read $FF;
- writes to the DMA's bus and to OAM are lost; I/O registers, HRAM and IE are unaffected.
Sources $E0-$FF read the WRAM echo."""
import warp as wp

from .state import T_DMA_BLOCK, T_DMA_COPY, T_DMA_END, T_DMA_START, MachinePtr, machine, cart_read


@wp.func
def dma_source_read(ms: MachinePtr, env: int, addr: int, t: wp.int64) -> int:
    m = machine(ms)
    v = 0xFF
    if addr < 0x8000:
        v = cart_read(m.rom, m.cart_ram, m.mbc, m.spec, env, addr, t)
    elif addr < 0xA000:
        v = int(m.vram[env, addr - 0x8000])
    elif addr < 0xC000:
        v = cart_read(m.rom, m.cart_ram, m.mbc, m.spec, env, addr, t)
    else:
        v = int(m.wram[env, (addr - 0xC000) & 0x1FFF])
    return v


@wp.func_native("""
#if defined(__CUDA_ARCH__)
    return 0;
#else
    return 1;
#endif
""")
def wide_copy_here() -> int:
    """1 on the CPU: dma_sync copies a WRAM source as 20 8-byte words (a game's shadow OAM, every
    frame: byte by byte through dma_source_read it cost ~4,700 x86 instructions a transfer, 5% of
    orchard's frame; callgrind, tools/grind_emu.py). 0 on CUDA, where the byte loop stays as the
    sm_90 report pins it."""
    ...


@wp.func(inline=False)   # cold; one copy instead of one per caller (docs/gpu.md, Kernel footprint)
def dma_sync(ms: MachinePtr, env: int, t: wp.int64):
    """Land a transfer's bytes in OAM if its first byte has moved by t."""
    m = machine(ms)
    copy = m.r64[env, T_DMA_COPY]
    if copy != wp.int64(0) and t >= copy:
        src = int(m.io[env, 0x46]) << 8
        if wide_copy_here() != 0 and src >= 0xC000:
            # WRAM or its echo ($E000-$FFFF reads $C000-$DFFF): 160 bytes from a page start never
            # wrap, and both rows are 8-byte aligned (page offsets; OAM rows of 160 bytes; both arrays
            # contiguous, as the machine kernel takes them)
            from_row = wp.array(ptr=wp.uint64(m.wram.ptr) + wp.uint64(env) * wp.uint64(m.wram.shape[1])
                                + wp.uint64((src - 0xC000) & 0x1FFF), shape=(20,), dtype=wp.uint64)
            to_row = wp.array(ptr=wp.uint64(m.oam.ptr) + wp.uint64(env) * wp.uint64(m.oam.shape[1]),
                              shape=(20,), dtype=wp.uint64)
            for i in range(20):
                to_row[i] = from_row[i]
        else:
            for i in range(160):
                m.oam[env, i] = wp.uint8(dma_source_read(ms, env, src + i, copy))
        m.r64[env, T_DMA_COPY] = wp.int64(0)


@wp.func
def dma_write(ms: MachinePtr, env: int, value: int, t: wp.int64):
    m = machine(ms)
    dma_sync(ms, env, t)                         # (a transfer restarted after its start)
    m.io[env, 0x46] = wp.uint8(value)
    m.r64[env, T_DMA_COPY] = t + wp.int64(8)
    block = t + wp.int64(8)
    if m.r64[env, T_DMA_BLOCK] <= t + wp.int64(4) and t + wp.int64(4) < m.r64[env, T_DMA_END]:
        block = m.r64[env, T_DMA_BLOCK]          # a restart: the running transfer goes on
    m.r64[env, T_DMA_BLOCK] = block
    m.r64[env, T_DMA_START] = t + wp.int64(8)
    m.r64[env, T_DMA_END] = t + wp.int64(8 + 640)


@wp.func
def dma_blocks(ms: MachinePtr, env: int, t: wp.int64) -> bool:
    m = machine(ms)
    return t >= m.r64[env, T_DMA_BLOCK] and t < m.r64[env, T_DMA_END]


@wp.func
def dma_index(ms: MachinePtr, env: int, t: wp.int64) -> int:
    """Index of the byte the DMA moves in the M-cycle at t (valid while dma_blocks; 0 while
    a restarted transfer's predecessor still runs: its bytes are no longer kept)."""
    m = machine(ms)
    return int(wp.max(t - m.r64[env, T_DMA_START], wp.int64(0)) // wp.int64(4))
