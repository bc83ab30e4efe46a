"""gymnasium's vector API over our envs (envs/gym.py), and the CleanRL-style example loop (examples/) on it."""

import sys
from pathlib import Path

import numpy as np
import pytest
import torch

gym = pytest.importorskip("gymnasium")
from gymnasium.vector import AutoresetMode  # noqa: E402

import gbx_lightning.envs.gym  # noqa: E402,F401  (registers the ids)
from gbx_lightning.envs import ForagingEnv  # noqa: E402
from gbx_lightning.envs.gym import GymVectorEnv  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")
OPTIONS = dict(task={"base": "orchard/level1", "start": {"variants": 2}}, stack_k=2, action_codec="dpad_noop",
               max_steps=4, cpu_threads=1)


def test_vector_api_reset_step_and_same_step_autoreset():
    envs = gym.make_vec("gbx_lightning/GameBoy-v0", num_envs=3, vectorization_mode="vector_entry_point", **OPTIONS)
    assert envs.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP
    assert envs.single_observation_space.shape == (2, 72, 80) and envs.single_observation_space.dtype == np.uint8
    assert envs.single_action_space.n == 5 and envs.action_space.shape == (3,)
    obs, info = envs.reset(seed=3)
    assert isinstance(obs, np.ndarray) and obs.shape == (3, 2, 72, 80) and envs.observation_space.contains(obs)
    again, _ = gym.make_vec("gbx_lightning/GameBoy-v0", num_envs=3, vectorization_mode="vector_entry_point",
                            **OPTIONS).reset(seed=3)
    assert np.array_equal(obs, again)                                 # the seed fixes the start
    for t in range(4):
        prev = obs
        obs, reward, terminated, truncated, info = envs.step(np.array([1, 2, 0]))
        assert reward.dtype == np.float32 and terminated.dtype == np.bool_
    assert truncated.all() and info["_final_obs"].all() and info["_episode"].all()   # the time limit: 4 steps
    assert np.array_equal(info["final_obs"][:, 0], prev[:, 1])        # s' continues the episode that ended
    assert not np.array_equal(info["final_obs"], obs)                 # obs starts the next one
    assert info["episode"]["l"].tolist() == [4, 4, 4] and info["episode"]["r"].shape == (3,)
    with pytest.raises(ValueError, match="one int for the whole batch"):
        envs.reset(seed=[1, 2, 3])


def test_tensors_mode_and_a_foraging_env():
    envs = GymVectorEnv(ForagingEnv(4, max_steps=3), tensors=True)
    obs, _ = envs.reset(seed=0)
    assert isinstance(obs, torch.Tensor) and obs.dtype == torch.float32
    obs, reward, terminated, truncated, info = envs.step(torch.tensor([0, 1, 2, 3]))
    assert isinstance(reward, torch.Tensor) and isinstance(info["final_obs"], torch.Tensor)
    with pytest.raises(TypeError, match="one of gbx_lightning's vector envs"):
        GymVectorEnv(object())


@pytest.mark.slow
def test_the_cleanrl_style_example_improves_return_on_the_built_in_task():
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
    from cleanrl_ppo import Args, run

    envs = gym.make_vec("gbx_lightning/GameBoy-v0", num_envs=16, vectorization_mode="vector_entry_point",
                        task="orchard/level1", stack_k=1, action_codec="dpad_noop", max_steps=50)
    torch.set_num_threads(1)
    hist = run(envs, Args(total_steps=24_576, seed=0, learning_rate=5e-4), log=None)   # 48 iterations of 512

    def success(records):   # over the episodes that ended in these iterations
        return sum((h["success_rate"] or 0.0) * h["episodes"] for h in records) / sum(h["episodes"] for h in records)

    first, last = success(hist[:12]), success(hist[-12:])
    assert first < 0.6 and last > 0.9 and last > first + 0.3, (first, last)
