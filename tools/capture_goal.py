"""Capture a goal screen for the goal-template reward: GOAL.png (the 72x80 observation) + GOAL.json.

    python tools/capture_goal.py ROM (--state STATE | --trace TRACE) [--frames N] --out GOAL.png
                                 [--region 24:40,0:80] [--start START_STATE | --random-from F]

ROM: a .gb file or a built-in name (orchard). The goal is the screen after --frames frames
from STATE (a PyBoy .state or a state file of ours) or from power-on, holding TRACE's buttons
("FRAME BUTTONS" lines: from FRAME on hold BUTTONS, e.g. "40 right+a"; without --frames the
trace's last line is the capture frame). --region keeps only part of the screen (observation
rows and columns, end exclusive): what must match, e.g. a banner, not a score.

The usual way with a game of your own: play it in PyBoy, save a state where an episode should
start (your task's start.state) and one where the goal screen shows, then
``capture_goal.py game.gb --state at_goal.state --start start.state --region ... --out goal.png``.

It then calibrates: the distance of the goal's next screens (no button held) and of random play
from the episode start (--start, else the trace's frame --random-from; 64 envs x 150 steps of 24
frames), prints both, and writes a suggested tau (a
quarter of the way from the goal's screens to the nearest others) and k_consecutive into
GOAL.json with the ROM's sha256 and where the goal came from. A task's ``goal: GOAL.png`` reads both
files (envs/task.py); the task's own values (goal: {path: GOAL.png, tau: ...}) override the JSON's.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("rom", help="ROM file (.gb) or built-in name (orchard)")
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--state", help="start from this savestate (PyBoy .state or a gbx_lightning state file)")
    src.add_argument("--trace", help="start from power-on and press these buttons (trace file)")
    ap.add_argument("--start", default=None, help="savestate random play starts from (the episode start; default: "
                                                  "the goal's own start, --random-from frames in)")
    ap.add_argument("--frames", type=int, default=None, help="capture after this many frames (default: the trace's "
                                                             "last line; 1 with --state)")
    ap.add_argument("--out", required=True, help="GOAL.png to write (GOAL.json is written beside it)")
    ap.add_argument("--region", default=None, help="observation rows and cols that must match, 'R0:R1,C0:C1'")
    ap.add_argument("--random-from", type=int, default=0, help="trace frame random play starts from (default 0)")
    ap.add_argument("--random-envs", type=int, default=64)
    ap.add_argument("--random-steps", type=int, default=150)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)

    import warp as wp

    wp.config.quiet = True
    wp.config.log_level = wp.LOG_WARNING
    from gbx_lightning.emu.cartridge import RomError
    from gbx_lightning.envs.capture import capture_goal, parse_region
    from gbx_lightning.envs.goal import GoalError, save_goal

    frames = args.frames if args.frames is not None or args.trace else 1
    try:
        region = parse_region(args.region)
        goal, meta = capture_goal(args.rom, state=args.state, trace=args.trace, frames=frames, region=region,
                                  random_from=args.random_from, random_start=args.start,
                                  random_envs=args.random_envs,
                                  random_steps=args.random_steps, seed=args.seed)
    except (GoalError, RomError, ValueError, FileNotFoundError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    meta_path = save_goal(args.out, goal, meta)
    cal, rw = meta["calibration"], meta["reward"]
    print(f"goal: {args.out} (+ {meta_path.name}), ROM {meta['rom_title']!r} sha256 {meta['rom_sha256'][:12]}...")
    print(f"distance of the goal's next screens (idle): {cal['goal_then_idle_steps']} "
          f"(the goal stays under tau for {cal['goal_stays_steps']} idle step(s))")
    rp = cal["random_play"]
    print(f"distance under random play ({rp['envs']} envs x {rp['steps']} steps): min {rp['min']}, "
          f"1% {rp['p1']}, median {rp['p50']}")
    print(f"suggested: tau {rw['tau']} (a quarter into the widest gap, {cal['gap'][0]}..{cal['gap'][1]}), "
          f"k_consecutive {rw['k_consecutive']}; random-play screens under tau: {100 * rp['below_tau']:.2f}% "
          f"(random play that reached the goal, or a tau to raise)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
