"""Idle loops: a busy-wait is skipped to the moment its outcome can change.

Games wait by polling: LY until VBlank, STAT until VRAM is free, GBDK's waitpadup calling
joypad() until no button is down. Each iteration of such a loop repeats the last one
exactly - the same CPU state at its head, nothing written, the same values read - until a
value it reads changes, or an interrupt or the frame's end comes. The clock can then jump
over whole iterations (so the phase within the loop is kept) up to the earliest of: a value
the loop reads changes (LY: the next line; STAT and VRAM: the PPU's next event; DIV: its
next step; P1, ROM, WRAM, HRAM: not within a run - the buttons change only between
frames), the run's limit (the next event the scheduler must see, the frame's end).

Finding them costs the instruction loop a few stores: r32[R_IDLE] holds two bits.
- IDLE_POLLED: a polled I/O register was read on the fast path (P1, LY, STAT, DIV), which
  also lowers r64[T_IDLE_VALID] to when the value read can change.
- IDLE_CLEAN: no write since the last check. Every data write clears R_IDLE (a plain
  store), as does a stack write that changes the byte (a CALL in a polling loop pushes the
  same return address each time) and every out-of-line access (whose value's lifetime the
  check does not know). P1 select writes do not: the P1 state is in the signature below.
A taken backward jump (JR/JP, cpu.py) to head T with IDLE_POLLED set calls idle_branch:
if the last check was at T too and IDLE_CLEAN still holds, nothing was written since then;
if also the CPU state at T (registers, SP, IME, the P1 select bits and lines, IF) equals
the one recorded then, the iteration in between is a fixed point and is repeated until
T_IDLE_VALID: the clock jumps. Either way the state, time and T are recorded, IDLE_CLEAN
set and IDLE_POLLED cleared.

The record is dropped at each run's start (interrupts, events and new frames come between
runs). Exact by construction - a skipped iteration would have started and ended in the same
state, read the same values and met no event - and tested: every frame and register with
the skip and without it (Machine.idle_skip = 0; tests/test_idle.py). The counter build
counts only the instructions it runs, not the skipped ones.
"""
import warp as wp

from .state import (NEVER, R_A, R_B, R_C, R_D, R_E, R_F, R_H, R_IDLE, R_IME, R_JOYP_LINES, R_L, R_SP,
                    T_IDLE_HEAD, T_IDLE_SIG, T_IDLE_SIG2, T_IDLE_SKIPS, T_IDLE_T, T_IDLE_VALID, IO, R32, R64, MachinePtr,
                    io_row, machine, r32_row, r64_row)

IDLE_POLLED = wp.constant(1)     # r32[R_IDLE] bits
IDLE_CLEAN = wp.constant(2)


@wp.func(inline=True)
def idle_polled(r32: R32, r64: R64, until: wp.int64):
    """The CPU read a polled I/O register, whose value stays the same until `until`."""
    r32[R_IDLE] = r32[R_IDLE] | IDLE_POLLED
    r64[T_IDLE_VALID] = wp.min(r64[T_IDLE_VALID], until)


@wp.func(inline=True)
def idle_run_start(r64: R64):
    """No record is carried from one run to the next."""
    r64[T_IDLE_HEAD] = wp.int64(-1)


@wp.func
def _cpu_signature(r32: R32) -> wp.int64:
    return ((wp.int64(r32[R_A]) << wp.int64(56)) | (wp.int64(r32[R_F]) << wp.int64(48))
            | (wp.int64(r32[R_B]) << wp.int64(40)) | (wp.int64(r32[R_C]) << wp.int64(32))
            | (wp.int64(r32[R_D]) << wp.int64(24)) | (wp.int64(r32[R_E]) << wp.int64(16))
            | (wp.int64(r32[R_H]) << wp.int64(8)) | wp.int64(r32[R_L]))


@wp.func
def _io_signature(io: IO, r32: R32) -> wp.int64:
    return (wp.int64(r32[R_SP]) | (wp.int64(io[0]) << wp.int64(16)) | (wp.int64(io[0x0F]) << wp.int64(24))
            | (wp.int64(r32[R_JOYP_LINES]) << wp.int64(32)) | (wp.int64(r32[R_IME]) << wp.int64(40)))


@wp.func(inline=False)
def idle_branch(ms: MachinePtr, env: int, head: int, t: wp.int64, limit: wp.int64) -> wp.int64:
    """A taken backward jump to `head`, arriving at time t, after a polled read (see the
    module docstring). Returns t, moved on over the skipped iterations if there are any."""
    m = machine(ms)
    io = io_row(ms, env)
    r32 = r32_row(ms, env)
    r64 = r64_row(ms, env)
    sig = _cpu_signature(r32)
    sig2 = _io_signature(io, r32)
    now = t
    if (m.idle_skip != 0 and r64[T_IDLE_HEAD] == wp.int64(head) and (r32[R_IDLE] & IDLE_CLEAN) != 0
            and r64[T_IDLE_SIG] == sig and r64[T_IDLE_SIG2] == sig2):
        period = t - r64[T_IDLE_T]
        until = wp.min(limit, r64[T_IDLE_VALID])
        if period > wp.int64(0) and until > t:
            now = t + ((until - t) // period) * period
            if now > t:
                r64[T_IDLE_SKIPS] = r64[T_IDLE_SKIPS] + wp.int64(1)
    r64[T_IDLE_HEAD] = wp.int64(head)
    r64[T_IDLE_SIG] = sig
    r64[T_IDLE_SIG2] = sig2
    r64[T_IDLE_T] = now
    r64[T_IDLE_VALID] = NEVER
    r32[R_IDLE] = IDLE_CLEAN
    return now


def set_idle_skip(gb, on: bool) -> None:
    """Turn the skip on or off for a VecGameBoy (on by default; off, loops run every
    iteration - what tests/test_idle.py compares against)."""
    gb._m.idle_skip = int(bool(on))
    gb._refs.clear()          # the MachineRef handles hold the struct by value: rebuild them
    gb._launches.clear()


def idle_skips(gb, env: int = 0) -> int:
    """How many times env skipped idle-loop iterations since reset."""
    from .state import T_IDLE_SKIPS as slot
    return int(gb._arrays["r64"].numpy()[env, slot])
