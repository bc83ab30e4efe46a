"""How often a uniformly random policy clears each orchard ladder level: the difficulty curve.

Every env starts the level by its select trace (gbx_lightning/roms/orchard.py), then takes
`--actions` random actions from {no-op, Right, Left, Up, Down}, each held `--hold` frames of
`--frames-per-action` (the GameBoyEnv defaults: 8 of 24). An episode succeeds when LEVEL
CLEAR rises before GAME OVER; it is read from the game's RAM after every action (the flag
stays up for the 90-frame banner, longer than an action, so none is missed).

    python tools/orchard_random_play.py --levels 1 2 3 --envs 256 --actions 50
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from gbx_lightning.roms import build_rom, orchard  # noqa: E402

ACTIONS = np.array([0, orchard.RIGHT, orchard.LEFT, orchard.UP, orchard.DOWN], np.uint8)


def play(level: int, envs: int, actions: int, frames_per_action: int, hold: int, seed: int) -> dict:
    """Random play of `level` in `envs` parallel Game Boys; per-episode outcomes."""
    import warp as wp

    from gbx_lightning.emu.machine import VecGameBoy

    wp.config.quiet = True
    gb = VecGameBoy(build_rom("orchard"), envs)
    trace = orchard.level_select_inputs(level)
    for mask in orchard.buttons_per_frame(trace, orchard.level_start_frames(level)):
        gb.run_frames(1, buttons=np.full(envs, mask, np.uint8), render="none")
    for env in range(envs):
        assert gb.read_memory(env, orchard.GAME_STATE, 1)[0] == orchard.STATE_PLAY
        assert gb.read_memory(env, orchard.LADDER_LEVEL, 1)[0] == level
    rng = np.random.default_rng(seed)
    cleared_at = np.zeros(envs, np.int64)       # action count at the clear, 0 = not (yet)
    died = np.zeros(envs, bool)
    for t in range(1, actions + 1):
        gb.run_frames(frames_per_action, buttons=ACTIONS[rng.integers(0, len(ACTIONS), envs)],
                      release_after=hold, render="none")
        for env in np.flatnonzero((cleared_at == 0) & ~died):
            clear, over = gb.read_memory(env, orchard.GAME_OVER, 2)[::-1]
            if clear:
                cleared_at[env] = t
            elif over:
                died[env] = True
    won = cleared_at > 0
    p = won.mean()
    return dict(level=level, envs=envs, actions=actions, success=p,
                ci95=1.96 * math.sqrt(p * (1 - p) / envs), died=died.mean(),
                mean_actions_to_clear=cleared_at[won].mean() if won.any() else float("nan"))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--levels", type=int, nargs="+", default=[1, 2, 3])
    ap.add_argument("--envs", type=int, default=256)
    ap.add_argument("--actions", type=int, default=50)
    ap.add_argument("--frames-per-action", type=int, default=24)
    ap.add_argument("--hold", type=int, default=8)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    for level in args.levels:
        t0 = time.perf_counter()
        r = play(level, args.envs, args.actions, args.frames_per_action, args.hold, args.seed + level)
        print(f"level {level}: success {r['success']:.3f} +- {r['ci95']:.3f} (95%), game over "
              f"{r['died']:.3f}, mean actions to clear {r['mean_actions_to_clear']:.1f} "
              f"[{r['envs']} envs x {r['actions']} actions, {time.perf_counter() - t0:.1f} s]",
              flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
