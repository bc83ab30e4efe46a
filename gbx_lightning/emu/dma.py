"""OAM DMA ($FF46).

Writing XX starts a copy of XX00-XX9F into OAM: one M-cycle start delay, then 160 M-cycles.
Nothing can change the source while the transfer runs (the CPU is locked out of everything
below $FF00), so the 160 bytes are copied at the write and only the bus lock is timed:
from write+4 to write+4+640 T-cycles CPU reads below $FF00 (ROM, VRAM, cart RAM, WRAM, OAM,
echo) return $FF and writes there are ignored; I/O registers, HRAM and IE stay accessible.
Sources $E0-$FF read the WRAM echo (DMG)."""
import warp as wp

from .state import T_DMA_END, T_DMA_START, Machine, cart_read


@wp.func
def dma_source_read(m: Machine, env: int, addr: int, t: wp.int64) -> int:
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
def dma_write(m: Machine, env: int, value: int, t: wp.int64):
    m.io[env, 0x46] = wp.uint8(value)
    src = value << 8
    for i in range(160):
        m.oam[env, i] = wp.uint8(dma_source_read(m, env, src + i, t))
    m.r64[env, T_DMA_START] = t + wp.int64(4)
    m.r64[env, T_DMA_END] = t + wp.int64(4 + 640)


@wp.func
def dma_blocks(m: Machine, env: int, t: wp.int64) -> bool:
    return t >= m.r64[env, T_DMA_START] and t < m.r64[env, T_DMA_END]
