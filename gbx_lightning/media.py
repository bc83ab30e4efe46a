"""Images of DMG shade frames: PNG screenshots and goal templates, animated GIF clips (Pillow).

Shades 0..3 are drawn as the DMG's four greys, lightest first: shade 0 is white and shade 3
black, as BGP/OBP colour 0 -> "white" in Pan Docs "Palettes". A PNG is 8-bit greyscale and a
GIF has those four greys as its palette, so a screen reads back to the shades it was written
from (``grey_to_shades``). Pillow does the file formats; this module owns the shade mapping,
the argument checks and the clip timing. It lives outside ``emu/``: the emulator produces
shade arrays and knows nothing of image files.
"""
from __future__ import annotations

import io
import os

import numpy as np
from PIL import Image

__all__ = ["OUTLINE_RGB", "SHADE_GREYS", "encode_png", "encode_png_grey", "encode_png_rgb", "heatmap_grey", "save_png",
           "decode_png_grey", "grey_to_shades", "encode_gif", "save_gif", "world_heatmap_rgb"]

# shade -> 8-bit grey (white, light grey, dark grey, black)
SHADE_GREYS = np.array([0xFF, 0xAA, 0x55, 0x00], dtype=np.uint8)
# ITU-R BT.601 luma weights: colour -> grey for PNGs drawn in an image editor. Applied here in float
# rather than by Pillow's convert("L"), whose fixed-point rounding differs by one grey level on some
# colours, so that a file reads as it did before Pillow was used.
_LUMA = np.array([0.299, 0.587, 0.114], np.float32)
# GIF stores a frame's delay in 1/100 s as a 16-bit number.
_MAX_DELAY_CS = 0xFFFF


def _check_shades(shades: np.ndarray, name: str, ndim: int, shape_text: str) -> np.ndarray:
    shades = np.asarray(shades)
    if shades.ndim != ndim or 0 in shades.shape:
        raise ValueError(f"{name}: expected a non-empty {ndim}-D {shape_text} array of shades, got shape "
                         f"{shades.shape}")
    if not np.issubdtype(shades.dtype, np.integer):
        raise ValueError(f"{name}: expected an integer array of shades 0..3, got dtype {shades.dtype}")
    if shades.min() < 0 or shades.max() > 3:
        raise ValueError(f"{name}: expected integer shades 0..3, got range {shades.min()}..{shades.max()}")
    return shades


def _check_scale(scale: int) -> None:
    if not isinstance(scale, int) or scale < 1:
        raise ValueError(f"scale: expected an integer >= 1, got {scale!r}")


def _upscale(pixels: np.ndarray, scale: int) -> np.ndarray:
    """Each pixel of the last two axes drawn scale x scale (exact; no resampling filter)."""
    if scale == 1:
        return pixels
    return np.repeat(np.repeat(pixels, scale, axis=-2), scale, axis=-1)


def encode_png(shades: np.ndarray, scale: int = 1) -> bytes:
    """Encode a [H, W] array of shades 0..3 as an 8-bit greyscale PNG, each pixel scale x scale."""
    shades = _check_shades(shades, "shades", 2, "[height, width]")
    _check_scale(scale)
    grey = _upscale(SHADE_GREYS[shades.astype(np.intp)], scale)
    buf = io.BytesIO()
    Image.fromarray(grey, "L").save(buf, format="PNG")
    return buf.getvalue()


def encode_png_grey(grey: np.ndarray, scale: int = 1) -> bytes:
    """Encode a [H, W] uint8 array of grey levels (0 black .. 255 white) as a PNG, each pixel scale x scale:
    images that are not Game Boy screens (the map-visit heatmap)."""
    grey = np.asarray(grey)
    if grey.dtype != np.uint8 or grey.ndim != 2 or 0 in grey.shape:
        raise ValueError(f"grey: expected a non-empty uint8 [height, width] array, got {grey.dtype} {grey.shape}")
    _check_scale(scale)
    buf = io.BytesIO()
    Image.fromarray(_upscale(grey, scale), "L").save(buf, format="PNG")
    return buf.getvalue()


def heatmap_grey(counts: np.ndarray) -> np.ndarray | None:
    """uint8 [H, W] grey for a grid of visit counts: the bounding box of the visited cells (from 0 on both axes, so
    a game's coordinates keep their place), log(1 + count) scaled so the most visited cell is white, unvisited
    black. None when nothing was visited."""
    counts = np.asarray(counts)
    rows, cols = np.flatnonzero(counts.sum(1)), np.flatnonzero(counts.sum(0))
    if rows.size == 0:
        return None
    box = np.log1p(counts[: rows[-1] + 1, : cols[-1] + 1].astype(np.float64))
    return np.round(box * (255.0 / box.max())).astype(np.uint8)


OUTLINE_RGB = (64, 112, 224)    # a world heatmap's map outlines: blue, apart from the greys of the visits


def world_heatmap_rgb(counts: np.ndarray, boxes, scale: int = 1) -> np.ndarray:
    """uint8 [H * scale, W * scale, 3] for a world's visit counts [H, W]: each cell scale x scale pixels, grey
    log(1 + count) scaled so the most visited cell is white (unvisited black), and each box (y, x, h, w: a map's
    place, in cells) outlined one pixel wide in OUTLINE_RGB along its inner edge. The whole world, not cropped: a
    map keeps its place from picture to picture."""
    counts = np.asarray(counts)
    if counts.ndim != 2 or 0 in counts.shape:
        raise ValueError(f"counts: expected a non-empty [height, width] array, got shape {counts.shape}")
    _check_scale(scale)
    level = np.log1p(counts.astype(np.float64))
    top = level.max()
    grey = np.zeros(counts.shape, np.uint8) if top == 0 else np.round(level * (255.0 / top)).astype(np.uint8)
    rgb = np.repeat(_upscale(grey, scale)[..., None], 3, axis=2)
    for y, x, h, w in boxes:
        y0, x0, y1, x1 = y * scale, x * scale, (y + h) * scale - 1, (x + w) * scale - 1
        rgb[y0, x0:x1 + 1] = rgb[y1, x0:x1 + 1] = OUTLINE_RGB
        rgb[y0:y1 + 1, x0] = rgb[y0:y1 + 1, x1] = OUTLINE_RGB
    return rgb


def encode_png_rgb(rgb: np.ndarray) -> bytes:
    """Encode a uint8 [H, W, 3] colour image as a PNG."""
    rgb = np.asarray(rgb)
    if rgb.dtype != np.uint8 or rgb.ndim != 3 or rgb.shape[2] != 3 or 0 in rgb.shape:
        raise ValueError(f"rgb: expected a non-empty uint8 [height, width, 3] array, got {rgb.dtype} {rgb.shape}")
    buf = io.BytesIO()
    Image.fromarray(rgb, "RGB").save(buf, format="PNG")
    return buf.getvalue()


def save_png(path: str | os.PathLike, shades: np.ndarray, scale: int = 1) -> None:
    """Write a [H, W] shade frame (e.g. VecGameBoy.frame()[env]) to a PNG file."""
    data = encode_png(shades, scale)
    with open(path, "wb") as f:
        f.write(data)


def decode_png_grey(data: bytes) -> np.ndarray:
    """A PNG of any colour type and bit depth as an 8-bit grey [H, W] array: colour by luminance
    (BT.601 weights), alpha ignored, 16-bit samples rounded to 8 bits. Enough to read back a goal
    template or a mask drawn in an image editor. A file that is not a whole, undamaged PNG is a
    ValueError starting "data:"."""
    try:
        # verify() checks every chunk's CRC, the image data's included; a plain load() does not check
        # IDAT's, and a damaged template would then read as wrong pixels instead of failing.
        with Image.open(io.BytesIO(data), formats=["PNG"]) as im:
            im.verify()
        with Image.open(io.BytesIO(data), formats=["PNG"]) as im:
            im.load()
            if im.mode in ("I", "I;16", "I;16B", "I;16L"):
                # 16-bit grey: Pillow's convert("L") clips at 255 instead of scaling
                return np.rint(np.asarray(im, np.float64) / 257.0).clip(0, 255).astype(np.uint8)
            if im.mode in ("1", "L", "LA"):
                return np.array(im.convert("L"))
            rgb = np.asarray(im.convert("RGB"), np.float32)   # palette looked up, alpha dropped
    except (OSError, SyntaxError, ValueError, Image.DecompressionBombError) as err:
        # Pillow reports damage as SyntaxError ("broken PNG file"), OSError (truncated, not a PNG
        # at all) or ValueError; one type here, so that callers name the file in one line.
        raise ValueError(f"data: not a readable PNG ({err})") from None
    return np.rint(rgb @ _LUMA).clip(0, 255).astype(np.uint8)


def grey_to_shades(grey: np.ndarray) -> np.ndarray:
    """8-bit grey -> the nearest DMG shade 0..3 (the inverse of SHADE_GREYS)."""
    return np.rint((255 - grey.astype(np.float32)) / 85.0).clip(0, 3).astype(np.uint8)


def encode_gif(frames, scale: int = 1, delay_cs: int = 10) -> bytes:
    """Frames of shades 0..3 ([T, H, W] array or a list of [H, W]) -> an animated GIF that loops forever.

    scale: each pixel drawn scale x scale; delay_cs: time per frame in 1/100 s. Why GIF: browsers,
    TensorBoard's Images tab (an animated GIF in an image summary plays there) and chat tools show
    it, and four shades fit a 4-colour palette exactly.

    A run of identical frames is written as one GIF frame shown for the run's whole time: the clip
    plays the same, and Pillow would merge them anyway. A run longer than GIF's largest delay
    (65535/100 s) is shown for that long.
    """
    frames = np.asarray(frames)
    if frames.ndim == 2:
        frames = frames[None]
    frames = _check_shades(frames, "frames", 3, "[T, H, W]")
    _check_scale(scale)
    if not isinstance(delay_cs, int) or not 0 <= delay_cs <= _MAX_DELAY_CS:
        raise ValueError(f"delay_cs: expected 0..65535 hundredths of a second, got {delay_cs!r}")
    h, w = frames.shape[1] * scale, frames.shape[2] * scale
    if h > 0xFFFF or w > 0xFFFF:
        raise ValueError(f"frames: GIF images are at most 65535 pixels wide and high, got {w}x{h}")
    changed = np.flatnonzero(np.any(frames[1:] != frames[:-1], axis=(1, 2))) + 1
    starts = np.concatenate([[0], changed])
    lengths = np.diff(np.concatenate([starts, [len(frames)]]))
    palette = np.repeat(SHADE_GREYS, 3).tobytes()                 # 4 entries x RGB: index = shade
    images = []
    for start in starts:
        image = Image.fromarray(_upscale(frames[start].astype(np.uint8), scale), "P")
        image.putpalette(palette)
        images.append(image)
    # Pillow takes milliseconds and writes int(ms / 10) hundredths.
    durations_ms = [min(int(n) * delay_cs, _MAX_DELAY_CS) * 10 for n in lengths]
    buf = io.BytesIO()
    # optimize=False: Pillow keeps the 4-grey palette as given (index = shade, tested) and adds no
    # transparent index; each frame is still cropped to the box that changed since the one before.
    images[0].save(buf, format="GIF", save_all=True, append_images=images[1:], duration=durations_ms, loop=0,
                   optimize=False)
    return buf.getvalue()


def save_gif(path: str | os.PathLike, frames, scale: int = 1, delay_cs: int = 10) -> None:
    """Write frames of shades (see encode_gif) to an animated GIF file."""
    data = encode_gif(frames, scale, delay_cs)
    with open(path, "wb") as f:
        f.write(data)
