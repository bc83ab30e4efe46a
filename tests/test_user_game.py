"""A user's game, end to end: a ROM file, PyBoy savestates made by the installed PyBoy (the episode start
and the goal screen), capture_goal on them, `fit` from one YAML, and the one-line errors for each
missing or mismatched file."""

import io
import json
import logging
import warnings
from pathlib import Path

import numpy as np
import pytest

from gbx_lightning.cli import main
from gbx_lightning.emu import VecGameBoy
from gbx_lightning.media import encode_png
from gbx_lightning.envs import GameBoyEnv
from gbx_lightning.envs.capture import capture_goal
from gbx_lightning.envs.goal import load_goal, save_goal
from gbx_lightning.roms import build_rom, orchard

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::DeprecationWarning")
ROUTE = ["up", "down", "down", "up", "left", "left", "right", "right", "right"]   # clears level 1


@pytest.fixture(scope="module")
def game(tmp_path_factory):
    """game.gb (the built-in game as a user's ROM file), start.state (PyBoy, level 1 in play) and goal.state
    (PyBoy, the LEVEL CLEAR banner up after the route)."""
    pytest.importorskip("pyboy")
    tmp = tmp_path_factory.mktemp("user")
    rom = tmp / "game.gb"
    rom.write_bytes(build_rom("orchard"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from pyboy import PyBoy
    logging.getLogger("pyboy").setLevel(logging.ERROR)
    pb = PyBoy(str(rom), window="null", sound_emulated=False, cgb=False, log_level="ERROR")
    pb.set_emulation_speed(0)
    mem = pb.memory
    pb.button_press("select")            # hold SELECT through PyBoy's boot ROM: the level select opens
    while mem[orchard.GAME_STATE] != orchard.STATE_SELECT:
        pb.tick(1, False, False)
    pb.button_release("select")
    pb.tick(16, False, False)
    pb.button_press("start")
    pb.tick(4, False, False)
    pb.button_release("start")
    while mem[orchard.GAME_STATE] != orchard.STATE_PLAY:
        pb.tick(1, False, False)
    pb.tick(2, True, False)
    with open(tmp / "start.state", "wb") as f:
        pb.save_state(f)
    for name in ROUTE:                   # the env's step: held 8 frames of 24
        pb.button_press(name)
        pb.tick(8, False, False)
        pb.button_release(name)
        pb.tick(16, True, False)
    assert mem[orchard.LEVEL_CLEAR] == 1, "the route did not clear level 1 on PyBoy"
    pb.tick(12, True, False)
    with open(tmp / "goal.state", "wb") as f:
        pb.save_state(f)
    pb.stop(save=False)
    return tmp


def test_pyboy_start_state_imports_as_the_level_start(game):
    gb = VecGameBoy(str(game / "game.gb"), 1)
    gb.load_pyboy_state(str(game / "start.state"))
    assert gb.read_memory(0, orchard.GAME_STATE, 1) == bytes([orchard.STATE_PLAY])
    assert gb.read_memory(0, orchard.LADDER_LEVEL, 1) == b"\x01"
    assert gb.read_memory(0, orchard.SEEDS_LEFT, 1) == b"\x04"


def test_capture_goal_from_savestates_and_fit_from_one_yaml(game, tmp_path):
    image, meta = capture_goal(str(game / "game.gb"), state=str(game / "goal.state"), frames=1,
                               region={"rows": [24, 40], "cols": [0, 80]}, random_start=str(game / "start.state"),
                               random_envs=16, random_steps=30)
    goal = tmp_path / "goal.png"
    save_goal(goal, image, meta)
    loaded = load_goal(goal)
    assert np.array_equal(loaded.image, load_goal(Path(orchard.__file__).parent / "orchard_clear.png").image)
    assert 0.05 < loaded.reward["tau"] < 0.4 and loaded.rom_sha256 == meta["rom_sha256"]
    assert json.loads(goal.with_suffix(".json").read_text())["source"]["state"] == str(game / "goal.state")
    # the env from the start state: the route reaches the captured goal
    env = GameBoyEnv(2, rom=str(game / "game.gb"),
                     task={"start": {"state": str(game / "start.state")}, "goal": str(goal)},
                     action_codec="dpad_noop", max_steps=20, cpu_threads=1)
    env.reset(seed=0)
    codes = {"up": 3, "down": 4, "left": 2, "right": 1}
    import torch

    for name in ROUTE:
        _, _, term, _, info = env.step(torch.tensor([codes[name], 0], dtype=torch.int32))
    assert term[0] and info["success"][0]
    cfg = tmp_path / "mygame.yaml"
    cfg.write_text(f"""
seed_everything: 0
trainer: {{max_steps: 4, accelerator: cpu, devices: 1, val_check_interval: 4, check_val_every_n_epoch: null}}
model:
  class_path: gbx_lightning.algos.A2CModule
  init_args:
    env:
      class_path: gbx_lightning.envs.GameBoyEnv
      init_args: {{rom: {game / 'game.gb'}, task: {{start: {{state: {game / 'start.state'}}}, goal: {goal}}},
                 action_codec: dpad_noop, stack_k: 2, max_steps: 10, cpu_threads: 1}}
    num_envs: 2
    policy:
      class_path: gbx_lightning.models.PixelCNNPolicy
      init_args: {{channels: [4, 8], hidden: 16}}
    update_every: 2
    eval_episodes: 2
progress_refresh: 0
""")
    assert main(["fit", "--config", str(cfg), "--runs_dir", str(tmp_path / "runs")]) == 0
    record = json.loads((tmp_path / "runs" / "mygame" / "version_0" / "train.jsonl").read_text().splitlines()[0])
    assert record["meta"]["rom_sha256"] == meta["rom_sha256"]


def _config_error(capsys, tmp_path, start_state=None, goal=None, **env_kwargs) -> str:
    task = ", ".join(([f"start: {{state: {start_state}}}"] if start_state else []) +
                     ([f"goal: {goal}"] if goal else []))
    options = ", ".join([f"{k}: {v}" for k, v in env_kwargs.items()] + ([f"task: {{{task}}}"] if task else []))
    code = main(["fit", "--config", str(Path(__file__).resolve().parents[1] / "configs" / "a2c.yaml"),
                 "--runs_dir", str(tmp_path / "runs"),
                 f"--model.env={{class_path: gbx_lightning.envs.GameBoyEnv, init_args: {{{options}}}}}"])
    err = [ln for ln in capsys.readouterr().err.strip().splitlines() if not ln.startswith("Seed set")]
    assert code == 2 and len(err) == 1 and "Traceback" not in err[0] and not (tmp_path / "runs").exists()
    return err[0]


def test_each_missing_or_mismatched_file_is_one_line(game, tmp_path, capsys):
    rom, start = game / "game.gb", game / "start.state"
    assert _config_error(capsys, tmp_path, rom=tmp_path / "nope.gb").startswith(
        "config error: model.env.rom is not a ROM we can run: no ROM file at")
    assert _config_error(capsys, tmp_path, rom=rom, start_state=tmp_path / "nope.state") == (
        f"config error: model.env.task.start.state does not exist: no savestate file at "
        f"'{tmp_path / 'nope.state'}'")
    small = tmp_path / "small.png"
    small.write_bytes(encode_png(np.zeros((10, 12), np.uint8)))
    assert _config_error(capsys, tmp_path, rom=rom, start_state=start, goal=small) == (
        f"config error: model.env.task.goal cannot be loaded: goal template {small}: expected a 80x72 image "
        f"(the 72x80 observation), got 12x10")
    other = tmp_path / "other.png"
    save_goal(other, np.zeros((72, 80), np.uint8), {"rom_sha256": "ab" * 32})
    assert _config_error(capsys, tmp_path, rom=rom, goal=other).startswith(
        f"config error: model.env.task.goal was captured from another ROM: {other} has ROM sha256 abababababab")
    # a state file of ours knows its ROM: one saved for another game is refused
    other_rom = tmp_path / "other.gb"
    data = bytearray(build_rom("orchard"))
    data[0x7FFF] ^= 0xFF
    other_rom.write_bytes(bytes(data))
    gb = VecGameBoy(str(other_rom), 1)
    gb.save_state(tmp_path / "theirs.npz")
    assert _config_error(capsys, tmp_path, rom=rom, start_state=tmp_path / "theirs.npz").startswith(
        f"config error: model.env.task.start.state cannot be loaded: {tmp_path / 'theirs.npz'} was saved for "
        f"another ROM")
    # a PyBoy state whose cartridge layout does not fit the ROM (an MBC1 cartridge's state for a ROM-only one)
    garbage = tmp_path / "garbage.state"
    garbage.write_bytes(io.BytesIO(b"\x1d" + b"\x00" * 100).getvalue())
    assert _config_error(capsys, tmp_path, rom=rom, start_state=garbage).startswith(
        "config error: model.env.task.start.state cannot be loaded:")
