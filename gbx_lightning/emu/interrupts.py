"""IF/IE helpers. IF ($FF0F) lives in io[0x0F] (upper 3 bits read as 1 via the read mask),
IE ($FFFF) in hram[127]. Dispatch itself is CPU microcode (cpu.py: the kernel's scheduler
and ``dispatch_interrupt``)."""
import warp as wp

from .state import MachinePtr, machine

VECTOR_BASE = 0x40  # VBlank 40, STAT 48, Timer 50, Serial 58, Joypad 60 (priority in bit order)


@wp.func
def raise_if(ms: MachinePtr, env: int, bits: int):
    """Set interrupt request bits in IF."""
    m = machine(ms)
    m.io[env, 0x0F] = wp.uint8(int(m.io[env, 0x0F]) | bits)


@wp.func
def pending_irqs(ms: MachinePtr, env: int) -> int:
    """IE & IF over the five sources."""
    m = machine(ms)
    return int(m.hram[env, 127]) & int(m.io[env, 0x0F]) & 0x1F
