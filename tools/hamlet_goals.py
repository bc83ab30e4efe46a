"""Rewrite hamlet's goal traces from hamlet.py and capture its four goal templates again (after any ROM change:
a template's JSON holds the ROM's sha256, and tasks refuse a template captured from another ROM).

    python tools/hamlet_goals.py [--only village,lantern] [--dry-run]

For stage s the trace is hamlet.stage_inputs(s) followed by hamlet.ROUTES[s] taken as GameBoyEnv takes actions
(hamlet.action_inputs); the goal is that trace's screen after its last action, captured by tools/capture_goal.py
with the region below and random-play calibration from the stage's start (its frame stage_start_frames(s)).
Each trace file's header says the exact capture command.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# stage -> (goal name, what the goal screen is, observation region, what the region holds)
GOALS = {
    1: ("village", "the village in front of the house", "0:24,0:80",
        "the top three rows of steps: trees, the roof, the door; the player stands below them"),
    2: ("lantern", '"KAI GOT THE LANTERN!" in the elder\'s house', "28:44,32:48",
        "the LANTERN's picture in its box above the text"),
    3: ("route", "the route's south end, just arrived from the village", "0:32,0:80",
        "the top four rows of steps; the player stands below them"),
    4: ("shrine", "inside the shrine, just arrived", "0:40,0:80",
        "the shrine's top five rows of steps: the bell, the pillars; the player stands on the mat below"),
}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", default=None, help="comma-separated goal names (default: all four)")
    ap.add_argument("--dry-run", action="store_true", help="write the traces, print the commands, capture nothing")
    args = ap.parse_args(argv)

    from gbx_lightning.emu.buttons import buttons_name
    from gbx_lightning.roms import ROM_DIR, hamlet

    only = None if args.only is None else set(args.only.split(","))
    unknown = (only or set()) - {g[0] for g in GOALS.values()}
    if unknown:
        ap.error(f"--only: unknown goal names {sorted(unknown)}; expected some of {[g[0] for g in GOALS.values()]}")
    for stage, (name, what, region, held) in GOALS.items():
        if only is not None and name not in only:
            continue
        start = hamlet.stage_start_frames(stage)
        route = hamlet.ROUTES[stage]
        end = start + 24 * len(route)
        trace = hamlet.stage_inputs(stage) + hamlet.action_inputs(route, start)
        rows, cols = region.split(",")
        trace_path = ROM_DIR / f"hamlet_{name}.trace"
        png = ROM_DIR / f"hamlet_{name}.png"
        command = ["tools/capture_goal.py", "hamlet", "--trace", str(trace_path.relative_to(ROOT)), "--frames",
                   str(end), "--region", region, "--random-from", str(start), "--out", str(png.relative_to(ROOT))]
        header = [
            f"# hamlet stage {stage} ({hamlet.STAGES[stage].name}): the stage select to stage {stage}, then "
            f"hamlet.ROUTES[{stage}] as GameBoyEnv",
            f"# takes actions (24 frames a step, buttons held 8), to {what}.",
            f"# The goal template hamlet_{name}.png is this trace's screen at frame {end}, obs rows {rows}, cols "
            f"{cols} ({held}):",
            f"#   python {' '.join(command[:6])} \\",
            f"#       {' '.join(command[6:])}",
            "# (tools/hamlet_goals.py writes this file and runs that command.)",
        ]
        trace_path.write_text("\n".join(header + [f"{f:<4d} {buttons_name(m)}" for f, m in trace]) + "\n")
        print(f"{trace_path.relative_to(ROOT)}: {len(trace)} changes, capture at frame {end}")
        if not args.dry_run:
            subprocess.run([sys.executable] + command, cwd=ROOT, check=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
