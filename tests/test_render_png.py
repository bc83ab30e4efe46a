"""PNG screenshots and goal templates (gbx_lightning/media.py): the DMG greys, exact round trips, files
written before the switch to Pillow read the same, image-editor PNGs read by luminance, clear errors."""

from __future__ import annotations

import io
import struct
import zlib
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from gbx_lightning.media import SHADE_GREYS, decode_png_grey, encode_png, grey_to_shades, save_png

ROM_DIR = Path(__file__).resolve().parents[1] / "gbx_lightning" / "roms"


def _chunks(data: bytes) -> list[tuple[bytes, bytes]]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, out = 8, []
    while pos < len(data):
        (n,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + n]
        assert struct.unpack(">I", data[pos + 8 + n:pos + 12 + n])[0] == zlib.crc32(kind + body)
        out.append((kind, body))
        pos += 12 + n
    return out


def _legacy_png(grey: np.ndarray) -> bytes:
    """The bytes the hand-written writer (emu/png.py, until Pillow) produced: 8-bit grey, one IDAT,
    filter type 0 on every row, zlib level 9. The shipped goal templates are such files."""
    def chunk(kind, body):
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
    h, w = grey.shape
    raw = np.concatenate([np.zeros((h, 1), np.uint8), grey], axis=1).tobytes()
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


def _read_legacy_png(data: bytes) -> np.ndarray:
    """An independent reader for _legacy_png's layout (no Pillow): IHDR, then filter-0 rows."""
    chunks = dict(_chunks(data))
    w, h, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", chunks[b"IHDR"])
    assert (depth, colour, interlace) == (8, 0, 0)
    rows = np.frombuffer(zlib.decompress(chunks[b"IDAT"]), np.uint8).reshape(h, w + 1)
    assert (rows[:, 0] == 0).all()
    return rows[:, 1:]


def test_round_trip_maps_shades_to_dmg_greys(tmp_path):
    rng = np.random.default_rng(0)
    shades = rng.integers(0, 4, (144, 160)).astype(np.uint8)
    path = tmp_path / "f.png"
    save_png(path, shades)
    data = path.read_bytes()
    ihdr = dict(_chunks(data))[b"IHDR"]
    assert struct.unpack(">IIBB", ihdr[:10]) == (160, 144, 8, 0)   # width, height, 8-bit, greyscale
    grey = decode_png_grey(data)
    np.testing.assert_array_equal(grey, SHADE_GREYS[shades])
    np.testing.assert_array_equal(grey_to_shades(grey), shades)
    assert list(SHADE_GREYS) == [255, 170, 85, 0]  # shade 0 white ... shade 3 black


def test_scale_repeats_pixels():
    shades = np.array([[0, 3], [1, 2]], np.uint8)
    grey = decode_png_grey(encode_png(shades, scale=3))
    assert grey.shape == (6, 6)
    assert (grey[:3, :3] == 255).all() and (grey[:3, 3:] == 0).all() and (grey[3:, :3] == 170).all()
    assert (grey[3:, 3:] == 85).all()


@pytest.mark.parametrize("name", ["orchard_clear.png", "orchard_gameover.png"])
def test_shipped_templates_read_as_before(name):
    """The goal templates were written by the hand-written encoder; Pillow reads the same pixels as an
    independent reader of that layout, and they are DMG greys only."""
    data = (ROM_DIR / name).read_bytes()
    grey = decode_png_grey(data)
    np.testing.assert_array_equal(grey, _read_legacy_png(data))
    assert grey.shape == (72, 80) and set(np.unique(grey)) <= set(SHADE_GREYS.tolist())
    np.testing.assert_array_equal(SHADE_GREYS[grey_to_shades(grey)], grey)


def test_legacy_files_and_new_files_decode_alike():
    shades = np.random.default_rng(1).integers(0, 4, (72, 80)).astype(np.uint8)
    np.testing.assert_array_equal(decode_png_grey(_legacy_png(SHADE_GREYS[shades])), SHADE_GREYS[shades])
    np.testing.assert_array_equal(decode_png_grey(encode_png(shades)), SHADE_GREYS[shades])


def _pillow_png(image: Image.Image) -> bytes:
    buf = io.BytesIO()
    image.save(buf, format="PNG")
    return buf.getvalue()


def test_editor_pngs_read_by_luminance_alpha_ignored():
    rgb = np.array([[[255, 0, 0], [0, 255, 0], [0, 0, 255], [85, 85, 85]]], np.uint8)
    expected = [76, 150, 29, 85]       # rint(0.299 R + 0.587 G + 0.114 B)
    assert decode_png_grey(_pillow_png(Image.fromarray(rgb, "RGB"))).tolist() == [expected]
    rgba = np.concatenate([rgb, np.array([[[0], [10], [128], [255]]], np.uint8)], axis=2)
    assert decode_png_grey(_pillow_png(Image.fromarray(rgba, "RGBA"))).tolist() == [expected]
    palette = Image.fromarray(np.array([[0, 1, 2, 3]], np.uint8), "P")
    palette.putpalette(rgb.reshape(-1).tolist())
    assert decode_png_grey(_pillow_png(palette)).tolist() == [expected]
    grey_alpha = np.array([[[170, 0], [85, 255]]], np.uint8)
    assert decode_png_grey(_pillow_png(Image.fromarray(grey_alpha, "LA"))).tolist() == [[170, 85]]


def test_16_bit_and_1_bit_greys_are_scaled():
    wide = np.array([[0, 257 * 85, 257 * 170, 65535]], np.uint16)
    assert decode_png_grey(_pillow_png(Image.fromarray(wide))).tolist() == [[0, 85, 170, 255]]
    bits = np.array([[True, False, True]])
    assert decode_png_grey(_pillow_png(Image.fromarray(bits))).tolist() == [[255, 0, 255]]


def test_damaged_or_foreign_files_are_refused():
    data = bytearray(encode_png(np.random.default_rng(2).integers(0, 4, (72, 80)).astype(np.uint8)))
    idat = data.index(b"IDAT")
    data[idat + 20] ^= 0xFF                            # a byte of image data: the chunk's CRC no longer fits
    for bad in (bytes(data), bytes(data[:len(data) // 2]), b"GIF89a not a png", b""):
        with pytest.raises(ValueError, match="^data: not a readable PNG"):
            decode_png_grey(bad)


@pytest.mark.parametrize("bad, msg", [
    (np.zeros((2, 2, 2), np.uint8), "2-D"),
    (np.full((2, 2), 4, np.uint8), "0..3"),
    (np.zeros((2, 2), np.float32), "integer"),
])
def test_bad_input_names_the_argument(bad, msg):
    with pytest.raises(ValueError, match=msg) as e:
        encode_png(bad)
    assert "shades" in str(e.value)
