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


def _unfilter(raw: np.ndarray, h: int, stride: int, bpp: int) -> np.ndarray:
    """Undo the per-row PNG filters (None, Sub, Up, Average, Paeth; PNG spec section 9)."""
    rows = raw.reshape(h, stride + 1)
    out = np.zeros((h, stride), np.int32)
    prev = np.zeros(stride, np.int32)
    for y in range(h):
        kind, line = int(rows[y, 0]), rows[y, 1:].astype(np.int32)
        if kind == 0:
            cur = line
        elif kind == 2:
            cur = (line + prev) & 0xFF
        elif kind in (1, 3, 4):
            cur = line.copy()
            for x in range(stride):          # left neighbours are decoded in order
                left = cur[x - bpp] if x >= bpp else 0
                up, up_left = prev[x], (prev[x - bpp] if x >= bpp else 0)
                if kind == 1:
                    pred = left
                elif kind == 3:
                    pred = (left + up) >> 1
                else:
                    p = left + up - up_left
                    pa, pb, pc = abs(p - left), abs(p - up), abs(p - up_left)
                    pred = left if pa <= pb and pa <= pc else (up if pb <= pc else up_left)
                cur[x] = (cur[x] + pred) & 0xFF
        else:
            raise ValueError(f"data: unknown PNG filter type {kind} in row {y}")
        out[y] = prev = cur
    return out.astype(np.uint8)


def decode_png_grey(data: bytes) -> np.ndarray:
    """Any 8-bit, non-interlaced PNG (greyscale, grey+alpha, RGB, RGBA or palette; every
    filter type) as an 8-bit grey [H, W] array: colour by luminance (ITU-R BT.601 weights),
    alpha ignored. Enough to read back a goal template or a mask drawn in an image editor."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("data: expected a PNG signature, got something else")
    pos, idat, w, h, colour, palette = 8, b"", 0, 0, -1, None
    while pos + 12 <= len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind = data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])
        if zlib.crc32(kind + body) & 0xFFFFFFFF != crc:
            raise ValueError(f"data: chunk {kind!r} CRC mismatch")
        if kind == b"IHDR":
            w, h, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or interlace != 0 or colour not in (0, 2, 3, 4, 6):
                raise ValueError(f"data: expected an 8-bit non-interlaced PNG, got bit depth {depth}, "
                                 f"colour type {colour}, interlace {interlace}")
        elif kind == b"PLTE":
            palette = np.frombuffer(body, np.uint8).reshape(-1, 3)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    if w == 0 or h == 0:
        raise ValueError("data: PNG has no IHDR chunk (or a zero size)")
    channels = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}[colour]
    try:
        raw = np.frombuffer(zlib.decompress(idat), np.uint8)
    except zlib.error as err:
        raise ValueError(f"data: corrupt PNG image data ({err})") from None
    if raw.size != h * (w * channels + 1):
        raise ValueError(f"data: PNG image data has {raw.size} bytes, expected {h * (w * channels + 1)}")
    px = _unfilter(raw, h, w * channels, channels).reshape(h, w, channels)
    if colour == 3:
        if palette is None:
            raise ValueError("data: palette PNG without a PLTE chunk")
        px = palette[px[..., 0]]
    if px.shape[2] in (3, 4):
        rgb = px[..., :3].astype(np.float32)
        return np.rint(rgb @ np.array([0.299, 0.587, 0.114], np.float32)).clip(0, 255).astype(np.uint8)
    return px[..., 0].copy()


def grey_to_shades(grey: np.ndarray) -> np.ndarray:
    """8-bit grey -> the nearest DMG shade 0..3 (the inverse of SHADE_GREYS)."""
    return np.rint((255 - grey.astype(np.float32)) / 85.0).clip(0, 3).astype(np.uint8)
