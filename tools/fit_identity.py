"""Short `fit` runs whose results must not move: record them once, compare them after a refactor.

Each case is a shipped config, shortened (and, where a feature would not act within a few rollouts, tightened:
a swarm every 16 steps, a pool that fills), run with ``python -m gbx_lightning fit`` in a fresh run directory.
What is kept of a run, all of it compared for equality:

* every record of its ``train.jsonl`` but the meta lines, without the wall-clock keys (``WALL``);
* the final checkpoint's weights and optimizer state: a sha256 per tensor (dtype, shape and bytes);
* the final checkpoint's data-loader state (counters, RNG, the env state: every machine, stack, pool, reward item,
  milestone and heatmap tensor): a sha256 per tensor and every plain value, by its key path. Where the env state's
  layout changed on purpose (its ``version``), the paths cannot match and the env's tensors are compared as a
  multiset of (dtype, shape, sha256) instead (``--layout multiset``; a feature's state stored compactly, the pool's
  packed entries, is expanded first by that feature class's ``expand_state``).

    python tools/fit_identity.py record /tmp/envfeat/ref.json            # before the change
    python tools/fit_identity.py compare /tmp/envfeat/ref.json           # after: prints each case, exit 1 on a difference
    python tools/fit_identity.py compare REF --cases swarm,kitchen       # some of them
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

WALL = {"wall_time_s", "sps", "time_env_s", "time_act_s", "time_update_s", "time_other_s", "started_at", "eval_time_s",
        "time_s"}
COMMON = ["--progress_refresh", "0", "--image_every", "0", "--log_every", "1"]


def _env_task(cfg: dict) -> dict:
    return cfg["model"]["init_args"]["env"]["init_args"]


def _swarm(cfg: dict) -> None:
    task = _env_task(cfg)["task"]
    task["pool"]["max_mb"] = 2           # ~40 states: the pool fills within the run and entries get replaced
    task["pool"]["swarm"]["every"] = 16  # two swarms per 64 optimizer steps
    cfg["model"]["init_args"]["eval_episodes"] = 8
    cfg["trainer"]["val_check_interval"] = 4


def _kitchen(cfg: dict) -> None:
    """Every reward item, counter kind, milestone kind, a recording pool, structured obs and K=2 stacks at once."""
    init = _env_task(cfg)
    init.update(stack_k=2, max_steps=100, obs={"ram": ["player_y", "player_x", "score"],
                                               "visited": {"radius": 1, "stride": 8}})
    init["task"] = {
        "base": "orchard/level3",
        "reward": [{"name": "step_cost"}, {"name": "goal_distance"}, {"name": "success_bonus"},
                   {"name": "fail_penalty"}, {"name": "ram", "field": "seeds_eaten", "weight": 0.1},
                   {"name": "ram", "address": 0xC10B, "size": 2, "mode": "level", "weight": 0.00001},
                   {"name": "ram_bits", "field": "level", "weight": 0.5},
                   {"name": "ram_sum", "fields": ["hazard_x"], "count_field": "num_hazards", "mode": "increase",
                    "weight": 0.001},
                   {"name": "ram_max", "fields": ["hazard_y"], "weight": 0.001, "clip": [0, 0.1]},
                   {"name": "explore", "fields": ["player_y", "player_x"], "weight": 0.01, "novelty_weight": 0.02},
                   {"name": "scale", "factor": 2.0}, {"name": "clip"}, {"name": "return_norm"}],
        "counters": [{"name": "seeds_eaten", "address": 0xC10F}, {"name": "rng_moves", "field": "rng"}],
        "milestones": [{"name": "tiles", "kind": "distinct", "fields": ["player_y", "player_x"]},
                       {"name": "score_peak", "kind": "peak", "field": "score"},
                       {"name": "level_bits", "kind": "bits", "field": "level"},
                       {"name": "seeds", "kind": "increase", "field": "seeds_eaten", "at_least": 2}],
        "pool": {"score": {"seeds": 1.0, "tiles": 0.1}, "max_mb": 1, "per_step": 2, "when": "record",
                 "sample": 0.3, "priority": 0.5},
    }
    cfg["model"]["init_args"]["policy"] = {"class_path": "gbx_lightning.models.PixelVectorPolicy"}
    cfg["model"]["init_args"]["eval_episodes"] = 8
    cfg["trainer"]["val_check_interval"] = 3


def _validate_once(episodes: int, interval: int):
    def edit(cfg: dict) -> None:
        cfg["model"]["init_args"]["eval_episodes"] = episodes
        cfg["trainer"]["val_check_interval"] = interval
    return edit


# name: (config, optimizer steps, edit of the loaded config or None (no validation then))
CASES = {
    "ppo": ("configs/ppo.yaml", 32, _validate_once(16, 2)),
    "a2c": ("configs/a2c.yaml", 40, None),
    "swarm": ("configs/orchard_l3_swarm_ppo.yaml", 64, _swarm),
    "obs": ("configs/orchard_l3_obs_ppo.yaml", 32, None),
    "explore": ("configs/orchard_l3_explore_ppo.yaml", 32, None),
    "kitchen": ("configs/ppo.yaml", 48, _kitchen),
}


def _digest(t: torch.Tensor) -> str:
    t = t.detach().cpu().contiguous()
    h = hashlib.sha256(f"{t.dtype}{list(t.shape)}".encode())
    h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    return h.hexdigest()[:24]


def _flatten(value, path: str, out: dict) -> None:
    if isinstance(value, torch.Tensor):
        out[path] = "tensor:" + _digest(value)
    elif isinstance(value, dict):
        for k, v in value.items():
            _flatten(v, f"{path}/{k}", out)
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            _flatten(v, f"{path}[{i}]", out)
    elif isinstance(value, (int, float, str, bool)) or value is None:
        out[path] = value
    else:
        out[path] = f"<{type(value).__name__}>"


def run_case(name: str, work: Path) -> dict:
    config, steps, edit = CASES[name]
    cfg = yaml.safe_load((ROOT / config).read_text())
    extra = []
    if edit is not None:
        edit(cfg)
    else:
        extra = ["--trainer.limit_val_batches", "0"]
    cfg_path = work / f"{name}.yaml"
    cfg_path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    cmd = [sys.executable, "-m", "gbx_lightning", "fit", "--config", str(cfg_path), "--runs_dir", str(work / "runs"),
           "--run_name", name, "--trainer.max_steps", str(steps), "--checkpoint_every", str(steps), *COMMON, *extra]
    t0 = time.monotonic()
    done = subprocess.run(cmd, cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)), capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"case {name}: fit failed ({done.returncode}):\n{done.stderr[-4000:]}")
    run = work / "runs" / name / "version_0"
    records = []
    for line in (run / "train.jsonl").read_text().splitlines():
        r = json.loads(line)
        if "meta" in r:
            continue
        records.append(_strip(r))
    ckpt = torch.load(run / "checkpoints" / "last.ckpt", map_location="cpu", weights_only=False)
    weights = {k: _digest(v) for k, v in ckpt["state_dict"].items()}
    optim: dict = {}
    _flatten(ckpt["optimizer_states"], "optimizer", optim)
    stream = ckpt["loops"]["fit_loop"]["state_dict"]["combined_loader"][0]
    env = stream.get("env")
    loader: dict = {}
    _flatten({k: v for k, v in stream.items() if k not in ("env", "env_state")}, "stream", loader)
    env_flat: dict = {}
    if env is not None:
        _flatten(_expanded(env), "env", env_flat)
    return {"records": records, "weights": weights, "optimizer": optim, "stream": loader, "env": env_flat,
            "env_saved": env is not None, "seconds": round(time.monotonic() - t0, 1)}


def _expanded(env_state: dict) -> dict:
    """The env state with each feature's compactly stored state expanded (``expand_state`` of the feature classes
    of this tree, where they have one: the pool's packed entries as machine arrays and stacks), for the multiset."""
    try:
        from gbx_lightning.envs.features import FEATURES
    except ImportError:     # a tree from before the features
        return env_state
    features = dict(env_state.get("features") or {})
    for cls in FEATURES:
        expand = getattr(cls, "expand_state", None)
        if expand is not None and features.get(cls.name) is not None:
            features[cls.name] = expand(features[cls.name])
    return {**env_state, "features": features} if "features" in env_state else env_state


def _strip(value):
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k not in WALL}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def _multiset(flat: dict) -> list:
    return sorted(v for v in flat.values() if isinstance(v, str) and v.startswith("tensor:"))


def compare_case(name: str, ref: dict, now: dict, layout: str) -> list[str]:
    problems = []
    if ref["records"] != now["records"]:
        n = next((i for i, (a, b) in enumerate(zip(ref["records"], now["records"])) if a != b),
                 min(len(ref["records"]), len(now["records"])))
        a = ref["records"][n] if n < len(ref["records"]) else None
        b = now["records"][n] if n < len(now["records"]) else None
        keys = sorted(k for k in set(a or {}) | set(b or {}) if (a or {}).get(k) != (b or {}).get(k))
        problems.append(f"JSONL record {n} differs (of {len(ref['records'])} / {len(now['records'])}): keys {keys}")
    for part in ("weights", "optimizer", "stream"):
        if ref[part] != now[part]:
            diff = sorted(k for k in set(ref[part]) | set(now[part]) if ref[part].get(k) != now[part].get(k))
            problems.append(f"{part} differ at {diff[:6]}{' ...' if len(diff) > 6 else ''}")
    if ref["env_saved"] != now["env_saved"]:
        problems.append(f"env state saved: {ref['env_saved']} before, {now['env_saved']} now")
    elif layout == "paths" and ref["env"] != now["env"]:
        diff = sorted(k for k in set(ref["env"]) | set(now["env"]) if ref["env"].get(k) != now["env"].get(k))
        problems.append(f"env state differs at {diff[:6]}{' ...' if len(diff) > 6 else ''}")
    elif layout == "multiset" and _multiset(ref["env"]) != _multiset(now["env"]):
        a, b = _multiset(ref["env"]), _multiset(now["env"])
        problems.append(f"env state tensors differ as a multiset: {len(set(a) - set(b))} of {len(a)} before are "
                        f"missing now, {len(set(b) - set(a))} of {len(b)} are new")
    return problems


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mode", choices=("record", "compare"))
    ap.add_argument("ref", help="the JSON file of recorded cases")
    ap.add_argument("--cases", default=",".join(CASES), help=f"comma list of {list(CASES)}")
    ap.add_argument("--layout", choices=("paths", "multiset"), default="paths",
                    help="env state: equal key paths (the same layout), or equal tensors as a multiset (a new version)")
    ap.add_argument("--work", default=None, help="run directory (default: a temporary one)")
    args = ap.parse_args()
    names = [c for c in args.cases.split(",") if c]
    unknown = [c for c in names if c not in CASES]
    if unknown:
        ap.error(f"--cases: unknown {unknown}; cases: {list(CASES)}")
    work = Path(args.work or tempfile.mkdtemp(prefix="fit_identity_"))
    work.mkdir(parents=True, exist_ok=True)
    ref_path = Path(args.ref)
    ref = json.loads(ref_path.read_text()) if ref_path.exists() else {}
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()
    dirty = bool(subprocess.run(["git", "status", "--porcelain", "gbx_lightning"], cwd=ROOT, capture_output=True,
                                text=True).stdout.strip())
    failed = 0
    for name in names:
        now = run_case(name, work)
        env_tensors = len(_multiset(now["env"]))
        if args.mode == "record":
            ref[name] = {**now, "commit": commit + ("+dirty" if dirty else "")}
            print(f"{name}: recorded {len(now['records'])} records, {len(now['weights'])} weights, {env_tensors} env "
                  f"tensors ({now['seconds']} s)", flush=True)
            ref_path.parent.mkdir(parents=True, exist_ok=True)
            ref_path.write_text(json.dumps(ref))
            continue
        if name not in ref:
            print(f"{name}: not in {ref_path}", flush=True)
            failed += 1
            continue
        problems = compare_case(name, ref[name], now, args.layout)
        failed += bool(problems)
        verdict = "EQUAL" if not problems else "DIFFERENT: " + "; ".join(problems)
        print(f"{name}: {verdict} ({len(now['records'])} records, {len(now['weights'])} weights, "
              f"{len(now['optimizer'])} optimizer leaves, {env_tensors} env tensors by {args.layout}; reference from "
              f"{ref[name].get('commit')}, now {commit}{'+dirty' if dirty else ''}; {now['seconds']} s)", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
