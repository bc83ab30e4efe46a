"""The SM83 CPU, decoded by opcode bit fields (x = op>>6, y = op>>3&7, z = op&7, p = y>>1,
q = y&1), so one path serves a whole family (LD r,r'; ALU A,r; INC r; ...).

Timing is by construction: every bus access happens at the current M-cycle's start time
`t` and then `t += 4`; internal M-cycles just add 4. An instruction's duration is therefore
the number of M-cycles its microcode walks through (checked against opcodes.py and the
SingleStepTests cases). Registers live in a ``Cpu`` struct value (locals) for a whole
launch; only memory and peripherals go through global arrays.

Documented behaviours:
- Illegal opcodes D3 DB DD E3 E4 EB EC ED F4 FC FD lock the CPU: ``locked`` = 1, PC is left
  at the illegal opcode, no further instruction or interrupt runs until reset (hardware hangs).
- HALT: with IE&IF = 0 the CPU sleeps until IE&IF != 0 (even with IME = 0; then it resumes
  without dispatch); leaving HALT costs one M-cycle. HALT with IME = 0 and IE&IF != 0 does not
  halt and triggers the HALT bug: the next opcode fetch does not increment PC (its byte is
  read twice). HALT with IME = 1 and an interrupt pending dispatches at once.
- STOP (machine bus): a 2-byte instruction (the byte after $10 is skipped); resets DIV and
  enters a low-power state that a joypad press (a selected P1 line falling) ends. If a
  selected line is already low it behaves as a 2-byte NOP. PPU/timer keep running
  (simplification). On the flat conformance bus STOP and HALT follow the SingleStepTests
  convention: 1 byte, 3 M-cycles, no sleep.
- EI takes effect after the following instruction (EI;DI never enables); RETI enables at once.
"""
import warp as wp

from .bus import bus_read, bus_write
from .interrupts import pending_irqs
from .joypad import joypad_lines
from .state import T_DIV_BASE, Machine
from .timer import div_write

ZF = wp.constant(0x80)
NF = wp.constant(0x40)
HF = wp.constant(0x20)
CF = wp.constant(0x10)


@wp.struct
class Cpu:
    a: int
    f: int
    b: int
    c: int
    d: int
    e: int
    h: int
    l: int
    sp: int
    pc: int
    ime: int
    ei_pending: int
    halted: int
    locked: int
    stopped: int
    halt_bug: int
    t: wp.int64


@wp.func
def fl(cond: bool, bit: int) -> int:
    if cond:
        return bit
    return 0


@wp.func
def get_r8(c: Cpu, i: int) -> int:
    """B C D E H L - A for i = 0..7 (6, (HL), is handled by the caller)."""
    v = c.a
    if i == 0:
        v = c.b
    elif i == 1:
        v = c.c
    elif i == 2:
        v = c.d
    elif i == 3:
        v = c.e
    elif i == 4:
        v = c.h
    elif i == 5:
        v = c.l
    return v


@wp.func
def set_r8(c: Cpu, i: int, v: int) -> Cpu:
    if i == 0:
        c.b = v
    elif i == 1:
        c.c = v
    elif i == 2:
        c.d = v
    elif i == 3:
        c.e = v
    elif i == 4:
        c.h = v
    elif i == 5:
        c.l = v
    else:
        c.a = v
    return c


@wp.func
def hl(c: Cpu) -> int:
    return (c.h << 8) | c.l


@wp.func
def set_hl(c: Cpu, v: int) -> Cpu:
    c.h = (v >> 8) & 0xFF
    c.l = v & 0xFF
    return c


@wp.func
def get_rp(c: Cpu, p: int) -> int:
    """BC DE HL SP."""
    v = c.sp
    if p == 0:
        v = (c.b << 8) | c.c
    elif p == 1:
        v = (c.d << 8) | c.e
    elif p == 2:
        v = (c.h << 8) | c.l
    return v


@wp.func
def set_rp(c: Cpu, p: int, v: int) -> Cpu:
    v = v & 0xFFFF
    if p == 0:
        c.b = v >> 8
        c.c = v & 0xFF
    elif p == 1:
        c.d = v >> 8
        c.e = v & 0xFF
    elif p == 2:
        c.h = v >> 8
        c.l = v & 0xFF
    else:
        c.sp = v
    return c


@wp.func
def cond(c: Cpu, cc: int) -> bool:
    """NZ Z NC C."""
    r = False
    if cc == 0:
        r = (c.f & ZF) == 0
    elif cc == 1:
        r = (c.f & ZF) != 0
    elif cc == 2:
        r = (c.f & CF) == 0
    else:
        r = (c.f & CF) != 0
    return r


@wp.func
def alu(c: Cpu, op: int, v: int) -> Cpu:
    """ADD ADC SUB SBC AND XOR OR CP (op 0..7) of A with v."""
    a = c.a
    cy = (c.f >> 4) & 1
    r = 0
    f = 0
    if op == 0:
        r = a + v
        f = fl((a & 15) + (v & 15) > 15, HF) | fl(r > 255, CF)
    elif op == 1:
        r = a + v + cy
        f = fl((a & 15) + (v & 15) + cy > 15, HF) | fl(r > 255, CF)
    elif op == 2 or op == 7:
        r = a - v
        f = NF | fl((a & 15) < (v & 15), HF) | fl(r < 0, CF)
    elif op == 3:
        r = a - v - cy
        f = NF | fl((a & 15) - (v & 15) - cy < 0, HF) | fl(r < 0, CF)
    elif op == 4:
        r = a & v
        f = HF
    elif op == 5:
        r = a ^ v
    else:
        r = a | v
    r = r & 0xFF
    c.f = f | fl(r == 0, ZF)
    if op != 7:
        c.a = r
    return c


@wp.func
def rot(f: int, y: int, v: int) -> int:
    """RLC RRC RL RR SLA SRA SWAP SRL (y 0..7); returns result | flags << 8."""
    cy = (f >> 4) & 1
    r = 0
    co = 0
    if y == 0:
        r = ((v << 1) | (v >> 7)) & 0xFF
        co = v >> 7
    elif y == 1:
        r = ((v >> 1) | (v << 7)) & 0xFF
        co = v & 1
    elif y == 2:
        r = ((v << 1) | cy) & 0xFF
        co = v >> 7
    elif y == 3:
        r = (v >> 1) | (cy << 7)
        co = v & 1
    elif y == 4:
        r = (v << 1) & 0xFF
        co = v >> 7
    elif y == 5:
        r = (v >> 1) | (v & 0x80)
        co = v & 1
    elif y == 6:
        r = ((v & 15) << 4) | (v >> 4)
    else:
        r = v >> 1
        co = v & 1
    return r | ((fl(r == 0, ZF) | (co << 4)) << 8)


@wp.func
def sext8(v: int) -> int:
    r = v
    if v >= 128:
        r = v - 256
    return r


@wp.func
def add_sp_e8(c: Cpu, e: int) -> int:
    """SP + signed e8 with flags (Z=0 N=0, H and C from the unsigned low-byte add); returns
    result | flags << 16."""
    f = fl((c.sp & 15) + (e & 15) > 15, HF) | fl((c.sp & 0xFF) + e > 0xFF, CF)
    return ((c.sp + sext8(e)) & 0xFFFF) | (f << 16)


@wp.func
def exec_cb(m: Machine, env: int, c: Cpu) -> Cpu:
    t = c.t
    op = bus_read(m, env, c.pc, t)
    c.pc = (c.pc + 1) & 0xFFFF
    t = t + wp.int64(4)
    x = op >> 6
    y = (op >> 3) & 7
    z = op & 7
    v = 0
    if z == 6:
        v = bus_read(m, env, hl(c), t)
        t = t + wp.int64(4)
    else:
        v = get_r8(c, z)
    r = v
    if x == 0:
        res = rot(c.f, y, v)
        r = res & 0xFF
        c.f = res >> 8
    elif x == 1:
        c.f = fl(((v >> y) & 1) == 0, ZF) | HF | (c.f & CF)
    elif x == 2:
        r = v & ((1 << y) ^ 0xFF)
    else:
        r = v | (1 << y)
    if x != 1:
        if z == 6:
            bus_write(m, env, hl(c), r, t)
            t = t + wp.int64(4)
        else:
            c = set_r8(c, z, r)
    c.t = t
    return c


@wp.func
def execute(m: Machine, env: int, c: Cpu, op: int) -> Cpu:
    """One non-CB instruction whose opcode was fetched in the previous M-cycle."""
    t = c.t
    x = op >> 6
    y = (op >> 3) & 7
    z = op & 7
    p = y >> 1
    q = y & 1
    if x == 1:
        if op == 0x76:  # HALT
            if m.flat_mode != 0:
                t = t + wp.int64(8)
            else:
                pend = pending_irqs(m, env)
                if pend == 0:
                    c.halted = 1
                elif c.ime == 0:
                    c.halt_bug = 1
        else:  # LD r[y], r[z]
            v = 0
            if z == 6:
                v = bus_read(m, env, hl(c), t)
                t = t + wp.int64(4)
            else:
                v = get_r8(c, z)
            if y == 6:
                bus_write(m, env, hl(c), v, t)
                t = t + wp.int64(4)
            else:
                c = set_r8(c, y, v)
    elif x == 2:  # ALU A, r[z]
        v = 0
        if z == 6:
            v = bus_read(m, env, hl(c), t)
            t = t + wp.int64(4)
        else:
            v = get_r8(c, z)
        c = alu(c, y, v)
    elif x == 0:
        if z == 0:
            if y == 1:  # LD (nn), SP
                lo = bus_read(m, env, c.pc, t)
                t = t + wp.int64(4)
                hi = bus_read(m, env, (c.pc + 1) & 0xFFFF, t)
                t = t + wp.int64(4)
                c.pc = (c.pc + 2) & 0xFFFF
                addr = (hi << 8) | lo
                bus_write(m, env, addr, c.sp & 0xFF, t)
                t = t + wp.int64(4)
                bus_write(m, env, (addr + 1) & 0xFFFF, c.sp >> 8, t)
                t = t + wp.int64(4)
            elif y == 2:  # STOP
                if m.flat_mode != 0:
                    t = t + wp.int64(8)
                else:
                    c.pc = (c.pc + 1) & 0xFFFF
                    if joypad_lines(m, env) == 0xF:
                        div_write(m, env, t)
                        c.stopped = 1
            elif y >= 3:  # JR d / JR cc, d
                d = bus_read(m, env, c.pc, t)
                t = t + wp.int64(4)
                c.pc = (c.pc + 1) & 0xFFFF
                if y == 3 or cond(c, y - 4):
                    c.pc = (c.pc + sext8(d)) & 0xFFFF
                    t = t + wp.int64(4)
        elif z == 1:
            if q == 0:  # LD rp, nn
                lo = bus_read(m, env, c.pc, t)
                t = t + wp.int64(4)
                hi = bus_read(m, env, (c.pc + 1) & 0xFFFF, t)
                t = t + wp.int64(4)
                c.pc = (c.pc + 2) & 0xFFFF
                c = set_rp(c, p, (hi << 8) | lo)
            else:  # ADD HL, rp
                a = hl(c)
                v = get_rp(c, p)
                r = a + v
                c.f = (c.f & ZF) | fl((a & 0xFFF) + (v & 0xFFF) > 0xFFF, HF) | fl(r > 0xFFFF, CF)
                c = set_hl(c, r & 0xFFFF)
                t = t + wp.int64(4)
        elif z == 2:  # LD (BC/DE/HL+/HL-), A and back
            addr = hl(c)
            if p == 0:
                addr = get_rp(c, 0)
            elif p == 1:
                addr = get_rp(c, 1)
            if q == 0:
                bus_write(m, env, addr, c.a, t)
            else:
                c.a = bus_read(m, env, addr, t)
            t = t + wp.int64(4)
            if p == 2:
                c = set_hl(c, (addr + 1) & 0xFFFF)
            elif p == 3:
                c = set_hl(c, (addr - 1) & 0xFFFF)
        elif z == 3:  # INC rp / DEC rp
            if q == 0:
                c = set_rp(c, p, get_rp(c, p) + 1)
            else:
                c = set_rp(c, p, get_rp(c, p) - 1)
            t = t + wp.int64(4)
        elif z == 4 or z == 5:  # INC r / DEC r
            v = 0
            if y == 6:
                v = bus_read(m, env, hl(c), t)
                t = t + wp.int64(4)
            else:
                v = get_r8(c, y)
            r = 0
            if z == 4:
                r = (v + 1) & 0xFF
                c.f = (c.f & CF) | fl(r == 0, ZF) | fl((v & 15) == 15, HF)
            else:
                r = (v - 1) & 0xFF
                c.f = (c.f & CF) | fl(r == 0, ZF) | NF | fl((v & 15) == 0, HF)
            if y == 6:
                bus_write(m, env, hl(c), r, t)
                t = t + wp.int64(4)
            else:
                c = set_r8(c, y, r)
        elif z == 6:  # LD r, n
            n = bus_read(m, env, c.pc, t)
            t = t + wp.int64(4)
            c.pc = (c.pc + 1) & 0xFFFF
            if y == 6:
                bus_write(m, env, hl(c), n, t)
                t = t + wp.int64(4)
            else:
                c = set_r8(c, y, n)
        else:  # z == 7: RLCA RRCA RLA RRA DAA CPL SCF CCF
            if y < 4:
                res = rot(c.f, y, c.a)
                c.a = res & 0xFF
                c.f = (res >> 8) & CF
            elif y == 4:  # DAA
                a = c.a
                f = c.f
                cy = f & CF
                if (f & NF) == 0:
                    if cy != 0 or a > 0x99:
                        a = a + 0x60
                        cy = CF
                    if (f & HF) != 0 or (a & 15) > 9:
                        a = a + 6
                else:
                    if cy != 0:
                        a = a - 0x60
                    if (f & HF) != 0:
                        a = a - 6
                a = a & 0xFF
                c.a = a
                c.f = fl(a == 0, ZF) | (f & NF) | cy
            elif y == 5:  # CPL
                c.a = c.a ^ 0xFF
                c.f = c.f | NF | HF
            elif y == 6:  # SCF
                c.f = (c.f & ZF) | CF
            else:  # CCF
                c.f = (c.f & ZF) | ((c.f & CF) ^ CF)
    else:  # x == 3
        if z == 0:
            if y < 4:  # RET cc
                t = t + wp.int64(4)
                if cond(c, y):
                    lo = bus_read(m, env, c.sp, t)
                    t = t + wp.int64(4)
                    hi = bus_read(m, env, (c.sp + 1) & 0xFFFF, t)
                    t = t + wp.int64(4)
                    c.sp = (c.sp + 2) & 0xFFFF
                    c.pc = (hi << 8) | lo
                    t = t + wp.int64(4)
            else:
                n = bus_read(m, env, c.pc, t)
                t = t + wp.int64(4)
                c.pc = (c.pc + 1) & 0xFFFF
                if y == 4:  # LDH (n), A
                    bus_write(m, env, 0xFF00 | n, c.a, t)
                    t = t + wp.int64(4)
                elif y == 6:  # LDH A, (n)
                    c.a = bus_read(m, env, 0xFF00 | n, t)
                    t = t + wp.int64(4)
                else:
                    res = add_sp_e8(c, n)
                    c.f = res >> 16
                    if y == 5:  # ADD SP, e8
                        c.sp = res & 0xFFFF
                        t = t + wp.int64(8)
                    else:  # LD HL, SP+e8
                        c = set_hl(c, res & 0xFFFF)
                        t = t + wp.int64(4)
        elif z == 1:
            if q == 0:  # POP rp2
                lo = bus_read(m, env, c.sp, t)
                t = t + wp.int64(4)
                hi = bus_read(m, env, (c.sp + 1) & 0xFFFF, t)
                t = t + wp.int64(4)
                c.sp = (c.sp + 2) & 0xFFFF
                if p == 3:
                    c.a = hi
                    c.f = lo & 0xF0
                else:
                    c = set_rp(c, p, (hi << 8) | lo)
            elif p <= 1:  # RET / RETI
                lo = bus_read(m, env, c.sp, t)
                t = t + wp.int64(4)
                hi = bus_read(m, env, (c.sp + 1) & 0xFFFF, t)
                t = t + wp.int64(4)
                c.sp = (c.sp + 2) & 0xFFFF
                c.pc = (hi << 8) | lo
                t = t + wp.int64(4)
                if p == 1:
                    c.ime = 1
            elif p == 2:  # JP HL
                c.pc = hl(c)
            else:  # LD SP, HL
                c.sp = hl(c)
                t = t + wp.int64(4)
        elif z == 2:
            if y == 4 or y == 6:  # LD (C), A / LD A, (C)
                if y == 4:
                    bus_write(m, env, 0xFF00 | c.c, c.a, t)
                else:
                    c.a = bus_read(m, env, 0xFF00 | c.c, t)
                t = t + wp.int64(4)
            else:  # JP cc, nn / LD (nn), A / LD A, (nn)
                lo = bus_read(m, env, c.pc, t)
                t = t + wp.int64(4)
                hi = bus_read(m, env, (c.pc + 1) & 0xFFFF, t)
                t = t + wp.int64(4)
                c.pc = (c.pc + 2) & 0xFFFF
                addr = (hi << 8) | lo
                if y < 4:
                    if cond(c, y):
                        c.pc = addr
                        t = t + wp.int64(4)
                elif y == 5:
                    bus_write(m, env, addr, c.a, t)
                    t = t + wp.int64(4)
                else:
                    c.a = bus_read(m, env, addr, t)
                    t = t + wp.int64(4)
        elif z == 3:
            if y == 0:  # JP nn
                lo = bus_read(m, env, c.pc, t)
                t = t + wp.int64(4)
                hi = bus_read(m, env, (c.pc + 1) & 0xFFFF, t)
                t = t + wp.int64(4)
                c.pc = (hi << 8) | lo
                t = t + wp.int64(4)
            elif y == 6:  # DI
                c.ime = 0
                c.ei_pending = 0
            elif y == 7:  # EI
                c.ei_pending = 1
            else:  # D3 DB E3 EB (y == 1, CB, never reaches here)
                c.locked = 1
                c.pc = (c.pc - 1) & 0xFFFF
        elif z == 4 or (z == 5 and q == 1):
            if (z == 4 and y >= 4) or (z == 5 and p != 0):  # E4 EC F4 FC DD ED FD
                c.locked = 1
                c.pc = (c.pc - 1) & 0xFFFF
            else:  # CALL cc, nn / CALL nn
                lo = bus_read(m, env, c.pc, t)
                t = t + wp.int64(4)
                hi = bus_read(m, env, (c.pc + 1) & 0xFFFF, t)
                t = t + wp.int64(4)
                c.pc = (c.pc + 2) & 0xFFFF
                if z == 5 or cond(c, y):
                    t = t + wp.int64(4)
                    sp = (c.sp - 1) & 0xFFFF
                    bus_write(m, env, sp, c.pc >> 8, t)
                    t = t + wp.int64(4)
                    sp = (sp - 1) & 0xFFFF
                    bus_write(m, env, sp, c.pc & 0xFF, t)
                    t = t + wp.int64(4)
                    c.sp = sp
                    c.pc = (hi << 8) | lo
        elif z == 5:  # PUSH rp2
            v = get_rp(c, p)
            if p == 3:
                v = (c.a << 8) | c.f
            t = t + wp.int64(4)
            sp = (c.sp - 1) & 0xFFFF
            bus_write(m, env, sp, v >> 8, t)
            t = t + wp.int64(4)
            sp = (sp - 1) & 0xFFFF
            bus_write(m, env, sp, v & 0xFF, t)
            t = t + wp.int64(4)
            c.sp = sp
        elif z == 6:  # ALU A, n
            n = bus_read(m, env, c.pc, t)
            t = t + wp.int64(4)
            c.pc = (c.pc + 1) & 0xFFFF
            c = alu(c, y, n)
        else:  # RST y*8
            t = t + wp.int64(4)
            sp = (c.sp - 1) & 0xFFFF
            bus_write(m, env, sp, c.pc >> 8, t)
            t = t + wp.int64(4)
            sp = (sp - 1) & 0xFFFF
            bus_write(m, env, sp, c.pc & 0xFF, t)
            t = t + wp.int64(4)
            c.sp = sp
            c.pc = y * 8
    c.t = t
    return c


@wp.func
def cpu_step(m: Machine, env: int, c: Cpu) -> Cpu:
    """Fetch and execute one instruction; applies EI's one-instruction delay."""
    was_pending = c.ei_pending
    op = bus_read(m, env, c.pc, c.t)
    if c.halt_bug != 0:
        c.halt_bug = 0          # HALT bug: this byte will be fetched again
    else:
        c.pc = (c.pc + 1) & 0xFFFF
    c.t = c.t + wp.int64(4)
    if op == 0xCB:
        c = exec_cb(m, env, c)
    else:
        c = execute(m, env, c, op)
    if was_pending != 0 and c.ei_pending != 0:
        c.ime = 1
        c.ei_pending = 0
    return c


@wp.func
def service_interrupts(m: Machine, env: int, c: Cpu) -> Cpu:
    """Wake from HALT on IE&IF; with IME dispatch the highest-priority request in 5 M-cycles:
    2 idle, push PC high, push PC low, jump. The request is chosen after the high push, so a
    push that overwrites IE ($FFFF) can cancel it (PC := $0000)."""
    pend = pending_irqs(m, env)
    if pend != 0:
        if c.halted != 0:
            c.halted = 0
            c.t = c.t + wp.int64(4)
        if c.ime != 0:
            c.ime = 0
            c.ei_pending = 0
            t = c.t + wp.int64(8)
            sp = (c.sp - 1) & 0xFFFF
            bus_write(m, env, sp, c.pc >> 8, t)
            t = t + wp.int64(4)
            pend = pending_irqs(m, env)
            sp = (sp - 1) & 0xFFFF
            bus_write(m, env, sp, c.pc & 0xFF, t)
            t = t + wp.int64(4)
            c.sp = sp
            if pend == 0:
                c.pc = 0
            else:
                bit = int(0)
                while ((pend >> bit) & 1) == 0:
                    bit = bit + 1
                m.io[env, 0x0F] = wp.uint8(int(m.io[env, 0x0F]) & ((1 << bit) ^ 0xFF))
                c.pc = 0x40 + 8 * bit
            c.t = t + wp.int64(4)
    return c
