"""SIGTERM and kill -9 at random moments of a running `fit`, then resume: is anything lost or corrupted?

One run is stopped again and again: each trial starts `fit` (a resume after the first), waits until it
has trained past its checkpoint, sleeps a random time, then sends SIGTERM or SIGKILL (alternating, or
`--signals`). After each trial:

* SIGTERM: the exit status is 0, the JSONL ends with a ``stop`` record, ``last.ckpt`` holds that step;
* SIGKILL: ``last.ckpt`` loads (never torn) and the JSONL reads up to its last complete line;
* the next segment's meta line starts at the step of ``last.ckpt`` (counters continue).

With checkpoints every optimizer step (the default here) most kills land in or near a checkpoint write.
Finally the run is resumed to ``--max-steps`` and compared with an uninterrupted run of the same config:
bitwise-equal parameters, equal step records (wall-clock fields aside) and an equal data-stream state in the last
checkpoint (every env tensor: machines, a state pool's states and scores, heatmap counts, milestone trackers,
reward items; a recurrent policy's state). ``--load N`` runs N busy
processes beside it (a loaded machine).

    python tools/crash_trials.py --trials 20                          # Game Boy A2C (configs/a2c.yaml, smaller)
    python tools/crash_trials.py --trials 20 --load 2 --config configs/ppo.yaml
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gbx_lightning.callbacks import read_training_log  # noqa: E402

WALL = {"wall_time_s", "sps", "time_env_s", "time_act_s", "time_update_s", "time_other_s"}


def _load_step(path: Path) -> int | None:
    try:
        return int(torch.load(path, map_location="cpu", weights_only=False)["global_step"])
    except Exception:  # noqa: BLE001 - not there yet
        return None


def _stream_tensors(ckpt: dict) -> dict[str, tuple]:
    """{key path: (dtype, shape, bytes)} of the data stream's saved state (env state with each feature's packed state
    expanded, policy state), the run's own counters aside."""
    from gbx_lightning.data import saved_stream_state
    from gbx_lightning.envs.features import FEATURES

    stream = saved_stream_state(ckpt)
    env = stream.get("env") or {}
    features = dict(env.get("features") or {})
    for cls in FEATURES:
        if getattr(cls, "expand_state", None) is not None and features.get(cls.name) is not None:
            features[cls.name] = cls.expand_state(features[cls.name])
    out: dict[str, tuple] = {}

    def walk(value, path):
        if isinstance(value, torch.Tensor):
            out[path] = (str(value.dtype), tuple(value.shape), value.contiguous().reshape(-1).view(torch.uint8)
                         .numpy().tobytes() if value.numel() else b"")
        elif isinstance(value, dict):
            for k, v in value.items():
                walk(v, f"{path}/{k}")
        elif isinstance(value, (list, tuple)):
            for i, v in enumerate(value):
                walk(v, f"{path}[{i}]")

    walk({**env, "features": features}, "env")
    walk(stream.get("policy_state"), "policy_state")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default=str(ROOT / "configs" / "a2c.yaml"))
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--signals", default="TERM,KILL", help="comma list cycled over the trials")
    ap.add_argument("--max-steps", type=int, default=400)
    ap.add_argument("--checkpoint-every", type=int, default=1)
    ap.add_argument("--wait", type=float, nargs=2, default=(0.0, 3.0), help="seconds after the segment's first "
                    "new checkpoint before the signal (uniform)")
    ap.add_argument("--load", type=int, default=0, help="busy processes beside the run")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--dir", default=None, help="work directory (default: a temporary one)")
    ap.add_argument("--no-compare", action="store_true", help="skip the uninterrupted run and the comparison")
    args = ap.parse_args()

    work = Path(args.dir or tempfile.mkdtemp(prefix="crash_trials_"))
    work.mkdir(parents=True, exist_ok=True)
    runs = work / "runs"
    rng = random.Random(args.seed)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    common = ["--config", args.config, "--runs_dir", str(runs), "--trainer.max_steps", str(args.max_steps),
              "--checkpoint_every", str(args.checkpoint_every), "--progress_refresh", "0",
              "--trainer.limit_val_batches", "0", "--image_every", "0"]
    run_dir = runs / "trial" / "version_0"
    last = run_dir / "checkpoints" / "last.ckpt"
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.load)]
    print(f"work directory {work}; load: {args.load} busy processes; uptime: {os.getloadavg()}", flush=True)
    signals = [getattr(signal, "SIG" + s.strip()) for s in args.signals.split(",")]
    log = []
    try:
        for trial in range(args.trials):
            before = _load_step(last) if last.exists() else 0
            cmd = [sys.executable, "-m", "gbx_lightning", "fit", *common, "--run_name", "trial"]
            if trial:
                cmd += ["--ckpt_path", "last"]
            t0 = time.monotonic()
            err_path = work / f"trial{trial}.err"   # a file, not a pipe: a full pipe would block the run
            with open(err_path, "w") as err_file:
                proc = subprocess.Popen(cmd, cwd=work, env=env, stdout=subprocess.DEVNULL, stderr=err_file)
            while proc.poll() is None and (_load_step(last) or 0) <= before:
                time.sleep(0.05)
            wait = rng.uniform(*args.wait)
            time.sleep(wait)
            sig = signals[trial % len(signals)]
            if proc.poll() is not None:
                print(f"trial {trial}: the run ended before the signal (max steps reached?)", flush=True)
                break
            proc.send_signal(sig)
            proc.wait(timeout=600)
            err = err_path.read_text()
            step = _load_step(last)
            records = read_training_log(run_dir / "train.jsonl")   # raises on anything but a torn last line
            ok = step is not None
            note = ""
            if sig == signal.SIGTERM:
                stop = records[-1].get("stop", {})
                ok = ok and proc.returncode == 0 and stop.get("opt_steps") == step and "To resume:" in err
                note = f"exit {proc.returncode}, stop record at {stop.get('opt_steps')}"
            else:
                ok = ok and proc.returncode == -signal.SIGKILL
                torn = not (run_dir / "train.jsonl").read_bytes().endswith(b"\n")
                note = f"exit {proc.returncode}{', JSONL last line torn' if torn else ''}"
            log.append({"trial": trial, "signal": sig.name, "after_s": round(time.monotonic() - t0, 2),
                        "wait_s": round(wait, 2), "resumed_from": before, "last_ckpt": step, "ok": ok})
            print(f"trial {trial:2d} {sig.name:7s} {wait:5.2f} s after its first checkpoint: last.ckpt at "
                  f"{step} (segment started at {before}); {note}; {'ok' if ok else 'FAILED'}", flush=True)
            if not ok:
                print(err[-3000:])
                return 1
        # the run to its end, then the counters and the uninterrupted run
        done = subprocess.run([sys.executable, "-m", "gbx_lightning", "fit", *common, "--run_name", "trial",
                               "--ckpt_path", "last"], cwd=work, env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr[-3000:]
        meta = [r["meta"] for r in read_training_log(run_dir / "train.jsonl") if "meta" in r]
        starts = [m["opt_steps"] for m in meta]
        expected = [0] + [t["last_ckpt"] for t in log]
        print(f"segments started at optimizer steps {starts} (expected {expected}): "
              f"{'counters continue' if starts == expected else 'MISMATCH'}")
        if args.no_compare:
            return 0 if starts == expected else 1
        straight = subprocess.run([sys.executable, "-m", "gbx_lightning", "fit", *common, "--run_name", "straight"],
                                  cwd=work, env=env, capture_output=True, text=True)
        assert straight.returncode == 0, straight.stderr[-3000:]
        a = torch.load(last, map_location="cpu", weights_only=False)
        b = torch.load(runs / "straight" / "version_0" / "checkpoints" / "last.ckpt", map_location="cpu",
                       weights_only=False)
        same_weights = all(torch.equal(a["state_dict"][k], v) for k, v in b["state_dict"].items())
        # the env state and the recurrent policy's state the stream saved: every tensor (a state pool's entries
        # unpacked: its machines, stacks, scores), heatmap counts, milestone trackers, LSTM states
        env_a, env_b = (_stream_tensors(c) for c in (a, b))
        same_env = env_a == env_b
        print(f"stream state (env: machines, pool, heatmap, milestones, reward items; LSTM state): "
              f"{len(env_b)} tensors, equal to the uninterrupted run's: {same_env}"
              + ("" if same_env else f" (differ: {sorted(k for k in env_b if env_a.get(k) != env_b[k])[:8]})"))
        latest = {}
        for r in read_training_log(run_dir / "train.jsonl"):
            if "loss" in r:
                latest[r["opt_steps"]] = {k: v for k, v in r.items() if k not in WALL}
        ours = [latest[k] for k in sorted(latest)]
        theirs = [{k: v for k, v in r.items() if k not in WALL}
                  for r in read_training_log(runs / "straight" / "version_0" / "train.jsonl") if "loss" in r]
        print(f"after {len(log)} interruptions, at step {a['global_step']}: parameters bitwise equal to the "
              f"uninterrupted run: {same_weights}; step records equal: {ours == theirs} ({len(ours)} records)")
        print(json.dumps({"trials": log}))
        return 0 if (starts == expected and same_weights and ours == theirs and same_env) else 1
    finally:
        for p in busy:
            p.kill()


if __name__ == "__main__":
    sys.exit(main())
