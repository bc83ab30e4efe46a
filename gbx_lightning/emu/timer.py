"""DIV/TIMA/TMA/TAC, caught up lazily with integer math.

The 16-bit system counter is (t - r64[T_DIV_BASE]) mod 2^16; DIV is its upper byte.
TIMA increments on each falling edge of the TAC-selected counter bit (9/3/5/7 for
TAC 0/1/2/3) while TAC bit 2 is set: over a span (a, b] the number of falling edges of
bit k is floor((b-base)/2^(k+1)) - floor((a-base)/2^(k+1)) — no per-cycle loop.
Overflow (Pan Docs, Timer obscure behaviour): TIMA reads $00 for the M-cycle starting
at the overflowing edge ("cycle A"); at the next M-cycle ("cycle B") TIMA := TMA and
IF bit 2 is set. A TIMA write in cycle A cancels the reload; a TIMA write in cycle B is
ignored; a TMA write in cycle B also lands in TIMA. Glitches: a DIV write or a TAC write
that turns the selected (bit AND enable) signal from 1 to 0 counts as a falling edge.
"""
import warp as wp

from .interrupts import raise_if
from .serial import serial_counter_reset
from .state import (NEVER, T_DIV_BASE, T_TIMA_OVERFLOW, T_TIMA_RELOADED, T_TIMER_EVENT,
                    T_TIMER_LAST, MachinePtr, machine)


@wp.func
def tac_bit(tac: int) -> int:
    """System-counter bit watched for TAC clock select 0..3 (4096/262144/65536/16384 Hz)."""
    sel = tac & 3
    bit = 7
    if sel == 0:
        bit = 9
    elif sel == 1:
        bit = 3
    elif sel == 2:
        bit = 5
    return bit


@wp.func
def system_counter(ms: MachinePtr, env: int, t: wp.int64) -> int:
    m = machine(ms)
    return int((t - m.r64[env, T_DIV_BASE]) & wp.int64(0xFFFF))


@wp.func
def timer_schedule(ms: MachinePtr, env: int):
    """Next time the timer needs a sync: a pending reload, or the next overflow's reload."""
    m = machine(ms)
    ev = NEVER
    ov = m.r64[env, T_TIMA_OVERFLOW]
    tac = int(m.io[env, 7])
    if ov >= wp.int64(0):
        ev = ov + wp.int64(4)
    elif (tac & 4) != 0:
        base = m.r64[env, T_DIV_BASE]
        last = m.r64[env, T_TIMER_LAST]
        period = wp.int64(1) << wp.int64(tac_bit(tac) + 1)
        first = ((last - base) // period + wp.int64(1)) * period + base
        ev = first + wp.int64(255 - int(m.io[env, 5])) * period + wp.int64(4)
    m.r64[env, T_TIMER_EVENT] = ev


@wp.func(inline=False)
def timer_sync(ms: MachinePtr, env: int, now: wp.int64):
    """Bring TIMA (and the delayed reload / IF bit 2) up to time `now`. Out of line, as
    ppu.ppu_sync: one copy instead of seven inlined ones, each with its own spills on CUDA."""
    m = machine(ms)
    last = m.r64[env, T_TIMER_LAST]
    if now > last:
        ov = m.r64[env, T_TIMA_OVERFLOW]
        tac = int(m.io[env, 7])
        tima = int(m.io[env, 5])
        base = m.r64[env, T_DIV_BASE]
        cur = last
        going = int(1)
        while going == 1:
            if ov >= wp.int64(0):
                if now >= ov + wp.int64(4):
                    tima = int(m.io[env, 6])
                    raise_if(ms, env, 4)
                    m.r64[env, T_TIMA_RELOADED] = ov + wp.int64(4)
                    ov = wp.int64(-1)
                else:
                    going = 0
            if going == 1:
                if (tac & 4) == 0:
                    going = 0
                else:
                    period = wp.int64(1) << wp.int64(tac_bit(tac) + 1)
                    n = (now - base) // period - (cur - base) // period
                    if n == wp.int64(0):
                        going = 0
                    elif wp.int64(tima) + n <= wp.int64(255):
                        tima = tima + int(n)
                        going = 0
                    else:
                        first = ((cur - base) // period + wp.int64(1)) * period + base
                        te = first + wp.int64(255 - tima) * period
                        tima = 0
                        ov = te
                        cur = te
        m.io[env, 5] = wp.uint8(tima)
        m.r64[env, T_TIMA_OVERFLOW] = ov
        m.r64[env, T_TIMER_LAST] = now
        timer_schedule(ms, env)


@wp.func
def _tima_glitch_increment(ms: MachinePtr, env: int, t: wp.int64):
    m = machine(ms)
    tima = int(m.io[env, 5])
    if tima == 255:
        m.io[env, 5] = wp.uint8(0)
        m.r64[env, T_TIMA_OVERFLOW] = t
    else:
        m.io[env, 5] = wp.uint8(tima + 1)


@wp.func
def div_write(ms: MachinePtr, env: int, t: wp.int64):
    """Writing DIV resets the system counter; if the selected bit was 1 that is a falling edge.
    The serial clock, divided from the same counter, follows (serial_counter_reset)."""
    m = machine(ms)
    timer_sync(ms, env, t)
    serial_counter_reset(ms, env, t)
    tac = int(m.io[env, 7])
    if (tac & 4) != 0 and ((system_counter(ms, env, t) >> tac_bit(tac)) & 1) == 1:
        _tima_glitch_increment(ms, env, t)
    m.r64[env, T_DIV_BASE] = t
    timer_schedule(ms, env)


@wp.func
def tac_write(ms: MachinePtr, env: int, value: int, t: wp.int64):
    m = machine(ms)
    timer_sync(ms, env, t)
    old = int(m.io[env, 7])
    cnt = system_counter(ms, env, t)
    old_sig = 0
    if (old & 4) != 0:
        old_sig = (cnt >> tac_bit(old)) & 1
    new_sig = 0
    if (value & 4) != 0:
        new_sig = (cnt >> tac_bit(value)) & 1
    if old_sig == 1 and new_sig == 0:
        _tima_glitch_increment(ms, env, t)
    m.io[env, 7] = wp.uint8(value & 7)
    timer_schedule(ms, env)


@wp.func
def tima_write(ms: MachinePtr, env: int, value: int, t: wp.int64):
    m = machine(ms)
    timer_sync(ms, env, t)
    rel = m.r64[env, T_TIMA_RELOADED]
    if m.r64[env, T_TIMA_OVERFLOW] >= wp.int64(0):
        m.r64[env, T_TIMA_OVERFLOW] = wp.int64(-1)   # cycle A: cancels reload and IF
        m.io[env, 5] = wp.uint8(value)
    elif t >= rel and t < rel + wp.int64(4):
        pass                                       # cycle B: TMA wins
    else:
        m.io[env, 5] = wp.uint8(value)
    timer_schedule(ms, env)


@wp.func
def tma_write(ms: MachinePtr, env: int, value: int, t: wp.int64):
    m = machine(ms)
    timer_sync(ms, env, t)
    m.io[env, 6] = wp.uint8(value)
    rel = m.r64[env, T_TIMA_RELOADED]
    if t >= rel and t < rel + wp.int64(4):
        m.io[env, 5] = wp.uint8(value)
    timer_schedule(ms, env)
