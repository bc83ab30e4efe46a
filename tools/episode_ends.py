"""Where a policy's episodes end: the cells (the task's ``heatmap`` fields) its episodes fail, succeed or run out on.

    python tools/episode_ends.py CONFIG [--ckpt_path CKPT] [--episodes 64] [--greedy] [--top 10] [--task T ...]

A learning curve says how many episodes die; this says where. Builds the env as the config's module would, loads
the policy from a checkpoint (without one: uniformly random actions), runs one episode per env from the task's
start states (an evaluation env: no pool starts; the config's ``eval_seed``), and counts, for each ended episode,
the heatmap cell (``heatmap: {y, x, cell}``; the world tile with ``world: true``) the player stood on when the
episode's last step began: where the beetle caught it, where the goal was reached. On orchard's level 7 it showed
half of a policy's deaths in one pocket under one beetle's patrol (docs/benchmarks.md). ``--task`` again and again:
one block per task, e.g. each stage of a game from its own start (which mazes a full-game policy has learned).
"""
from __future__ import annotations

import argparse
import sys
from collections import Counter
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

OUTCOMES = ("failed", "success", "time_up")


def episode_ends(env, policy, seed: int, greedy: bool = False, max_steps: int = 100_000) -> dict[str, Counter]:
    """One episode in each of ``env``'s envs (``data.EvalEpisodes``); ``{outcome: Counter({(row, col): episodes})}``
    over the heatmap's cells at each episode's last step's start (``OUTCOMES``: failed, success, or neither: time
    up; an episode that never ended counts nowhere). ``policy``: a module's policy or anything returning (logits,
    value)."""
    from gbx_lightning.data import EvalEpisodes

    heatmap = env.feature("heatmap")
    if heatmap is None:
        raise ValueError("episode_ends: the task has no heatmap (heatmap: {y: FIELD, x: FIELD}): no cells to count")

    def cell(env):
        row, col, inside = heatmap.cells(env)
        return {"cell_row": row, "cell_col": col, "cell_inside": inside}

    batch = next(iter(EvalEpisodes(env, policy, seed, greedy=greedy, max_steps=max_steps, before_step=cell)))
    outcome = (~batch["failed"]).long() + (~batch["failed"] & ~batch["success"]).long()   # 0 failed, 1, 2
    counted = batch["finished"] & batch["cell_inside"]
    ends = {k: Counter() for k in OUTCOMES}
    for o, r, c in zip(outcome[counted].tolist(), batch["cell_row"][counted].tolist(),
                       batch["cell_col"][counted].tolist()):
        ends[OUTCOMES[o]][(r, c)] += 1
    return ends


def over_task(config: str, spec: str | None):
    """The config's task with ``spec`` over it: a task name or file becomes its ``base`` (its reward, pool and
    milestones kept: the observation may need them), an inline mapping's fields replace its own; None: unchanged."""
    if spec is None:
        return None
    import yaml

    task = yaml.safe_load(Path(config).read_text())["model"]["init_args"]["env"]["init_args"].get("task")
    task = dict(task) if isinstance(task, dict) else {"base": task}
    fields = yaml.safe_load(spec) if spec.lstrip().startswith("{") else {"base": spec}
    return {**task, **fields}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("config", help="a training config (YAML)")
    ap.add_argument("--ckpt_path", default=None, help="a checkpoint of a run of this config (default: random actions)")
    ap.add_argument("--episodes", type=int, default=64)
    ap.add_argument("--seed", type=int, default=None, help="default: the config's model.init_args.eval_seed")
    ap.add_argument("--greedy", action="store_true", help="argmax actions (default: sampled, as evaluation does)")
    ap.add_argument("--top", type=int, default=10, help="cells listed per outcome")
    ap.add_argument("--task", action="append", default=None,
                    help="the config's task over another base: a name or file (e.g. orchard/game_maze2: episodes "
                         "from a later stage, its own success), or fields over it ('{ram_goal: {field: level, "
                         "at_least: 1}}'); given more than once, one block per task")
    args = ap.parse_args(argv)

    import warp as wp

    wp.config.quiet = True
    wp.config.log_level = wp.LOG_WARNING
    from gbx_lightning.algos.build import build_policy, factory_parts
    from gbx_lightning.cli.runs import RunError, policy_weights
    from random_policy import env_from_config, uniform_policy

    tasks = args.task or [None]
    weights = None
    if args.ckpt_path is not None:
        try:
            weights = policy_weights(args.ckpt_path, "--ckpt_path")
        except RunError as err:
            print(f"episode_ends: {err}", file=sys.stderr)
            return 2
    for spec in tasks:
        env, init = env_from_config(args.config, args.episodes, task=over_task(args.config, spec))
        if weights is None:
            policy, who = uniform_policy(env.num_actions), "random policy"
        else:
            cls, kwargs = factory_parts(init["policy"])
            policy = build_policy(partial(cls, **kwargs), env)
            policy.load_state_dict(weights)
            policy.eval()
            who = Path(args.ckpt_path).name + (" (greedy)" if args.greedy else "")
        seed = args.seed if args.seed is not None else init.get("eval_seed", 1_000_003)
        ends = episode_ends(env, policy, seed, greedy=args.greedy)
        cell = env.feature("heatmap").cell
        on = f" on {spec}" if spec is not None else ""
        print(f"{who}: {args.episodes} episodes of {Path(args.config).name}{on}; cells of {cell} x {cell} as (row, "
              f"col) = (y // {cell}, x // {cell}) of the heatmap's fields, where each episode's last step began")
        for outcome in OUTCOMES:
            total = sum(ends[outcome].values())
            if total:
                cells = ", ".join(f"{rc}: {k}" for rc, k in ends[outcome].most_common(args.top))
                print(f"  {outcome} {total}: {cells}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
