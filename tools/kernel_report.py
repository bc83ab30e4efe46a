"""The GPU footprint of every Warp kernel, without a GPU: registers, stack frame and spills per function.

    python tools/kernel_report.py                       # every kernel module, sm_90
    python tools/kernel_report.py --modules gbx_lightning.emu.cpu --arch 90 --json report.json

Each module is compiled to PTX by Warp's bundled NVRTC (`wp.compile_aot_module(..., use_ptx=True)`,
into Warp's kernel cache: a module compiled before is not compiled again), then assembled by
`ptxas -v` for the same architecture, whose info lines give, per kernel entry and per function
it calls out of line: the registers used (kernels only: a called function shares its caller's), the
stack frame in bytes, and the bytes of register spills stored to and loaded from local memory.

Why it matters: an SM has 65,536 registers; at 255 per thread it holds 8 warps (12.5% occupancy),
and every spill byte is a round trip to local memory (L1, then L2/HBM). A stack frame is local
memory too, reserved for every resident thread.

ptxas comes from the optional `gpu-dev` extra (`pip install -e ".[gpu-dev]"`, the nvidia-cuda-nvcc
wheel), a CUDA toolkit on PATH, or $PTXAS. The ptxas report is cached beside the PTX (keyed by
the PTX's hash), since the machine kernel takes ptxas about a minute.
"""
from __future__ import annotations

import argparse
import hashlib
import importlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MODULES = ["gbx_lightning.emu.cpu", "gbx_lightning.emu.machine", "gbx_lightning.emu.mbc",
           "gbx_lightning.emu.savestate", "gbx_lightning.envs.foraging_kernels", "gbx_lightning.envs.pixels"]
FIELDS = ("registers", "stack", "spill_stores", "spill_loads")


def find_ptxas() -> str | None:
    """$PTXAS, the nvidia-cuda-nvcc wheel's ptxas, or ptxas on PATH; None if there is none."""
    if os.environ.get("PTXAS"):
        return os.environ["PTXAS"]
    try:
        import nvidia
        for base in nvidia.__path__:
            for sub in ("cu13/bin/ptxas", "cuda_nvcc/bin/ptxas", "cu12/bin/ptxas"):
                if (Path(base) / sub).is_file():
                    return str(Path(base) / sub)
    except ImportError:
        pass
    return shutil.which("ptxas")


def _short_name(symbol: str) -> str:
    """A readable name for a ptxas symbol: Warp's entry `machine_kernel_<hash>_cuda_kernel_forward` ->
    `machine_kernel`; a mangled out-of-line function `_ZN<ns><len>io_write_0E...` -> `io_write`."""
    m = re.fullmatch(r"(\w+?)_[0-9a-f]{8}_cuda_kernel_forward", symbol)
    if m:
        return m.group(1)
    if symbol.startswith("_ZN"):
        rest = symbol[3:]
        parts = []
        while rest and rest[0].isdigit():
            n = re.match(r"\d+", rest).group(0)
            rest = rest[len(n):]
            parts.append(rest[:int(n)])
            rest = rest[int(n):]
        if parts:
            return re.sub(r"_\d+$", "", parts[-1])
    return symbol


def parse_ptxas(text: str) -> list[dict]:
    """Rows {function, kind (kernel|function), registers (kernels), stack, spill_stores, spill_loads}."""
    rows: dict[str, dict] = {}
    current = None
    for line in text.splitlines():
        m = re.search(r"Function properties for (\S+)", line)
        if m:
            current = rows.setdefault(m.group(1), {"function": _short_name(m.group(1)), "kind": "function",
                                                   "registers": None})
            continue
        m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m and current is not None:
            current.update(stack=int(m.group(1)), spill_stores=int(m.group(2)), spill_loads=int(m.group(3)))
            continue
        m = re.search(r"Compiling entry function '(\S+)'", line)
        if m:
            current = rows.setdefault(m.group(1), {"function": _short_name(m.group(1)), "kind": "kernel",
                                                   "registers": None})
            current["kind"] = "kernel"
            continue
        m = re.search(r"Used (\d+) registers", line)
        if m and current is not None:
            current["registers"] = int(m.group(1))
    return list(rows.values())


def module_report(name: str, arch: int = 90, ptxas: str | None = None) -> list[dict]:
    """ptxas's figures for every function of Python module `name` (imported here) as the GPU runs it,
    compiled for sm_`arch`: its Warp module, or the ones its WARP_MODULES names for CUDA."""
    ptxas = ptxas or find_ptxas()
    if ptxas is None:
        raise FileNotFoundError("ptxas not found: pip install -e \".[gpu-dev]\" (nvidia-cuda-nvcc), or set $PTXAS")
    # a Python module may register its CUDA kernels in Warp modules of their own (WARP_MODULES:
    # gbx_lightning.emu.cpu's CUDA-shaped machine kernel): report those, the code the GPU runs
    targets = getattr(importlib.import_module(name), "WARP_MODULES", {}).get("cuda", [name])
    rows = []
    for target in targets:
        rows += _warp_module_report(target, arch, ptxas)
    return [dict(r, module=name) for r in rows]


def _warp_module_report(name: str, arch: int, ptxas: str) -> list[dict]:
    """ptxas's figures for every function of Warp module `name`."""
    import warp as wp

    (ptx_path,) = wp.compile_aot_module(name, arch=arch, use_ptx=True)
    ptx = Path(ptx_path).read_bytes().rstrip(b"\0")      # NVRTC's PTX ends with a NUL ptxas refuses
    digest = hashlib.sha256(ptx).hexdigest()
    cache = Path(ptx_path).with_suffix(".ptxas.json")
    if cache.is_file():
        saved = json.loads(cache.read_text())
        if saved.get("ptx_sha256") == digest and saved.get("ptxas") == ptxas:
            return saved["rows"]
    clean = Path(ptx_path).with_suffix(".clean.ptx")
    clean.write_bytes(ptx)
    try:
        out = subprocess.run([ptxas, "-v", f"-arch=sm_{arch}", str(clean), "-o", os.devnull],
                             capture_output=True, text=True, check=True)
    finally:
        clean.unlink(missing_ok=True)
    rows = parse_ptxas(out.stdout + out.stderr)
    cache.write_text(json.dumps({"ptx_sha256": digest, "ptxas": ptxas, "rows": rows}))
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--modules", nargs="+", default=MODULES)
    ap.add_argument("--arch", type=int, default=90)
    ap.add_argument("--json", default=None, help="also write the rows to this file")
    args = ap.parse_args(argv)
    ptxas = find_ptxas()
    if ptxas is None:
        print("kernel_report: ptxas not found; install the gpu-dev extra (pip install -e \".[gpu-dev]\"), "
              "a CUDA toolkit, or set $PTXAS")
        return 2
    sys.path.insert(0, str(REPO))
    import warp as wp

    wp.config.quiet = True
    wp.config.log_level = wp.LOG_WARNING
    wp.init()
    rows = []
    print(f"sm_{args.arch}, {ptxas}")
    print(f"{'module':28s} {'function':24s} {'kind':8s} {'regs':>5s} {'stack':>6s} {'spill st':>8s} {'spill ld':>8s}")
    for name in args.modules:
        mod_rows = sorted(module_report(name, args.arch, ptxas),
                          key=lambda r: (r["kind"] != "kernel", -(r["spill_stores"] + r["stack"]), r["function"]))
        for r in mod_rows:
            regs = "" if r["registers"] is None else str(r["registers"])
            print(f"{name.replace('gbx_lightning.', ''):28s} {r['function']:24s} {r['kind']:8s} {regs:>5s} "
                  f"{r['stack']:6d} {r['spill_stores']:8d} {r['spill_loads']:8d}", flush=True)
        rows += mod_rows
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
