"""tools/episode_ends.py: the cell each episode's last step began on, by outcome, on orchard's level 7 (start tile
(x, y) = (9, 7); row 7 is a wall at x = 6, so LEFT held walks to (7, 7) and stops; no beetle reaches row 7's
middle, so a NOOP or LEFT player only runs out of time)."""
from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import pytest
import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))

import episode_ends  # noqa: E402
from gbx_lightning.envs import GameBoyEnv  # noqa: E402

# beetles' lanes on level 7 as (row, col) tiles: columns 1 and 18 (rows 1-14), row 4 (cols 7-14), row 11 (cols 14-16)
LANES = ([(r, 1) for r in range(1, 15)] + [(r, 18) for r in range(1, 15)] + [(4, c) for c in range(7, 15)] +
         [(11, c) for c in range(14, 17)])


class Always(nn.Module):
    def __init__(self, action: int | None, num_actions: int):
        super().__init__()
        self.action, self.num_actions = action, num_actions

    def forward(self, obs):
        logits = torch.zeros(obs.shape[0], self.num_actions)
        if self.action is not None:
            logits[:, self.action] = 10.0
        return logits, torch.zeros(obs.shape[0])


def _env(n: int, max_steps: int) -> GameBoyEnv:
    return GameBoyEnv(n, "cpu", task="orchard/level7", action_codec="dpad_noop", max_steps=max_steps,
                      frames_per_step=8, release_after_frames=8).eval()


def test_a_standing_or_walled_player_runs_out_of_time_where_it_stands():
    env = _env(4, 20)
    still = episode_ends.episode_ends(env, Always(env.action_names.index("-"), env.num_actions), seed=3, greedy=True)
    assert still == {"failed": Counter(), "success": Counter(), "time_up": Counter({(7, 9): 4})}
    left = episode_ends.episode_ends(env, Always(env.action_names.index("left"), env.num_actions), seed=3, greedy=True)
    assert left["time_up"] == Counter({(7, 7): 4}) and not left["failed"] and not left["success"]


def test_random_episodes_die_beside_a_beetles_lane():
    """Every random episode ends (a beetle, within 400 steps); where one died the last step began at most 2 tiles
    from a lane (8 frames move the player up to 2 tiles, a touch is closer than 6 pixels)."""
    env = _env(8, 400)
    ends = episode_ends.episode_ends(env, Always(None, env.num_actions), seed=5)
    assert sum(ends["failed"].values()) == 8 and not ends["success"] and not ends["time_up"]
    for (row, col) in ends["failed"]:
        assert min(abs(row - r) + abs(col - c) for r, c in LANES) <= 2, (row, col)


def test_a_task_without_a_heatmap_is_refused_in_one_line():
    env = GameBoyEnv(1, "cpu", task={"base": "orchard/level1", "heatmap": None}, action_codec="dpad_noop")
    with pytest.raises(ValueError, match=r"^episode_ends: the task has no heatmap"):
        episode_ends.episode_ends(env, Always(None, env.num_actions), seed=0)


def test_a_later_stage_keeps_the_configs_task_around_it(tmp_path):
    """--task over a config's task: a name becomes its base (the config's reward, which the observation may need,
    stays), an inline mapping replaces fields; a config naming its task by a string gets it as the base."""
    config = tmp_path / "c.yaml"
    config.write_text("model:\n  init_args:\n    env:\n      init_args:\n        task:\n          base: orchard/game\n"
                      "          reward: [{name: step_cost}]\n")
    assert episode_ends.over_task(str(config), None) is None
    assert episode_ends.over_task(str(config), "orchard/game_maze3") == {"base": "orchard/game_maze3",
                                                                          "reward": [{"name": "step_cost"}]}
    assert episode_ends.over_task(str(config), "{ram_goal: {field: level, at_least: 1}}") == {
        "base": "orchard/game", "reward": [{"name": "step_cost"}], "ram_goal": {"field": "level", "at_least": 1}}
    config.write_text("model:\n  init_args:\n    env:\n      init_args:\n        task: orchard/game\n")
    assert episode_ends.over_task(str(config), "orchard/game_maze2") == {"base": "orchard/game_maze2"}


def test_each_task_given_prints_its_own_block(capsys):
    """--task twice: one block per task, each naming it; random actions from both mazes' starts end every
    episode (a beetle, or a clear) or run out, 4 episodes in each block."""
    code = episode_ends.main(["configs/orchard_game_ppo.yaml", "--episodes", "4", "--top", "1",
                              "--task", "orchard/game_maze2", "--task", "orchard/game_maze4"])
    out = capsys.readouterr().out.splitlines()
    assert code == 0
    heads = [i for i, line in enumerate(out) if line.startswith("random policy: 4 episodes of orchard_game_ppo.yaml")]
    assert [out[i].split(";")[0].split(" on ")[1] for i in heads] == ["orchard/game_maze2", "orchard/game_maze4"]
    for start, end in zip(heads, heads[1:] + [len(out)]):
        counts = [int(line.split()[1].rstrip(":")) for line in out[start + 1:end]]
        assert sum(counts) == 4
