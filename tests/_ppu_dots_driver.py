"""A Warp driver for ppu_dots.dots_line on scenes (tests/_ppu_helpers.Scene), without a machine.

For every line of every scene: the log as mode 3 starts (no writes unless given), the
pipeline's picture of the line and the dot of its last pixel, and mode 3's length as ppu.py's
formula gives it (172 + SCX mod 8, 6 for the window and 1 more at WX = 0 with a fine scroll,
render.objects_mode3_penalty).
"""
from __future__ import annotations

import numpy as np
import warp as wp

from gbx_lightning.emu import ppu_dots, render
from gbx_lightning.emu.state import PPU_LOG_WORDS
from tests._ppu_helpers import reference_frame

wp.config.quiet = True


@wp.kernel(enable_backward=False)
def _dots_kernel(vram: wp.array2d(dtype=wp.uint8), oam: wp.array2d(dtype=wp.uint8),
                 logs: wp.array3d(dtype=wp.int32), line_buf: wp.array2d(dtype=wp.uint64),
                 pix: wp.array3d(dtype=wp.uint8), last_dot: wp.array2d(dtype=wp.int32),
                 length: wp.array2d(dtype=wp.int32)):
    env = wp.tid()
    for ly in range(144):
        a = logs[env, ly, ppu_dots.LOG_REGS_A]
        lcdc = a & 0xFF
        scx = (a >> 16) & 0xFF
        wx = (logs[env, ly, ppu_dots.LOG_REGS_B] >> 24) & 0xFF
        sel = render.objects_on_line(oam, env, ly, lcdc)
        scratch = wp.uint64(line_buf.ptr) + wp.uint64(env * render.LINE_BUF_WORDS * 8)
        r = ppu_dots.dots_line(wp.uint64(vram.ptr) + wp.uint64(env * 8192), wp.uint64(oam.ptr) + wp.uint64(env * 160),
                               wp.uint64(logs.ptr) + wp.uint64((env * 144 + ly) * PPU_LOG_WORDS * 4),
                               scratch, ly, sel, 1)
        last_dot[env, ly] = r & 0xFFFF
        px = wp.array(ptr=scratch + wp.uint64(184), shape=(160,), dtype=wp.uint8)
        for x in range(160):
            pix[env, ly, x] = px[x]
        win_start = int(1 << 20)
        n = 172 + (scx & 7)
        if render.window_visible(lcdc, logs[env, ly, ppu_dots.LOG_WINDOW] & 0xFF, wx) != 0:
            n += 6
            if wx == 0 and (scx & 7) != 0:
                n += 1      # the window a dot later (ppu.py _mode3_length)
            win_start = wx - 7
        inserted = render.refused_window_x(lcdc, logs[env, ly, ppu_dots.LOG_WINDOW] & 0xFF, wx, scx)
        if sel != wp.uint64(0):
            n += render.objects_mode3_penalty(oam, env, sel, scx, win_start, inserted)
        length[env, ly] = n


def _i32(v: int) -> int:
    return int(np.uint32(v).view(np.int32))


def run_lines(scenes, writes=None):
    """Returns (pixels uint8[n,144,160], last pixel's dot int[n,144], formula length int[n,144]).
    writes: {(scene, ly): [(dot, register low byte, value), ...]}."""
    n = len(scenes)
    logs = np.zeros((n, 144, PPU_LOG_WORDS), np.int32)
    for e, s in enumerate(scenes):
        _, window_lines = reference_frame(s)
        wy_fired = 0
        for ly in range(144):
            lcdc, scy, scx, wy, wx, bgp, obp0, obp1 = (int(v) for v in s.regs[ly])
            if ly == wy and lcdc & 0x20:
                wy_fired = 1
            logs[e, ly, ppu_dots.LOG_REGS_A] = _i32(lcdc | scy << 8 | scx << 16 | bgp << 24)
            logs[e, ly, ppu_dots.LOG_REGS_B] = _i32(obp0 | obp1 << 8 | wy << 16 | wx << 24)
            logs[e, ly, ppu_dots.LOG_WINDOW] = wy_fired | int(window_lines[ly]) << 8
            ws = (writes or {}).get((e, ly), [])
            logs[e, ly, ppu_dots.LOG_COUNT] = len(ws)
            for k, (d, reg, v) in enumerate(ws):
                logs[e, ly, ppu_dots.LOG_FIRST + k] = (d + ppu_dots.DOT_BIAS) << 16 | reg << 8 | v
    vram = wp.array(np.stack([s.vram for s in scenes]), dtype=wp.uint8)
    oam = wp.array(np.stack([s.oam for s in scenes]), dtype=wp.uint8)
    line_buf = wp.zeros((n, render.LINE_BUF_WORDS), dtype=wp.uint64)
    pix = wp.zeros((n, 144, 160), dtype=wp.uint8)
    last_dot = wp.zeros((n, 144), dtype=wp.int32)
    length = wp.zeros((n, 144), dtype=wp.int32)
    wp.launch(_dots_kernel, dim=n, inputs=[vram, oam, wp.array(logs, dtype=wp.int32), line_buf, pix, last_dot, length])
    return pix.numpy(), last_dot.numpy(), length.numpy()
