"""The machine kernel's CUDA shape (cpu.machine_kernel_staged: operands read once after the fetch,
the data byte read and written at one place, the loop state in a struct) runs exactly like the CPU
shape (cpu.machine_kernel). GBX_EMU_STAGED=1 makes the CPU device run the CUDA shape, so this is
checked without a GPU: a few ROMs with the same random buttons, and the SM83 cases, in two processes
(the knob's own route, end to end), every state array compared after every step. Every test ROM and
random programs are compared in one process, both kernels built for the CPU, by
tests/test_shape_parity.py. (CUDA == CPU on a device: tools/bench_gpu.py parity.)"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

# The CPU-test workload (every opcode group), MBC3 far calls with POP AF at a frame's start, OAM DMA
# from HRAM, and a PPU register written in mode 3 (the per-dot path): the rest of tests/roms runs in
# tests/test_shape_parity.py.
ROMS = ("workload", "far_call", "idiom_dma", "ppu_m3_lcdc_win")

# Run in a fresh process: the shape the CPU device runs is fixed when gbx_lightning.emu.cpu is imported.
SCRIPT = r"""
import gzip, hashlib, json, sys
import numpy as np
import warp as wp
wp.config.quiet = True
sys.path.insert(0, sys.argv[1] + "/tools")
from bench_emu import load_rom
from gbx_lightning.emu import VecGameBoy, cpu
from gbx_lightning.emu.conformance import run_sm83_cases

out = {"staged": cpu.uses_staged("cpu"), "rom": {}}
rng = np.random.default_rng(7)
for name in sys.argv[2].split(","):
    gb = VecGameBoy(load_rom(name)[0], 4)
    steps = []
    for step in range(3):
        gb.run_frames(20, buttons=rng.integers(0, 256, 4).astype(np.uint8), release_after=7,
                      render=("obs", "full", "none")[step])
        snap = gb.snapshot()
        steps.append({k: hashlib.sha256(v.numpy().tobytes()).hexdigest()[:16] for k, v in sorted(snap.arrays.items())})
    out["rom"][name] = steps
with gzip.open(sys.argv[1] + "/tests/fixtures/sm83/sample.json.gz", "rt") as fh:
    cases = [c for v in json.load(fh).values() for c in v]
out["sm83"] = hashlib.sha256(json.dumps(run_sm83_cases(cases), sort_keys=True).encode()).hexdigest()
out["sm83_cases"] = len(cases)
print(json.dumps(out))
"""


def _run(staged: bool) -> dict:
    env = dict(os.environ, GBX_EMU_STAGED="1" if staged else "0", PYTHONPATH=str(REPO))
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(REPO), ",".join(ROMS)], capture_output=True,
                          text=True, env=env, cwd=str(REPO))
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_cuda_shape_runs_like_the_cpu_shape():
    pytest.importorskip("warp")
    cpu_shape, cuda_shape = _run(False), _run(True)
    assert (cpu_shape["staged"], cuda_shape["staged"]) == (False, True)
    assert cpu_shape["sm83_cases"] > 0
    assert cuda_shape["sm83"] == cpu_shape["sm83"], "the SM83 cases end differently in the CUDA shape"
    assert sorted(cpu_shape["rom"]) == sorted(ROMS)
    for name, steps in cpu_shape["rom"].items():
        for step, (a, b) in enumerate(zip(steps, cuda_shape["rom"][name])):
            diff = sorted(k for k in a if a[k] != b[k])
            assert not diff, f"{name}, step {step}: the CUDA shape's {diff} differ from the CPU shape's"


def test_each_device_gets_its_shape():
    """CUDA devices launch the CUDA shape, the CPU the CPU shape (unless GBX_EMU_STAGED=1); each
    shape is in its own Warp module, so a target compiles only its own kernel."""
    from gbx_lightning.emu import cpu
    assert cpu.machine_kernel.module is not cpu.machine_kernel_staged.module
    assert cpu.machine_kernel_staged.module.name == cpu.STAGED_MODULE
    assert cpu.kernel_for("cpu") is (cpu.machine_kernel_staged if cpu.STAGED_ON_CPU else cpu.machine_kernel)
    assert [a.label for a in cpu.machine_kernel.adj.args] == [a.label for a in cpu.machine_kernel_staged.adj.args]


def test_staged_knob_picks_each_targets_module():
    """GBX_EMU_STAGED (read at import) picks the shape per target: unset, CUDA builds the CUDA shape and
    the CPU its own; 0, CUDA builds the CPU shape (the device check's baseline); 1, the CPU builds the
    CUDA shape; anything else is refused by name."""
    probe = ("from gbx_lightning.emu import cpu; import json; "
             "print(json.dumps([cpu.WARP_MODULES, cpu.uses_staged('cpu')]))")
    want = {"": ({"cuda": ["gbx_lightning.emu.cpu_staged"], "cpu": ["gbx_lightning.emu.cpu"]}, False),
            "0": ({"cuda": ["gbx_lightning.emu.cpu"], "cpu": ["gbx_lightning.emu.cpu"]}, False),
            "1": ({"cuda": ["gbx_lightning.emu.cpu_staged"], "cpu": ["gbx_lightning.emu.cpu_staged"]}, True)}
    for value, (modules, on_cpu) in want.items():
        env = dict(os.environ, GBX_EMU_STAGED=value, PYTHONPATH=str(REPO))
        out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True)
        assert json.loads(out.stdout.strip().splitlines()[-1]) == [modules, on_cpu], value
    env = dict(os.environ, GBX_EMU_STAGED="yes", PYTHONPATH=str(REPO))
    bad = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True)
    assert bad.returncode != 0
    assert "GBX_EMU_STAGED: expected 0, 1 or unset, got 'yes'" in bad.stderr


def test_operand_bytes_table():
    """The operand bytes the CUDA shape reads right after each fetch: the opcode's length - 1
    (Pan Docs, CPU instruction set), none for STOP (its second byte is skipped unread) and for the
    illegal opcodes; $CB's one is the prefixed opcode. The device table's second 256 bytes hold
    them above the group, its third ACCESS."""
    from gbx_lightning.emu import cpu
    ops = cpu.OPERAND_BYTES
    assert [op for op in range(256) if ops[op] == 2] == [
        0x01, 0x08, 0x11, 0x21, 0x31, 0xC2, 0xC3, 0xC4, 0xCA, 0xCC, 0xCD, 0xD2, 0xD4, 0xDA, 0xDC, 0xEA, 0xFA]
    assert [op for op in range(256) if ops[op] == 1] == [
        0x06, 0x0E, 0x16, 0x18, 0x1E, 0x20, 0x26, 0x28, 0x2E, 0x30, 0x36, 0x38, 0x3E, 0xC6, 0xCB, 0xCE,
        0xD6, 0xDE, 0xE0, 0xE6, 0xE8, 0xEE, 0xF0, 0xF6, 0xF8, 0xFE]
    table = cpu.opcode_groups_array("cpu").numpy().astype(int)
    # the CPU shape's 256: PUSH rr and CALL nn in groups of their own, the rest as the CUDA shape's
    split = {op: cpu.G_PUSH for op in (0xC5, 0xD5, 0xE5, 0xF5)} | {0xCD: cpu.G_CALL}
    assert (table[:256] == [split.get(op, cpu.OPCODE_GROUPS[op]) for op in range(256)]).all()
    assert all(cpu.OPCODE_GROUPS[op] == cpu.G_CALL_PUSH_RST for op in split)
    assert ((table[256:512] & 63) == cpu.OPCODE_GROUPS).all() and ((table[256:512] >> 6) == ops).all()
    assert (table[512:768] == cpu.ACCESS).all()


def test_inc_dec_table():
    """The CPU shape's INC r / DEC r from the decode table's last 1,024 bytes (dec << 8 | v: the
    result, then Z N H 512 bytes on), against Pan Docs' flags: Z if the result is 0, N for DEC, H on
    a carry out of (INC) or a borrow into (DEC) bit 3."""
    from gbx_lightning.emu import cpu
    table = cpu.opcode_groups_array("cpu").numpy().astype(int)
    inc_dec = table[768:]
    assert len(inc_dec) == 1024

    def run(dec, v):
        return inc_dec[dec << 8 | v], inc_dec[512 + (dec << 8 | v)]
    assert run(0, 0x00) == (0x01, 0x00)
    assert run(0, 0x0F) == (0x10, 0x20)          # H
    assert run(0, 0xFF) == (0x00, 0xA0)          # Z H
    assert run(0, 0x7F) == (0x80, 0x20)
    assert run(1, 0x01) == (0x00, 0xC0)          # Z N
    assert run(1, 0x00) == (0xFF, 0x60)          # N H (borrow into bit 3)
    assert run(1, 0x10) == (0x0F, 0x60)
    assert run(1, 0x80) == (0x7F, 0x60)
    assert run(1, 0x42) == (0x41, 0x40)
    # no other bit set: C is the old F's, the low nibble 0
    assert ((inc_dec[512:] & 0x1F) == 0).all()


def test_data_access_table():
    """The data byte each base opcode reads or writes, as its mnemonic says (opcodes.py): the
    memory operand's addressing, read when it is a source (or INC/DEC's operand), written when it
    is the destination; LD (a16),SP writes two bytes; $CB's access depends on the second byte
    (resolved in the loop)."""
    from gbx_lightning.emu import cpu
    from gbx_lightning.emu.opcodes import BASE
    modes = {"(HL)": cpu.A_HL, "(HL+)": cpu.A_HL, "(HL-)": cpu.A_HL, "(BC)": cpu.A_RP, "(DE)": cpu.A_RP,
             "(a8)": cpu.A_FF_IMM, "(C)": cpu.A_FF_C, "(a16)": cpu.A_NN}
    for op in range(256):
        acc = int(cpu.ACCESS[op])
        if op == 0xCB:
            assert acc == cpu.A_CB | cpu.A_READS | 1 << 4
            continue
        name, _, args = BASE[op].mnemonic.partition(" ")
        operands = args.split(",")
        mem = [i for i, a in enumerate(operands) if a in modes]
        if not mem or name in ("JP", "CALL"):
            assert acc == cpu.A_NONE, BASE[op].mnemonic
            continue
        (i,) = mem
        written = name in ("INC", "DEC") or (name in ("LD", "LDH") and i == 0)
        read = name != "LD" and name != "LDH" or i == 1
        expect = modes[operands[i]] | (cpu.A_READS if read else 0) | ((2 if operands[1:] == ["SP"] else 1) << 4
                                                                         if written else 0)
        assert acc == expect, (BASE[op].mnemonic, acc, expect)
