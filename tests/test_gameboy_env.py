"""GameBoyEnv's env protocol on a ROM file (the built-in game, written to disk as a user ROM would be) and
tasks given inline: observation stacks, action checks, auto-reset from the start-state cache, determinism,
CPU shards, state round trips, start states from files, the goal and fail templates."""

import hashlib

import numpy as np
import pytest
import torch

from gbx_lightning.emu import VecGameBoy
from gbx_lightning.envs import ForagingEnv, GameBoyEnv, VecEnv
from gbx_lightning.envs.base import OptionError, VecEnvExtras
from gbx_lightning.envs.goal import save_goal
from gbx_lightning.roms import build_rom

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


@pytest.fixture(scope="module")
def rom_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("rom") / "game.gb"
    path.write_bytes(build_rom("orchard"))
    return str(path)


def _env(rom_path, n=4, start=None, task=None, **kw):
    """An env on the ROM file; ``start`` (Start fields) over 20 frames from power-on, ``task``: other task fields."""
    kw.setdefault("action_codec", "dpad_noop")
    kw.setdefault("cpu_threads", 1)
    kw.setdefault("rom", rom_path)
    return GameBoyEnv(n, task={"start": {"frames": 20, **(start or {})}, **(task or {})}, **kw)


def _actions(seed, n, steps, num_actions=5):
    g = torch.Generator().manual_seed(seed)
    return [torch.randint(0, num_actions, (n,), generator=g, dtype=torch.int32) for _ in range(steps)]


def _hash(t: torch.Tensor) -> str:
    return hashlib.sha256(t.contiguous().numpy().tobytes()).hexdigest()


def test_observation_is_a_stack_of_step_end_screens_newest_last(rom_path):
    env = _env(rom_path, n=3, stack_k=3, max_steps=1000)
    # the protocol, and the optional members the trainer probes (ForagingEnv has observe only)
    assert isinstance(env, VecEnv) and isinstance(env, VecEnvExtras) and env.state_nbytes > 0
    assert not isinstance(ForagingEnv(2), VecEnvExtras) and callable(ForagingEnv(2).observe)
    obs = env.reset(seed=0)
    assert obs.shape == (3, 3, 72, 80) and obs.dtype == torch.uint8 and env.obs_shape == (3, 72, 80)
    assert int(obs.max()) <= 3
    for a in _actions(0, 3, 4):
        nxt, reward, term, trunc, info = env.step(a)
        assert torch.equal(nxt[:, :-1], obs[:, 1:])                   # older frames shift left
        screens = torch.from_numpy(np.concatenate([gb.obs().numpy() for gb in env.machines]))
        assert torch.equal(nxt[:, -1], screens)                       # the newest is the machine's obs
        assert torch.equal(info["final_obs"], nxt) and info["final_obs"].data_ptr() != nxt.data_ptr()
        assert reward.dtype == torch.float32 and term.dtype == trunc.dtype == torch.bool
        obs = nxt


def test_obs_is_the_2x2_subsample_of_the_full_screen(rom_path):
    env = _env(rom_path, n=2, stack_k=1)
    env.render_full = True
    obs, *_ = env.step(torch.tensor([1, 3], dtype=torch.int32))
    assert np.array_equal(obs[:, 0].numpy(), env.frames()[:, ::2, ::2])


def test_actions_are_checked(rom_path):
    env = _env(rom_path, n=2)
    with pytest.raises(TypeError, match="torch.int32"):
        env.step(torch.zeros(2, dtype=torch.int64))
    with pytest.raises(ValueError, match=r"shape \[N\]=\[2\]"):
        env.step(torch.zeros(3, dtype=torch.int32))
    with pytest.raises(ValueError, match=r"actions must be in 0..4 \(-, right, left, up, down\), got values \[5\]"):
        env.step(torch.tensor([0, 5], dtype=torch.int32))


def test_truncation_resets_from_the_cache_and_final_obs_is_the_true_next_screen(rom_path):
    env = _env(rom_path, n=3, max_steps=3, start=dict(variants=3, variant_frames=7))
    obs = env.reset(seed=4)
    starts = env.cache.stack
    for t, a in enumerate(_actions(1, 3, 3)):
        obs_prev = obs
        obs, reward, term, trunc, info = env.step(a)
    assert trunc.all() and not term.any()                            # the third step hits max_steps
    assert torch.equal(info["final_obs"][:, :-1], obs_prev[:, 1:])    # s' continues the old episode
    assert info["episode_length"].tolist() == [3, 3, 3]
    for i in range(3):                                                # s0 of the new one is a start state
        assert any(torch.equal(obs[i], starts[s]) for s in range(env.num_start_states))
    assert env._steps.tolist() == [0, 0, 0]
    # the machines were restored too: one more step from a start state gives that start's next screen
    assert env.num_start_states == 3 and starts.shape[0] == 3


def test_same_seed_same_pixels_for_100_steps_with_resets(rom_path):
    """Two envs built with the same seed: identical pixel hashes for 100 steps under one action trace,
    with resets every 7 steps (a third, seeded differently, draws other start states)."""
    actions = _actions(2, 4, 100)
    runs = []
    for seed in (11, 11, 12):
        env = _env(rom_path, n=4, seed=seed, max_steps=7, start=dict(variants=4, variant_frames=5))
        hashes = [_hash(env.reset(seed=seed))]
        resets = 0
        for a in actions:
            obs, _, term, trunc, info = env.step(a)
            hashes.append(_hash(obs) + _hash(info["final_obs"]))
            resets += int((term | trunc).sum())
        runs.append(hashes)
        assert resets >= 4 * 14
    assert runs[0] == runs[1]
    assert runs[0] != runs[2]


def test_cpu_shards_change_nothing_but_speed(rom_path):
    actions = _actions(3, 5, 12)
    seqs = []
    for threads in (1, 3):
        env = _env(rom_path, n=5, cpu_threads=threads, max_steps=5, start=dict(variants=2))
        assert len(env.machines) == threads
        seqs.append([_hash(env.reset(seed=3))] + [_hash(env.step(a)[0]) for a in actions])
    assert seqs[0] == seqs[1]


def test_state_dict_continues_identically(rom_path):
    actions = _actions(5, 3, 16)
    env = _env(rom_path, n=3, max_steps=6, start=dict(variants=3))
    env.reset(seed=9)
    for a in actions[:8]:
        env.step(a)
    state = env.state_dict()
    want = [_hash(env.step(a)[0]) for a in actions[8:]]
    other = _env(rom_path, n=3, max_steps=6, start=dict(variants=3))
    other.load_state_dict(state)
    assert torch.equal(other.observe(), state["stack"])
    assert [_hash(other.step(a)[0]) for a in actions[8:]] == want
    with pytest.raises(ValueError, match="num_envs must be 2"):
        _env(rom_path, n=2).load_state_dict(state)


def test_start_state_files(rom_path, tmp_path):
    gb = VecGameBoy(rom_path, 1)
    gb.run_frames(50, buttons=np.array([8], np.uint8), render="obs")
    ours = tmp_path / "start.npz"
    gb.save_state(ours)
    env = _env(rom_path, n=2, start=dict(state=str(ours), frames=0, variants=1))
    assert (env.reset(seed=0)[:, -1].numpy() == gb.obs().numpy()[0]).all()
    assert env.machines[0].registers(1) == gb.registers(0)
    pyboy = pytest.importorskip("pyboy")
    p = pyboy.PyBoy(rom_path, window="null", sound_emulated=False, cgb=False, log_level="ERROR")
    p.tick(400, False, False)            # PyBoy runs its own boot ROM first
    with open(tmp_path / "start.state", "wb") as f:
        p.save_state(f)
    p.stop(save=False)
    env = _env(rom_path, n=2, start=dict(state=str(tmp_path / "start.state"), frames=0, variants=1))
    ref = VecGameBoy(rom_path, 1)
    ref.load_pyboy_state(str(tmp_path / "start.state"))
    assert env.machines[0].registers(0) == ref.registers(0)
    with pytest.raises(OptionError, match="task.start.state does not exist: no savestate file"):
        _env(rom_path, start=dict(state=str(tmp_path / "nope.state")))


def test_goal_template_ends_the_episode_with_its_bonus(rom_path, tmp_path):
    """A goal captured from the screen env 0 shows after 3 steps: a second env with the same seed and
    actions terminates there with reward step_cost + alpha * (prev_dist - 0) + goal_bonus."""
    actions = _actions(6, 2, 3)
    env = _env(rom_path, n=2, max_steps=100, start=dict(variants=1))
    env.reset(seed=0)
    for a in actions:
        obs, *_ = env.step(a)
    goal_png = tmp_path / "goal.png"
    save_goal(goal_png, obs[0, -1].numpy(), {"region": {"rows": [0, 64], "cols": [0, 80]},
                                            "reward": {"tau": 0.001, "step_cost": -0.02, "alpha": 2.0,
                                                       "goal_bonus": 5.0}})
    env = _env(rom_path, n=2, max_steps=100, start=dict(variants=1), task=dict(goal=str(goal_png)))
    assert (env.feature("templates").tau, *(env.feature("templates").reward_settings[k] for k in ("step_cost", "alpha", "goal_bonus"))) == (0.001, -0.02, 2.0, 5.0)
    env.reset(seed=0)
    prev = env.feature("templates").prev_dist.clone()
    for t, a in enumerate(actions):
        before = env.feature("templates").prev_dist.clone()
        obs, reward, term, trunc, info = env.step(a)
    assert term[0] and info["success"][0] and not trunc[0]
    assert reward[0].item() == pytest.approx(-0.02 + 2.0 * before[0].item() + 5.0, abs=1e-5)
    assert info["episode_length"][0] == 3 and not info["failed"][0]
    assert env._steps[0] == 0 and prev.shape == (2,)
    # overrides beat the meta file; a template for another ROM is refused
    assert _env(rom_path, n=1, task=dict(goal=dict(path=str(goal_png), tau=0.2))).feature("templates").tau == 0.2
    other = tmp_path / "other.png"
    save_goal(other, obs[0, -1].numpy(), {"rom_sha256": "0" * 64})
    with pytest.raises(OptionError, match="task.goal was captured from another ROM"):
        _env(rom_path, n=1, task=dict(goal=str(other)))
    with pytest.raises(OptionError, match="task.goal cannot be loaded: goal template .*missing.png does not exist"):
        _env(rom_path, n=1, task=dict(goal=str(tmp_path / "missing.png")))


def test_bad_options_are_named(rom_path):
    """Every option's value and task field is checked (GameBoyEnv.check_options) before anything is built; the
    error names it. (Option names and types in a config are the parser's: tests/test_cli.py.)"""
    cases = [(dict(task=dict(reward="orchard_seeds")),
              r"task.reward must be one of \('goal',\) or a list of reward items, got 'orchard_seeds'"),
             (dict(rom="/nonexistent/game.gb"), "rom is not a ROM we can run: no ROM file at"),
             (dict(stack_k=9), r"stack_k must be an int in \[1, 8\], got 9"),
             (dict(release_after_frames=30), r"release_after_frames must be an int in \[0, 24\], got 30"),
             (dict(action_codec="everything"), "action_codec must be one of"),
             (dict(task=dict(goal=dict(path="g.png", tau=0.0))),
              r"task.goal.tau must be a number in \(0.0, 1.0\] or null, got 0.0"),
             (dict(task=dict(fail_penalty=1.0)), "task.fail_penalty must be a number <= 0.0, got 1.0"),
             (dict(start=dict(inputs="0 jump")),
              "task.start.inputs is not an input trace: task.start.inputs:1: buttons: unknown")]
    for options, message in cases:
        with pytest.raises(OptionError, match=message):
            _env(rom_path, **options)
    with pytest.raises(OptionError, match=r"task is neither a built-in task \(hamlet/explore, .*orchard/level1, .*\) nor a task file: "
                                          r"no file at 'orchard/level0'"):
        GameBoyEnv(1, task="orchard/level0")
    with pytest.raises(TypeError, match="unexpected keyword argument 'levle'"):   # a config's: the parser's
        GameBoyEnv(1, levle=1)


@pytest.mark.cuda
def test_cuda_matches_cpu_pixel_for_pixel():
    """The same start state and actions on CUDA and on the CPU: identical screens, rewards and episode ends
    (one start state: the reset draws come from torch's per-device generators, which differ)."""
    actions = _actions(7, 6, 40)
    runs = []
    for device in ("cpu", "cuda"):
        env = GameBoyEnv(6, device, task={"base": "orchard/level1", "start": {"variants": 1}}, stack_k=2,
                         action_codec="dpad_noop", max_steps=9)
        seq = [_hash(env.reset(seed=1).cpu())]
        for a in actions:
            obs, reward, term, trunc, info = env.step(a.to(device))
            seq.append((_hash(obs.cpu()), _hash(info["final_obs"].cpu()), reward.cpu().tolist(),
                        term.cpu().tolist(), trunc.cpu().tolist()))
        runs.append(seq)
    assert runs[0] == runs[1]


@pytest.mark.cuda
def test_cuda_step_stays_on_the_device():
    env = GameBoyEnv(8, "cuda", task="orchard/level1", action_codec="dpad_noop", max_steps=5)
    view_ptr = env._shards[0].obs_words.ptr
    obs = env.reset(seed=0)
    assert obs.is_cuda
    for a in _actions(8, 8, 12):
        obs, reward, term, trunc, info = env.step(a.cuda())
        assert obs.is_cuda and reward.is_cuda and info["final_obs"].is_cuda
    assert env._shards[0].obs_words.ptr == view_ptr    # the kernel's obs buffer is read in place
    with pytest.raises(ValueError, match="must be on the env's device"):
        env.step(torch.zeros(8, dtype=torch.int32))
    with torch.cuda.stream(torch.cuda.Stream()):        # launches follow torch's current stream
        obs2, *_ = env.step(torch.zeros(8, dtype=torch.int32, device="cuda"))
    torch.cuda.synchronize()
    assert obs2.shape == obs.shape
