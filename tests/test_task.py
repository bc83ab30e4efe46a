"""Tasks (envs/task.py): orchard's levels as built-in task files checked against orchard.py, a user's task from a
YAML file (paths relative to it) equal to the same task inline, counters reported and checkpointed only by the
task that defines them, one-line errors naming task.<field>, and env states saved by the old layout refused in one
line."""

import numpy as np
import pytest
import torch

from gbx_lightning.emu import VecGameBoy
from gbx_lightning.emu.buttons import read_trace, trace_segments
from gbx_lightning.envs import Counter, GameBoyEnv, Start, Task, Template, load_task
from gbx_lightning.envs.base import OptionError
from gbx_lightning.envs.goal import save_goal
from gbx_lightning.roms import ROM_DIR, TASK_DIR, available_tasks, build_rom, orchard

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

NOOP, R, L, U, D = range(5)   # the dpad_noop codec
LEVEL1_ROUTE = [U, D, D, U, L, L, R, R, R]   # eats level 1's four seeds; LEVEL CLEAR ends step 9 (test_orchard_env)


@pytest.fixture(scope="module")
def rom_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("rom") / "game.gb"
    path.write_bytes(build_rom("orchard"))
    return path


# ---------------------------------------------------------------------------------------------- orchard's levels
@pytest.mark.parametrize("level", range(1, orchard.NUM_LEVELS + 1))
def test_orchard_level_files_are_what_orchard_py_says(level):
    """Each level's task file restates orchard.py: the select trace, run level_start_frames + 1 frames (the
    first play frame draws the player), the banners as goal and fail, the seeds-eaten byte as a counter."""
    task = load_task(f"orchard/level{level}")
    assert task.name == f"orchard/level{level}" and task.rom == "orchard"
    assert read_trace(task.start.inputs) == orchard.level_select_inputs(level)
    assert task.start == Start(inputs=task.start.inputs, frames=orchard.level_start_frames(level) + 1, variants=4)
    assert task.goal == Template(str(ROM_DIR / "orchard_clear.png"))
    assert task.fail == Template(str(ROM_DIR / "orchard_gameover.png"))
    assert task.reward == "goal" and task.fail_penalty == -1.0 and task.step_cost is task.alpha is None
    assert task.counters == [Counter("seeds_eaten", orchard.SEEDS_EATEN)]


def test_the_built_in_tasks_are_the_files_under_roms_tasks():
    """Every YAML file under roms/tasks/GAME is a task but a game's RAM map (ram.yaml, envs/ram_map.py)."""
    assert available_tasks() == [f"hamlet/{n}" for n in ("explore", "house", "lantern", "route", "shrine")] + \
        ["orchard/game"] + [f"orchard/game_maze{n}" for n in (2, 3, 4)] + [f"orchard/level{n}" for n in range(1, 8)] + \
        ["pokered/explore"]
    assert sorted(p.name for p in (TASK_DIR / "orchard").iterdir()) == \
        ["game.yaml"] + [f"game_maze{n}.yaml" for n in (2, 3, 4)] + [f"level{n}.yaml" for n in range(1, 8)] + \
        ["ram.yaml"]
    assert sorted(p.name for p in (TASK_DIR / "pokered").iterdir()) == ["explore.yaml", "ram.yaml"]
    # by name, by file path and as a copy of the Task: the same task
    by_file = load_task(TASK_DIR / "orchard" / "level2.yaml")
    assert by_file.name == str(TASK_DIR / "orchard" / "level2.yaml")
    by_file.name = "orchard/level2"
    assert load_task("orchard/level2") == by_file == load_task(by_file)


def test_a_level_starts_where_the_select_trace_leaves_the_game():
    """The env's first start state is the screen after the level's trace on a bare VecGameBoy (the recipe the
    env ran before tasks existed), and its RAM says: that level, in play, all seeds left."""
    level = 3
    gb = VecGameBoy(build_rom("orchard"), 1)
    for count, mask in trace_segments(read_trace(orchard.level_select_inputs(level)),
                                      orchard.level_start_frames(level) + 1):
        gb.run_frames(count, buttons=np.full(1, mask, np.uint8), render="obs")
    env = GameBoyEnv(2, task=f"orchard/level{level}", stack_k=2, cpu_threads=1)
    assert env.rom_name == "orchard" and env.num_start_states == 4
    assert np.array_equal(env.cache.stack[0, -1].numpy(), gb.obs().numpy()[0])
    assert env.read_ram(orchard.LADDER_LEVEL)[:, 0].tolist() == [level] * 2
    assert env.read_ram(orchard.SEEDS_LEFT)[:, 0].tolist() == [orchard.LEVELS[level].seeds] * 2
    assert env.feature("templates").tau == pytest.approx(0.1321) and env.feature("templates").fail_tau > 0
    assert env.feature("templates").k_consecutive == env.feature("templates").fail_k == 1


# ---------------------------------------------------------------------------------------------- a user's task file
def test_a_task_file_reads_its_paths_relative_to_itself_and_equals_the_task_inline(rom_path, tmp_path):
    """A game of one's own in YAML beside its files: the same env, step for step, as the task given inline
    with absolute paths; a base task in the same folder is found there too."""
    gb = VecGameBoy(str(rom_path), 1)
    gb.run_frames(40, buttons=np.array([orchard.SELECT], np.uint8), render="obs")
    folder = tmp_path / "mygame"
    folder.mkdir()
    gb.save_state(folder / "start.npz")
    save_goal(folder / "goal.png", np.zeros((72, 80), np.uint8), {"region": {"rows": [0, 8], "cols": [0, 8]},
                                                                   "reward": {"tau": 0.2}})
    (folder / "base.yaml").write_text("start: {state: start.npz, variants: 2, variant_frames: 3}\n")
    (folder / "task.yaml").write_text("""
# a task of my own
base: base.yaml
goal: {path: goal.png, k_consecutive: 2}
reward: [{name: step_cost, cost: -0.5}, {name: success_bonus}]
counters: [{name: eaten, address: 0xC10F}]
""")
    task = load_task(folder / "task.yaml")
    inline = Task(start=Start(state=str(folder / "start.npz"), variants=2, variant_frames=3),
                  goal=Template(str(folder / "goal.png"), k_consecutive=2),
                  reward=[{"name": "step_cost", "cost": -0.5}, {"name": "success_bonus"}],
                  counters=[Counter("eaten", 0xC10F)], name=str(folder / "task.yaml"))
    assert task == inline
    envs = [GameBoyEnv(3, rom=str(rom_path), task=t, action_codec="dpad_noop", max_steps=4, cpu_threads=1)
            for t in (folder / "task.yaml", inline)]
    assert envs[0].feature("templates").tau == 0.2 and envs[0].feature("templates").k_consecutive == 2 and envs[0].num_start_states == 2
    assert np.array_equal(envs[0].cache.stack[0, -1].numpy(), gb.obs().numpy()[0])
    actions = torch.Generator().manual_seed(0)
    for _ in range(6):
        a = torch.randint(0, 5, (3,), generator=actions, dtype=torch.int32)
        (o1, r1, *_), (o2, r2, *_) = envs[0].step(a), envs[1].step(a)
        assert torch.equal(o1, o2) and torch.equal(r1, r2) and r1.tolist() == [-0.5] * 3


# ---------------------------------------------------------------------------------------------- counters
def test_counters_ride_only_with_the_task_that_defines_them(rom_path):
    """orchard/level1 counts seeds (info and state); the same ROM and start without counters reports and saves
    none of it; a state of one cannot be loaded by the other. A counter of one's own on the ROM file counts the
    route's four seeds; the idle env's episode counted none."""
    route = [torch.tensor([a, NOOP], dtype=torch.int32) for a in LEVEL1_ROUTE]
    options = dict(action_codec="dpad_noop", stack_k=1, max_steps=50, cpu_threads=1)
    counted = GameBoyEnv(2, task={"base": "orchard/level1", "start": {"variants": 1}}, **options)
    plain = GameBoyEnv(2, task={"base": "orchard/level1", "start": {"variants": 1}, "counters": []}, **options)
    mine = GameBoyEnv(2, rom=str(rom_path), task={"start": {"inputs": orchard.level_select_inputs(1), "frames": 30,
                                                            "variants": 1},
                                                  "counters": [{"name": "eaten", "address": orchard.SEEDS_EATEN},
                                                               {"name": "left", "address": orchard.SEEDS_LEFT}]},
                      **options)
    for a in route[:-1]:
        for env in (counted, plain, mine):
            env.step(a)
    saved = counted.state_dict()
    assert sorted(saved["features"]["counters"]) == ["seeds_eaten"]
    assert saved["features"]["counters"]["seeds_eaten"]["episode"].tolist() == [3, 0]     # the last seed comes at step 9
    assert "counters" not in plain.state_dict()["features"]
    infos = [env.step(route[-1])[4] for env in (counted, plain, mine)]
    assert infos[0]["success"].tolist() == [True, False] and infos[0]["seeds_eaten"].tolist() == [4, 0]
    assert "seeds_eaten" not in infos[1] and infos[1]["success"].tolist() == [True, False]
    # mine has no goal: the episode goes on and its counters report nothing yet (0 where no episode ended); they
    # count increases mod 256 step by step, so the seeds-left byte going 4 -> 0 counts 4 x 255
    assert infos[2]["eaten"].tolist() == [0, 0] and mine.feature("counters").episode.tolist() == [[4, 0], [4 * 255, 0]]
    assert counted.state_nbytes - plain.state_nbytes == 2 * 2 * 4      # before + episode, int32, 2 envs
    with pytest.raises(ValueError, match=r"counters must be \[\] \(this env's task\), got \['seeds_eaten'\]"):
        plain.load_state_dict(saved)
    other = GameBoyEnv(2, task={"base": "orchard/level1", "start": {"variants": 1}}, **options)
    other.load_state_dict(saved)
    assert other.step(route[-1])[4]["seeds_eaten"].tolist() == [4, 0]


def test_an_env_state_of_the_old_layout_is_refused_in_one_line():
    env = GameBoyEnv(1, task={"base": "orchard/level1", "start": {"variants": 1}}, cpu_threads=1)
    state = env.state_dict()
    state.update(version=1, seeds_before=torch.zeros(1, dtype=torch.int32),
                 seeds_episode=torch.zeros(1, dtype=torch.int32))
    del state["features"]
    with pytest.raises(ValueError) as err:
        env.load_state_dict(state)
    assert "\n" not in str(err.value) and str(err.value).startswith(
        "GameBoyEnv.load_state_dict: this env state was saved by the old GameBoyEnv layout (version 1, before tasks")
    # version 2 kept each feature's state at the top level (prev_dist, counters, pool, ...): refused the same way
    state = {**env.state_dict(), "version": 2, "prev_dist": torch.zeros(1)}
    with pytest.raises(ValueError) as err:
        env.load_state_dict(state)
    assert str(err.value) == (
        "GameBoyEnv.load_state_dict: this env state was saved by the old GameBoyEnv layout (version 2, before "
        "features: each feature's state at the top level); version 3 keeps each feature's state under 'features'. "
        "Start a fresh run, or resume with the code that saved it")


# ---------------------------------------------------------------------------------------------- errors
@pytest.mark.parametrize("spec, message", [
    (3, "task must be a built-in task name (hamlet/explore, hamlet/house, hamlet/lantern, hamlet/route, "
        "hamlet/shrine, orchard/game, orchard/game_maze2, orchard/game_maze3, orchard/game_maze4, "
        "orchard/level1, orchard/level2, orchard/level3, orchard/level4, orchard/level5, "
        "orchard/level6, orchard/level7, pokered/explore), a task YAML file or a mapping of task fields, got 3"),
    ({"levle": 1}, "task.levle is not a field of Task; fields: base, rom, start, goal, fail, ram_goal, reward, step_cost, "
                   "alpha, goal_bonus, fail_penalty, counters, ram_map, milestones, pool, heatmap, train_starts, requires, "
                   "name"),
    ({"base": "orchard/level9"}, "task.base is neither a built-in task (hamlet/explore, hamlet/house, "
                                 "hamlet/lantern, hamlet/route, hamlet/shrine, orchard/game, "
                                 "orchard/game_maze2, orchard/game_maze3, orchard/game_maze4, orchard/level1, "
                                 "orchard/level2, "
                                 "orchard/level3, orchard/level4, orchard/level5, orchard/level6, orchard/level7, "
                                 "pokered/explore) nor a task file: no file at 'orchard/level9'"),
    ({"base": 1}, "task.base must be a built-in task name (hamlet/explore, hamlet/house, hamlet/lantern, "
                  "hamlet/route, hamlet/shrine, orchard/game, orchard/game_maze2, orchard/game_maze3, "
                  "orchard/game_maze4, orchard/level1, orchard/level2, orchard/level3, orchard/level4, "
                  "orchard/level5, orchard/level6, orchard/level7, pokered/explore) or a task file, got 1"),
    ({"start": {"frame": 3}}, "task.start.frame is not a field of Start; fields: state, inputs, frames, variants, "
                              "variant_frames, ram, score"),
    ({"start": [1]}, "task.start must be a mapping of Start fields (state, inputs, frames, variants, variant_frames, "
                     "ram, score), got [1]"),
    ({"start": {"variants": 0}}, "task.start.variants must be an int in [1, 256], got 0"),
    ({"start": {"frames": -1}}, "task.start.frames must be an int >= 0, got -1"),
    ({"start": {"state": []}}, "task.start.state must be a savestate path, a list of them, or null (power-on), got []"),
    ({"goal": {"tau": 0.1}}, "task.goal.path is required by Template (missing)"),
    ({"base": "orchard/level1", "goal": {"tau": 1.5}}, "task.goal.tau must be a number in (0.0, 1.0] or null, got 1.5"),
    ({"fail": {"path": "f.png", "k_consecutive": 0}}, "task.fail.k_consecutive must be an int >= 1 or null, got 0"),
    ({"counters": {"name": "x"}}, "task.counters must be a list of {name: ..., address: ...} mappings, got "
                                  "{'name': 'x'}"),
    ({"counters": [{"name": "x"}]}, "task.counters[0].address or field (a RAM map name): give exactly one of "
                                    "them"),
    ({"counters": [{"name": "x", "address": 0x8000}]}, "task.counters[0].address must be a WRAM address, an int in "
                                                       "0xC000..0xDFFF, got 32768"),
    ({"counters": [{"name": "x", "address": 0xDFFF, "size": 2}]}, "task.counters[0].address must be a WRAM address, "
                                                                  "an int in 0xC000..0xDFFE, got 57343"),
    ({"counters": [{"name": "x", "address": 0xC000, "bits": 9}]}, "task.counters[0].bits must be an int in [1, 8] "
                                                                  "or null, got 9"),
    ({"counters": [{"name": "success", "address": 0xC000}]}, "task.counters[0].name must be a new identifier (not "
     "one of ['final_obs', 'episode_return', 'episode_length', 'success', 'failed', 'trained_return', 'from_pool'] nor "
     "another counter's), got 'success'"),
    ({"counters": [{"name": "a", "address": 0xC000}, {"name": "a", "address": 0xC001}]},
     "task.counters[1].name must be a new identifier (not one of ['final_obs', 'episode_return', 'episode_length', "
     "'success', 'failed', 'trained_return', 'from_pool'] nor another counter's), got 'a'"),
    ({"reward": "orchard_seeds"}, "task.reward must be one of ('goal',) or a list of reward items, got "
                                  "'orchard_seeds'"),
    ({"reward": [{"name": "success_bonus"}]}, "task.reward[0] (success_bonus) needs a way to succeed: a goal template "
                                              "(tools/capture_goal.py makes one) or a ram_goal (a RAM map field's "
                                              "value)"),
    ({"fail_penalty": 0.5}, "task.fail_penalty must be a number <= 0.0, got 0.5"),
    ({"rom": 5}, "task.rom must be a built-in ROM name (hamlet, orchard) or a .gb file path, got 5"),
])
def test_bad_task_fields_are_one_line_errors_naming_the_field(spec, message):
    with pytest.raises(OptionError) as err:
        load_task(spec)
    assert str(err.value) == message


def test_task_file_problems_name_the_file(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("start: {frames: -2}\n")
    with pytest.raises(OptionError, match=rf"^task.start.frames must be an int >= 0, got -2 \(in {bad}\)$"):
        load_task(bad)
    bad.write_text("- not a mapping\n")
    with pytest.raises(OptionError, match=rf"^task {bad}: must hold a mapping of task fields, got list$"):
        load_task(bad)
    bad.write_text("start: {frames: [\n")
    with pytest.raises(OptionError, match=rf"^task {bad}: not a readable YAML task file \(while parsing"):
        load_task(bad)


def test_the_rom_comes_from_the_env_or_the_task(rom_path):
    with pytest.raises(OptionError, match=r"^rom is required: a .gb file path or a built-in ROM name \(orchard\), or "
                                          r"a task that names its ROM \(e.g. task: orchard/level1\)$"):
        GameBoyEnv.check_options(task={"start": {"frames": 3}})
    with pytest.raises(OptionError, match=r"^task.rom is not a ROM we can run: no ROM file at '/no/such.gb'"):
        GameBoyEnv.check_options(task={"rom": "/no/such.gb"})
    # the env's rom wins over the task's: the ROM file's own bytes, with orchard's templates (same ROM: accepted)
    env = GameBoyEnv(1, rom=str(rom_path), task="orchard/level1", cpu_threads=1)
    assert env.rom_name == str(rom_path) and env.feature("templates").goal is not None
