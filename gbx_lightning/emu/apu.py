"""The sound unit's registers, without sound: no samples are produced, but everything a program
can read back is modelled (Pan Docs: Audio, Audio Registers, Audio Details).

- Register read masks (state.IO_READ_MASK); NR52 bits 0-3 report the channels that are on.
- Power (NR52 bit 7): off clears NR10-NR51 and ignores their writes until it is on again, except
  the length timers (NRx1), which a DMG still takes; wave RAM stays accessible; the length timers
  keep their values. On: the frame sequencer starts over at step 0, or one DIV-APU event later if
  DIV bit 4 is set then (that event is skipped: SameSuite div_write_trigger_10, DMG-verified).
- A channel turns on when triggered (NRx4 bit 7) with its DAC on (NRx2 & $F8, NR30 bit 7); it
  turns off when its DAC is turned off, its length timer runs out, or (CH1) the period sweep
  overflows.
- DIV-APU: an event on every falling edge of DIV bit 4 (system counter bit 12, 512 Hz), including
  the one a DIV write makes while that bit is set. Events run the frame sequencer's steps 0-7:
  length timers on the even steps, CH1's sweep on steps 2 and 6, the envelopes on step 7 (not
  modelled: a volume is not readable on a DMG).
- Length timers: NRx1 loads 64 - n (CH3: 256 - n); a clock while NRx4 bit 6 is set counts down, and
  reaching 0 turns the channel off. A trigger reloads a timer at 0 with 64 (256). Writing NRx4 when
  the next event does not clock lengths: enabling the length (bit 6, 0 -> 1) clocks it once (if that
  makes it 0 without a trigger, the channel turns off), and a trigger that reloads it with the
  length enabled loads 63 (255) (gbdev wiki, Gameboy sound hardware, obscure behaviour; the
  expected values of SameSuite div_write_trigger*).
- CH1 sweep (Pan Docs, Audio Details): the trigger copies the period to the shadow register,
  reloads the timer, sets the enabled flag if the pace or step is non-zero, and with a step runs
  the overflow check; an iteration (pace non-zero) computes shadow +- shadow >> step, turns the
  channel off above $7FF, else writes it back to NR13/NR14 and checks once more. Clearing NR10's
  direction bit after a subtraction was computed since the trigger turns CH1 off. Iterations go
  on while CH1 is off (only the enabled flag gates them: gbdev wiki; SameBoy, gambatte), so a
  later trigger starts from the period they wrote back; powering the APU off resets the sweep.
- CH3 wave RAM while the channel is on (DMG): an access only reaches wave RAM in the M-cycle in
  which the channel reads it, and then the byte being read; otherwise reads give $FF and writes
  are lost. The channel's first read after a trigger (sample 1) is 6 + 2 * (2048 - period)
  T-cycles after the NR34 write, then one every 2 * (2048 - period); a period written while it
  plays applies after its next read (Pan Docs, FF30-FF3F and NR33; the DMG read timings of
  docboy-test-suite's ch3_read_wave tests). A retrigger (NR34 bit 7) while it plays, 2 T-cycles
  before one of its reads, corrupts wave RAM's first bytes with the ones that read fetches
  (wave_corruption; docboy-test-suite's ch3_corrupt_wave tests, gambatte).
- Not modelled: the volume envelopes (a DMG cannot read a volume back: no PCM12/PCM34 there),
  and sound itself.

Lazy like the timer: nothing runs per cycle or per instruction. The frame sequencer's events
since the last catch-up are counted from the system counter when a sound register or wave RAM
is read or written (the writes its events cannot affect excepted: needs_sync, quick_write), DIV
is written, or NR52 is peeked (bus_peek) (apu_sync), and their effect on the length timers and
the sweep is computed in closed form.
"""
import warp as wp

from .state import (A_LEN1, A_NEG_USED, A_SHADOW, A_STEP, A_SWEEP_ON, A_SWEEP_TIMER, A_SYNC_T, A_WAVE_PERIOD,
                    A_WAVE_POS, A_WAVE_T, NUM_APU, T_DIV_BASE, MachinePtr, machine)

DIV_APU_PERIOD = wp.constant(wp.int64(8192))   # T-cycles between falling edges of counter bit 12
NR52 = wp.constant(0x26)


@wp.func
def nrx4_of(ch: int) -> int:
    """The NRx4 register (I/O index) of channel ch (0-3)."""
    return 0x14 + 5 * ch


@wp.func
def dac_on(ms: MachinePtr, env: int, ch: int) -> bool:
    """Pan Docs, DACs: CH1/2/4's DAC is on iff NRx2 & $F8 != 0; CH3's is NR30 bit 7."""
    m = machine(ms)
    if ch == 2:
        return (int(m.io[env, 0x1A]) & 0x80) != 0
    return (int(m.io[env, 0x12 + 5 * ch]) & 0xF8) != 0


@wp.func
def channel_off(ms: MachinePtr, env: int, ch: int):
    m = machine(ms)
    m.io[env, NR52] = wp.uint8(int(m.io[env, NR52]) & ((1 << ch) ^ 0xFF))


@wp.func
def channel_is_on(ms: MachinePtr, env: int, ch: int) -> bool:
    m = machine(ms)
    return ((int(m.io[env, NR52]) >> ch) & 1) != 0


@wp.func
def sweep_calc(ms: MachinePtr, env: int) -> int:
    """The sweep's next period from the shadow register (noting a subtraction for the NR10 quirk)."""
    m = machine(ms)
    nr10 = int(m.io[env, 0x10])
    shadow = int(m.apu[env, A_SHADOW])
    delta = shadow >> (nr10 & 7)
    if (nr10 & 0x08) != 0:
        m.apu[env, A_NEG_USED] = wp.int64(1)
        return shadow - delta
    return shadow + delta


@wp.func
def sweep_iterations(ms: MachinePtr, env: int, clocks: wp.int64):
    """`clocks` sweep clocks (frame sequencer steps 2 and 6): the timer counts down and reloads with
    the pace (0 counts as 8); each time it reaches 0 with a non-zero pace an iteration runs, CH1
    on or not. The iterations stop early at a fixed point (the same period again: an overflow
    writes nothing back)."""
    m = machine(ms)
    pace = (int(m.io[env, 0x10]) >> 4) & 7
    reload = wp.int64(pace)
    if pace == 0:
        reload = wp.int64(8)
    timer = m.apu[env, A_SWEEP_TIMER]
    if timer <= wp.int64(0) or timer > wp.int64(8):
        timer = reload
    iters = wp.int64(0)
    if clocks < timer:
        timer = timer - clocks
    else:
        iters = wp.int64(1) + (clocks - timer) // reload
        timer = reload - (clocks - timer) % reload
    m.apu[env, A_SWEEP_TIMER] = timer
    if pace != 0 and m.apu[env, A_SWEEP_ON] != wp.int64(0):
        n = int(wp.min(iters, wp.int64(4096)))     # (a fixed point or an overflow comes far sooner)
        i = int(0)
        while i < n:
            before = m.apu[env, A_SHADOW]
            new = sweep_calc(ms, env)
            if new > 2047:
                channel_off(ms, env, 0)
            elif (int(m.io[env, 0x10]) & 7) != 0:
                m.apu[env, A_SHADOW] = wp.int64(new)
                m.io[env, 0x13] = wp.uint8(new & 0xFF)
                m.io[env, 0x14] = wp.uint8((int(m.io[env, 0x14]) & 0xF8) | (new >> 8))
                if sweep_calc(ms, env) > 2047:
                    channel_off(ms, env, 0)
            if m.apu[env, A_SHADOW] == before:
                i = n                              # every later iteration computes the same
            i = i + 1


@wp.func
def frame_sequencer(ms: MachinePtr, env: int, events: wp.int64):
    """Run `events` DIV-APU events from the stored step: a skipped one first (A_STEP = -1), then
    lengths on the even steps, the sweep on steps 2 and 6."""
    m = machine(ms)
    n = events
    s = m.apu[env, A_STEP]
    if s < wp.int64(0):
        s = wp.int64(0)
        n = n - wp.int64(1)
    if n > wp.int64(0):
        if m.apu[env, A_SWEEP_ON] != wp.int64(0):   # (off: no iteration before a trigger reloads the timer)
            sweep_iterations(ms, env, (s + n + wp.int64(1)) // wp.int64(4) - (s + wp.int64(1)) // wp.int64(4))
        length_clocks = (n + wp.int64(1) - (s & wp.int64(1))) // wp.int64(2)
        for ch in range(4):
            left = m.apu[env, A_LEN1 + ch]
            if (int(m.io[env, nrx4_of(ch)]) & 0x40) != 0 and left > wp.int64(0):
                left = wp.max(left - length_clocks, wp.int64(0))
                m.apu[env, A_LEN1 + ch] = left
                if left == wp.int64(0):
                    channel_off(ms, env, ch)
        s = (s + n) % wp.int64(8)
    m.apu[env, A_STEP] = s


@wp.func(inline=False)   # cold: one copy for every caller (docs/gpu.md, Kernel footprint)
def apu_sync(ms: MachinePtr, env: int, t: wp.int64):
    """Bring the frame sequencer up to t: the DIV-APU events in (last sync, t], counted from the
    system counter (an event where (t - DIV base) is a multiple of 8192). Powered off, none."""
    m = machine(ms)
    last = m.apu[env, A_SYNC_T]
    if t > last:
        m.apu[env, A_SYNC_T] = t
        if (int(m.io[env, NR52]) & 0x80) != 0:
            base = m.r64[env, T_DIV_BASE]
            if last < base:
                last = base     # (a state saved before its DIV write: nothing to count before it)
            # (falling edges of counter bit 12 every 8192 T: a shift is the floor division)
            events = ((t - base) >> wp.int64(13)) - ((last - base) >> wp.int64(13))
            if events > wp.int64(0):
                frame_sequencer(ms, env, events)


@wp.func(inline=False)
def apu_div_write(ms: MachinePtr, env: int, t: wp.int64):
    """DIV is written (or STOP resets it) at t, before the counter resets: if bit 12 is set, its
    fall is a DIV-APU event (Pan Docs, DIV-APU)."""
    m = machine(ms)
    apu_sync(ms, env, t)
    if (int(m.io[env, NR52]) & 0x80) != 0 and (((t - m.r64[env, T_DIV_BASE]) >> wp.int64(12)) & wp.int64(1)) != 0:
        frame_sequencer(ms, env, wp.int64(1))


@wp.func
def next_event_skips_lengths(ms: MachinePtr, env: int) -> bool:
    """Whether the next DIV-APU event leaves the length timers alone (an odd step, or skipped)."""
    m = machine(ms)
    s = m.apu[env, A_STEP]
    return s < wp.int64(0) or (s & wp.int64(1)) != wp.int64(0)


@wp.func
def wave_period(ms: MachinePtr, env: int) -> wp.int64:
    """T-cycles between CH3's wave RAM reads: 2 * (2048 - period) (Pan Docs, NR33)."""
    m = machine(ms)
    period = int(m.io[env, 0x1D]) | ((int(m.io[env, 0x1E]) & 7) << 8)
    return wp.int64(2 * (2048 - period))


@wp.func
def wave_retime(ms: MachinePtr, env: int, t: wp.int64):
    """NR33/NR34 written at t while CH3 plays: its next read keeps the old spacing, the reads after
    it take the new period (Pan Docs, NR33 "Delay")."""
    m = machine(ms)
    at = m.apu[env, A_WAVE_T]
    step = wp.max(m.apu[env, A_WAVE_PERIOD], wp.int64(2))
    if at <= t:
        k = (t - at) // step + wp.int64(1)
        m.apu[env, A_WAVE_T] = at + k * step
        m.apu[env, A_WAVE_POS] = (m.apu[env, A_WAVE_POS] + k) & wp.int64(31)
    m.apu[env, A_WAVE_PERIOD] = wave_period(ms, env)


@wp.func
def wave_index(ms: MachinePtr, env: int, t: wp.int64) -> int:
    """The wave RAM byte CH3 reads at t, or -1 if it reads none then."""
    m = machine(ms)
    at = m.apu[env, A_WAVE_T]
    step = wp.max(m.apu[env, A_WAVE_PERIOD], wp.int64(2))
    r = int(-1)
    if t >= at and (t - at) % step == wp.int64(0):
        r = int(((m.apu[env, A_WAVE_POS] + (t - at) // step) & wp.int64(31)) >> wp.int64(1))
    return r


@wp.func
def wave_corruption(ms: MachinePtr, env: int, t: wp.int64):
    """A DMG retrigger of CH3 at t while it plays, 2 T-cycles before one of its wave RAM reads,
    corrupts wave RAM (Pan Docs, Audio Details / gbdev wiki, obscure behaviour; the DMG timings of
    docboy-test-suite's ch3_corrupt_wave tests, and gambatte): the byte that read fetches, k,
    is copied over byte 0 if k < 4, else the 4-byte-aligned block holding k over bytes 0-3."""
    m = machine(ms)
    k = wave_index(ms, env, t + wp.int64(2))
    if k >= 0 and k < 4:
        m.io[env, 0x30] = m.io[env, 0x30 + k]
    elif k >= 4:
        b = k & 0x0C
        for i in range(4):
            m.io[env, 0x30 + i] = m.io[env, 0x30 + b + i]


@wp.func
def trigger(ms: MachinePtr, env: int, ch: int, t: wp.int64):
    """NRx4 bit 7 (Pan Docs, Triggering): on if the DAC is; CH1 sweep reload; CH3 restarts its
    wave RAM reads from sample 1."""
    m = machine(ms)
    if ch == 2 and channel_is_on(ms, env, 2):
        wave_corruption(ms, env, t)
    if dac_on(ms, env, ch):
        m.io[env, NR52] = wp.uint8(int(m.io[env, NR52]) | (1 << ch))
    if ch == 0:
        nr10 = int(m.io[env, 0x10])
        m.apu[env, A_SHADOW] = wp.int64(int(m.io[env, 0x13]) | ((int(m.io[env, 0x14]) & 7) << 8))
        pace = (nr10 >> 4) & 7
        m.apu[env, A_SWEEP_TIMER] = wp.int64(wp.where(pace == 0, 8, pace))
        m.apu[env, A_SWEEP_ON] = wp.int64(wp.where((nr10 & 0x77) != 0, 1, 0))
        m.apu[env, A_NEG_USED] = wp.int64(0)
        if (nr10 & 7) != 0 and sweep_calc(ms, env) > 2047:
            channel_off(ms, env, 0)
    if ch == 2:
        step = wave_period(ms, env)
        m.apu[env, A_WAVE_PERIOD] = step
        m.apu[env, A_WAVE_T] = t + wp.int64(6) + step
        m.apu[env, A_WAVE_POS] = wp.int64(1)


@wp.func
def nrx4_write(ms: MachinePtr, env: int, ch: int, value: int, t: wp.int64):
    """NRx4: length enable (with the extra length clock), trigger."""
    m = machine(ms)
    reg = nrx4_of(ch)
    was_enabled = (int(m.io[env, reg]) & 0x40) != 0
    m.io[env, reg] = wp.uint8(value)
    enabled = (value & 0x40) != 0
    fire = (value & 0x80) != 0
    quiet_next = next_event_skips_lengths(ms, env)
    left = m.apu[env, A_LEN1 + ch]
    if quiet_next and enabled and not was_enabled and left > wp.int64(0):
        left = left - wp.int64(1)
        if left == wp.int64(0) and not fire:
            channel_off(ms, env, ch)
    if fire:
        if left == wp.int64(0):
            left = wp.int64(wp.where(ch == 2, 256, 64))
            if enabled and quiet_next:
                left = left - wp.int64(1)
        trigger(ms, env, ch, t)
    elif ch == 2 and channel_is_on(ms, env, 2):
        wave_retime(ms, env, t)
    m.apu[env, A_LEN1 + ch] = left


@wp.func
def length_load(ms: MachinePtr, env: int, reg: int, value: int):
    """NRx1's length: the timer counts 64 - n (CH3, NR31: 256 - n) clocks."""
    m = machine(ms)
    if reg == 0x1B:
        m.apu[env, A_LEN1 + 2] = wp.int64(256 - value)
    else:
        m.apu[env, A_LEN1 + (reg - 0x11) // 5] = wp.int64(64 - (value & 0x3F))


@wp.func
def needs_sync(ms: MachinePtr, env: int, reg: int, value: int, nr52: int) -> bool:
    """Whether a write of `value` to `reg` must first catch the frame sequencer up: only where what
    it did since the last catch-up matters to the write (it clocks lengths and CH1's sweep and turns
    channels off). Not for the DAC, volume, period-low (NR13 only while the sweep may write it
    back), noise and mixer registers, wave RAM while CH3 is off, nor an NRx4 write that leaves its
    length disabled (before and after) where CH1's sweep is off and stays off: the events since
    then clocked nothing of that channel, and the ones run later find it as they would have
    (its length disabled, no sweep). A sound driver writes those most (tests/roms/idiom_timer.asm)."""
    m = machine(ms)
    if reg == 0x12 or reg == 0x17 or reg == 0x1A or reg == 0x21 or reg == 0x18 or reg == 0x1C \
            or reg == 0x1D or reg == 0x22 or reg == 0x24 or reg == 0x25:
        return False
    if reg >= 0x30:
        return (nr52 & 0x04) != 0
    sweep_off = m.apu[env, A_SWEEP_ON] == wp.int64(0)
    if reg == 0x13:
        return not sweep_off
    if reg == 0x14 or reg == 0x19 or reg == 0x1E or reg == 0x23:
        if ((int(m.io[env, reg]) | value) & 0x40) != 0:
            return True
        return reg == 0x14 and not (sweep_off and (int(m.io[env, 0x10]) & 0x77) == 0)
    return True


@wp.func
def quick_write(ms: MachinePtr, env: int, reg: int, value: int) -> bool:
    """The writes a sound driver makes most, powered on, that need no catch-up (needs_sync) and
    touch only their own register, NR52's channel bits and a length or CH1's sweep words: the DAC
    registers, the volume, period-low, noise and mixer registers, a length load (NRx1) while
    that length is disabled, and an NRx4 write of CH1, CH2 or CH4 that leaves its length disabled
    (CH1: with its sweep off and staying off), whose trigger is trigger()'s without the sweep.
    On one env's rows, as the instruction loop's accesses, where the general path's 2-d accesses
    cost ~150 x86 instructions a write on average (idiom_timer, a driver stepped 8.6 times a
    frame: the compiled kernel's count 543.3M -> 519.9M over 300 frames x 16 envs, cachegrind;
    516.0M before the sound unit). False: apu_write's general path."""
    m = machine(ms)
    io = wp.array(ptr=wp.uint64(m.io.ptr) + wp.uint64(env * 128), shape=(128,), dtype=wp.uint8)
    nr52 = int(io[NR52])
    if (nr52 & 0x80) == 0 or reg >= NR52:
        return False
    if reg == 0x12 or reg == 0x17 or reg == 0x21 or reg == 0x1A:       # DACs
        io[reg] = wp.uint8(value)
        if reg == 0x1A:
            if (value & 0x80) == 0:
                io[NR52] = wp.uint8(nr52 & 0xFB)
        elif (value & 0xF8) == 0:
            io[NR52] = wp.uint8(nr52 & ((1 << ((reg - 0x12) // 5)) ^ 0xFF))
        return True
    if reg == 0x18 or reg == 0x1C or reg == 0x22 or reg == 0x24 or reg == 0x25:
        io[reg] = wp.uint8(value)
        return True
    apu = wp.array(ptr=wp.uint64(m.apu.ptr) + wp.uint64(env * NUM_APU * 8), shape=(NUM_APU,), dtype=wp.int64)
    sweep_off = apu[A_SWEEP_ON] == wp.int64(0)
    if reg == 0x13 and sweep_off:
        io[reg] = wp.uint8(value)
        return True
    if reg == 0x11 or reg == 0x16 or reg == 0x20:                       # (not NR31: 256 - n)
        if (int(io[reg + 3]) & 0x40) != 0:
            return False
        apu[A_LEN1 + (reg - 0x11) // 5] = wp.int64(64 - (value & 0x3F))
        io[reg] = wp.uint8(value)
        return True
    if reg == 0x14 or reg == 0x19 or reg == 0x23:
        if ((int(io[reg]) | value) & 0x40) != 0:
            return False
        ch = (reg - 0x14) // 5
        nr10 = int(io[0x10])
        if ch == 0 and not (sweep_off and (nr10 & 0x77) == 0):
            return False
        io[reg] = wp.uint8(value)
        if (value & 0x80) != 0:                                         # trigger()
            if (int(io[reg - 2]) & 0xF8) != 0:
                io[NR52] = wp.uint8(nr52 | (1 << ch))
            if apu[A_LEN1 + ch] == wp.int64(0):
                apu[A_LEN1 + ch] = wp.int64(64)
            if ch == 0:                      # (pace 0: the timer reloads with 8; sweep disabled)
                apu[A_SHADOW] = wp.int64(int(io[0x13]) | ((value & 7) << 8))
                apu[A_SWEEP_TIMER] = wp.int64(8)
                apu[A_NEG_USED] = wp.int64(0)
        return True
    return False


@wp.func(inline=False)
def apu_write(ms: MachinePtr, env: int, reg: int, value: int, t: wp.int64):
    """A write to $FF10-$FF3F at t (the module docstring has the rules)."""
    if quick_write(ms, env, reg, value):
        return
    m = machine(ms)
    nr52 = int(m.io[env, NR52])
    if needs_sync(ms, env, reg, value, nr52):
        apu_sync(ms, env, t)
        nr52 = int(m.io[env, NR52])
    powered = (nr52 & 0x80) != 0
    if reg >= 0x30:
        if (nr52 & 0x04) == 0:
            m.io[env, reg] = wp.uint8(value)
        else:
            k = wave_index(ms, env, t)
            if k >= 0:
                m.io[env, 0x30 + k] = wp.uint8(value)
    elif reg == NR52:
        if (value & 0x80) == 0:
            if powered:
                for r in range(0x10, 0x26):
                    m.io[env, r] = wp.uint8(0)
                m.apu[env, A_SWEEP_ON] = wp.int64(0)    # (the sweep unit is reset too: no iteration
                m.apu[env, A_NEG_USED] = wp.int64(0)    #  writes a period back before a trigger)
            m.io[env, NR52] = wp.uint8(0)
        elif not powered:
            m.io[env, NR52] = wp.uint8(0x80)
            counter = t - m.r64[env, T_DIV_BASE]
            m.apu[env, A_STEP] = wp.int64(wp.where(((counter >> wp.int64(12)) & wp.int64(1)) != wp.int64(0), -1, 0))
    elif reg == 0x11 or reg == 0x16 or reg == 0x1B or reg == 0x20:
        length_load(ms, env, reg, value)       # (a DMG takes the length even powered off)
        if powered:
            m.io[env, reg] = wp.uint8(value)
    elif powered:
        if reg == 0x10 and (value & 0x08) == 0 and (int(m.io[env, 0x10]) & 0x08) != 0 \
                and m.apu[env, A_NEG_USED] != wp.int64(0):
            channel_off(ms, env, 0)            # direction cleared after a subtraction
        if reg == 0x14 or reg == 0x19 or reg == 0x1E or reg == 0x23:
            nrx4_write(ms, env, (reg - 0x14) // 5, value, t)
        else:
            m.io[env, reg] = wp.uint8(value)
            if reg == 0x12 or reg == 0x17 or reg == 0x1A or reg == 0x21:
                ch = (reg - 0x12) // 5
                if reg == 0x1A:
                    ch = 2
                if not dac_on(ms, env, ch):
                    channel_off(ms, env, ch)
            elif reg == 0x1D and channel_is_on(ms, env, 2):
                wave_retime(ms, env, t)


@wp.func(inline=False)
def apu_read(ms: MachinePtr, env: int, reg: int, t: wp.int64) -> int:
    """A read of $FF10-$FF3F at t, before the read mask: NR52 after the catch-up; wave RAM while
    CH3 plays only in its read's M-cycle, else $FF."""
    m = machine(ms)
    apu_sync(ms, env, t)
    if reg >= 0x30 and (int(m.io[env, NR52]) & 0x04) != 0:
        k = wave_index(ms, env, t)
        if k < 0:
            return 0xFF
        return int(m.io[env, 0x30 + k])
    return int(m.io[env, reg])
