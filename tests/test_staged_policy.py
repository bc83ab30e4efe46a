"""models.StagedPolicy: a policy and value head per stage of a game, the stage read from a byte of the data plane.
Known answers: heads set to constants give each observation its own stage's numbers; each row's output is the torso's
features through its stage's rows of the heads, and only those rows get its gradient; on orchard the stage byte is
the maze the env is in; bad options are refused in one line."""

import pytest
import torch

from gbx_lightning.algos.build import build_policy
from gbx_lightning.envs import GameBoyEnv
from gbx_lightning.models import StagedPolicy

SHAPE, A = (3, 72, 80), 5


def _obs(stage_bytes, byte=0):
    torch.manual_seed(1)
    obs = torch.randint(0, 4, (len(stage_bytes), *SHAPE), dtype=torch.uint8)
    obs[:, 0] = torch.randint(0, 256, (72, 80), dtype=torch.uint8)
    obs[:, 0].view(len(stage_bytes), -1)[:, byte] = torch.tensor(stage_bytes, dtype=torch.uint8)
    return obs


def test_shared_torso_takes_each_observations_own_stage_heads():
    """Heads zeroed with biases 0..19 (logits) and 10, 20, 30, 40 (values): stage s's logits are 5 s .. 5 s + 4;
    byte values 4-7 are stages 0-3, any other value (9, 200) the first stage."""
    torch.manual_seed(0)
    policy = StagedPolicy(SHAPE, A, vector_size=12, stages=[4, 5, 6, 7], stage_byte=3)
    with torch.no_grad():
        policy.policy_head.weight.zero_()
        policy.policy_head.bias.copy_(torch.arange(20.0))
        policy.value_head.weight.zero_()
        policy.value_head.bias.copy_(torch.tensor([10.0, 20.0, 30.0, 40.0]))
    obs = _obs([7, 4, 9, 6, 5, 200], byte=3)
    logits, value = policy(obs)
    stages = torch.tensor([3, 0, 0, 2, 1, 0])
    assert torch.equal(policy.stage(obs), stages)
    assert torch.equal(logits, 5.0 * stages[:, None] + torch.arange(5.0))
    assert torch.equal(value, 10.0 * (stages + 1))


def test_shared_torso_heads_are_the_torsos_features_through_the_stages_rows():
    torch.manual_seed(0)
    policy = StagedPolicy(SHAPE, A, vector_size=12, stages=[1, 2], vector_bits=True)
    obs = _obs([2, 1, 2])
    logits, value = policy(obs)
    h = policy.net.torso(obs)
    every = policy.policy_head(h).view(3, 2, A)
    assert torch.allclose(logits, every[torch.arange(3), torch.tensor([1, 0, 1])])
    assert torch.allclose(value, policy.value_head(h)[torch.arange(3), torch.tensor([1, 0, 1])])
    policy.zero_grad()
    policy(obs[1:2])[1].sum().backward()          # a stage-0 row: stage 1's value row gets no gradient
    grad = policy.value_head.weight.grad
    assert grad[0].abs().sum() > 0 and torch.equal(grad[1], torch.zeros_like(grad[1]))


@pytest.mark.parametrize("kwargs, message", [
    ({"stages": [4]}, "stages must be a list of two or more distinct byte values (0-255), got [4]"),
    ({"stages": [4, 4]}, "stages must be a list of two or more distinct byte values (0-255), got [4, 4]"),
    ({"stages": [4, 256]}, "stages must be a list of two or more distinct byte values (0-255), got [4, 256]"),
    ({"stages": [4, 5], "stage_byte": 12}, "stage_byte must be an index into the vector (0..11), got 12"),
])
def test_bad_stage_options_are_refused_in_one_line(kwargs, message):
    with pytest.raises(ValueError) as err:
        StagedPolicy(SHAPE, A, vector_size=12, **kwargs)
    assert str(err.value) == f"staged policy: {message}"


@pytest.mark.parametrize("task, stage", [("orchard/game", 0), ("orchard/game_maze2", 1), ("orchard/game_maze4", 3)])
def test_on_orchard_the_stage_byte_is_the_maze_being_played(task, stage):
    """obs.ram's first field, ladder_level, is byte 0: 4 at power-on (the first maze), 5 and 7 from the later
    mazes' starts."""
    spec = {"base": task, "reward": [{"name": "step_cost"}]}
    env = GameBoyEnv(2, task=spec, action_codec="dpad_noop", cpu_threads=1,
                     obs={"ram": ["ladder_level", "player_y", "player_x"]})
    policy = build_policy(lambda *a, **k: StagedPolicy(*a, stages=[4, 5, 6, 7], **k), env)
    assert policy.vector_size == 3
    obs = env.reset()
    assert torch.equal(policy.stage(obs), torch.full((2,), stage))
