"""ForagingEnv on hand-built worlds with known answers, plus determinism, state_dict and argument checks."""

import numpy as np
import pytest
import torch
import warp as wp

from gbx_lightning.envs import ENV_REGISTRY, EpisodeStats, VecEnv, make_env
from gbx_lightning.envs.foraging import EMPTY, FOOD, POISON, WALL, ForagingEnv

wp.config.quiet = True

N_, NE, E_, SE, S_, SW, W_, NW = range(8)
S = 8  # grid size of the hand-built worlds


def open_grid(s=S):
    g = np.zeros((s, s), np.int32)
    g[0, :] = g[-1, :] = g[:, 0] = g[:, -1] = WALL
    return g


def small_env(num_envs=1, **kw):
    kw = dict(grid_size=S, view_size=5, respawn=False, food_range=(0, 0), poison_range=(0, 0)) | kw
    return ForagingEnv(num_envs, **kw)


def act(*a):
    return torch.tensor(a, dtype=torch.int32)


def reference_view(cells, agent, energy, start_energy, view, proxy=False):
    """Independent numpy rendering of the documented observation layout."""
    out = np.zeros((6, view, view), np.float32)
    half, s = view // 2, cells.shape[0]
    for i in range(view):
        for j in range(view):
            y, x = agent[0] - half + i, agent[1] - half + j
            if not (0 <= y < s and 0 <= x < s):
                out[5, i, j] = 1
            elif (i, j) == (half, half):
                out[4, i, j] = energy / start_energy
            elif cells[y, x] == FOOD:
                out[2, i, j] = 1
            elif cells[y, x] == POISON:
                out[2 if proxy else 3, i, j] = 0.9 if proxy else 1
            else:
                out[cells[y, x], i, j] = 1  # EMPTY -> channel 0, WALL -> channel 1
    return torch.from_numpy(out)


# ------------------------------------------------------------------ moves, food, poison, walls
def test_eight_moves_from_the_centre():
    env = small_env(8)
    env.set_layout(open_grid(), (3, 3))
    env.step(torch.arange(8, dtype=torch.int32))  # env i takes action i
    expected = [(2, 3), (2, 4), (3, 4), (4, 4), (4, 3), (4, 2), (3, 2), (2, 2)]  # N NE E SE S SW W NW
    assert env.agent_pos.tolist() == [list(p) for p in expected]


def test_food_raises_energy_and_reward_is_the_delta():
    env = small_env(step_cost=0.25, food_energy=5.0)
    g = open_grid()
    g[3, 4] = FOOD
    env.set_layout(g, (3, 3))
    obs, reward, term, trunc, info = env.step(act(E_))
    assert env.energy.item() == 20.0 - 0.25 + 5.0  # 24.75
    assert reward.item() == 4.75 and not term.item() and not trunc.item()
    assert env.grid[0, 3, 4].item() == EMPTY  # eaten, respawn off
    assert info["food_eaten"].item() == 0  # counted per ended episode only


def test_poison_lowers_energy():
    env = small_env(step_cost=0.25, poison_energy=5.0)
    g = open_grid()
    g[4, 4] = POISON
    env.set_layout(g, (3, 3))
    _, reward, *_ = env.step(act(SE))
    assert env.energy.item() == 20.0 - 0.25 - 5.0
    assert reward.item() == -5.25


def test_walls_block_and_moves_still_cost():
    env = small_env(3, step_cost=0.5)
    g = open_grid()
    g[2, 2] = WALL
    env.set_layout(g, (1, 1))
    _, reward, *_ = env.step(act(N_, W_, SE))  # border, border, interior wall
    assert env.agent_pos.tolist() == [[1, 1]] * 3
    assert reward.tolist() == [-0.5] * 3


def test_respawn_keeps_item_counts():
    g = open_grid()
    g[3, 4], g[5, 5], g[2, 2] = FOOD, FOOD, POISON
    for respawn, food_left in ((True, 2), (False, 1)):
        env = small_env(respawn=respawn)
        env.set_layout(g, (3, 3))
        env.step(act(E_))
        grid = env.grid[0]
        assert (grid == FOOD).sum().item() == food_left
        assert (grid == POISON).sum().item() == 1 and grid[3, 4].item() == EMPTY  # not under the agent


# ------------------------------------------------------------------ episode ends
def test_energy_zero_terminates_and_auto_resets():
    env = small_env(step_cost=0.25)
    env.set_layout(open_grid(), (3, 3), energy=0.5)
    _, _, term, *_ = env.step(act(E_))
    assert not term.item()
    obs, reward, term, trunc, info = env.step(act(E_))
    assert term.item() and not trunc.item() and not info["success"].item()
    assert reward.item() == -0.25
    assert info["episode_return"].item() == -0.5 and info["episode_length"].item() == 2
    # final_obs is the terminal state: agent at (3, 5), energy 0
    torch.testing.assert_close(info["final_obs"][0], reference_view(open_grid(), (3, 5), 0.0, 20.0, 5))
    # obs is the first observation of a fresh episode (new world, full energy)
    assert obs[0, 4, 2, 2].item() == 1.0
    assert env.energy.item() == 20.0 and env.step_count.item() == 0
    assert not torch.equal(obs, info["final_obs"])


def test_max_steps_truncates_not_terminates():
    env = small_env(max_steps=3, step_cost=0.25)
    g = open_grid()
    g[3, 4] = FOOD
    env.set_layout(g, (3, 3))
    for _ in range(2):
        _, _, term, trunc, info = env.step(act(E_))
        assert not term.item() and not trunc.item() and info["episode_length"].item() == 0
    obs, reward, term, trunc, info = env.step(act(W_))
    assert trunc.item() and not term.item() and info["success"].item()
    assert info["episode_length"].item() == 3
    assert info["episode_return"].item() == pytest.approx(5.0 - 3 * 0.25)
    assert info["food_eaten"].item() == 1 and info["poison_eaten"].item() == 0
    expected = reference_view(open_grid(), (3, 4), 20 + 5 - 0.75, 20.0, 5)
    torch.testing.assert_close(info["final_obs"][0], expected)


def test_death_on_the_last_step_is_termination_only():
    env = small_env(max_steps=2, step_cost=0.25)
    env.set_layout(open_grid(), (3, 3), energy=0.5)
    env.step(act(E_))
    _, _, term, trunc, info = env.step(act(E_))
    assert term.item() and not trunc.item() and not info["success"].item()


def test_energy_is_clamped_at_zero():
    env = small_env(step_cost=0.25, poison_energy=5.0)
    g = open_grid()
    g[3, 4] = POISON
    env.set_layout(g, (3, 3), energy=1.0)
    _, reward, term, _, info = env.step(act(E_))
    assert reward.item() == -1.0 and term.item()  # delta to 0, not -4.25
    assert info["poison_eaten"].item() == 1


# ------------------------------------------------------------------ observations
def test_ground_truth_observation_matches_reference():
    env = small_env(view_size=7, start_energy=8.0)
    g = open_grid()
    g[2, 2], g[1, 3], g[3, 1] = WALL, FOOD, POISON
    obs = env.set_layout(g, (2, 3), energy=6.0)
    torch.testing.assert_close(obs[0], reference_view(g, (2, 3), 6.0, 8.0, 7))
    # spot checks of the layout: food one cell north of the centre, out-of-bounds on the top row
    assert obs[0, 2, 2, 3].item() == 1.0 and obs[0, 5, 0, 3].item() == 1.0 and obs[0, 4, 3, 3].item() == 0.75
    assert torch.all(obs[0].sum(0)[obs[0, 4] == 0] == 1.0)  # one-hot everywhere except the centre


def test_proxy_differs_from_ground_truth_exactly_as_specified():
    g = open_grid()
    g[3, 4], g[4, 4], g[2, 2] = FOOD, POISON, WALL
    gt = small_env(obs_mode="ground_truth").set_layout(g, (3, 3))[0]
    px = small_env(obs_mode="proxy").set_layout(g, (3, 3))[0]
    torch.testing.assert_close(px[2], gt[2] + 0.9 * gt[3])  # interestingness: food 1.0, poison 0.9
    assert torch.all(px[3] == 0)
    for c in (0, 1, 4, 5):
        assert torch.equal(px[c], gt[c])
    assert gt[3].sum().item() == 1.0 and px[2].sum().item() == pytest.approx(1.9)


def test_returned_tensors_do_not_alias_the_next_step():
    env = small_env(2)
    env.set_layout(open_grid(), (3, 3))
    obs, reward, _, _, info = env.step(act(E_, W_))
    keep = obs.clone(), reward.clone(), info["final_obs"].clone()
    env.step(act(S_, S_))
    assert torch.equal(obs, keep[0]) and torch.equal(reward, keep[1]) and torch.equal(info["final_obs"], keep[2])


def test_obs_views_alias_the_buffers_and_match_the_copies():
    copies, views = small_env(2), small_env(2, obs_views=True)
    for env in (copies, views):
        env.set_layout(open_grid(), (3, 3))
    (oc, *_, ic), (ov, *_, iv) = copies.step(act(E_, W_)), views.step(act(E_, W_))
    assert torch.equal(oc, ov) and torch.equal(ic["final_obs"], iv["final_obs"])
    first = ov.clone()
    views.step(act(S_, S_))
    assert not torch.equal(ov, first)  # documented: overwritten by the next step


# ------------------------------------------------------------------ shaping
def test_shaping_is_gamma_phi_next_minus_phi():
    env = small_env(2, shaping_scale=0.5, shaping_gamma=0.9, step_cost=0.25)
    g = open_grid()
    g[3, 6] = FOOD
    env.set_layout(g, (3, 2))
    _, reward, *_ = env.step(act(E_, W_))
    # Phi(s) = -0.5 * 4 = -2 (Chebyshev distance 4 to the food at (3, 6))
    # env0 -> (3, 3): Phi(s') = -1.5, r = -0.25 + 0.9 * -1.5 - (-2) = 0.4
    # env1 -> (3, 1): Phi(s') = -2.5, r = -0.25 + 0.9 * -2.5 + 2 = -0.5
    torch.testing.assert_close(reward, torch.tensor([0.4, -0.5]))


def test_shaping_terminal_potential_is_zero():
    env = small_env(shaping_scale=0.5, shaping_gamma=0.9, step_cost=0.25)
    g = open_grid()
    g[1, 6] = FOOD
    env.set_layout(g, (5, 2), energy=0.25)
    _, reward, term, *_ = env.step(act(NE))
    # Phi(s) = -0.5 * max(4, 4) = -2; s' terminal so Phi(s') = 0: r = -0.25 + 0 + 2
    assert term.item() and reward.item() == pytest.approx(1.75)


def test_shaping_after_eating_uses_remaining_food():
    env = small_env(shaping_scale=1.0, shaping_gamma=1.0, step_cost=0.0, food_energy=5.0)
    g = open_grid()
    g[3, 4], g[6, 6] = FOOD, FOOD
    env.set_layout(g, (3, 3))
    _, reward, *_ = env.step(act(E_))
    # Phi(s) = -1; after eating, the nearest food is (6, 6): Chebyshev max(3, 2) = 3 -> Phi(s') = -3
    # r = 5 + (-3) - (-1) = 3
    assert reward.item() == pytest.approx(3.0)


# ------------------------------------------------------------------ seeds, curriculum, state
def _rollout(env, steps, seed=0):
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(steps):
        obs, r, te, tr, info = env.step(torch.randint(0, 8, (env.num_envs,), generator=g, dtype=torch.int32))
        out.append((obs, r, te, tr, info["episode_return"], info["food_eaten"]))
    return out


def _same(a, b):
    return all(torch.equal(x, y) for sa, sb in zip(a, b) for x, y in zip(sa, sb))


def test_same_seed_same_trajectories_and_reset_seed_reproduces():
    a, b, c = (ForagingEnv(8, seed=s, max_steps=40) for s in (3, 3, 4))
    assert torch.equal(a.reset(), b.reset()) and not torch.equal(a.reset(seed=3), c.reset(seed=4))
    b.reset(seed=3)
    ra, rb = _rollout(a, 100), _rollout(b, 100)
    assert _same(ra, rb)
    assert any(step[2].any() or step[3].any() for step in ra)  # episodes did end (auto-reset covered)
    first = a.reset(seed=11)
    ra = _rollout(a, 60)
    assert torch.equal(c.reset(seed=11), first) and _same(ra, _rollout(c, 60))


def test_env_streams_do_not_depend_on_num_envs():
    small, large = ForagingEnv(3, seed=7, max_steps=20), ForagingEnv(5, seed=7, max_steps=20)
    assert torch.equal(small.reset(), large.reset()[:3])
    g = torch.Generator().manual_seed(0)
    for _ in range(50):
        a = torch.randint(0, 8, (5,), generator=g, dtype=torch.int32)
        (o3, r3, *_), (o5, r5, *_) = small.step(a[:3]), large.step(a)
        assert torch.equal(o3, o5[:3]) and torch.equal(r3, r5[:3])


def test_cpu_threads_shard_without_changing_results():
    one, three = ForagingEnv(10, seed=2, max_steps=25), ForagingEnv(10, seed=2, max_steps=25, cpu_threads=3)
    assert len(three._step_cmds) == 3  # shards of 3, 3 and 4 envs
    assert torch.equal(one.reset(), three.reset())
    assert _same(_rollout(one, 80), _rollout(three, 80))


def test_curriculum_counts_are_drawn_from_the_ranges():
    env = ForagingEnv(256, food_range=(4, 8), poison_range=(2, 6), wall_range=(1, 3), seed=1)
    grid = env.grid
    inner = grid[:, 1:-1, 1:-1]
    for kind, (lo, hi) in ((FOOD, (4, 8)), (POISON, (2, 6)), (WALL, (1, 3))):
        counts = (inner == kind).sum((1, 2))
        assert set(counts.tolist()) == set(range(lo, hi + 1)), kind
    assert (grid[torch.arange(256), env.agent_pos[:, 0], env.agent_pos[:, 1]] == EMPTY).all()


def test_state_dict_round_trip_continues_identically(tmp_path):
    a = ForagingEnv(16, seed=5, max_steps=30)
    _rollout(a, 45, seed=1)
    path = tmp_path / "env.pt"
    torch.save(a.state_dict(), path)
    obs_a = a.observe()
    tail_a = _rollout(a, 60, seed=2)

    b = ForagingEnv(16, seed=99, max_steps=30)
    b.load_state_dict(torch.load(path))
    assert torch.equal(b.observe(), obs_a)
    assert _same(tail_a, _rollout(b, 60, seed=2))


def test_load_state_dict_rejects_other_shapes():
    sd = ForagingEnv(4).state_dict()
    with pytest.raises(ValueError, match="num_envs must be 8 \\(this env\\), got 4"):
        ForagingEnv(8).load_state_dict(sd)
    del sd["rng"]
    with pytest.raises(ValueError, match=r"state is missing \['rng'\]"):
        ForagingEnv(4).load_state_dict(sd)


# ------------------------------------------------------------------ episode statistics
def test_random_policy_episode_stats_are_consistent():
    env = ForagingEnv(64, seed=2, max_steps=100, step_cost=0.25, food_energy=5.0, poison_energy=5.0)
    running = torch.zeros(64)
    g = torch.Generator().manual_seed(0)
    ended = truncated_seen = 0
    for _ in range(250):
        obs, r, term, trunc, info = env.step(torch.randint(0, 8, (64,), generator=g, dtype=torch.int32))
        running += r
        done = term | trunc
        assert not (term & trunc).any()
        assert torch.equal(info["success"], trunc)
        assert torch.equal(info["final_obs"][~done], obs[~done])
        assert (info["episode_length"][~done] == 0).all() and (info["episode_return"][~done] == 0).all()
        torch.testing.assert_close(info["episode_return"][done], running[done])
        # energy bookkeeping (no shaping): a death loses exactly start_energy; a truncated episode's
        # return is -cost * length + 5 * food - 5 * poison and equals final energy - start energy
        assert (info["episode_return"][term] == -20.0).all()
        L, f, p = info["episode_length"][trunc], info["food_eaten"][trunc], info["poison_eaten"][trunc]
        torch.testing.assert_close(info["episode_return"][trunc], -0.25 * L + 5.0 * f - 5.0 * p)
        torch.testing.assert_close(info["final_obs"][trunc, 4, 5, 5] * 20.0, 20.0 + info["episode_return"][trunc])
        assert ((info["episode_length"][done] >= 1) & (info["episode_length"][done] <= 100)).all()
        running[done] = 0
        ended += int(done.sum())
        truncated_seen += int(trunc.sum())
    assert ended > 64 and 0 < truncated_seen < ended


def test_episode_stats_helper():
    stats = EpisodeStats(2, torch.device("cpu"))
    f, t = torch.tensor([False, False]), torch.tensor([True, False])
    assert stats.update(torch.tensor([1.0, 2.0]), f, f)[1].tolist() == [0, 0]
    ret, length = stats.update(torch.tensor([0.5, 1.0]), t, f)  # env0 terminates
    assert ret.tolist() == [1.5, 0.0] and length.tolist() == [2, 0]
    ret, length = stats.update(torch.tensor([4.0, 1.0]), f, t.flip(0))  # env1 truncates
    assert ret.tolist() == [0.0, 4.0] and length.tolist() == [0, 3]
    assert stats.running_return.tolist() == [4.0, 0.0] and stats.running_length.tolist() == [1, 0]
    restored = EpisodeStats(2, torch.device("cpu"))
    restored.load_state_dict(stats.state_dict())
    ret, length = restored.update(torch.tensor([1.0, 1.0]), t, f)
    assert ret.tolist() == [5.0, 0.0] and length.tolist() == [2, 0]


# ------------------------------------------------------------------ bad input
def test_bad_actions_raise_clear_errors():
    env = small_env(4)
    with pytest.raises(TypeError, match="step: actions must have dtype torch.int32, got torch.int64"):
        env.step(torch.zeros(4, dtype=torch.int64))
    with pytest.raises(ValueError, match=r"step: actions must have shape \[N\]=\[4\], got \[4, 1\]"):
        env.step(torch.zeros(4, 1, dtype=torch.int32))
    with pytest.raises(TypeError, match="step: actions must be a torch.Tensor"):
        env.step([0, 1, 2, 3])
    with pytest.raises(ValueError, match="step: actions must be on the env's device cpu, got meta"):
        env.step(torch.zeros(4, dtype=torch.int32, device="meta"))


def test_out_of_range_actions_stay_and_are_counted():
    env = small_env(2)
    env.set_layout(open_grid(), (3, 3))
    _, reward, *_ = env.step(act(8, -1))
    assert env.agent_pos.tolist() == [[3, 3], [3, 3]] and env.invalid_action_count() == 2
    assert reward.tolist() == [-0.25, -0.25]
    strict = small_env(2, check_action_range=True)
    with pytest.raises(ValueError, match=r"step: actions must be in 0..7, got values \[9\]"):
        strict.step(act(0, 9))


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        (dict(num_envs=0), ValueError, "num_envs must be an int >= 1, got 0"),
        (dict(view_size=10), ValueError, "view_size must be odd"),
        (dict(obs_mode="pixels"), ValueError, "obs_mode must be one of ('ground_truth', 'proxy'), got 'pixels'"),
        (dict(food_range=(5, 2)), ValueError, "food_range must satisfy 0 <= low <= high, got (5, 2)"),
        (dict(poison_range=3), TypeError, "poison_range must be a pair of ints"),
        (dict(grid_size=4), ValueError, "grid_size=4 has 4 interior cells, too few"),
        (dict(shaping_gamma=1.5), ValueError, "shaping_gamma must be a number in [0.0, 1.0], got 1.5"),
        (dict(start_energy=0.0), ValueError, "start_energy must be a number > 0.0, got 0.0"),
        (dict(max_steps=2.5), TypeError, "max_steps must be an int"),
        (dict(device="tpu"), ValueError, "device must be 'cpu' or 'cuda[:K]', got 'tpu'"),
        (dict(seed=-1), ValueError, "seed must be an int >= 0, got -1"),
    ],
)
def test_bad_constructor_args(kwargs, error, message):
    with pytest.raises(error) as err:
        make_env("foraging", **kwargs)
    assert message in str(err.value)


def test_set_layout_validates():
    env = small_env()
    g = open_grid()
    g[0, 3] = EMPTY
    with pytest.raises(ValueError, match="every border cell must be WALL"):
        env.set_layout(g, (3, 3))
    g = open_grid()
    g[3, 3] = FOOD
    with pytest.raises(ValueError, match="the agent must stand on an EMPTY cell"):
        env.set_layout(g, (3, 3))


def test_registry_and_protocol():
    with pytest.raises(ValueError, match="unknown env 'pong'; known envs: foraging"):
        make_env("pong")
    env = make_env("foraging", num_envs=3, view_size=7)
    assert isinstance(env, VecEnv) and ENV_REGISTRY["foraging"] is ForagingEnv
    assert env.obs_shape == (6, 7, 7) and env.obs_dtype == torch.float32 and env.num_actions == 8
    obs = env.reset()
    assert obs.shape == (3, 6, 7, 7) and obs.dtype == torch.float32 and obs.device == env.device


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="torch has no CUDA device")
def test_cuda_matches_cpu():
    kw = dict(seed=4, max_steps=40, shaping_scale=0.1, wall_range=(0, 4))
    cpu, gpu = ForagingEnv(32, device="cpu", **kw), ForagingEnv(32, device="cuda", **kw)
    torch.testing.assert_close(gpu.reset().cpu(), cpu.reset())
    g = torch.Generator().manual_seed(0)
    for _ in range(100):
        a = torch.randint(0, 8, (32,), generator=g, dtype=torch.int32)
        oc, rc, tc, uc, ic = cpu.step(a)
        og, rg, tg, ug, ig = gpu.step(a.cuda())
        assert og.device == gpu.device and ig["final_obs"].device == gpu.device
        torch.testing.assert_close(og.cpu(), oc)
        torch.testing.assert_close(rg.cpu(), rc)
        assert torch.equal(tg.cpu(), tc) and torch.equal(ug.cpu(), uc)
        assert torch.equal(ig["episode_length"].cpu(), ic["episode_length"])
    state = gpu.state_dict()
    assert all(v.device.type == "cpu" for v in state.values() if isinstance(v, torch.Tensor))
