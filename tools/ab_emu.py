"""Is a change to the emulator faster? VecGameBoy of the working tree against a git revision,
both in one process, timed in alternation.

    python tools/ab_emu.py [--base HEAD] [--rom workload] [--render none] [--envs 16]
                           [--frames 60] [--pairs 16] [--per-frame]
    python tools/ab_emu.py --base 9ad76ec --rom suite --render none,full   # a markdown table

--rom and --render take comma-separated lists (--rom suite: tools/bench_emu.py's suite, every
idiom ROM, workload, orchard, gamelike and cpu_mix): every combination is measured in turn in
the same process, and a markdown table of the median pair ratios closes the output.

The two `gbx_lightning/emu` packages are copied to a temporary directory under different
names (`emu_base`, `emu_work`), so Warp compiles and loads each as its own module. Runs of
`--frames` frames alternate A B, B A, ... and the tool prints each side's best frames per
CPU-second and the median of the per-pair ratios. On a shared machine whose speed drifts
by 2x over minutes, pairs that run seconds apart in one process compare far more reliably
than separate benchmark runs (tools/bench_emu.py compares against other emulators; this
compares two versions of ours).
"""
from __future__ import annotations

import argparse
import importlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))


def export_emu(rev: str | None, dest: Path) -> None:
    """gbx_lightning/emu at `rev` (None: the working tree) as the package at `dest`."""
    dest.mkdir()
    if rev is None:
        sources = {p.name: p.read_text() for p in (REPO / "gbx_lightning" / "emu").glob("*.py")}
    else:
        names = subprocess.run(["git", "-C", str(REPO), "ls-tree", "--name-only", rev, "gbx_lightning/emu/"],
                               capture_output=True, text=True, check=True).stdout.split()
        sources = {Path(n).name: subprocess.run(["git", "-C", str(REPO), "show", f"{rev}:{n}"], capture_output=True,
                                                text=True, check=True).stdout for n in names if n.endswith(".py")}
    for name, text in sources.items():   # imports within the package must stay within the copy
        (dest / name).write_text(text.replace("from gbx_lightning.emu.", "from ."))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", default="HEAD", help="git revision to compare against (default HEAD)")
    ap.add_argument("--rom", default="workload", help="ROM files or tests/roms source names, comma-separated "
                                                      "('suite': bench_emu's suite)")
    ap.add_argument("--render", default="none", help="full, obs or none; comma-separated for several")
    ap.add_argument("--envs", type=int, default=16)
    ap.add_argument("--frames", type=int, default=60, help="frames per timed run")
    ap.add_argument("--pairs", type=int, default=16)
    ap.add_argument("--per-frame", action="store_true", help="one launch per frame (every frame drawn)")
    args = ap.parse_args(argv)
    renders = [r for r in args.render.split(",") if r]
    for r in renders:
        if r not in ("full", "obs", "none"):
            raise SystemExit(f"--render: expected full, obs or none (comma-separated), got {r!r}")
    for name in ("envs", "frames", "pairs"):
        if getattr(args, name) < 1:
            raise SystemExit(f"--{name}: expected >= 1, got {getattr(args, name)}")

    import warp as wp
    wp.config.quiet = True
    from bench_emu import SUITE, load_rom
    specs = SUITE if args.rom == "suite" else [r for r in args.rom.split(",") if r]
    roms = [load_rom(spec) for spec in specs]      # (a bad --rom stops here, before any compile)

    tmp = Path(tempfile.mkdtemp(prefix="ab_emu_"))
    table = []
    try:
        export_emu(args.base, tmp / "emu_base")
        export_emu(None, tmp / "emu_work")
        sys.path.insert(0, str(tmp))
        mods = {"base": importlib.import_module("emu_base"), "work": importlib.import_module("emu_work")}
        buttons = np.full(args.envs, 1, np.uint8)
        for rom, name in roms:
            for render in renders:
                gbs = {k: mod.VecGameBoy(rom, args.envs) for k, mod in mods.items()}

                def run(gb) -> float:
                    start = time.process_time()
                    if args.per_frame:
                        for _ in range(args.frames):
                            gb.run_frames(1, buttons=buttons, render=render)
                    else:
                        gb.run_frames(args.frames, buttons=buttons, render=render)
                    wp.synchronize()
                    return args.envs * args.frames / (time.process_time() - start)

                for gb in gbs.values():   # compile / load, warm up
                    run(gb)
                fps = {"base": [], "work": []}
                for i in range(args.pairs):
                    for k in ("base", "work") if i % 2 == 0 else ("work", "base"):
                        fps[k].append(run(gbs[k]))
                ratios = [w / b for b, w in zip(fps["base"], fps["work"])]
                print(f"{name}, {args.envs} envs, render={render}, {args.frames} frames per run"
                      f"{' (one launch per frame)' if args.per_frame else ''}, {args.pairs} pairs, frames/CPU-s")
                print(f"base {args.base:>12}: best {max(fps['base']):10,.0f}")
                print(f"working tree      : best {max(fps['work']):10,.0f}")
                print(f"work/base: median pair ratio {statistics.median(ratios):.3f} "
                      f"(pairs {min(ratios):.2f}..{max(ratios):.2f}), best/best {max(fps['work']) / max(fps['base']):.3f}",
                      flush=True)
                table.append((name, render, statistics.median(ratios), min(ratios), max(ratios)))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if len(table) > 1:
        print(f"\n| ROM | " + " | ".join(f"render {r}" for r in renders) + " |")
        print("|---|" + "---:|" * len(renders))
        for name in dict.fromkeys(t[0] for t in table):
            cells = [f"{t[2]:.3f} ({t[3]:.2f}..{t[4]:.2f})" for t in table if t[0] == name]
            print(f"| {name} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
