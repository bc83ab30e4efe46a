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
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


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
    args = ap.parse_args(argv)

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


if __name__ == "__main__":
    raise SystemExit(main())
