"""Serial port, internal clock only (no link partner).

Writing SC with bits 7 and 0 set latches SB into the env's output ring at that moment
(docs/design.md contract) and starts a transfer. Bits shift on falling edges of system-counter
bit 8 (8192 Hz, 512 T-cycles: the clock is divided from the counter DIV shows, so the
first bit waits for the counter, not for the write; mooneye-gb boot_sclk_align); the
transfer completes at the 8th such edge after the write. A DIV write resets the counter:
the bits left shift on the new counter's edges, and if bit 8 was 1 the reset itself is a
falling edge and shifts one (``serial_counter_reset``; as the timer's DIV-write glitch).
During the transfer SB reads as the hardware shifts it (Pan Docs, FF01 SB): after k clocks
the outgoing byte has moved k bits left with k 1-bits (no partner) shifted in. On completion
SC bit 7 clears, SB reads $FF, IF bit 3 is set.
Output ring: SERIAL_CAP bytes per env; r32[R_SERIAL_COUNT] counts every byte ever latched,
so once more than SERIAL_CAP bytes were sent only the last SERIAL_CAP are kept.
"""
import warp as wp

from .interrupts import raise_if
from .state import NEVER, R_SERIAL_COUNT, SERIAL_CAP, T_DIV_BASE, T_SERIAL_END, MachinePtr, machine


@wp.func(inline=False)   # cold; one copy instead of one per caller (docs/gpu.md, Kernel footprint)
def serial_sync(ms: MachinePtr, env: int, now: wp.int64):
    m = machine(ms)
    if now >= m.r64[env, T_SERIAL_END]:
        m.io[env, 2] = wp.uint8(int(m.io[env, 2]) & 0x7F)
        m.io[env, 1] = wp.uint8(0xFF)
        raise_if(ms, env, 8)
        m.r64[env, T_SERIAL_END] = NEVER


@wp.func
def sc_write(ms: MachinePtr, env: int, value: int, t: wp.int64):
    m = machine(ms)
    serial_sync(ms, env, t)
    m.io[env, 2] = wp.uint8(value)
    if (value & 0x81) == 0x81:
        count = m.r32[env, R_SERIAL_COUNT]
        m.serial[env, count % SERIAL_CAP] = m.io[env, 1]
        m.r32[env, R_SERIAL_COUNT] = (count + 1) & 0x7FFFFFFF
        base = m.r64[env, T_DIV_BASE]
        m.r64[env, T_SERIAL_END] = ((t - base) // wp.int64(512) + wp.int64(8)) * wp.int64(512) + base
    elif (value & 0x80) == 0:
        m.r64[env, T_SERIAL_END] = NEVER


@wp.func
def serial_counter_reset(ms: MachinePtr, env: int, t: wp.int64):
    """The system counter is reset at t (DIV write, STOP): a transfer under way keeps its
    shifted bits and finishes on the new counter's edges (bit 8 falling: 1 after 512 T)."""
    m = machine(ms)
    serial_sync(ms, env, t)
    end = m.r64[env, T_SERIAL_END]
    if end != NEVER:
        base = m.r64[env, T_DIV_BASE]
        left = (end - base) // wp.int64(512) - (t - base) // wp.int64(512)   # edges after t
        if (((t - base) >> wp.int64(8)) & wp.int64(1)) != wp.int64(0):
            left = left - wp.int64(1)            # bit 8 falls as the counter resets
        m.r64[env, T_SERIAL_END] = t + left * wp.int64(512)
        serial_sync(ms, env, t)


@wp.func
def sb_read(ms: MachinePtr, env: int, t: wp.int64) -> int:
    """SB as read at t: mid-transfer, the outgoing byte (the last one latched) shifted left
    once per 8192 Hz clock edge so far, 1s coming in."""
    m = machine(ms)
    serial_sync(ms, env, t)
    v = int(m.io[env, 1])
    end = m.r64[env, T_SERIAL_END]
    if end != NEVER:
        base = m.r64[env, T_DIV_BASE]
        k = int((t - base) // wp.int64(512) - ((end - base) // wp.int64(512) - wp.int64(8)))
        k = wp.clamp(k, 0, 8)
        count = m.r32[env, R_SERIAL_COUNT]
        out = int(m.serial[env, (count + SERIAL_CAP - 1) % SERIAL_CAP])
        v = ((out << k) | ((1 << k) - 1)) & 0xFF
    return v
