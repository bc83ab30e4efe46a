"""PPU timing: modes 2/3/0/1, LY/LYC, STAT interrupt line, VBlank, LCD on/off.

Event driven: r64[T_PPU_EVENT] is the next mode change; ``ppu_sync(now)`` processes every
event up to `now` (called at scheduled events and before any PPU register is read or
written, so mid-frame register writes land between the right lines). Each visible line
is drawn by render.py's ``render_scanline`` when its mode 3 ends, with the registers of
that moment. Line: mode 2 for 80 T, mode 3 for R_MODE3_LEN (172 here; the ppu owner
lengthens it), mode 0 to 456; lines 144..153 are mode 1 (VBlank IF at the start of 144).
STAT IF bit 1 fires on the rising edge of the OR of the enabled sources (LYC=LY, mode 0,
1, 2), so one source that is already high blocks the others.
LCD off (LCDC bit 7 = 0): LY = 0, mode 0, no events, no interrupts, screen cleared to
shade 0; LCD on restarts at line 0 mode 2.
Post-boot: the PPU is in line 153 (mode 1) with LY already reading 0 (the line-153 quirk),
which is what STAT=$85 / LY=$00 at PC=$0100 mean; line 0 starts at t = POST_BOOT_LINE0_T.
"""
import warp as wp

from .interrupts import raise_if
from .state import (NEVER, R_LY, R_MODE3_LEN, R_PPU_MODE, R_STAT_LINE, R_WIN_LINE,
                    R_WY_TRIGGERED, T_LINE_START, T_PPU_EVENT, Machine)

try:  # the ppu helper's scanline renderer (emu/render.py)
    from .render import RENDER_FULL, RENDER_NONE, RENDER_OBS, render_scanline
except ImportError:  # STAND-IN: delete when branch `ppu` is merged
    RENDER_NONE, RENDER_OBS, RENDER_FULL = wp.constant(0), wp.constant(1), wp.constant(2)

    @wp.func
    def render_scanline(vram: wp.array2d(dtype=wp.uint8), oam: wp.array2d(dtype=wp.uint8),
                        env: int, ly: int, lcdc: int, scy: int, scx: int, wy_triggered: int,
                        wx: int, window_line: int, bgp: int, obp0: int, obp1: int,
                        frame: wp.array3d(dtype=wp.uint8), obs: wp.array3d(dtype=wp.uint8),
                        render_mode: int) -> int:
        return 0

LINE_CYCLES = wp.constant(456)
MODE2_CYCLES = wp.constant(80)
MODE3_MIN_CYCLES = wp.constant(172)
POST_BOOT_LINE0_T = 56  # T-cycles from PC=$0100 until line 0 starts (calibration point)


@wp.func
def ly_visible(m: Machine, env: int, t: wp.int64) -> int:
    """LY as read: line 153 reads 0 after its first M-cycle."""
    ly = m.r32[env, R_LY]
    if ly == 153 and t >= m.r64[env, T_LINE_START] + wp.int64(4):
        ly = 0
    return ly


@wp.func
def stat_update(m: Machine, env: int, t: wp.int64):
    """Recompute the STAT interrupt line; IF bit 1 on its rising edge."""
    line = 0
    if (int(m.io[env, 0x40]) & 0x80) != 0:
        stat = int(m.io[env, 0x41])
        mode = m.r32[env, R_PPU_MODE]
        if (stat & 0x40) != 0 and ly_visible(m, env, t) == int(m.io[env, 0x45]):
            line = 1
        if (stat & 0x08) != 0 and mode == 0:
            line = 1
        if (stat & 0x10) != 0 and mode == 1:
            line = 1
        if (stat & 0x20) != 0 and mode == 2:
            line = 1
    if line == 1 and m.r32[env, R_STAT_LINE] == 0:
        raise_if(m, env, 2)
    m.r32[env, R_STAT_LINE] = line


@wp.func
def _start_line_mode2(m: Machine, env: int, ly: int):
    m.r32[env, R_PPU_MODE] = 2
    if ly == int(m.io[env, 0x4A]):
        m.r32[env, R_WY_TRIGGERED] = 1


@wp.func
def ppu_advance(m: Machine, env: int):
    """Process the PPU event at r64[T_PPU_EVENT]."""
    t = m.r64[env, T_PPU_EVENT]
    ls = m.r64[env, T_LINE_START]
    ly = m.r32[env, R_LY]
    mode = m.r32[env, R_PPU_MODE]
    nxt = NEVER
    if mode == 2:
        m.r32[env, R_PPU_MODE] = 3
        m3 = MODE3_MIN_CYCLES
        m.r32[env, R_MODE3_LEN] = m3
        nxt = t + wp.int64(m3)
    elif mode == 3:
        drew_window = render_scanline(
            m.vram, m.oam, env, ly, int(m.io[env, 0x40]), int(m.io[env, 0x42]),
            int(m.io[env, 0x43]), m.r32[env, R_WY_TRIGGERED], int(m.io[env, 0x4B]),
            m.r32[env, R_WIN_LINE], int(m.io[env, 0x47]), int(m.io[env, 0x48]),
            int(m.io[env, 0x49]), m.frame, m.obs, m.render_mode)
        if drew_window != 0:
            m.r32[env, R_WIN_LINE] = m.r32[env, R_WIN_LINE] + 1
        m.r32[env, R_PPU_MODE] = 0
        nxt = ls + wp.int64(LINE_CYCLES)
    else:
        ly = ly + 1
        ls = ls + wp.int64(LINE_CYCLES)
        m.r64[env, T_LINE_START] = ls
        if ly == 144:
            m.r32[env, R_PPU_MODE] = 1
            raise_if(m, env, 1)
            nxt = ls + wp.int64(LINE_CYCLES)
        elif ly >= 154:
            ly = 0
            m.r32[env, R_WIN_LINE] = 0
            m.r32[env, R_WY_TRIGGERED] = 0
            _start_line_mode2(m, env, ly)
            nxt = ls + wp.int64(MODE2_CYCLES)
        elif ly < 144:
            _start_line_mode2(m, env, ly)
            nxt = ls + wp.int64(MODE2_CYCLES)
        else:
            nxt = ls + wp.int64(LINE_CYCLES)
        m.r32[env, R_LY] = ly
    m.r64[env, T_PPU_EVENT] = nxt
    stat_update(m, env, t)


@wp.func
def ppu_sync(m: Machine, env: int, now: wp.int64):
    while m.r64[env, T_PPU_EVENT] <= now:
        ppu_advance(m, env)


@wp.func
def lcdc_write(m: Machine, env: int, value: int, t: wp.int64):
    ppu_sync(m, env, t)
    old = int(m.io[env, 0x40])
    m.io[env, 0x40] = wp.uint8(value)
    if (old & 0x80) != 0 and (value & 0x80) == 0:      # LCD off
        m.r32[env, R_LY] = 0
        m.r32[env, R_PPU_MODE] = 0
        m.r64[env, T_PPU_EVENT] = NEVER
        if m.render_mode == RENDER_FULL:
            for y in range(144):
                for x in range(160):
                    m.frame[env, y, x] = wp.uint8(0)
        if m.render_mode != RENDER_NONE:
            for y in range(72):
                for x in range(80):
                    m.obs[env, y, x] = wp.uint8(0)
    elif (old & 0x80) == 0 and (value & 0x80) != 0:    # LCD on: frame restarts at line 0
        m.r32[env, R_LY] = 0
        m.r32[env, R_WIN_LINE] = 0
        m.r32[env, R_WY_TRIGGERED] = 0
        m.r64[env, T_LINE_START] = t
        _start_line_mode2(m, env, 0)
        m.r64[env, T_PPU_EVENT] = t + wp.int64(MODE2_CYCLES)
    stat_update(m, env, t)


@wp.func
def stat_read(m: Machine, env: int, t: wp.int64) -> int:
    ppu_sync(m, env, t)
    return stat_value(m, env, t)


@wp.func
def stat_value(m: Machine, env: int, t: wp.int64) -> int:
    """STAT as read, from the PPU state as it stands (no sync)."""
    v = 0x80 | (int(m.io[env, 0x41]) & 0x78)
    if (int(m.io[env, 0x40]) & 0x80) != 0:
        v = v | m.r32[env, R_PPU_MODE]
    if ly_visible(m, env, t) == int(m.io[env, 0x45]):
        v = v | 4
    return v


@wp.func
def ly_read(m: Machine, env: int, t: wp.int64) -> int:
    ppu_sync(m, env, t)
    return ly_visible(m, env, t)


@wp.func
def ppu_reg_write(m: Machine, env: int, reg: int, value: int, t: wp.int64):
    """STAT (writable bits 3-6), LYC, scroll, palettes, window: sync first so the change
    lands between the right lines, then re-evaluate the STAT line."""
    ppu_sync(m, env, t)
    if reg == 0x41:
        m.io[env, 0x41] = wp.uint8((int(m.io[env, 0x41]) & 0x07) | (value & 0x78))
    elif reg != 0x44:
        m.io[env, reg] = wp.uint8(value)
    stat_update(m, env, t)
