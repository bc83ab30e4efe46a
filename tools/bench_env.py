"""GameBoyEnv env steps/s by number of CPU shards (one launch thread per shard), interleaved repeats.

    python tools/bench_env.py [--level 1] [--envs 32 64 256] [--shards 1 2] [--steps 100] [--repeats 5]
    python tools/bench_env.py --rom game.gb --start-state start.state --goal goal.png   # a game of your own

Random actions (the dpad_noop codec), 24 frames per step with the buttons held 8, obs rendered at
the step's end: the built-in task as configs/a2c.yaml runs it. Each repeat runs every shard count
once, in alternating order; the tool prints env steps/s (wall) per run and the median ratio of
each shard count against one shard, repeat by repeat (the machine's speed drifts; runs minutes
apart do not compare). Level 4 (the full game's first maze, two beetles) is game-like load. With
--rom (and --start-state, --goal) it measures your own game instead: start state, goal reward on,
the 8-action codec and 4-frame stacks (what configs/pokered_*.yaml use).

`--config FILE --base REV` times a training config's env as `fit` steps it (its task with every feature, its
num_envs, training mode, one shard per core) under random actions, as git revision REV has the package (exported
with `git archive`) against the working tree's, each in a fresh process, the order alternating per repeat; it prints
env steps/s and torch ops per step of each, and the after/before ratio per repeat:

    python tools/bench_env.py --config configs/orchard_game_ppo.yaml --base 5822c2a --steps 300 --repeats 6
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

# the package this process imports: the working tree's, or (a --base child) the tree given by --package_root
_ROOT = Path(__file__).resolve().parents[1]
if "--package_root" in sys.argv:
    _ROOT = Path(sys.argv[sys.argv.index("--package_root") + 1]).resolve()
sys.path.insert(0, str(_ROOT))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--level", type=int, default=1)
    ap.add_argument("--envs", type=int, nargs="+", default=[32, 64, 256])
    ap.add_argument("--shards", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--rom", default=None, help="a ROM file of your own (default: the built-in game)")
    ap.add_argument("--start-state", default=None)
    ap.add_argument("--goal", default=None)
    ap.add_argument("--config", default=None, help="a training config: its env as fit steps it (with --base)")
    ap.add_argument("--base", default=None, metavar="REV", help="with --config: REV's package against this tree's")
    ap.add_argument("--package_root", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--env_child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.env_child:
        print("RESULT " + json.dumps(config_env_rate(args.config, args.steps)), flush=True)
        return 0
    if args.config is not None or args.base is not None:
        if args.config is None or args.base is None:
            raise SystemExit("--config and --base go together: a config's env, before (REV) and after")
        return run_base(args)

    import torch
    import warp as wp

    wp.config.quiet = True
    wp.config.log_level = wp.LOG_WARNING
    torch.set_num_threads(1)
    from gbx_lightning.envs import GameBoyEnv

    for n in args.envs:
        if args.rom is None:
            options = dict(task=f"orchard/level{args.level}", action_codec="dpad_noop", stack_k=1, max_steps=50)
        else:
            options = dict(rom=args.rom, task={"start": {"state": args.start_state}, "goal": args.goal},
                           action_codec="dpad_ab_start_noop", stack_k=4, max_steps=2048)
        envs = {k: GameBoyEnv(n, cpu_threads=k, **options) for k in args.shards}
        gen = torch.Generator().manual_seed(0)
        rates = {k: [] for k in args.shards}
        for r in range(args.repeats):
            for k in (args.shards if r % 2 == 0 else args.shards[::-1]):
                env = envs[k]
                actions = [torch.randint(0, env.num_actions, (n,), generator=gen, dtype=torch.int32)
                           for _ in range(args.steps)]
                env.step(actions[0])
                t = time.perf_counter()
                for a in actions:
                    env.step(a)
                rates[k].append(args.steps * n / (time.perf_counter() - t))
        base = args.shards[0]
        parts = []
        for k in args.shards:
            ratio = statistics.median(x / y for x, y in zip(rates[k], rates[base]))
            parts.append(f"{k} shard(s) {statistics.median(rates[k]):7.0f} env steps/s "
                         f"({statistics.median(rates[k]) * 24:8.0f} frames/s, x{ratio:.2f})")
        what = f"level {args.level}" if args.rom is None else args.rom
        print(f"{what}, {n:4d} envs: " + ";  ".join(parts), flush=True)
    return 0


def config_env_rate(config: str, steps: int) -> dict:
    """The config's env (as ``tools/random_policy.py`` builds it, in training mode) stepped ``steps`` times under
    random actions after 30 untimed steps: env steps/s (wall) and torch ops per step (counted on 20 more steps)."""
    import torch
    import warp as wp
    from torch.utils._python_dispatch import TorchDispatchMode

    wp.config.quiet = True
    wp.config.log_level = wp.LOG_WARNING
    torch.set_num_threads(1)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import yaml
    from random_policy import env_from_config
    sys.path.insert(0, str(_ROOT))   # random_policy puts the working tree first: a --base child imports its own

    import gbx_lightning
    assert Path(gbx_lightning.__file__).resolve().is_relative_to(_ROOT), gbx_lightning.__file__

    num_envs = yaml.safe_load(Path(config).read_text())["model"]["init_args"].get("num_envs", 32)
    env, _ = env_from_config(config, num_envs)
    env.train()
    env.reset(seed=0)
    gen = torch.Generator().manual_seed(0)
    actions = [torch.randint(0, env.num_actions, (num_envs,), generator=gen, dtype=torch.int32)
               for _ in range(steps + 50)]
    for a in actions[:30]:
        env.step(a)
    t = time.perf_counter()
    for a in actions[30:30 + steps]:
        env.step(a)
    rate = steps * num_envs / (time.perf_counter() - t)
    ops = [0]

    class Count(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            ops[0] += 1
            return func(*args, **(kwargs or {}))

    with Count():
        for a in actions[30 + steps:]:
            env.step(a)
    return {"rate": rate, "ops": ops[0] / 20, "num_envs": num_envs}


def run_base(args) -> int:
    """The config's env of revision ``args.base`` ("before") against the working tree's ("after")."""
    import io
    import tarfile

    here = Path(__file__).resolve()
    out = subprocess.run(["git", "-C", str(here.parents[1]), "archive", "--format=tar", args.base, "gbx_lightning"],
                         capture_output=True)
    if out.returncode != 0:
        raise SystemExit(f"--base: git archive {args.base} failed: {out.stderr.decode().strip()}")
    results: dict[str, list[dict]] = {"before": [], "after": []}
    with tempfile.TemporaryDirectory(prefix="bench_env_base_") as tmp:
        with tarfile.open(fileobj=io.BytesIO(out.stdout)) as tar:
            tar.extractall(tmp, filter="data")
        roots = {"before": tmp, "after": str(here.parents[1])}
        for r in range(args.repeats):
            for name in (("before", "after") if r % 2 == 0 else ("after", "before")):
                cmd = [sys.executable, str(here), "--package_root", roots[name], "--env_child", "--config",
                       str(Path(args.config).resolve()), "--steps", str(args.steps)]
                run = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
                lines = [x for x in run.stdout.splitlines() if x.startswith("RESULT ")]
                if run.returncode != 0 or not lines:
                    sys.stderr.write(run.stdout[-3000:] + run.stderr[-3000:])
                    raise SystemExit(f"--base: the {name} run failed (exit {run.returncode})")
                res = json.loads(lines[-1][len("RESULT "):])
                results[name].append(res)
                print(f"repeat {r} {name:6s} {res['rate']:7.0f} env steps/s ({res['num_envs']} envs), "
                      f"{res['ops']:6.0f} torch ops per step", flush=True)
    ratios = [a["rate"] / b["rate"] for a, b in zip(results["after"], results["before"])]
    print(f"{args.config}: after / before env steps/s per repeat {', '.join(f'{x:.3f}' for x in ratios)}; median "
          f"{statistics.median(ratios):.3f} (range {min(ratios):.3f}-{max(ratios):.3f}); torch ops per step "
          f"{statistics.median(x['ops'] for x in results['before']):.0f} -> "
          f"{statistics.median(x['ops'] for x in results['after']):.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
