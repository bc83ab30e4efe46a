"""Scaling out with DDP: env steps/s of `fit` in 1 process against K DDP processes (Lightning's launcher, gloo on
the CPU), in one run, on the Game Boy task and on ForagingEnv, with where the time goes.

Each run is the CLI as a user types it (`python -m gbx_lightning fit --config configs/<...>.yaml
--trainer.devices K`), minus evaluation, checkpoints, images and the progress bar (neither side does them here);
the JSONL and TensorBoard logging stay on. `num_envs` is per process (as Lightning's batch size is per device):
K processes step K times the envs per update. Throughput is counted over the steady state, from the record at
`--warmup` optimizer steps to the last one (env steps of all processes / rank 0's training wall time), so the
processes' start (imports, Warp kernel load, gloo rendezvous) is left out.

Where the rest goes: per 1000 env steps of one process, rank 0's time in env.step, the policy's acting, the
update (training_step: forward, backward with DDP's gradient all-reduce, and the wait for the slower rank inside
it), and the rest (Lightning's loop, logging: under DDP the statistics' all-reduce at each record), from the
JSONL's time_*_s keys, next to the same for one process. The runs alternate (1, K, K, 1, ...) because this
machine is noisy; each run prints the load average before it and how many cores other processes (outside this
benchmark) used during it: a run that shared its cores with others measured something else.

    python tools/bench_ddp.py                           # Game Boy (configs/a2c.yaml) and ForagingEnv
                                                        # (configs/foraging_a2c.yaml), 1 vs 2 processes
    python tools/bench_ddp.py --envs gameboy --procs 1 2 4 --repeats 3
    python tools/bench_ddp.py --one_core                # also 1 process emulating on one core
    python tools/bench_ddp.py --independent             # also K independent processes at once: DDP's ceiling
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = {"gameboy": ROOT / "configs" / "a2c.yaml", "foraging": ROOT / "configs" / "foraging_a2c.yaml"}
PHASES = ("time_env_s", "time_act_s", "time_update_s", "time_other_s")


class OtherUsers:
    """CPU seconds used during a run by processes outside this benchmark's process tree (other users of a shared
    machine), from /proc every 0.5 s: a run during which they took a core measures something else."""

    def __init__(self):
        self.seen: dict[int, tuple[float, float]] = {}  # pid -> (CPU seconds first seen, last seen)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    @staticmethod
    def _processes() -> dict[int, tuple[int, float]]:
        tick = os.sysconf("SC_CLK_TCK")
        out = {}
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
                except OSError:
                    continue
                out[int(entry)] = (int(fields[1]), (int(fields[11]) + int(fields[12])) / tick)  # ppid, utime+stime
        return out

    def _sample(self) -> None:
        while True:
            procs = self._processes()
            mine = {os.getpid()}
            for _ in range(8):  # descendants (the fit and its ranks), a few generations down
                mine |= {pid for pid, (ppid, _) in procs.items() if ppid in mine}
            for pid, (_, cpu) in procs.items():
                if pid not in mine:
                    first = self.seen.get(pid, (0.0 if self._started else cpu, cpu))[0]  # born during: all of it
                    self.seen[pid] = (first, cpu)
            self._started = True
            if self._stop.wait(0.5):
                return

    def __enter__(self):
        self._started, self._t0 = False, time.perf_counter()
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.cores = sum(last - first for first, last in self.seen.values()) / (time.perf_counter() - self._t0)


def run_fit(env_name: str, procs: int, extra: list[str], args, runs: Path, copies: int = 1) -> dict:
    """One `fit` (or ``copies`` independent one-process fits at once, their env steps/s summed); returns env
    steps/s over the steady state and rank 0's (copy 0's) seconds per phase per 1000 local steps."""
    names = [f"{env_name}_{procs}p_{time.monotonic_ns()}_{i}" for i in range(copies)]
    cmds = [[sys.executable, "-m", "gbx_lightning", "fit", "--config", str(CONFIGS[env_name]),
             "--runs_dir", str(runs), "--run_name", name, "--trainer.accelerator", args.accelerator,
             "--trainer.devices", str(procs), "--trainer.strategy", "ddp" if procs > 1 else "auto",
             "--trainer.max_steps", str(args.warmup + args.steps), "--trainer.limit_val_batches", "0",
             "--trainer.enable_checkpointing", "false", "--image_every", "0", "--progress_refresh", "0",
             "--log_every", str(args.log_every), *extra] for name in names]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    load = os.getloadavg()[0]
    with OtherUsers() as others:
        running = [subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
                   for cmd in cmds]
        errors = [proc.communicate()[1] for proc in running]
    for cmd, proc, err in zip(cmds, running, errors):
        if proc.returncode != 0:
            raise SystemExit(f"fit failed ({' '.join(cmd)}):\n{err[-3000:]}")
    sps, phases = 0.0, None
    for name in names:
        records = [json.loads(line) for line in (runs / name / "version_0" / "train.jsonl").read_text().splitlines()]
        steps = [r for r in records if "opt_steps" in r and "meta" not in r and "eval" not in r]
        start = next(r for r in steps if r["opt_steps"] >= args.warmup)
        timed = [r for r in steps if r["opt_steps"] > start["opt_steps"]]
        end = timed[-1]
        env_steps = end["env_steps"] - start["env_steps"]
        sps += env_steps / (end["wall_time_s"] - start["wall_time_s"])
        if phases is None:
            per_k = 1000 * procs / env_steps  # per 1000 env steps of one process (rank 0's share)
            phases = {k: sum(r[k] for r in timed) * per_k for k in PHASES}
    return {"sps": sps, "load": load, "others": others.cores, "phases": phases}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--envs", nargs="+", choices=sorted(CONFIGS), default=["gameboy", "foraging"])
    p.add_argument("--procs", nargs="+", type=int, default=[1, 2], help="process counts; the first is the baseline")
    p.add_argument("--accelerator", default="cpu")
    p.add_argument("--steps", type=int, default=None,
                   help="timed optimizer steps per run (default: 300 Game Boy, 3000 ForagingEnv: ~15 s each)")
    p.add_argument("--warmup", type=int, default=None, help="optimizer steps before timing starts (default: "
                                                            "steps / 8)")
    p.add_argument("--log_every", type=int, default=20)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--one_core", action="store_true",
                   help="also 1 process with the Game Boy's emulation on one core (cpu_threads 1): the baseline "
                        "for scaling efficiency (one process by default already emulates on every core)")
    p.add_argument("--independent", action="store_true",
                   help="also K independent one-process fits at once (K = the largest --procs; each emulating on "
                        "one core), their env steps/s summed: what K processes give with no gradient all-reduce "
                        "and no lockstep, the ceiling for DDP on this machine")
    args = p.parse_args()
    print(f"cores available: {len(os.sched_getaffinity(0))}; procs {args.procs}; load average at start "
          f"{os.getloadavg()[0]:.2f}", flush=True)
    steps, warmup = args.steps, args.warmup
    with tempfile.TemporaryDirectory() as tmp:
        for env_name in args.envs:
            args.steps = steps or {"gameboy": 300, "foraging": 3000}[env_name]
            args.warmup = warmup if warmup is not None else args.steps // 8
            print(f"{env_name}: {args.steps} timed optimizer steps after {args.warmup}", flush=True)
            # (label, processes, extra CLI arguments); each is compared with those after it
            variants = [(f"{k} process(es)", k, []) for k in args.procs]
            if args.one_core and env_name == "gameboy":
                variants.insert(1, ("1 process, emulation on 1 core", 1,
                                    ["--model.env.cpu_threads", "1"]))
            copies = {}
            if args.independent:
                k = max(args.procs)
                label = f"{k} independent processes"
                variants.append((label, 1, ["--model.env.cpu_threads", "1"]
                                 if env_name == "gameboy" else []))
                copies[label] = k
            results: dict[str, list[dict]] = {label: [] for label, _, _ in variants}
            for r in range(args.repeats):
                for label, k, extra in (variants if r % 2 == 0 else variants[::-1]):
                    res = run_fit(env_name, k, extra, args, Path(tmp), copies.get(label, 1))
                    results[label].append(res)
                    print(f"{env_name} repeat {r} {label}: {res['sps']:8.0f} env steps/s  (load average before: "
                          f"{res['load']:.2f}; other processes used {res['others']:.2f} cores during it)", flush=True)
            med = {label: statistics.median(x["sps"] for x in xs) for label, xs in results.items()}
            for i, (base_label, _, _) in enumerate(variants):
                for label, _, _ in variants[i + 1:]:
                    ratios = [a["sps"] / b["sps"] for a, b in zip(results[label], results[base_label])]
                    print(f"{env_name}: {label} / {base_label}: median {statistics.median(ratios):.2f}x (per repeat "
                          f"{', '.join(f'{x:.2f}' for x in ratios)}); medians {med[base_label]:.0f} -> "
                          f"{med[label]:.0f} env steps/s", flush=True)
            print(f"{env_name}: rank 0's seconds per 1000 of its own env steps (median over repeats)")
            for label, _, _ in variants:
                phases = {ph: statistics.median(x["phases"][ph] for x in results[label]) for ph in PHASES}
                print(f"  {label:32s} " + "  ".join(f"{ph[5:-2]} {v:.3f}" for ph, v in phases.items())
                      + f"  total {sum(phases.values()):.3f}", flush=True)


if __name__ == "__main__":
    main()
