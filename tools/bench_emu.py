"""Frames per second of VecGameBoy beside PyBoy and gambatte, same ROM, same inputs, one run.

    python tools/bench_emu.py                      # workload ROM, 16 and 64 envs, best of 3
    python tools/bench_emu.py --rom game.gb --repeats 5 --envs 16,64,256
    python tools/bench_emu.py --suite              # one row per idiom ROM (+ workload, orchard, gamelike, cpu_mix)
    python tools/bench_emu.py --suite --counters   # instructions and run ends per frame instead
    python tools/bench_emu.py --rom cpu_mix --envs 16 --step-only --peers gambatte --repeats 9
                                                   # ours / gambatte per core, frames read every 24

--suite runs every idiom ROM (tests/roms/idiom_*.asm: game-like loops built on one idiom of
real game code each), the workload and orchard ROMs, gamelike (a game's whole frame: a music
driver every VBlank, OAM DMA, an LYC scroll split, map, collisions, text) and cpu_mix
(CPU-bound: cpu_instrs' instruction mix): VecGameBoy at --envs (first value)
with rendering full and obs, each run paired with a gambatte run right after it, and one
PyBoy run per repeat; it prints a table of frames per CPU-second against gambatte (the
median of the paired ratios, min..max).  --counters (with --suite or --rom) runs the
emulator's counter build instead (GBX_EMU_COUNTERS=1: a separate kernel that counts) and
prints the SM83 instructions and the runs of the instruction loop ended per frame: what
the fast paths are for (a run ends where an access leaves them or the scheduler must
look again).

VecGameBoy runs on Warp's CPU device, which launches single-threaded: one core.
It is measured with rendering "full" (160x144 frames), "obs" (the 72x80
observation only) and "none", one launch per frame so that every frame is drawn
(run_frames draws only the last frame of a call; the launch cost, tens of
microseconds, counts against VecGameBoy).  PyBoy renders every frame (window "null",
sound off); gambatte always renders into its video buffer.  Configurations
are interleaved and repeated, and the best repeat is kept, because the machine
is noisy and shared (other processes compete for the cores: compare ratios
from one run, not numbers across runs).  Each VecGameBoy run is also paired
with runs of the peers made right after it, and the median of those paired
CPU-time ratios is printed: it follows the machine's drift, which best-of
ratios (best runs possibly minutes apart) do not.  Every emulator holds the same
buttons (default: Right) for the whole run.  Ratios are against the faster
peer, for wall time and for CPU time (frames per CPU-second of this process:
every emulator here runs on this process's calling thread, and CPU time barely
moves when other processes compete).  With --step-frames K it also times RL env
steps: one run_frames(K) call per step (buttons released after 8 frames), of
which only the last frame is drawn, as an env does it; their ratios are against
peers drawing every frame, so they show what an env gets, not a like-for-like
race (a peer could skip drawing too).  --step-only times only those env steps, and
--peers gambatte leaves PyBoy out: the paired column is then ours / gambatte per core with
frames read every --step-frames (issue 38's figure).  Nothing here is asserted: it prints a table.
"""
from __future__ import annotations

import argparse
import io
import logging
import os
import statistics
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


SUITE = sorted(p.stem for p in ROM_DIR.glob("idiom_*.asm")) + ["workload", "orchard", "gamelike", "cpu_mix"]


def load_rom(spec: str) -> tuple[bytes, str]:
    """A ROM from a file path, the name of a tests/roms source to assemble, or orchard."""
    path = Path(spec)
    if path.is_file():
        return path.read_bytes(), path.name
    if spec == "orchard":
        from gbx_lightning.roms import build_rom

        return build_rom("orchard"), "orchard"
    src = ROM_DIR / f"{spec}.asm"
    if not src.is_file():
        raise SystemExit(f"--rom: expected a ROM file or one of "
                         f"{sorted(p.stem for p in ROM_DIR.glob('*.asm') if p.stem != 'testlib')}, got {spec!r}")
    from gbx_lightning.roms.asm import assemble

    return assemble(src.read_text(), origin_file=str(src), include_dirs=(str(ROM_DIR),)), f"{spec}.asm"


def _clocks() -> tuple[float, float]:
    return time.perf_counter(), time.process_time()


def _rates(frames: int, t0: float, c0: float) -> tuple[float, float]:
    """(frames per wall second, frames per CPU second of this process). Every emulator here
    runs on this process's calling thread, so CPU time is the work itself and barely moves
    when other processes compete for the cores; wall time is what a user sees."""
    t, c = _clocks()
    return frames / max(t - t0, 1e-9), frames / max(c - c0, 1e-9)


def bench_vecgameboy(rom: bytes, envs: int, render: str, frames: int, mask: int):
    import warp as wp

    wp.config.quiet = True
    from gbx_lightning.emu import VecGameBoy

    gb = VecGameBoy(rom, envs)
    buttons = np.full(envs, mask, np.uint8)
    gb.run_frames(2, buttons=buttons, render=render)  # compile / load, warm caches

    def run() -> tuple[float, float]:
        t, c = _clocks()
        for _ in range(frames):    # one launch per frame: run_frames draws only its last frame,
            gb.run_frames(1, buttons=buttons, render=render)   # and the peers draw every frame
        wp.synchronize()
        return _rates(envs * frames, t, c)

    return run


def bench_env_step(rom: bytes, envs: int, render: str, step_frames: int, steps: int, mask: int):
    """An RL env step: one run_frames(step_frames) call per step, buttons released after 8
    frames; run_frames draws only the step's last frame."""
    import warp as wp

    from gbx_lightning.emu import VecGameBoy

    gb = VecGameBoy(rom, envs)
    buttons = np.full(envs, mask, np.uint8)
    gb.run_frames(step_frames, buttons=buttons, release_after=8, render=render)

    def run() -> tuple[float, float]:
        t, c = _clocks()
        for _ in range(steps):
            gb.run_frames(step_frames, buttons=buttons, release_after=8, render=render)
        wp.synchronize()
        return _rates(envs * step_frames * steps, t, c)

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

    def run() -> tuple[float, float]:
        t, c = _clocks()
        for _ in range(frames):
            pb.tick(1, True, False)
        return _rates(frames, t, c)

    return run


def bench_gambatte(rom: bytes, frames: int, mask: int):
    import oracles

    g = oracles.Gambatte(rom)
    g.step(mask)

    def run() -> tuple[float, float]:
        t, c = _clocks()
        for _ in range(frames):
            g.step(mask)
        return _rates(frames, t, c)

    return run


def suite(args, mask: int) -> None:
    """One row per suite ROM: VecGameBoy (full, obs) paired with gambatte, PyBoy beside."""
    envs = int(args.envs.split(",")[0])
    frames = max(1, args.env_frames // envs)
    roms = [r for r in args.suite_roms.split(",") if r] if args.suite_roms else SUITE
    rows = {}
    for name in roms:
        rom, _ = load_rom(name)
        rows[name] = {"full": bench_vecgameboy(rom, envs, "full", frames, mask),
                      "obs": bench_vecgameboy(rom, envs, "obs", frames, mask),
                      "gambatte": bench_gambatte(rom, args.peer_frames, mask)}
        try:
            rows[name]["pyboy"] = bench_pyboy(rom, args.peer_frames, mask)
        except ImportError:
            pass
    pairs = {name: {"full": [], "obs": [], "pyboy": []} for name in roms}
    gambatte_best = {name: 0.0 for name in roms}
    for _ in range(args.repeats):      # every ROM in each repeat: the machine's drift hits all alike
        for name in roms:
            runs = rows[name]
            for kind in ("full", "obs", "pyboy"):
                if kind not in runs:
                    continue
                _, cpu = runs[kind]()
                _, g_cpu = runs["gambatte"]()
                gambatte_best[name] = max(gambatte_best[name], g_cpu)
                pairs[name][kind].append(cpu / g_cpu)

    def paired(ratios):
        if not ratios:
            return "-"
        r = sorted(ratios)
        return f"{statistics.median(r):.2f}x ({r[0]:.2f}..{r[-1]:.2f})"

    print(f"suite: VecGameBoy {envs} envs, one launch per frame ({frames} frames a run); gambatte "
          f"and PyBoy {args.peer_frames} frames; buttons {args.buttons}; {args.repeats} repeats")
    print(f"cpu count {os.cpu_count()}; load average {os.getloadavg()[0]:.2f} (shared machine: compare "
          f"ratios within this run)")
    print("frames per CPU-second against gambatte: median of the paired ratios (min..max), each run "
          "against a gambatte run made right after it")
    print(f"{'ROM':<14} {'gambatte f/CPU-s':>17} {'full':>22} {'obs':>22} {'PyBoy':>22}")
    for name in roms:
        print(f"{name:<14} {gambatte_best[name]:>17,.0f} {paired(pairs[name]['full']):>22} "
              f"{paired(pairs[name]['obs']):>22} {paired(pairs[name]['pyboy']):>22}")


def counters(args, mask: int) -> None:
    """Instructions and run ends per frame, from the emulator's counter build."""
    os.environ["GBX_EMU_COUNTERS"] = "1"     # read when gbx_lightning.emu.cpu is imported
    import warp as wp

    wp.config.quiet = True
    from gbx_lightning.emu import VecGameBoy
    from gbx_lightning.emu import cpu, state

    if not cpu.COUNTERS:
        raise SystemExit("--counters: gbx_lightning.emu was imported before GBX_EMU_COUNTERS was set")
    roms = ([r for r in args.suite_roms.split(",") if r] if args.suite_roms else SUITE) if args.suite \
        else [args.rom]
    frames = args.counter_frames
    print(f"counter build: 1 env, buttons {args.buttons}, frames {frames} after {frames // 4} to settle")
    print(f"{'ROM':<14} {'instructions/frame':>19} {'run ends/frame':>15} {'instructions/run':>17}")
    for name in roms:
        rom, _ = load_rom(name)
        gb = VecGameBoy(rom, 1)
        buttons = np.full(1, mask, np.uint8)
        gb.run_frames(frames // 4, buttons=buttons, render="none")
        # (the counters are machine state: r64 words the counter build adds to)
        r64 = gb.state_array("r64")
        before = r64.numpy()[0].copy()
        gb.run_frames(frames, buttons=buttons, render="full")
        after = r64.numpy()[0]
        instr = int(after[state.T_COUNT_INSTR] - before[state.T_COUNT_INSTR]) / frames
        runs = int(after[state.T_COUNT_RUNS] - before[state.T_COUNT_RUNS]) / frames
        print(f"{name:<14} {instr:>19,.0f} {runs:>15,.1f} {instr / max(runs, 1e-9):>17,.1f}")


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
    ap.add_argument("--step-frames", type=int, default=24,
                    help="also time RL env steps of this many frames (run_frames(K) per step, the largest "
                         "--envs; 0: skip; default 24)")
    ap.add_argument("--step-only", action="store_true",
                    help="time only the env steps (--step-frames), not the one-launch-per-frame rows")
    ap.add_argument("--peers", default="pyboy,gambatte",
                    help="comma-separated peers to run (pyboy, gambatte; default both)")
    ap.add_argument("--suite", action="store_true",
                    help="one row per idiom ROM (tests/roms/idiom_*.asm) plus workload and orchard: "
                         "VecGameBoy (first --envs value; full, obs) against gambatte, paired")
    ap.add_argument("--suite-roms", default="", help="comma-separated ROMs for --suite (default: all)")
    ap.add_argument("--counters", action="store_true",
                    help="print instructions and run ends per frame (counter build) instead of timing")
    ap.add_argument("--counter-frames", type=int, default=240, help="frames counted by --counters")
    args = ap.parse_args(argv)

    mask = 0
    for name in filter(None, args.buttons.lower().split("+")):
        if name not in BUTTON_BITS:
            raise SystemExit(f"--buttons: expected names from {sorted(BUTTON_BITS)} joined by '+', got {name!r}")
        mask |= 1 << BUTTON_BITS[name]
    if args.counters:
        counters(args, mask)
        return
    if args.suite:
        suite(args, mask)
        return
    envs_list = [int(x) for x in args.envs.split(",") if x]
    renders = [r for r in args.renders.split(",") if r]
    rom, rom_name = load_rom(args.rom)

    peer_names = {p for p in args.peers.split(",") if p}
    if not peer_names or peer_names - {"pyboy", "gambatte"}:
        raise SystemExit(f"--peers: expected names from pyboy, gambatte joined by ',', got {args.peers!r}")
    if args.step_only and args.step_frames <= 0:
        raise SystemExit(f"--step-only: expected --step-frames > 0, got {args.step_frames}")
    runs = {}
    for envs in envs_list if not args.step_only else []:
        for render in renders:
            frames = max(1, args.env_frames // envs)
            runs[f"VecGameBoy {envs:>4} envs, render={render}"] = bench_vecgameboy(rom, envs, render, frames, mask)
    if args.step_frames > 0:
        envs = max(envs_list)
        steps = max(1, args.env_frames // (envs * args.step_frames))
        for render in renders:
            runs[f"env step of {args.step_frames} frames, {envs} envs, render={render}"] = bench_env_step(
                rom, envs, render, args.step_frames, steps, mask)
    peers = {}
    if "pyboy" in peer_names:
        try:
            peers["PyBoy (render on)"] = bench_pyboy(rom, args.peer_frames, mask)
        except ImportError as e:
            print(f"PyBoy unavailable: {e}")
    if "gambatte" in peer_names:
        try:
            peers["gambatte (render on)"] = bench_gambatte(rom, args.peer_frames, mask)
        except ImportError as e:
            print(f"gambatte unavailable: {e}")
    everything = {**runs, **peers}

    # Each VecGameBoy run is followed at once by a run of each peer, and the CPU-time ratio
    # against the faster of them is kept per pair: the two sides of a pair run seconds
    # apart, so the machine's drift (up to 2x over minutes here) moves both alike.
    best = {k: (0.0, 0.0) for k in everything}
    pair_ratios = {k: [] for k in runs}
    for _ in range(args.repeats):
        for name, run in runs.items():
            wall, cpu = run()
            best[name] = (max(best[name][0], wall), max(best[name][1], cpu))
            peer_cpu = 0.0
            for peer, peer_run in peers.items():
                p_wall, p_cpu = peer_run()
                best[peer] = (max(best[peer][0], p_wall), max(best[peer][1], p_cpu))
                peer_cpu = max(peer_cpu, p_cpu)
            if peer_cpu > 0:
                pair_ratios[name].append(cpu / peer_cpu)

    print(f"ROM {rom_name} ({len(rom) // 1024} KiB), buttons {args.buttons}, {args.repeats} repeats "
          f"(best kept), one core each (Warp CPU launches are single-threaded)")
    print(f"cpu count {os.cpu_count()}; load average {os.getloadavg()[0]:.2f} (shared machine: other "
          f"processes compete, so compare ratios within this run; the CPU-time columns are the "
          f"robust ones)")
    print(f"{'emulator':<44} {'frames/s':>10} {'vs faster':>10} {'frames/CPU-s':>13} {'vs faster':>10}"
          f"   {'paired, CPU: median (min..max)':>30}")
    for col in (0, 1):
        fastest = max((best[k][col] for k in peers), default=0.0)
        for name in everything:
            best[name] += (best[name][col] / fastest if fastest else float("nan"),)
    for name in everything:
        wall, cpu, r_wall, r_cpu = best[name]
        pairs = sorted(pair_ratios.get(name, []))
        paired = (f"{statistics.median(pairs):.2f}x ({pairs[0]:.2f}..{pairs[-1]:.2f})" if pairs else "")
        print(f"{name:<44} {wall:>10,.0f} {r_wall:>9.2f}x {cpu:>13,.0f} {r_cpu:>9.2f}x   {paired:>30}".rstrip())
    print("(vs faster: best against best; paired: each run against the peers run right after it)")
    if args.step_frames > 0:
        print("(env step rows draw only each step's last frame; the peers draw every frame)")

if __name__ == "__main__":
    main()
