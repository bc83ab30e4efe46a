"""fit under Lightning's DDP on the CPU: 2 processes (gloo), as a user runs it (`--trainer.devices 2`, Lightning's
launcher re-running the command for rank 1). Every rank writes what it saw through tests/_ddp_probe.py.

Known answers: the gradients applied and the parameters are the same on both ranks at every optimizer step while
their envs differ; env_steps is twice a single process's; one JSONL (rank 0's) with one meta line per segment; a
resumed run equals the uninterrupted one on every rank (each rank got its own envs and RNG back); the evaluation
metrics are those of both ranks' episodes together.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gbx_lightning.cli import main

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::DeprecationWarning")

ROOT = Path(__file__).resolve().parents[1]
# small and food-rich enough that evaluation episodes differ (returns, lengths, successes)
ENV_KWARGS = {"obs_mode": "ground_truth", "max_steps": 12, "grid_size": 6, "view_size": 5,
              "food_range": [4, 6], "poison_range": [1, 2], "start_energy": 3.0, "step_cost": 0.5}

# 4 envs per rank, rollouts of 3 steps = 4 optimizer steps (2 epochs x 2 minibatches); an evaluation after every
# rollout, 3 episodes split 2 + 1 over the ranks
TINY_PPO = f"""
seed_everything: 3
trainer:
  max_steps: 8
  accelerator: cpu
  devices: 2
  strategy: ddp
  val_check_interval: 1
  check_val_every_n_epoch: null
model:
  class_path: gbx_lightning.algos.PPOModule
  init_args:
    env:
      class_path: gbx_lightning.envs.ForagingEnv
      init_args: {json.dumps(ENV_KWARGS)}
    num_envs: 4
    policy:
      class_path: gbx_lightning.models.MLPPolicy
      init_args: {{hidden: [16]}}
    rollout_steps: 3
    epochs: 2
    minibatches: 2
    lr: 0.01
    eval_episodes: 3
checkpoint_every: 4
log_every: 4
progress_refresh: 0
"""

TINY_GB_A2C = """
seed_everything: 5
trainer:
  max_steps: 3
  accelerator: cpu
  devices: 2
  limit_val_batches: 0
model:
  class_path: gbx_lightning.algos.A2CModule
  init_args:
    env:
      class_path: gbx_lightning.envs.GameBoyEnv
      init_args: {task: orchard/level1, stack_k: 1, action_codec: dpad_noop, max_steps: 50}
    num_envs: 2
    policy:
      class_path: gbx_lightning.models.PixelCNNPolicy
      init_args: {channels: [4, 8], hidden: 16}
    update_every: 2
    eval_episodes: 2
log_every: 1
image_every: 0
progress_refresh: 0
"""


def _ddp_fit(cfg: Path, runs: Path, probe: Path, *extra) -> None:
    """`fit` as a user types it; Lightning's launcher starts rank 1 by running the same command again."""
    probe.mkdir(exist_ok=True)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests")]),
           "GBX_PROBE_DIR": str(probe)}
    env.pop("OMP_NUM_THREADS", None)  # torch's threads per rank: Lightning's default, cores // processes
    proc = subprocess.run([sys.executable, "-m", "gbx_lightning", "fit", "--config", str(cfg), "--runs_dir", str(runs),
                           "--trainer.callbacks+=_ddp_probe.Probe", *extra], env=env, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]


def _probe(probe: Path, segment: str = "start") -> list[dict]:
    return [json.loads((probe / f"{segment}_rank{r}.json").read_text()) for r in (0, 1)]


def _records(path: Path):
    meta, steps, evals = [], [], []
    for line in path.read_text().splitlines():
        rec = json.loads(line)
        (meta if "meta" in rec else evals if "eval" in rec else steps).append(rec)
    return meta, steps, evals


@pytest.fixture(scope="module")
def ppo_runs(tmp_path_factory):
    """8 optimizer steps straight; the same run stopped after 4 and resumed to 8."""
    tmp = tmp_path_factory.mktemp("ddp")
    cfg = tmp / "tiny.yaml"
    cfg.write_text(TINY_PPO)
    runs = tmp / "runs"
    _ddp_fit(cfg, runs, tmp / "straight", "--run_name", "straight")
    _ddp_fit(cfg, runs, tmp / "split", "--run_name", "split", "--trainer.max_steps", "4")
    _ddp_fit(cfg, runs, tmp / "split", "--run_name", "split", "--ckpt_path", "last")
    return tmp, cfg, runs


def test_every_rank_applies_the_same_averaged_gradients_and_holds_the_same_parameters(ppo_runs):
    tmp, _, _ = ppo_runs
    rank0, rank1 = _probe(tmp / "straight")
    assert (rank0["rank"], rank1["rank"], rank0["world_size"]) == (0, 1, 2)
    assert [s["opt_steps"] for s in rank0["steps"]] == list(range(8))
    assert rank0["steps"] == rank1["steps"] and rank0["final_params"] == rank1["final_params"]
    assert len({s["params"] for s in rank0["steps"]} | {rank0["final_params"]}) == 9  # every update moved them
    # ... while each rank stepped envs of its own (seeds offset by rank): different observations and RNG streams
    assert rank0["obs"] != rank1["obs"] and rank0["generator"] != rank1["generator"]


def test_env_steps_count_every_rank(ppo_runs, tmp_path):
    tmp, cfg, runs = ppo_runs
    _, steps, _ = _records(runs / "straight" / "version_0" / "train.jsonl")
    assert [r["env_steps"] for r in steps] == [2 * 4 * 3, 2 * 2 * 4 * 3]  # 2 ranks x 4 envs x 3 steps per rollout
    rank0, rank1 = _probe(tmp / "straight")
    assert rank0["env_steps"] == 48 and rank0["stream_env_steps"] == rank1["stream_env_steps"] == 24
    # one process, the same updates: half the env steps
    assert main(["fit", "--config", str(cfg), "--runs_dir", str(tmp_path), "--trainer.devices", "1",
                 "--trainer.strategy", "auto"]) == 0
    _, single, _ = _records(tmp_path / "tiny" / "version_0" / "train.jsonl")
    assert [2 * r["env_steps"] for r in single] == [r["env_steps"] for r in steps]


def test_one_log_one_run_directory_one_meta_line_per_segment(ppo_runs):
    _, _, runs = ppo_runs
    assert sorted(p.name for p in (runs / "split").iterdir()) == ["version_0"]  # rank 1 made no version of its own
    meta, steps, evals = _records(runs / "split" / "version_0" / "train.jsonl")
    assert [(m["meta"]["segment"], m["meta"]["world_size"]) for m in meta] == [("start", 2), ("resume", 2)]
    assert [r["opt_steps"] for r in steps] == [4, 8] and [e["eval"]["opt_steps"] for e in evals] == [4, 8]
    ckpts = sorted(p.name for p in (runs / "split" / "version_0" / "checkpoints").glob("*.ckpt"))
    assert ckpts == ["last.ckpt", "step00000004.ckpt", "step00000008.ckpt"]


def test_resume_gives_every_rank_its_own_stream_back(ppo_runs):
    """Had rank 1 been given rank 0's envs and RNG, its rollouts, so the averaged gradients, would differ."""
    tmp, _, runs = ppo_runs
    straight = _probe(tmp / "straight")
    first, resumed = _probe(tmp / "split", "start"), _probe(tmp / "split", "resume")
    for rank in (0, 1):
        assert first[rank]["steps"] == straight[rank]["steps"][:4]
        assert resumed[rank]["steps"] == straight[rank]["steps"][4:]
        for key in ("final_params", "obs", "generator", "stream_env_steps", "env_steps"):
            assert resumed[rank][key] == straight[rank][key], (rank, key)
    wall = {"wall_time_s", "sps", "time_env_s", "time_act_s", "time_update_s", "time_other_s"}
    _, split_steps, split_evals = _records(runs / "split" / "version_0" / "train.jsonl")
    _, steps, evals = _records(runs / "straight" / "version_0" / "train.jsonl")
    assert [{k: v for k, v in r.items() if k not in wall} for r in split_steps] == \
        [{k: v for k, v in r.items() if k not in wall} for r in steps]
    assert split_evals == evals


def test_a_signal_to_one_rank_stops_every_rank_after_the_same_update_and_the_resume_is_exact(ppo_runs, tmp_path):
    """SIGTERM reaches rank 1 alone, before its optimizer step 1 (inside the first PPO update, steps 0-3): both
    ranks finish that update and stop together (had rank 0 gone on, both would wait forever in the next
    collective); the stop record is at step 4, last.ckpt holds it, and the resume to 8 equals the straight run."""
    tmp, cfg, runs = ppo_runs
    os.environ.update(GBX_SIGNAL_RANK="1", GBX_SIGNAL_STEP="1")
    try:
        _ddp_fit(cfg, tmp_path / "runs", tmp_path / "probe", "--trainer.callbacks+=_ddp_probe.SignalOneRank")
    finally:
        del os.environ["GBX_SIGNAL_RANK"], os.environ["GBX_SIGNAL_STEP"]
    run = tmp_path / "runs" / "tiny" / "version_0"
    stops = [json.loads(line)["stop"] for line in (run / "train.jsonl").read_text().splitlines() if '"stop"' in line]
    assert [(s["signal"], s["opt_steps"]) for s in stops] == [("a signal to another process", 4)]
    assert not (tmp_path / "probe" / "start_rank0.json").exists()   # neither rank reached the end of fit
    _ddp_fit(cfg, tmp_path / "runs", tmp_path / "probe", "--ckpt_path", "last")
    straight, resumed = _probe(tmp / "straight"), _probe(tmp_path / "probe", "resume")
    for rank in (0, 1):
        assert resumed[rank]["steps"] == straight[rank]["steps"][4:]
        assert resumed[rank]["final_params"] == straight[rank]["final_params"]


def test_resuming_with_another_number_of_processes_is_refused(ppo_runs, capsys):
    _, cfg, runs = ppo_runs
    code = main(["fit", "--config", str(cfg), "--runs_dir", str(runs), "--run_name", "split", "--ckpt_path", "last",
                 "--trainer.devices", "1", "--trainer.max_steps", "12"])
    assert code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        "config error: trainer.devices x trainer.num_nodes must give 2 process(es) to resume this checkpoint (each "
        "saved its own envs and RNG streams), got 1; resume with the same devices, or start a fresh run")


def test_evaluation_metrics_are_over_both_ranks_episodes(ppo_runs):
    tmp, _, runs = ppo_runs
    rank0, rank1 = _probe(tmp / "straight")
    _, _, evals = _records(runs / "straight" / "version_0" / "train.jsonl")
    assert len(rank0["evals"]) == len(rank1["evals"]) == len(evals) == 2
    for mine, theirs, logged in zip(rank0["evals"], rank1["evals"], evals):
        assert len(mine["finished"]) == 2 and len(theirs["finished"]) == 1  # 3 episodes: 2 + 1
        episodes = {k: mine[k] + theirs[k] for k in mine}
        done = [i for i, f in enumerate(episodes["finished"]) if f]
        wins = [i for i in done if episodes["success"][i]]
        expected = {"eval/episodes": len(done), "eval/success_rate": len(wins) / 3,
                    "eval/return_mean": sum(episodes["episode_return"][i] for i in done) / max(len(done), 1),
                    "eval/length_mean": sum(episodes["episode_length"][i] for i in done) / max(len(done), 1),
                    "eval/food_eaten_mean": sum(episodes["food_eaten"][i] for i in done) / max(len(done), 1)}
        for key, value in expected.items():
            assert logged["eval"][key] == pytest.approx(value, rel=1e-6), key
    # the ranks played different episodes (evaluation seed offset by rank)
    assert rank0["eval_env"] != rank1["eval_env"]


def test_game_boy_a2c_under_ddp_with_each_rank_on_its_share_of_the_cores(tmp_path):
    cfg = tmp_path / "gb.yaml"
    cfg.write_text(TINY_GB_A2C)
    _ddp_fit(cfg, tmp_path / "runs", tmp_path / "probe")
    rank0, rank1 = _probe(tmp_path / "probe")
    assert len(rank0["steps"]) == 3 and rank0["steps"] == rank1["steps"]
    assert rank0["obs"] != rank1["obs"] and rank0["generator"] != rank1["generator"]
    _, steps, _ = _records(tmp_path / "runs" / "gb" / "version_0" / "train.jsonl")
    assert [r["env_steps"] for r in steps] == [2 * 2 * 2 * k for k in (1, 2, 3)]  # ranks x envs x update_every
    # no oversubscription: torch's threads and the Game Boy's CPU shards follow the cores per process
    share = max(1, len(os.sched_getaffinity(0)) // 2)
    for rank in (rank0, rank1):
        assert rank["torch_threads"] == share and rank["env_shards"] == min(share, 2)


def test_ranks_that_chose_different_runs_stop_with_one_line():
    """torchrun/SLURM start every rank themselves and each resolves the run: a disagreement is an error on all."""
    from types import SimpleNamespace

    from gbx_lightning.cli import ProcessCheck, RunError

    decisions = []
    strategy = SimpleNamespace(broadcast=lambda obj, src=0: ("runs/a/version_0", None),
                               reduce_boolean_decision=lambda ok, all=True: decisions.append(ok) or ok)
    trainer = SimpleNamespace(world_size=2, global_rank=1, strategy=strategy)
    ProcessCheck("runs/a/version_0", None, None).setup(trainer, None, "fit")
    with pytest.raises(RunError, match=r"^the processes chose different runs: rank 1 run directory and checkpoint "
                                       r"\('runs/a/version_1', None\), rank 0 \('runs/a/version_0', None\)"):
        ProcessCheck("runs/a/version_1", None, None).setup(trainer, None, "fit")
    assert decisions == [True, False]


def test_interval_stats_are_means_over_every_ranks_steps_and_episodes():
    """Rank 0: 2 envs x 2 steps, one episode (return 3, success); rank 1: 2 envs x 1 step, two episodes (returns
    -1 and 0, no success). Over both: 6 env steps, 3 episodes, rewards 4 - 1 = 3 (a mean of the ranks' means
    would give other numbers)."""
    import torch

    from gbx_lightning.data import IntervalStats

    def step(stats, rewards, done, returns, success):  # envs report episode values where one ended, else 0
        n = len(rewards)
        stats.add(torch.tensor(rewards), torch.tensor(done), torch.zeros(n, dtype=torch.bool),
                  {"episode_return": torch.tensor(returns), "episode_length": 2 * torch.tensor(done).int(),
                   "success": torch.tensor(success)})

    rank0, rank1 = IntervalStats(), IntervalStats()
    step(rank0, [1.0, 0.0], [False, False], [0.0, 0.0], [False, False])
    step(rank0, [3.0, 0.0], [True, False], [3.0, 0.0], [True, False])
    step(rank1, [-1.0, 0.0], [True, True], [-1.0, 0.0], [False, False])
    sent = []
    rank1.pop(lambda t: sent.append(t.clone()) or t)           # rank 1's part of the all-reduce
    out = rank0.pop(lambda t: t + sent[0])                      # what the all-reduce gives rank 0
    assert out["episodes"] == 3 and out["reward_mean"] == pytest.approx(3 / 6)
    assert out["done_rate"] == pytest.approx(3 / 6) and out["episode_return_mean"] == pytest.approx(2 / 3)
    assert out["success_rate"] == pytest.approx(1 / 3) and out["episode_length_mean"] == 2


@pytest.mark.parametrize("args, message", [
    (["--model.init_args.eval_episodes", "1"],
     "model.eval_episodes must be >= the number of processes (2): the evaluation episodes are split over them, got 1"),
    (["--trainer.strategy", "deepspeed"], "trainer.strategy must be auto or ddp (or DDPStrategy with options): each "
     "process steps its own envs and DDP all-reduces the gradients, got 'deepspeed'"),
])
def test_what_ddp_refuses_before_any_process_starts(tmp_path, capsys, args, message):
    cfg = tmp_path / "tiny.yaml"
    cfg.write_text(TINY_PPO)
    assert main(["fit", "--config", str(cfg), "--runs_dir", str(tmp_path / "runs"), *args]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == f"config error: {message}"
    assert not (tmp_path / "runs").exists()
