"""The RAM goal (envs/features/ram_goal.py): an episode ends as a success where a RAM map field reaches a value, on
orchard's scripted level-1 route (the step the second seed is eaten, by hand), on hand-written RAM (a field of two
numbers, a template's success kept), on the full-game task's start (orchard/game), and bad specs as one-line errors."""

import pytest
import torch

from gbx_lightning.envs import GameBoyEnv, load_task
from gbx_lightning.envs.base import OptionError
from gbx_lightning.envs.features.base import Step
from gbx_lightning.envs.features.ram_goal import RamGoalFeature
from gbx_lightning.envs.ram_map import load_ram_map
from gbx_lightning.roms import orchard

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

NOOP, R, L, U, D = range(5)   # the dpad_noop codec
# Level 1 (tests/test_ram_rewards.py): from tile (10, 7) an unblocked action moves 2 tiles; U reaches (10, 5), a seed;
# D back to the start (10, 7); D to (10, 9), the second seed.
ROUTE = [U, D, D, U]


def test_the_second_seed_ends_the_episode_as_a_success():
    """ram_goal {seeds_eaten >= 2}: steps 1 and 2 go on (1 seed), step 3 eats the second and terminates with success
    and the bonus (2.0 + 0.1 for the seed); the next episode restarts from the level's start, whose seeds_eaten is 0
    (it counts since power-on), so step 4 (U: the first seed again) goes on with 1."""
    env = GameBoyEnv(2, task={"base": "orchard/level1", "start": {"variants": 1},
                              "ram_goal": {"field": "seeds_eaten", "at_least": 2},
                              "reward": [{"name": "success_bonus", "bonus": 2.0},
                                         {"name": "ram", "field": "seeds_eaten", "weight": 0.1}]},
                     action_codec="dpad_noop", cpu_threads=1)
    expected = [(0.1, False, 1), (0.0, False, 1), (2.1, True, 2), (0.1, False, 1)]
    for action, (reward, ended, seeds) in zip(ROUTE, expected):
        _, r, terminated, truncated, info = env.step(torch.full((2,), action, dtype=torch.int32))
        assert r.tolist() == pytest.approx([reward] * 2)
        assert terminated.tolist() == [ended] * 2 and info["success"].tolist() == [ended] * 2
        assert not truncated.any() and not info["failed"].any()
        if not ended:   # (an ended env is restored to the start at once: its counter reads 0)
            assert env.read_ram(orchard.SEEDS_EATEN)[:, 0].tolist() == [seeds] * 2


def test_the_field_sum_and_a_templates_success_by_hand():
    """A field of two numbers: its sum is compared (3 + 4 >= 7 in env 0, 3 + 3 in env 1); a success already set (by a
    goal template, which runs first) is kept where the RAM goal is not reached."""
    ram = torch.zeros(2, 0x2000, dtype=torch.uint8)

    class Env:
        device = torch.device("cpu")

        def read_ram(self, addr, length=1):
            return ram[:, addr - 0xC000:addr - 0xC000 + length]

    task = load_task({"base": "orchard/level1", "ram_map": {"fields": {"pair": {"address": 0xC010, "count": 2}}},
                      "ram_goal": {"field": "pair", "at_least": 7}, "reward": [{"name": "step_cost"}],
                      "counters": [], "heatmap": None})
    goal = RamGoalFeature(task, Env())
    ram[:, 0x10] = torch.tensor([3, 3], dtype=torch.uint8)
    ram[:, 0x11] = torch.tensor([4, 3], dtype=torch.uint8)
    no = torch.zeros(2, dtype=torch.bool)
    step = Step(None, None, None, None, terminated=no, success=torch.tensor([False, True]), failed=no, time_up=no)
    goal.after_step(step)
    assert step.success.tolist() == [True, True] and step.terminated.tolist() == [True, True]
    step = Step(None, None, None, None, terminated=no, success=no, failed=no, time_up=no)
    goal.after_step(step)
    assert step.success.tolist() == [True, False] and step.terminated.tolist() == [True, False]


def test_the_full_game_starts_in_play_on_its_first_maze():
    """orchard/game from power-on with no button held: level 4's maze (22 seeds, 2 beetles) in play, wLevel 0 (no
    maze cleared), not from the level select; its goal (wLevel >= 4) far away."""
    env = GameBoyEnv(1, task="orchard/game", action_codec="dpad_noop", cpu_threads=1, max_steps=1500)
    ram = env.read_ram(0xC100, 0x20)[0]
    at = {name: int(ram[addr - 0xC100]) for name, addr in (
        ("state", orchard.GAME_STATE), ("ladder", orchard.LADDER_LEVEL), ("seeds", orchard.SEEDS_LEFT),
        ("level", orchard.LEVEL), ("from_select", orchard.FROM_SELECT), ("beetles", orchard.NUM_HAZARDS))}
    assert at == {"state": orchard.STATE_PLAY, "ladder": 4, "seeds": orchard.LEVELS[4].seeds, "level": 0,
                  "from_select": 0, "beetles": orchard.LEVELS[4].beetles}
    assert env.feature("ram_goal").at_least == 4 and not env.feature("ram_goal").reached().any()


@pytest.mark.parametrize("spec,message", [
    ({"ram_goal": {"field": "level", "at_least": 0}}, "task.ram_goal.at_least must be an int >= 1, got 0"),
    ({"ram_goal": {"field": "level"}}, "task.ram_goal.at_least is required by RamGoal (missing)"),
    ({"ram_goal": {"field": "level", "at_least": 1, "x": 2}},
     "task.ram_goal.x is not a field of RamGoal; fields: field, at_least"),
    ({"ram_goal": 7}, "task.ram_goal must be a mapping of RamGoal fields (field, at_least), got 7"),
    ({"goal": None, "reward": [{"name": "success_bonus"}]},
     "task.reward[0] (success_bonus) needs a way to succeed: a goal template (tools/capture_goal.py makes one) or a "
     "ram_goal (a RAM map field's value)"),
])
def test_bad_ram_goals_are_one_line_errors(spec, message):
    with pytest.raises(OptionError) as err:
        load_task({"base": "orchard/level1", **spec})
    assert str(err.value) == message


def test_an_unknown_field_is_named():
    with pytest.raises(OptionError, match=r"^task\.ram_goal\.field is not a field of the task's RAM map \(orchard\): "
                                          r"'nope'"):
        load_task({"base": "orchard/level1", "ram_goal": {"field": "nope", "at_least": 1}})
    load_task({"base": "orchard/level1", "goal": None, "ram_goal": {"field": "level", "at_least": 1},
               "reward": [{"name": "success_bonus"}]})   # a RAM goal is a way to succeed
