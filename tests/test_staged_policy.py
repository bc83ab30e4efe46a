"""models.StagedPolicy: a policy and value per stage of a game, the stage read from a byte of the data plane. Known
answers: heads set to constants give each observation its own stage's numbers; a whole network per stage is fed
only its stage's rows (its output is that network's own, the others get no gradient); on orchard the stage byte is
the maze the env is in; bad options are refused in one line."""

import pytest
import torch

from gbx_lightning.algos.build import build_policy
from gbx_lightning.envs import GameBoyEnv
from gbx_lightning.models import PixelVectorPolicy, StagedPolicy

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


def test_separate_networks_see_only_their_stages_rows():
    """Each row's output is its stage's network run on that row alone; a stage with no rows gets no gradient,
    the others do."""
    torch.manual_seed(0)
    policy = StagedPolicy(SHAPE, A, vector_size=12, stages=[4, 5, 6, 7], separate=True)
    assert all(isinstance(net, PixelVectorPolicy) for net in policy.nets) and len(policy.nets) == 4
    obs = _obs([5, 7, 5])
    logits, value = policy(obs)
    for row, stage in enumerate([1, 3, 1]):
        own_logits, own_value = policy.nets[stage](obs[row:row + 1])
        assert torch.allclose(logits[row], own_logits[0], atol=1e-6)
        assert torch.allclose(value[row], own_value[0], atol=1e-6)
    logprob, entropy, value = policy.evaluate(obs, torch.tensor([0, 3, 4]))
    (logprob.sum() + value.sum()).backward()
    grads = [net.dense[0].weight.grad for net in policy.nets]
    assert grads[0] is None and grads[2] is None
    assert grads[1].abs().sum() > 0 and grads[3].abs().sum() > 0


@pytest.mark.parametrize("kwargs, message", [
    ({"stages": [4]}, "stages must be a list of two or more distinct byte values (0-255), got [4]"),
    ({"stages": [4, 4]}, "stages must be a list of two or more distinct byte values (0-255), got [4, 4]"),
    ({"stages": [4, 256]}, "stages must be a list of two or more distinct byte values (0-255), got [4, 256]"),
    ({"stages": [4, 5], "stage_byte": 12}, "stage_byte must be an index into the vector (0..11), got 12"),
    ({"stages": [4, 5], "separate": 1}, "separate must be true or false, got 1"),
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
