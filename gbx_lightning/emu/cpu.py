"""The SM83 CPU. Each opcode is executed by the branch of its group (``OPCODE_GROUPS``: LD r,r';
ALU A,r; INC r; ...), which reads the opcode's bit fields (y = op>>3&7, z = op&7, p = y>>1,
q = y&1) for its registers and variant, so one path serves a whole family.

Timing is by construction: every bus access happens at the current M-cycle's start time
`t` and then `t += 4`; internal M-cycles just add 4. An instruction's duration is therefore
the number of M-cycles its microcode walks through (checked against opcodes.py and the
SingleStepTests cases). PC and the clock live in a ``Cpu`` struct value and the STOP state
in a local for a whole launch; the register file (B C D E H L F A, SP, IME and the other CPU
flags) stays in the env's r32 words, addressed through a local 1-d view (``rg``).

Layout for speed (the measurements: docs/performance.md): the fetch/decode/execute loop is
written out in the kernel body, and its memory accesses are four inlined helpers in bus.py
(read8 / write8 for opcodes, operands and the stack; read_data8 / write_data8 for data, in
the CPU shape read_data8_cpu / write_data8_cpu, which decide WRAM and echo RAM first) that
answer the common cases on plain env rows and locals - ROM through the MBC's bank offsets,
WRAM, HRAM, VRAM outside mode 3, the I/O registers games poll (P1, LY, DIV, STAT) - and
otherwise call bus_read / bus_write out of line, with the machine's address (MachinePtr). A
struct passed into an inlined function that reaches an out-of-line call is copied whole on
every access, hence the rows and scalars. No read ends the run; a write ends it only if it
can change what the scheduler decided (an interrupt that may now be taken, the next event,
the frame's end, the MBC banks or the DMA window the loop caches), by lowering the run
limit to END_RUN, which a Warp function returns rather than assigns. Per instruction the
loop does only the fetch (from ROM first), one jump on the opcode's group and the run-limit
test: the EI delay and the HALT bug are handled by the scheduler around the run (see
machine_kernel), and OAM DMA ends a run so the fast-path flag is fixed within it. Polling
loops are skipped while their outcome cannot change (idle.py).

Two kernels from this one source (``_make_machine_kernel``, with ``wp.static(staged)`` switches
that Warp resolves at codegen): ``machine_kernel``, the shape above, which the CPU device runs,
and ``machine_kernel_staged``, the CUDA shape, which CUDA devices run (``kernel_for``), each in
its own Warp module. The CUDA shape gives up some CPU speed for fewer register spills on the GPU
(docs/gpu.md, Kernel footprint): the operand bytes and the stack pops of POP/RET are read at two
places right after the fetch (OPERAND_BYTES), the data byte of LD (HL) / LDH / INC (HL) ... is
read at one place before the group's branch and written at one after it (ACCESS, the data
stage), the values the branches update (run limit, fast-path flag, 16-bit result, STOP) are
fields of ``CpuStaged`` (a plain local assigned in a branch gets a select at every level of the
group chain), and rot/alu return once per case. Same M-cycles, same accesses, same state
(tests/test_gpu_shape.py runs the CUDA shape on the CPU with GBX_EMU_STAGED=1).

Documented behaviours:
- Illegal opcodes D3 DB DD E3 E4 EB EC ED F4 FC FD lock the CPU: ``locked`` = 1, PC is left
  at the illegal opcode, no further instruction or interrupt runs until reset (hardware hangs).
- HALT: with IE&IF = 0 the CPU sleeps until IE&IF != 0 (even with IME = 0; then it resumes
  without dispatch); leaving HALT costs one M-cycle, unless the request came 2 T or more
  before the M-cycle boundary it is seen at (the PPU's VBlank, LY=LYC and some mode-0
  requests: a VBlank ends a HALT as promptly as a run of NOPs would; bus.sleep_until). A
  request made by the end of HALT's own M-cycle counts as pending at HALT: with IME = 0 it
  does not halt and triggers the HALT bug (the next opcode fetch does not increment PC, its
  byte is read twice); with IME = 1, or right after EI (Pan Docs, halt bug), it is dispatched
  at once with the HALT's address pushed, so the HALT runs again after the handler
  (tests/roms/irq_timing.asm, tests/roms/ei_halt.asm).
- STOP (machine bus): a 2-byte instruction (the byte after $10 is skipped); resets DIV and
  enters a low-power state that a joypad press (a selected P1 line falling) ends. If a
  selected line is already low it behaves as a 2-byte NOP. PPU/timer keep running
  (simplification). On the flat conformance bus STOP and HALT follow the SingleStepTests
  convention: 1 byte, 3 M-cycles, no sleep.
- EI takes effect after the following instruction (EI;DI never enables); RETI enables at once.
"""
import os

import numpy as np
import warp as wp

# -O3 for this module: faster than the CPU default -O2 at the same compile time
# (docs/performance.md).
wp.set_module_options({"optimization_level": 3})

from .bus import (END_RUN, bus_write, events_sync, load_u8, operand8_cpu, read8, read_data8, read_data8_cpu, sleep_until,
                  stack_read8_cpu, stack_write8_cpu, stop_enter, sync_all, write8, write_data8, write_data8_cpu)
from .dma import dma_sync
from .idle import idle_branch, idle_run_start
from .interrupts import pending_irqs
from .joypad import joypad_lines, set_buttons
from .mbc import REG_ROM0_BASE, REG_ROMX_BASE
from .opcodes import BASE
from .ppu import RENDER_NONE, frame_end, set_render_mode
from .state import (FRAME_CYCLES_T, NEVER, R_A, R_C, R_EI_PENDING, R_F, R_H, R_HALT_BUG, R_HALTED, R_IDLE,
                    R_IME, R_L, R_LOCKED, R_SP, R_STOPPED, T_BOOT_MAPPED, T_COUNT_INSTR, T_COUNT_RUNS,
                    T_DMA_COPY, T_DMA_END, T_FRAME_START, T_NEXT_EVENT, T_NOW, CartSpec, MachinePtr, MachineRef, io_row,
                    machine, machine_ptr, machine_ref, r32_row, r64_row, layout_of, soa_built)

ZF = wp.constant(0x80)
NF = wp.constant(0x40)
HF = wp.constant(0x20)
CF = wp.constant(0x10)
FOUR = wp.constant(wp.int64(4))
FRAME_CYCLES = FRAME_CYCLES_T
# The counter build (GBX_EMU_COUNTERS=1 when this module is imported): the kernel counts the
# instructions it runs and the runs it ends in r64[T_COUNT_INSTR / T_COUNT_RUNS]
# (tools/bench_emu.py --counters). Off, the counting code is not generated at all.
COUNTERS = os.environ.get("GBX_EMU_COUNTERS", "") == "1"
# GBX_EMU_MAX_REGISTERS=N when this module is imported caps machine_kernel at N registers per
# thread on CUDA (Warp's cuda_max_registers; unset: ptxas takes the 255 it wants). A knob to
# measure on a GPU, not a default (docs/gpu.md, Kernel footprint).
MAX_REGISTERS = int(os.environ.get("GBX_EMU_MAX_REGISTERS", "0") or 0)
_KERNEL_OPTIONS = {"cuda_max_registers": MAX_REGISTERS} if MAX_REGISTERS > 0 else {}
# Two machine kernels from one source (_make_machine_kernel): the CPU shape (machine_kernel, in this
# module's Warp module) and the CUDA shape (machine_kernel_staged, in its own Warp module
# STAGED_MODULE, so each target compiles only its own kernel). The CUDA shape reads the operand
# bytes once after the fetch (OPERAND_BYTES), reads and writes the data byte at one place each (the
# data stage, ACCESS), keeps the loop state the group branches update in a struct (CpuStaged) and
# returns once per case from rot/alu: on sm_90 it spills far less (docs/gpu.md, Kernel footprint),
# but on the CPU the same shape cost 10-26% of the instruction loop's speed, so the CPU keeps its
# own. GBX_EMU_STAGED=1 when this module is imported runs the CUDA shape on the CPU device too:
# how it is tested without a GPU (tests/test_gpu_shape.py). GBX_EMU_STAGED=0 runs the CPU shape on
# CUDA too: the shape the first lent GPU measured, as the device check's baseline for the CUDA shape
# (tools/gpu_check.sh, part emu_cpushape) and a fallback should the CUDA shape misbehave on a device.
STAGED_CHOICE = os.environ.get("GBX_EMU_STAGED", "")
if STAGED_CHOICE not in ("", "0", "1"):
    raise ValueError(f"GBX_EMU_STAGED: expected 0, 1 or unset, got {STAGED_CHOICE!r}")
STAGED_ON_CPU = STAGED_CHOICE == "1"
STAGED_ON_CUDA = STAGED_CHOICE != "0"
STAGED_MODULE = __name__ + "_staged"


# Opcode groups: the execute step branches once on OPCODE_GROUPS[op], a chain of compares on
# one value that LLVM turns into a single jump table; the bit-field decode tree it replaced
# spent about a third of a NOP's time in branches. Each ALU operation on a register is its
# own group (no second jump on the operation); of the other families split the same way, only
# PUSH and CALL nn paid (the CPU shape's, below). The table holds bytes: one zero-extending
# load, no index scaling. Measurements, and the variants measured and dropped:
# docs/performance.md.
(G_LD_R_R, G_LD_R_HL, G_LD_HL_R, G_ADD_R, G_ADC_R, G_SUB_R, G_SBC_R, G_AND_R, G_XOR_R, G_OR_R, G_CP_R,
 G_ALU_HL, G_ALU_N, G_INC_DEC_R, G_INC_DEC_HL, G_LD_R_N,
 G_LD_HL_N, G_JR, G_LD_IND_A, G_INC_DEC_RP, G_LD_RP_NN, G_ADD_HL_RP, G_CB, G_LDH_N, G_LDH_C, G_LD_NN_A,
 G_JP, G_CALL_PUSH_RST, G_POP_RET, G_RET_CC, G_ROT_A_MISC, G_SP_E8, G_JP_HL, G_LD_SP_HL, G_DI, G_EI,
 G_NOP, G_HALT, G_STOP, G_LD_NN_SP, G_ILLEGAL) = (wp.constant(i) for i in range(41))


def _opcode_group(op: int) -> int:
    """The execute branch of base opcode `op`, from its bit fields x y z (p = y>>1, q = y&1)."""
    x, y, z = op >> 6, (op >> 3) & 7, op & 7
    p, q = y >> 1, y & 1
    if x == 1:
        if op == 0x76:
            return G_HALT
        return G_LD_R_HL if z == 6 else G_LD_HL_R if y == 6 else G_LD_R_R
    if x == 2:
        if z == 6:
            return G_ALU_HL
        return (G_ADD_R, G_ADC_R, G_SUB_R, G_SBC_R, G_AND_R, G_XOR_R, G_OR_R, G_CP_R)[y]
    if x == 0:
        if z == 0:
            return (G_NOP, G_LD_NN_SP, G_STOP)[y] if y < 3 else G_JR
        if z == 1:
            return G_LD_RP_NN if q == 0 else G_ADD_HL_RP
        if z == 2:
            return G_LD_IND_A
        if z == 3:
            return G_INC_DEC_RP
        if z in (4, 5):
            return G_INC_DEC_HL if y == 6 else G_INC_DEC_R
        if z == 6:
            return G_LD_HL_N if y == 6 else G_LD_R_N
        return G_ROT_A_MISC
    if op == 0xCB:
        return G_CB
    if z == 0:
        return G_RET_CC if y < 4 else G_LDH_N if y in (4, 6) else G_SP_E8
    if z == 1:
        return G_POP_RET if q == 0 or p <= 1 else G_JP_HL if p == 2 else G_LD_SP_HL
    if z == 2:
        return G_LDH_C if y in (4, 6) else G_JP if y < 4 else G_LD_NN_A
    if z == 3:
        return {0: G_JP, 6: G_DI, 7: G_EI}.get(y, G_ILLEGAL)
    if (z == 4 and y >= 4) or (z == 5 and q == 1 and p != 0):
        return G_ILLEGAL
    if z == 6:
        return G_ALU_N
    return G_CALL_PUSH_RST


def _operand_bytes(op: int) -> int:
    """Immediate bytes that follow base opcode `op` and are read in the M-cycles right after
    its fetch: its length - 1 (opcodes.py), except STOP, whose second byte the machine bus skips
    unread (module docstring) and the flat bus does not skip."""
    return 0 if op == 0x10 else BASE[op].length - 1


# The data byte an opcode reads or writes (LD r,(HL), LDH, INC (HL), ...), for the CUDA shape's
# data stage: how its address is formed, and whether it is read (right after the operands) and/or
# written (as the instruction's last M-cycles).
(A_NONE, A_HL, A_RP, A_FF_IMM, A_FF_C, A_NN, A_CB) = (wp.constant(i) for i in range(7))
A_READS = wp.constant(8)          # ACCESS bit 3; bits 4-5: bytes written (LD (nn),SP: 2)


def _data_access(op: int) -> int:
    """ACCESS of base opcode `op`: address mode | A_READS | bytes written << 4."""
    x, y, z = op >> 6, (op >> 3) & 7, op & 7
    if op == 0xCB:
        return A_CB | A_READS | (1 << 4)     # (HL) when the CB opcode's z = 6 (BIT: no write)
    if op == 0x08:
        return A_NN | (2 << 4)               # LD (nn),SP
    if op == 0x76:
        return A_NONE                        # HALT sits in the LD (HL),r block
    if x == 1 and z == 6 or x == 2 and z == 6:
        return A_HL | A_READS                # LD r,(HL); ALU A,(HL)
    if x == 1 and y == 6:
        return A_HL | (1 << 4)               # LD (HL),r
    if x == 0 and y == 6 and z in (4, 5):
        return A_HL | A_READS | (1 << 4)     # INC (HL), DEC (HL)
    if op == 0x36:
        return A_HL | (1 << 4)               # LD (HL),n
    if x == 0 and z == 2:                    # LD (BC)/(DE)/(HL+)/(HL-),A and back
        mode = A_RP if y < 4 else A_HL
        return mode | (A_READS if y & 1 else 1 << 4)
    modes = {0xE0: A_FF_IMM, 0xF0: A_FF_IMM, 0xE2: A_FF_C, 0xF2: A_FF_C, 0xEA: A_NN, 0xFA: A_NN}
    if op in modes:
        return modes[op] | (A_READS if op & 0x10 else 1 << 4)
    return A_NONE


OPCODE_GROUPS = np.array([_opcode_group(op) for op in range(256)], dtype=np.int32)
# The CPU shape's table (the decode table's first 256 bytes) gives PUSH rp2 and CALL nn groups of
# their own, out of CALL/PUSH/RST, so that their branches decode no opcode field and select no
# target; the CUDA shape reads its own 256 bytes (OPCODE_GROUPS) and has no such branches.
G_PUSH = wp.constant(41)
G_CALL = wp.constant(42)
CPU_OPCODE_GROUPS = OPCODE_GROUPS.copy()
CPU_OPCODE_GROUPS[[0xC5, 0xD5, 0xE5, 0xF5]] = G_PUSH
CPU_OPCODE_GROUPS[0xCD] = G_CALL
OPERAND_BYTES = np.array([_operand_bytes(op) for op in range(256)], dtype=np.int32)
ACCESS = np.array([_data_access(op) for op in range(256)], dtype=np.int32)
GROUP_MASK = wp.constant(63)      # the table's second 256 bytes: group | OPERAND_BYTES << 6
TABLE_GROUP_OPS = wp.constant(256)
TABLE_ACCESS = wp.constant(512)   # the third 256 bytes: ACCESS
# the CPU shape's INC r / DEC r, indexed by dec << 8 | v (dec = op & 1): the result (v +- 1) & $FF,
# then 512 bytes further its Z, N and H (C is kept)
TABLE_INC_DEC = wp.constant(768)
INC_DEC_V = np.array([(v + 1 - 2 * d) & 0xFF for d in (0, 1) for v in range(256)], dtype=np.int32)
INC_DEC_F = np.array([(0x80 if (v + 1 - 2 * d) & 0xFF == 0 else 0) | (0x40 * d)
                      | (0x20 if (v ^ (v + 1 - 2 * d)) & 0x10 else 0) for d in (0, 1) for v in range(256)],
                     dtype=np.int32)
_groups_on_device = {}


def opcode_groups_array(device) -> wp.array:
    """The decode table as a Warp byte array on `device` (built once per device): CPU_OPCODE_GROUPS
    (what the CPU shape reads), then OPCODE_GROUPS | OPERAND_BYTES << 6, then ACCESS (the CUDA
    shape's), then INC_DEC_V and INC_DEC_F (the CPU shape's INC r / DEC r)."""
    key = str(device)
    if key not in _groups_on_device:
        table = np.concatenate([CPU_OPCODE_GROUPS, OPCODE_GROUPS | (OPERAND_BYTES << 6), ACCESS,
                                INC_DEC_V, INC_DEC_F]).astype(np.uint8)
        _groups_on_device[key] = wp.array(table, dtype=wp.uint8, device=device)
    return _groups_on_device[key]


@wp.struct
class Cpu:
    """The CPU state kept as a local value for a whole launch (the rest is in r32, see the
    kernel). Every update is an in-place field store (never `c = f(c)` inside a branch) and
    all fields are scalars: Warp's generated code then has no whole-struct selects and no
    vector temporaries."""
    pc: int
    t: wp.int64


@wp.struct
class CpuStaged:
    """Cpu for the CUDA shape, with the instruction loop's values that the group branches
    update. A plain local assigned in a branch gets a select after the branch at every level
    of the group chain (Warp's codegen); on CUDA those selects were most of the kernel's
    register spills, while a field store makes none (docs/gpu.md, Kernel footprint)."""
    pc: int
    t: wp.int64
    limit: wp.int64     # the run's limit (END_RUN: a write or EI/RETI/HALT/STOP ended it)
    fast: bool          # the fast access paths may be taken (False after a run-ending write)
    w16: int            # 16-bit destination of the instruction (BC DE HL SP AF), -1: none
    v16: int            # ... and its value
    wv: int             # the data byte(s) the instruction writes (the data stage)
    writes: int         # ... how many (ACCESS; BIT (HL) and CB on a register clear it)
    stopped: int        # in STOP (r32[R_STOPPED] in memory, this copy during a launch)


@wp.func(inline=True)
def fl(cond: bool, bit: int) -> int:
    if cond:
        return bit
    return 0


@wp.func(inline=True)
def hl(h: int, l: int) -> int:
    return (h << 8) | l


@wp.func(inline=True)
def get_rp(rg: wp.array(dtype=wp.int32), sp: int, p: int) -> int:
    """BC DE HL SP for p = 0..3 (rg: B C D E H L F A)."""
    v = sp
    if p < 3:
        v = (rg[2 * p] << 8) | rg[2 * p + 1]
    return v


@wp.func(inline=True)
def cond(f: int, cc: int) -> bool:
    """NZ Z NC C for cc = 0..3."""
    bit = ZF
    if cc >= 2:
        bit = CF
    return ((f & bit) != 0) == ((cc & 1) == 1)


@wp.func(inline=True)
def alu(a: int, f: int, op: int, v: int) -> int:
    """ADD ADC SUB SBC AND XOR OR CP (op 0..7) of A with v; returns result | flags << 8."""
    cy = (f >> 4) & 1
    r = int(0)
    nf = int(0)
    if op == 0:
        r = a + v
        nf = fl((a & 15) + (v & 15) > 15, HF) | fl(r > 255, CF)
    elif op == 1:
        r = a + v + cy
        nf = fl((a & 15) + (v & 15) + cy > 15, HF) | fl(r > 255, CF)
    elif op == 2 or op == 7:
        r = a - v
        nf = NF | fl((a & 15) < (v & 15), HF) | fl(r < 0, CF)
    elif op == 3:
        r = a - v - cy
        nf = NF | fl((a & 15) - (v & 15) - cy < 0, HF) | fl(r < 0, CF)
    elif op == 4:
        r = a & v
        nf = HF
    elif op == 5:
        r = a ^ v
    else:
        r = a | v
    r = r & 0xFF
    nf = nf | fl(r == 0, ZF)
    if op == 7:
        r = a
    return r | (nf << 8)


@wp.func(inline=True)
def alu_to_a(rg: wp.array(dtype=wp.int32), op: int, v: int):
    """A, F := alu(A, F, op, v) (rg: the register file)."""
    res = alu(rg[R_A], rg[R_F], op, v)
    rg[R_A] = res & 0xFF
    rg[R_F] = res >> 8


@wp.func(inline=True)
def alu_store(rg: wp.array(dtype=wp.int32), op: int, v: int):
    """A, F := alu(A, F, op, v) with each case storing its own result and flags (the CPU shape's
    ALU A,(HL) and ALU A,n, whose op is not a constant: no common tail after the jump on op).
    H is bit 4 of a ^ v ^ r (the carry or borrow into bit 4, with or without the carry in), C is bit
    8 of r (r < 0 after a borrow: two's complement), both moved into place without a compare."""
    a = rg[R_A]
    if op == 0:
        r = a + v
        rg[R_A] = r & 0xFF
        rg[R_F] = fl((r & 0xFF) == 0, ZF) | (((a ^ v ^ r) & 0x10) << 1) | ((r >> 4) & 0x10)
    elif op == 1:
        r = a + v + ((rg[R_F] >> 4) & 1)
        rg[R_A] = r & 0xFF
        rg[R_F] = fl((r & 0xFF) == 0, ZF) | (((a ^ v ^ r) & 0x10) << 1) | ((r >> 4) & 0x10)
    elif op == 2:
        r = a - v
        rg[R_A] = r & 0xFF
        rg[R_F] = fl(r == 0, ZF) | NF | (((a ^ v ^ r) & 0x10) << 1) | ((r >> 4) & 0x10)
    elif op == 3:
        r = a - v - ((rg[R_F] >> 4) & 1)
        rg[R_A] = r & 0xFF
        rg[R_F] = fl((r & 0xFF) == 0, ZF) | NF | (((a ^ v ^ r) & 0x10) << 1) | ((r >> 4) & 0x10)
    elif op == 4:
        r = a & v
        rg[R_A] = r
        rg[R_F] = fl(r == 0, ZF) | HF
    elif op == 5:
        r = a ^ v
        rg[R_A] = r
        rg[R_F] = fl(r == 0, ZF)
    elif op == 6:
        r = a | v
        rg[R_A] = r
        rg[R_F] = fl(r == 0, ZF)
    else:                                  # CP: SUB's flags, A kept
        r = a - v
        rg[R_F] = fl(r == 0, ZF) | NF | (((a ^ v ^ r) & 0x10) << 1) | ((r >> 4) & 0x10)


@wp.func(inline=True)
def alu_result(r: int, flags: int) -> int:
    """An ALU result (reduced to 8 bits) | (its flags with Z) << 8."""
    r8 = r & 0xFF
    return r8 | ((flags | fl(r8 == 0, ZF)) << 8)


@wp.func(inline=True)
def alu_staged(a: int, f: int, op: int, v: int) -> int:
    """alu with one return per case (the CUDA shape): assigned in a chain of branches, the
    result gets a select per level (spills on CUDA: docs/gpu.md, Kernel footprint), while on
    the CPU the per-case returns cost 5-7%."""
    cy = (f >> 4) & 1
    if op == 0:
        return alu_result(a + v, fl((a & 15) + (v & 15) > 15, HF) | fl(a + v > 255, CF))
    if op == 1:
        return alu_result(a + v + cy, fl((a & 15) + (v & 15) + cy > 15, HF) | fl(a + v + cy > 255, CF))
    if op == 2:
        return alu_result(a - v, NF | fl((a & 15) < (v & 15), HF) | fl(a < v, CF))
    if op == 3:
        return alu_result(a - v - cy, NF | fl((a & 15) - (v & 15) - cy < 0, HF) | fl(a - v - cy < 0, CF))
    if op == 4:
        return alu_result(a & v, HF)
    if op == 5:
        return alu_result(a ^ v, 0)
    if op == 6:
        return alu_result(a | v, 0)
    return a | (alu_result(a - v, NF | fl((a & 15) < (v & 15), HF) | fl(a < v, CF)) & 0xFF00)   # CP: SUB's flags


@wp.func(inline=True)
def alu_to_a_staged(rg: wp.array(dtype=wp.int32), op: int, v: int):
    """alu_to_a through alu_staged."""
    res = alu_staged(rg[R_A], rg[R_F], op, v)
    rg[R_A] = res & 0xFF
    rg[R_F] = res >> 8


@wp.func(inline=True)
def rot_result(r: int, co: int) -> int:
    """A rotate's result r | its flags (Z, C = co) << 8."""
    return r | ((fl(r == 0, ZF) | (co << 4)) << 8)


@wp.func(inline=True)
def rot_staged(f: int, y: int, v: int) -> int:
    """rot with one return per case (the CUDA shape, as alu_staged)."""
    cy = (f >> 4) & 1
    if y == 0:
        return rot_result(((v << 1) | (v >> 7)) & 0xFF, v >> 7)
    if y == 1:
        return rot_result(((v >> 1) | (v << 7)) & 0xFF, v & 1)
    if y == 2:
        return rot_result(((v << 1) | cy) & 0xFF, v >> 7)
    if y == 3:
        return rot_result((v >> 1) | (cy << 7), v & 1)
    if y == 4:
        return rot_result((v << 1) & 0xFF, v >> 7)
    if y == 5:
        return rot_result((v >> 1) | (v & 0x80), v & 1)
    if y == 6:
        return rot_result(((v & 15) << 4) | (v >> 4), 0)
    return rot_result(v >> 1, v & 1)


@wp.func(inline=True)
def rot(f: int, y: int, v: int) -> int:
    """RLC RRC RL RR SLA SRA SWAP SRL (y 0..7); returns result | flags << 8."""
    cy = (f >> 4) & 1
    r = int(0)
    co = int(0)
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


@wp.func(inline=True)
def sext8(v: int) -> int:
    r = v
    if v >= 128:
        r = v - 256
    return r


@wp.func(inline=True)
def daa(a: int, f: int) -> int:
    """Decimal adjust after an add (N=0) or subtract (N=1); returns result | flags << 8."""
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
    return a | ((fl(a == 0, ZF) | (f & NF) | cy) << 8)


@wp.func(inline=False)
def dispatch_interrupt(ms: MachinePtr, env: int, pc: int, sp: int, t: wp.int64) -> int:
    """Interrupt dispatch after the 2 idle M-cycles: push PC high at t, then choose the
    request (so a push that overwrote IE at $FFFF can cancel it: PC := $0000), push PC low,
    clear the chosen IF bit. Returns the new PC.

    The choice sees the requests raised up to t + 8 (the jump's M-cycle), the lazy
    peripherals brought up to date first: a VBlank requested a few M-cycles after the
    timer request that started the dispatch wins. Where gambatte's choice flips, measured
    with a timer request swept in 1-M steps against the first VBlank after LCD on (the CPU
    halted; tests/roms/idiom_timer.asm meets the same race)."""
    m = machine(ms)
    sp = (sp - 1) & 0xFFFF
    bus_write(ms, env, sp, pc >> 8, t)
    events_sync(ms, env, t + wp.int64(8))
    pend = pending_irqs(ms, env)
    sp = (sp - 1) & 0xFFFF
    bus_write(ms, env, sp, pc & 0xFF, t + FOUR)
    new_pc = int(0)
    if pend != 0:
        bit = int(0)
        while ((pend >> bit) & 1) == 0:
            bit = bit + 1
        m.io[env, 0x0F] = wp.uint8(int(m.io[env, 0x0F]) & ((1 << bit) ^ 0xFF))
        new_pc = 0x40 + 8 * bit
    return new_pc


@wp.func
def load_cpu(ms: MachinePtr, env: int) -> Cpu:
    m = machine(ms)
    c = Cpu()
    c.pc = m.r32[env, 9]
    c.t = m.r64[env, T_NOW]
    return c


@wp.func
def store_cpu(ms: MachinePtr, env: int, c: Cpu):
    m = machine(ms)
    m.r32[env, 9] = c.pc
    m.r64[env, T_NOW] = c.t


@wp.func
def load_cpu_staged(ms: MachinePtr, env: int) -> CpuStaged:
    m = machine(ms)
    c = CpuStaged()
    c.pc = m.r32[env, 9]
    c.t = m.r64[env, T_NOW]
    c.stopped = m.r32[env, R_STOPPED]
    return c


@wp.func
def store_cpu_staged(ms: MachinePtr, env: int, c: CpuStaged):
    m = machine(ms)
    m.r32[env, 9] = c.pc
    m.r64[env, T_NOW] = c.t
    m.r32[env, R_STOPPED] = c.stopped


def _make_machine_kernel(staged: bool, name: str, module):
    """The machine kernel `name` in the CPU shape (staged = False) or the CUDA shape (True),
    registered in Warp module `module` (None: this module's). Every `wp.static(staged)` below
    picks one shape's code at codegen; the other shape's is not generated at all."""
    # the helpers whose two shapes differ only in how they return (one return per case on CUDA)
    alu_to_a_for_shape = alu_to_a_staged if staged else alu_to_a
    rot_for_shape = rot_staged if staged else rot

    @wp.kernel(enable_backward=False, name=name, module=module, **_KERNEL_OPTIONS)
    def machine_kernel(mref: MachineRef, rom: wp.array(dtype=wp.uint8), cart_ram: wp.array2d(dtype=wp.uint8),
                       mbc: wp.array2d(dtype=wp.int32), spec: CartSpec,
                       wram: wp.array2d(dtype=wp.uint8), vram: wp.array2d(dtype=wp.uint8),
                       hram: wp.array2d(dtype=wp.uint8), io: wp.array2d(dtype=wp.uint8),
                       r64: wp.array2d(dtype=wp.int64), groups: wp.array(dtype=wp.uint8), frames: int,
                       buttons: wp.array(dtype=wp.uint8), set_flag: int, release_after: int):
        """Run `frames` frames of one Game Boy per thread (frame boundaries: see
        VecGameBoy.run_frames; flat mode: exactly one instruction, for the SM83 cases).

        The whole hot loop lives in this kernel body: PC and the clock in the local `c`, the
        register file in r32 through `rg`, memory through bus.py's access helpers on env rows;
        only rare work (events, interrupt dispatch, accesses the helpers decline) calls
        out-of-line functions, which take the machine's address (`ms`). The arrays passed
        beside `mref` are the same ones the Machine holds.

        Outer loop (scheduler): due peripheral events; interrupt dispatch / HALT wake; reload
        the locals the fast paths cache (bank offsets, DMA window, next event, frame end); then
        either sleep to the next event (HALT, STOP, locked) or run the inner loop: fetch +
        execute instructions until the next event, or until one changed what the scheduler
        decides (a write, EI/RETI/HALT/STOP, an illegal opcode: limit = END_RUN). Opcodes
        are executed by group (OPCODE_GROUPS), with y = op>>3&7, z = op&7, p = y>>1, q = y&1.
        EI ends a run, and the scheduler runs the next instruction alone before setting IME;
        a HALT bug makes the next run's first fetch leave PC as it is."""
        ms = machine_ptr(mref)
        m = machine(ms)
        env = wp.tid()
        flat = m.flat_mode
        hram_fast = flat == 0
        if wp.static(staged):
            c = load_cpu_staged(ms, env)
        else:
            c = load_cpu(ms, env)
            stopped = m.r32[env, R_STOPPED]
        # The register file stays in this env's r32 words 0..15 (B C D E H L F A in the opcode's
        # r-field order, SP, IME, EI pending, HALT, locked, HALT bug): a register operand or
        # destination is one load or store indexed by the opcode field instead of a 7-way
        # branch, and the registers are no loop-carried values that every join of the decode
        # has to merge. Only the joypad writes r32 from outside (R_STOPPED, so STOP stays in `c`).
        # A 1-d view on a local base pointer (constant stride; r32 is allocated contiguous,
        # kernel_inputs checks); with GBX_EMU_LAYOUT=soa the strided row of the soa layout (state.r32_row).
        # The view covers all NUM_R32 words: the data accesses read the joypad and PPU words too.
        rg = r32_row(ms, env)
        # This env's WRAM/HRAM/VRAM/I/O rows and the ROM as 1-d views on local base pointers (the
        # arrays are allocated contiguous, kernel_inputs checks): constant stride 1.
        io_e = io_row(ms, env)
        r64_e = r64_row(ms, env)
        rom_v = wp.array(ptr=wp.uint64(rom.ptr), shape=(rom.shape[0],), dtype=wp.uint8)
        wram_e = wp.array(ptr=wp.uint64(wram.ptr) + wp.uint64(env) * wp.uint64(wram.shape[1]), shape=(wram.shape[1],), dtype=wp.uint8)
        hram_e = wp.array(ptr=wp.uint64(hram.ptr) + wp.uint64(env) * wp.uint64(hram.shape[1]), shape=(hram.shape[1],), dtype=wp.uint8)
        vram_e = wp.array(ptr=wp.uint64(vram.ptr) + wp.uint64(env) * wp.uint64(vram.shape[1]), shape=(vram.shape[1],), dtype=wp.uint8)
        wram_at = wp.uint64(wram.ptr) + wp.uint64(env) * wp.uint64(wram.shape[1])   # (the CPU shape's WRAM data accesses)
        if wp.static(staged):
            groups_v = wp.array(ptr=wp.uint64(groups.ptr), shape=(768,), dtype=wp.uint8)   # (opcode_groups_array)
        else:
            groups_v = wp.array(ptr=wp.uint64(groups.ptr), shape=(256,), dtype=wp.uint8)
        # The module constants the loop reads after its group chain, named here first. Warp (1.19)
        # keeps a module constant in a variable from its first use in a function; first used in
        # several branches of the chain, it became a select set only on the paths through those
        # branches, and the reads after the chain (the run's-end test, POP AF's write-back) saw an
        # unset variable after the other groups: a run ended by a write did not reload the cached
        # event time and ROM bank, and POP AF stored A at a stray index (tests/test_warp_scope.py)
        run_ended = END_RUN
        reg_a = R_A
        reg_f = R_F
        nf = frames
        if flat != 0:
            nf = 1
        fi = int(0)
        slow = int(1)
        next_ev = wp.int64(0)
        rom0_base = int(0)
        romx_off = int(0)
        rom0_at = wp.uint64(0)
        romx_at = wp.uint64(0)
        rom_ptr = wp.uint64(rom.ptr)
        groups_ptr = wp.uint64(groups.ptr)
        fast_until = wp.int64(0)
        frame_deadline = wp.int64(0)
        while fi < nf:
            t_end = c.t + wp.int64(1)
            if flat == 0:
                if (fi == 0 and set_flag != 0) or fi == release_after:
                    # a press (falling P1 line) ends STOP: joypad_update clears r32[R_STOPPED]
                    if wp.static(staged):
                        m.r32[env, R_STOPPED] = c.stopped
                    else:
                        m.r32[env, R_STOPPED] = stopped
                    if fi == 0 and set_flag != 0:
                        set_buttons(ms, env, int(buttons[env]))
                    if fi == release_after:
                        set_buttons(ms, env, 0)
                    if wp.static(staged):
                        c.stopped = m.r32[env, R_STOPPED]
                    else:
                        stopped = m.r32[env, R_STOPPED]
                # draw only the launch's last frame (frame()/obs() hold just that one)
                want = RENDER_NONE
                if fi == nf - 1:
                    want = m.render_mode
                set_render_mode(ms, env, want, c.t)
                slow = 1
                frame_deadline = r64[env, T_FRAME_START] + FRAME_CYCLES
                t_end = frame_deadline         # lowered to the next VBlank in the reload below
            while c.t < t_end:
                # ---- scheduler: due events, interrupts, sleep ----
                if flat == 0:
                    # (fresh: an I/O write may have moved it; a halted CPU's due events are
                    # processed by sleep_until, which times the request that wakes it)
                    if c.t >= r64[env, T_NEXT_EVENT] and rg[R_HALTED] == 0:
                        events_sync(ms, env, c.t)
                        slow = 1
                    if (rg[R_IME] != 0 or rg[R_HALTED] != 0) and rg[R_LOCKED] == 0:
                        pend = int(hram[env, 127]) & int(io[env, 0x0F]) & 0x1F
                        if pend != 0:
                            if rg[R_HALTED] != 0:
                                # leaving HALT takes one M-cycle, unless the request came 2 T
                                # or more before the boundary it was seen at (R_HALTED = 2,
                                # bus.sleep_until)
                                if rg[R_HALTED] == 1:
                                    c.t = c.t + FOUR
                                rg[R_HALTED] = 0
                            if rg[R_IME] != 0:                   # 5 M-cycles: 2 idle, 2 pushes, jump
                                rg[R_IME] = 0
                                rg[R_EI_PENDING] = 0
                                c.pc = dispatch_interrupt(ms, env, c.pc, rg[R_SP], c.t + wp.int64(8))
                                slow = 1
                                rg[R_SP] = (rg[R_SP] - 2) & 0xFFFF
                                c.t = c.t + wp.int64(20)
                if slow != 0:
                    # State the fast paths cache in locals may have changed in an out-of-line
                    # call (I/O write, MBC bank switch, DMA start, events): reload it.
                    slow = 0
                    next_ev = r64[env, T_NEXT_EVENT]
                    # ROM indices as provably non-negative sums, so Warp's negative-index wrap
                    # folds away on the fetch path (both are >= 0 by construction)
                    rom0_base = mbc[env, REG_ROM0_BASE] & 0x7FFFFFFF
                    romx_off = (mbc[env, REG_ROMX_BASE] + 0x4000) & 0x7FFFFFFF
                    # the fetch's: the address of ROM byte PC in each half ($4000-$7FFF: >= 0 by construction)
                    rom0_at = rom_ptr + wp.uint64(rom0_base)
                    romx_at = wp.uint64(wp.int64(rom_ptr) + wp.int64(mbc[env, REG_ROMX_BASE]))
                    fast_until = r64[env, T_DMA_END]
                    if flat != 0 or r64[env, T_BOOT_MAPPED] != wp.int64(0):
                        fast_until = NEVER     # boot ROM overlay / flat bus: every access is slow
                    if flat == 0:
                        if wp.static(staged):
                            # (the frame's deadline from memory, not a local live across the loop:
                            # T_FRAME_START only moves at the frame's end)
                            t_end = frame_end(io_e, rg, r64_e, c.t, r64[env, T_FRAME_START] + FRAME_CYCLES)
                        else:
                            t_end = frame_end(io_e, rg, r64_e, c.t, frame_deadline)
                if wp.static(staged):
                    if rg[R_HALTED] != 0 or rg[R_LOCKED] != 0 or c.stopped != 0:
                        wake = int(0)
                        if rg[R_HALTED] != 0 and rg[R_LOCKED] == 0:
                            wake = 1
                        c.t = sleep_until(ms, env, c.t, t_end, wake)
                        slow = 1
                        continue
                else:
                    if rg[R_HALTED] != 0 or rg[R_LOCKED] != 0 or stopped != 0:
                        wake = int(0)
                        if rg[R_HALTED] != 0 and rg[R_LOCKED] == 0:
                            wake = 1                     # HALT ends on IE&IF; STOP/locked do not
                        c.t = sleep_until(ms, env, c.t, t_end, wake)
                        slow = 1
                        continue
                # ---- instructions until the next event, or until one needed an out-of-line
                # call or changed what the scheduler decides (EI/RETI/HALT/STOP/illegal): such an
                # instruction sets limit = END_RUN, so the loop tests only c.t < limit ----
                limit = wp.min(next_ev, t_end)
                if flat != 0:
                    limit = t_end
                # fast accesses: none during OAM DMA (until fast_until), so split the run there
                fast_run = c.t >= fast_until
                if wp.static(not staged):
                    # the flag as an integer of its own (1: fast), so the loop keeps it in one register:
                    # from the compare, LLVM sank `c.t >= fast_until` into every use and kept both
                    # 64-bit operands live across the instruction loop (the unsigned difference's top
                    # bit is not folded back into a compare)
                    fast_i = 1 - int((wp.uint64(c.t) - wp.uint64(fast_until)) >> wp.uint64(63))
                    rom_lim = fast_i << 15           # the opcode fetch's ROM path: PC below this
                if not fast_run:
                    limit = wp.min(limit, fast_until)
                elif r64[env, T_DMA_COPY] != wp.int64(0):
                    # an OAM DMA's bytes land before the fast paths may write its source
                    dma_sync(ms, env, c.t)
                idle_run_start(r64_e)            # (emu/idle.py)
                # EI takes effect after the instruction that follows it: run that one alone
                ei_step = rg[R_EI_PENDING]
                if ei_step != 0:
                    limit = c.t
                # the HALT bug: the next opcode fetch fails to increment PC, once
                pc_step = 1 - rg[R_HALT_BUG]
                rg[R_HALT_BUG] = 0
                if wp.static(not staged):
                    # (that instruction alone, like EI's, and its fetch off the ROM path: the ROM
                    # path adds 1, only the other one pc_step)
                    if pc_step == 0:
                        limit = c.t
                        rom_lim = 0
                if wp.static(staged):
                    c.limit = limit
                running = bool(True)
                while running:
                    if wp.static(COUNTERS):   # (in memory: Warp does not carry a local through a static if)
                        r64[env, T_COUNT_INSTR] = r64[env, T_COUNT_INSTR] + wp.int64(1)
                    if wp.static(staged):
                        c.fast = fast_run
                    else:
                        fast = fast_i != 0
                    # ---- fetch: ROM through the bank offsets first (where code runs) ----
                    if wp.static(staged):
                        # (read8 tries ROM first: one copy of the ROM path)
                        op = read8(ms, env, rom_v, wram_e, hram_e, c.fast, hram_fast, rom0_base, romx_off, c.pc, c.t)
                    else:
                        op = int(-1)
                        if c.pc < rom_lim:           # (fast and in ROM: one compare)
                            # (a plain load: the index is >= 0 by construction, and Warp's index
                            # would test it for the negative wrap)
                            op = load_u8(wp.where(c.pc < 0x4000, rom0_at, romx_at), c.pc)
                            c.pc = (c.pc + 1) & 0xFFFF
                        else:
                            op = read8(ms, env, rom_v, wram_e, hram_e, fast, hram_fast, rom0_base, romx_off, c.pc, c.t)
                            c.pc = (c.pc + pc_step) & 0xFFFF
                    if wp.static(staged):
                        c.pc = (c.pc + pc_step) & 0xFFFF
                        pc_step = 1
                    c.t = c.t + FOUR
                    # ---- execute: one branch per opcode group (OPCODE_GROUPS, a byte table); the
                    # chain of compares on g compiles to a single jump table. Each branch computes
                    # the opcode's bit fields it reads (y = op>>3&7, z = op&7, p = op>>4&3,
                    # q = op>>3&1): computed once before the jump they cost every instruction
                    # ~9 x86 instructions and a spill ----
                    if wp.static(staged):
                        # ---- decode: group and operand bytes from one table byte, ACCESS from another ----
                        gb = int(groups_v[TABLE_GROUP_OPS + (op & 0xFF)])
                        g = gb & GROUP_MASK
                        # ---- operands: the bytes after the opcode (OPERAND_BYTES), read here for every group -
                        # they always come in the M-cycles right after the fetch - so the loop has two operand
                        # reads, not one per branch that takes operands (each inlined read is code the register
                        # allocator must carry: docs/gpu.md, Kernel footprint) ----
                        imm = int(0)
                        imm_hi = int(0)
                        operands = gb >> 6
                        # the stack pops of POP/RET/RETI and of a taken RET cc (after its internal
                        # M-cycle for the condition) come in the same M-cycles: read here too, from SP
                        ra = c.pc
                        pops = g == G_POP_RET or g == G_RET_CC
                        if pops:
                            ra = rg[R_SP]
                            operands = 2
                            if g == G_RET_CC:
                                c.t = c.t + FOUR
                                if not cond(rg[R_F], (op >> 3) & 7):
                                    operands = 0
                        if operands != 0:
                            imm = read8(ms, env, rom_v, wram_e, hram_e, c.fast, hram_fast, rom0_base, romx_off, ra, c.t)
                            c.t = c.t + FOUR
                            ra = (ra + 1) & 0xFFFF
                            if operands == 2:
                                imm_hi = read8(ms, env, rom_v, wram_e, hram_e, c.fast, hram_fast, rom0_base, romx_off, ra, c.t)
                                c.t = c.t + FOUR
                                ra = (ra + 1) & 0xFFFF
                        if pops:
                            rg[R_SP] = ra
                        else:
                            c.pc = ra
                        # ---- data stage: the byte at (HL), (BC), ($FF00+n), (nn), ... (ACCESS) is read here,
                        # in the M-cycle after the operands, and written after the group's branch, as the
                        # instruction's last M-cycle(s): one read_data8 and one write_data8 in the loop instead
                        # of one per branch. The branches take the byte read from `dv` and leave the byte to
                        # write in c.wv ----
                        acc = int(groups_v[TABLE_ACCESS + (op & 0xFF)])
                        reads = acc & A_READS
                        c.writes = acc >> 4
                        daddr = int(0)
                        dv = int(0)
                        c.wv = 0
                        if acc != 0:
                            am = acc & 7
                            daddr = hl(rg[R_H], rg[R_L])
                            if am == A_RP:
                                daddr = get_rp(rg, rg[R_SP], (op >> 4) & 1)
                            elif am == A_FF_IMM:
                                daddr = 0xFF00 | imm
                            elif am == A_FF_C:
                                daddr = 0xFF00 | rg[R_C]
                            elif am == A_NN:
                                daddr = (imm_hi << 8) | imm
                            elif am == A_CB and (imm & 7) != 6:
                                reads = 0                  # a CB opcode on a register
                                c.writes = 0
                            if reads != 0:
                                dv = read_data8(ms, env, rom_v, wram_e, hram_e, vram_e, io_e, rg, r64_e, c.fast, hram_fast, rom0_base, romx_off, daddr, c.t)
                                c.t = c.t + FOUR
                        c.w16 = -1     # 16-bit destination (BC DE HL SP AF), -1: none
                        c.v16 = 0
                    else:
                        g = load_u8(groups_ptr, op)     # (op is a byte: no mask, no wrap test)
                        # (16-bit results are stored in their branches: no write-back after the chain)
                    if g == G_LD_R_R:  # LD r[y], r[z]
                        y = (op >> 3) & 7
                        z = op & 7
                        rg[y] = rg[z]
                    elif g == G_LD_R_HL:  # LD r[y], (HL)
                        y = (op >> 3) & 7
                        if wp.static(staged):
                            rg[y] = dv
                        else:
                            v = read_data8_cpu(ms, env, rom_v, wram_at, hram_e, vram_e, io_e, rg, r64_e, fast, hram_fast, rom0_base, romx_off, hl(rg[R_H], rg[R_L]), c.t)
                            c.t = c.t + FOUR
                            rg[y] = v
                    elif g == G_LD_HL_R:  # LD (HL), r[z]
                        z = op & 7
                        if wp.static(staged):
                            c.wv = rg[z]
                        else:
                            limit, fast = write_data8_cpu(ms, env, wram_at, hram_e, vram_e, io_e, rg, r64_e, fast, hram_fast, hl(rg[R_H], rg[R_L]), rg[z], c.t, limit)
                            c.t = c.t + FOUR
                    # ALU A, r[z] (z = op & 7): one group per operation, so the operation needs no second jump
                    elif g == G_ADD_R:
                        wp.static(alu_to_a_for_shape)(rg, 0, rg[op & 7])
                    elif g == G_ADC_R:
                        wp.static(alu_to_a_for_shape)(rg, 1, rg[op & 7])
                    elif g == G_SUB_R:
                        wp.static(alu_to_a_for_shape)(rg, 2, rg[op & 7])
                    elif g == G_SBC_R:
                        wp.static(alu_to_a_for_shape)(rg, 3, rg[op & 7])
                    elif g == G_AND_R:
                        wp.static(alu_to_a_for_shape)(rg, 4, rg[op & 7])
                    elif g == G_XOR_R:
                        wp.static(alu_to_a_for_shape)(rg, 5, rg[op & 7])
                    elif g == G_OR_R:
                        wp.static(alu_to_a_for_shape)(rg, 6, rg[op & 7])
                    elif g == G_CP_R:
                        wp.static(alu_to_a_for_shape)(rg, 7, rg[op & 7])
                    elif g == G_ALU_HL:  # ALU A, (HL)
                        y = (op >> 3) & 7
                        if wp.static(staged):
                            res = alu_staged(rg[R_A], rg[R_F], y, dv)
                            rg[R_A] = res & 0xFF
                            rg[R_F] = res >> 8
                        else:
                            v = read_data8_cpu(ms, env, rom_v, wram_at, hram_e, vram_e, io_e, rg, r64_e, fast, hram_fast, rom0_base, romx_off, hl(rg[R_H], rg[R_L]), c.t)
                            c.t = c.t + FOUR
                            alu_store(rg, y, v)
                    elif g == G_ALU_N:  # ALU A, n
                        y = (op >> 3) & 7
                        if wp.static(staged):
                            res = alu_staged(rg[R_A], rg[R_F], y, imm)
                            rg[R_A] = res & 0xFF
                            rg[R_F] = res >> 8
                        else:
                            n = operand8_cpu(ms, env, rom_v, wram_e, hram_e, fast, hram_fast, rom0_base, romx_off, rom0_at, romx_at, rom_lim, c.pc, c.t)
                            c.t = c.t + FOUR
                            c.pc = (c.pc + 1) & 0xFFFF
                            alu_store(rg, y, n)
                    elif g == G_INC_DEC_R:  # INC r[y] (z = 4) / DEC r[y] (z = 5)
                        y = (op >> 3) & 7
                        if wp.static(staged):
                            z = op & 7
                            v = rg[y]
                            if z == 4:
                                rg[y] = (v + 1) & 0xFF
                                rg[R_F] = (rg[R_F] & CF) | fl(v == 0xFF, ZF) | fl((v & 15) == 15, HF)
                            else:
                                rg[y] = (v - 1) & 0xFF
                                rg[R_F] = (rg[R_F] & CF) | fl(v == 1, ZF) | NF | fl((v & 15) == 0, HF)
                        else:
                            # without a branch: the result and its Z, N, H from the decode table's
                            # INC_DEC_V / INC_DEC_F, indexed by dec << 8 | v (dec = op & 1)
                            t = TABLE_INC_DEC + (((op & 1) << 8) | rg[y])
                            rg[y] = load_u8(groups_ptr, t)
                            rg[R_F] = (rg[R_F] & CF) | load_u8(groups_ptr, t + 512)
                    elif g == G_INC_DEC_HL:  # INC (HL) / DEC (HL)
                        z = op & 7
                        if wp.static(staged):
                            v = dv
                        else:
                            v = read_data8_cpu(ms, env, rom_v, wram_at, hram_e, vram_e, io_e, rg, r64_e, fast, hram_fast, rom0_base, romx_off, hl(rg[R_H], rg[R_L]), c.t)
                            c.t = c.t + FOUR
                        r = int(0)
                        if z == 4:
                            r = (v + 1) & 0xFF
                            rg[R_F] = (rg[R_F] & CF) | fl(r == 0, ZF) | fl((v & 15) == 15, HF)
                        else:
                            r = (v - 1) & 0xFF
                            rg[R_F] = (rg[R_F] & CF) | fl(r == 0, ZF) | NF | fl((v & 15) == 0, HF)
                        if wp.static(staged):
                            c.wv = r
                        else:
                            limit, fast = write_data8_cpu(ms, env, wram_at, hram_e, vram_e, io_e, rg, r64_e, fast, hram_fast, hl(rg[R_H], rg[R_L]), r, c.t, limit)
                            c.t = c.t + FOUR
                    elif g == G_LD_R_N:  # LD r[y], n
                        y = (op >> 3) & 7
                        if wp.static(staged):
                            rg[y] = imm
                        else:
                            n = operand8_cpu(ms, env, rom_v, wram_e, hram_e, fast, hram_fast, rom0_base, romx_off, rom0_at, romx_at, rom_lim, c.pc, c.t)
                            c.t = c.t + FOUR
                            c.pc = (c.pc + 1) & 0xFFFF
                            rg[y] = n
                    elif g == G_LD_HL_N:  # LD (HL), n
                        if wp.static(staged):
                            c.wv = imm
                        else:
                            n = operand8_cpu(ms, env, rom_v, wram_e, hram_e, fast, hram_fast, rom0_base, romx_off, rom0_at, romx_at, rom_lim, c.pc, c.t)
                            c.t = c.t + FOUR
                            c.pc = (c.pc + 1) & 0xFFFF
                            limit, fast = write_data8_cpu(ms, env, wram_at, hram_e, vram_e, io_e, rg, r64_e, fast, hram_fast, hl(rg[R_H], rg[R_L]), n, c.t, limit)
                            c.t = c.t + FOUR
                    elif g == G_JR:  # JR d (y = 3) / JR cc, d (y = 4..7)
                        y = (op >> 3) & 7
                        if wp.static(staged):
                            if y == 3 or cond(rg[R_F], y - 4):
                                c.pc = (c.pc + sext8(imm)) & 0xFFFF
                                c.t = c.t + FOUR
                                if imm >= 0x80 and (rg[R_IDLE] & 1) != 0:
                                    c.t = idle_branch(ms, env, c.pc, c.t, c.limit)
                        else:
                            d = operand8_cpu(ms, env, rom_v, wram_e, hram_e, fast, hram_fast, rom0_base, romx_off, rom0_at, romx_at, rom_lim, c.pc, c.t)
                            c.t = c.t + FOUR
                            c.pc = (c.pc + 1) & 0xFFFF
                            if y == 3 or cond(rg[R_F], y - 4):
                                c.pc = (c.pc + sext8(d)) & 0xFFFF
                                c.t = c.t + FOUR
                                if d >= 0x80 and (rg[R_IDLE] & 1) != 0:   # a polling loop closes (emu/idle.py)
                                    c.t = idle_branch(ms, env, c.pc, c.t, limit)
                    elif g == G_LD_IND_A:  # LD (BC/DE/HL+/HL-), A and back (q = 1)
                        p = (op >> 4) & 3
                        q = (op >> 3) & 1
                        if wp.static(staged):
                            if q == 0:
                                c.wv = rg[R_A]
                            else:
                                rg[R_A] = dv
                            if p >= 2:                   # HL+ / HL- (daddr: HL)
                                c.w16 = 2
                                c.v16 = daddr + 1
                                if p == 3:
                                    c.v16 = daddr - 1
                        else:
                            addr = hl(rg[R_H], rg[R_L])
                            if p < 2:
                                addr = get_rp(rg, rg[R_SP], p)
                            if q == 0:
                                limit, fast = write_data8_cpu(ms, env, wram_at, hram_e, vram_e, io_e, rg, r64_e, fast, hram_fast, addr, rg[R_A], c.t, limit)
                                c.t = c.t + FOUR
                            else:
                                v = read_data8_cpu(ms, env, rom_v, wram_at, hram_e, vram_e, io_e, rg, r64_e, fast, hram_fast, rom0_base, romx_off, addr, c.t)
                                c.t = c.t + FOUR
                                rg[R_A] = v
                            if p >= 2:
                                # HL+ / HL-: L +- 1, H only on a carry or borrow out of L (as INC/DEC rp)
                                lo = rg[R_L] + 5 - 2 * p
                                rg[R_L] = lo & 0xFF
                                if lo != (lo & 0xFF):
                                    rg[R_H] = (rg[R_H] + (lo >> 8)) & 0xFF
                    elif g == G_INC_DEC_RP:  # INC rp (q = 0) / DEC rp
                        p = (op >> 4) & 3
                        q = (op >> 3) & 1
                        if wp.static(staged):
                            c.w16 = p
                            c.v16 = get_rp(rg, rg[R_SP], p) + 1 - 2 * q
                        else:
                            # (stored here, not through the write-back after the chain; BC DE HL by
                            # their low byte, the high byte only on a carry or borrow out of it: lo
                            # is then 256 or -1, and lo >> 8 is +1 or -1)
                            if p == 3:
                                rg[R_SP] = (rg[R_SP] + 1 - 2 * q) & 0xFFFF
                            else:
                                lo = rg[2 * p + 1] + 1 - 2 * q
                                rg[2 * p + 1] = lo & 0xFF
                                if lo != (lo & 0xFF):
                                    rg[2 * p] = (rg[2 * p] + (lo >> 8)) & 0xFF
                        c.t = c.t + FOUR
                    elif g == G_LD_RP_NN:  # LD rp, nn
                        p = (op >> 4) & 3
                        if wp.static(staged):
                            c.w16 = p
                            c.v16 = (imm_hi << 8) | imm
                        else:
                            lo = operand8_cpu(ms, env, rom_v, wram_e, hram_e, fast, hram_fast, rom0_base, romx_off, rom0_at, romx_at, rom_lim, c.pc, c.t)
                            c.t = c.t + FOUR
                            hi = operand8_cpu(ms, env, rom_v, wram_e, hram_e, fast, hram_fast, rom0_base, romx_off, rom0_at, romx_at, rom_lim, (c.pc + 1) & 0xFFFF, c.t)
                            c.t = c.t + FOUR
                            c.pc = (c.pc + 2) & 0xFFFF
                            if p == 3:
                                rg[R_SP] = (hi << 8) | lo
                            else:
                                rg[2 * p] = hi
                                rg[2 * p + 1] = lo
                    elif g == G_ADD_HL_RP:  # ADD HL, rp (H from bit 11, C from bit 15, Z kept)
                        p = (op >> 4) & 3
                        a = hl(rg[R_H], rg[R_L])
                        v = get_rp(rg, rg[R_SP], p)
                        r = a + v
                        rg[R_F] = (rg[R_F] & ZF) | fl((a & 0xFFF) + (v & 0xFFF) > 0xFFF, HF) | fl(r > 0xFFFF, CF)
                        if wp.static(staged):
                            c.w16 = 2
                            c.v16 = r
                        else:
                            rg[R_H] = (r >> 8) & 0xFF
                            rg[R_L] = r & 0xFF
                        c.t = c.t + FOUR
                    elif g == G_CB:  # CB prefix: rotates/shifts, BIT, RES, SET on r[cz] or (HL)
                        if wp.static(staged):
                            cx = imm >> 6
                            cy = (imm >> 3) & 7
                            cz = imm & 7
                            v = rg[cz]
                            if cz == 6:
                                v = dv
                            r = v
                            if cx == 0:
                                res = rot_staged(rg[R_F], cy, v)
                                r = res & 0xFF
                                rg[R_F] = res >> 8
                            elif cx == 1:  # BIT
                                rg[R_F] = fl(((v >> cy) & 1) == 0, ZF) | HF | (rg[R_F] & CF)
                            elif cx == 2:  # RES
                                r = v & ((1 << cy) ^ 0xFF)
                            else:  # SET
                                r = v | (1 << cy)
                            if cz == 6:
                                c.wv = r
                                if cx == 1:
                                    c.writes = 0                 # BIT (HL) only reads
                            elif cx != 1:
                                rg[cz] = r
                        else:
                            op2 = operand8_cpu(ms, env, rom_v, wram_e, hram_e, fast, hram_fast, rom0_base, romx_off, rom0_at, romx_at, rom_lim, c.pc, c.t)
                            c.t = c.t + FOUR
                            c.pc = (c.pc + 1) & 0xFFFF
                            cx = op2 >> 6
                            cy = (op2 >> 3) & 7
                            cz = op2 & 7
                            v = int(0)
                            if cz == 6:
                                vm = read_data8_cpu(ms, env, rom_v, wram_at, hram_e, vram_e, io_e, rg, r64_e, fast, hram_fast, rom0_base, romx_off, hl(rg[R_H], rg[R_L]), c.t)
                                c.t = c.t + FOUR
                                v = vm
                            else:
                                v = rg[cz]
                            r = v
                            if cx == 0:
                                res = rot(rg[R_F], cy, v)
                                r = res & 0xFF
                                rg[R_F] = res >> 8
                            elif cx == 1:  # BIT
                                rg[R_F] = fl(((v >> cy) & 1) == 0, ZF) | HF | (rg[R_F] & CF)
                            elif cx == 2:  # RES
                                r = v & ((1 << cy) ^ 0xFF)
                            else:  # SET
                                r = v | (1 << cy)
                            if cx != 1:
                                if cz == 6:
                                    limit, fast = write_data8_cpu(ms, env, wram_at, hram_e, vram_e, io_e, rg, r64_e, fast, hram_fast, hl(rg[R_H], rg[R_L]), r, c.t, limit)
                                    c.t = c.t + FOUR
                                else:
                                    rg[cz] = r
                    elif g == G_LDH_N:  # LDH (n), A (y = 4) / LDH A, (n) (y = 6)
                        y = (op >> 3) & 7
                        if wp.static(staged):
                            if y == 4:
                                c.wv = rg[R_A]
                            else:
                                rg[R_A] = dv
                        else:
                            n = operand8_cpu(ms, env, rom_v, wram_e, hram_e, fast, hram_fast, rom0_base, romx_off, rom0_at, romx_at, rom_lim, c.pc, c.t)
                            c.t = c.t + FOUR
                            c.pc = (c.pc + 1) & 0xFFFF
                            if y == 4:
                                limit, fast = write_data8_cpu(ms, env, wram_at, hram_e, vram_e, io_e, rg, r64_e, fast, hram_fast, 0xFF00 | n, rg[R_A], c.t, limit)
                                c.t = c.t + FOUR
                            else:
                                v = read_data8_cpu(ms, env, rom_v, wram_at, hram_e, vram_e, io_e, rg, r64_e, fast, hram_fast, rom0_base, romx_off, 0xFF00 | n, c.t)
                                c.t = c.t + FOUR
                                rg[R_A] = v
                    elif g == G_LDH_C:  # LD (C), A (y = 4) / LD A, (C) (y = 6)
                        y = (op >> 3) & 7
                        if wp.static(staged):
                            if y == 4:
                                c.wv = rg[R_A]
                            else:
                                rg[R_A] = dv
                        else:
                            if y == 4:
                                limit, fast = write_data8_cpu(ms, env, wram_at, hram_e, vram_e, io_e, rg, r64_e, fast, hram_fast, 0xFF00 | rg[R_C], rg[R_A], c.t, limit)
                                c.t = c.t + FOUR
                            else:
                                v = read_data8_cpu(ms, env, rom_v, wram_at, hram_e, vram_e, io_e, rg, r64_e, fast, hram_fast, rom0_base, romx_off, 0xFF00 | rg[R_C], c.t)
                                c.t = c.t + FOUR
                                rg[R_A] = v
                    elif g == G_LD_NN_A:  # LD (nn), A (y = 5) / LD A, (nn) (y = 7)
                        y = (op >> 3) & 7
                        if wp.static(staged):
                            if y == 5:
                                c.wv = rg[R_A]
                            else:
                                rg[R_A] = dv
                        else:
                            lo = operand8_cpu(ms, env, rom_v, wram_e, hram_e, fast, hram_fast, rom0_base, romx_off, rom0_at, romx_at, rom_lim, c.pc, c.t)
                            c.t = c.t + FOUR
                            hi = operand8_cpu(ms, env, rom_v, wram_e, hram_e, fast, hram_fast, rom0_base, romx_off, rom0_at, romx_at, rom_lim, (c.pc + 1) & 0xFFFF, c.t)
                            c.t = c.t + FOUR
                            c.pc = (c.pc + 2) & 0xFFFF
                            addr = (hi << 8) | lo
                            if y == 5:
                                limit, fast = write_data8_cpu(ms, env, wram_at, hram_e, vram_e, io_e, rg, r64_e, fast, hram_fast, addr, rg[R_A], c.t, limit)
                                c.t = c.t + FOUR
                            else:
                                v = read_data8_cpu(ms, env, rom_v, wram_at, hram_e, vram_e, io_e, rg, r64_e, fast, hram_fast, rom0_base, romx_off, addr, c.t)
                                c.t = c.t + FOUR
                                rg[R_A] = v
                    elif g == G_JP:  # JP nn (C3) / JP cc, nn (y = 0..3)
                        y = (op >> 3) & 7
                        z = op & 7
                        if wp.static(staged):
                            if z == 3 or cond(rg[R_F], y):
                                target = (imm_hi << 8) | imm
                                c.t = c.t + FOUR
                                if target < c.pc and (rg[R_IDLE] & 1) != 0:   # (as for JR)
                                    c.t = idle_branch(ms, env, target, c.t, c.limit)
                                c.pc = target
                        else:
                            lo = operand8_cpu(ms, env, rom_v, wram_e, hram_e, fast, hram_fast, rom0_base, romx_off, rom0_at, romx_at, rom_lim, c.pc, c.t)
                            c.t = c.t + FOUR
                            hi = operand8_cpu(ms, env, rom_v, wram_e, hram_e, fast, hram_fast, rom0_base, romx_off, rom0_at, romx_at, rom_lim, (c.pc + 1) & 0xFFFF, c.t)
                            c.t = c.t + FOUR
                            c.pc = (c.pc + 2) & 0xFFFF
                            if z == 3 or cond(rg[R_F], y):
                                target = (hi << 8) | lo
                                c.t = c.t + FOUR
                                if target < c.pc and (rg[R_IDLE] & 1) != 0:   # (as for JR)
                                    c.t = idle_branch(ms, env, target, c.t, limit)
                                c.pc = target
                    elif g == G_CALL_PUSH_RST:  # CALL cc,nn / CALL nn / PUSH rp2 / RST: optional operand, then a push
                        y = (op >> 3) & 7
                        z = op & 7
                        p = (op >> 4) & 3
                        q = (op >> 3) & 1
                        if wp.static(staged):
                            target = y * 8                     # RST
                            do_push = True
                            v = c.pc
                            if z == 4 or z == 5 and q == 1:    # CALL (nn read with the operands)
                                target = (imm_hi << 8) | imm
                                if z == 4:
                                    do_push = cond(rg[R_F], y)
                            elif z == 5:                       # PUSH
                                v = get_rp(rg, rg[R_SP], p)
                                if p == 3:
                                    v = (rg[R_A] << 8) | rg[R_F]
                            if do_push:
                                c.t = c.t + FOUR
                                sp = (rg[R_SP] - 1) & 0xFFFF
                                lim_hi, fast_hi = write8(ms, env, wram_e, hram_e, rg, c.fast, hram_fast, sp, v >> 8, c.t, c.limit)
                                c.limit = lim_hi
                                c.fast = fast_hi
                                c.t = c.t + FOUR
                                sp = (sp - 1) & 0xFFFF
                                lim_lo, fast_lo = write8(ms, env, wram_e, hram_e, rg, c.fast, hram_fast, sp, v & 0xFF, c.t, c.limit)
                                c.limit = lim_lo
                                c.fast = fast_lo
                                c.t = c.t + FOUR
                                rg[R_SP] = sp
                                if z != 5 or q == 1:
                                    c.pc = target
                        else:
                            target = y * 8                     # RST
                            do_push = True
                            v = c.pc
                            if z == 4 or z == 5 and q == 1:    # CALL
                                lo = operand8_cpu(ms, env, rom_v, wram_e, hram_e, fast, hram_fast, rom0_base, romx_off, rom0_at, romx_at, rom_lim, c.pc, c.t)
                                c.t = c.t + FOUR
                                hi = operand8_cpu(ms, env, rom_v, wram_e, hram_e, fast, hram_fast, rom0_base, romx_off, rom0_at, romx_at, rom_lim, (c.pc + 1) & 0xFFFF, c.t)
                                c.t = c.t + FOUR
                                c.pc = (c.pc + 2) & 0xFFFF
                                v = c.pc
                                target = (hi << 8) | lo
                                if z == 4:
                                    do_push = cond(rg[R_F], y)
                            elif z == 5:                       # PUSH
                                v = get_rp(rg, rg[R_SP], p)
                                if p == 3:
                                    v = (rg[R_A] << 8) | rg[R_F]
                            if do_push:
                                c.t = c.t + FOUR
                                sp = (rg[R_SP] - 1) & 0xFFFF
                                limit, fast = stack_write8_cpu(ms, env, wram_e, wram_at, hram_e, rg, fast, hram_fast, sp, v >> 8, c.t, limit)
                                c.t = c.t + FOUR
                                sp = (sp - 1) & 0xFFFF
                                limit, fast = stack_write8_cpu(ms, env, wram_e, wram_at, hram_e, rg, fast, hram_fast, sp, v & 0xFF, c.t, limit)
                                c.t = c.t + FOUR
                                rg[R_SP] = sp
                                if z != 5 or q == 1:
                                    c.pc = target
                    elif g == G_POP_RET:  # POP rp2 (q = 0) / RET (C9) / RETI (D9)
                        p = (op >> 4) & 3
                        q = (op >> 3) & 1
                        if wp.static(staged):
                            if q == 0:                     # (popped with the operands)
                                c.w16 = p
                                if p == 3:
                                    c.w16 = 4
                                c.v16 = (imm_hi << 8) | imm
                            else:
                                c.pc = (imm_hi << 8) | imm
                                c.t = c.t + FOUR
                                if p == 1:
                                    rg[R_IME] = 1          # RETI: enabled at once, no EI delay
                                    c.limit = END_RUN
                        else:
                            lo = stack_read8_cpu(ms, env, rom_v, wram_e, wram_at, hram_e, fast, hram_fast, rom0_base, romx_off, rg[R_SP], c.t)
                            c.t = c.t + FOUR
                            hi = stack_read8_cpu(ms, env, rom_v, wram_e, wram_at, hram_e, fast, hram_fast, rom0_base, romx_off, (rg[R_SP] + 1) & 0xFFFF, c.t)
                            c.t = c.t + FOUR
                            rg[R_SP] = (rg[R_SP] + 2) & 0xFFFF
                            if q == 0:
                                if p == 3:                 # POP AF: F's low nibble reads 0
                                    rg[R_A] = hi
                                    rg[R_F] = lo & 0xF0
                                else:
                                    rg[2 * p] = hi
                                    rg[2 * p + 1] = lo
                            else:
                                c.pc = (hi << 8) | lo
                                c.t = c.t + FOUR
                                if p == 1:
                                    rg[R_IME] = 1          # RETI: enabled at once, no EI delay
                                    limit = END_RUN
                    elif g == G_RET_CC:  # RET cc: one internal M-cycle for the condition
                        y = (op >> 3) & 7
                        if wp.static(staged):
                            if operands == 2:              # taken: popped with the operands
                                c.pc = (imm_hi << 8) | imm
                                c.t = c.t + FOUR
                        else:
                            c.t = c.t + FOUR
                            if cond(rg[R_F], y):
                                lo = stack_read8_cpu(ms, env, rom_v, wram_e, wram_at, hram_e, fast, hram_fast, rom0_base, romx_off, rg[R_SP], c.t)
                                c.t = c.t + FOUR
                                hi = stack_read8_cpu(ms, env, rom_v, wram_e, wram_at, hram_e, fast, hram_fast, rom0_base, romx_off, (rg[R_SP] + 1) & 0xFFFF, c.t)
                                c.t = c.t + FOUR
                                rg[R_SP] = (rg[R_SP] + 2) & 0xFFFF
                                c.pc = (hi << 8) | lo
                                c.t = c.t + FOUR
                    elif g == G_ROT_A_MISC:  # RLCA RRCA RLA RRA DAA CPL SCF CCF
                        y = (op >> 3) & 7
                        f = rg[R_F]
                        if y < 4:
                            res = wp.static(rot_for_shape)(f, y, rg[R_A])
                            rg[R_A] = res & 0xFF
                            rg[R_F] = (res >> 8) & CF       # Z always 0 for the A-rotates
                        elif y == 4:
                            res = daa(rg[R_A], f)
                            rg[R_A] = res & 0xFF
                            rg[R_F] = res >> 8
                        elif y == 5:  # CPL
                            rg[R_A] = rg[R_A] ^ 0xFF
                            rg[R_F] = f | NF | HF
                        elif y == 6:  # SCF
                            rg[R_F] = (f & ZF) | CF
                        else:  # CCF
                            rg[R_F] = (f & ZF) | ((f & CF) ^ CF)
                    elif g == G_SP_E8:  # ADD SP, e8 (y = 5) / LD HL, SP+e8: H and C from the unsigned low-byte add
                        y = (op >> 3) & 7
                        if wp.static(staged):
                            rg[R_F] = fl((rg[R_SP] & 15) + (imm & 15) > 15, HF) | fl((rg[R_SP] & 0xFF) + imm > 0xFF, CF)
                            r = (rg[R_SP] + sext8(imm)) & 0xFFFF
                            if y == 5:
                                rg[R_SP] = r
                                c.t = c.t + wp.int64(8)
                            else:
                                c.w16 = 2
                                c.v16 = r
                                c.t = c.t + FOUR
                        else:
                            n = operand8_cpu(ms, env, rom_v, wram_e, hram_e, fast, hram_fast, rom0_base, romx_off, rom0_at, romx_at, rom_lim, c.pc, c.t)
                            c.t = c.t + FOUR
                            c.pc = (c.pc + 1) & 0xFFFF
                            rg[R_F] = fl((rg[R_SP] & 15) + (n & 15) > 15, HF) | fl((rg[R_SP] & 0xFF) + n > 0xFF, CF)
                            r = (rg[R_SP] + sext8(n)) & 0xFFFF
                            if y == 5:
                                rg[R_SP] = r
                                c.t = c.t + wp.int64(8)
                            else:
                                rg[R_H] = r >> 8
                                rg[R_L] = r & 0xFF
                                c.t = c.t + FOUR
                    elif g == G_JP_HL:  # JP HL
                        c.pc = hl(rg[R_H], rg[R_L])
                    elif g == G_LD_SP_HL:  # LD SP, HL
                        rg[R_SP] = hl(rg[R_H], rg[R_L])
                        c.t = c.t + FOUR
                    elif g == G_DI:
                        rg[R_IME] = 0
                        rg[R_EI_PENDING] = 0
                    elif g == G_EI:  # the scheduler runs the next instruction alone, then sets IME
                        rg[R_EI_PENDING] = 1
                        if wp.static(staged):
                            c.limit = END_RUN
                        else:
                            limit = END_RUN
                    elif g == G_NOP:
                        pass
                    elif g == G_HALT:
                        if m.flat_mode != 0:
                            c.t = c.t + wp.int64(8)
                        else:
                            # a request made by the end of HALT's M-cycle counts as pending
                            if c.t >= r64[env, T_NEXT_EVENT]:
                                events_sync(ms, env, c.t)
                            pend = int(hram[env, 127]) & int(io[env, 0x0F]) & 0x1F
                            if pend == 0:
                                rg[R_HALTED] = 1
                            elif rg[R_IME] == 0 and rg[R_EI_PENDING] == 0:
                                rg[R_HALT_BUG] = 1
                            else:
                                # IME=1, or EI just before (its IME takes effect after this HALT), and
                                # a request pending: it is serviced at once, with the HALT's own
                                # address pushed, so the HALT runs again after the handler returns
                                # (Pan Docs, halt bug: "ei" then "halt"; SameSuite ei_delay_halt; a
                                # game loop that HALTs as a timer request comes then sleeps to the
                                # next one)
                                c.pc = (c.pc - 1) & 0xFFFF
                            if wp.static(staged):
                                c.limit = END_RUN
                            else:
                                limit = END_RUN
                    elif g == G_STOP:
                        if m.flat_mode != 0:
                            c.t = c.t + wp.int64(8)
                        else:
                            c.pc = (c.pc + 1) & 0xFFFF
                            if joypad_lines(ms, env) == 0xF:
                                stop_enter(ms, env, c.t)
                                if wp.static(staged):
                                    c.stopped = 1
                                    c.limit = END_RUN
                                else:
                                    stopped = 1
                                    limit = END_RUN
                    elif g == G_LD_NN_SP:  # LD (nn), SP
                        if wp.static(staged):
                            c.wv = rg[R_SP]                    # low byte at nn, high byte at nn + 1
                        else:
                            lo = operand8_cpu(ms, env, rom_v, wram_e, hram_e, fast, hram_fast, rom0_base, romx_off, rom0_at, romx_at, rom_lim, c.pc, c.t)
                            c.t = c.t + FOUR
                            hi = operand8_cpu(ms, env, rom_v, wram_e, hram_e, fast, hram_fast, rom0_base, romx_off, rom0_at, romx_at, rom_lim, (c.pc + 1) & 0xFFFF, c.t)
                            c.t = c.t + FOUR
                            c.pc = (c.pc + 2) & 0xFFFF
                            addr = (hi << 8) | lo
                            limit, fast = write_data8_cpu(ms, env, wram_at, hram_e, vram_e, io_e, rg, r64_e, fast, hram_fast, addr, rg[R_SP] & 0xFF, c.t, limit)
                            c.t = c.t + FOUR
                            limit, fast = write_data8_cpu(ms, env, wram_at, hram_e, vram_e, io_e, rg, r64_e, fast, hram_fast, (addr + 1) & 0xFFFF, rg[R_SP] >> 8, c.t, limit)
                            c.t = c.t + FOUR
                    elif g == G_PUSH:  # (the CPU shape's table only) PUSH rp2: BC DE HL, AF (p = 3: A then F)
                        # (the push is written out here and in G_CALL as in CALL/PUSH/RST's branch: through one
                        # inline helper for the three the count was the same and gamelike ran 1-3% slower)
                        if wp.static(not staged):
                            p = (op >> 4) & 3
                            af = (p >> 1) & p                # 1 for AF, whose bytes lie the other way (rg: ... F A)
                            c.t = c.t + FOUR
                            sp = (rg[R_SP] - 1) & 0xFFFF
                            limit, fast = stack_write8_cpu(ms, env, wram_e, wram_at, hram_e, rg, fast, hram_fast, sp, rg[2 * p + af], c.t, limit)
                            c.t = c.t + FOUR
                            sp = (sp - 1) & 0xFFFF
                            limit, fast = stack_write8_cpu(ms, env, wram_e, wram_at, hram_e, rg, fast, hram_fast, sp, rg[2 * p + 1 - af], c.t, limit)
                            c.t = c.t + FOUR
                            rg[R_SP] = sp
                    elif g == G_CALL:  # (the CPU shape's table only) CALL nn
                        if wp.static(not staged):
                            lo = operand8_cpu(ms, env, rom_v, wram_e, hram_e, fast, hram_fast, rom0_base, romx_off, rom0_at, romx_at, rom_lim, c.pc, c.t)
                            c.t = c.t + FOUR
                            hi = operand8_cpu(ms, env, rom_v, wram_e, hram_e, fast, hram_fast, rom0_base, romx_off, rom0_at, romx_at, rom_lim, (c.pc + 1) & 0xFFFF, c.t)
                            c.t = c.t + FOUR
                            ret = (c.pc + 2) & 0xFFFF
                            c.t = c.t + FOUR
                            sp = (rg[R_SP] - 1) & 0xFFFF
                            limit, fast = stack_write8_cpu(ms, env, wram_e, wram_at, hram_e, rg, fast, hram_fast, sp, ret >> 8, c.t, limit)
                            c.t = c.t + FOUR
                            sp = (sp - 1) & 0xFFFF
                            limit, fast = stack_write8_cpu(ms, env, wram_e, wram_at, hram_e, rg, fast, hram_fast, sp, ret & 0xFF, c.t, limit)
                            c.t = c.t + FOUR
                            rg[R_SP] = sp
                            c.pc = (hi << 8) | lo
                    else:  # G_ILLEGAL: D3 DB DD E3 E4 EB EC ED F4 FC FD, the CPU hangs
                        rg[R_LOCKED] = 1
                        if wp.static(staged):
                            c.limit = END_RUN
                        else:
                            limit = END_RUN
                        c.pc = (c.pc - 1) & 0xFFFF
                    if wp.static(staged):
                        if c.writes != 0:                  # the data stage's write, wv from the branch
                            lim_w, fast_w = write_data8(ms, env, wram_e, hram_e, vram_e, io_e, rg, r64_e, c.fast, hram_fast, daddr, c.wv & 0xFF, c.t, c.limit)
                            c.limit = lim_w
                            c.fast = fast_w
                            c.t = c.t + FOUR
                            if c.writes == 2:                # LD (nn),SP: then the high byte
                                lim_w2, fast_w2 = write_data8(ms, env, wram_e, hram_e, vram_e, io_e, rg, r64_e, c.fast, hram_fast, (daddr + 1) & 0xFFFF, c.wv >> 8, c.t, c.limit)
                                c.limit = lim_w2
                                c.fast = fast_w2
                                c.t = c.t + FOUR
                        # write-back of 16-bit results
                        if c.w16 >= 0:
                            hi16 = (c.v16 >> 8) & 0xFF
                            lo16 = c.v16 & 0xFF
                            if c.w16 < 3:                   # BC DE HL
                                rg[2 * c.w16] = hi16
                                rg[2 * c.w16 + 1] = lo16
                            elif c.w16 == 3:
                                rg[R_SP] = c.v16 & 0xFFFF
                            else:
                                rg[R_A] = hi16
                                rg[R_F] = lo16 & 0xF0
                        running = c.t < c.limit
                    else:
                        running = c.t < limit
                if wp.static(COUNTERS):
                    r64[env, T_COUNT_RUNS] = r64[env, T_COUNT_RUNS] + wp.int64(1)
                if wp.static(staged):
                    if c.limit == END_RUN:
                        slow = 1
                else:
                    if limit == END_RUN:   # a slow path ended the run: reload the cached state
                        slow = 1
                if ei_step != 0 and rg[R_EI_PENDING] != 0:   # (DI in between cancels it)
                    rg[R_IME] = 1
                    rg[R_EI_PENDING] = 0
            if flat == 0:
                r64[env, T_FRAME_START] = t_end
            fi = fi + 1
        if flat == 0:
            sync_all(ms, env, c.t)
        if wp.static(staged):
            store_cpu_staged(ms, env, c)
        else:
            store_cpu(ms, env, c)
            m.r32[env, R_STOPPED] = stopped

    return machine_kernel


# The CPU shape in this module's Warp module (its generated code is the one this module had
# before the CUDA shape came back); the CUDA shape in its own (STAGED_MODULE).
machine_kernel = _make_machine_kernel(False, "machine_kernel", None)
machine_kernel_staged = _make_machine_kernel(True, "machine_kernel_staged", STAGED_MODULE)
# The Warp modules each target compiles from this module (tools/kernel_report.py, gpu_prebuild.py).
WARP_MODULES = {"cuda": [STAGED_MODULE if STAGED_ON_CUDA else __name__],
                "cpu": [STAGED_MODULE if STAGED_ON_CPU else __name__]}


def uses_staged(device) -> bool:
    """Whether `device` runs the CUDA shape: CUDA devices unless GBX_EMU_STAGED=0, the CPU only with
    GBX_EMU_STAGED=1."""
    return STAGED_ON_CUDA if wp.get_device(device).is_cuda else STAGED_ON_CPU


def kernel_for(device):
    """The machine kernel that runs on `device` (machine_kernel or machine_kernel_staged)."""
    return machine_kernel_staged if uses_staged(device) else machine_kernel


def kernel_inputs(m, ref=None) -> list:
    """The Machine's handle followed by the hot-path arrays it holds (machine_kernel's first args).
    `ref`: a MachineRef already built for `m` as it is now (building one costs ~0.25 ms of
    Python, so callers that launch often keep theirs: VecGameBoy.run_frames)."""
    for a in (m.rom, m.wram, m.vram, m.hram, m.oam):   # (dma_sync copies OAM rows by base pointer too)
        if not a.is_contiguous:     # machine_kernel indexes rows from base pointers
            raise ValueError(f"kernel_inputs: expected contiguous machine arrays, got strides {a.strides}")
    for a in (m.r32, m.r64):        # r32_row / r64_row: a base pointer (rows) or the strided row (soa)
        layout = layout_of(a)       # (ValueError if neither)
        if layout == "soa" and not soa_built(a.device):
            raise ValueError("kernel_inputs: r32/r64 in the soa layout need GBX_EMU_LAYOUT=soa at import")
        if layout == "rows" and not a.is_contiguous:
            raise ValueError(f"kernel_inputs: expected contiguous r32/r64 rows, got strides {a.strides}")
    return [machine_ref(m) if ref is None else ref, m.rom, m.cart_ram, m.mbc, m.spec, m.wram, m.vram, m.hram, m.io, m.r64,
            opcode_groups_array(m.rom.device)]
