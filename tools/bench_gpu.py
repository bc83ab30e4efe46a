"""The GPU measurements of the device check (tools/gpu_check.sh), one part per call; each appends JSON lines.

    python tools/bench_gpu.py parity [--device cuda] [--frames 300]           # CUDA == CPU, every test ROM
    python tools/bench_gpu.py emu    [--device cuda] [--envs 1024 4096 16384 65536] [--roms orchard workload]
    python tools/bench_gpu.py fit    [--accelerator gpu] [--runs gpu:4096 cpu:4096:16 ...]
    ... --out results.jsonl   (default: print only)

parity: every ROM of tests/roms (assembled) and orchard, 64 envs each with their own random buttons per
24-frame step, run on the CPU and on --device; after every step the whole machine state of every env
(all per-env arrays: registers, memory, timers, frame and obs buffers) must be equal. A difference is a
bug in one of the two code paths until explained. With GBX_EMU_CUDA_DOTS=0 (the per-dot PPU path compiled
out of the CUDA kernel) the ppu_m3_* ROMs, which write PPU registers in mode 3, differ as explained: reported
with "known_difference" and not counted as a failure.

emu: VecGameBoy alone, env steps as an env runs them: run_frames(24, random buttons held 8 frames,
render="obs"), one launch per step, synchronised only at the end of the timed steps. Prints frames/s
(24 per step) and env steps/s per ROM and env count, and the device memory each env takes (measured:
free memory before and after building the machine, over num_envs; beside state_bytes_per_env). The
workload ROM (tests/roms/workload.asm, if present, else idiom_memcpy) keeps the CPU busy as a game
does; orchard is the built-in game.

fit: PPO as `fit` runs it (PPOModule, RolloutStream, Lightning Trainer) on the built-in task with the
pixel CNN, one process; env steps/s over the timed rollouts after one warm-up rollout. Each of --runs is
env_device:num_envs[:shards]: gpu emulates on the GPU, cpu is hybrid mode (model.env_device cpu) with that
many CPU launch threads.
No assertion here: it measures. Numbers from one run compare; runs on other machines do not.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tools"))
ROM_DIR = REPO / "tests" / "roms"
STEP_FRAMES, RELEASE = 24, 8


def _emit(out, record: dict) -> None:
    line = json.dumps(record)
    print(line, flush=True)
    if out:
        with open(out, "a", encoding="utf-8") as f:
            f.write(line + "\n")


def _rom(name: str) -> bytes:
    from bench_emu import load_rom

    if name == "ppu_stat_log":   # a template: tests/test_ppu_stat_timing.py sets these two (here: every source, LYC 10)
        from gbx_lightning.roms.asm import assemble

        src = ROM_DIR / f"{name}.asm"
        return assemble("STAT_SOURCES EQU $78\nLYC_VALUE EQU 10\n" + src.read_text(), origin_file=str(src),
                        include_dirs=(str(ROM_DIR),))
    return load_rom(name)[0]


CPU_ONLY_PREFIX = "ppu_m3_"   # test ROMs of mid-mode-3 register writes (tests/test_ppu_mode3_writes.py)


def _test_roms() -> list[str]:
    names = sorted(p.stem for p in ROM_DIR.glob("*.asm") if not p.stem.startswith("testlib")
                   and p.stem not in ("idiom_lib",))
    return names + ["orchard"]


def _sync(device) -> None:
    import warp as wp

    wp.synchronize_device(device)


# ---- parity ------------------------------------------------------------------------------------------
def parity(args) -> int:
    import numpy as np

    from gbx_lightning.emu import VecGameBoy
    from gbx_lightning.emu.cpu import kernel_for
    from gbx_lightning.emu.ppu_dots import CUDA_DOTS

    kernel = kernel_for(args.device).key      # which shape the device ran (GBX_EMU_STAGED)
    bad = 0
    for name in args.roms or _test_roms():
        try:
            rom = _rom(name)
        except Exception as err:          # a ROM this tree cannot build is reported, not fatal
            _emit(args.out, {"part": "parity", "rom": name, "error": f"{type(err).__name__}: {err}"})
            continue
        rng = np.random.default_rng(7)
        n = args.parity_envs
        ms = {d: VecGameBoy(rom, n, device=d) for d in ("cpu", args.device)}
        first_diff = None
        t0 = time.perf_counter()
        for step in range(args.frames // STEP_FRAMES):
            buttons = rng.integers(0, 256, n, dtype=np.uint8)
            for m in ms.values():
                m.run_frames(STEP_FRAMES, buttons, release_after=RELEASE, render="full")
            a, b = (ms[d] for d in ("cpu", args.device))
            for key in a.state_names:
                x, y = a.state_array(key).numpy(), b.state_array(key).numpy()
                if not np.array_equal(x, y):
                    envs = np.nonzero((x != y).reshape(n, -1).any(axis=1))[0]
                    first_diff = {"step": step, "array": key, "envs": envs[:8].tolist(), "num_envs": int(len(envs))}
                    break
            if first_diff:
                break
        # the ROMs that write PPU registers in mode 3: with GBX_EMU_CUDA_DOTS=0 their lines are drawn dot by
        # dot on the CPU only (ppu_dots.dots_compiled; docs/gpu.md), so CUDA draws them the whole-line way
        known = name.startswith(CPU_ONLY_PREFIX) and not CUDA_DOTS
        bad += first_diff is not None and not known
        _emit(args.out, {"part": "parity", "rom": name, "kernel": kernel, "envs": n, "frames": args.frames,
                         "equal": first_diff is None,
                         "first_diff": first_diff, "seconds": round(time.perf_counter() - t0, 2),
                         **({"known_difference": "per-dot PPU path CPU-only (docs/gpu.md)"} if known else {})})
    return 1 if bad else 0


# ---- emu ---------------------------------------------------------------------------------------------
def _free_bytes(device) -> int | None:
    import warp as wp

    d = wp.get_device(device)
    return int(d.free_memory) if d.is_cuda else None


def emu(args) -> int:
    import numpy as np
    import warp as wp

    from gbx_lightning.emu import VecGameBoy
    from gbx_lightning.emu.cpu import MAX_REGISTERS, kernel_for
    from gbx_lightning.emu.ppu_dots import CUDA_DOTS
    from gbx_lightning.emu.state import default_layout

    # which kernel ran, with its knobs (GBX_EMU_MAX_REGISTERS, GBX_EMU_CUDA_DOTS, GBX_EMU_LAYOUT): the check
    # runs emu with each
    kernel = (kernel_for(args.device).key + (f"@maxreg{MAX_REGISTERS}" if MAX_REGISTERS else "")
              + ("" if CUDA_DOTS else "@nodots") + ("@soa" if default_layout(args.device) == "soa" else ""))
    for name in args.roms:
        rom = _rom(name if (name != "workload" or (ROM_DIR / "workload.asm").is_file()) else "idiom_memcpy")
        for n in args.envs:
            free0 = _free_bytes(args.device)
            try:
                m = VecGameBoy(rom, n, device=args.device)
            except Exception as err:       # e.g. out of memory at the largest size
                _emit(args.out, {"part": "emu", "rom": name, "envs": n, "error": f"{type(err).__name__}: {err}"})
                continue
            _sync(args.device)
            free1 = _free_bytes(args.device)
            rng = np.random.default_rng(0)
            buttons = wp.array(rng.integers(0, 256, n, dtype=np.uint8), dtype=wp.uint8, device=args.device)
            t0 = time.perf_counter()
            m.run_frames(STEP_FRAMES, buttons, release_after=RELEASE, render="obs")    # warm-up (and load)
            _sync(args.device)
            first = time.perf_counter() - t0
            steps = max(1, min(args.max_steps, int(args.seconds / max(first, 1e-4))))
            t0 = time.perf_counter()
            for _ in range(steps):
                m.run_frames(STEP_FRAMES, buttons, release_after=RELEASE, render="obs")
            _sync(args.device)
            dt = time.perf_counter() - t0
            mem = None if free0 is None else (free0 - free1) / n
            _emit(args.out, {"part": "emu", "device": str(args.device), "kernel": kernel, "rom": name, "envs": n, "steps": steps,
                             "seconds": round(dt, 3), "env_steps_per_s": round(n * steps / dt, 1),
                             "frames_per_s": round(n * steps * STEP_FRAMES / dt, 1),
                             "first_step_s": round(first, 3), "state_bytes_per_env": m.state_bytes_per_env,
                             "device_bytes_per_env": None if mem is None else round(mem, 1)})
            del m, buttons
    return 0


# ---- fit ---------------------------------------------------------------------------------------------
def fit(args) -> int:
    import torch
    from lightning.pytorch import Callback, Trainer

    from functools import partial

    from gbx_lightning.algos import PPOModule
    from gbx_lightning.envs import GameBoyEnv
    from gbx_lightning.models import PixelCNNPolicy

    cycle = args.epochs * args.minibatches
    torch.set_num_threads(1)      # as the configs do (torch_threads: 1): the CPU's cores are the env shards'

    class Clock(Callback):
        def __init__(self):
            self.t0 = self.env0 = self.t1 = self.env1 = None

        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
            if pl_module.opt_steps == cycle * args.warmup_rollouts:
                if torch.cuda.is_available():
                    torch.cuda.synchronize()
                self.t0, self.env0 = time.perf_counter(), pl_module.env_steps

        def on_train_end(self, trainer, pl_module):
            if torch.cuda.is_available():
                torch.cuda.synchronize()
            self.t1, self.env1 = time.perf_counter(), pl_module.env_steps

    for run in args.runs:
        env_device, n, shards = run.split(":") + [None] * (3 - len(run.split(":")))
        n, shards = int(n), (int(shards) if shards else None)
        kw = {"task": "orchard/level1", "stack_k": 1, "action_codec": "dpad_noop", "max_steps": 50}
        if shards is not None:
            kw["cpu_threads"] = shards
        torch.manual_seed(0)
        module = PPOModule(env=partial(GameBoyEnv, **kw), num_envs=n, policy=PixelCNNPolicy, seed=0,
                           rollout_steps=args.rollout_steps, epochs=args.epochs,
                           minibatches=args.minibatches, lr=2.5e-4,
                           env_device=env_device)
        clock = Clock()
        trainer = Trainer(max_steps=cycle * (args.warmup_rollouts + args.rollouts),
                          accelerator=args.accelerator, devices=1, logger=False, callbacks=[clock],
                          enable_checkpointing=False, enable_progress_bar=False,
                          enable_model_summary=False, num_sanity_val_steps=0, limit_val_batches=0)
        t_start = time.perf_counter()
        try:
            trainer.fit(module)
        except Exception as err:
            _emit(args.out, {"part": "fit", "env_device": env_device, "envs": n, "shards": shards,
                             "error": f"{type(err).__name__}: {str(err)[:300]}"})
            continue
        steps = clock.env1 - clock.env0
        dt = clock.t1 - clock.t0
        phases = {k: round(getattr(module.stream, k), 2) for k in ("time_env_s", "time_act_s")}
        _emit(args.out, {"part": "fit", "accelerator": args.accelerator, "env_device": env_device,
                         "envs": n, "shards": shards, "rollout_steps": args.rollout_steps,
                         "epochs": args.epochs, "minibatches": args.minibatches, "timed_env_steps": steps,
                         "seconds": round(dt, 3), "env_steps_per_s": round(steps / dt, 1),
                         "total_s": round(time.perf_counter() - t_start, 1),
                         "time_update_s": round(module.time_update_s, 2), **phases})
        del module, trainer
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("part", choices=("parity", "emu", "fit"))
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--accelerator", default="gpu")
    ap.add_argument("--out", default=None)
    ap.add_argument("--roms", nargs="+", default=None)
    ap.add_argument("--envs", type=int, nargs="+", default=None)
    ap.add_argument("--frames", type=int, default=240, help="parity: frames per ROM")
    ap.add_argument("--parity_envs", type=int, default=64)
    ap.add_argument("--seconds", type=float, default=3.0, help="emu: about this long per size")
    ap.add_argument("--max_steps", type=int, default=200, help="emu: at most this many timed steps per size")
    ap.add_argument("--runs", nargs="+", default=["gpu:4096", "gpu:16384", "cpu:4096:1", "cpu:4096:16",
                                                  "cpu:16384:16"],
                    help="fit: env_device:num_envs[:cpu shards] (gpu = emulate on the GPU; cpu = on the CPU, hybrid mode with a GPU)")
    ap.add_argument("--rollout_steps", type=int, default=8)
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument("--minibatches", type=int, default=4)
    ap.add_argument("--warmup_rollouts", type=int, default=1)
    ap.add_argument("--rollouts", type=int, default=2)
    args = ap.parse_args(argv)
    import warp as wp

    wp.config.quiet = True
    wp.config.log_level = wp.LOG_WARNING
    if args.part == "emu":
        args.roms = args.roms or ["orchard", "workload"]
        args.envs = args.envs or [1024, 4096, 16384, 65536]
        return emu(args)
    if args.part == "fit":
        return fit(args)
    return parity(args)


if __name__ == "__main__":
    raise SystemExit(main())
