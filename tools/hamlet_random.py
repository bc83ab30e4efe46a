"""A uniformly random policy on a hamlet task, with where its steps go (read from the game's RAM every step).

    python tools/hamlet_random.py configs/hamlet_house_ppo.yaml [--episodes 512] [--seed S]
                                  [--task hamlet/lantern] [--codec dpad_ab_noop] [--max-steps 2048]

Builds the env as the config's module would (``model.env``: class_path, init_args; --task / --codec / --max-steps
replace those options), runs one episode per env with uniformly random actions (torch's generator seeded with
--seed), and prints the success rate (an episode that did not end counts as a failure; the same rule as
tools/random_policy.py), mean steps to success, and what the episodes' steps were spent on: the share of steps that
ended in each wUIContext (world, the Start menu and its screens, the PC and its screens, talking, a map change) and
in each wUIState, the maps reached and the events set (hamlet.py names them). Steps are counted per episode up to the
one that ends it (after which the RAM is the next episode's). Slow on purpose: one host read of the RAM per step (a
measurement, not a training path).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("config", help="a training config (YAML) whose model.env is a GameBoyEnv on a hamlet task")
    ap.add_argument("--episodes", type=int, default=512)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--task", default=None, help="replace the config's task (e.g. hamlet/lantern)")
    ap.add_argument("--codec", default=None, help="replace the config's action_codec (e.g. dpad_ab_noop)")
    ap.add_argument("--max-steps", type=int, default=None, help="replace the config's max_steps")
    args = ap.parse_args(argv)
    if args.episodes < 1:
        ap.error(f"--episodes: expected >= 1, got {args.episodes}")

    import torch
    import warp as wp
    import yaml

    wp.config.quiet = True
    wp.config.log_level = wp.LOG_WARNING
    from gbx_lightning.algos.build import factory_parts
    from gbx_lightning.roms import hamlet

    init = yaml.safe_load(Path(args.config).read_text())["model"]["init_args"]
    env_class, options = factory_parts(init["env"])
    for key, value in (("task", args.task), ("action_codec", args.codec), ("max_steps", args.max_steps)):
        if value is not None:
            options[key] = value
    n = args.episodes
    t0 = time.perf_counter()
    env = env_class(n, "cpu", **options)
    gen = torch.Generator().manual_seed(args.seed)
    env.reset(seed=args.seed)
    max_steps = int(options.get("max_steps", 1000))

    active = torch.ones(n, dtype=torch.bool)
    success = torch.zeros(n, dtype=torch.bool)
    length = torch.zeros(n, dtype=torch.int64)
    ctx_steps = torch.zeros(len(hamlet.CTX_NAMES), dtype=torch.int64)
    ui_steps = torch.zeros(len(hamlet.UI_NAMES), dtype=torch.int64)
    maps = torch.zeros(n, 8, dtype=torch.bool)
    events = torch.zeros(n, dtype=torch.int64)
    for step in range(max_steps):
        actions = torch.randint(env.num_actions, (n,), generator=gen, dtype=torch.int32)
        _, _, terminated, truncated, info = env.step(actions)
        ended = (terminated | truncated) & active
        ram = env.read_ram(hamlet.MAP_ID, 0x12).to(torch.int64)   # $C100-$C111; this step's (or a reset's) RAM
        live = active & ~ended                                    # RAM still this episode's
        ctx_steps += torch.bincount(ram[live, 0x11].clamp(max=len(hamlet.CTX_NAMES) - 1),
                                    minlength=len(hamlet.CTX_NAMES))
        ui_steps += torch.bincount(ram[live, 0x10].clamp(max=len(hamlet.UI_NAMES) - 1), minlength=len(hamlet.UI_NAMES))
        maps[live, ram[live, 0].clamp(max=7)] = True
        events[live] |= ram[live, 1] | ram[live, 2] << 8
        success |= ended & info["success"].cpu()
        length[ended] = step + 1
        active &= ~ended
        if not bool(active.any()):
            break
    length[active] = max_steps
    wins = success.float()
    lines = [f"hamlet random policy on {Path(args.config).name} task {options.get('task')} codec "
             f"{options.get('action_codec', 'default')}: episodes {n} max_steps {max_steps} seed {args.seed} "
             f"({time.perf_counter() - t0:.0f} s)",
             f"success_rate {wins.mean():.4f} (+- {1.96 * (wins.mean() * (1 - wins.mean()) / n).sqrt():.4f}, 95%)  "
             f"steps_to_success {length[success].float().mean():.1f}" if success.any() else
             f"success_rate 0.0000  steps_to_success n/a"]
    total = int(ctx_steps.sum())
    lines.append("steps by context: " + "  ".join(
        f"{name} {100 * int(c) / max(total, 1):.1f}%" for name, c in zip(hamlet.CTX_NAMES, ctx_steps)))
    lines.append("steps by screen: " + "  ".join(
        f"{name} {100 * int(c) / max(total, 1):.1f}%" for name, c in zip(hamlet.UI_NAMES, ui_steps) if c))
    lines.append("episodes reaching each map: " + "  ".join(
        f"{name} {100 * maps[:, m].float().mean():.1f}%" for m, name in enumerate(hamlet.MAP_NAMES)))
    lines.append("episodes setting each event: " + "  ".join(
        f"{name} {100 * ((events >> e) & 1).float().mean():.1f}%" for e, name in hamlet.EVENT_NAMES.items()))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
