"""Time to write an evaluation clip (an animated GIF), and its size.

    python tools/bench_media.py [--steps 60 200] [--repeats 5] [--base ad52a46]

Records a clip as an evaluation does (GameBoyEnv, the built-in game's level 4 with random D-pad
actions; the newest 72x80 screen of every step, drawn 2x, 12/100 s each) and times
gbx_lightning.media.encode_gif on it, best of --repeats. With --base REV it also times the
encode_gif of that git revision's gbx_lightning/emu/gif.py (the hand-written, pure-Python LZW
encoder the project used before Pillow) on the same frames, alternating with the current one.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _record(steps: int) -> np.ndarray:
    import torch

    from gbx_lightning.envs import GameBoyEnv

    env = GameBoyEnv(num_envs=1, rom="orchard", level=4, max_steps=steps + 1, action_codec="dpad")
    obs = env.reset(seed=0)
    gen = torch.Generator().manual_seed(0)
    screens = [obs[0, -1].cpu().numpy()]
    for _ in range(steps):
        action = torch.randint(0, env.num_actions, (1,), generator=gen, dtype=torch.int32)
        obs, *_ = env.step(action.to(env.device))
        screens.append(obs[0, -1].cpu().numpy())
    return np.stack(screens)


def _base_encoder(rev: str):
    """encode_gif of `rev`'s emu/gif.py, with the SHADE_GREYS it imported from emu/png.py."""
    src = subprocess.run(["git", "show", f"{rev}:gbx_lightning/emu/gif.py"], cwd=ROOT, check=True,
                         capture_output=True, text=True).stdout
    from gbx_lightning.media import SHADE_GREYS

    namespace = {"__name__": "base_gif", "SHADE_GREYS": SHADE_GREYS}
    exec(compile(src.replace("from .png import SHADE_GREYS", ""), f"{rev}:emu/gif.py", "exec"), namespace)
    return namespace["encode_gif"]


def _best(fn, clip, repeats: int) -> tuple[float, int]:
    times, size = [], 0
    for _ in range(repeats):
        t0 = time.perf_counter()
        size = len(fn(clip, 2, 12))
        times.append(time.perf_counter() - t0)
    return min(times), size


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, nargs="+", default=[60, 200])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--base", default=None, help="git revision whose emu/gif.py to time beside media.py")
    args = ap.parse_args(argv)

    import warp as wp

    wp.config.quiet = True
    from gbx_lightning.media import encode_gif

    encoders = [("media.encode_gif (Pillow)", encode_gif)]
    if args.base:
        encoders.append((f"{args.base}:emu/gif.py", _base_encoder(args.base)))
    for steps in args.steps:
        clip = _record(steps)
        runs = 1 + int(np.count_nonzero(np.any(clip[1:] != clip[:-1], axis=(1, 2))))
        print(f"clip: {len(clip)} screens of 72x80 drawn 2x, {runs} runs of identical screens")
        for name, fn in encoders:
            seconds, size = _best(fn, clip, args.repeats)
            print(f"  {name:30s} {seconds * 1e3:9.1f} ms  {size:9,d} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
