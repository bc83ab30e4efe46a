"""PNG writer for shade frames: valid file structure, exact round trip, clear errors."""

from __future__ import annotations

import struct
import zlib

import numpy as np
import pytest

from gbx_lightning.emu.png import SHADE_GREYS, decode_png_grey, encode_png, save_png


def test_round_trip_maps_shades_to_dmg_greys(tmp_path):
    rng = np.random.default_rng(0)
    shades = rng.integers(0, 4, (144, 160)).astype(np.uint8)
    path = tmp_path / "f.png"
    save_png(path, shades)
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    w, h = struct.unpack(">II", data[16:24])
    assert (w, h) == (160, 144)
    grey = decode_png_grey(data)
    np.testing.assert_array_equal(grey, SHADE_GREYS[shades])
    assert list(SHADE_GREYS) == [255, 170, 85, 0]  # shade 0 white ... shade 3 black


def test_scale_repeats_pixels():
    shades = np.array([[0, 3], [1, 2]], np.uint8)
    grey = decode_png_grey(encode_png(shades, scale=3))
    assert grey.shape == (6, 6)
    assert (grey[:3, :3] == 255).all() and (grey[:3, 3:] == 0).all() and (grey[3:, :3] == 170).all()


def test_chunk_crcs_are_valid():
    data = encode_png(np.zeros((2, 3), np.uint8))
    pos, kinds = 8, []
    while pos < len(data):
        (n,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + n]
        assert struct.unpack(">I", data[pos + 8 + n:pos + 12 + n])[0] == zlib.crc32(kind + body)
        kinds.append(kind)
        pos += 12 + n
    assert kinds == [b"IHDR", b"IDAT", b"IEND"]


@pytest.mark.parametrize("bad, msg", [
    (np.zeros((2, 2, 2), np.uint8), "2-D"),
    (np.full((2, 2), 4, np.uint8), "0..3"),
    (np.zeros((2, 2), np.float32), "integer"),
])
def test_bad_input_names_the_argument(bad, msg):
    with pytest.raises(ValueError, match=msg) as e:
        encode_png(bad)
    assert "shades" in str(e.value)
