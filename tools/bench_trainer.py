"""Where the time of `fit` goes: its env steps/s against a plain PyTorch loop doing the same work, and
against the env alone (random actions, no policy), on the Game Boy task or on ForagingEnv.

Both training paths use the same env, policy, loss (rl.a2c_td0 or rl.ppo_loss), batch and
update schedule (A2C: one update per `update_every` env steps of all N envs, computed on the whole
window at once, as A2CModule does; PPO: one rollout, then epochs x minibatches steps on it, as
PPOModule.training_step does) and the same bookkeeping (episode statistics and losses reduced on
device, one JSONL record + TensorBoard scalars every `--log_every` updates, under the names
callbacks.logger_metrics gives them, one SummaryWriter.add_scalar each, as TensorBoardLogger.log_metrics
writes them); they differ only in who runs the loop (see run_plain). `fit`
runs as the CLI runs it (A2CModule / PPOModule, RolloutStream, the JSONL + TensorBoard
TrainingLog), minus checkpoints, evaluation and the progress bar, which neither path does here.
The third path, `env`, steps the same env with uniformly random actions and nothing else: what
emulation alone costs, so fit/env shows the share of learning (policy forward, update) in a step.
Each repeat times the steady state: the first `--warmup` optimizer steps (env/kernel set-up, first
allocations) are excluded. Repeats are interleaved (plain, fit, env; then reversed, ...) because
this machine is noisy. Printed per repeat and as the median and range of the per-repeat ratios,
both for wall time and for this process's CPU time (all threads: the Game Boy env steps its CPU
shards from one thread per core).

Allocator (`--malloc`): by default glibc's, as a user runs. With its adaptive thresholds the
~1.5 MB batch tensors are often returned to the OS and page-faulted back in; how often depends on
the order of earlier allocations and frees (the same loop measured 30 to 215 thousand minor faults
per 400 A2C updates, up to ~8% of its CPU time), and `fit` tends to get more of them (in fresh
processes 107-186 thousand against 31-117 thousand for the plain loop; why was not pinned down).
`--malloc keep` tells glibc to keep freed heap memory (keep_freed_heap) for all loops, which
takes the page faults out of the comparison. The CLI does not change the allocator.

    python tools/bench_trainer.py                     # A2C on the Game Boy task, configs/a2c.yaml sizes
    python tools/bench_trainer.py --algo ppo          # PPO, configs/ppo.yaml sizes (32 envs, T=32, 4x4 steps)
    python tools/bench_trainer.py --env foraging      # ForagingEnv, configs/foraging_a2c.yaml sizes
    python tools/bench_trainer.py --malloc keep       # no heap trimming (page faults) in any loop

`--variants` times `fit` alone, a baseline against changed settings in the same run (interleaved, the
order rotating per repeat), and prints each variant's env steps/s over the baseline's of the same repeat,
with the share of fit's time in the update (training_step), acting and env.step. A variant is
comma-separated key=value pairs: a policy argument (`channels_last=true`, `hidden=128`), `policy=NAME`,
`threads=N` (torch intra-op threads), `stack_k=K`:

    python tools/bench_trainer.py --algo ppo --variants channels_last=true threads=2
    python tools/bench_trainer.py --algo ppo --stack_k 4 --policy nature_cnn --num_envs 64 --rollout_steps 128 \
        --variants channels_last=true policy=pixel_cnn policy=pixel_cnn,channels_last=true

`--sizes pokered_explore|your_game_ppo` sets everything to the sizes of configs/pokered_explore_ppo.yaml (64 envs x 128
steps, 2 epochs x 8 minibatches) or configs/your_game_ppo.yaml (4 x 4): PPO, PixelCNNPolicy with channels_last, 4-frame
stacks, the D-pad/A/B/Start/no-op codec and episodes of 2048 steps, on orchard level 1 (the Pokemon ROM is the user's;
the learner's work depends on the sizes, not the game). `--policy_args` gives the policy options of every path.

`--base REV` times `fit` before and after a change: the package as git revision REV has it (exported with
`git archive` to a temporary directory) against the working tree's, each run in a fresh process (the same script,
importing the one or the other package), alternating which goes first, and prints the after/before ratios per
repeat, their median and range, wall and CPU time, with each side's update/act/env shares and peak memory (RSS):

    python tools/bench_trainer.py --sizes pokered_explore --base 646375f --repeats 3
    python tools/bench_trainer.py --sizes your_game_ppo --base 646375f --repeats 3

`--config FILE` times `fit` of a training config as it stands (its module, env with every option, policy and the
learner's sizes; no evaluation or checkpoints), with `--variants` or `--base`: what a change costs or buys on the
run a user makes. A variant's list value is written in brackets (`channels=[8,16]`):

    python tools/bench_trainer.py --config configs/orchard_game_ppo.yaml --variants "channels=[8,16],hidden=128"
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

# the package this process imports: the working tree's, or (a --base child) the tree given by --package_root
_ROOT = Path(__file__).resolve().parents[1]
if "--package_root" in sys.argv:
    _ROOT = Path(sys.argv[sys.argv.index("--package_root") + 1]).resolve()
sys.path.insert(0, str(_ROOT))

import gbx_lightning  # noqa: E402,F401  (before torch: its OpenMP wait policy, as the CLI runs)
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from lightning.pytorch import Callback, Trainer  # noqa: E402
from lightning.pytorch.loggers import TensorBoardLogger  # noqa: E402
from torch.utils.tensorboard import SummaryWriter  # noqa: E402

from gbx_lightning.algos import A2CModule, PPOModule  # noqa: E402
from gbx_lightning.callbacks import TrainingLog, logger_metrics  # noqa: E402
from gbx_lightning.data import IntervalStats  # noqa: E402
from gbx_lightning.envs import ENV_REGISTRY, make_env  # noqa: E402
from gbx_lightning.metrics import LOSS_TERMS  # noqa: E402
from gbx_lightning.models import POLICY_REGISTRY, logprob_entropy, make_policy, sample_actions  # noqa: E402
from gbx_lightning.rl import a2c_td0, explained_variance, gae, ppo_loss  # noqa: E402

# env -> (env kwargs, policy, policy kwargs, num_envs a2c/ppo, update_every, rollout_steps), as in configs/
SETUPS = {
    "gameboy": ({"task": "orchard/level1", "stack_k": 1, "action_codec": "dpad_noop", "max_steps": 50},
                "pixel_cnn", {}, (32, 32), 5, 32),
    "foraging": ({"obs_mode": "ground_truth", "max_steps": 200, "shaping_scale": 0.5, "shaping_gamma": 0.99},
                 "mlp", {"hidden": [64, 64]}, (256, 32), 2, 64),
}


# --sizes: the Pokemon configs' learner sizes, on orchard (configs/pokered_explore_ppo.yaml, configs/your_game_ppo.yaml)
SIZES = {
    "pokered_explore": dict(epochs=2, minibatches=8),
    "your_game_ppo": dict(epochs=4, minibatches=4),
}
_POKERED_COMMON = dict(algo="ppo", env="gameboy", num_envs=64, rollout_steps=128, stack_k=4, policy="pixel_cnn",
                       policy_args={"channels_last": True},
                       env_args={"action_codec": "dpad_ab_start_noop", "max_steps": 2048})


def keep_freed_heap() -> bool:
    """Ask glibc to keep freed heap memory (fixed mmap threshold 32 MiB, trim threshold 1 GiB). True if applied.

    By default glibc returns the free top of its heap to the OS once it exceeds twice a threshold that
    adapts to the sizes freed so far, and the next batch page-faults it back in. How often that happens
    depends on the order in which the process allocated and freed everything before (measured here: 30
    to 215 thousand minor faults per 400-update A2C run, up to ~8% of the CPU time, differing between
    runs of the same loop); fixing both thresholds makes it not happen, for both loops alike.
    """
    import ctypes
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc malloc.h
    return bool(mallopt(M_MMAP_THRESHOLD, 32 << 20)) and bool(mallopt(M_TRIM_THRESHOLD, 1 << 30))


def _policy_kwargs(args) -> dict:
    if getattr(args, "config", None):
        base = _config_parts(args.config)["policy"][1]
    else:
        base = SETUPS[args.env][2] if args.policy == SETUPS[args.env][1] else {}
    return {**base, **(args.policy_args or {}), **getattr(args, "policy_kwargs", {})}


# a config's module options that bench_trainer sets itself or that only matter to what it does not run
_CONFIG_OWN = ("env", "policy", "num_envs", "seed", "eval_episodes", "eval_seed", "eval_max_steps")


@functools.lru_cache(maxsize=None)
def _config_parts(path: str) -> dict:
    """A training config's parts for run_fit: the module class, its options (minus ``_CONFIG_OWN``), the env's and
    the policy's (class, options), and its learner sizes (algo, num_envs, rollout_steps, epochs, minibatches).
    Read once per path (every repeat builds from it; callers copy what they change)."""
    import yaml

    from gbx_lightning.algos.build import factory_parts

    try:
        model = yaml.safe_load(Path(path).read_text())["model"]
        module_cls, init = factory_parts(model)
        env = factory_parts(init["env"])
        policy = factory_parts(init["policy"])
    except (OSError, yaml.YAMLError, KeyError, TypeError) as err:
        raise SystemExit(f"--config {path}: not a training config with model.init_args.env and .policy ({err})")
    if module_cls not in (A2CModule, PPOModule) or env[0] is None or policy[0] is None:
        raise SystemExit(f"--config {path}: model, env and policy must name classes of this package "
                         f"(A2CModule or PPOModule), got {model.get('class_path')!r}")
    return {"module": module_cls, "options": {k: v for k, v in init.items() if k not in _CONFIG_OWN},
            "env": env, "policy": policy, "algo": "ppo" if module_cls is PPOModule else "a2c",
            "num_envs": init.get("num_envs"), "rollout_steps": init.get("rollout_steps"),
            "update_every": init.get("update_every"), "epochs": init.get("epochs"),
            "minibatches": init.get("minibatches")}


def _env_kwargs(args) -> dict:
    out = {**SETUPS[args.env][0], **(args.env_args or {})}
    if getattr(args, "stack_k", None):
        out["stack_k"] = args.stack_k
    return out


def _now() -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process). CPU time barely moves when other processes compete for
    the cores, so its ratio isolates the extra work one path does; wall time is what a user sees."""
    return time.perf_counter(), time.process_time()


class _Clock(Callback):
    """Time from the end of optimizer step `warmup` to the end of training, and the env steps in between; and the CPU
    time of the main thread from each batch's start to its end after that (``update_cpu``: training_step, the update
    path, and the callbacks' batch hooks; the rollout is collected before the batch starts)."""

    def __init__(self, warmup: int):
        self.warmup, self.t0, self.env0, self.t1, self.env1 = warmup, None, None, None, None
        self.update_cpu, self._batch_cpu0 = 0.0, None

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
        self._batch_cpu0 = time.thread_time() if self.t0 is not None else None

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        if self._batch_cpu0 is not None:
            self.update_cpu += time.thread_time() - self._batch_cpu0
        if self.t0 is None and pl_module.opt_steps == self.warmup:
            self.t0, self.env0 = _now(), pl_module.env_steps

    def on_train_end(self, trainer, pl_module):
        self.t1, self.env1 = _now(), pl_module.env_steps


def build_module(args, seed: int):
    """The module fit trains: ``--config``'s own (its module, env and policy; a variant changes the policy's
    options), else the built-in setup's A2CModule or PPOModule at ``args``' sizes."""
    if getattr(args, "config", None):   # the config's own module, env and policy (variants on the policy)
        parts = _config_parts(args.config)
        env_cls, env_options = parts["env"]
        if getattr(args, "stack_k", None):
            env_options = {**env_options, "stack_k": args.stack_k}
        options = {**parts["options"], "num_envs": args.num_envs, "seed": seed}
        return parts["module"](env=partial(env_cls, **env_options),
                               policy=partial(parts["policy"][0], **_policy_kwargs(args)), **options)
    common = dict(env=partial(ENV_REGISTRY[args.env], **_env_kwargs(args)), num_envs=args.num_envs,
                  policy=partial(POLICY_REGISTRY[args.policy], **_policy_kwargs(args)), seed=seed)
    if args.algo == "a2c":
        return A2CModule(update_every=args.update_every, **common)
    return PPOModule(rollout_steps=args.rollout_steps, epochs=args.epochs, minibatches=args.minibatches, **common)


def apply_config(args) -> None:
    """``args`` at ``--config``'s sizes (algo, num_envs unless given, rollout_steps or update_every, epochs,
    minibatches) and policy name; refused (one line) where it cannot apply."""
    if args.sizes:
        raise SystemExit("--config and --sizes: give one (the config sets the sizes)")
    if not (args.variants or args.base):
        raise SystemExit("--config: use it with --variants or --base (the plain loop runs the built-in setups)")
    parts = _config_parts(args.config)
    args.algo = parts["algo"]
    for key in ("num_envs", "rollout_steps", "update_every", "epochs", "minibatches"):
        if parts[key] is not None and (key != "num_envs" or args.num_envs is None):
            setattr(args, key, parts[key])
    args.policy = parts["policy"][0].__name__


def run_fit(args, seed: int, phases: dict | None = None, update_cpu: list | None = None) -> tuple[float, float]:
    """fit's steady-state env steps/s (wall, CPU); ``phases`` (a dict) gets the seconds of the whole run spent in
    the update, acting and env.step; ``update_cpu`` (a list) the env steps per CPU second of the update path."""
    torch.manual_seed(seed)
    module = build_module(args, seed)
    clock = _Clock(args.warmup)
    cycle = args.epochs * args.minibatches if args.algo == "ppo" else 1  # optimizer steps per update (batch)
    with tempfile.TemporaryDirectory() as tmp:
        trainer = Trainer(max_steps=args.warmup + args.steps, accelerator="cpu", devices=1,
                          logger=TensorBoardLogger(tmp, name="bench", version=""),
                          callbacks=[TrainingLog(Path(tmp) / "train.jsonl", config={}, log_every=args.log_every * cycle),
                                     clock],
                          enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
                          num_sanity_val_steps=0, limit_val_batches=0)
        trainer.fit(module)
    if phases is not None:
        phases.update(update=module.time_update_s, act=module.stream.time_act_s, env=module.stream.time_env_s)
    if update_cpu is not None:   # env steps per CPU second of the update path (timed batches)
        update_cpu.append((clock.env1 - clock.env0) / max(clock.update_cpu, 1e-9))
    steps = clock.env1 - clock.env0
    return steps / (clock.t1[0] - clock.t0[0]), steps / (clock.t1[1] - clock.t0[1])


def run_plain(args, seed: int) -> tuple[float, float]:
    """The same algorithm and bookkeeping as a hand-written loop: no Lightning.

    Per batch it does what fit does: act a [T, N] rollout with the current weights (Gumbel-max sampling,
    log-probs and values kept), then A2C (T = update_every): one V(s') forward under no_grad, one
    policy.evaluate + rl.a2c_td0 over all T*N rows, backward, clip_grad_norm_, Adam step; PPO (T =
    rollout_steps): V(final_obs) in one forward, rl.gae, then `epochs` x `minibatches` shuffled minibatch
    steps (policy.evaluate, rl.ppo_loss, backward, clip, Adam). Bookkeeping a plain-PyTorch user of our
    env also does, as fit does it: episode statistics summed on device (data.IntervalStats, the stream's
    helper), loss terms and grad norms summed on device, and every `log_every` batches one host read of
    both, one JSONL line and TensorBoard scalars (add_scalar per key, what TensorBoardLogger.log_metrics
    does). fit's records carry a few keys more (wall_time_s, sps, lr, the phase times). Not included
    (only fit does them): Lightning's loop and hooks (manual_backward, LightningOptimizer.step and the
    callbacks' hooks around them), and the per-phase timers of the stream and module (a few
    perf_counter calls per env step).
    """
    torch.manual_seed(seed)
    env = make_env(args.env, num_envs=args.num_envs, **_env_kwargs(args))
    policy = make_policy(args.policy, env.obs_shape, env.num_actions, **_policy_kwargs(args))
    opt = torch.optim.Adam(policy.parameters(), lr=7e-4, eps=1e-5)
    gen = torch.Generator().manual_seed(seed)
    obs = env.reset(seed=seed)
    stats = IntervalStats()
    names: list[str] = []  # the loss terms fit logs (metrics.LOSS_TERMS), as the loss function returns them
    metric_rows: list[torch.Tensor] = []
    env_steps, opt_steps, t0, env0 = 0, 0, None, 0
    cycle = args.epochs * args.minibatches if args.algo == "ppo" else 1
    T = args.update_every if args.algo == "a2c" else args.rollout_steps
    tmp = tempfile.TemporaryDirectory()
    log = open(Path(tmp.name) / "train.jsonl", "a", encoding="utf-8")
    writer = SummaryWriter(tmp.name)

    def update(out):
        nonlocal opt_steps
        out["loss"].backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(policy.parameters(), 0.5)
        opt.step()
        opt.zero_grad(set_to_none=True)
        opt_steps += 1
        if not names:
            names.extend(k for k in LOSS_TERMS if k in out)
        metric_rows.append(torch.stack([out[k].detach().float() for k in names] + [grad_norm]))

    for update_idx in range(-(-(args.warmup + args.steps) // cycle)):
        if update_idx * cycle == args.warmup:
            t0, env0 = _now(), env_steps
        # one [T, N] rollout with the current weights
        cols = {k: [] for k in ("obs", "act", "logp", "val", "rew", "term", "trunc", "final")}
        with torch.no_grad():
            for _ in range(T):
                logits, values = policy(obs)
                actions = sample_actions(logits, gen)
                logp, _ = logprob_entropy(logits, actions)
                cols["obs"].append(obs)
                obs, rewards, terminated, truncated, info = env.step(actions.to(torch.int32))
                stats.add(rewards, terminated, truncated, info)
                env_steps += args.num_envs
                for k, v in (("act", actions), ("logp", logp), ("val", values), ("rew", rewards),
                             ("term", terminated), ("trunc", truncated), ("final", info["final_obs"])):
                    cols[k].append(v)
        b = {k: torch.stack(v) for k, v in cols.items()}
        n = args.num_envs
        with torch.no_grad():
            _, next_values = policy(b["final"].flatten(0, 1))
        if args.algo == "a2c":
            logp, ent, values = policy.evaluate(b["obs"].flatten(0, 1), b["act"].flatten())
            update(a2c_td0(logp, ent, values, b["rew"].flatten(), next_values, b["term"].flatten(), gamma=0.99))
        else:
            with torch.no_grad():
                adv, ret = gae(b["rew"], b["val"], next_values.view(T, n), b["term"], b["trunc"], 0.99, 0.95)
            flat = {"obs": b["obs"].flatten(0, 1), "act": b["act"].flatten(), "logp": b["logp"].flatten(),
                    "val": b["val"].flatten(), "adv": adv.flatten(), "ret": ret.flatten()}
            ev = explained_variance(flat["val"], flat["ret"])
            for _ in range(args.epochs):
                for idx in torch.randperm(T * n, generator=gen).chunk(args.minibatches):
                    new_lp, ent, values = policy.evaluate(flat["obs"][idx], flat["act"][idx])
                    out = ppo_loss(new_lp, flat["logp"][idx], flat["adv"][idx], values, flat["val"][idx],
                                   flat["ret"][idx], ent)
                    out["value_mean"] = values.detach().mean()
                    out["explained_variance"] = ev
                    update(out)
        if (update_idx + 1) % args.log_every == 0:
            record = {"env_steps": env_steps, "opt_steps": opt_steps, **stats.pop()}
            rows = torch.stack(metric_rows)  # one host read of the losses and grad norm
            finite = rows.isfinite()
            means = (torch.where(finite, rows, 0.0).sum(0) / finite.sum(0)).tolist()
            metric_rows.clear()
            record.update(zip(names + ["grad_norm"], means))
            log.write(json.dumps(record) + "\n")
            log.flush()
            for tag, value in logger_metrics(record).items():
                writer.add_scalar(tag, value, env_steps)
    t1 = _now()
    log.close()
    writer.close()
    tmp.cleanup()
    return (env_steps - env0) / (t1[0] - t0[0]), (env_steps - env0) / (t1[1] - t0[1])


def run_env_only(args, seed: int) -> tuple[float, float]:
    """The env alone: as many env steps as the training paths time, uniformly random actions drawn on the
    device with one generator (no policy, no storage of transitions)."""
    env = make_env(args.env, num_envs=args.num_envs, **_env_kwargs(args))
    gen = torch.Generator().manual_seed(seed)
    env.reset(seed=seed)
    cycle = args.epochs * args.minibatches if args.algo == "ppo" else 1
    per_update = args.update_every if args.algo == "a2c" else args.rollout_steps
    steps = lambda updates: -(-updates // cycle) * per_update  # noqa: E731 - env steps of all N envs
    for _ in range(steps(args.warmup)):
        env.step(torch.randint(0, env.num_actions, (args.num_envs,), generator=gen, dtype=torch.int32))
    t0 = _now()
    timed = steps(args.steps)
    for _ in range(timed):
        env.step(torch.randint(0, env.num_actions, (args.num_envs,), generator=gen, dtype=torch.int32))
    t1 = _now()
    return timed * args.num_envs / (t1[0] - t0[0]), timed * args.num_envs / (t1[1] - t0[1])


def _split_items(spec: str) -> list[str]:
    """``spec`` split at the commas outside brackets: ``a=[8,16],b=1`` -> ``["a=[8,16]", "b=1"]``."""
    items, depth, start = [], 0, 0
    for i, ch in enumerate(spec):
        depth += (ch in "[{") - (ch in "]}")
        if ch == "," and depth == 0:
            items.append(spec[start:i])
            start = i + 1
    items.append(spec[start:])
    return [item for item in items if item]


def _key_values(spec: str, flag: str) -> dict:
    """``key=value,...`` as a dict, values parsed as JSON where they parse (``true``, ``128``, ``[8,16]``), else
    strings."""
    out = {}
    for item in _split_items(spec):
        key, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"{flag}: {item!r} is not key=value")
        try:
            out[key] = json.loads(value)
        except json.JSONDecodeError:
            out[key] = value
    return out


def _variant_args(args, spec: str):
    """``args`` with one variant's changes (``key=value,...``; values parsed as JSON where they parse)."""
    out = argparse.Namespace(**vars(args))
    out.policy_kwargs, out.threads = {}, args.torch_threads
    for key, value in _key_values(spec, "--variants").items():
        if key == "threads":
            out.threads = int(value)
        elif key == "policy":
            if getattr(args, "config", None):
                raise SystemExit(f"--variants {spec}: policy=NAME does not combine with --config (the config names "
                                 f"its policy); vary the policy's options")
            out.policy = value
        elif key == "stack_k":
            out.stack_k = int(value)
        else:
            out.policy_kwargs[key] = value
    return out


def _export_revision(rev: str, into: Path) -> Path:
    """The package as git revision ``rev`` has it, extracted under ``into`` (``git archive``); the tree's root."""
    import io
    import tarfile

    out = subprocess.run(["git", "-C", str(Path(__file__).resolve().parents[1]), "archive", "--format=tar", rev,
                          "gbx_lightning"], capture_output=True)
    if out.returncode != 0:
        raise SystemExit(f"--base: git archive {rev} failed: {out.stderr.decode().strip()}")
    with tarfile.open(fileobj=io.BytesIO(out.stdout)) as tar:
        tar.extractall(into, filter="data")
    return into


def _fit_child(args) -> None:
    """One --base run in this fresh process (importing --package_root's package): fit's steady-state env steps/s,
    the phase times and the peak RSS, as one JSON line."""
    run = argparse.Namespace(**json.loads(args.fit_child))
    torch.set_num_threads(run.torch_threads)
    import warp as wp

    wp.config.log_level = wp.LOG_WARNING
    phases: dict = {}
    update_cpu: list = []
    wall, cpu = run_fit(run, seed=run.seed, phases=phases, update_cpu=update_cpu)
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024   # Linux: KiB
    print("RESULT " + json.dumps({"wall": wall, "cpu": cpu, "update_cpu": update_cpu[0], "phases": phases,
                                  "rss_mb": rss_mb}), flush=True)


def _run_child(args, root: Path, seed: int) -> dict:
    spec = {k: v for k, v in vars(args).items() if k not in ("fit_child", "package_root", "base", "variants")}
    cmd = [sys.executable, str(Path(__file__).resolve()), "--package_root", str(root),
           "--fit_child", json.dumps({**spec, "seed": seed})]
    out = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    lines = [line for line in out.stdout.splitlines() if line.startswith("RESULT ")]
    if out.returncode != 0 or not lines:
        sys.stderr.write(out.stdout[-4000:] + out.stderr[-4000:])
        raise SystemExit(f"--base: the run in {root} failed (exit {out.returncode})")
    return json.loads(lines[-1][len("RESULT "):])


def run_base(args) -> None:
    """fit of git revision ``args.base`` ("before") against the working tree's ("after"), each run in a fresh
    process, the order alternating per repeat; ratios after/before of the same repeat."""
    print(f"fit before ({args.base}) and after (working tree), {args.algo} on {args.env}: {args.num_envs} envs x "
          f"{args.rollout_steps} steps, {args.epochs} epochs x {args.minibatches} minibatches, policy {args.policy} "
          f"{_policy_kwargs(args)}, stack_k {args.stack_k or 'config'}, {args.steps} timed + {args.warmup} warm-up "
          f"optimizer steps per run", flush=True)
    results: dict[str, list[dict]] = {"before": [], "after": []}
    with tempfile.TemporaryDirectory(prefix="bench_trainer_base_") as tmp:
        roots = {"before": _export_revision(args.base, Path(tmp)), "after": Path(__file__).resolve().parents[1]}
        for r in range(args.repeats):
            for name in (("before", "after") if r % 2 == 0 else ("after", "before")):
                res = _run_child(args, roots[name], seed=r)
                results[name].append(res)
                total = sum(res["phases"].values()) or 1.0
                print(f"repeat {r} {name:6s} {res['wall']:7.0f} env steps/s wall, {res['cpu']:7.0f} per CPU second, "
                      f"{res['update_cpu']:7.0f} per CPU second of the update; "
                      + ", ".join(f"{k} {100 * v / total:.0f}%" for k, v in res["phases"].items())
                      + f"; peak RSS {res['rss_mb']:.0f} MB", flush=True)
    for key, what in (("wall", "wall"), ("cpu", "CPU time"), ("update_cpu", "the update path's CPU time")):
        before = [x[key] for x in results["before"]]
        after = [x[key] for x in results["after"]]
        ratios = [a / b for a, b in zip(after, before)]
        print(f"after / before ({what}): per repeat {', '.join(f'{x:.3f}' for x in ratios)}; median "
              f"{statistics.median(ratios):.3f}, range {min(ratios):.3f}-{max(ratios):.3f}; before median "
              f"{statistics.median(before):.0f} (range {min(before):.0f}-{max(before):.0f}), after median "
              f"{statistics.median(after):.0f} (range {min(after):.0f}-{max(after):.0f}) env steps/s")
    for name in ("before", "after"):
        shares = {k: statistics.median(x["phases"][k] / (sum(x["phases"].values()) or 1.0) for x in results[name])
                  for k in results[name][0]["phases"]}
        print(f"{name}: median shares of fit's time " + ", ".join(f"{k} {100 * v:.0f}%" for k, v in shares.items())
              + f"; peak RSS median {statistics.median(x['rss_mb'] for x in results[name]):.0f} MB")


def run_variants(args) -> None:
    """fit with the baseline settings and with each variant, interleaved; ratios against the same repeat's
    baseline."""
    names = ["baseline", *args.variants]
    runs = {name: _variant_args(args, "" if name == "baseline" else name) for name in names}
    results: dict[str, list[tuple[float, float, dict]]] = {name: [] for name in names}
    print(f"fit variants, {args.algo} on {args.env}: {args.num_envs} envs, policy {args.policy}, stack_k "
          f"{args.stack_k or 'config'}, {args.steps} timed + {args.warmup} warm-up optimizer steps per run", flush=True)
    for r in range(args.repeats):
        order = names[r % len(names):] + names[:r % len(names)]   # each variant goes first in turn
        for name in order:
            v = runs[name]
            torch.set_num_threads(v.threads)
            phases: dict = {}
            wall, cpu = run_fit(v, seed=r, phases=phases)
            results[name].append((wall, cpu, phases))
            total = sum(phases.values()) or 1.0
            print(f"repeat {r} {name:40s} {wall:7.0f} env steps/s wall, {cpu:7.0f} per CPU second; update "
                  f"{100 * phases['update'] / total:.0f}%, act {100 * phases['act'] / total:.0f}%, env "
                  f"{100 * phases['env'] / total:.0f}%", flush=True)
    torch.set_num_threads(args.torch_threads)
    base = results["baseline"]
    print(f"baseline fit: median {statistics.median(b[0] for b in base):.0f} env steps/s wall (range "
          f"{min(b[0] for b in base):.0f}-{max(b[0] for b in base):.0f}), {statistics.median(b[1] for b in base):.0f} "
          f"per CPU second")
    for name in args.variants:
        for i, what in ((0, "wall"), (1, "CPU time")):
            ratios = [v[i] / b[i] for v, b in zip(results[name], base)]
            print(f"{name} / baseline ({what}): per repeat {', '.join(f'{x:.3f}' for x in ratios)}; median "
                  f"{statistics.median(ratios):.3f}, range {min(ratios):.3f}-{max(ratios):.3f}; variant median "
                  f"{statistics.median(v[i] for v in results[name]):.0f} env steps/s")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--algo", choices=("a2c", "ppo"), default="a2c")
    p.add_argument("--env", choices=sorted(SETUPS), default="gameboy")
    p.add_argument("--num_envs", type=int, default=None, help="default: as in the env's configs")
    p.add_argument("--policy", default=None, help="default: pixel_cnn (gameboy), mlp 64x64 (foraging)")
    p.add_argument("--update_every", type=int, default=None, help="default: 5 (gameboy), 2 (foraging)")
    p.add_argument("--rollout_steps", type=int, default=None, help="default: 32 (gameboy), 64 (foraging)")
    p.add_argument("--torch_threads", type=int, default=1, help="torch intra-op threads (the configs use 1)")
    p.add_argument("--epochs", type=int, default=4)
    p.add_argument("--minibatches", type=int, default=4)
    p.add_argument("--steps", type=int, default=None, help="timed optimizer steps per repeat")
    p.add_argument("--warmup", type=int, default=None, help="untimed optimizer steps per repeat")
    p.add_argument("--log_every", type=int, default=None,
                   help="updates (A2C updates, PPO rollouts) per JSONL/TensorBoard record, both paths; "
                        "default 10 (A2C) and 1 (PPO: 1 rollout = 16 opt steps)")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--stack_k", type=int, default=None, help="Game Boy frame stack (default: the config's 1)")
    p.add_argument("--variants", nargs="+", default=None, metavar="KEY=VALUE[,KEY=VALUE]",
                   help="time fit alone: the baseline against each variant, interleaved (see above)")
    p.add_argument("--malloc", choices=("default", "keep"), default="default",
                   help="default: glibc's adaptive heap trimming, as a user runs (its page faults vary with "
                        "allocation history); keep: glibc keeps freed heap memory for both loops (keep_freed_heap)")
    p.add_argument("--sizes", choices=sorted(SIZES), default=None,
                   help="the Pokemon configs' sizes (see above); sets algo, envs, steps, policy, stack, epochs")
    p.add_argument("--policy_args", default=None, metavar="KEY=VALUE[,KEY=VALUE]",
                   help="policy options of every path (JSON values), e.g. channels_last=true")
    p.add_argument("--config", default=None, metavar="FILE",
                   help="time fit of this training config (with --variants or --base; see above)")
    p.add_argument("--base", default=None, metavar="REV",
                   help="time fit at git revision REV against the working tree, fresh processes (see above)")
    p.add_argument("--package_root", default=None, help=argparse.SUPPRESS)   # read before the imports
    p.add_argument("--fit_child", default=None, help=argparse.SUPPRESS)      # one --base run: its args as JSON
    args = p.parse_args()
    if args.fit_child is not None:
        _fit_child(args)
        return
    if args.malloc == "keep" and not keep_freed_heap():
        print("note: mallopt not available (not glibc?); allocator left at its defaults", flush=True)
    args.policy_args = _key_values(args.policy_args or "", "--policy_args")
    args.env_args = {}
    if args.sizes:
        for key, value in {**_POKERED_COMMON, **SIZES[args.sizes]}.items():
            if key == "policy_args":
                args.policy_args = {**value, **args.policy_args}
            elif key in ("algo", "env", "env_args", "policy", "epochs", "minibatches") or getattr(args, key) is None:
                setattr(args, key, value)
    if args.config:
        apply_config(args)
    setup = SETUPS[args.env]
    args.num_envs = args.num_envs or setup[3][args.algo == "ppo"]
    args.policy = args.policy or setup[1]
    args.update_every = args.update_every or setup[4]
    args.rollout_steps = args.rollout_steps or setup[5]
    cycle = args.epochs * args.minibatches if args.algo == "ppo" else 1
    # PPO: 20 rollouts; at the Pokemon sizes (--sizes, 8,192 env steps each) 2
    default_steps = {"a2c": 400 if args.env == "foraging" else 200, "ppo": (2 if args.sizes else 20) * cycle}
    args.steps = args.steps or default_steps[args.algo]
    args.log_every = args.log_every or (10 if args.algo == "a2c" else 1)
    args.warmup = args.warmup if args.warmup is not None else (10 if args.algo == "a2c" else cycle)
    torch.set_num_threads(args.torch_threads)  # all paths alike
    import warp as wp

    wp.config.log_level = wp.LOG_WARNING
    if args.base:
        run_base(args)
        return
    if args.variants:
        run_variants(args)
        return
    plain, fit, env = [], [], []
    print(f"{args.algo} on {args.env}: {args.num_envs} envs, policy {args.policy}, "
          f"{'update_every ' + str(args.update_every) if args.algo == 'a2c' else 'rollout ' + str(args.rollout_steps)}"
          f", torch threads {args.torch_threads}", flush=True)
    for r in range(args.repeats):
        order = (("plain", run_plain, plain), ("fit", run_fit, fit), ("env", run_env_only, env))
        for name, fn, out in (order if r % 2 == 0 else order[::-1]):
            out.append(fn(args, seed=r))
            print(f"repeat {r} {name:5s}: {out[-1][0]:8.0f} env steps/s wall, {out[-1][1]:8.0f} per CPU second",
                  flush=True)
    for i, what in ((0, "wall"), (1, "CPU time")):
        mp, mf, me = (statistics.median(x[i] for x in xs) for xs in (plain, fit, env))
        # each repeat's runs are adjacent in time, so their ratios are the least affected by load drift
        ratios = [f[i] / p[i] for f, p in zip(fit, plain)]
        ratio = statistics.median(ratios)
        env_ratios = [f[i] / e[i] for f, e in zip(fit, env)]
        print(f"{args.algo} ({what}): plain PyTorch loop {mp:.0f} env steps/s, Lightning fit {mf:.0f}, env alone "
              f"{me:.0f} (medians of {args.repeats}); fit/plain per repeat {', '.join(f'{x:.3f}' for x in ratios)}; "
              f"median ratio {ratio:.3f} (overhead {100 * (1 - ratio):.1f}%), range {min(ratios):.3f}-"
              f"{max(ratios):.3f}; fit/env median {statistics.median(env_ratios):.3f} (range "
              f"{min(env_ratios):.3f}-{max(env_ratios):.3f}: learning's share of fit's time "
              f"{100 * (1 - statistics.median(env_ratios)):.0f}%); malloc {args.malloc}")


if __name__ == "__main__":
    main()
