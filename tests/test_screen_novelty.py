"""screen_novelty (envs/screen_novelty.py) against hand-computed numbers: block levels of hand-made screens, the
linear hash, first visits per episode with episode ends, the run's 1/sqrt(n) counts across envs, the ignored box,
a resume that continues identically, bad parameters in one line, and on orchard: standing still pays nothing (the
start screen is marked), a step onto a new screen pays."""

import pytest
import torch

from gbx_lightning.envs import GameBoyEnv
from gbx_lightning.envs.reward_transforms import (RewardContext, RewardSpecError, build_reward_pipeline,
                                                  check_reward_spec)
from gbx_lightning.envs.screen_novelty import ScreenNovelty, hash_cells, screen_cells

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def _screen(n=1, fill=0):
    return torch.full((n, 72, 80), fill, dtype=torch.uint8)


def test_block_levels_by_hand():
    s = _screen()
    s[0, 0:8, 0:8] = 3                   # block (0, 0): mean 3 -> the top level, 3
    s[0, 0:4, 8:16] = 1                  # block (0, 1): half 1, half 2 -> mean 1.5 -> floor(1.5 * 4 / 3) = 2
    s[0, 4:8, 8:16] = 2
    s[0, 64:72, 72:80] = 1               # block (8, 9), the last: mean 1 -> floor(4 / 3) = 1
    s[0, 8, 0] = 3                       # block (1, 0): one pixel of 64 at 3 -> mean 3/64 -> level 0
    cells = screen_cells(s, 8, 4)
    assert cells.shape == (1, 90)
    expect = torch.zeros(90, dtype=torch.int64)
    expect[0], expect[1], expect[89] = 3, 2, 1
    assert cells[0].tolist() == expect.tolist()
    assert screen_cells(s, 8, 2)[0, :2].tolist() == [1, 1]          # levels 2: mean 3 -> 1, mean 1.5 -> 1
    assert screen_cells(s, 4, 4).shape == (1, 18 * 20)
    keep = torch.ones(72, 80)
    keep[0:8, 0:8] = 0
    assert screen_cells(s, 8, 4, keep)[0, 0] == 0                   # an ignored box counts as shade 0


def test_hash_is_the_linear_sum_mod_two_to_the_bits():
    cells = torch.tensor([[1, 2, 3], [0, 0, 1]])
    coef = torch.tensor([5, 1000, 70000])
    # 1*5 + 2*1000 + 3*70000 = 212005; mod 2**16 = 212005 - 3 * 65536 = 15397
    assert hash_cells(cells, coef, 16).tolist() == [15397, 70000 - 65536]
    assert hash_cells(cells, coef, 20).tolist() == [212005, 70000]


class ScreenStub:
    """An env as the item sees it: observe() gives [N, K, 72, 80] frame stacks whose newest frame a test sets."""

    def __init__(self, n):
        self.stack = torch.zeros((n, 2, 72, 80), dtype=torch.uint8)

    def observe(self):
        return self.stack


def _ctx(env, screen, done=()):
    n = screen.shape[0]
    ended = torch.zeros(n, dtype=torch.bool)
    ended[list(done)] = True
    no = torch.zeros(n, dtype=torch.bool)
    return RewardContext(env, no, ended, no, no, torch.zeros(n), torch.zeros(n), screen)


def _room(n, where):
    """Screens of n envs: a dark 16x16-pixel player (an 8x8 obs block of shade 3) at block column where[i]."""
    s = _screen(n)
    for i, col in enumerate(where):
        s[i, 32:40, 8 * col:8 * col + 8] = 3
    return s


def test_first_visits_per_episode_with_episode_ends():
    env = ScreenStub(2)
    pipe = build_reward_pipeline([{"name": "screen_novelty", "weight": 0.5}], 2, torch.device("cpu"), {})
    env.stack[:, -1] = _room(2, [0, 0])
    pipe.reset()
    pipe.sync(env)                                        # both start at column 0: marked, not paid
    steps = [([1, 0], ()), ([0, 0], ()), ([2, 1], ()), ([1, 1], (1,)), ([1, 0], ())]
    rewards = []
    for where, done in steps:
        screen = _room(2, where)
        r, _ = pipe(_ctx(env, screen, done))
        rewards.append(r.tolist())
        # the env's resets: env 1 ended at step 4 and starts again at column 0 (marked by sync)
        env.stack[:, -1] = _room(2, [0 if i in done else w for i, w in enumerate(where)])
        pipe.sync(env)
    # env 0: col 1 new, col 0 its start, col 2 new, col 1 seen, col 1 seen
    # env 1: col 0 start, col 0, col 1 new, col 1 seen (episode ends), col 0 = the new episode's start (marked)
    assert rewards == [[0.5, 0.0], [0.0, 0.0], [0.5, 0.5], [0.0, 0.0], [0.0, 0.0]]
    item = pipe.items[0][1]
    assert item.visited_count().tolist() == [3, 1]


def test_run_counts_pay_one_over_sqrt_n_across_envs_and_episodes():
    env = ScreenStub(3)
    pipe = build_reward_pipeline([{"name": "screen_novelty", "weight": 0.0, "count_weight": 1.0}], 3,
                                 torch.device("cpu"), {})
    pipe.reset()
    pipe.sync(env)   # sync marks episode cells only: counts come from steps
    r, _ = pipe(_ctx(env, _room(3, [1, 1, 2])))        # column 1 twice in one step: n = 2 for both; column 2: n = 1
    assert r.tolist() == pytest.approx([2 ** -0.5, 2 ** -0.5, 1.0])
    r, _ = pipe(_ctx(env, _room(3, [1, 3, 2]), done=(0, 1, 2)))   # column 1: n = 3, new column 3: 1, column 2: 2
    assert r.tolist() == pytest.approx([3 ** -0.5, 1.0, 2 ** -0.5])
    r, _ = pipe(_ctx(env, _room(3, [1, 1, 1])))        # counts survive episode ends: n = 4, 5, 6 -> all 1/sqrt(6)
    assert r.tolist() == pytest.approx([6 ** -0.5] * 3)


def test_ignored_box_makes_the_player_invisible():
    env = ScreenStub(1)
    pipe = build_reward_pipeline([{"name": "screen_novelty", "ignore": [32, 40, 0, 80]}], 1, torch.device("cpu"), {})
    pipe.reset()
    pipe.sync(env)
    for col in range(5):     # the player's row is ignored: every screen is the start screen
        r, _ = pipe(_ctx(env, _room(1, [col])))
        assert r.tolist() == [0.0]
    screen = _room(1, [0])
    screen[0, 0:8, 0:8] = 3  # outside the box: new
    assert pipe(_ctx(env, screen))[0].tolist() == [1.0]


def test_state_round_trip_continues_identically():
    spec = [{"name": "screen_novelty", "weight": 1.0, "count_weight": 0.5, "bits": 1024, "count_bits": 4096}]
    env = ScreenStub(2)
    a = build_reward_pipeline(spec, 2, torch.device("cpu"), {})
    a.reset()
    a.sync(env)
    for where in ([1, 2], [3, 2]):
        a(_ctx(env, _room(2, where)))
    b = build_reward_pipeline(spec, 2, torch.device("cpu"), {})
    b.load_state_dict(a.state_dict())
    for where, done in (([1, 4], ()), ([5, 5], (0,)), ([1, 2], ())):
        ra, _ = a(_ctx(env, _room(2, where), done))
        rb, _ = b(_ctx(env, _room(2, where), done))
        assert torch.equal(ra, rb)
    # without the envs' state (a checkpoint over its cap), the run's counts are still kept
    assert set(a.state_dict(per_env=False)[a.labels[0]]) == {"counts"}
    small = build_reward_pipeline([{**spec[0], "bits": 2048}], 2, torch.device("cpu"), {})
    with pytest.raises(Exception, match="visited must be torch.int64 \\[2, 32\\]"):
        small.load_state_dict(a.state_dict())


@pytest.mark.parametrize("item, field, words", [
    ({"block": 3}, "reward[0].block", "must be one of [2, 4, 8]"),
    ({"levels": 1}, "reward[0].levels", "must be an int in [2, 16]"),
    ({"bits": 1000}, "reward[0].bits", "must be a power of two"),
    ({"ignore": [0, 80, 0, 10]}, "reward[0].ignore", "0 <= r0 < r1 <= 72"),
    ({"count_weight": "x"}, "reward[0].count_weight", "must be a number"),
    ({"radius": 2}, "reward[0].radius", "is not a parameter of screen_novelty"),
])
def test_bad_parameters_in_one_line(item, field, words):
    with pytest.raises(RewardSpecError) as err:
        check_reward_spec([{"name": "screen_novelty", **item}], has_goal=False, has_fail=False)
    assert err.value.field == field and words in err.value.message and "\n" not in str(err.value)


def test_on_orchard_standing_still_pays_nothing_and_a_move_pays():
    """Level 1 without beetles: NOOP keeps the start screen (marked at the episode's start: 0); UP moves the forager
    two tiles (tests/test_ram_rewards.py's route): a new screen, paid once; NOOP there again: 0."""
    task = {"base": "orchard/level1", "start": {"variants": 1},
            "reward": [{"name": "screen_novelty", "weight": 1.0, "block": 4}]}
    env = GameBoyEnv(2, task=task, action_codec="dpad_noop", cpu_threads=1)
    env.reset(seed=0)
    rewards = []
    for action in (0, 0, 3, 0, 0):     # dpad_noop: 0 noop, 3 up
        _, reward, _, _, _ = env.step(torch.full((2,), action, dtype=torch.int32))
        rewards.append(reward.tolist())
    assert rewards == [[0.0, 0.0], [0.0, 0.0], [1.0, 1.0], [0.0, 0.0], [0.0, 0.0]]
    item = env.reward_pipeline.items[0][1]
    assert isinstance(item, ScreenNovelty) and item.visited_count().tolist() == [2, 2]
