"""Warp kernels for GameBoyEnv's per-step pixel work: template distances and the frame stack.

Why kernels and not torch ops: on a CPU the same work as torch ops (int16 casts, abs,
weighted sums, a gather of start stacks and a masked select over the whole [N, K, 72, 80]
stack) cost ~40 us per env and step, more than a third of the emulation itself; these
kernels read each pixel once and write each output once.

Frames are handled as rows of 64-bit words (a 72x80 uint8 frame = 720 words): a copy moves
8 pixels per load/store. Each kernel takes a ``chunk``: on a CPU a thread handles a whole
env (one cheap test for an env with nothing to do), on a GPU one word (neighbouring threads
touch neighbouring words: coalesced).
"""
from __future__ import annotations

import warp as wp

WORDS_PER_FRAME = 72 * 80 // 8


@wp.kernel(enable_backward=False)
def template_distance(frames: wp.array3d(dtype=wp.uint8), templates: wp.array3d(dtype=wp.uint8),
                      weights: wp.array3d(dtype=wp.float32), boxes: wp.array2d(dtype=wp.int32),
                      scale: wp.array(dtype=wp.float32), env0: int, dist: wp.array2d(dtype=wp.float32)):
    """dist[t, env0 + i] = scale[t] * sum over template t's box of weights * |frames[i] - templates[t]|.

    scale[t] = 1 / (3 * sum(weights[t])): the mean absolute shade difference over the region, in [0, 1].
    """
    t, i = wp.tid()
    total = float(0.0)
    for y in range(boxes[t, 0], boxes[t, 1]):
        for x in range(boxes[t, 2], boxes[t, 3]):
            d = int(frames[i, y, x]) - int(templates[t, y, x])
            if d < 0:
                d = -d
            total += weights[t, y, x] * float(d)
    dist[t, env0 + i] = total * scale[t]


@wp.kernel(enable_backward=False)
def compose_stacks(prev: wp.array2d(dtype=wp.int64), frame: wp.array2d(dtype=wp.int64),
                   cache: wp.array2d(dtype=wp.int64), slots: wp.array(dtype=wp.int32),
                   done: wp.array(dtype=wp.uint8), env0: int, chunk: int,
                   final_obs: wp.array2d(dtype=wp.int64), obs: wp.array2d(dtype=wp.int64)):
    """For env e = env0 + i (rows of K frames, each WORDS_PER_FRAME words, newest last):
    final_obs[e] = prev[e] shifted one frame older + frame[i];
    obs[e] = cache[slots[e]] where done[e] (the new episode's first stack), else final_obs[e]."""
    i, c = wp.tid()
    e = env0 + i
    width = final_obs.shape[1]
    keep = width - WORDS_PER_FRAME
    is_done = done[e] != wp.uint8(0)
    s = slots[e]
    for k in range(c * chunk, wp.min((c + 1) * chunk, width)):
        v = wp.int64(0)
        if k < keep:
            v = prev[e, k + WORDS_PER_FRAME]
        else:
            v = frame[i, k - keep]
        final_obs[e, k] = v
        if is_done:
            obs[e, k] = cache[s, k]
        else:
            obs[e, k] = v
