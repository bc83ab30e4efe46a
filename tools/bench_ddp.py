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
machine is noisy; the load average is printed before each run (other users' work on the same cores shows there).

    python tools/bench_ddp.py                           # Game Boy (configs/a2c.yaml) and ForagingEnv
                                                        # (configs/foraging_a2c.yaml), 1 vs 2 processes
    python tools/bench_ddp.py --envs gameboy --procs 1 2 4 --repeats 3
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = {"gameboy": ROOT / "configs" / "a2c.yaml", "foraging": ROOT / "configs" / "foraging_a2c.yaml"}
PHASES = ("time_env_s", "time_act_s", "time_update_s", "time_other_s")


def run_fit(env_name: str, procs: int, args, runs: Path) -> dict:
    """One `fit`; returns env steps/s over the steady state and rank 0's seconds per phase per 1000 local steps."""
    name = f"{env_name}_{procs}p_{time.monotonic_ns()}"
    cmd = [sys.executable, "-m", "gbx_lightning", "fit", "--config", str(CONFIGS[env_name]),
           "--runs_dir", str(runs), "--run_name", name, "--trainer.accelerator", args.accelerator,
           "--trainer.devices", str(procs), "--trainer.strategy", "ddp" if procs > 1 else "auto",
           "--trainer.max_steps", str(args.warmup + args.steps), "--trainer.limit_val_batches", "0",
           "--trainer.enable_checkpointing", "false", "--image_every", "0", "--progress_refresh", "0",
           "--log_every", str(args.log_every)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    load = os.getloadavg()[0]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"fit failed ({' '.join(cmd)}):\n{proc.stderr[-3000:]}")
    records = [json.loads(line) for line in (runs / name / "version_0" / "train.jsonl").read_text().splitlines()]
    steps = [r for r in records if "opt_steps" in r and "meta" not in r and "eval" not in r]
    start = next(r for r in steps if r["opt_steps"] >= args.warmup)
    timed = [r for r in steps if r["opt_steps"] > start["opt_steps"]]
    end = timed[-1]
    env_steps = end["env_steps"] - start["env_steps"]
    per_k = 1000 * procs / env_steps  # per 1000 env steps of one process (rank 0's share)
    return {"sps": env_steps / (end["wall_time_s"] - start["wall_time_s"]), "load": load,
            "phases": {k: sum(r[k] for r in timed) * per_k for k in PHASES}}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--envs", nargs="+", choices=sorted(CONFIGS), default=["gameboy", "foraging"])
    p.add_argument("--procs", nargs="+", type=int, default=[1, 2], help="process counts; the first is the baseline")
    p.add_argument("--accelerator", default="cpu")
    p.add_argument("--steps", type=int, default=300, help="timed optimizer steps per run")
    p.add_argument("--warmup", type=int, default=40, help="optimizer steps before timing starts")
    p.add_argument("--log_every", type=int, default=20)
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args()
    base = args.procs[0]
    print(f"cores available: {len(os.sched_getaffinity(0))}; {args.steps} timed optimizer steps after {args.warmup}; "
          f"procs {args.procs}; load average at start {os.getloadavg()[0]:.2f}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        for env_name in args.envs:
            results: dict[int, list[dict]] = {k: [] for k in args.procs}
            for r in range(args.repeats):
                order = args.procs if r % 2 == 0 else args.procs[::-1]
                for k in order:
                    res = run_fit(env_name, k, args, Path(tmp))
                    results[k].append(res)
                    print(f"{env_name} repeat {r} {k} process(es): {res['sps']:8.0f} env steps/s  "
                          f"(load average before: {res['load']:.2f})", flush=True)
            for k in args.procs[1:]:
                ratios = [a["sps"] / b["sps"] for a, b in zip(results[k], results[base])]
                print(f"{env_name}: {k} processes / {base}: median {statistics.median(ratios):.2f}x "
                      f"(per repeat {', '.join(f'{x:.2f}' for x in ratios)}); medians "
                      f"{statistics.median(x['sps'] for x in results[base]):.0f} -> "
                      f"{statistics.median(x['sps'] for x in results[k]):.0f} env steps/s", flush=True)
            print(f"{env_name}: rank 0's seconds per 1000 of its own env steps (median over repeats)")
            for k in args.procs:
                phases = {ph: statistics.median(x["phases"][ph] for x in results[k]) for ph in PHASES}
                total = sum(phases.values())
                print(f"  {k} process(es): " + "  ".join(f"{ph[5:-2]} {v:.3f}" for ph, v in phases.items())
                      + f"  total {total:.3f}", flush=True)


if __name__ == "__main__":
    main()
