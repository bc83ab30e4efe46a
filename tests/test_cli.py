"""CLI guards: bad config values and a missing checkpoint fail fast with one line, non-zero exit, no traceback."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from gbx_lightning.cli import main

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

ROOT = Path(__file__).resolve().parents[1]
A2C = str(ROOT / "configs" / "a2c.yaml")
PPO = str(ROOT / "configs" / "ppo.yaml")


def _run_cli(*args, cwd):
    return subprocess.run([sys.executable, "-m", "gbx_lightning", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})


def _one_line_error(stderr: str) -> str:
    assert "Traceback" not in stderr
    lines = [ln for ln in stderr.strip().splitlines() if not ln.startswith("Seed set to")]
    assert len(lines) == 1, stderr
    return lines[0]


def test_subprocess_bad_gamma_is_one_line_config_error(tmp_path):
    proc = _run_cli("fit", "--config", A2C, "--model.init_args.gamma", "1.5", "--runs_dir", str(tmp_path), cwd=tmp_path)
    assert proc.returncode != 0
    assert _one_line_error(proc.stderr) == "config error: model.gamma must be a number in (0, 1], got 1.5"
    assert not (tmp_path / "a2c").exists()  # nothing was built or written


def test_subprocess_ckpt_path_last_without_checkpoint_is_an_error_not_a_fresh_start(tmp_path):
    proc = _run_cli("fit", "--config", A2C, "--ckpt_path", "last", "--runs_dir", str(tmp_path), cwd=tmp_path)
    assert proc.returncode != 0
    line = _one_line_error(proc.stderr)
    assert line.startswith("error: --ckpt_path last: no checkpoint to resume")
    assert str(tmp_path / "a2c" / "version_*" / "checkpoints" / "last.ckpt") in line
    assert not (tmp_path / "a2c").exists()


@pytest.mark.parametrize("config,override,message", [
    (A2C, "--model.init_args.gamma=0", "model.gamma must be a number in (0, 1], got 0.0"),
    (PPO, "--model.init_args.gamma=1.01", "model.gamma must be a number in (0, 1], got 1.01"),
    (A2C, "--model.init_args.lr=0", "model.lr must be a number > 0, got 0.0"),
    (PPO, "--model.init_args.lr=-0.001", "model.lr must be a number > 0, got -0.001"),
    (A2C, "--model.init_args.num_envs=0", "model.num_envs must be an int >= 1, got 0"),
    (A2C, "--model.init_args.update_every=0", "model.update_every must be an int >= 1, got 0"),
    (A2C, "--model.env.class_path=gbx_lightning.envs.Tetris",
     "model.env is invalid: module 'gbx_lightning.envs' has no attribute 'Tetris'"),
    (PPO, "--model.policy={class_path: gbx_lightning.envs.ForagingEnv}",
     "model.policy must be a subclass of ActorCritic (got gbx_lightning.envs.ForagingEnv)"),
    (PPO, "--model.init_args.minibatches=0", "model.minibatches must be an int >= 1, got 0"),
    (PPO, "--model.init_args.anneal_from=1.5", "model.anneal_from must be a number in [0, 1], got 1.5"),
    (str(ROOT / "configs" / "hamlet_explore_ppo.yaml"), "--model.init_args.anneal_from=0.5",   # (anneal_lr: false)
     "model.anneal_from must be 0 with anneal_lr: false (the rate is then constant; set anneal_lr: true to hold it "
     "and then let it fall), got 0.5"),
    (A2C, "--log_every=0", "log_every must be an int >= 1, got 0"),
    (A2C, "--image_every=-1", "image_every must be an int >= 0, got -1"),
    (A2C, "--checkpoint_keep=-2", "checkpoint_keep must be an int >= -1, got -2"),
    (PPO, "--trainer.max_steps=2410",
     "trainer.max_steps must be a multiple of epochs * minibatches = 16 (PPO updates whole rollouts), got 2410; "
     "use 2416 or 2400"),
    (PPO, "--trainer.max_steps=-1",
     "trainer.max_steps must be set (> 0) with model.anneal_lr: true (the learning rate reaches 0 there), got -1"),
    (A2C, "--trainer.accelerator=gpu",
     f"trainer.accelerator is 'gpu' but torch {torch.__version__} sees no CUDA device (use cpu or auto)"),
    (A2C, "--trainer.strategy=ddp_spawn", "trainer.strategy must be auto or ddp (or DDPStrategy with options): each "
     "process steps its own envs and DDP all-reduces the gradients, got 'ddp_spawn'"),
    (A2C, "--trainer.gradient_clip_val=1.0",
     "trainer.gradient_clip_val must be null (the algorithms clip in training_step: set model.max_grad_norm), got 1.0"),
    # Lightning's own refusals, in one line (their wording is Lightning's: only the start is pinned)
    (A2C, "--trainer.val_check_interval=-1", "trainer rejected by Lightning: You have passed invalid value -1 for "
     "val_check_interval..."),
    (A2C, "--trainer.strategy=fsdp", "trainer.strategy must be auto or ddp (or DDPStrategy with options): each "
     "process steps its own envs and DDP all-reduces the gradients, got 'fsdp'"),
    # what the parser checks against the classes' signatures: names, types, Literal values, at any depth
    (A2C, "--model.init_args.env.init_args.levle=2",
     "model.env.levle is not an option of GameBoyEnv; options: action_codec, check_action_range, cpu_threads, "
     "frames_per_step, max_steps, obs, release_after_frames, rom, seed, stack_k, task"),
    (PPO, "--model.policy.chanels=[8, 16]",
     "model.policy.chanels is not an option of PixelCNNPolicy; options: channels, channels_last, compile_update, hidden"),
    (PPO, "--model.policy.channels=[8]", "model.policy.channels must be a tuple with 2 elements, got [8]"),
    (A2C, "--model.env.stack_k=two", "model.env.stack_k must be an int, got two"),
    (A2C, "--model.env.action_codec=dpad_ab", "model.env.action_codec must be one of ['dpad', 'dpad_noop', "
     "'dpad_ab_start', 'dpad_ab_start_noop'] or a list, got dpad_ab"),
    (A2C, "--model.init_args.env_device=cuda", "model.env_device must be one of ['auto', 'cpu', 'gpu'], got cuda"),
    (A2C, "--model.init_args.bogus=1", "model.bogus is not an option of A2CModule; options: adam_eps, entropy_coef, "
     "env, env_device, eval_episodes, eval_greedy, eval_seed, gamma, lr, max_grad_norm, num_envs, policy, "
     "sample_transforms, seed, update_every, value_coef"),
    (A2C, "--model.env.task={base: orchard/level1, start: {framez: 3}}",
     "model.env.task.start.framez is not a field of Start; fields: state, inputs, frames, variants, variant_frames, "
     "ram, score"),
    (A2C, "--model.env.task={base: orchard/level1, counters: [{name: x, address: 0xC000, size: 3}]}",
     "model.env.task.counters[0].size must be one of [1, 2] (bytes, little endian), got 3"),
    # what only the classes' own checks can see: files, ranges, what a task file says
    (A2C, "--model.init_args.env.init_args.task={base: orchard/level1, goal: /no/such/goal.png}",
     "model.env.task.goal cannot be loaded: goal template /no/such/goal.png does not exist (write one with "
     "tools/capture_goal.py)"),
    (A2C, "--model.env.rom=/no/such/game.gb",
     "model.env.rom is not a ROM we can run: no ROM file at '/no/such/game.gb' "
     "(built-in ROMs: hamlet, orchard)"),
    (PPO, "--model.env.task=orchard/level9",
     "model.env.task is neither a built-in task (hamlet/explore, hamlet/house, hamlet/lantern, hamlet/route, "
     "hamlet/shrine, orchard/game, orchard/game_maze2, orchard/game_maze3, orchard/game_maze4, orchard/level1, "
     "orchard/level2, orchard/level3, orchard/level4, orchard/level5, orchard/level6, orchard/level7, pokered/explore) "
     "nor a task file: no file at 'orchard/level9'"),
    (PPO, "--model.env.task={base: orchard/level1, start: {state: /no/such.state}}",
     "model.env.task.start.state does not exist: no savestate file at '/no/such.state'"),
    (A2C, "--model.env.stack_k=9", "model.env.stack_k must be an int in [1, 8], got 9"),
    # what Lightning takes but cannot run: one line before anything long (the fuzzer found the first two)
    (A2C, "--trainer.check_val_every_n_epoch=-9223372036854775808",
     "trainer.check_val_every_n_epoch must be an int >= 1 or null, got -9223372036854775808"),
    (A2C, "--trainer.check_val_every_n_epoch=0", "trainer.check_val_every_n_epoch must be an int >= 1 or null, got 0"),
    (A2C, "--trainer.max_time=25:00", "trainer.max_time must be DD:HH:MM:SS (e.g. 00:12:00:00), got '25:00'"),
    # the old layout (env by name, its options in env_kwargs): what changed, spelt with the config's own values
    (PPO, "--model.init_args.env_kwargs.level=9", "model is in the old config layout (env_kwargs): env and policy are "
     "class_path specs now; here: {env: {class_path: gbx_lightning.envs.GameBoyEnv, init_args: {level: 9}}} "
     "(configs/*.yaml, docs/training.md)"),
    (A2C, "--model.class_path=gbx_lightning.module.A2CModule", "model.class_path gbx_lightning.module.A2CModule is of "
     "the old config layout: the algorithms live in gbx_lightning.algos now (class_path: gbx_lightning.algos.A2CModule)"),
])
def test_config_errors_name_the_field(tmp_path, capsys, config, override, message):
    code = main(["fit", "--config", config, override, "--runs_dir", str(tmp_path)])
    assert code == 2
    line = _one_line_error(capsys.readouterr().err)
    if message.endswith("..."):
        assert line.startswith(f"config error: {message[:-3]}"), line
    else:
        assert line == f"config error: {message}"
    assert not list(tmp_path.iterdir())


def test_an_evaluation_schedule_lightning_would_refuse_mid_setup_is_one_line(tmp_path, capsys):
    """With check_val_every_n_epoch set, Lightning wants val_check_interval within one epoch (here, the run): its
    ValueError came from inside fit as a traceback; now one line, and the fresh run leaves nothing."""
    code = main(["fit", "--config", A2C, "--trainer.check_val_every_n_epoch=1", "--trainer.val_check_interval=4000",
                 "--runs_dir", str(tmp_path)])
    assert code == 2 and _one_line_error(capsys.readouterr().err) == (
        "config error: trainer.val_check_interval must be <= the run's 2000 batches with "
        "trainer.check_val_every_n_epoch set (1), got 4000; set check_val_every_n_epoch: null to count it over the run")
    assert not list(tmp_path.iterdir())


def test_an_old_layout_config_file_is_one_line_saying_what_changed(tmp_path, capsys):
    """configs/a2c.yaml as it was before env and policy became class_path specs."""
    old = tmp_path / "old.yaml"
    old.write_text("model:\n  class_path: gbx_lightning.module.A2CModule\n  init_args:\n    env: gameboy\n"
                   "    env_kwargs: {task: orchard/level1, stack_k: 1}\n    policy: pixel_cnn\n"
                   "    policy_kwargs: {hidden: 64}\n")
    assert main(["fit", "--config", str(old), "--runs_dir", str(tmp_path / "runs")]) == 2
    assert _one_line_error(capsys.readouterr().err) == (
        "config error: model.class_path gbx_lightning.module.A2CModule is of the old config layout: the algorithms "
        "live in gbx_lightning.algos now (class_path: gbx_lightning.algos.A2CModule); and the model is in the old "
        "config layout (env, env_kwargs, policy, policy_kwargs): env and policy are class_path specs now; here: "
        "{env: {class_path: gbx_lightning.envs.GameBoyEnv, init_args: {task: orchard/level1, stack_k: 1}}, "
        "policy: {class_path: gbx_lightning.models.PixelCNNPolicy, init_args: {hidden: 64}}} "
        "(configs/*.yaml, docs/training.md)")
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("sub", ["fit", "validate", "play"])
def test_an_old_layout_checkpoint_is_refused_in_one_line_not_loaded(tmp_path, capsys, sub):
    """A checkpoint saved under the old config layout (its hyper-parameters name the env by name): whatever the
    config says now, its weights may be another env's or policy's, so it is refused before anything is built."""
    ckpt = tmp_path / "old.ckpt"
    torch.save({"hyper_parameters": {"env": "foraging", "env_kwargs": {"max_steps": 12}, "policy": "mlp"},
                "gbx": {"env_steps": 8, "opt_steps": 2, "world_size": 1}, "state_dict": {}}, ckpt)
    assert main([sub, "--config", A2C, "--runs_dir", str(tmp_path / "runs"), "--ckpt_path", str(ckpt)]) == 2
    assert _one_line_error(capsys.readouterr().err) == (
        f"error: --ckpt_path {ckpt}: the checkpoint is in the old config layout (env, env_kwargs, policy): env and "
        f"policy are class_path specs now; here: {{env: {{class_path: gbx_lightning.envs.ForagingEnv, init_args: "
        f"{{max_steps: 12}}}}, policy: {{class_path: gbx_lightning.models.MLPPolicy}}}} (configs/*.yaml, "
        f"docs/training.md); it was saved by an earlier gbx_lightning: resume it with that version, or start a "
        f"fresh run")
    assert not (tmp_path / "runs").exists()


def test_validate_with_missing_checkpoint_path(tmp_path, capsys):
    code = main(["validate", "--config", A2C, "--runs_dir", str(tmp_path), "--ckpt_path", str(tmp_path / "x.ckpt")])
    assert code == 2
    assert _one_line_error(capsys.readouterr().err) == f"error: --ckpt_path: checkpoint file {tmp_path / 'x.ckpt'} " \
                                                      "does not exist"


def test_print_config_shows_the_resolved_config(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["fit", "--config", PPO, "--print_config"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert "class_path: gbx_lightning.algos.PPOModule" in out and "rollout_steps: 32" in out
    assert "class_path: gbx_lightning.envs.GameBoyEnv" in out and "class_path: gbx_lightning.models.PixelCNNPolicy" in out
    assert "run_name: null" in out and "runs_dir: lightning_logs" in out


@pytest.mark.parametrize("name", ["your_game_a2c.yaml", "your_game_ppo.yaml", "pokered_explore_ppo.yaml",
                                  "pokered_explore_gpu.yaml"])
def test_user_game_configs_name_their_placeholder_files(tmp_path, capsys, name):
    code = main(["fit", "--config", str(ROOT / "configs" / name), "--runs_dir", str(tmp_path)])
    assert code == 2
    assert _one_line_error(capsys.readouterr().err) == ("config error: model.env.rom is not a ROM we can run: "
                                                        "no ROM file at 'roms/pokered.gb' "
                                                        "(built-in ROMs: hamlet, orchard)")


@pytest.mark.parametrize("path", sorted((ROOT / "configs").glob("*.yaml")), ids=lambda p: p.name)
def test_every_shipped_config_parses_in_the_class_path_layout(capsys, path):
    """Each configs/*.yaml passes the parser (every field typed by its class) and names its module, env and policy
    by class_path; a Game Boy env built in it passes GameBoyEnv's own checks up to a user's own files."""
    import yaml

    from gbx_lightning.envs import GameBoyEnv
    from gbx_lightning.envs.base import OptionError
    with pytest.raises(SystemExit) as exc:
        main(["fit", "--config", str(path), "--print_config"])
    assert exc.value.code == 0
    model = yaml.safe_load(capsys.readouterr().out)["model"]
    assert model["class_path"].startswith("gbx_lightning.algos.")
    env, policy = model["init_args"]["env"], model["init_args"]["policy"]
    assert env["class_path"].startswith("gbx_lightning.envs.") and policy["class_path"].startswith("gbx_lightning.models.")
    if env["class_path"] == "gbx_lightning.envs.GameBoyEnv":
        options = yaml.safe_load(path.read_text())["model"]["init_args"]["env"]["init_args"]
        if path.name.startswith(("pokered_", "your_game_")):
            with pytest.raises(OptionError, match=r"^rom is not a ROM we can run: no ROM file at 'roms/pokered.gb'"):
                GameBoyEnv.check_options(**options)
        else:
            GameBoyEnv.check_options(**options)


# what a CPU user's first hour is: PPO fit with the pokered configs' learner measured 150 env steps/s on a loaded
# 2-core machine (issue 26 saw ~300): the first evaluation within ~10 min there; an evaluation no longer than a
# few minutes (its episodes' steps at most); an hour's cap.
FIRST_EVAL_ENV_STEPS = 100_000
EVAL_ENV_STEPS = 65_536
RUN_ENV_STEPS = 2_000_000


@pytest.mark.parametrize("name", ["your_game_a2c.yaml", "your_game_ppo.yaml", "pokered_explore_ppo.yaml"])
def test_user_game_configs_are_sized_for_a_cpus_first_hour(name):
    """The env steps to the first evaluation, computed from the config (evaluation every val_check_interval
    batches; a batch is a PPO rollout, rollout_steps x num_envs, or an A2C update, update_every x num_envs), an
    evaluation's worst case (every episode to its time limit) and the whole run: a first hour on a CPU, with
    max_time an hour."""
    import importlib
    import inspect

    import yaml

    from gbx_lightning.safety import max_time_seconds
    config = yaml.safe_load((ROOT / "configs" / name).read_text())
    trainer, model = config["trainer"], config["model"]
    module, _, cls_name = model["class_path"].rpartition(".")
    cls = getattr(importlib.import_module(module), cls_name)
    init = {k: p.default for k, p in inspect.signature(cls).parameters.items() if p.default is not p.empty}
    init.update(model["init_args"])
    ppo = cls_name == "PPOModule"
    assert ppo or cls_name == "A2CModule"
    per_batch = init["num_envs"] * (init["rollout_steps"] if ppo else init["update_every"])
    first_eval = trainer["val_check_interval"] * per_batch
    assert trainer.get("check_val_every_n_epoch") is None and first_eval <= FIRST_EVAL_ENV_STEPS, first_eval
    episode_limit = init["env"]["init_args"]["max_steps"]
    assert init["eval_episodes"] * episode_limit <= EVAL_ENV_STEPS
    updates_per_batch = init["epochs"] * init["minibatches"] if ppo else 1
    run = trainer["max_steps"] // updates_per_batch * per_batch
    assert trainer["max_steps"] % updates_per_batch == 0 and 10 * first_eval <= run <= RUN_ENV_STEPS, run
    assert episode_limit * init["num_envs"] * 4 <= run      # every env ends episodes in that hour
    assert max_time_seconds(trainer["max_time"]) == 3600


def test_the_hamlet_config_is_the_generic_config_pointed_at_hamlet():
    """configs/hamlet_house_ppo.yaml measures configs/your_game_ppo.yaml (docs/benchmarks.md): the two must not
    drift apart. Everything equal but the env's ROM and task, whose reward list is the same."""
    import yaml
    mine, yours = (yaml.safe_load((ROOT / "configs" / n).read_text()) for n in ("hamlet_house_ppo.yaml",
                                                                               "your_game_ppo.yaml"))
    env_m, env_y = mine["model"]["init_args"].pop("env")["init_args"], yours["model"]["init_args"].pop("env")["init_args"]
    assert mine == yours
    assert env_m.pop("task") == {"base": "hamlet/house", "reward": env_y["task"]["reward"]}
    env_y.pop("task"), env_y.pop("rom")
    assert env_m == env_y


def test_the_gpu_explore_config_fits_on_the_cpu_with_a_stand_in_game(tmp_path):
    """configs/pokered_explore_gpu.yaml, dry-run: 8 envs on the CPU, hamlet's explore task (the same shape: explore,
    event bits, milestones, a pool with swarming) in place of Pokemon's, two rollouts and an evaluation. What is
    checked is the rest of the config: the learner and evaluation settings, the state cap with the pool."""
    import json

    import yaml
    config = yaml.safe_load((ROOT / "configs" / "pokered_explore_gpu.yaml").read_text())
    assert config["model"]["init_args"]["num_envs"] == 4096 and config["trainer"].get("max_time") is None
    env = "--model.init_args.env.init_args"
    code = main(["fit", "--config", str(ROOT / "configs" / "pokered_explore_gpu.yaml"), "--runs_dir", str(tmp_path),
                 f"{env}.rom", "hamlet", f"{env}.task", "{base: hamlet/explore}", f"{env}.max_steps", "48",
                 "--model.init_args.num_envs", "8", "--model.init_args.rollout_steps", "8",
                 "--model.init_args.minibatches", "2", "--model.init_args.eval_episodes", "2",
                 "--model.init_args.policy.class_path", "gbx_lightning.models.PixelCNNPolicy",
                 "--trainer.max_steps", "8", "--trainer.val_check_interval", "2", "--checkpoint_every", "4",
                 "--random_baseline", "false", "--progress_refresh", "0"])
    assert code == 0
    rows = [json.loads(line) for line in next(tmp_path.rglob("train.jsonl")).read_text().splitlines()]
    assert any("eval" in r and r["eval"]["eval/episodes"] == 2.0 for r in rows)
    assert torch.load(next(tmp_path.rglob("last.ckpt")), map_location="cpu", weights_only=False)["global_step"] == 8


class _Parsed(Exception):
    pass


@pytest.mark.parametrize("override, expected", [
    (["--model.env.rom=null"], None),
    (["--model.env.rom", "null"], None),
    (["--model.init_args.env.init_args.rom=null"], None),
    (["--model.env.rom=orchard"], "orchard"),
    (["--model.env.rom=None"], "None"),   # the string, as jsonargparse reads it: a ROM file may be called that
])
def test_a_command_line_null_two_classes_down_reaches_the_env_as_none(monkeypatch, override, expected):
    """jsonargparse 4.53 parses ``--model.env.rom=null`` (an optional string in the env's init_args inside the
    module's) to the string 'None'; the CLI puts the null back before any check, so the env gets None."""
    from gbx_lightning.cli import app

    seen = {}

    def check(self):
        seen["rom"] = self._sub().model.init_args.env.init_args.rom
        raise _Parsed

    monkeypatch.setattr(app.GbxCLI, "_check_config", check)
    with pytest.raises(_Parsed):
        app.GbxCLI(args=["fit", "--config", A2C, "--model.env.rom=orchard", *override])
    assert seen["rom"] == expected


_IDLE_CPU = """
import time
import gbx_lightning  # noqa: F401  (first, as the CLI imports it)
import torch
torch.set_num_threads(2)
a = torch.randn(256, 256)
idle = 0.0
for _ in range(50):           # a parallel op, then 10 ms in which the process has nothing to run
    a @ a
    t = time.process_time()
    time.sleep(0.01)
    idle += time.process_time() - t
print(idle, "OpenMP" in torch.__config__.parallel_info())
"""


@pytest.mark.parametrize("policy", [None, "ACTIVE"])
def test_torchs_idle_openmp_threads_sleep_unless_the_user_sets_a_wait_policy(policy):
    """Importing the package before torch makes torch's OpenMP workers sleep while they wait (a fit's CPU shards
    and acting alternate with them); a policy the user set stands (ACTIVE: they spin through the sleep)."""
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    if policy:
        env["OMP_WAIT_POLICY"] = policy
    out = subprocess.run([sys.executable, "-c", _IDLE_CPU], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    cpu_s, openmp = out.stdout.split()
    if openmp != "True":
        pytest.skip("this torch has no OpenMP runtime")
    if policy is None:   # GNU OpenMP's own default spins ~5 ms after each op here: 0.27-0.30 s of the 0.5 s
        assert float(cpu_s) < 0.1
    else:                # the user's ACTIVE: a worker spins through all of it
        assert float(cpu_s) > 0.2
