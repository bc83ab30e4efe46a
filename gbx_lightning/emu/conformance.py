"""Run SM83 single-step cases (SingleStepTests JSON format) on the machine's own CPU code.

Each case is one env; all cases run in ONE launch of the machine kernel in flat mode: the
bus is a flat 64 KiB RAM without I/O side effects or cartridge mapping (stored sparsely:
only the addresses a case lists or writes), interrupts and events are off, and exactly one
instruction executes. Returned: the final state in the case format (registers, ime, "ei"
when an EI is pending, "ram" = every touched address) plus "cycles" = M-cycles taken.
HALT and STOP follow the cases' convention on this bus (see cpu.py).
"""
from __future__ import annotations

import numpy as np
import warp as wp

from . import state as S
from .cpu import kernel_for, kernel_inputs
from .machine import RENDER_MODES
from .state import Machine

REG_ORDER = ("a", "f", "b", "c", "d", "e", "h", "l", "sp", "pc")
MAX_SLOTS = 16


def run_sm83_cases(cases: list[dict], device: str = "cpu") -> list[dict]:
    if not isinstance(cases, (list, tuple)):
        raise TypeError(f"cases: expected a list of case dicts, got {type(cases).__name__}")
    n = len(cases)
    if n == 0:
        return []
    dev = wp.get_device(device)
    r32 = np.zeros((n, S.NUM_R32), np.int32)
    r64 = np.zeros((n, S.NUM_R64), np.int64)
    faddr = np.full((n, MAX_SLOTS), -1, np.int32)
    fval = np.zeros((n, MAX_SLOTS), np.uint8)
    for i, case in enumerate(cases):
        try:
            init = case["initial"]
            for name in REG_ORDER:
                r32[i, S.REG_SLOTS[name]] = int(init[name])
            r32[i, S.R_IME] = int(init.get("ime", 0))
            r32[i, S.R_EI_PENDING] = int(init.get("ei", 0))
            ram = init["ram"]
        except (KeyError, TypeError) as exc:
            raise ValueError(f"cases[{i}]: expected an 'initial' state with "
                             f"{', '.join(REG_ORDER)}, ime and ram; missing {exc}") from None
        if len(ram) > MAX_SLOTS // 2:
            raise ValueError(f"cases[{i}]: expected at most {MAX_SLOTS // 2} ram entries, got {len(ram)}")
        for k, (addr, val) in enumerate(ram):
            faddr[i, k] = int(addr)
            fval[i, k] = int(val)
    never = int(S.NEVER.value if hasattr(S.NEVER, "value") else S.NEVER)
    r64[:, S.T_NEXT_EVENT] = never

    def dummy(shape, dt):
        return wp.zeros(shape, dtype=dt, device=dev)

    m = Machine()
    m.rom = dummy(1, wp.uint8)
    m.boot = dummy(256, wp.uint8)
    m.io_rmask = wp.array(S.IO_READ_MASK, dtype=wp.uint8, device=dev)
    m.spec = S.CartSpec()
    m.cart_ram = dummy((1, 1), wp.uint8)
    m.mbc = dummy((1, 1), wp.int32)
    for name, shape in (("wram", 1), ("vram", 1), ("oam", 1), ("hram", 128), ("io", 128),
                        ("serial", 1)):
        setattr(m, name, dummy((1, shape), wp.uint8))
    m.frame = dummy((1, 1, 1), wp.uint8)
    m.obs = dummy((1, 1, 1), wp.uint8)
    m.line_buf = dummy((1, 1), wp.uint64)
    m.bit_bytes = dummy((1,), wp.uint64)
    m.r32 = wp.array(r32, device=dev)
    m.r64 = wp.array(r64, device=dev)
    m.flat_addr = wp.array(faddr, device=dev)
    m.flat_val = wp.array(fval, device=dev)
    m.flat_mode = 1
    m.render_mode = RENDER_MODES["none"]
    buttons = wp.zeros(n, dtype=wp.uint8, device=dev)
    wp.launch(kernel_for(dev), dim=n, inputs=kernel_inputs(m) + [0, buttons, 0, -1], device=dev)
    r32 = m.r32.numpy()
    r64 = m.r64.numpy()
    faddr = m.flat_addr.numpy()
    fval = m.flat_val.numpy()
    out = []
    for i in range(n):
        fin = {name: int(r32[i, S.REG_SLOTS[name]]) for name in REG_ORDER}
        fin["ime"] = int(r32[i, S.R_IME])
        if r32[i, S.R_EI_PENDING]:
            fin["ei"] = 1
        used = faddr[i] >= 0
        fin["ram"] = sorted([int(a), int(v)] for a, v in zip(faddr[i][used], fval[i][used]))
        out.append({"name": cases[i].get("name", str(i)), "final": fin,
                    "cycles": int(r64[i, S.T_NOW]) // 4})
    return out


def compare_case(case: dict, result: dict) -> list[str]:
    """Differences between a case's expected final state / cycle count and a result."""
    diffs = []
    exp = case["final"]
    got = result["final"]
    for key in REG_ORDER + ("ime",):
        if int(exp[key]) != got[key]:
            diffs.append(f"{key}: expected {exp[key]}, got {got[key]}")
    if int(exp.get("ei", 0)) != got.get("ei", 0):
        diffs.append(f"ei: expected {exp.get('ei', 0)}, got {got.get('ei', 0)}")
    mem = {a: v for a, v in got["ram"]}
    for addr, val in exp["ram"]:
        if mem.get(int(addr), 0) != int(val):
            diffs.append(f"ram[{addr:#06x}]: expected {val}, got {mem.get(int(addr))}")
    if len(case["cycles"]) != result["cycles"]:
        diffs.append(f"cycles: expected {len(case['cycles'])}, got {result['cycles']}")
    return diffs
