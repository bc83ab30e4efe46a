"""A run's state pool as start states: the best pooled states of a checkpoint written as state files, for the next
run's ``task.train_starts`` (or ``start.state``), with the YAML to paste.

    python tools/pool_states.py CKPT --out DIR [--top 8] [--where FIELD=VALUE ...] [--task TASK]

Go-Explore's second phase and pokemonred_puffer's saved states along the game: a run that explored reached states
(a new town, a later maze) that the next run's training can start from at once, while its evaluation still starts
from the task's start. Reads the pool from the checkpoint's env state (the run must have saved it: see
``--env_state_max_mb``), ranks its entries by score (the pool's: the task's start to there), keeps those where every
``--where`` holds (a RAM map field of ``--task``, or a WRAM address like 0xC119), and writes the ``--top`` of them as
``DIR/pool_<rank>.state`` (our state format: ``start.state`` and ``train_starts`` load it, and ``load_state``),
printing a ``train_starts`` entry for each with its score.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

WRAM0 = 0xC000


def pool_entries(ckpt: dict) -> tuple[dict[str, np.ndarray], np.ndarray, str]:
    """(machine arrays name -> [E, ...], scores [E], the ROM's sha256) of a checkpoint's state pool; SystemExit with
    one line where the checkpoint holds none."""
    from gbx_lightning.data import saved_stream_state
    from gbx_lightning.envs.features.pool import StatePoolFeature

    try:
        stream = saved_stream_state(ckpt)
    except (KeyError, IndexError, TypeError):
        raise SystemExit("pool_states: the checkpoint has no data-stream state (not a gbx_lightning fit checkpoint?)")
    env = stream.get("env")
    if env is None:
        raise SystemExit("pool_states: the checkpoint was saved without its env state (the run's --env_state_max_mb "
                         "left it out): no pool to read")
    pool = (env.get("features") or {}).get("pool")
    if pool is None:
        raise SystemExit("pool_states: the run's task has no state pool (task.pool)")
    expanded = StatePoolFeature.expand_state(pool)
    machines = {k: torch.as_tensor(v).numpy() for k, v in expanded["machines"].items()}
    scores = torch.as_tensor(pool["columns"]["score"]).numpy().astype(np.float64)
    return machines, scores, str(pool["rom_sha256"])


def parse_where(items: list[str], task) -> list[tuple[int, bytes, str]]:
    """(address, bytes, text) of each ``FIELD=VALUE`` (a RAM map field of one number, or a WRAM address)."""
    from gbx_lightning.envs.task_checks import ram_write

    out = []
    for item in items:
        name, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"pool_states: --where {item!r} must be FIELD=VALUE")
        ref = int(name, 0) if name.strip()[:1].isdigit() else name.strip()
        address, data = ram_write(task.ram_map if task is not None else None, ref, int(value, 0), "--where")
        out.append((address, data, item))
    return out


def select(machines: dict[str, np.ndarray], scores: np.ndarray, where: list[tuple[int, bytes, str]],
           top: int) -> np.ndarray:
    """Indices of the ``top`` highest-scoring entries whose WRAM holds every ``where`` (ties: entry order)."""
    wram = machines["wram"]
    keep = np.ones(len(scores), dtype=bool)
    for address, data, _ in where:
        keep &= (wram[:, address - WRAM0:address - WRAM0 + len(data)] == np.frombuffer(data, np.uint8)).all(axis=1)
    index = np.flatnonzero(keep)
    return index[np.argsort(-scores[index], kind="stable")][:top]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("ckpt", type=Path, help="a fit checkpoint that saved its env state (runs/NAME/version_N/...)")
    parser.add_argument("--out", type=Path, required=True, help="folder for pool_<rank>.state")
    parser.add_argument("--top", type=int, default=8, help="at most this many states, best scores first")
    parser.add_argument("--where", nargs="*", default=[], help="FIELD=VALUE conditions on each state's RAM")
    parser.add_argument("--task", help="the run's task (a built-in name or file), for --where's field names")
    args = parser.parse_args(argv)
    if args.top < 1:
        raise SystemExit(f"pool_states: --top must be >= 1, got {args.top}")
    if not args.ckpt.is_file():
        raise SystemExit(f"pool_states: no checkpoint at {args.ckpt}")
    from gbx_lightning.emu.savestate import write_state_file
    from gbx_lightning.envs.base import OptionError
    from gbx_lightning.envs.task import load_task

    try:
        task = load_task(args.task) if args.task else None
        where = parse_where(args.where, task)
    except OptionError as err:
        raise SystemExit(f"pool_states: {err}") from None
    machines, scores, sha = pool_entries(torch.load(args.ckpt, map_location="cpu", weights_only=False))
    picked = select(machines, scores, where, args.top)
    if not len(picked):
        raise SystemExit(f"pool_states: none of the pool's {len(scores)} states holds {' and '.join(args.where)}")
    args.out.mkdir(parents=True, exist_ok=True)
    print(f"# {len(picked)} of the pool's {len(scores)} states" + (f" where {' and '.join(args.where)}" if where
                                                                    else "") + ", best first")
    print("train_starts:\n  starts:")
    for rank, entry in enumerate(picked):
        path = args.out / f"pool_{rank:03d}.state"
        write_state_file(path, {name: arr[entry] for name, arr in machines.items()}, sha)
        print(f"    - {{state: {path}, variants: 1, score: {float(scores[entry]):g}}}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
