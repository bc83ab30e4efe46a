"""Test helpers for the renderer: a slow pixel-by-pixel numpy reference and a Warp driver.

The reference is written from Pan Docs rule by rule, one pixel at a time, with
no tile caching or staging, so that it can be read and checked against the
documentation directly.  The driver runs `render.render_scanline` for all 144
lines of one frame per env, with per-line registers, the way emu/ppu.py does.
"""

from __future__ import annotations

import hashlib

import numpy as np
import warp as wp

from gbx_lightning.emu import render

wp.config.quiet = True

# Per-line register columns in a scene's `regs` array [144, 8].
LCDC, SCY, SCX, WY, WX, BGP, OBP0, OBP1 = range(8)
N_REGS = 8


class Scene:
    """VRAM, OAM and per-line registers of one frame."""

    def __init__(self, lcdc=0x91, scy=0, scx=0, wy=0, wx=0, bgp=0xE4, obp0=0xE4, obp1=0x1B):
        self.vram = np.zeros(0x2000, np.uint8)
        self.oam = np.zeros(0xA0, np.uint8)
        self.regs = np.zeros((144, N_REGS), np.int32)
        self.regs[:] = [lcdc, scy, scx, wy, wx, bgp, obp0, obp1]

    def tile(self, index: int, rows, base: int = 0x8000) -> None:
        """Store a tile given as 8 rows of 8 colour numbers (0..3) at base + 16*index."""
        a = base - 0x8000 + 16 * index
        for r, row in enumerate(rows):
            lo = hi = 0
            for p, c in enumerate(row):
                lo |= (c & 1) << (7 - p)
                hi |= ((c >> 1) & 1) << (7 - p)
            self.vram[a + 2 * r] = lo
            self.vram[a + 2 * r + 1] = hi

    def fill_map(self, base: int, tile: int) -> None:
        self.vram[base - 0x8000: base - 0x8000 + 0x400] = tile

    def obj(self, i: int, y: int, x: int, tile: int, attr: int = 0) -> None:
        self.oam[4 * i: 4 * i + 4] = [y, x, tile, attr]


# ---------------------------------------------------------------- reference


def _colour_at(vram, lcdc, map_base, col, row):
    """Colour number of BG/window map pixel (col, row), per Pan Docs "Tile Maps"/"Tile Data"."""
    tile_number = int(vram[map_base - 0x8000 + (row // 8) * 32 + col // 8])
    if lcdc & 0x10:
        tile_addr = 0x8000 + 16 * tile_number
    else:
        signed = tile_number - 256 if tile_number >= 128 else tile_number
        tile_addr = 0x9000 + 16 * signed
    lo = int(vram[tile_addr - 0x8000 + 2 * (row % 8)])
    hi = int(vram[tile_addr - 0x8000 + 2 * (row % 8) + 1])
    bit = 7 - col % 8
    return ((hi >> bit) & 1) * 2 + ((lo >> bit) & 1)


def reference_frame(scene: Scene):
    """Render one frame pixel by pixel. Returns (frame uint8[144,160], window_line int[145]).

    window_line[ly] is the window's internal line counter when line ly is drawn
    (window_line[144]: after the last line). The WY condition fires on the
    first line that starts with LY == WY while the window is enabled (LCDC.5)
    and stays set for the rest of the frame.
    """
    frame = np.zeros((144, 160), np.uint8)
    wlines = np.zeros(145, np.int64)
    window_line = 0
    wy_fired = False
    vram, oam = scene.vram, scene.oam
    for ly in range(144):
        lcdc, scy, scx, wy, wx, bgp, obp0, obp1 = (int(v) for v in scene.regs[ly])
        if ly == wy and lcdc & 0x20:
            wy_fired = True
        wlines[ly] = window_line
        window_on = bool(lcdc & 0x20) and bool(lcdc & 0x01) and wy_fired and wx <= 166
        height = 16 if lcdc & 0x04 else 8
        selected = []
        if lcdc & 0x02:
            for i in range(40):
                top = int(oam[4 * i]) - 16
                if top <= ly < top + height and len(selected) < 10:
                    selected.append(i)
        # DMG: the window refused by LCDC.5 where it would start on a BG tile boundary (WY fired): one
        # colour-0 pixel inserted at x = WX - 7, the BG after it a pixel later (Pan Docs, "Window")
        inserted = (not lcdc & 0x20 and wy_fired and 0 <= wx - 7 < 160 and (wx - 7 + scx) % 8 == 0)
        for x in range(160):
            bx = x - 1 if inserted and x > wx - 7 else x
            if not lcdc & 0x01 or (inserted and x == wx - 7):
                colour = 0
            elif window_on and x >= wx - 7:
                win_map = 0x9C00 if lcdc & 0x40 else 0x9800
                colour = _colour_at(vram, lcdc, win_map, x - (wx - 7), window_line)
            else:
                bg_map = 0x9C00 if lcdc & 0x08 else 0x9800
                colour = _colour_at(vram, lcdc, bg_map, (bx + scx) % 256, (ly + scy) % 256)
            shade = (bgp >> (2 * colour)) & 3
            # objects with an opaque pixel here; the winner has the smallest (X, OAM index)
            opaque = []
            for i in selected:
                oy, ox, tile, attr = (int(v) for v in oam[4 * i: 4 * i + 4])
                if not ox - 8 <= x < ox:
                    continue
                row = ly - (oy - 16)
                if attr & 0x40:
                    row = height - 1 - row
                if height == 16:
                    tile &= 0xFE
                col = x - (ox - 8)
                if attr & 0x20:
                    col = 7 - col
                lo = int(vram[16 * tile + 2 * row])
                hi = int(vram[16 * tile + 2 * row + 1])
                c = ((hi >> (7 - col)) & 1) * 2 + ((lo >> (7 - col)) & 1)
                if c:
                    opaque.append((ox, i, c, attr))
            if opaque:
                ox, i, c, attr = min(opaque)
                if not (attr & 0x80 and colour != 0):
                    shade = ((obp1 if attr & 0x10 else obp0) >> (2 * c)) & 3
            frame[ly, x] = shade
        if window_on:
            window_line += 1
    wlines[144] = window_line
    return frame, wlines


# ---------------------------------------------------------------- Warp driver


@wp.kernel(enable_backward=False)
def _render_frame_kernel(vram: wp.array2d(dtype=wp.uint8), oam: wp.array2d(dtype=wp.uint8),
                         regs: wp.array3d(dtype=wp.int32), frame: wp.array3d(dtype=wp.uint8),
                         obs: wp.array3d(dtype=wp.uint8), wlines: wp.array2d(dtype=wp.int32),
                         line_buf: wp.array2d(dtype=wp.uint64), bit_bytes: wp.array(dtype=wp.uint64),
                         render_mode: int, unaligned: int):
    env = wp.tid()
    window_line = int(0)
    wy_fired = int(0)
    for ly in range(144):
        if ly == regs[env, ly, 3] and (regs[env, ly, 0] & 0x20) != 0:
            wy_fired = 1
        wlines[env, ly] = window_line
        drawn = render.render_scanline(vram, oam, env, ly, regs[env, ly, 0], regs[env, ly, 1], regs[env, ly, 2],
                                       wy_fired, regs[env, ly, 4], window_line, regs[env, ly, 5],
                                       regs[env, ly, 6], regs[env, ly, 7], frame, obs, line_buf, bit_bytes,
                                       render_mode, unaligned)
        window_line += drawn
    wlines[env, 144] = window_line


@wp.kernel(enable_backward=False)
def _count_kernel(oam: wp.array2d(dtype=wp.uint8), lcdc: wp.array(dtype=wp.int32),
                  counts: wp.array2d(dtype=wp.int32)):
    env = wp.tid()
    for ly in range(144):
        counts[env, ly] = render.sprites_on_line(oam, env, ly, lcdc[env])


SENTINEL = 0xEE


def render_scenes(scenes, mode=render.RENDER_FULL, unaligned=1):
    """Run the Warp renderer over a list of scenes. Returns (frames, obs, window_lines) as numpy.
    unaligned: render_scanline's tile stores (1: the CPU's unaligned ones, 0: the GPU's
    aligned words, run here on the CPU)."""
    n = len(scenes)
    vram = wp.array(np.stack([s.vram for s in scenes]), dtype=wp.uint8)
    oam = wp.array(np.stack([s.oam for s in scenes]), dtype=wp.uint8)
    regs = wp.array(np.stack([s.regs for s in scenes]), dtype=wp.int32)
    frame = wp.array(np.full((n, 144, 160), SENTINEL, np.uint8), dtype=wp.uint8)
    obs = wp.array(np.full((n, 72, 80), SENTINEL, np.uint8), dtype=wp.uint8)
    wlines = wp.zeros((n, 145), dtype=wp.int32)
    line_buf = wp.zeros((n, render.LINE_BUF_WORDS), dtype=wp.uint64)
    bit_bytes = wp.array(render.BIT_BYTES, dtype=wp.uint64)
    wp.launch(_render_frame_kernel, dim=n, inputs=[vram, oam, regs, frame, obs, wlines, line_buf, bit_bytes,
                                                   int(mode), int(unaligned)])
    return frame.numpy(), obs.numpy(), wlines.numpy()


def count_sprites(scenes, lcdc):
    oam = wp.array(np.stack([s.oam for s in scenes]), dtype=wp.uint8)
    lc = wp.array(np.asarray(lcdc, np.int32), dtype=wp.int32)
    counts = wp.zeros((len(scenes), 144), dtype=wp.int32)
    wp.launch(_count_kernel, dim=len(scenes), inputs=[oam, lc, counts])
    return counts.numpy()


def frame_sha256(frame: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(frame, dtype=np.uint8).tobytes()).hexdigest()


def random_scene(rng: np.random.Generator, per_line: bool = False, crowded: bool = False) -> Scene:
    """A random VRAM/OAM/register state; per_line varies registers line by line."""
    s = Scene()
    s.vram[:] = rng.integers(0, 256, 0x2000, dtype=np.uint8)
    s.oam[:] = rng.integers(0, 256, 0xA0, dtype=np.uint8)
    if crowded:  # many objects on the same lines, some with equal X, to exercise the 10 limit and ties
        s.oam[0::4] = rng.integers(16, 48, 40)
        s.oam[1::4] = rng.choice([8, 12, 13, 40, 41, 80, 100, 160, 167, 0], 40)
    else:
        s.oam[0::4] = rng.integers(0, 170, 40)
        s.oam[1::4] = rng.integers(0, 176, 40)
    rows = 144 if per_line else 1
    lcdc = rng.integers(0, 128, rows) | 0x80
    lcdc |= (rng.random(rows) < 0.8).astype(np.int64)        # BG mostly on
    lcdc |= (rng.random(rows) < 0.8).astype(np.int64) << 1   # objects mostly on
    cols = [lcdc, rng.integers(0, 256, rows), rng.integers(0, 256, rows), rng.integers(0, 150, rows),
            rng.integers(0, 175, rows), rng.integers(0, 256, rows), rng.integers(0, 256, rows),
            rng.integers(0, 256, rows)]
    s.regs[:] = np.stack(cols, axis=1)
    return s
