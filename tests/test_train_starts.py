"""Training-only starts (``task.train_starts``) and a start's RAM writes (``start.ram``): orchard's full game with
its fourth maze as a curriculum start (level 7 from the level select, numbered as the full game's fourth maze by two
RAM writes), checked in the start cache's rows, in where training and evaluation resets start, in the pool's score
column, in the game's own numbering from there (its goal, wLevel >= 4, reached only by clearing that maze), and bad
specs as one-line errors."""

import pytest
import torch

from gbx_lightning.envs import GameBoyEnv, load_task
from gbx_lightning.envs.base import OptionError
from gbx_lightning.roms import orchard

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

LEVEL7 = load_task("orchard/level7").start      # the level select's inputs to ladder level 7, in play


def maze4(**ram) -> dict:
    """Level 7 from the level select, renumbered as the full game's fourth maze (3 cleared before it)."""
    return {"inputs": LEVEL7.inputs, "frames": LEVEL7.frames, "variants": 2,
            "ram": {"from_select": 0, "level": 3, **ram}, "score": 9.0}


def game_env(n: int, share: float = 0.5, **ram) -> GameBoyEnv:
    task = {"base": "orchard/game", "start": {"variants": 2},
            "train_starts": {"share": share, "starts": [maze4(**ram)]},
            "pool": {"score": {"mazes": 1.0}, "sample": 0.0, "max_mb": 1}}
    return GameBoyEnv(n, task=task, action_codec="dpad_noop", cpu_threads=1, max_steps=400)


def test_rows_draws_and_scores():
    """Rows 0-1: the game from power-on (wLevel 0, ladder 4); rows 2-3: the written maze 4 (wLevel 3, ladder 7, the
    level select's numbering off). Training resets start from both kinds (share 0.5 of 256 draws: 128 +- 40),
    evaluation resets (train(False)) from the game's start alone. The pool's score column holds the recipe's 9.0."""
    env = game_env(256)
    assert (env.num_task_starts, env.num_start_states) == (2, 4)
    wram = env.cache.snapshot.arrays["wram"].numpy()
    for row, (level, ladder) in enumerate([(0, 4), (0, 4), (3, 7), (3, 7)]):
        got = [int(wram[row, a - 0xC000]) for a in (orchard.LEVEL, orchard.LADDER_LEVEL, orchard.FROM_SELECT,
                                                    orchard.GAME_STATE)]
        assert got == [level, ladder, 0, orchard.STATE_PLAY], row
    env.reset(seed=3)
    trained = int((env.slots >= 2).sum())
    assert 88 <= trained <= 168
    assert env.read_ram(orchard.LADDER_LEVEL)[:, 0].eq(7).sum().item() == trained   # restored as drawn
    env.train(False)
    env.reset(seed=3)
    assert env.slots.max().item() < 2 and env.read_ram(orchard.LADDER_LEVEL)[:, 0].eq(4).all()
    assert env.cache.columns["score"][:4].tolist() == [0.0, 0.0, 9.0, 9.0]


def test_the_game_counts_on_from_the_written_maze():
    """From the written maze 4 with its seeds set to 0 (a third write), the game clears it on the next frame and
    counts wLevel 3 -> 4 when the LEVEL CLEAR banner ends: the full game's goal (wLevel >= 4), a success, a few steps
    later, not at once. (Without the level-number writes the level select's numbering, wLevel 6 on level 7, would
    meet the goal on the first step.)"""
    env = game_env(2, share=1.0, seeds_left=0)
    assert env.read_ram(orchard.LEVEL)[:, 0].tolist() == [3, 3]
    ended, success, failed = (torch.zeros(2, dtype=torch.bool) for _ in range(3))
    steps = 0
    for steps in range(1, 61):   # the two variants end a step apart at most
        _, _, terminated, truncated, info = env.step(torch.zeros(2, dtype=torch.int32))
        first = (terminated | truncated) & ~ended
        success |= first & info["success"]
        failed |= first & (info["failed"] | truncated)
        ended |= first
        if ended.all():
            break
    assert success.all() and not failed.any()
    assert 1 < steps < 60


@pytest.mark.parametrize("spec,message", [
    ({"share": 1.5, "starts": [{}]}, "task.train_starts.share must be a number in [0.0, 1.0], got 1.5"),
    ({"starts": []}, "task.train_starts.starts must be a non-empty list of Start recipes, got []"),
    ({"starts": [{"ram": {"nope": 1}}]}, "task.train_starts.starts[0].ram.nope is not a field of the task's RAM map "
                                         "(orchard): 'nope'"),
    ({"starts": [{"ram": {"level": 256}}]}, "task.train_starts.starts[0].ram.level must be an int in 0..255 (1 byte), "
                                            "got 256"),
    ({"starts": [{"ram": {"score": 1}}]}, "task.train_starts.starts[0].ram.score must be a field of one binary number "
                                          "to be written, 'score' is BCD"),
    ({"starts": [{"ram": {0xA000: 1}}]}, "task.train_starts.starts[0].ram.40960 must be a RAM map field name or a "
                                         "WRAM address (0xC000..0xDFFF), got 40960"),
    ({"starts": [{"score": -1}]}, "task.train_starts.starts[0].score must be a number >= 0.0, got -1"),
    ({"starts": [{"frame": 3}]}, "task.train_starts.starts[0].frame is not a field of Start; fields: state, inputs, "
                                 "frames, variants, variant_frames, ram, score"),
    ("maze 4", "task.train_starts must be a mapping {starts: [Start recipe or task, ...], share: 0..1} or null, got "
               "'maze 4'"),
    ({"starts": ["orchard/maze9"]}, "task.train_starts.starts[0] is neither a built-in task"),
])
def test_bad_train_starts_are_one_line_errors(spec, message):
    with pytest.raises(OptionError) as err:
        load_task({"base": "orchard/game", "train_starts": spec})
    assert str(err.value).startswith(message), str(err.value)


def test_a_missing_train_start_state_is_named_before_any_frame(tmp_path):
    with pytest.raises(OptionError, match=r"^task\.train_starts\.starts\[0\]\.state does not exist"):
        GameBoyEnv(1, task={"base": "orchard/game",
                            "train_starts": {"starts": [{"state": str(tmp_path / "nope.state")}]}})


def test_a_learners_evaluation_starts_from_the_task_start_alone():
    """The learner's evaluation env is in eval() mode: with every training reset drawn from the written maze 4
    (share 1.0), each evaluation episode still starts at the game's power-on start (ladder level 4), and the
    training env's at maze 4."""
    from functools import partial

    from gbx_lightning.algos import PPOModule
    from gbx_lightning.models import PixelCNNPolicy

    env = partial(GameBoyEnv, task={"base": "orchard/game", "start": {"variants": 2},
                                    "train_starts": {"share": 1.0, "starts": [maze4()]}},
                  action_codec="dpad_noop", cpu_threads=1, max_steps=3)
    module = PPOModule(env=env, num_envs=2, policy=partial(PixelCNNPolicy), rollout_steps=4, eval_episodes=8, seed=0)
    eval_env = module._get_eval_env()
    assert eval_env.training is False
    eval_env.reset(seed=0)   # as each evaluation (data.EvalEpisodes) begins
    assert eval_env.slots.max().item() < 2 and eval_env.read_ram(orchard.LADDER_LEVEL)[:, 0].eq(4).all()
    train_env = module._make_env(4)
    assert train_env.training and train_env.read_ram(orchard.LADDER_LEVEL)[:, 0].eq(7).all()


@pytest.mark.parametrize("maze", [2, 3, 4])
def test_the_maze_tasks_start_each_maze_numbered_as_the_game_does(maze):
    """orchard/game_maze2..4: ladder level maze + 3 in play with its seeds and beetles, wLevel maze - 1 (the mazes
    before it cleared), not numbered by the level select; success when it is cleared (wLevel >= maze). Named in
    train_starts, a task gives its start recipe (the same rows as the recipe spelt out)."""
    env = GameBoyEnv(1, task=f"orchard/game_maze{maze}", action_codec="dpad_noop", cpu_threads=1)
    ram = env.read_ram(0xC100, 0x20)[0]
    got = {name: int(ram[addr - 0xC100]) for name, addr in (
        ("state", orchard.GAME_STATE), ("ladder", orchard.LADDER_LEVEL), ("seeds", orchard.SEEDS_LEFT),
        ("level", orchard.LEVEL), ("from_select", orchard.FROM_SELECT), ("beetles", orchard.NUM_HAZARDS))}
    level = maze + 3
    assert got == {"state": orchard.STATE_PLAY, "ladder": level, "seeds": orchard.LEVELS[level].seeds,
                   "level": maze - 1, "from_select": 0, "beetles": orchard.LEVELS[level].beetles}
    assert env.feature("ram_goal").at_least == maze
    if maze == 4:
        named = load_task({"base": "orchard/game", "train_starts": {"starts": ["orchard/game_maze4"]}})
        assert named.train_starts.starts[0] == load_task("orchard/game_maze4").start
        assert named.train_starts.starts[0].ram == maze4()["ram"] and named.train_starts.starts[0].score == 73


def test_the_random_policy_tool_plays_the_task_start_alone(tmp_path, capsys):
    """tools/random_policy.py on a config whose every training reset would start at a maze 4 with no seed left (a
    success within a few steps): its episodes start at power-on instead, so none succeeds within 30 steps."""
    import sys
    from pathlib import Path

    import yaml
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
    import random_policy

    task = {"base": "orchard/game", "train_starts": {"share": 1.0, "starts": [maze4(seeds_left=0)]}}
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump({"model": {"init_args": {"env": {
        "class_path": "gbx_lightning.envs.GameBoyEnv",
        "init_args": {"task": task, "action_codec": "dpad_noop", "max_steps": 30, "cpu_threads": 1}}}}}))
    assert random_policy.main([str(config), "--episodes", "8", "--seed", "0"]) == 0
    assert "success_rate 0.0000" in capsys.readouterr().out
