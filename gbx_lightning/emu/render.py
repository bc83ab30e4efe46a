"""DMG scanline renderer, called inside the machine kernel when a line's mode 3 ends.

One call draws one line with the registers that line sees, so mid-frame raster
effects (SCX/BGP/LCDC writes in HBlank or an LYC handler) show as on hardware.
The rules follow Pan Docs ("Rendering", "Tile Data", "Tile Maps", "LCDC",
"Window", "OAM", "Palettes"):

* BG: 256x256 map scrolled by SCX/SCY with wrap-around; tile map $9800/$9C00
  (LCDC.3); tile data $8000 unsigned or $8800 signed around $9000 (LCDC.4).
* Window: drawn from screen x = WX-7 once the frame's WY condition has fired,
  with LCDC.5 and LCDC.0 both set and WX <= 166; it reads its own line counter
  (`window_line`), which the caller advances only on lines where this function
  says the window was drawn.  WX 0..6 clips the window's left columns.
* LCDC.0 = 0 on DMG: BG and window show colour 0 (through BGP); objects still
  draw and always win over it (Pan Docs, "LCDC.0").
* Objects: OAM scanned in order, the first 10 whose rows cover the line are
  selected (X plays no part in selection); 8x8 or 8x16 (LCDC.2, tile bit 0
  ignored in 8x16); among selected objects that have an opaque pixel at a
  position the one with the smaller X wins, ties go to the lower OAM index;
  colour 0 is transparent; attribute bit 7 puts the winning pixel behind BG
  colours 1-3; bits 6/5 flip Y/X; bit 4 picks OBP1 over OBP0; LCDC.1 enables.

Output is shades 0..3 after palette mapping.  The observation is the 2x2
downsample that keeps the top-left pixel: obs[env, y, x] = frame[env, 2y, 2x].
In RENDER_OBS mode only those pixels are computed (odd lines return at once);
the window flag is computed in every mode because it is machine state.

Cost: BG and window are drawn in spans of whole tiles — one map read and one
tile-row fetch (two VRAM bytes) per 8 pixels, the 8 pixels unrolled, always on
that plain path.  Objects are drawn afterwards over the finished row, highest
priority first: the first opaque object pixel claims its position (flag 0x80 in
the row, cleared at the end), and only under a behind-BG object pixel is the BG
colour number recomputed; transparent object rows and lines without objects
cost only the OAM scan.

Limits (documented hardware behaviour not modelled): a line is drawn at once
with the registers as mode 3 ends, so a write that lands inside mode 3 affects
the whole line rather than the pixels after it; the DMG window glitches (WX=0
shifted by SCX%8, WX=166, window disabled mid-line) are not reproduced.
"""

from __future__ import annotations

import warp as wp

RENDER_NONE = wp.constant(0)
RENDER_OBS = wp.constant(1)
RENDER_FULL = wp.constant(2)

SCREEN_W = wp.constant(160)
SCREEN_H = wp.constant(144)
OBS_W = wp.constant(80)
OBS_H = wp.constant(72)
MAX_OBJ_PER_LINE = wp.constant(10)

_vec10i = wp.types.vector(length=10, dtype=wp.int32)

# VRAM array index = CPU address - $8000.
_MAP_9800 = wp.constant(0x1800)
_MAP_9C00 = wp.constant(0x1C00)
# Object pixel drawn on this line: claim flag in the output row (cleared after the pass).
_OBJ_PRESENT = wp.constant(0x80)


@wp.func
def _obj_height(lcdc: int) -> int:
    """8 or 16 rows (LCDC.2)."""
    return 8 + ((lcdc >> 2) & 1) * 8


@wp.func
def _pal_shade(palette: int, colour: int) -> int:
    """BGP/OBP0/OBP1 map colour n to bits 2n+1..2n."""
    return (palette >> (colour * 2)) & 3


@wp.func
def _pixel_colour(lo: int, hi: int, bit: int) -> int:
    """Colour 0..3 of one pixel from a tile row's two bitplanes (hi byte = bit 1)."""
    return (((hi >> bit) & 1) << 1) | ((lo >> bit) & 1)


@wp.func
def _bg_tile_row(vram: wp.array2d(dtype=wp.uint8), env: int, map_index: int, lcdc: int, row: int) -> int:
    """VRAM index of row `row` of the BG/window tile named at map_index.

    LCDC.4=1: tile n at $8000+16n; LCDC.4=0: signed n at $9000+16n.
    """
    t = int(vram[env, map_index])
    if (lcdc & 0x10) != 0:
        return t * 16 + row * 2
    return 0x1000 + ((t ^ 0x80) - 0x80) * 16 + row * 2


@wp.func
def window_visible(lcdc: int, wy_triggered: int, wx: int) -> int:
    """1 if the window is drawn on a line: LCDC.5 and LCDC.0 (DMG), WY fired, WX <= 166."""
    if (lcdc & 0x21) == 0x21 and wy_triggered != 0 and wx <= 166:
        return 1
    return 0


@wp.func
def sprites_on_line(oam: wp.array2d(dtype=wp.uint8), env: int, ly: int, lcdc: int) -> int:
    """Objects the OAM scan selects for line ly (0..10); 0 when LCDC.1 disables objects.

    With objects disabled the DMG fetches none, so mode 3 is not lengthened.
    """
    if (lcdc & 0x02) == 0:
        return 0
    h = _obj_height(lcdc)
    n = int(0)
    for i in range(40):
        top = int(oam[env, i * 4]) - 16
        if ly >= top and ly < top + h:
            n += 1
            if n == 10:
                break
    return n


@wp.func
def _bg_colour_at(vram: wp.array2d(dtype=wp.uint8), env: int, lcdc: int, x: int, bg_map_row: int, bg_tile_row: int,
                  scx: int, win_start: int, win_map_row: int, win_tile_row: int) -> int:
    """BG/window colour number at screen x (only needed under a behind-BG object pixel)."""
    map_row = bg_map_row
    tile_row = bg_tile_row
    mx = (x + scx) & 255
    if x >= win_start:
        map_row = win_map_row
        tile_row = win_tile_row
        mx = x - win_start
    addr = _bg_tile_row(vram, env, map_row + ((mx >> 3) & 31), lcdc, tile_row)
    return _pixel_colour(int(vram[env, addr]), int(vram[env, addr + 1]), 7 - (mx & 7))


@wp.func
def _draw_objects(vram: wp.array2d(dtype=wp.uint8), oam: wp.array2d(dtype=wp.uint8), env: int, ly: int,
                  lcdc: int, obp0: int, obp1: int, frame: wp.array3d(dtype=wp.uint8),
                  obs: wp.array3d(dtype=wp.uint8), full: int, write_obs: int, bg_on: int, bg_map_row: int,
                  bg_tile_row: int, scx: int, win_start: int, win_map_row: int, win_tile_row: int):
    """Draw this line's objects over the BG already in the output row.

    Objects go highest priority first; the first opaque object pixel at a position
    claims it (flag _OBJ_PRESENT in the row, cleared afterwards), so lower-priority
    objects cannot show there even where the winner hides behind BG colours 1-3.
    """
    h = _obj_height(lcdc)
    keys = _vec10i()
    n = int(0)
    for i in range(40):
        top = int(oam[env, i * 4]) - 16
        if ly >= top and ly < top + h:
            # priority key: smaller X first, then smaller OAM index (unique per object)
            keys[n] = int(oam[env, i * 4 + 1]) * 64 + i
            n += 1
            if n == 10:
                break
    x0 = int(160)
    x1 = int(0)
    lower = int(-1)
    for r in range(n):
        best = int(1 << 30)
        for j in range(n):
            k = keys[j]
            if k > lower and k < best:
                best = k
        lower = best
        base = (best & 63) * 4
        top = int(oam[env, base]) - 16
        left = int(oam[env, base + 1]) - 8
        tile = int(oam[env, base + 2])
        attr = int(oam[env, base + 3])
        if left < 160 and left > -8:
            row = ly - top
            if (attr & 0x40) != 0:
                row = h - 1 - row
            if h == 16:
                tile = tile & 0xFE
            addr = tile * 16 + row * 2
            lo = int(vram[env, addr])
            hi = int(vram[env, addr + 1])
            pal = obp0
            if (attr & 0x10) != 0:
                pal = obp1
            behind = (attr & 0x80) != 0 and bg_on != 0
            xflip = (attr & 0x20) != 0
            if (lo | hi) == 0:  # a transparent row draws nothing
                left = 160
            for px in range(8):
                sx = left + px
                if sx >= 0 and sx < 160 and (full != 0 or (sx & 1) == 0):
                    bit = 7 - px
                    if xflip:
                        bit = px
                    c = _pixel_colour(lo, hi, bit)
                    if c != 0:
                        cur = int(0)
                        if full != 0:
                            cur = int(frame[env, ly, sx])
                        else:
                            cur = int(obs[env, ly >> 1, sx >> 1])
                        if (cur & _OBJ_PRESENT) == 0:
                            shade = _pal_shade(pal, c)
                            if behind:
                                if _bg_colour_at(vram, env, lcdc, sx, bg_map_row, bg_tile_row, scx, win_start,
                                                 win_map_row, win_tile_row) != 0:
                                    shade = cur
                            if full != 0:
                                frame[env, ly, sx] = wp.uint8(_OBJ_PRESENT | shade)
                            else:
                                obs[env, ly >> 1, sx >> 1] = wp.uint8(_OBJ_PRESENT | shade)
                            x0 = wp.min(x0, sx)
                            x1 = wp.max(x1, sx + 1)
    # clear the claim flags (and refresh obs from the finished full row)
    for x in range(x0, x1):
        if full != 0:
            v = int(frame[env, ly, x]) & 3
            frame[env, ly, x] = wp.uint8(v)
            if write_obs != 0 and (x & 1) == 0:
                obs[env, ly >> 1, x >> 1] = wp.uint8(v)
        elif (x & 1) == 0:
            obs[env, ly >> 1, x >> 1] = wp.uint8(int(obs[env, ly >> 1, x >> 1]) & 3)


@wp.func
def render_scanline(vram: wp.array2d(dtype=wp.uint8), oam: wp.array2d(dtype=wp.uint8), env: int, ly: int,
                    lcdc: int, scy: int, scx: int, wy_triggered: int, wx: int, window_line: int, bgp: int,
                    obp0: int, obp1: int, frame: wp.array3d(dtype=wp.uint8), obs: wp.array3d(dtype=wp.uint8),
                    render_mode: int) -> int:
    """Draw line ly (0..143) into frame[env, ly] (RENDER_FULL) and obs[env, ly/2] (even ly, mode >= RENDER_OBS).

    Returns 1 if the window was drawn on this line (the caller then advances
    window_line), else 0 — in every render mode, since it is machine state.
    """
    win = window_visible(lcdc, wy_triggered, wx)
    if render_mode == RENDER_NONE:
        return win
    full = int(0)
    step = int(2)
    if render_mode == RENDER_FULL:
        full = 1
        step = 1
    elif (ly & 1) != 0:
        return win
    write_obs = 1 - (ly & 1)

    bg_on = lcdc & 0x01
    win_start = int(1 << 20)
    if win != 0:
        win_start = wx - 7
    bg_map_row = _MAP_9800
    if (lcdc & 0x08) != 0:
        bg_map_row = _MAP_9C00
    bg_y = (ly + scy) & 255
    win_map_row = _MAP_9800
    if (lcdc & 0x40) != 0:
        win_map_row = _MAP_9C00
    if bg_on == 0:  # DMG: BG and window blank (colour 0); objects still drawn
        x = int(0)
        while x < 160:
            _emit_pixel(env, ly, x, 0, bgp, full, write_obs, frame, obs)
            x += step
    else:
        bg_end = wp.min(160, wp.max(win_start, 0))
        if bg_end > 0:
            _draw_span(vram, env, ly, lcdc, bg_map_row + (bg_y >> 3) * 32, bg_y & 7, 0, bg_end, scx, bgp,
                       full, write_obs, frame, obs)
        if bg_end < 160:
            _draw_span(vram, env, ly, lcdc, win_map_row + (window_line >> 3) * 32, window_line & 7, bg_end, 160,
                       bg_end - win_start, bgp, full, write_obs, frame, obs)
    if (lcdc & 0x02) != 0:
        _draw_objects(vram, oam, env, ly, lcdc, obp0, obp1, frame, obs, full, write_obs, bg_on,
                      bg_map_row + (bg_y >> 3) * 32, bg_y & 7, scx, win_start,
                      win_map_row + (window_line >> 3) * 32, window_line & 7)
    return win


@wp.func
def _emit_pixel(env: int, ly: int, x: int, c: int, bgp: int, full: int, write_obs: int,
                frame: wp.array3d(dtype=wp.uint8), obs: wp.array3d(dtype=wp.uint8)):
    """Write the shade of BG colour c at x."""
    shade = _pal_shade(bgp, c)
    if full != 0:
        frame[env, ly, x] = wp.uint8(shade)
        if write_obs != 0 and (x & 1) == 0:
            obs[env, ly >> 1, x >> 1] = wp.uint8(shade)
    else:
        obs[env, ly >> 1, x >> 1] = wp.uint8(shade)


@wp.func
def _draw_span(vram: wp.array2d(dtype=wp.uint8), env: int, ly: int, lcdc: int, map_row: int, tile_row: int,
               x_begin: int, x_end: int, map_x: int, bgp: int, full: int, write_obs: int,
               frame: wp.array3d(dtype=wp.uint8), obs: wp.array3d(dtype=wp.uint8)):
    """Screen pixels [x_begin, x_end) from one 32-tile map row, starting at map pixel map_x
    (wrapping at 256): one tile-row fetch per 8 pixels; in obs mode only even x."""
    x = x_begin
    mx = map_x
    while x < x_end:
        addr = _bg_tile_row(vram, env, map_row + ((mx >> 3) & 31), lcdc, tile_row)
        lo = int(vram[env, addr])
        hi = int(vram[env, addr + 1])
        first = mx & 7
        n = wp.min(8 - first, x_end - x)
        base = x - first  # screen x of the tile's pixel 0
        last = first + n
        if full != 0:
            if n == 8:  # a whole tile: no bounds to test
                for p in range(8):
                    frame[env, ly, base + p] = wp.uint8(_pal_shade(bgp, _pixel_colour(lo, hi, 7 - p)))
            else:
                for p in range(8):
                    if p >= first and p < last:
                        frame[env, ly, base + p] = wp.uint8(_pal_shade(bgp, _pixel_colour(lo, hi, 7 - p)))
            if write_obs != 0:
                for p in range(8):
                    if p >= first and p < last and ((base + p) & 1) == 0:
                        obs[env, ly >> 1, (base + p) >> 1] = frame[env, ly, base + p]
        else:
            for p in range(8):
                if p >= first and p < last and ((base + p) & 1) == 0:
                    obs[env, ly >> 1, (base + p) >> 1] = wp.uint8(_pal_shade(bgp, _pixel_colour(lo, hi, 7 - p)))
        x += n
        mx += n


@wp.func
def objects_mode3_penalty(oam: wp.array2d(dtype=wp.uint8), env: int, ly: int, lcdc: int, scx: int,
                          win_start: int) -> int:
    """Dots that this line's objects add to mode 3 (Pan Docs, "Mode 3 length").

    Each selected object with X < 168 costs 6 dots; the first object whose leftmost
    pixel falls in a given BG (or window) tile also waits for that tile's fetch:
    5 - (pixel's offset in the tile) more dots, at least 0; X = 0 always costs 11.
    win_start: screen x where the window starts on this line (>= 160: none).
    """
    if (lcdc & 0x02) == 0:
        return 0
    h = _obj_height(lcdc)
    tile_keys = _vec10i()
    offsets = _vec10i()
    n = int(0)
    selected = int(0)
    for i in range(40):
        top = int(oam[env, i * 4]) - 16
        if ly >= top and ly < top + h:
            selected += 1
            x = int(oam[env, i * 4 + 1])
            if x < 168:
                sx = x - 8
                if x == 0:
                    tile_keys[n] = -1  # fixed 11 dots
                    offsets[n] = 0
                elif sx >= win_start:
                    p = sx - win_start
                    tile_keys[n] = 64 + (p >> 3)
                    offsets[n] = p & 7
                else:
                    p = sx + (scx & 7) + 8  # >= 1: fetcher position, one tile to the left of the screen
                    tile_keys[n] = p >> 3
                    offsets[n] = p & 7
                n += 1
            if selected == 10:
                break
    dots = int(0)
    for j in range(n):
        dots += 6
        key = tile_keys[j]
        if key < 0:
            dots += 5
        else:
            first = int(1)
            for k in range(n):
                if k != j and tile_keys[k] == key:
                    if offsets[k] < offsets[j] or (offsets[k] == offsets[j] and k < j):
                        first = 0
            if first != 0:
                dots += wp.max(0, 5 - offsets[j])
    return dots


@wp.func
def blank_scanline(env: int, ly: int, shade: int, frame: wp.array3d(dtype=wp.uint8),
                   obs: wp.array3d(dtype=wp.uint8), render_mode: int):
    """Fill line ly with one shade (LCD off: the DMG shows a blank, white screen)."""
    if render_mode == RENDER_FULL:
        for x in range(160):
            frame[env, ly, x] = wp.uint8(shade)
    if render_mode >= RENDER_OBS and (ly & 1) == 0:
        for x in range(80):
            obs[env, ly >> 1, x] = wp.uint8(shade)
