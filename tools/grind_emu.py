"""Where the emulator's time goes, in x86 instructions: VecGameBoy under valgrind's callgrind, the
machine kernel's cost split by compiled function, the working tree against a git revision.

    python tools/grind_emu.py [--base 9ad76ec] [--rom workload] [--render none] [--envs 16]
                              [--frames 60] [--skip 30] [--top 25]

--rom takes a comma-separated list: one valgrind run measures every ROM on both sides.
--gambatte also counts gambatte on the same ROMs, frames and buttons (its whole process per frame:
the emulator, the binding, the frame's Python call) and prints gambatte / ours, a deterministic
stand-in for the per-core speed ratio tools/bench_emu.py times (docs/performance.md, issue 38).

Instruction counts are deterministic, so unlike wall-clock or CPU-time figures they do not move
with the load of a shared machine: the same ROM, frames and buttons (Right held) give the same
count on every run. Each side (the `--base` revision's gbx_lightning/emu and the working tree's,
exported as tools/ab_emu.py does) runs in one child process under
`valgrind --tool=callgrind --instr-atstart=no`: the child builds the machine, runs `--skip`
frames (Warp compile or cache load, boot, the ROM's set-up) uninstrumented, then switches
instrumentation on (callgrind's client requests, through a 3-line C helper built here with cc)
for the `--frames` frames it measures, in one run_frames call (`--per-frame`: one call per frame).

Warp loads the CPU module's object file into memory that valgrind knows no symbols for, so the
child also records where the kernel landed (the forward function's address from Warp's loader)
and the parent maps every instruction address onto the object file's symbols (`nm`): the
out-of-line functions (apu_write, ppu_sync, io_write, bus_read, ...) each get their own line,
and the machine kernel's body with everything inlined into it (the instruction loop, read8,
write_data8, ...) one line. Outside: Warp's launch code and Python, per launch.
Figures are per emulated frame per env (cost / (frames x envs)): x86 instructions (Ir), and with
--sim callgrind's simulated branch mispredictions and data cache misses (a simple model: a proxy,
not what the host CPU does). --addresses EVENT lists the kernel body's costliest instructions.

Caveat: under valgrind the CPU that Warp detects is valgrind's (a reduced feature set), so Warp
compiles the module for it, a separate object in the kernel cache (compiled on the first run:
minutes); the counts are that build's, close to the native build's but not the same code. Pass
--envs small (2): the count per env-frame does not depend on it, valgrind's time does.
"""
from __future__ import annotations

import argparse
import ctypes
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

CLIENT_C = r"""
#include <valgrind/callgrind.h>
void grind_start(void) { CALLGRIND_ZERO_STATS; CALLGRIND_START_INSTRUMENTATION; }
void grind_stop(void) { CALLGRIND_STOP_INSTRUMENTATION; CALLGRIND_DUMP_STATS; }
"""


def build_client(tmp: Path) -> Path:
    src, lib = tmp / "grind_client.c", tmp / "grind_client.so"
    src.write_text(CLIENT_C)
    subprocess.run(["cc", "-shared", "-fPIC", "-O1", "-o", str(lib), str(src)], check=True)
    return lib


def child(args) -> int:
    """Runs under valgrind: for each package and ROM, build, skip, measure (one callgrind dump
    each, in this order), and record where each package's kernel landed."""
    import numpy as np
    import warp as wp

    wp.config.quiet = True
    sys.path.insert(0, args.pkgdir)
    import importlib

    from bench_emu import load_rom

    lib = ctypes.CDLL(args.client)
    runs, maps = [], {}
    for pkg in args.pkg.split(","):
        emu = importlib.import_module(pkg)
        for spec in args.rom.split(","):
            rom, _ = load_rom(spec)
            gb = emu.VecGameBoy(rom, args.envs)
            buttons = np.full(args.envs, 1, np.uint8)
            for _ in range(args.skip):
                gb.run_frames(1, buttons=buttons, render=args.render)
            wp.synchronize()
            lib.grind_start()
            if args.per_frame:
                for _ in range(args.frames):
                    gb.run_frames(1, buttons=buttons, render=args.render)
            else:
                gb.run_frames(args.frames, buttons=buttons, render=args.render)
            wp.synchronize()
            lib.grind_stop()
            runs.append([pkg, spec])
        kernel = emu.cpu.kernel_for("cpu") if hasattr(emu.cpu, "kernel_for") else emu.cpu.machine_kernel
        execs = [e for e in kernel.module.execs.values() if e is not None]
        forward = ctypes.cast(execs[0].get_kernel_hooks(kernel).forward, ctypes.c_void_p).value
        maps[pkg] = {"forward": forward, "object": str(execs[0].binary_path)}
    if args.gambatte:
        sys.path.insert(0, str(REPO / "tests"))
        import oracles

        for spec in args.rom.split(","):
            g = oracles.Gambatte(load_rom(spec)[0])
            for _ in range(args.skip):
                g.step(1)
            lib.grind_start()
            for _ in range(args.frames):
                g.step(1)
            lib.grind_stop()
            runs.append(["gambatte", spec])
    Path(args.map_out).write_text(json.dumps({"runs": runs, "maps": maps}))
    return 0


def object_symbols(obj: str) -> list[tuple[int, int, str]]:
    """(offset in .text, size, demangled name) of every function in the object file."""
    out = subprocess.run(["nm", "-S", "-C", "--defined-only", obj], capture_output=True, text=True,
                         check=True).stdout
    syms = []
    for line in out.splitlines():
        parts = line.split(None, 3)
        if len(parts) == 4 and parts[2] in "tT":
            name = re.sub(r"\(.*", "", parts[3])
            name = re.sub(r"_\d+$", "", name)
            syms.append((int(parts[0], 16), int(parts[1], 16), name))
    return sorted(syms)


def instr_costs(callgrind_out: Path) -> dict[int, list[int]]:
    """Self cost per instruction address (one value per event: Ir, and with --sim the branch and
    cache simulation's events) from a callgrind output file made with --dump-instr=yes
    --dump-line=no --compress-pos=no (each cost line: "address cost...")."""
    costs: dict[int, list[int]] = {}
    in_call = False
    n = 1
    for line in callgrind_out.read_text().splitlines():
        if not line.startswith("0x"):
            if line.startswith("events:"):
                n = len(line.split()) - 1
            in_call = line.startswith("calls=")
            continue
        if in_call:          # the line after calls= is the call's inclusive cost, not self cost
            in_call = False
            continue
        fields = line.split()
        addr = int(fields[0], 16)
        acc = costs.setdefault(addr, [0] * n)
        for k, v in enumerate(fields[1:n + 1]):
            acc[k] += int(v)
    return costs


def event_names(callgrind_out: Path) -> list[str]:
    for line in callgrind_out.read_text().splitlines():
        if line.startswith("events:"):
            return line.split()[1:]
    return ["Ir"]


def attribute(costs: dict[int, list[int]], mapping: dict) -> dict[str, list[int]]:
    """Cost by function of the kernel's object file (else 'outside the kernel's module')."""
    import bisect

    syms = object_symbols(mapping["object"])
    fwd = [s for s in syms if s[2].endswith("_cpu_forward")]
    base = mapping["forward"] - fwd[0][0]
    starts = [s[0] for s in syms]
    out: dict[str, list[int]] = {}
    body = fwd[0]
    out_addr = {}
    for addr, cost in costs.items():
        if body[0] <= addr - base < body[0] + body[1]:
            out_addr[addr - base] = cost
        off = addr - base
        i = bisect.bisect_right(starts, off) - 1
        if i >= 0 and off < syms[i][0] + max(syms[i][1], 1):
            name = syms[i][2]
            name = "machine kernel (body, inlined helpers)" if name.endswith("_cpu_forward") else name
        else:
            name = "(outside the kernel's module: launch, Python)"
        acc = out.setdefault(name, [0] * len(cost))
        for k, v in enumerate(cost):
            acc[k] += v
    out["__addresses__"] = out_addr        # (kernel body offsets in the object file: --addresses)
    return out


def grind(tmp: Path, pkgs: list[str], roms: list[str], args, client: Path) -> dict:
    """{(pkg, rom): {function: Ir}} from one valgrind run of every package on every ROM."""
    out, mapf = tmp / "callgrind.out", tmp / "map.json"
    cmd = ["valgrind", "--tool=callgrind", "--instr-atstart=no", "--dump-instr=yes", "--dump-line=no",
           "--compress-pos=no", f"--callgrind-out-file={out}"] + (["--branch-sim=yes", "--cache-sim=yes"] if args.sim else []) + [
           sys.executable, str(Path(__file__).resolve()), "--child", "--pkgdir", str(tmp), "--pkg", ",".join(pkgs),
           "--client", str(client), "--map-out", str(mapf), "--rom", ",".join(roms), "--render", args.render,
           "--envs", str(args.envs), "--frames", str(args.frames), "--skip", str(args.skip)]
    if args.per_frame:
        cmd.append("--per-frame")
    if args.gambatte:
        cmd.append("--gambatte")
    proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"grind_emu: the valgrind run failed:\n{proc.stderr[-3000:]}")
    info = json.loads(mapf.read_text())
    dumps = sorted(tmp.glob("callgrind.out.*"), key=lambda p: int(p.name.rsplit(".", 1)[1]))
    if len(dumps) != len(info["runs"]):
        raise SystemExit(f"grind_emu: expected {len(info['runs'])} callgrind dumps, found {len(dumps)}")
    events = event_names(dumps[0])
    return events, {tuple(run): (dump_totals(d) if run[0] == "gambatte" else attribute(instr_costs(d), info["maps"][run[0]]))
                    for run, d in zip(info["runs"], dumps)}


def dump_totals(callgrind_out: Path) -> list[int]:
    """The whole dump's cost per event (its totals: line): gambatte's, every function of the process."""
    for line in callgrind_out.read_text().splitlines():
        if line.startswith("totals:"):
            return [int(v) for v in line.split()[1:]]
    raise SystemExit(f"grind_emu: no totals line in {callgrind_out}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", default=None, help="git revision to compare against (default: none)")
    ap.add_argument("--rom", default="workload", help="ROM file or tests/roms source name")
    ap.add_argument("--render", default="none", choices=["full", "obs", "none"])
    ap.add_argument("--envs", type=int, default=16)
    ap.add_argument("--frames", type=int, default=60, help="frames measured")
    ap.add_argument("--skip", type=int, default=30, help="frames run before measuring")
    ap.add_argument("--per-frame", action="store_true", help="one launch per frame")
    ap.add_argument("--top", type=int, default=25, help="functions listed")
    ap.add_argument("--sim", action="store_true",
                    help="also simulate branches and caches (callgrind --branch-sim/--cache-sim): mispredicted "
                         "conditional (Bcm) and indirect (Bim) branches, first-level (D1mr+D1mw) and last-level "
                         "(DLmr+DLmw) data misses")
    ap.add_argument("--addresses", metavar="EVENT", default=None,
                    help="also list the kernel body's 20 costliest instructions by EVENT (Ir, Bcm, ...), as "
                         "offsets into the object file's .text (objdump -d the cached object to read them)")
    ap.add_argument("--gambatte", action="store_true",
                    help="also count gambatte (tests/oracles.py) on each ROM, the same frames and buttons, and print "
                         "its x86 instructions per frame and gambatte / ours: the speed ratio per core in counts")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--pkgdir", help=argparse.SUPPRESS)
    ap.add_argument("--pkg", help=argparse.SUPPRESS)
    ap.add_argument("--client", help=argparse.SUPPRESS)
    ap.add_argument("--map-out", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        return child(args)
    for name in ("envs", "frames"):
        if getattr(args, name) < 1:
            raise SystemExit(f"--{name}: expected >= 1, got {getattr(args, name)}")
    if args.skip < 0:
        raise SystemExit(f"--skip: expected >= 0, got {args.skip}")
    if shutil.which("valgrind") is None or shutil.which("cc") is None:
        raise SystemExit("grind_emu: needs valgrind (callgrind, with its headers) and cc on PATH")
    from ab_emu import export_emu
    from bench_emu import load_rom

    roms = args.rom.split(",")
    for spec in roms:
        load_rom(spec)              # (a bad --rom stops here, before the valgrind run)
    tmp = Path(tempfile.mkdtemp(prefix="grind_emu_"))
    try:
        client = build_client(tmp)
        pkgs = []
        if args.base is not None:
            export_emu(args.base, tmp / "emu_base")
            pkgs.append("emu_base")
        export_emu(None, tmp / "emu_work")
        pkgs.append("emu_work")
        events, results = grind(tmp, pkgs, roms, args, client)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    per = args.frames * args.envs
    shown = {"Ir": ["Ir"], "Bcm": ["Bcm"], "Bim": ["Bim"], "D1m": ["D1mr", "D1mw"], "DLm": ["DLmr", "DLmw"]}
    shown = {k: [events.index(e) for e in v] for k, v in shown.items() if all(e in events for e in v)}

    def value(cost: list[int] | None, key: str) -> float:
        return sum(cost[i] for i in shown[key]) / per if cost else 0.0

    for spec in roms:
        cols = {("base" if p == "emu_base" else "work"): results[(p, spec)] for p in pkgs}
        gambatte = results.get(("gambatte", spec))
        print(f"{load_rom(spec)[1]}, {args.envs} envs, render={args.render}, {args.frames} frames measured after "
              f"{args.skip}{' (one launch per frame)' if args.per_frame else ''}: per env-frame, x86 instructions "
              f"(Ir){', mispredicted branches (Bcm, Bim), data cache misses (D1m, DLm)' if args.sim else ''}")
        addrs = {c: r.pop("__addresses__") for c, r in cols.items()}
        names = sorted(set().union(*cols.values()), key=lambda n: -max(value(r.get(n), "Ir") for r in cols.values()))
        head = "".join(f"{k + ' ' + (('base' if c == 'base' else 'work')):>14s}" for k in shown for c in cols)
        print(f"{'function':40s}{head}" + ("  Ir work/base" if len(cols) == 2 else ""))
        totals = {c: [sum(r[n][i] for n in r) for i in range(len(events))] for c, r in cols.items()}
        for n in names[:args.top] + ["total"]:
            costs = {c: (totals[c] if n == "total" else r.get(n)) for c, r in cols.items()}
            vals = {c: value(costs[c], "Ir") for c in cols}
            ratio = f"  {vals['work'] / vals['base']:13.3f}" if len(cols) == 2 and vals["base"] > 0 else ""
            print(f"{n[:40]:40s}" + "".join(f"{value(costs[c], k):14,.0f}" if k == "Ir" else f"{value(costs[c], k):14,.1f}"
                                            for k in shown for c in cols) + ratio)
        if gambatte is not None:
            g_ir = gambatte[events.index("Ir")] / args.frames
            print(f"{'gambatte (whole process, per frame)':40s}" + "".join(f"{g_ir:14,.0f}" for _ in cols)
                  + "   gambatte / ours: " + ", ".join(f"{c} {g_ir / value(totals[c], 'Ir'):.2f}x" for c in cols))
        if args.addresses:
            for c, a in addrs.items():
                top = sorted(a.items(), key=lambda kv: -value(kv[1], args.addresses))[:20]
                print(f"  {c}: kernel body's costliest by {args.addresses} (.text offset: per env-frame)  "
                      + "  ".join(f"{off:#x}:{value(cost, args.addresses):,.1f}" for off, cost in top))
        print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
