"""State pools (envs/features/pool.py): the harvest / draw / swarm plans against hand-made cases, then on orchard: states
harvested when a seed is eaten are exact copies of the envs' machines, resets drawn from the pool start where the
harvested states were (score carried over), a swarm restarts the others from the best env (truncated, not
terminated), an evaluation env does none of it, a resumed run equals the uninterrupted one, and one-line refusals
(a pool from another ROM, one that does not fit, bad pool fields)."""

import io

import numpy as np
import pytest
import torch

from gbx_lightning.envs import GameBoyEnv, load_task
from gbx_lightning.envs.base import OptionError
from gbx_lightning.envs.features.pool import draw_pool_slots, harvest_plan, swarm_plan
from gbx_lightning.roms import orchard

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

NOOP, R, L, U, D = range(5)
SEEDS = [{"name": "seeds", "kind": "increase", "field": "seeds_eaten"}]


def _task(level=1, variants=1, **pool):
    return {"base": f"orchard/level{level}", "start": {"variants": variants}, "milestones": SEEDS,
            "pool": {"score": {"seeds": 1.0}, "max_mb": 1, **pool}}


def _env(n, task, **kw):
    return GameBoyEnv(n, task=task, action_codec="dpad_noop", **{"cpu_threads": 1, **kw})


def _step(env, actions):
    return env.step(torch.tensor(actions, dtype=torch.int32))


def _entry_rows(env, name):
    """The pool's entries in use: their `name` state arrays, by entry."""
    used = torch.nonzero(env.feature("pool").book.entry_serial >= 0).flatten().tolist()
    arr = env.cache.snapshot.arrays[name].numpy()
    return {j: arr[env.num_start_states + j] for j in used}


# ---------------------------------------------------------------------------------------------- the plans by hand
def test_harvest_plan_fills_empty_entries_then_replaces_the_weakest_never_a_better_one():
    score = torch.tensor([5.0, 1.0, 7.0, 3.0])
    candidate = torch.tensor([True, True, True, False])
    # 4 entries: 1 and 3 empty; 0 holds score 2 (serial 4), 2 holds score 6 (serial 1)
    entry_score = torch.tensor([2.0, 0.0, 6.0, 0.0])
    serial = torch.tensor([4, -1, 1, -1])
    src, dst, ok = harvest_plan(score, candidate, entry_score, serial, per_step=3)
    # candidates best first: env 2 (7), env 0 (5), env 1 (1); entries: 1, 3 (empty, slot order), then 0 (score 2)
    assert src.tolist() == [2, 0, 1] and dst.tolist() == [1, 3, 0] and ok.tolist() == [True, True, False]
    # equal scores: the older entry goes first
    src, dst, ok = harvest_plan(torch.tensor([6.0]), torch.tensor([True]), torch.tensor([6.0, 6.0]),
                                torch.tensor([9, 3]), per_step=4)
    assert dst.tolist() == [1] and ok.tolist() == [True]
    # no candidate: nothing taken
    assert not harvest_plan(score, torch.zeros(4, dtype=torch.bool), entry_score, serial, 2)[2].any()


def test_draw_pool_slots_inverts_the_weights():
    """Weights [0, 1, 3, 0] (sum 4): u in [0, 1/4) draws entry 1, [1/4, 1) entry 2; never a zero weight."""
    w = torch.tensor([0.0, 1.0, 3.0, 0.0])
    u = torch.tensor([0.0, 0.24, 0.26, 0.5, 0.999])
    assert draw_pool_slots(w, u).tolist() == [1, 1, 2, 2, 2]


def test_swarm_plan_picks_the_best_and_only_envs_behind_it():
    gen = torch.Generator().manual_seed(0)
    score = torch.tensor([1.0, 5.0, 3.0, 5.0, 0.0])
    eligible = torch.tensor([True, True, True, True, False])
    best, targets = swarm_plan(score, eligible, 1.0, gen)
    assert int(best) == 1 and targets.tolist() == [True, False, True, False, True]   # env 3 ties the best: stays
    best, targets = swarm_plan(score, torch.tensor([True, False, True, False, True]), 1.0, gen)
    assert int(best) == 2 and targets.tolist() == [True, False, False, False, True]
    best, targets = swarm_plan(torch.zeros(5), torch.ones(5, dtype=torch.bool), 1.0, gen)
    assert not targets.any()                                                          # nobody ahead: nothing moves
    counts = [int(swarm_plan(torch.arange(8.0), torch.ones(8, dtype=torch.bool), 0.25, gen)[1].sum())
              for _ in range(20)]
    assert max(counts) <= 2 and min(counts) >= 1                   # round(0.25 * 8) drawn, env 7 (the best) excluded


# ---------------------------------------------------------------------------------------------- on orchard
def test_harvested_states_are_the_envs_machines_and_resets_start_there():
    """Level 1, env 0 goes up and env 1 down: both eat a seed (score 1) at step 1 and are harvested; the pool's two
    entries are exact copies of their machines. Env 0 then walks the route to LEVEL CLEAR; its next episode (sample
    1.0) starts from a harvested state: 3 seeds left, base score 1, reported from_pool when it ends."""
    env = _env(2, _task(sample=1.0), max_steps=40)
    _step(env, [U, D])
    pooled = _entry_rows(env, "wram")
    assert len(pooled) == 2 and env.feature("pool").book.entry_score[list(pooled)].tolist() == [1.0, 1.0]
    for name in env.machines[0].state_names:
        entries = list(_entry_rows(env, name).values())
        live = env.machines[0].state_array(name).numpy()
        assert sorted(e.tobytes() for e in entries) == sorted(row.tobytes() for row in live), name
    assert {int(rows[orchard.SEEDS_LEFT - 0xC000]) for rows in pooled.values()} == {3}
    # env 0 finishes the level (D, D, U, L, L, R, R, R from (10, 5)); env 1 waits
    for action in [D, D, U, L, L, R, R]:
        _, _, terminated, _, info = _step(env, [action, NOOP])
    _, _, terminated, truncated, info = _step(env, [R, NOOP])
    assert terminated.tolist() == [True, False] and info["from_pool"].tolist() == [0, 0]
    # its new episode: a pooled state (3 seeds left, one seed eaten since the level's start: base score 1)
    assert env.read_ram(orchard.SEEDS_LEFT)[0, 0].item() == 3 and env.feature("pool").from_pool.tolist() == [True, False]
    assert env.feature("pool").base_score.tolist() == [1.0, 0.0]
    stats = env.feature("pool").stats()
    # harvested: both envs at step 1, env 0 again at its 2nd and 3rd seed (not the 4th: terminated on LEVEL CLEAR)
    assert stats["pool_states"] == stats["pool_harvested"] == 4 and stats["pool_best_score"] == 3.0
    env.eval()
    for _ in range(40):
        _, _, terminated, truncated, info = _step(env, [NOOP, NOOP])
        if truncated[0]:
            break
    assert info["from_pool"].tolist() == [1, 0]


def test_record_harvests_only_states_beyond_every_pooled_one():
    """Env 0 eats a seed at step 1 (score 1), env 1 at step 2 (score 1 too): `rise` harvests both, `record` only the
    first (the second is no better than a pooled state)."""
    counts = {}
    for when in ("rise", "record"):
        env = _env(2, _task(when=when))
        _step(env, [U, NOOP])
        _step(env, [NOOP, D])
        counts[when] = env.feature("pool").stats()["pool_harvested"]
        assert env.feature("pool").book.record.item() == 1.0
    assert counts == {"rise": 2, "record": 1}


def test_a_swarm_restarts_the_envs_behind_from_the_best_one():
    """4 envs, swarm every step with fraction 1: at step 1 env 0 eats a seed (score 1), the others stand still (0):
    they end truncated (not terminated: targets bootstrap) and restart from env 0's machine; env 0 goes on."""
    env = _env(4, _task(sample=0.0, swarm={"every": 1, "fraction": 1.0}), cpu_threads=2)
    _, _, terminated, truncated, info = _step(env, [U, NOOP, NOOP, NOOP])
    assert terminated.tolist() == [False] * 4 and truncated.tolist() == [False, True, True, True]
    wram = np.concatenate([gb.state_array("wram").numpy() for gb in env.machines])
    assert all(np.array_equal(wram[k], wram[0]) for k in (1, 2, 3))
    assert env.read_ram(orchard.PLAYER_X, 2).tolist() == [[80, 40]] * 4
    assert env.feature("pool").base_score.tolist() == [0.0, 1.0, 1.0, 1.0] and env.feature("pool").stats()["pool_swarmed"] == 3
    # now all score 1: the next swarm moves nobody
    _, _, _, truncated, _ = _step(env, [NOOP] * 4)
    assert not truncated.any()


def test_with_one_start_state_a_reset_not_drawn_from_the_pool_starts_at_the_task_start():
    """A task with one start state never draws among start states, so each reset's slot must be set anyway: an env
    whose previous episode started from a pooled state, ended again with no pool draw (sample 0 now), restarts from
    the level's start (4 seeds left), and env.reset() puts every env at the start (before the fix both kept the
    pooled slot: 3 seeds left)."""
    env = _env(2, _task(sample=1.0), max_steps=12)
    for action in [U, D, D, U, L, L, R, R, R]:          # env 0: level 1 cleared at step 9, restarted from the pool
        _, _, terminated, _, _ = _step(env, [action, NOOP])
    assert terminated.tolist() == [True, False] and env.read_ram(orchard.SEEDS_LEFT)[:, 0].tolist() == [3, 4]
    assert env.slots.tolist()[0] >= env.num_start_states
    env.feature("pool").config.sample = 0.0
    for _ in range(3):                                  # env 1 ends by the time limit (12 steps) with no pool draw
        _, _, _, truncated, _ = _step(env, [NOOP, NOOP])
    assert truncated.tolist() == [False, True] and env.read_ram(orchard.SEEDS_LEFT)[:, 0].tolist() == [3, 4]
    for _ in range(9):                                  # env 0's pooled episode ends by the time limit too
        _, _, _, truncated, _ = _step(env, [NOOP, NOOP])
    assert truncated.tolist() == [True, False] and env.read_ram(orchard.SEEDS_LEFT)[:, 0].tolist() == [4, 4]
    env.feature("pool").config.sample = 1.0
    _step(env, [U, NOOP])                               # env 0 harvested again; then a full reset
    env.reset()
    assert env.read_ram(orchard.SEEDS_LEFT)[:, 0].tolist() == [4, 4] and env.slots.tolist() == [0, 0]


def test_an_evaluation_env_harvests_nothing_and_never_swarms():
    env = _env(4, _task(sample=1.0, swarm={"every": 1, "fraction": 1.0}), cpu_threads=2).eval()
    _, _, _, truncated, _ = _step(env, [U, NOOP, NOOP, NOOP])
    assert not truncated.any() and env.feature("pool").stats()["pool_harvested"] == 0


def test_a_pooled_run_resumes_exactly():
    """Level 2, 6 envs, random actions, a pool sampled half the time and a swarm every 7 steps: after a checkpoint at
    step 25 the next 35 steps (observations, rewards, ends, reports, the pool) equal the uninterrupted run's."""
    task = _task(level=2, variants=2, sample=0.5, priority=1.0, swarm={"every": 7, "fraction": 0.5})
    options = dict(max_steps=15, cpu_threads=2)
    gen = torch.Generator().manual_seed(11)
    actions = [torch.randint(0, 5, (6,), generator=gen, dtype=torch.int32) for _ in range(60)]
    first = _env(6, task, **options)
    for a in actions[:25]:
        first.step(a)
    buffer = io.BytesIO()
    torch.save(first.state_dict(), buffer)

    def run(env):
        out = []
        for a in actions[25:]:
            obs, reward, terminated, truncated, info = env.step(a)
            out.append((obs, reward, terminated, truncated, info["from_pool"], info["seeds"]))
        return out, env.feature("pool").stats()

    after, stats = run(first)
    assert stats["pool_harvested"] > 0 and stats["pool_swarmed"] > 0
    assert sum(int(x[4].sum()) for x in after) > 0            # episodes started from the pool ended in this stretch
    second = _env(6, task, **{**options, "seed": 3})
    buffer.seek(0)
    second.load_state_dict(torch.load(buffer, weights_only=True))
    resumed, stats2 = run(second)
    assert stats2 == stats
    assert all(torch.equal(x, y) for a, b in zip(after, resumed) for x, y in zip(a, b))


def test_a_pool_from_another_rom_or_that_does_not_fit_is_refused_in_one_line():
    env = _env(2, _task())
    _step(env, [U, D])
    state = env.state_dict()
    state["features"]["pool"]["rom_sha256"] = "0" * 64
    fresh = _env(2, _task())
    with pytest.raises(ValueError) as err:
        fresh.load_state_dict(state)
    assert str(err.value) == ("GameBoyEnv.load_state_dict: the state pool was harvested from another ROM (sha256 "
                              f"000000000000...), this env runs {fresh.rom_sha256[:12]}...")
    state = env.state_dict()
    state["features"]["pool"]["entries"] = torch.tensor([0, 400])
    with pytest.raises(ValueError, match=r"^GameBoyEnv.load_state_dict: the state pool holds entries up to 400, "
                                         r"this task's pool has 14 \(pool.max_mb as saved, and the same stack_k\)$"):
        fresh.load_state_dict(state)
    with pytest.raises(ValueError, match=r"^GameBoyEnv.load_state_dict: the state was saved with a state pool, this "
                                         r"env's task has none$"):
        _env(2, {"base": "orchard/level1", "start": {"variants": 1}, "milestones": SEEDS}).load_state_dict(
            env.state_dict())


@pytest.mark.parametrize("pool, message", [
    ({"score": {"seedz": 1.0}}, "task.pool.score.seedz is not one of the task's milestones (seeds)"),
    ({"score": {}}, "task.pool.score must map milestone names to weights (e.g. {maps_visited: 1.0}), got {}"),
    ({"score": {"seeds": 1.0}, "when": "often"}, "task.pool.when must be one of ['rise', 'record'], got 'often'"),
    ({"score": {"seeds": 1.0}, "sample": 2}, "task.pool.sample must be a number in [0.0, 1.0], got 2"),
    ({"score": {"seeds": 1.0}, "swarm": {"every": 0}}, "task.pool.swarm.every must be an int >= 1, got 0"),
    ({"score": {"seeds": 1.0}, "swarm": {"fraction": 0}}, "task.pool.swarm.fraction must be a number in (0.0, 1.0], "
                                                         "got 0"),
    ({"score": {"seeds": 1.0}, "swarm": {"evry": 5}}, "task.pool.swarm.evry is not a field of Swarm; fields: every, "
                                                      "fraction"),
    ({"score": {"seeds": 1.0}, "size": 5}, "task.pool.size is not a field of Pool; fields: score, max_mb, per_step, "
                                           "when, sample, priority, swarm"),
])
def test_bad_pool_fields_are_one_line_errors(pool, message):
    with pytest.raises(OptionError) as err:
        load_task({"base": "orchard/level1", "milestones": SEEDS, "pool": pool})
    assert str(err.value) == message


def test_a_pool_too_small_for_one_state_is_refused_before_anything_is_built():
    with pytest.raises(OptionError, match=r"^task.pool.max_mb holds no state: one takes 0.070 MB \(machine and frame "
                                          r"stack\), got 0.01$"):
        GameBoyEnv.check_options(task={"base": "orchard/level1", "milestones": SEEDS,
                                       "pool": {"score": {"seeds": 1.0}, "max_mb": 0.01}})
