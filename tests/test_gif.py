"""The GIF writer (emu/gif.py): frames read back exactly by an independent decoder (Pillow, which
TensorBoard depends on), animation settings, and input checks."""

import io

import numpy as np
import pytest

from gbx_lightning.emu.gif import encode_gif
from gbx_lightning.emu.png import SHADE_GREYS

Image = pytest.importorskip("PIL.Image")


def _decode(data: bytes):
    im = Image.open(io.BytesIO(data))
    frames = []
    for i in range(im.n_frames):
        im.seek(i)
        frames.append(np.array(im.convert("L")))
    return im, np.stack(frames)


@pytest.mark.parametrize("shape", [(3, 72, 80), (1, 5, 7), (1, 300, 300)])
def test_frames_decode_to_the_dmg_greys(shape):
    rng = np.random.default_rng(1)
    frames = rng.integers(0, 4, shape).astype(np.uint8)   # 300x300 noise fills the 4096-code table
    frames[0, :2] = 3                                    # and a run, for long codes
    im, back = _decode(encode_gif(frames, delay_cs=7))
    assert np.array_equal(back, SHADE_GREYS[frames])
    assert im.n_frames == shape[0]
    assert im.info["loop"] == 0 and im.info["duration"] == 70


def test_scale_repeats_pixels():
    frames = np.array([[[0, 3], [1, 2]]], np.uint8)
    _, back = _decode(encode_gif(frames, scale=3))
    assert np.array_equal(back[0], SHADE_GREYS[np.kron(frames[0], np.ones((3, 3), np.uint8))])


@pytest.mark.parametrize("frames, message", [(np.full((1, 2, 2), 4, np.uint8), "shades 0..3"),
                                             (np.zeros((0, 2, 2), np.uint8), "non-empty"),
                                             (np.zeros((2, 2, 2, 2), np.uint8), "non-empty")])
def test_bad_frames_are_refused(frames, message):
    with pytest.raises(ValueError, match=message):
        encode_gif(frames)
