"""Differential runs of the machine kernel's two shapes against each other, on the CPU.

The CPU runs cpu.machine_kernel (the CPU shape); CUDA devices run cpu.machine_kernel_staged (the CUDA
shape, docs/gpu.md). Both are built for the CPU device here, in one process, and each machine is
launched with one of them: the same ROM, the same buttons, the whole machine state (registers,
clocks, WRAM, HRAM, VRAM, OAM, I/O, cartridge RAM and MBC, the PPU's, sound unit's and serial's
words, the frame) compared after every launch. The first difference is printed with both
machines' registers and the r32/r64 words that differ, by name.

    python tools/shape_diff.py --roms all --frames 120           # every tests/roms ROM, orchard, workload
    python tools/shape_diff.py --programs 200 --seed 0           # random programs (tests/_shape_programs.py)
    python tools/shape_diff.py --apu 40                          # tests/test_apu_gambatte.py's programs
    python tools/shape_diff.py --chaos 50                        # ROMs of random bytes

Exit status 1 if any run differs. The CUDA shape's first compile on the CPU takes ~40 s (then Warp's
kernel cache)."""
from __future__ import annotations

import argparse
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
ROM_DIR = REPO / "tests" / "roms"
for p in (str(REPO), str(REPO / "tools"), str(REPO / "tests")):
    if p not in sys.path:
        sys.path.insert(0, p)


@contextmanager
def kernel_shape(staged: bool):
    """Machines first launched inside this block run the CUDA shape (staged) or the CPU shape on the
    CPU device (VecGameBoy records its launch command, kernel included, at its first launch per
    render mode: cpu.kernel_for decides then)."""
    from gbx_lightning.emu import cpu

    old = cpu.STAGED_ON_CPU
    cpu.STAGED_ON_CPU = staged
    try:
        yield
    finally:
        cpu.STAGED_ON_CPU = old


def machine_state(gb) -> dict:
    """Every per-env array of the machine (what snapshot() copies), as numpy."""
    return {k: v.numpy() for k, v in gb._arrays.items()}


def slot_names() -> dict:
    from gbx_lightning.emu import state as S

    slots = S.slot_map()
    return {"r32": {v: k for k, v in slots["R_"].items()}, "r64": {v: k for k, v in slots["T_"].items()}}


def describe(a, b, diff: list[str]) -> str:
    """The differing arrays of two machine states, r32/r64 words by name, and both machines' registers."""
    sa, sb = machine_state(a), machine_state(b)
    names = slot_names()
    out = []
    for k in diff:
        idx = np.argwhere(sa[k] != sb[k])
        envs = sorted(set(idx[:, 0].tolist()))
        if k in names:
            words = sorted(set(idx[:, 1].tolist()))
            out.append(f"  {k}: envs {envs[:8]}, words " + ", ".join(
                f"{names[k].get(w, w)} {sa[k][idx[idx[:, 1] == w][0][0], w]} vs {sb[k][idx[idx[:, 1] == w][0][0], w]}"
                for w in words[:8]))
        else:
            out.append(f"  {k}: envs {envs[:8]}, {len(idx)} values (first at {idx[0].tolist()}: "
                       f"{sa[k][tuple(idx[0])]} vs {sb[k][tuple(idx[0])]})")
    env = int(np.argwhere(sa[diff[0]] != sb[diff[0]])[0][0])
    ra, rb = a.registers(env), b.registers(env)
    out.append(f"  env {env} CPU shape:  " + " ".join(f"{k}={v:x}" for k, v in ra.items()))
    out.append(f"  env {env} CUDA shape: " + " ".join(f"{k}={v:x}" for k, v in rb.items()))
    return "\n".join(out)


def run_pair(rom: bytes, frames: int, envs: int = 4, seed: int = 0, step: int = 1,
             renders=("none", "obs", "full"), pair=None):
    """Run `rom` in both shapes `step` frames per launch with random buttons per env (held a random
    part of each launch), comparing after every launch. Returns (None, machines) if they stayed equal,
    else (frames run when they differed, machines, the differing arrays). `pair`: two machines to
    reuse (restored to power-on first)."""
    from gbx_lightning.emu import VecGameBoy

    rng = np.random.default_rng(seed)
    if pair is None:
        pair = []
        for staged in (False, True):
            with kernel_shape(staged):
                pair.append(VecGameBoy(rom, envs))
    else:
        for gb in pair:
            gb.reset()
    done = 0
    k = 0
    while done < frames:
        n = min(step, frames - done)
        buttons = rng.integers(0, 256, pair[0].num_envs).astype(np.uint8)
        buttons[rng.random(pair[0].num_envs) < 0.5] = 0
        release = int(rng.integers(0, n + 1))
        render = renders[k % len(renders)]
        for staged, gb in zip((False, True), pair):
            with kernel_shape(staged):
                gb.run_frames(n, buttons=buttons, release_after=release, render=render)
        done += n
        k += 1
        sa, sb = machine_state(pair[0]), machine_state(pair[1])
        diff = [name for name in sa if not np.array_equal(sa[name], sb[name])]
        if diff:
            return done, pair, diff
    return None, pair, []


def test_rom_names() -> list[str]:
    """Every ROM source in tests/roms (the .asm files; .inc are includes), plus orchard."""
    return sorted(p.stem for p in ROM_DIR.glob("*.asm") if p.stem != "testlib") + ["orchard"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--roms", nargs="*", help="tests/roms source names, ROM files, orchard; 'all' for every one")
    ap.add_argument("--programs", type=int, default=0, help="random programs to run (tests/_shape_programs.py)")
    ap.add_argument("--apu", type=int, default=0, help="tests/test_apu_gambatte.py programs to run")
    ap.add_argument("--chaos", type=int, default=0, help="ROMs of random bytes to run (tests/_shape_programs.py)")
    ap.add_argument("--seed", type=int, default=0, help="first random program's seed")
    ap.add_argument("--blocks", type=int, default=60, help="blocks per random program")
    ap.add_argument("--frames", type=int, default=60)
    ap.add_argument("--envs", type=int, default=4)
    ap.add_argument("--step", type=int, default=1, help="frames per launch")
    ap.add_argument("--keep", action="store_true", help="write each differing program's source to shape_diff_SEED.asm")
    args = ap.parse_args()

    import warp as wp

    wp.config.quiet = True
    from bench_emu import load_rom
    from gbx_lightning.roms.asm import assemble

    jobs = []
    names = args.roms or []
    if names == ["all"]:
        names = test_rom_names()
    for name in names:
        jobs.append((name, lambda name=name: load_rom(name)[0], None))
    if args.programs:
        from _shape_programs import program
        for s in range(args.seed, args.seed + args.programs):
            src = program(s, args.blocks)
            jobs.append((f"program {s}", lambda src=src: assemble(src), src))
    if args.apu:
        from test_apu_gambatte import program as apu_program
        for s in range(args.seed, args.seed + args.apu):
            src = apu_program(s)
            jobs.append((f"apu program {s}", lambda src=src: assemble(src), src))
    if args.chaos:
        from _shape_programs import chaos_rom
        for s in range(args.seed, args.seed + args.chaos):
            jobs.append((f"chaos ROM {s}", lambda s=s: chaos_rom(s), None))
    if not jobs:
        ap.error("nothing to run: give --roms, --programs, --apu or --chaos")
    bad = 0
    t0 = time.time()
    for name, build, src in jobs:
        try:
            rom = build()
        except Exception as e:       # a ROM source that does not assemble on its own (a template)
            print(f"{name}: skipped ({type(e).__name__}: {e})", flush=True)
            continue
        at, pair, diff = run_pair(rom, args.frames, args.envs, step=args.step)
        if at is None:
            print(f"{name}: equal over {args.frames} frames x {args.envs} envs", flush=True)
            continue
        bad += 1
        print(f"{name}: DIFFERENT after {at} frames: {diff}\n{describe(*pair, diff)}", flush=True)
        if args.keep and src is not None:
            Path(f"shape_diff_{name.split()[-1]}.asm").write_text(src)
    print(f"{len(jobs)} runs, {bad} different, {time.time() - t0:.0f} s")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
