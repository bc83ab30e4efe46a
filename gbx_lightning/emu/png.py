"""Minimal PNG writer for DMG shade frames (zlib + struct, no imaging library).

Shades 0..3 are drawn as the DMG's four greys, lightest first: shade 0 is
white and shade 3 black, as BGP/OBP colour 0 -> "white" in Pan Docs "Palettes".
"""

from __future__ import annotations

import os
import struct
import zlib

import numpy as np

# shade -> 8-bit grey (white, light grey, dark grey, black)
SHADE_GREYS = np.array([0xFF, 0xAA, 0x55, 0x00], dtype=np.uint8)


def _chunk(kind: bytes, data: bytes) -> bytes:
    """One PNG chunk: length, type, data, CRC-32 over type + data."""
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def encode_png(shades: np.ndarray, scale: int = 1) -> bytes:
    """Encode a [H, W] array of shades 0..3 as an 8-bit greyscale PNG, each pixel scale x scale."""
    shades = np.asarray(shades)
    if shades.ndim != 2 or shades.shape[0] == 0 or shades.shape[1] == 0:
        raise ValueError(f"shades: expected a non-empty 2-D [height, width] array, got shape {shades.shape}")
    if not np.issubdtype(shades.dtype, np.integer):
        raise ValueError(f"shades: expected an integer array of shades 0..3, got dtype {shades.dtype}")
    if shades.min() < 0 or shades.max() > 3:
        raise ValueError(f"shades: expected values 0..3, got range {shades.min()}..{shades.max()}")
    if not isinstance(scale, int) or scale < 1:
        raise ValueError(f"scale: expected an integer >= 1, got {scale!r}")
    grey = SHADE_GREYS[shades.astype(np.intp)]
    if scale > 1:
        grey = np.repeat(np.repeat(grey, scale, axis=0), scale, axis=1)
    h, w = grey.shape
    # every row starts with filter type 0 (None)
    raw = np.concatenate([np.zeros((h, 1), np.uint8), grey], axis=1).tobytes()
    header = struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0)  # 8-bit depth, greyscale, deflate, no interlace
    return (b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", header) + _chunk(b"IDAT", zlib.compress(raw, 9))
            + _chunk(b"IEND", b""))


def save_png(path: str | os.PathLike, shades: np.ndarray, scale: int = 1) -> None:
    """Write a [H, W] shade frame (e.g. VecGameBoy.frame()[env]) to a PNG file."""
    data = encode_png(shades, scale)
    with open(path, "wb") as f:
        f.write(data)


def decode_png_grey(data: bytes) -> np.ndarray:
    """Read back an 8-bit greyscale, non-interlaced PNG written by encode_png (filter type 0 rows only)."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("data: expected a PNG signature, got something else")
    pos, idat, w, h = 8, b"", 0, 0
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind = data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])
        if zlib.crc32(kind + body) & 0xFFFFFFFF != crc:
            raise ValueError(f"data: chunk {kind!r} CRC mismatch")
        if kind == b"IHDR":
            w, h, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if (depth, colour, interlace) != (8, 0, 0):
                raise ValueError(f"data: expected 8-bit greyscale non-interlaced, got depth {depth} colour {colour}")
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    rows = np.frombuffer(zlib.decompress(idat), np.uint8).reshape(h, w + 1)
    if (rows[:, 0] != 0).any():
        raise ValueError("data: only filter type 0 rows are supported")
    return rows[:, 1:].copy()
