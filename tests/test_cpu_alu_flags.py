"""The CPU shape's ALU A,(HL) / ALU A,n (cpu.alu_store: flags without compares) against the SM83's
ALU as Pan Docs defines it (CPU instruction set, 8-bit arithmetic and logic), every operation on
every A, operand and carry in: 8 x 256 x 256 x 2 cases in one launch."""
import numpy as np
import warp as wp

from gbx_lightning.emu import cpu
from gbx_lightning.emu.state import R_A, R_F

N = 8 * 256 * 256 * 2


@wp.kernel
def _alu_all(regs: wp.array2d(dtype=wp.int32)):
    i = wp.tid()
    op = i >> 17
    v = (i >> 1) & 0xFF
    rg = wp.array(ptr=wp.uint64(regs.ptr) + wp.uint64(i) * wp.uint64(32), shape=(8,), dtype=wp.int32)
    cpu.alu_store(rg, op, v)


def _reference(op, a, v, cy):
    """(A, F) after ADD ADC SUB SBC AND XOR OR CP (op 0..7), from the hardware's definitions."""
    if op in (0, 1):
        c = cy if op == 1 else 0
        r = a + v + c
        return r & 0xFF, (0x80 if r & 0xFF == 0 else 0) | (0x20 if (a & 15) + (v & 15) + c > 15 else 0) \
            | (0x10 if r > 0xFF else 0)
    if op in (2, 3, 7):
        c = cy if op == 3 else 0
        r = (a - v - c) & 0xFF
        f = (0x80 if r == 0 else 0) | 0x40 | (0x20 if (a & 15) < (v & 15) + c else 0) | (0x10 if a < v + c else 0)
        return (a if op == 7 else r), f
    r = (a & v, a ^ v, a | v)[op - 4]
    return r, (0x80 if r == 0 else 0) | (0x20 if op == 4 else 0)


def test_alu_store_matches_the_sm83_alu_on_every_input():
    i = np.arange(N)
    op, a, v, cy = i >> 17, (i >> 9) & 0xFF, (i >> 1) & 0xFF, i & 1
    regs = np.zeros((N, 8), np.int32)
    regs[:, R_A] = a
    regs[:, R_F] = (cy << 4) | np.where(a & 1, 0xE0, 0)     # (Z N H in on half: results must not depend on them)
    arr = wp.array(regs, dtype=wp.int32, device="cpu")
    wp.launch(_alu_all, dim=N, inputs=[arr], device="cpu")
    out = arr.numpy()
    ref = np.array([_reference(o, x, y, c) for o, x, y, c in zip(op.tolist(), a.tolist(), v.tolist(), cy.tolist())])
    bad = np.nonzero((out[:, R_A] != ref[:, 0]) | (out[:, R_F] != ref[:, 1]))[0]
    assert bad.size == 0, (f"{bad.size} cases differ, first: op {op[bad[0]]} a {a[bad[0]]:#04x} v {v[bad[0]]:#04x} "
                           f"cy {cy[bad[0]]}: got A {out[bad[0], R_A]:#04x} F {out[bad[0], R_F]:#04x}, "
                           f"expected A {ref[bad[0], 0]:#04x} F {ref[bad[0], 1]:#04x}")
