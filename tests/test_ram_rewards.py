"""The RAM map's reward items (envs/ram_rewards.py) against hand-computed numbers: explore on the scripted route
through orchard's level 1 (the tiles it stands on are known from the game's rules) and on hand-written positions
(episode ends, novelty across envs and episodes), ram_bits / ram_sum / ram_max in each mode, Pokemon Red's reward
list on hand-written RAM, an exact resume of every item's state, and a user class's own weight applied once."""

import io

import pytest
import torch

from gbx_lightning.envs import GameBoyEnv, load_task
from gbx_lightning.envs.ram_map import load_ram_map
from gbx_lightning.envs.reward_transforms import RewardContext, build_reward_pipeline
from gbx_lightning.envs.rewards import cell_index

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

NOOP, R, L, U, D = range(5)   # the dpad_noop codec
# Level 1 is a room, columns 7-13 and rows 5-9; the player starts on tile (10, 7). An action holds its direction 8
# frames and a tile takes 4 (2 pixels a frame), so an unblocked action moves 2 tiles: U (10,5), D (10,7), D (10,9),
# U (10,7), L (8,7), L (7,7: the wall stops it), R (9,7), R (11,7), R (13,7): the fourth seed, LEVEL CLEAR ends step 9.
LEVEL1_ROUTE = [U, D, D, U, L, L, R, R, R]
NEW_TILE = [1, 0, 1, 0, 1, 1, 1, 1, 1]           # (10,5) new, (10,7) the start, (10,9) new, (10,7), then all new


class Stub:
    """An env as reward items see it: WRAM bytes of N envs that a test writes by hand."""

    def __init__(self, n):
        self.ram = torch.zeros(n, 0x2000, dtype=torch.uint8)

    def read_ram(self, addr, length=1):
        return self.ram[:, addr - 0xC000:addr - 0xC000 + length]

    def poke(self, addr, values):
        self.ram[:, addr - 0xC000] = torch.tensor(values, dtype=torch.uint8)


def _ctx(env, n, done=()):
    flags = torch.zeros(n, dtype=torch.bool)
    flags[list(done)] = True
    no = torch.zeros(n, dtype=torch.bool)
    return RewardContext(env, no, flags, no, no, torch.zeros(n), torch.zeros(n))


def _pipeline(spec, n, ram_map):
    pipe = build_reward_pipeline(spec, n, torch.device("cpu"), {}, ram_map=load_ram_map(ram_map))
    return pipe


def _step(pipe, env, n, done=()):
    """One step as GameBoyEnv runs it: the items, then (after the env's resets) sync."""
    reward, _ = pipe(_ctx(env, n, done))
    return reward


# ---------------------------------------------------------------------------------------------- explore
def test_explore_pays_each_new_tile_of_the_scripted_route_once():
    """Explore on (player_y, player_x) alone: weight on steps that stand on a tile new to the episode (the start's
    is not paid), 7 of the route's 9; the next episode starts afresh: its first U pays again."""
    task = {"base": "orchard/level1", "start": {"variants": 1},
            "reward": [{"name": "explore", "fields": ["player_y", "player_x"], "weight": 0.5}]}
    env = GameBoyEnv(2, task=task, action_codec="dpad_noop", cpu_threads=1)
    env.reset(seed=0)
    rewards = []
    for action in LEVEL1_ROUTE + [U]:
        _, reward, terminated, _, _ = env.step(torch.full((2,), action, dtype=torch.int32))
        rewards.append(reward.tolist())
    assert rewards == [[0.5 * k] * 2 for k in NEW_TILE] + [[0.5, 0.5]]
    assert terminated.tolist() == [False, False]


def test_explore_by_hand_with_episode_ends_and_run_novelty():
    """Two envs on hand-written (y, x): w = 1 per new cell of the episode, novelty 10 on a cell no env visited before
    in the run (both envs reaching one in the same step are both paid), start cells marked unpaid."""
    env = Stub(2)
    pipe = _pipeline([{"name": "explore", "fields": ["y", "x"], "weight": 1.0, "novelty_weight": 10.0}], 2,
                     {"fields": {"y": 0xC000, "x": 0xC001}})
    pipe.reset()
    pipe.sync(env)                                     # both at (0, 0)
    env.poke(0xC001, [1, 1])                           # both to (0, 1): new to each, new to the run (both paid)
    assert _step(pipe, env, 2).tolist() == [11.0, 11.0]
    pipe.sync(env)
    env.poke(0xC001, [0, 2])                           # env 0 back at its start; env 1 to (0, 2): new, novel
    assert _step(pipe, env, 2).tolist() == [0.0, 11.0]
    pipe.sync(env)
    env.poke(0xC001, [2, 1])                           # env 0 to (0, 2): new to it, seen in the run; env 1 back
    assert _step(pipe, env, 2, done=[1]).tolist() == [1.0, 0.0]   # env 1's episode ends here
    env.poke(0xC001, [2, 0])                           # env 1 reset to (0, 0)
    pipe.sync(env)
    env.poke(0xC001, [2, 1])                           # env 1's new episode: (0, 1) is new again, not novel
    assert _step(pipe, env, 2).tolist() == [0.0, 1.0]
    explore = pipe.items[0][1]
    assert explore.visited_count().tolist() == [3, 2]  # env 0: (0,0) (0,1) (0,2); env 1: (0,0) (0,1)


def _hash32(values, log2_bits):
    """rewards.cell_index's hashed form, written out from its docstring in plain Python."""
    h = 0
    for v in values:
        h = ((h * 1000003) & 0xFFFFFFFF) ^ v
    for _ in range(2):
        h = (((h >> 16) ^ h) * 0x45D9F3B) & 0xFFFFFFFF
    return ((h >> 16) ^ h) & ((1 << log2_bits) - 1)


def test_cells_are_exact_when_the_fields_fit_and_hashed_otherwise():
    values = torch.tensor([[3, 200, 17], [0, 0, 0], [255, 255, 255]])
    assert cell_index(values, [8, 8, 8], 24).tolist() == [(3 << 16) | (200 << 8) | 17, 0, (1 << 24) - 1]
    got = cell_index(values, [8, 8, 8], 16).tolist()
    assert got == [_hash32(row, 16) for row in values.tolist()] and all(0 <= g < 1 << 16 for g in got)


# ---------------------------------------------------------------------------------------------- ram_bits, ram_sum...
@pytest.mark.parametrize("mode, gains", [("record", [1, 0, 1, 0, 1]), ("increase", [1, 0, 3, 0, 1]),
                                         ("delta", [1, -2, 3, 0, 1])])
def test_ram_bits_by_mode(mode, gains):
    """A flag byte from 0b011 (2 bits set): 0b111 (3), 0b001 (1), 0b1111 (4), 0b1111 (4), then the episode ends and
    the next starts at 0b0 (0 bits) and sets one (0b1000). record: rises above the episode's most; increase: every
    rise; delta: every change."""
    env = Stub(1)
    pipe = _pipeline([{"name": "ram_bits", "field": "flags", "weight": 2.0, "mode": mode}], 1,
                     {"fields": {"flags": 0xC010}})
    env.poke(0xC010, [0b011])
    pipe.reset()
    pipe.sync(env)
    got = []
    for value, done in ((0b111, False), (0b001, False), (0b1111, False), (0b1111, True)):
        env.poke(0xC010, [value])
        got.append(_step(pipe, env, 1, done=[0] if done else []).item())
        if done:
            env.poke(0xC010, [0])
        pipe.sync(env)
    env.poke(0xC010, [0b1000])
    got.append(_step(pipe, env, 1).item())
    assert got == [2.0 * g for g in gains]


def test_ram_sum_and_ram_max_count_only_the_party_and_clip():
    """Levels of a 3-slot party 4 bytes apart with a count byte: slots past the count are stale and left out. Levels
    [5, 9, 40] with 2 in the party: sum 14, max 9; a level-up to [6, 9, 40]: sum +1; a third member at 12: sum +12,
    max +3; record mode, weights 1; the clipped sum pays at most 5."""
    env = Stub(1)
    ram_map = {"fields": {"levels": {"address": 0xC100, "count": 3, "stride": 4}, "count": 0xC0FF}}
    pipe = _pipeline([{"name": "ram_sum", "fields": ["levels"], "count_field": "count"},
                      {"name": "ram_max", "fields": ["levels"], "count_field": "count"},
                      {"name": "ram_sum", "fields": ["levels"], "count_field": "count", "clip": [0, 5]}], 1, ram_map)
    terms = [item for _, item in pipe.items]

    def levels(values, count):
        for k, v in enumerate(values):
            env.poke(0xC100 + 4 * k, [v])
        env.poke(0xC0FF, [count])

    levels([5, 9, 40], 2)
    pipe.reset()
    pipe.sync(env)
    assert [t.measure(env).item() for t in terms] == [14, 9, 14]
    levels([6, 9, 40], 2)
    assert [t(_ctx(env, 1)).item() for t in terms] == [1.0, 0.0, 1.0]
    pipe.sync(env)
    levels([6, 9, 12], 3)
    assert [t(_ctx(env, 1)).item() for t in terms] == [12.0, 3.0, 5.0]


def test_pokered_rewards_on_hand_written_ram():
    """pokered/explore's reward list on Pokemon Red's RAM written by hand (no ROM needed): a step to a new (map, y, x)
    pays 0.01, an event flag 0.5, a badge 10, a party level record 0.5 each, healing 0.001 per HP (big endian) up to
    0.1 a step."""
    task = load_task("pokered/explore")
    env = Stub(1)
    pipe = build_reward_pipeline(task.reward, 1, torch.device("cpu"), {}, ram_map=task.ram_map)
    f = task.ram_map.fields
    env.poke(f["party_count"].address, [1])
    env.poke(f["party_levels"].address, [5])
    env.poke(f["party_hp"].address + 1, [16])          # 16 HP: high byte 0, low byte 16
    env.poke(f["map"].address, [12])
    pipe.reset()
    pipe.sync(env)
    env.poke(f["x"].address, [1])                     # a new tile
    assert _step(pipe, env, 1).item() == pytest.approx(0.01)
    pipe.sync(env)
    env.poke(f["event_flags"].address + 100, [0b100])  # an event
    env.poke(f["badges"].address, [0b1])               # the Boulder Badge
    assert _step(pipe, env, 1).item() == pytest.approx(0.5 + 10.0)
    pipe.sync(env)
    env.poke(f["party_levels"].address, [7])           # two levels
    env.poke(f["party_hp"].address + 1, [32])          # +16 HP
    assert _step(pipe, env, 1).item() == pytest.approx(2 * 0.5 + 16 * 0.001)
    pipe.sync(env)
    env.poke(f["party_hp"].address, [1])               # +256 HP (the high byte): clipped to 0.1
    env.poke(f["party_levels"].address + 44, [50])     # a stale second slot: not in the party, not counted
    assert _step(pipe, env, 1).item() == pytest.approx(0.1)


# ---------------------------------------------------------------------------------------------- checkpoints, weight
def test_every_items_state_resumes_exactly():
    """Orchard level 2, 4 envs, random actions: explore (with run novelty), ram_bits, ram_sum and ram_max. The state
    after 25 steps, saved and loaded into a new env, gives the uninterrupted run's next 25 rewards exactly."""
    task = {"base": "orchard/level2", "start": {"variants": 2},
            "reward": [{"name": "explore", "fields": ["player_y", "player_x"], "weight": 0.1, "novelty_weight": 1.0},
                       {"name": "ram_bits", "field": "maze", "weight": -0.01, "mode": "delta"},
                       {"name": "ram_sum", "fields": ["seeds_eaten"], "weight": 1.0, "mode": "increase"},
                       {"name": "ram_max", "fields": ["player_x", "player_y"], "weight": 0.01}]}
    options = dict(task=task, action_codec="dpad_noop", max_steps=12, cpu_threads=2)
    gen = torch.Generator().manual_seed(3)
    actions = [torch.randint(0, 5, (4,), generator=gen, dtype=torch.int32) for _ in range(50)]
    first = GameBoyEnv(4, **options)
    for a in actions[:25]:
        first.step(a)
    buffer = io.BytesIO()
    torch.save(first.state_dict(), buffer)
    after = [first.step(a)[1] for a in actions[25:]]
    assert sum(float(r.abs().sum()) for r in after) > 0
    second = GameBoyEnv(4, **{**options, "seed": 9})
    buffer.seek(0)
    second.load_state_dict(torch.load(buffer, weights_only=True))
    resumed = [second.step(a)[1] for a in actions[25:]]
    assert all(torch.equal(a, b) for a, b in zip(after, resumed))


@pytest.mark.parametrize("name", ["tests._reward_items.OwnWeight", "tests._reward_items.own_weight"])
def test_a_term_with_its_own_weight_is_scaled_once(name):
    """A user class or function naming a `weight` parameter gets the item's weight and the pipeline does not multiply
    by it again: weight 0.02 gives 0.02 x value (not 0.02 x its default 0.01); without one, its own default."""
    from types import SimpleNamespace
    env = SimpleNamespace(base=torch.tensor([1.0, -3.0]))
    given = build_reward_pipeline([{"name": name, "weight": 0.02}], 2, torch.device("cpu"), {})
    default = build_reward_pipeline([{"name": name}], 2, torch.device("cpu"), {})
    assert given(_ctx(env, 2))[0].tolist() == pytest.approx([0.02, -0.06])
    assert default(_ctx(env, 2))[0].tolist() == pytest.approx([0.01, -0.03])
    # a term without a weight of its own is multiplied by the pipeline, as before
    plain = build_reward_pipeline([{"name": "tests._reward_items.given_reward", "weight": 0.02}], 2,
                                  torch.device("cpu"), {})
    assert plain(_ctx(env, 2))[0].tolist() == pytest.approx([0.02, -0.06])


@pytest.mark.parametrize("item, message", [
    ({"name": "explore", "fields": []}, "task.reward[0].fields must be a list of RAM map field names (or WRAM "
                                        "addresses), got []"),
    ({"name": "explore", "fields": ["player_x"], "bits": 1000}, "task.reward[0].bits must be a power of two in "
                                                                "64..16777216, got 1000"),
    ({"name": "ram_bits", "field": "maze", "mode": "max"}, "task.reward[0].mode must be one of ['record', "
                                                           "'increase', 'delta'], got 'max'"),
    ({"name": "ram_sum", "fields": ["player_x"], "clip": [1, 0]}, "task.reward[0].clip must be [low, high] with "
                                                                  "low <= high, or null, got [1, 0]"),
    ({"name": "ram_sum", "fields": ["player_x"], "count_field": "hazard_x"},
     "task.reward[0].count_field must be one number (e.g. party_count), got hazard_x (0xC120, 4 x 1 B) with count 4"),
    ({"name": "ram_max", "field": "player_x"}, "task.reward[0].field is not a parameter of ram_max; parameters: "
                                               "fields, count_field, weight, mode, clip"),
])
def test_bad_ram_items_are_one_line_errors(item, message):
    from gbx_lightning.envs.base import OptionError
    with pytest.raises(OptionError) as err:
        load_task({"base": "orchard/level1", "reward": [item]})
    assert str(err.value) == message
