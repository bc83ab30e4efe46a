"""What GameBoyEnv's step reuses instead of redoing (envs/gameboy.py ``read_field``; ``Step.none_ended``) changes
nothing it returns: orchard's full game with every RAM feature its config uses (the data plane with ram, visited and
nearby; milestones; the explore, seed and maze rewards; the RAM goal; a pool with swarms; train starts), on 2 CPU shards and on 1, stepped
with random actions and episodes short enough to end every few steps, equals the same env made to read every field
afresh through a per-read join of the shards and to compute every final observation and milestone start: the
observations, final observations, rewards, ends and infos of every step."""

import contextlib

import pytest
import torch

from gbx_lightning.envs import GameBoyEnv
from gbx_lightning.envs.features.base import Step

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

TASK = {"base": "orchard/game",
        "reward": [{"name": "step_cost", "cost": -0.002}, {"name": "success_bonus", "bonus": 2.0},
                   {"name": "fail_penalty", "penalty": -0.25}, {"name": "ram", "field": "seeds_eaten", "weight": 0.1},
                   {"name": "ram", "field": "level", "weight": 1.0},
                   {"name": "explore", "fields": ["ladder_level", "player_y", "player_x"], "weight": 0.01}],
        "pool": {"score": {"seeds": 1.0}, "max_mb": 4, "per_step": 4, "when": "rise", "sample": 0.5,
                 "swarm": {"every": 16, "fraction": 0.25}},
        "train_starts": {"share": 0.5, "starts": ["orchard/game_maze2", "orchard/game_maze4"]}}
OBS = {"ram": ["ladder_level", "player_y", "player_x", "seeds_left", "hazard_x", "hazard_y", "hazard_dir"],
       "visited": {"radius": 2, "stride": 16},
       "nearby": {"things": ["hazard_y", "hazard_x"], "around": ["player_y", "player_x"], "radius": 3, "stride": 8,
                  "value": "hazard_dir", "count": "num_hazards"}}


def _env(shards):
    return GameBoyEnv(6, task=TASK, obs=OBS, action_codec="dpad_noop", stack_k=2, frames_per_step=8,
                      release_after_frames=8, max_steps=7, cpu_threads=shards)


def _afresh(monkeypatch):
    """Every read as before the reuse: no fields remembered, the shards joined per read, nothing skipped."""
    monkeypatch.setattr(GameBoyEnv, "_reading", lambda self: contextlib.nullcontext())
    monkeypatch.setattr(Step, "none_ended", property(lambda self: False))


def _play(env, steps=40):
    env.reset(seed=3)
    gen = torch.Generator().manual_seed(5)
    out = []
    for _ in range(steps):
        obs, reward, terminated, truncated, info = env.step(
            torch.randint(0, env.num_actions, (env.num_envs,), generator=gen, dtype=torch.int32))
        out.append((obs, reward, terminated, truncated, info))
    return out


@pytest.mark.parametrize("shards", [2, 1])
def test_the_step_reuses_reads_and_skips_work_without_changing_what_it_returns(shards, monkeypatch):
    fast = _play(_env(shards))
    ended = torch.stack([t | u for _, _, t, u, _ in fast])
    # the shortcut's both sides are played: steps where no episode ended and steps where some did
    assert 0 < int(ended.any(1).sum()) < len(fast)
    with monkeypatch.context() as m:
        _afresh(m)
        slow = _play(_env(shards))
    for k, (a, b) in enumerate(zip(fast, slow)):
        for x, y in zip(a[:4], b[:4]):
            assert torch.equal(x, y), f"step {k + 1}"
        assert a[4].keys() == b[4].keys()
        for key in a[4]:
            assert torch.equal(torch.as_tensor(a[4][key]), torch.as_tensor(b[4][key])), f"step {k + 1}: {key}"
