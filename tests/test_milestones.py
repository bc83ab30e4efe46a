"""Milestones (envs/features/milestones.py): per-episode progress from the RAM map, against hand-computed numbers on orchard's
scripted level-1 route and on hand-written RAM (each kind, a wrapping counter, a flag), reported only where an
episode ends, and resumed exactly from a checkpoint."""

import io
from pathlib import Path

import pytest
import torch

from gbx_lightning.envs import GameBoyEnv, Milestone
from gbx_lightning.envs.features.milestones import MilestoneTracker
from gbx_lightning.envs.ram_map import load_ram_map

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

NOOP, R, L, U, D = range(5)
LEVEL1_ROUTE = [U, D, D, U, L, L, R, R, R]   # tiles and seeds: tests/test_ram_rewards.py; LEVEL CLEAR ends step 9
MILESTONES = [{"name": "seeds", "kind": "increase", "field": "seeds_eaten"},
              {"name": "tiles", "kind": "distinct", "fields": ["player_y", "player_x"]},
              {"name": "seed_bits", "kind": "bits", "field": "maze", "count": "peak"},
              {"name": "cleared", "kind": "peak", "field": "level_clear", "at_least": 1},
              {"name": "half", "kind": "increase", "field": "seeds_eaten", "at_least": 2}]


def test_the_scripted_route_reports_its_known_milestones_when_it_ends():
    """Level 1's route eats 4 seeds on 8 distinct tiles (the start and 7 new ones); LEVEL CLEAR's flag rises. Each seed
    turns a '*' (0x2A) of the maze into a '.' (0x2E), one more 1 bit: 3 by step 6; at step 8 a fruit appears on the
    start tile (10, 7) ('$' 0x24 over '.': 2 bits fewer), so the fourth seed makes 4 - 2 = 2 and the peak stays 3.
    Nothing is reported before the episode ends."""
    env = GameBoyEnv(2, task={"base": "orchard/level1", "start": {"variants": 1}, "milestones": MILESTONES},
                     action_codec="dpad_noop", cpu_threads=1)
    for t, action in enumerate(LEVEL1_ROUTE):
        _, _, terminated, _, info = env.step(torch.full((2,), action, dtype=torch.int32))
        expected = [4, 8, 3, 1, 1] if t == len(LEVEL1_ROUTE) - 1 else [0] * 5
        assert [info[m["name"]].tolist() for m in MILESTONES] == [[e, e] for e in expected], t
        assert info["seeds"].dtype == torch.int32
    assert terminated.tolist() == [True, True]
    assert env.read_ram(0xC110, 2).tolist() == [[0, 0], [0, 0]]     # reset: no fruit (wBonusX, wBonusY)
    env.step(torch.full((2,), U, dtype=torch.int32))       # the next episode counts from its own start
    assert env.feature("milestones").progress.tolist() == [[1, 1], [2, 2], [1, 1], [0, 0], [1, 1]]


def test_each_kind_by_hand():
    """Hand-written RAM, 2 envs: a counter wrapping 250 -> 3 counts 9; a peak of a 2-number field's sum; the bits
    of a 2-byte flag field; distinct values of one byte; env 1 restarts midway and counts from its new start."""
    ram = torch.zeros(2, 0x2000, dtype=torch.uint8)

    class Env:
        def read_ram(self, addr, length=1):
            return ram[:, addr - 0xC000:addr - 0xC000 + length]

    def poke(addr, values):
        ram[:, addr - 0xC000] = torch.tensor(values, dtype=torch.uint8)

    ram_map = load_ram_map({"fields": {"count": 0xC000, "pair": {"address": 0xC010, "count": 2}, "flags":
                                       {"address": 0xC020, "count": 2}, "room": 0xC030}})
    tracker = MilestoneTracker([Milestone("count", "increase", field="count"), Milestone("pair", "peak", field="pair"),
                                Milestone("flags", "bits", field="flags", count="peak"), Milestone("rooms", "distinct",
                                                                                     fields=["room"], bits=256)],
                               ram_map, 2, torch.device("cpu"))
    env = Env()
    poke(0xC000, [250, 0])
    poke(0xC010, [3, 3])
    poke(0xC011, [4, 4])
    poke(0xC020, [0b1, 0b1])
    tracker.begin(env)
    poke(0xC000, [3, 1])          # +9 (wrapped), +1
    poke(0xC010, [10, 1])         # pair sums 14, 5: peaks +7, -2 -> 0
    poke(0xC021, [0b11, 0b11])    # 3 bits: +2
    poke(0xC030, [5, 5])          # room 5: a second room for both
    assert tracker.update(env).tolist() == [[9, 1], [7, 0], [2, 2], [2, 2]]
    poke(0xC010, [3, 1])          # the pair falls back: the peak stays
    poke(0xC030, [0, 6])
    assert tracker.update(env).tolist() == [[9, 1], [7, 0], [2, 2], [2, 3]]
    done = torch.tensor([False, True])
    assert tracker.episode_values(done)["rooms"].tolist() == [0, 3]
    tracker.begin(env, done)      # env 1's next episode starts here
    assert tracker.progress.tolist() == [[9, 0], [7, 0], [2, 0], [2, 1]]
    poke(0xC030, [0, 0])
    poke(0xC000, [3, 2])
    assert tracker.update(env).tolist() == [[9, 1], [7, 0], [2, 0], [2, 2]]


def test_milestones_resume_exactly():
    """Level 2, 4 envs, random actions, episodes of 10 steps: the reports after a checkpoint equal the uninterrupted
    run's."""
    options = dict(task={"base": "orchard/level2", "milestones": MILESTONES}, action_codec="dpad_noop", max_steps=10,
                   cpu_threads=2)
    gen = torch.Generator().manual_seed(5)
    actions = [torch.randint(0, 5, (4,), generator=gen, dtype=torch.int32) for _ in range(40)]
    first = GameBoyEnv(4, **options)
    for a in actions[:15]:
        first.step(a)
    buffer = io.BytesIO()
    torch.save(first.state_dict(), buffer)
    names = [m["name"] for m in MILESTONES]

    def reports(env):
        return [[info[k] for k in names] for info in (env.step(a)[4] for a in actions[15:])]

    after = reports(first)
    assert sum(int(r[1].sum()) for r in after) > 0
    second = GameBoyEnv(4, **options)
    buffer.seek(0)
    second.load_state_dict(torch.load(buffer, weights_only=True))
    resumed = reports(second)
    assert all(torch.equal(x, y) for a, b in zip(after, resumed) for x, y in zip(a, b))


@pytest.mark.parametrize("milestone, message", [
    ({"name": "m", "kind": "most", "field": "score"}, "task.milestones[0].kind must be one of ['distinct', 'peak', "
                                                      "'bits', 'increase'], got 'most'"),
    ({"name": "m", "kind": "distinct", "field": "player_x", "fields": ["player_y"]},
     "task.milestones[0].fields must list the fields whose distinct tuples are counted (e.g. [map]), got 'player_x'"),
    ({"name": "m", "kind": "peak", "fields": ["score"]}, "task.milestones[0].field must name one RAM map field (peak "
                                                         "reads one), got ['score']"),
    ({"name": "m", "kind": "increase", "field": "hazard_x"}, "task.milestones[0].field must be one number (a counter), "
                                                             "got hazard_x (0xC120, 4 x 1 B)"),
    ({"name": "success", "kind": "peak", "field": "score"}, "task.milestones[0].name must be a new identifier (not one "
     "of ['final_obs', 'episode_return', 'episode_length', 'success', 'failed', 'trained_return', 'from_pool'] nor a "
     "counter's or another milestone's), got 'success'"),
    ({"name": "seeds_eaten", "kind": "peak", "field": "score"}, "task.milestones[0].name must be a new identifier "
     "(not one of ['final_obs', 'episode_return', 'episode_length', 'success', 'failed', 'trained_return', "
     "'from_pool'] nor a counter's or another milestone's), got 'seeds_eaten'"),
    ({"name": "m", "kind": "distinct", "fields": ["score"], "bits": 100}, "task.milestones[0].bits must be a power of "
                                                                          "two in 64..16777216, got 100"),
    ({"name": "m", "kind": "peak", "field": "score", "at_least": 0}, "task.milestones[0].at_least must be an int >= 1 "
                                                                     "or null, got 0"),
    ({"name": "m", "kind": "bits", "field": "score", "count": "most"}, "task.milestones[0].count must be one of "
                                                                      "['now', 'peak'] (bits milestones only), got 'most'"),
    ({"name": "m", "kind": "peak", "field": "score", "count": "peak"}, "task.milestones[0].count must be one of "
     "['now', 'peak'] (bits milestones only), got 'peak' on a peak"),
])
def test_bad_milestones_are_one_line_errors(milestone, message):
    from gbx_lightning.envs import load_task
    from gbx_lightning.envs.base import OptionError
    with pytest.raises(OptionError) as err:
        load_task({"base": "orchard/level1", "milestones": [milestone]})
    assert str(err.value) == message


def test_bits_count_what_stays_on_a_rom_that_sets_and_clears_flags(tmp_path):
    """tests/roms/flags_blink.asm sets four flags at VBlank 15, clears three at 45 and sets one more at 75 (as
    Pokemon's starter screen sets the three starters' Pokedex flags and keeps one). Steps of 10 frames end at VBlanks
    9, 19, ...: count now (the default) follows the flags still set, 0 4 4 4 1 1 1 2, and reports 2 when the
    8-step episode ends; count peak reports the 4 of a moment. The next episode counts from its own start."""
    from gbx_lightning.roms.asm import assemble

    src = Path(__file__).parent / "roms" / "flags_blink.asm"
    rom = tmp_path / "flags.gb"
    rom.write_bytes(assemble(src.read_text(), origin_file=str(src)))
    task = {"start": {"variants": 1}, "milestones": [{"name": "kept", "kind": "bits", "field": 0xC000},
                           {"name": "ever", "kind": "bits", "field": 0xC000, "count": "peak"}]}
    env = GameBoyEnv(2, rom=str(rom), task=task, frames_per_step=10, release_after_frames=0, max_steps=8,
                     action_codec="dpad_noop", cpu_threads=1)
    tracker = env.feature("milestones")
    progress = []
    for _ in range(8):
        _, _, _, truncated, info = env.step(torch.zeros(2, dtype=torch.int32))
        progress.append(tracker.progress[:, 0].tolist())   # [kept, ever] of env 0
    assert progress[:7] == [[0, 0], [4, 4], [4, 4], [4, 4], [1, 4], [1, 4], [1, 4]]
    assert truncated.tolist() == [True, True]
    assert info["kept"].tolist() == [2, 2] and info["ever"].tolist() == [4, 4]
    assert tracker.progress.tolist() == [[0, 0], [0, 0]]      # the next episode starts from power-on: nothing new
