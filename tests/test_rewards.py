"""The goal-template reward (envs/rewards.py) against hand-computed numbers, and the Warp kernel
that GameBoyEnv uses for the distance against the pure-torch formula."""

import numpy as np
import pytest
import torch
import warp as wp

from gbx_lightning.envs.pixels import template_distance
from gbx_lightning.envs.rewards import consecutive_hits, goal_distance, goal_reward, ram_counter_delta


def test_goal_distance_is_the_mean_absolute_shade_difference_over_the_region():
    goal = torch.tensor([[0, 3], [1, 2]], dtype=torch.uint8)
    frames = torch.tensor([[[0, 3], [1, 2]],       # identical: 0
                           [[3, 0], [1, 2]],       # |3|+|3|+0+0 = 6 over 4 pixels of max 3: 6/12
                           [[3, 0], [2, 0]]],      # 3+3+1+2 = 9: 9/12
                          dtype=torch.uint8)
    everywhere = torch.ones(2, 2)
    assert goal_distance(frames, goal, everywhere).tolist() == pytest.approx([0.0, 0.5, 0.75])
    top_row = torch.tensor([[1.0, 1.0], [0.0, 0.0]])
    assert goal_distance(frames, goal, top_row).tolist() == pytest.approx([0.0, 1.0, 1.0])


def test_consecutive_hits_count_close_steps_and_reset_on_a_far_one():
    dist = torch.tensor([0.01, 0.20, 0.03, 0.049])
    hits = torch.tensor([1, 5, 0, 2], dtype=torch.int32)
    new_hits, reached = consecutive_hits(dist, hits, tau=0.05, k_consecutive=2)
    assert new_hits.tolist() == [2, 0, 1, 3]
    assert reached.tolist() == [True, False, False, True]


def test_goal_reward_formula():
    # reward = step_cost + alpha * (prev - dist) + bonus * reached
    r = goal_reward(torch.tensor([0.5, 0.2, 0.0]), torch.tensor([0.5, 0.6, 0.1]), torch.tensor([False, False, True]),
                    step_cost=-0.01, alpha=2.0, goal_bonus=10.0)
    assert r.tolist() == pytest.approx([-0.01, -0.01 + 2 * 0.4, -0.01 + 2 * 0.1 + 10.0])


def test_ram_counter_delta_counts_a_wrap_as_progress():
    now = torch.tensor([5, 2, 7], dtype=torch.uint8)
    before = torch.tensor([5, 255, 3], dtype=torch.uint8)
    assert ram_counter_delta(now, before).tolist() == [0.0, 3.0, 4.0]


def test_distance_kernel_matches_the_formula():
    rng = np.random.default_rng(0)
    n = 7
    frames = rng.integers(0, 4, (n, 72, 80)).astype(np.uint8)
    templates = rng.integers(0, 4, (2, 72, 80)).astype(np.uint8)
    weights = np.zeros((2, 72, 80), np.float32)
    weights[0, 24:40, :] = 1.0                      # a rectangle
    weights[1] = rng.random((72, 80)) < 0.3         # a mask
    boxes = np.array([[24, 40, 0, 80], [0, 72, 0, 80]], np.int32)
    scale = (1.0 / (3.0 * weights.sum(axis=(1, 2)))).astype(np.float32)
    out = wp.zeros((2, n + 3), dtype=wp.float32)
    wp.launch(template_distance, dim=(2, n), inputs=[wp.array(frames), wp.array(templates), wp.array(weights),
                                                     wp.array(boxes), wp.array(scale), 3, out])
    got = out.numpy()
    for t in range(2):
        want = goal_distance(torch.from_numpy(frames), torch.from_numpy(templates[t]), torch.from_numpy(weights[t]))
        np.testing.assert_allclose(got[t, 3:], want.numpy(), rtol=1e-5)
        assert (got[t, :3] == 0).all()   # env0 offset: rows before it untouched
