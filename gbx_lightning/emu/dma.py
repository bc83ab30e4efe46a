"""OAM DMA ($FF46).

Writing XX (in M-cycle d = 0) starts a copy of XX00-XX9F into OAM: M-cycle d = 1 is the
start delay, byte k moves in M-cycle d = k + 2 (160 M-cycles, d = 2..161).
The CPU cannot change the source while it runs (see below), so the 160 bytes are copied
at the write and only the bus conflict is timed. During d = 2..161 (DMG):
- a CPU read on the bus the DMA reads from (the external bus: ROM, cart RAM, WRAM/echo;
  or the VRAM bus when XX is $80-$9F) returns the byte being moved in that M-cycle;
- reads of the other bus are normal; OAM and $FEA0-$FEFF read $FF;
- writes to the DMA's bus and to OAM are lost; I/O registers, HRAM and IE are unaffected.
Sources $E0-$FF read the WRAM echo."""
import warp as wp

from .state import T_DMA_END, T_DMA_START, MachinePtr, machine, cart_read


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


@wp.func
def dma_write(ms: MachinePtr, env: int, value: int, t: wp.int64):
    m = machine(ms)
    m.io[env, 0x46] = wp.uint8(value)
    src = value << 8
    for i in range(160):
        m.oam[env, i] = wp.uint8(dma_source_read(ms, env, src + i, t))
    m.r64[env, T_DMA_START] = t + wp.int64(8)
    m.r64[env, T_DMA_END] = t + wp.int64(8 + 640)


@wp.func
def dma_blocks(ms: MachinePtr, env: int, t: wp.int64) -> bool:
    m = machine(ms)
    return t >= m.r64[env, T_DMA_START] and t < m.r64[env, T_DMA_END]


@wp.func
def dma_index(ms: MachinePtr, env: int, t: wp.int64) -> int:
    """Index of the byte the DMA moves in the M-cycle at t (valid while dma_blocks)."""
    m = machine(ms)
    return int((t - m.r64[env, T_DMA_START]) // wp.int64(4))
