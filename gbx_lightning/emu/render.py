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
  Not modelled: the DMG WX=0 "shift by SCX%8" and WX=166 glitches (Pan Docs,
  "Window": both documented as unreliable hardware bugs).
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

Cost: tile rows are fetched once per 8 pixels (two VRAM bytes), not per pixel.
Objects are drawn first into the output row itself (flag byte 0x80 | behind<<2
| shade), lowest priority first, so the BG pass that follows resolves each
pixel with one read; lines without objects skip that entirely.
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
# Object pixel staged in the output row: present flag, behind-BG flag, shade.
_OBJ_PRESENT = wp.constant(0x80)
_OBJ_BEHIND = wp.constant(0x04)


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
def _stage_object(vram: wp.array2d(dtype=wp.uint8), oam: wp.array2d(dtype=wp.uint8), env: int, ly: int,
                  lcdc: int, i: int, obp0: int, obp1: int, frame: wp.array3d(dtype=wp.uint8),
                  obs: wp.array3d(dtype=wp.uint8), full: int):
    """Write object i's opaque pixels on line ly into the output row (later calls overwrite)."""
    base = i * 4
    top = int(oam[env, base]) - 16
    left = int(oam[env, base + 1]) - 8
    tile = int(oam[env, base + 2])
    attr = int(oam[env, base + 3])
    h = _obj_height(lcdc)
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
    behind = 0
    if (attr & 0x80) != 0:
        behind = _OBJ_BEHIND
    xflip = (attr & 0x20) != 0
    for px in range(8):
        sx = left + px
        if sx >= 0 and sx < 160:
            bit = 7 - px
            if xflip:
                bit = px
            c = _pixel_colour(lo, hi, bit)
            if c != 0:
                staged = wp.uint8(_OBJ_PRESENT | behind | _pal_shade(pal, c))
                if full != 0:
                    frame[env, ly, sx] = staged
                elif (sx & 1) == 0:
                    obs[env, ly >> 1, sx >> 1] = staged


@wp.func
def _stage_objects(vram: wp.array2d(dtype=wp.uint8), oam: wp.array2d(dtype=wp.uint8), env: int, ly: int,
                   lcdc: int, obp0: int, obp1: int, frame: wp.array3d(dtype=wp.uint8),
                   obs: wp.array3d(dtype=wp.uint8), full: int) -> int:
    """Select this line's objects and stage them lowest priority first; returns how many."""
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
    if n == 0:
        return 0
    if full != 0:
        for x in range(160):
            frame[env, ly, x] = wp.uint8(0)
    else:
        for x in range(80):
            obs[env, ly >> 1, x] = wp.uint8(0)
    # painter's order: largest key (lowest priority) first, so winners overwrite
    upper = int(1 << 30)
    for r in range(n):
        best = int(-1)
        for j in range(n):
            k = keys[j]
            if k < upper and k > best:
                best = k
        upper = best
        _stage_object(vram, oam, env, ly, lcdc, best & 63, obp0, obp1, frame, obs, full)
    return n


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
    write_obs = (ly & 1) == 0
    oy = ly >> 1

    staged = int(0)
    if (lcdc & 0x02) != 0:
        staged = _stage_objects(vram, oam, env, ly, lcdc, obp0, obp1, frame, obs, full)

    bg_on = (lcdc & 0x01) != 0
    win_start = int(1 << 20)
    if win != 0:
        win_start = wx - 7
    bg_map_row = _MAP_9800
    if (lcdc & 0x08) != 0:
        bg_map_row = _MAP_9C00
    bg_y = (ly + scy) & 255
    bg_map_row = bg_map_row + (bg_y >> 3) * 32
    win_map_row = _MAP_9800
    if (lcdc & 0x40) != 0:
        win_map_row = _MAP_9C00
    win_map_row = win_map_row + (window_line >> 3) * 32

    fetched = int(-1)  # which tile row lo/hi hold: BG column 0..31, window column 256+
    lo = int(0)
    hi = int(0)
    x = int(0)
    while x < 160:
        c = int(0)
        if bg_on:
            bit = int(0)
            if x >= win_start:
                wcol = x - win_start
                key = 256 + (wcol >> 3)
                if key != fetched:
                    addr = _bg_tile_row(vram, env, win_map_row + (wcol >> 3), lcdc, window_line & 7)
                    lo = int(vram[env, addr])
                    hi = int(vram[env, addr + 1])
                    fetched = key
                bit = 7 - (wcol & 7)
            else:
                bx = (x + scx) & 255
                key = bx >> 3
                if key != fetched:
                    addr = _bg_tile_row(vram, env, bg_map_row + key, lcdc, bg_y & 7)
                    lo = int(vram[env, addr])
                    hi = int(vram[env, addr + 1])
                    fetched = key
                bit = 7 - (bx & 7)
            c = _pixel_colour(lo, hi, bit)
        shade = _pal_shade(bgp, c)
        if staged != 0:
            s = int(0)
            if full != 0:
                s = int(frame[env, ly, x])
            else:
                s = int(obs[env, oy, x >> 1])
            if (s & _OBJ_PRESENT) != 0 and ((s & _OBJ_BEHIND) == 0 or c == 0):
                shade = s & 3
        if full != 0:
            frame[env, ly, x] = wp.uint8(shade)
            if write_obs and (x & 1) == 0:
                obs[env, oy, x >> 1] = wp.uint8(shade)
        else:
            obs[env, oy, x >> 1] = wp.uint8(shade)
        x += step
    return win


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
