"""Animated GIF clips (gbx_lightning/media.py): frames and their timing read back exactly (Pillow's
decoder), the four-grey palette, runs of identical frames, and input checks."""

import io

import numpy as np
import pytest
from PIL import Image

from gbx_lightning.media import SHADE_GREYS, encode_gif


def _decode(data: bytes):
    """GIF -> (image, greys [F, H, W], durations in ms [F])."""
    im = Image.open(io.BytesIO(data))
    frames, durations = [], []
    for i in range(im.n_frames):
        im.seek(i)
        frames.append(np.array(im.convert("L")))
        durations.append(im.info["duration"])
    return im, np.stack(frames), durations


def _played(data: bytes, delay_cs: int) -> np.ndarray:
    """What a viewer shows at each tick of delay_cs: every GIF frame repeated for its duration."""
    _, frames, durations = _decode(data)
    assert all(d % (delay_cs * 10) == 0 for d in durations), durations
    return np.repeat(frames, [d // (delay_cs * 10) for d in durations], axis=0)


@pytest.mark.parametrize("shape", [(3, 72, 80), (1, 5, 7), (1, 300, 300)])
def test_frames_decode_to_the_dmg_greys(shape):
    rng = np.random.default_rng(1)
    frames = rng.integers(0, 4, shape).astype(np.uint8)   # 300x300 noise fills the 4096-code LZW table
    frames[0, :2] = 3                                    # and a run, for long codes
    data = encode_gif(frames, delay_cs=7)
    im, back, durations = _decode(data)
    assert np.array_equal(back, SHADE_GREYS[frames])
    assert im.n_frames == shape[0] and durations == [70] * shape[0]
    assert im.info["loop"] == 0                          # loops forever
    first = Image.open(io.BytesIO(data))                 # (seeking on turns Pillow's frames into RGB)
    assert first.getpalette()[:12] == np.repeat(SHADE_GREYS, 3).tolist()   # palette index = shade
    assert np.array_equal(np.array(first), frames[0])


def test_identical_frames_play_for_their_whole_time():
    a, b = np.zeros((4, 6), np.uint8), np.eye(4, 6, dtype=np.uint8) * 3
    frames = np.stack([a, a, a, b, a, a])
    data = encode_gif(frames, delay_cs=5)
    _, _, durations = _decode(data)
    assert durations == [150, 50, 100]                   # one GIF frame per run
    assert np.array_equal(_played(data, 5), SHADE_GREYS[frames])
    _, still, durations = _decode(encode_gif(np.stack([b] * 4), delay_cs=12))
    assert len(still) == 1 and durations == [480]


def test_a_run_longer_than_gifs_largest_delay_is_capped():
    frames = np.zeros((3, 2, 2), np.uint8)
    frames[2] = 1
    _, _, durations = _decode(encode_gif(frames, delay_cs=40_000))
    assert durations == [655_350, 400_000]               # 65535 cs, the 16-bit field's maximum


def test_scale_repeats_pixels():
    frames = np.array([[[0, 3], [1, 2]]], np.uint8)
    _, back, _ = _decode(encode_gif(frames, scale=3))
    assert np.array_equal(back[0], SHADE_GREYS[np.kron(frames[0], np.ones((3, 3), np.uint8))])


@pytest.mark.parametrize("frames, message", [(np.full((1, 2, 2), 4, np.uint8), "shades 0..3"),
                                             (np.zeros((0, 2, 2), np.uint8), "non-empty"),
                                             (np.zeros((2, 2, 2, 2), np.uint8), "non-empty"),
                                             (np.zeros((1, 2, 2), np.float32), "integer")])
def test_bad_frames_are_refused(frames, message):
    with pytest.raises(ValueError, match=message):
        encode_gif(frames)


@pytest.mark.parametrize("kwargs, message", [({"delay_cs": -1}, "delay_cs"), ({"delay_cs": 70_000}, "delay_cs"),
                                             ({"scale": 0}, "scale")])
def test_bad_settings_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        encode_gif(np.zeros((1, 2, 2), np.uint8), **kwargs)
