"""How small a state pool's entries get in a checkpoint: each pooled state (its machine rows and frame stack) raw,
compressed alone, and XORed against the task's first start state before compressing, with zlib (levels 1, 6, 9)
and lzma (preset 0, 6): bytes (exact, the same every run) and host time (noisy: best of ``--repeat``, one core).

The pool is filled by a random policy on a built-in task with milestones (states harvested where a score rose), as a
training run fills it.

    python tools/pool_compression.py                                  # orchard/level3, 32 envs, 400 steps
    python tools/pool_compression.py --task orchard/level7 --steps 800
"""
from __future__ import annotations

import argparse
import lzma
import sys
import time
import zlib
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gbx_lightning.envs import GameBoyEnv  # noqa: E402


def entries(env) -> tuple[list[bytes], bytes]:
    """Every pooled state as bytes (machine arrays in order, then the frame stack), and the first start state's."""
    pool, cache = env.feature("pool"), env.cache
    used = torch.nonzero(pool.book.entry_serial >= 0).flatten()

    def rows(r: torch.Tensor) -> list[bytes]:
        machines = cache.machine_rows(r)
        stack = cache.stack[r].cpu()
        out = []
        for i in range(r.shape[0]):
            parts = [machines[name][i].contiguous().view(torch.uint8).numpy().tobytes() for name in machines]
            out.append(b"".join(parts) + stack[i].numpy().tobytes())
        return out

    return rows(pool.first_row + used), rows(torch.tensor([0]))[0]


def xor(a: bytes, b: bytes) -> bytes:
    return (np.frombuffer(a, np.uint8) ^ np.frombuffer(b, np.uint8)).tobytes()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--task", default="orchard/level3")
    ap.add_argument("--envs", type=int, default=32)
    ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--stack-k", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    task = {"base": args.task, "milestones": [{"name": "tiles", "kind": "distinct", "fields": ["player_y", "player_x"]},
                                              {"name": "seeds", "kind": "increase", "field": "seeds_eaten"}],
            "pool": {"score": {"tiles": 0.1, "seeds": 1.0}, "max_mb": 64, "per_step": 4}}
    env = GameBoyEnv(args.envs, task=task, stack_k=args.stack_k, action_codec="dpad_noop", max_steps=200)
    gen = torch.Generator().manual_seed(0)
    for _ in range(args.steps):
        env.step(torch.randint(0, env.num_actions, (args.envs,), generator=gen, dtype=torch.int32))
    states, start = entries(env)
    raw = sum(len(s) for s in states)
    print(f"{args.task}: {len(states)} pooled states of {len(states[0]):,} bytes (machine + {args.stack_k} frames), "
          f"{raw:,} bytes raw; {args.envs} envs, {args.steps} random steps")
    methods = {
        "zlib 1": lambda b: zlib.compress(b, 1), "zlib 6": lambda b: zlib.compress(b, 6),
        "zlib 9": lambda b: zlib.compress(b, 9), "lzma 0": lambda b: lzma.compress(b, preset=0),
        "lzma 6": lambda b: lzma.compress(b, preset=6),
    }
    decode = {"zlib": zlib.decompress, "lzma": lzma.decompress}
    print(f"{'method':24s} {'bytes':>12s} {'ratio':>7s} {'encode MB/s':>12s} {'decode MB/s':>12s}")
    for delta in (False, True):
        inputs = [xor(s, start) for s in states] if delta else states
        for name, enc in methods.items():
            best_enc = best_dec = float("inf")
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                packed = [enc(s) for s in inputs]
                t1 = time.perf_counter()
                for p in packed:
                    decode[name.split()[0]](p)
                t2 = time.perf_counter()
                best_enc, best_dec = min(best_enc, t1 - t0), min(best_dec, t2 - t1)
            size = sum(len(p) for p in packed)
            label = ("XOR start, " if delta else "") + name
            print(f"{label:24s} {size:12,d} {raw / size:6.1f}x {raw / 1e6 / best_enc:12.1f} {raw / 1e6 / best_dec:12.1f}",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
