"""Minimal animated GIF writer for DMG shade frames (no imaging library).

Why GIF: every browser, TensorBoard's image tab (an animated GIF in an image summary plays
there) and chat tools show it, and four shades fit a 4-colour palette exactly. The format
(GIF89a): header, logical screen with a global colour table (the four DMG greys of png.py),
the NETSCAPE2.0 extension (loop forever), then per frame a graphic control extension
(delay in 1/100 s) and an image whose pixels are LZW-coded with variable-width codes,
packed least-significant bit first into sub-blocks of up to 255 bytes.
"""
from __future__ import annotations

import os
import struct

import numpy as np

from .png import SHADE_GREYS

__all__ = ["encode_gif", "save_gif", "lzw_encode"]

MIN_CODE_SIZE = 2   # 4 colours; GIF's smallest LZW minimum code size
MAX_CODES = 4096    # 12-bit codes at most


def lzw_encode(pixels: bytes, min_code_size: int = MIN_CODE_SIZE) -> bytes:
    """GIF-flavoured LZW: a clear code first, a clear when the table is full, an end code last."""
    clear, end = 1 << min_code_size, (1 << min_code_size) + 1
    out = bytearray()
    bits = nbits = 0
    width = min_code_size + 1

    def emit(code: int) -> None:
        nonlocal bits, nbits
        bits |= code << nbits
        nbits += width
        while nbits >= 8:
            out.append(bits & 0xFF)
            bits >>= 8
            nbits -= 8

    def fresh() -> dict:
        return {bytes([i]): i for i in range(clear)}

    table, next_code = fresh(), end + 1
    emit(clear)
    prefix = b""
    for value in pixels:
        word = prefix + bytes([value])
        if word in table:
            prefix = word
            continue
        emit(table[prefix])
        if next_code < MAX_CODES:
            table[word] = next_code
            next_code += 1
            if next_code > (1 << width) and width < 12:
                width += 1
        else:
            emit(clear)
            table, next_code, width = fresh(), end + 1, min_code_size + 1
        prefix = bytes([value])
    if prefix:
        emit(table[prefix])
    emit(end)
    if nbits:
        out.append(bits & 0xFF)
    return bytes(out)


def _sub_blocks(data: bytes) -> bytes:
    return b"".join(bytes([len(data[i:i + 255])]) + data[i:i + 255] for i in range(0, len(data), 255)) + b"\x00"


def encode_gif(frames, scale: int = 1, delay_cs: int = 10) -> bytes:
    """Frames of shades 0..3 ([T, H, W] array or a list of [H, W]) -> an animated, looping GIF.

    scale: each pixel drawn scale x scale; delay_cs: time per frame in 1/100 s.
    """
    frames = np.asarray(frames)
    if frames.ndim == 2:
        frames = frames[None]
    if frames.ndim != 3 or 0 in frames.shape:
        raise ValueError(f"frames: expected a non-empty [T, H, W] array of shades, got shape {frames.shape}")
    if not np.issubdtype(frames.dtype, np.integer) or frames.min() < 0 or frames.max() > 3:
        raise ValueError("frames: expected integer shades 0..3")
    if not isinstance(scale, int) or scale < 1:
        raise ValueError(f"scale: expected an integer >= 1, got {scale!r}")
    if not isinstance(delay_cs, int) or not 0 <= delay_cs <= 0xFFFF:
        raise ValueError(f"delay_cs: expected 0..65535 hundredths of a second, got {delay_cs!r}")
    if scale > 1:
        frames = np.repeat(np.repeat(frames, scale, axis=1), scale, axis=2)
    t, h, w = frames.shape
    if h > 0xFFFF or w > 0xFFFF:
        raise ValueError(f"frames: GIF images are at most 65535 pixels wide and high, got {w}x{h}")
    palette = np.repeat(SHADE_GREYS, 3).tobytes()                     # 4 entries x RGB
    out = [b"GIF89a", struct.pack("<HHBBB", w, h, 0x80 | 0x01, 0, 0), palette,   # global table, 2^(1+1)=4
           b"\x21\xFF\x0BNETSCAPE2.0\x03\x01\x00\x00\x00"]                     # loop forever
    for frame in frames.astype(np.uint8):
        out.append(struct.pack("<BBBBHBB", 0x21, 0xF9, 4, 0, delay_cs, 0, 0))  # graphic control
        out.append(struct.pack("<BHHHHB", 0x2C, 0, 0, w, h, 0))                # image descriptor
        out.append(bytes([MIN_CODE_SIZE]) + _sub_blocks(lzw_encode(frame.tobytes())))
    out.append(b"\x3B")
    return b"".join(out)


def save_gif(path: str | os.PathLike, frames, scale: int = 1, delay_cs: int = 10) -> None:
    """Write frames of shades (see encode_gif) to an animated GIF file."""
    data = encode_gif(frames, scale, delay_cs)
    with open(path, "wb") as f:
        f.write(data)
