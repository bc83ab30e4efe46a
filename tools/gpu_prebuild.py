"""Compile every Warp module of the package ahead of time into a kernel cache folder, for CUDA
(sm_90 cubin) and the CPU, so a lent GPU machine spends no minutes compiling.

    python tools/gpu_prebuild.py [--cache .gpu_kcache] [--arch 90] [--no-cpu] [--fresh] [--keep-sources]

The folder is laid out as Warp's kernel cache (one `wp_<module>_<hash>/` folder per module), so the
device run only points Warp at it (WARP_CACHE_PATH=.gpu_kcache, see tools/gpu_check.sh) and loads.
Cubin, not PTX: the device's driver may be older than Warp's bundled NVRTC and refuse its PTX.
Modules are hashed by their source and options, so the cache matches only this exact tree: start
from an empty folder (--fresh) on the first of the prebuilds (docs/gpu.md), or cubins of older trees
pile up. The generated .cu/.cpp sources are deleted (Warp loads a module from its binary and .meta
alone; they were 70% of the folder), and the folder's size is printed beside the 64 MiB a device
call carries in all (with .gpu2/, which travels in the same call).
"""
from __future__ import annotations

import argparse
import importlib
import os
import shutil
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MODULES = ["gbx_lightning.emu.cpu", "gbx_lightning.emu.machine", "gbx_lightning.emu.mbc",
           "gbx_lightning.emu.savestate", "gbx_lightning.envs.foraging_kernels", "gbx_lightning.envs.pixels"]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cache", default=str(REPO / ".gpu_kcache"))
    ap.add_argument("--arch", type=int, default=90)
    ap.add_argument("--no-cpu", action="store_true", help="CUDA only (the CPU build is per host)")
    ap.add_argument("--fresh", action="store_true", help="empty the cache folder first")
    ap.add_argument("--keep-sources", action="store_true", help="keep the generated .cu/.cpp files")
    args = ap.parse_args(argv)
    cache = Path(args.cache).resolve()
    if args.fresh and cache.exists():
        shutil.rmtree(cache)
    os.environ["WARP_CACHE_PATH"] = str(Path(args.cache).resolve())
    sys.path.insert(0, str(REPO))
    import warp as wp

    wp.config.quiet = True
    wp.init()
    for name in MODULES:
        # a Python module may register a kernel per target in Warp modules of their own
        # (WARP_MODULES: gbx_lightning.emu.cpu's two machine kernels): each target gets its own
        targets = getattr(importlib.import_module(name), "WARP_MODULES", {"cuda": [name], "cpu": [name]})
        t0 = time.perf_counter()
        paths = [p for target in targets["cuda"] for p in wp.compile_aot_module(target, arch=args.arch, use_ptx=False)]
        t1 = time.perf_counter()
        if not args.no_cpu:
            for target in targets["cpu"]:
                wp.load_module(target, device="cpu")
        t2 = time.perf_counter()
        print(f"{name:32s} cuda {t1 - t0:6.1f} s  cpu {t2 - t1:6.1f} s  {[p.name for p in paths]}", flush=True)
    if not args.keep_sources:
        for src in [*cache.rglob("*.cu"), *cache.rglob("*.cpp")]:
            src.unlink()
    size = _folder_bytes(cache)
    pack = _folder_bytes(REPO / ".gpu2")
    print(f"{cache.name}: {size / 2**20:.1f} MiB; with .gpu2/ ({pack / 2**20:.1f} MiB) {(size + pack) / 2**20:.1f} "
          f"of the 64 MiB one device call carries")
    if size + pack > CARRY_LIMIT:
        print(f"warning: over the carry limit: rebuild with --fresh", file=sys.stderr)
        return 1
    return 0


CARRY_LIMIT = 64 * 2**20


def _folder_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) if path.exists() else 0


if __name__ == "__main__":
    raise SystemExit(main())
