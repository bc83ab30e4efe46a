"""Nothing lost (gbx_lightning.safety): SIGTERM / Ctrl-C stop between whole updates, save, and resume exactly; a
second signal quits without touching last.ckpt; kill -9 at any moment leaves last.ckpt loadable and the JSONL
readable; non-finite numbers stop the run and never reach a checkpoint; env state over the size cap is left out.

Signals sent from inside the process (at a known optimizer step or env step) make the stop points known
answers; the runs that must die (os._exit, SIGKILL) run in subprocesses.
"""

import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import torch

from gbx_lightning.callbacks import AtomicCheckpointIO, drop_torn_line, read_training_log
from gbx_lightning.cli import main
from gbx_lightning.algos import RLModule
from gbx_lightning.safety import RunStopped, StopOnSignal, resume_command

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::DeprecationWarning")

ROOT = Path(__file__).resolve().parents[1]
WALL = {"wall_time_s", "sps", "time_env_s", "time_act_s", "time_update_s", "time_other_s"}

FORAGING = ('{obs_mode: ground_truth, max_steps: 12, grid_size: 8, view_size: 5, food_range: [2, 3], '
            'poison_range: [1, 2], start_energy: 3.0, step_cost: 0.5}')
TINY_A2C = f"""
seed_everything: 3
trainer: {{max_steps: 8, accelerator: cpu, devices: 1, val_check_interval: 4, check_val_every_n_epoch: null}}
model:
  class_path: gbx_lightning.algos.A2CModule
  init_args: {{env: {{class_path: gbx_lightning.envs.ForagingEnv, init_args: {FORAGING}}}, num_envs: 4,
              policy: {{class_path: gbx_lightning.models.MLPPolicy, init_args: {{hidden: [16]}}}},
              update_every: 3, lr: 0.01, eval_episodes: 3}}
checkpoint_every: 2
log_every: 1
progress_refresh: 0
"""
# PPO on the Game Boy: 4 optimizer steps per rollout (2 epochs x 2 minibatches), 3 rollouts
TINY_GB_PPO = """
seed_everything: 5
trainer: {max_steps: 12, accelerator: cpu, devices: 1, val_check_interval: 2, check_val_every_n_epoch: null}
model:
  class_path: gbx_lightning.algos.PPOModule
  init_args:
    env:
      class_path: gbx_lightning.envs.GameBoyEnv
      init_args: {task: {base: orchard/level1, start: {variants: 2}}, stack_k: 2, action_codec: dpad_noop,
                 max_steps: 6, cpu_threads: 2}
    num_envs: 3
    policy:
      class_path: gbx_lightning.models.PixelCNNPolicy
      init_args: {channels: [4, 8], hidden: 16}
    rollout_steps: 2
    epochs: 2
    minibatches: 2
    lr: 0.001
    eval_episodes: 2
checkpoint_every: 100
log_every: 1
progress_refresh: 0
"""


def _config(tmp_path, text, name="tiny"):
    path = tmp_path / f"{name}.yaml"
    # no random-policy baseline: these tests count the env steps of training (a patched ForagingEnv.step)
    path.write_text(text + "\nrandom_baseline: false\n")
    return path


def _fit(cfg, runs, *extra):
    return main(["fit", "--config", str(cfg), "--runs_dir", str(runs), *extra])


def _split(path):
    recs = read_training_log(path)
    return ([r["meta"] for r in recs if "meta" in r], [r for r in recs if "env_steps" in r and "meta" not in r],
            [r for r in recs if not ({"meta", "env_steps"} & r.keys())])


def _ckpt(path):
    return torch.load(path, map_location="cpu", weights_only=False)


def _without_wall(records):
    return [{k: v for k, v in r.items() if k not in WALL} for r in records]


def _assert_same_run(run_dir, straight_dir):
    """The interrupted-and-resumed run equals the uninterrupted one: bitwise weights, equal step records
    (the records the resumed segment superseded left out, wall-clock fields aside)."""
    a, b = _ckpt(run_dir / "checkpoints" / "last.ckpt"), _ckpt(straight_dir / "checkpoints" / "last.ckpt")
    assert a["global_step"] == b["global_step"]
    for k, v in b["state_dict"].items():
        assert torch.equal(a["state_dict"][k], v), k
    _, steps, _ = _split(run_dir / "train.jsonl")
    latest = {r["opt_steps"]: r for r in steps}   # a record written again after a resume supersedes the old one
    _, straight, _ = _split(straight_dir / "train.jsonl")
    assert _without_wall([latest[k] for k in sorted(latest)]) == _without_wall(straight)


@pytest.fixture
def stray_signals():
    """A signal that reached no GracefulStop handler is recorded here (and fails the test) instead of killing pytest."""
    stray = []
    old = {s: signal.signal(s, lambda signum, frame: stray.append(signum)) for s in (signal.SIGTERM, signal.SIGINT)}
    yield stray
    for s, handler in old.items():
        signal.signal(s, handler)
    assert not stray, f"signals nobody handled: {stray}"


def _signal_at_opt_step(monkeypatch, step: int, sig=signal.SIGTERM):
    """Send `sig` to this process right after optimizer step `step` (inside training_step: mid-update for PPO)."""
    original = RLModule.step_optimizer

    def step_and_signal(self, out):
        original(self, out)
        if self.opt_steps == step:
            os.kill(os.getpid(), sig)

    monkeypatch.setattr(RLModule, "step_optimizer", step_and_signal)


# ---------------------------------------------------------------- SIGTERM / SIGINT: stop, save, resume exactly


def test_sigterm_inside_a_ppo_update_stops_at_its_end_and_the_resume_is_exact(tmp_path, monkeypatch, capfd,
                                                                               stray_signals):
    """SIGTERM after optimizer step 6, in the middle of the second PPO update (steps 5-8): the run finishes that
    update, saves last.ckpt at step 8, says how to resume, exits 0; resumed to 12 it equals the straight run."""
    cfg, runs = _config(tmp_path, TINY_GB_PPO), tmp_path / "runs"
    _signal_at_opt_step(monkeypatch, 6)
    assert _fit(cfg, runs) == 0
    run_dir = runs / "tiny" / "version_0"
    err = capfd.readouterr().err
    assert "SIGTERM: finishing the update in flight, then saving" in err
    assert (f"SIGTERM: stopped after optimizer step 8 (env step 12); saved {run_dir / 'checkpoints' / 'last.ckpt'}. "
            f"To resume: {resume_command(['fit', '--config', str(cfg), '--runs_dir', str(runs)], '0')}") in err
    assert _ckpt(run_dir / "checkpoints" / "last.ckpt")["global_step"] == 8
    records = read_training_log(run_dir / "train.jsonl")
    assert records[-1] == {"stop": {"signal": "SIGTERM", "env_steps": 12, "opt_steps": 8,
                                    "wall_time_s": records[-1]["stop"]["wall_time_s"]}}
    assert [r["opt_steps"] for r in records if "loss" in r] == [4, 8]   # whole updates only
    assert signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL       # handlers given back (the fixture's)

    monkeypatch.undo()
    assert _fit(cfg, runs, "--ckpt_path", "last", "--version", "0") == 0
    meta, _, _ = _split(run_dir / "train.jsonl")
    assert [(m["segment"], m["opt_steps"]) for m in meta] == [("start", 0), ("resume", 8)]
    assert _fit(cfg, runs, "--run_name", "straight") == 0
    _assert_same_run(run_dir, runs / "straight" / "version_0")


def test_ctrl_c_inside_a_rollout_stops_after_that_update_and_the_resume_is_exact(tmp_path, monkeypatch, capfd,
                                                                                  stray_signals):
    """Ctrl-C (SIGINT) during the 5th env step (inside the second rollout of 3 steps): no KeyboardInterrupt
    mid-rollout; the run stops after optimizer step 2, saves it, exits 0, and resumes exactly."""
    from gbx_lightning.envs.foraging import ForagingEnv

    cfg, runs = _config(tmp_path, TINY_A2C), tmp_path / "runs"
    calls = []
    original = ForagingEnv.step

    def step(self, actions):
        calls.append(1)
        if len(calls) == 5:
            os.kill(os.getpid(), signal.SIGINT)
        return original(self, actions)

    monkeypatch.setattr(ForagingEnv, "step", step)
    # records every 3 steps: the one at step 3 spans the stop, and must still be the straight run's
    assert _fit(cfg, runs, "--checkpoint_every", "100", "--log_every", "3") == 0
    assert "SIGINT: stopped after optimizer step 2 (env step 24); saved" in capfd.readouterr().err
    run_dir = runs / "tiny" / "version_0"
    assert _ckpt(run_dir / "checkpoints" / "last.ckpt")["global_step"] == 2
    monkeypatch.undo()
    assert _fit(cfg, runs, "--checkpoint_every", "100", "--log_every", "3", "--ckpt_path", "last") == 0
    assert _fit(cfg, runs, "--checkpoint_every", "100", "--log_every", "3", "--run_name", "straight") == 0
    _assert_same_run(run_dir, runs / "straight" / "version_0")


def test_with_checkpointing_off_a_signal_still_stops_after_the_update_and_nothing_is_written(
        tmp_path, monkeypatch, capfd, stray_signals):
    """--trainer.enable_checkpointing false: Lightning refuses Checkpoint callbacks, so the stop comes from a plain
    callback; SIGTERM after optimizer step 3 stops the run after that step, with no checkpoint and exit status 0."""
    cfg, runs = _config(tmp_path, TINY_A2C), tmp_path / "runs"
    _signal_at_opt_step(monkeypatch, 3)
    assert _fit(cfg, runs, "--trainer.enable_checkpointing", "false") == 0
    run_dir = runs / "tiny" / "version_0"
    assert "no checkpoint to resume from" in capfd.readouterr().err
    assert not (run_dir / "checkpoints").exists()
    meta, steps, other = _split(run_dir / "train.jsonl")
    assert [r["opt_steps"] for r in steps] == [1, 2, 3]
    assert other[-1]["stop"]["signal"] == "SIGTERM" and other[-1]["stop"]["opt_steps"] == 3


def test_the_last_steps_reach_last_ckpt_when_max_steps_is_not_a_checkpoint_step(tmp_path):
    """Checkpoints every 2 steps, 5 steps trained: last.ckpt holds step 5, not 4."""
    cfg, runs = _config(tmp_path, TINY_A2C), tmp_path / "runs"
    assert _fit(cfg, runs, "--trainer.max_steps", "5") == 0
    checkpoints = runs / "tiny" / "version_0" / "checkpoints"
    assert _ckpt(checkpoints / "last.ckpt")["global_step"] == 5
    assert sorted(p.name for p in checkpoints.glob("*.ckpt")) == ["last.ckpt", "step00000002.ckpt", "step00000004.ckpt"]


def _python(code: str, cwd: Path, timeout: int = 300) -> subprocess.CompletedProcess:
    """Run HEADER + `code` (dedented) in a fresh interpreter."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-c", HEADER + textwrap.dedent(code)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)


HEADER = """
import os, signal, sys, torch
from gbx_lightning.cli import main
from gbx_lightning.algos import RLModule
"""


def test_a_second_signal_during_the_save_quits_at_once_and_last_ckpt_stays_whole(tmp_path):
    """SIGTERM after step 3; while the stop's checkpoint is being written, Ctrl-C: the process quits (status
    128 + SIGINT) without finishing the write; last.ckpt still holds step 2 and loads; a resume sweeps the
    half-written temporary file away and continues from step 2."""
    cfg = _config(tmp_path, TINY_A2C)
    proc = _python(f"""
        step_optimizer, save = RLModule.step_optimizer, torch.save
        def step(self, out):
            step_optimizer(self, out)
            if self.opt_steps == 3:
                os.kill(os.getpid(), signal.SIGTERM)
        def slow_save(obj, f, *args, **kwargs):
            if isinstance(obj, dict) and obj.get("global_step") == 3:   # the stop's save, half way
                f.write(b"half a checkpoint"); f.flush()
                os.kill(os.getpid(), signal.SIGINT)
            return save(obj, f, *args, **kwargs)
        RLModule.step_optimizer, torch.save = step, slow_save
        sys.exit(main(["fit", "--config", {str(cfg)!r}, "--runs_dir", "runs"]))
    """, tmp_path)
    assert proc.returncode == 128 + signal.SIGINT, proc.stderr[-3000:]
    assert "SIGINT again: quitting without saving" in proc.stderr
    ckpt_dir = tmp_path / "runs" / "tiny" / "version_0" / "checkpoints"
    assert _ckpt(ckpt_dir / "last.ckpt")["global_step"] == 2
    assert len(list(ckpt_dir.glob(".tmp-*.ckpt"))) == 1   # the write cut short, never renamed over last.ckpt
    assert _fit(cfg, tmp_path / "runs", "--ckpt_path", "last") == 0
    assert _ckpt(ckpt_dir / "last.ckpt")["global_step"] == 8 and not list(ckpt_dir.glob(".tmp-*"))


def test_sigterm_from_outside_exits_0_and_the_printed_command_resumes(tmp_path):
    """What SLURM/Kubernetes do: SIGTERM to a running fit, at whatever moment it lands. Exit status 0, the stop
    record and last.ckpt agree, and the command printed resumes the run to its end."""
    cfg = _config(tmp_path, TINY_A2C.replace("max_steps: 8,", "max_steps: 100000,"))
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen([sys.executable, "-m", "gbx_lightning", "fit", "--config", str(cfg), "--runs_dir", "runs"],
                            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    last = tmp_path / "runs" / "tiny" / "version_0" / "checkpoints" / "last.ckpt"
    deadline = time.monotonic() + 120
    while not last.exists() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    time.sleep(random.Random(0).uniform(0.2, 0.8))
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err[-3000:]
    stop = read_training_log(last.parent.parent / "train.jsonl")[-1]["stop"]
    assert stop["signal"] == "SIGTERM" and _ckpt(last)["global_step"] == stop["opt_steps"] > 0
    command = err.strip().splitlines()[-1].split("To resume: ", 1)[1]
    assert command.startswith("python -m gbx_lightning fit ") and command.endswith("--ckpt_path last --version 0")
    args = command.split()[3:] + ["--trainer.max_steps", str(stop["opt_steps"] + 2)]
    resumed = subprocess.run([sys.executable, "-m", "gbx_lightning", *args], cwd=tmp_path, env=env,
                             capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    meta, steps, _ = _split(last.parent.parent / "train.jsonl")
    assert meta[-1]["segment"] == "resume" and meta[-1]["opt_steps"] == stop["opt_steps"]
    assert steps[-1]["opt_steps"] == stop["opt_steps"] + 2 and _ckpt(last)["global_step"] == stop["opt_steps"] + 2


# ---------------------------------------------------------------- kill -9


KILL_AT = HEADER + """
from gbx_lightning import callbacks
step_optimizer, save, write = RLModule.step_optimizer, torch.save, callbacks.TrainingLog._write
where, at = sys.argv[1], int(sys.argv[2])
def kill():
    os.kill(os.getpid(), signal.SIGKILL)
def torn_save(obj, f, *args, **kwargs):
    if where == "checkpoint" and isinstance(obj, dict) and obj.get("global_step") == at:
        f.write(b"PK half a zip"); f.flush(); kill()
    return save(obj, f, *args, **kwargs)
def torn_write(self, trainer, obj):
    if where == "jsonl" and obj.get("opt_steps") == at:
        line = json.dumps(obj)
        self._file.write(line[:len(line) // 2]); self._file.flush(); kill()
    return write(self, trainer, obj)
import json
torch.save, callbacks.TrainingLog._write = torn_save, torn_write
sys.exit(main(["fit", "--config", sys.argv[3], "--runs_dir", "runs"]))
"""


@pytest.mark.parametrize("where", ["checkpoint", "jsonl"])
def test_kill_9_mid_write_leaves_last_ckpt_loadable_and_the_jsonl_readable(tmp_path, where):
    """SIGKILL in the middle of writing step 4's checkpoint, or in the middle of step 3's JSONL line: last.ckpt
    is the previous complete one (step 2), the JSONL reads up to its last complete line; the resume drops the
    torn line, continues from step 2, and the run ends equal to the uninterrupted one."""
    cfg = _config(tmp_path, TINY_A2C)
    at = 4 if where == "checkpoint" else 3
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-c", KILL_AT, where, str(at), str(cfg)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-3000:]
    run_dir = tmp_path / "runs" / "tiny" / "version_0"
    assert _ckpt(run_dir / "checkpoints" / "last.ckpt")["global_step"] == 2
    text = (run_dir / "train.jsonl").read_text()
    torn = not text.endswith("\n")
    assert torn == (where == "jsonl")
    _, steps, _ = _split(run_dir / "train.jsonl")
    assert [r["opt_steps"] for r in steps] == list(range(1, at + (where == "checkpoint")))
    assert _fit(cfg, tmp_path / "runs", "--ckpt_path", "last") == 0
    for line in (run_dir / "train.jsonl").read_text().splitlines():
        json.loads(line)   # every line whole: the torn one was dropped, not continued
    assert _fit(cfg, tmp_path / "runs", "--run_name", "straight") == 0
    _assert_same_run(run_dir, tmp_path / "runs" / "straight" / "version_0")


def test_kill_9_at_random_moments_while_checkpointing_every_step(tmp_path):
    """Three kills at random moments of a run that writes a checkpoint every step (so kills land in and between
    writes): after each, last.ckpt loads and the JSONL reads; each resume continues the counters from the
    checkpoint; the finished run equals the uninterrupted one, also its records every 7 steps, whose
    intervals span the resume points (the interval in flight is in the checkpoint)."""
    steps_total = 60
    cfg = _config(tmp_path, TINY_A2C.replace("max_steps: 8,", f"max_steps: {steps_total},")
                  .replace("checkpoint_every: 2", "checkpoint_every: 1").replace("log_every: 1", "log_every: 7"))
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    run_dir = tmp_path / "runs" / "tiny" / "version_0"
    last = run_dir / "checkpoints" / "last.ckpt"
    rng = random.Random(15)
    resumed_from = []
    for trial in range(3):
        args = ["fit", "--config", str(cfg), "--runs_dir", "runs"] + (["--ckpt_path", "last"] if trial else [])
        before = _ckpt(last)["global_step"] if trial else 0
        proc = subprocess.Popen([sys.executable, "-m", "gbx_lightning", *args], cwd=tmp_path, env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None and (
                not last.exists() or _ckpt_step_or_none(last) in (None, before)):
            time.sleep(0.02)
        time.sleep(rng.uniform(0.0, 0.3))
        proc.kill()
        proc.wait(timeout=60)
        step = _ckpt(last)["global_step"]               # loads: never torn
        assert before < step < steps_total
        _split(run_dir / "train.jsonl")                 # reads (a torn last line left out)
        resumed_from.append(step)
    assert main(["fit", "--config", str(cfg), "--runs_dir", str(tmp_path / "runs"), "--ckpt_path", "last"]) == 0
    meta, _, _ = _split(run_dir / "train.jsonl")
    assert [m["opt_steps"] for m in meta] == [0] + resumed_from
    assert main(["fit", "--config", str(cfg), "--runs_dir", str(tmp_path / "runs"), "--run_name", "straight"]) == 0
    _assert_same_run(run_dir, tmp_path / "runs" / "straight" / "version_0")


def _ckpt_step_or_none(path):
    try:
        return _ckpt(path)["global_step"]
    except Exception:   # not there yet between our exists() and load: only os.replace puts it there, whole
        return None


# ---------------------------------------------------------------- non-finite numbers


def _poison(monkeypatch, what: str):
    """A NaN reward in env step 11 (the rollout of optimizer step 4: 3 env steps per update), or a NaN weight
    right after optimizer step 4."""
    from gbx_lightning.envs.foraging import ForagingEnv

    if what == "loss":
        calls, env_step = [], ForagingEnv.step

        def step(self, actions):
            calls.append(1)
            obs, reward, *rest = env_step(self, actions)
            return (obs, reward * float("nan") if len(calls) == 11 else reward, *rest)

        monkeypatch.setattr(ForagingEnv, "step", step)
        return
    step_optimizer = RLModule.step_optimizer

    def step_and_poison(self, out):
        step_optimizer(self, out)
        if self.opt_steps == 4:
            with torch.no_grad():
                next(self.policy.parameters()).view(-1)[0] = float("nan")

    monkeypatch.setattr(RLModule, "step_optimizer", step_and_poison)


@pytest.mark.parametrize("what, log_every", [
    ("loss", 1),         # step 4's loss is NaN (a NaN reward): its record says so
    ("loss", 10),        # no record before step 10: the check before step 4's checkpoint finds it
    ("parameters", 1),   # step 4's loss was finite, the weights after it are not
])
def test_non_finite_stops_the_run_and_the_last_good_checkpoint_stays(tmp_path, monkeypatch, capfd, what, log_every):
    cfg, runs = _config(tmp_path, TINY_A2C), tmp_path / "runs"
    _poison(monkeypatch, what)
    assert _fit(cfg, runs, "--log_every", str(log_every)) == 1
    err = capfd.readouterr().err.strip().splitlines()[-1]
    assert err.startswith(f"error: {what}") and err.endswith(
        "went non-finite at optimizer step 4; the run stopped and the last good checkpoint is kept")
    run_dir = runs / "tiny" / "version_0"
    error = read_training_log(run_dir / "train.jsonl")[-1]["error"]
    assert error["type"] == "NonFiniteError" and error["nonfinite_opt_step"] == 4
    assert error["nonfinite"].split(", ")[0] == what
    if what == "loss":   # a NaN reward: the TD terms and the gradient; entropy and V(s) stay finite
        assert error["nonfinite"] == "loss, loss_policy, loss_value, advantage_mean, grad_norm"
    names = sorted(p.name for p in (run_dir / "checkpoints").iterdir())
    assert names == ["last.ckpt", "step00000002.ckpt"]
    good = _ckpt(run_dir / "checkpoints" / "last.ckpt")
    assert good["global_step"] == 2 and all(v.isfinite().all() for v in good["state_dict"].values())


def test_find_nonfinite_reads_the_first_bad_step_per_term():
    """Known answer on the module alone: rows of steps 1..5, the value loss infinite at step 3, the gradient norm
    NaN at 4: step 3, value loss first; explained variance NaN is not a failure."""
    from gbx_lightning.metrics import LossMetrics
    from functools import partial

    from gbx_lightning.algos import A2CModule
    from gbx_lightning.envs import ForagingEnv
    from gbx_lightning.models import MLPPolicy

    module = A2CModule(env=partial(ForagingEnv, obs_mode="ground_truth", grid_size=8, view_size=5), num_envs=2,
                       policy=partial(MLPPolicy, hidden=[4]))
    module.build_policy(module._make_env(2))
    for step in range(1, 6):
        module.opt_steps = step
        out = {"loss": torch.tensor(1.0), "value_loss": torch.tensor(float("inf") if step == 3 else 0.5),
               "explained_variance": torch.tensor(float("nan"))}
        module.loss_metrics.add(step, out, torch.tensor(float("nan") if step == 4 else 1.0))
    assert module.find_nonfinite() == ("loss_value", 3)
    assert module.read_loss_metrics()["loss"] == 1.0 and module.nonfinite == ("loss_value", 3)
    module.loss_metrics = LossMetrics()
    with torch.no_grad():
        next(module.policy.parameters()).view(-1)[0] = float("inf")
    assert module.find_nonfinite() == ("parameters", 5)


# ---------------------------------------------------------------- env state size cap


GB_A2C = """
seed_everything: 5
trainer: {max_steps: 4, accelerator: cpu, devices: 1, val_check_interval: 100, check_val_every_n_epoch: null}
model:
  class_path: gbx_lightning.algos.A2CModule
  init_args:
    env:
      class_path: gbx_lightning.envs.GameBoyEnv
      init_args: {task: {base: orchard/level1, start: {variants: 2}}, stack_k: 2, action_codec: dpad_noop,
                 max_steps: 6, cpu_threads: 2}
    num_envs: 3
    policy:
      class_path: gbx_lightning.models.PixelCNNPolicy
      init_args: {channels: [4, 8], hidden: 16}
    update_every: 2
    eval_episodes: 2
checkpoint_every: 2
log_every: 1
progress_refresh: 0
"""


def test_env_state_over_the_cap_is_left_out_and_the_resume_says_so(tmp_path):
    """With a cap under the 3 Game Boys' state, the checkpoint holds no env state; the resume restarts the envs
    from their reset states, says so in its meta line, and the counters continue."""
    cfg, runs = _config(tmp_path, GB_A2C, "gb"), tmp_path / "runs"
    assert _fit(cfg, runs, "--trainer.limit_val_batches", "0", "--env_state_max_mb", "0.1") == 0
    run_dir = runs / "gb" / "version_0"
    ckpt = _ckpt(run_dir / "checkpoints" / "last.ckpt")
    stream = ckpt["loops"]["fit_loop"]["state_dict"]["combined_loader"][0]
    plan = ckpt["gbx_env_state"]
    parts = plan.pop("parts")   # what a resume loses, part by part (in the checkpoint's plan only): they add up
    assert stream["env"] is None and stream["obs"] is None and stream["env_state"] == plan
    # per env: the machine (50,425 B), the 2-frame stack, 6 int32/f32 episode counters, running return and length;
    # plus the reset generator's state and the task's visit heatmap (32 x 32 int64 counts) once
    per_env = 50425 + 2 * 72 * 80 + 6 * 4 + 2 * 4
    assert plan == {"saved": False, "bytes": 3 * per_env + torch.Generator().get_state().numel() + 32 * 32 * 8,
                    "num_envs": 3,
                    "max_bytes": int(0.1 * (1 << 20))}
    assert sum(n for _, n in parts) == plan["bytes"] and ("the heatmap's visit counts", 32 * 32 * 8) in parts
    assert _fit(cfg, runs, "--trainer.limit_val_batches", "0", "--env_state_max_mb", "0.1", "--ckpt_path", "last",
                "--trainer.max_steps", "8") == 0
    meta, steps, _ = _split(run_dir / "train.jsonl")
    assert meta[1]["env_state"] == {**plan, "parts": [list(p) for p in parts]}
    assert [r["opt_steps"] for r in steps] == list(range(1, 9)) and steps[-1]["env_steps"] == 8 * 2 * 3


# ---------------------------------------------------------------- pieces


def test_drop_torn_line_and_read_training_log(tmp_path):
    path = tmp_path / "train.jsonl"
    path.write_text('{"a": 1}\n{"b": 2}\n{"c": ')
    assert read_training_log(path) == [{"a": 1}, {"b": 2}]
    assert drop_torn_line(path) == len('{"c": ') and path.read_text() == '{"a": 1}\n{"b": 2}\n'
    assert drop_torn_line(path) == 0 and drop_torn_line(tmp_path / "none.jsonl") == 0
    path.write_text('{"a"')
    assert drop_torn_line(path) == 4 and path.read_text() == ""
    path.write_text('{"a": 1}\nnot json\n{"b": 2}\n')
    with pytest.raises(ValueError, match="line 2 is not JSON"):
        read_training_log(path)


def test_atomic_checkpoint_io_sweeps_a_dead_writers_temporary_file(tmp_path):
    stale = tmp_path / ".tmp-dead.ckpt"
    stale.write_bytes(b"half")
    io = AtomicCheckpointIO()
    io.save_checkpoint({"global_step": 7}, tmp_path / "last.ckpt")
    assert not stale.exists() and torch.load(tmp_path / "last.ckpt")["global_step"] == 7
    assert io.saved_steps == {str(tmp_path / "last.ckpt"): 7}


def test_resume_command_replaces_ckpt_path_and_names_the_version():
    assert resume_command(["fit", "--config", "c.yaml", "--ckpt_path", "x.ckpt", "--version=3", "--lr", "1"], "2") == \
        "python -m gbx_lightning fit --config c.yaml --lr 1 --ckpt_path last --version 2"
    assert resume_command(["fit", "--run_name", "a b"], None) == \
        "python -m gbx_lightning fit --run_name 'a b' --ckpt_path last"


def test_max_time_stops_at_the_first_update_that_ends_past_it(monkeypatch):
    """Known answer on a clock that moves 1 s per update: max_time 3 s stops after update 3, not one later and
    not at an epoch or evaluation boundary; the clock's time is the callback's state (the run's, across resumes)."""
    from functools import partial

    from lightning.pytorch import Callback, Trainer

    import gbx_lightning.safety as safety
    from gbx_lightning.algos import A2CModule
    from gbx_lightning.envs import ForagingEnv
    from gbx_lightning.models import MLPPolicy

    clock = {"t": 100.0}
    monkeypatch.setattr(safety.time, "monotonic", lambda: clock["t"])

    class Tick(Callback):
        def on_train_batch_end(self, *args):
            clock["t"] += 1.0

    stop = StopOnSignal(max_time=3.0)
    module = A2CModule(env=partial(ForagingEnv, grid_size=8, view_size=5), num_envs=2,
                       policy=partial(MLPPolicy, hidden=[4]), update_every=2)
    trainer = Trainer(max_steps=10, accelerator="cpu", devices=1, logger=False, enable_checkpointing=False,
                      enable_progress_bar=False, enable_model_summary=False, limit_val_batches=0,
                      callbacks=[Tick(), stop])
    with pytest.raises(RunStopped) as err:
        trainer.fit(module)
    assert err.value.signal_name == "max_time" and err.value.opt_steps == 3
    assert stop.state_dict() == {"train_time_s": 3.0}
    resumed = StopOnSignal(max_time=5.0)
    resumed.load_state_dict(stop.state_dict())
    assert resumed.train_time_s == 3.0


@pytest.mark.parametrize("value, seconds", [("00:00:25:00", 1500.0), ({"minutes": 2}, 120.0), (None, None)])
def test_max_time_is_read_as_lightning_reads_it(value, seconds):
    from gbx_lightning.safety import max_time_seconds

    assert max_time_seconds(value) == seconds
