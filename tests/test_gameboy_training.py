"""Training on the Game Boy env through the CLI: fit -> resume equals the uninterrupted run, what the agent
sees reaches TensorBoard and the run directory, validate reports success and steps to success, play
writes a clip."""

import io
import json
import re
from pathlib import Path

import pytest
import torch

from gbx_lightning.cli import main

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::DeprecationWarning")

TINY_GB_A2C = """
seed_everything: 5
trainer:
  max_steps: 6
  accelerator: cpu
  devices: 1
  val_check_interval: 3
  check_val_every_n_epoch: null
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
    lr: 0.001
    eval_episodes: 2
checkpoint_every: 3
log_every: 1
image_every: 2
progress_refresh: 0
"""


def _records(path):
    meta, steps, evals = [], [], []
    for line in Path(path).read_text().splitlines():
        rec = json.loads(line)
        (meta if "meta" in rec else evals if "eval" in rec else steps).append(rec)
    return meta, steps, evals


def _tensors(obj):
    if isinstance(obj, torch.Tensor):
        yield obj
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from _tensors(v)


def _screens_shown(gif, ms_per_screen):
    """A GIF clip's playing time in screens (a run of identical screens is one GIF frame)."""
    total = 0
    for i in range(gif.n_frames):
        gif.seek(i)
        total += gif.info["duration"]
    assert total % ms_per_screen == 0, total
    return total // ms_per_screen


def _fit(cfg, runs, *extra):
    return main(["fit", "--config", str(cfg), "--runs_dir", str(runs), *extra])


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A run of 6 optimizer steps, then resumed to 12; and the same 12 steps without interruption."""
    tmp = tmp_path_factory.mktemp("gb")
    cfg = tmp / "gb.yaml"
    cfg.write_text(TINY_GB_A2C)
    runs = tmp / "runs"
    assert _fit(cfg, runs) == 0
    assert _fit(cfg, runs, "--ckpt_path", "last", "--trainer.max_steps", "12") == 0
    assert _fit(cfg, runs, "--run_name", "straight", "--trainer.max_steps", "12") == 0
    return cfg, runs


def test_resumed_game_boy_run_equals_the_uninterrupted_one(trained):
    cfg, runs = trained
    ckpt = torch.load(runs / "gb" / "version_0" / "checkpoints" / "last.ckpt", weights_only=False)
    plan = ckpt["gbx_env_state"]
    assert ckpt["gbx"] == {"env_steps": 12 * 2 * 3, "opt_steps": 12, "world_size": 1}
    stream = ckpt["loops"]["fit_loop"]["state_dict"]["combined_loader"][0]
    env_state = stream["env"]
    assert env_state["rom_sha256"] and env_state["machines"]["wram"].shape == (3, 8192)
    # the env state's size: what state_dict holds; the stream keeps no second copy of the observation
    held = sum(t.numel() * t.element_size() for t in _tensors(env_state))
    assert plan == {"saved": True, "bytes": held, "num_envs": 3, "max_bytes": 256 << 20} and stream["obs"] is None
    meta, steps, evals = _records(runs / "gb" / "version_0" / "train.jsonl")
    assert [m["meta"]["segment"] for m in meta] == ["start", "resume"]
    assert meta[0]["meta"]["env_state"] is None and meta[1]["meta"]["env_state"]["bytes"] == held
    assert meta[0]["meta"]["rom_sha256"] == env_state["rom_sha256"]
    assert [r["opt_steps"] for r in steps] == list(range(1, 13))
    assert [e["eval"]["opt_steps"] for e in evals] == [3, 6, 9, 12]
    _, straight, straight_evals = _records(runs / "straight" / "version_0" / "train.jsonl")
    wall = {"wall_time_s", "sps", "time_env_s", "time_act_s", "time_update_s", "time_other_s"}
    assert [{k: v for k, v in r.items() if k not in wall} for r in straight] == \
        [{k: v for k, v in r.items() if k not in wall} for r in steps]
    assert [e["eval"] for e in straight_evals] == [e["eval"] for e in evals]
    weights = torch.load(runs / "straight" / "version_0" / "checkpoints" / "last.ckpt", weights_only=False)["state_dict"]
    for k, v in ckpt["state_dict"].items():
        assert torch.equal(weights[k], v), k


def test_tensorboard_gets_the_agent_view_and_eval_clips(trained):
    _, runs = trained
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    tags = set()
    for events in (runs / "gb" / "version_0").glob("events.out.tfevents.*"):
        acc = EventAccumulator(str(events), size_guidance={"images": 0})
        acc.Reload()
        tags |= set(acc.Tags()["images"])
        for tag in acc.Tags()["images"]:
            for image in acc.Images(tag):
                assert image.encoded_image_string[:4] in (b"\x89PNG", b"GIF8")
    assert {"agent/observations", "agent/visit_heatmap", "eval/clip"} <= tags   # orchard tasks have a heatmap
    clips = sorted((runs / "gb" / "version_0" / "clips").glob("eval_step*.gif"))
    assert [c.name for c in clips] == [f"eval_step{s:08d}.gif" for s in (3, 6, 9, 12)]
    Image = pytest.importorskip("PIL.Image")
    im = Image.open(io.BytesIO(clips[-1].read_bytes()))
    assert im.size == (160, 144)                            # 72x80 screens drawn 2x
    assert _screens_shown(im, 120) >= 2                     # the start and at least one step, 12/100 s each


def test_validate_reports_success_and_steps_to_success(trained, capsys):
    cfg, runs = trained
    assert main(["validate", "--config", str(cfg), "--runs_dir", str(runs), "--ckpt_path", "last"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("validate: episodes 2  return_mean ") and "success_rate" in out
    assert "steps_to_success" in out and "seeds_eaten_mean" in out


def test_play_writes_a_clip_of_the_checkpoint_policy(trained, capsys):
    cfg, runs = trained
    out = runs / "clip.gif"
    assert main(["play", "--config", str(cfg), "--runs_dir", str(runs), "--ckpt_path", "last", "--out", str(out),
                 "--episodes", "2"]) == 0
    printed = capsys.readouterr().out
    assert "play: episode 1:" in printed and "play: episode 2:" in printed and f"play: wrote {out}" in printed
    Image = pytest.importorskip("PIL.Image")
    im = Image.open(out)
    screens = int(printed.split(f"play: wrote {out} (")[1].split(" frames)")[0])
    assert screens >= 4                                 # two episodes of at least one step, plus their starts
    assert _screens_shown(im, 120) == screens           # every screen recorded, 12/100 s each
    assert main(["play", "--config", str(cfg), "--runs_dir", str(runs), "--ckpt_path", "last", "--out", str(out),
                 "--episodes", "0"]) == 2


TINY_GB_PPO = TINY_GB_A2C.replace("gbx_lightning.algos.A2CModule", "gbx_lightning.algos.PPOModule").replace(
    "    update_every: 2\n", "    rollout_steps: 2\n    epochs: 2\n    minibatches: 2\n").replace(
    "max_steps: 6\n  accelerator", "max_steps: 8\n  accelerator").replace("val_check_interval: 3", "val_check_interval: 2")



def test_compile_update_says_when_it_compiles_and_is_refused_without_a_cpp_compiler(tmp_path, monkeypatch, capsys):
    """compile_update: true: the progress output says when the first update compiles and how long it took (here with
    a stand-in for torch.compile: what compiling costs and gives is measured in docs/training.md; that a compiled
    update trains bit for bit alike in every process, which an exact resume needs, tests/test_models.py); without a
    C++ compiler the run is refused in one line naming the field, before the first rollout."""
    from gbx_lightning import models

    compiled = []

    def stand_in(fn, **kwargs):
        compiled.append(kwargs)
        return fn

    monkeypatch.setattr(torch, "compile", stand_in)
    monkeypatch.setattr(models, "cpp_compiler", lambda: "g++")
    cfg = tmp_path / "gb.yaml"
    cfg.write_text(TINY_GB_PPO.replace("hidden: 16}", "hidden: 16, compile_update: true}"))
    assert _fit(cfg, tmp_path / "runs", "--trainer.max_steps", "4") == 0
    assert compiled == [{"dynamic": False}]   # once per process, the first update
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("compil")]
    assert len(lines) == 2 and lines[0] == ("compiling the update with torch.compile (compile_update: true; the first "
                                            "update only, ~30 s on a CPU)")
    assert re.fullmatch(r"compiled the update in \d+ s \(its first run included\)", lines[1])
    monkeypatch.setattr(models, "cpp_compiler", lambda: None)
    assert _fit(cfg, tmp_path / "runs") == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        "config error: model.policy.compile_update is true, but no C++ compiler was found (torch.compile's CPU "
        "backend needs g++ or $CXX): install one, or set it to false")
