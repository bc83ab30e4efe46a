"""Frames per second of VecGameBoy beside PyBoy and gambatte, same ROM, same inputs, one run.

    python tools/bench_emu.py                      # workload ROM, 16 and 64 envs, best of 3
    python tools/bench_emu.py --rom game.gb --repeats 5 --envs 16,64,256

VecGameBoy runs on Warp's CPU device, which launches single-threaded: one core.
It is measured with rendering "full" (160x144 frames), "obs" (the 72x80
observation only) and "none".  PyBoy renders every frame (window "null",
sound off); gambatte always renders into its video buffer.  Configurations
are interleaved and repeated, and the best repeat is kept, because the machine
is noisy and shared (other processes compete for the cores: compare ratios
from one run, not numbers across runs).  Every emulator holds the same
buttons (default: Right) for the whole run.  Ratios are against the faster
peer.  Nothing here is asserted: it prints a table.
"""
from __future__ import annotations

import argparse
import io
import logging
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

ROM_DIR = REPO / "tests" / "roms"
BUTTON_BITS = {"right": 0, "left": 1, "up": 2, "down": 3, "a": 4, "b": 5, "select": 6, "start": 7}


def load_rom(spec: str) -> tuple[bytes, str]:
    """A ROM from a file path, or the name of a tests/roms source to assemble."""
    path = Path(spec)
    if path.is_file():
        return path.read_bytes(), path.name
    src = ROM_DIR / f"{spec}.asm"
    if not src.is_file():
        raise SystemExit(f"--rom: expected a ROM file or one of "
                         f"{sorted(p.stem for p in ROM_DIR.glob('*.asm') if p.stem != 'testlib')}, got {spec!r}")
    from gbx_lightning.roms.asm import assemble

    return assemble(src.read_text(), origin_file=str(src), include_dirs=(str(ROM_DIR),)), f"{spec}.asm"


def bench_vecgameboy(rom: bytes, envs: int, render: str, frames: int, mask: int):
    import warp as wp

    wp.config.quiet = True
    from gbx_lightning.emu import VecGameBoy

    gb = VecGameBoy(rom, envs)
    buttons = np.full(envs, mask, np.uint8)
    gb.run_frames(2, buttons=buttons, render=render)  # compile / load, warm caches

    def run() -> float:
        t = time.perf_counter()
        gb.run_frames(frames, buttons=buttons, render=render)
        wp.synchronize()
        return envs * frames / (time.perf_counter() - t)

    return run


def bench_pyboy(rom: bytes, frames: int, mask: int):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from pyboy import PyBoy
    logging.getLogger("pyboy").setLevel(logging.ERROR)
    pb = PyBoy(io.BytesIO(rom), window="null", sound_emulated=False, cgb=False, log_level="ERROR")
    pb.set_emulation_speed(0)
    pb.tick(90, False, False)  # its boot ROM
    for name, bit in BUTTON_BITS.items():
        if mask >> bit & 1:
            pb.button_press(name)

    def run() -> float:
        t = time.perf_counter()
        for _ in range(frames):
            pb.tick(1, True, False)
        return frames / (time.perf_counter() - t)

    return run


def bench_gambatte(rom: bytes, frames: int, mask: int):
    import oracles

    g = oracles.Gambatte(rom)
    g.step(mask)

    def run() -> float:
        t = time.perf_counter()
        for _ in range(frames):
            g.step(mask)
        return frames / (time.perf_counter() - t)

    return run


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rom", default="workload", help="ROM file, or a tests/roms source name (default: workload)")
    ap.add_argument("--envs", default="16,64", help="comma-separated env counts (default: 16,64)")
    ap.add_argument("--renders", default="full,obs,none", help="VecGameBoy render modes (default: full,obs,none)")
    ap.add_argument("--env-frames", type=int, default=3840,
                    help="env-frames per VecGameBoy measurement (frames = this / envs; default 3840)")
    ap.add_argument("--peer-frames", type=int, default=1200, help="frames per PyBoy/gambatte measurement")
    ap.add_argument("--repeats", type=int, default=3, help="interleaved repeats; the best is kept (default 3)")
    ap.add_argument("--buttons", default="right", help="buttons held, e.g. right+a (default: right)")
    args = ap.parse_args(argv)

    mask = 0
    for name in filter(None, args.buttons.lower().split("+")):
        if name not in BUTTON_BITS:
            raise SystemExit(f"--buttons: expected names from {sorted(BUTTON_BITS)} joined by '+', got {name!r}")
        mask |= 1 << BUTTON_BITS[name]
    envs_list = [int(x) for x in args.envs.split(",") if x]
    renders = [r for r in args.renders.split(",") if r]
    rom, rom_name = load_rom(args.rom)

    runs = {}
    for envs in envs_list:
        for render in renders:
            frames = max(1, args.env_frames // envs)
            runs[f"VecGameBoy {envs:>4} envs, render={render}"] = bench_vecgameboy(rom, envs, render, frames, mask)
    peers = {}
    try:
        peers["PyBoy (render on)"] = bench_pyboy(rom, args.peer_frames, mask)
    except ImportError as e:
        print(f"PyBoy unavailable: {e}")
    try:
        peers["gambatte (render on)"] = bench_gambatte(rom, args.peer_frames, mask)
    except ImportError as e:
        print(f"gambatte unavailable: {e}")
    everything = {**runs, **peers}

    best = {k: 0.0 for k in everything}
    for _ in range(args.repeats):
        for name, run in everything.items():
            best[name] = max(best[name], run())

    fastest_peer = max((best[k] for k in peers), default=0.0)
    print(f"ROM {rom_name} ({len(rom) // 1024} KiB), buttons {args.buttons}, best of {args.repeats} "
          f"interleaved repeats, one core each (Warp CPU launches are single-threaded)")
    print(f"cpu count {os.cpu_count()}; load average {os.getloadavg()[0]:.2f} (shared machine: other "
          f"processes compete, so compare ratios within this run)")
    print(f"{'emulator':<40} {'frames/s':>12} {'vs faster peer':>15}")
    for name in everything:
        ratio = f"{best[name] / fastest_peer:14.2f}x" if fastest_peer else "-"
        print(f"{name:<40} {best[name]:>12,.0f} {ratio:>15}")


if __name__ == "__main__":
    main()
