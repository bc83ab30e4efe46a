"""The DMG's mode 3 dot by dot: the pixel pipeline for lines whose PPU registers change mid-line.

render.py draws a line in one go with the registers as they stand. When the CPU writes LCDC,
SCY, SCX, BGP, OBP0/1, WY or WX while a line is in mode 3, the write is logged (its value and
the dot it lands on: ``log_mode3_write``), and that line is drawn here instead, by a model of
the PPU's pipeline that reads each register at the dot the hardware does. The same model gives
mode 3's length, so STAT and the picture agree (ppu.py moves the mode-0 event to its end).

The pipeline (Pan Docs, "Pixel FIFO"; the DMG timings below are those the mode-3 length of
ppu.py already follows: 172 dots + SCX mod 8, 6 for the window, 6..11 per object):

* A background FIFO (colour numbers) and an object FIFO (colour, palette, BG-over-OBJ bit).
  Each dot, if the BG FIFO holds a pixel, one pixel of each is shifted out and mixed; the
  first 8 + SCX mod 8 are dropped (the first 8 are the junk the FIFO starts with: the LCD's
  x counter starts at -8, where objects with X < 8 begin; SCX mod 8 is read once, as the
  pipeline starts - Mealybug Tearoom m3_scx_low_3_bits).
* The fetcher, a step per dot in a cycle of 8: sleep, read the tile number (the map row from
  LY + SCY and the map from LCDC.3/LCDC.6, the column from SCX / 8 + its own tile counter, or
  the window's), sleep, read the low bitplane, sleep, read the high bitplane (both with SCY
  and LCDC.4 read again: DMG, m3_scy_change, m3_lcdc_tile_sel_change), then push the 8
  pixels as soon as the BG FIFO is empty. Its tile counter advances on the step after the
  high read (so not when the push comes at once, as after the window starts).
* Mixing, per pixel: BGP, OBP0/1 and LCDC.0/LCDC.1 as they are at that dot (on the DMG
  LCDC.0 = 0 shows BG colour 0; an object pixel shows if opaque and not behind BG colours
  1-3).
* Objects: OAM's selection for the line (the scan of mode 2), in order of X then OAM index.
  When the x counter reaches an object's X - 8 with LCDC.1 set, the pixels stop: the
  fetcher runs on until it has finished a tile (step >= 5) and the BG FIFO is not empty,
  an object at X = 0 waits min(SCX mod 8, 5) more dots once (SameBoy issue 293: so
  it costs 11 whatever SCX), then 6 dots of object fetch (the
  fetcher steps twice more; the row's address is formed with LCDC.2 at its 4th dot, the
  high byte's at its 6th); its opaque pixels fill the object FIFO where it is transparent.
  These waits are the DMG's 6..11 dots per object (Pan Docs, "Mode 3 length").
* The window starts when, with LCDC.5 (and LCDC.0, DMG) set and the frame's WY condition
  met, WX = x + 7: the BG FIFO is cleared and the fetcher restarts on the window's row
  (6 dots with no pixel). Each start on a line uses the next window row. LCDC.5 read as 0
  when the fetcher reads a tile number switches it back to the background. While the
  window shows, WX written to match the x counter again when the fetcher is at the start
  of its cycle inserts a pixel of colour 0 (DMG; Mealybug Tearoom m3_wx_4_change).

Dots are counted from the pipeline's start, PIPE_START_T after the line's start (5 dots after
STAT shows mode 3); mode 0 begins at the dot of the last pixel (the shortest line: dot 167, so
at 87 + 167 = 254, ppu.py's value). A write in the
M-cycle at t lands on dot t + WRITE_PHASE - (line start + PIPE_START_T).

The log (per env, state "ppu_log", int32): the line's registers as mode 3 started (taken at its
first write) and every write in order. ``dots_line`` replays it. Costs nothing on a line
without such writes; a line with them costs one pass of up to ~300 dots when drawn, and one
more per write that can move mode 3's end (LCDC, WX, WY, SCX before its read).
"""
import warp as wp

from .dma import dma_sync
from .render import LINE_BUF_WORDS, RENDER_FULL, RENDER_OBS, objects_on_line, store_line, window_visible
from .state import PPU_LOG_WORDS, R_WIN_LINE, R_WY_TRIGGERED, T_LINE_START, MachinePtr, machine

PIPE_START_T = wp.constant(87)    # line start -> the pipeline's dot 0 (mode 3 shows from 82)
WRITE_PHASE = wp.constant(wp.int64(0))     # a write in the M-cycle at t lands at t + WRITE_PHASE
                                           # (BGP, LCDC.0 and OBP0 writes: gambatte's pixel)
MAX_END_DOT = wp.constant(360)    # a guard: the last pixel comes by dot ~290, the line ends at 369

# ppu_log words
LOG_COUNT = wp.constant(0)        # writes logged on the current line (0: none)
LOG_REGS_A = wp.constant(1)       # LCDC | SCY << 8 | SCX << 16 | BGP << 24 as mode 3 started
LOG_REGS_B = wp.constant(2)       # OBP0 | OBP1 << 8 | WY << 16 | WX << 24
LOG_WINDOW = wp.constant(3)       # the WY condition | the window's line counter << 8
LOG_TIMING = wp.constant(4)       # 1 if a logged write may have moved mode 3's end
LOG_STARTS = wp.constant(5)       # window starts on this line, from the last timing pass
LOG_FIRST = wp.constant(8)        # entries: (dot + DOT_BIAS) << 16 | register << 8 | value
                                  # (PPU_LOG_WORDS = 96: 88 entries, more than mode 3 has M-cycles)
DOT_BIAS = wp.constant(64)

# phases of the per-dot loop
_PIXEL = wp.constant(0)           # shifting pixels out
_WAIT = wp.constant(1)            # an object is due: the fetcher finishes its tile
_X0 = wp.constant(2)              # an object at X = 0 waits SCX mod 8 dots
_FETCH = wp.constant(3)           # the object's 6-dot fetch


@wp.func
def _bg_tile_row(vr: wp.array(dtype=wp.uint8), tile: int, y: int, lcdc: int) -> int:
    """VRAM index of the low byte of row y & 7 of BG/window tile `tile` under LCDC.4 ($8000
    unsigned, or $9000 signed: $8800 + 16 * (tile ^ $80))."""
    base = 0x800 + 16 * (tile ^ 0x80)
    if (lcdc & 0x10) != 0:
        base = 16 * tile
    return base + 2 * (y & 7)


@wp.func
def _obj_row(ow: wp.array(dtype=wp.uint32), i: int, ly: int, lcdc: int) -> int:
    """VRAM index of the low byte of object i's row on line ly (LCDC.2: 8x16, tile bit 0
    ignored; attribute bit 6 flips Y)."""
    w = int(ow[i])
    mask = 7
    tile = (w >> 16) & 0xFF
    if (lcdc & 0x04) != 0:
        mask = 15
        tile = tile & 0xFE
    row = (ly - (w & 0xFF)) & mask     # (ly + 16 - Y) mod the height
    if ((w >> 24) & 0x40) != 0:
        row = row ^ mask
    return tile * 16 + row * 2


@wp.func
def _window_due(lcdc: int, wyt: int, wx: int, pos: int) -> int:
    """1 if the window starts at x counter `pos`: LCDC.5 and LCDC.0 (DMG), WY condition, WX = x + 7."""
    if (lcdc & 0x21) == 0x21 and wyt != 0 and wx <= 166 and wx == ((pos + 7) & 255):
        return 1
    return 0


@wp.func(inline=False)
def dots_line(vram_env: wp.uint64, oam_env: wp.uint64, log_at: wp.uint64, scratch: wp.uint64, ly: int,
              selected: wp.uint64, draw: int) -> int:
    """Run line ly's mode 3 dot by dot from the log at log_at (the registers as it started and the
    writes since). Returns the dot of the last pixel | window starts << 16. draw: 1 to write the
    160 shades to the bytes at scratch + 184 (line_buf's shade words 1..20); scratch + 352 holds
    the objects in fetch order. selected: OAM's selection for the line (objects_on_line)."""
    vr = wp.array(ptr=vram_env, shape=(8192,), dtype=wp.uint8)
    ow = wp.array(ptr=oam_env, shape=(40,), dtype=wp.uint32)
    log = wp.array(ptr=log_at, shape=(PPU_LOG_WORDS,), dtype=wp.int32)
    keys = wp.array(ptr=scratch + wp.uint64(352), shape=(10,), dtype=wp.int32)
    px = wp.array(ptr=scratch + wp.uint64(184), shape=(160,), dtype=wp.uint8)
    a = log[LOG_REGS_A]
    b = log[LOG_REGS_B]
    lcdc = a & 0xFF
    scy = (a >> 8) & 0xFF
    scx = (a >> 16) & 0xFF
    bgp = (a >> 24) & 0xFF
    obp0 = b & 0xFF
    obp1 = (b >> 8) & 0xFF
    wy = (b >> 16) & 0xFF
    wx = (b >> 24) & 0xFF
    wyt = log[LOG_WINDOW] & 0xFF
    win_line = (log[LOG_WINDOW] >> 8) & 0xFF
    n_writes = wp.min(log[LOG_COUNT], PPU_LOG_WORDS - LOG_FIRST)
    # the objects with X < 168, sorted by X * 64 + OAM index
    n_obj = int(0)
    rest = selected
    while rest != wp.uint64(0):
        i = int(wp.bit_count((rest & (~rest + wp.uint64(1))) - wp.uint64(1)))
        rest = rest & (rest - wp.uint64(1))
        x = (int(ow[i]) >> 8) & 0xFF
        if x < 168:
            key = x * 64 + i
            k = n_obj
            while k > 0 and keys[k - 1] > key:
                keys[k] = keys[k - 1]
                k -= 1
            keys[k] = key
            n_obj += 1
    wi = int(0)
    d = int(0)
    fine = int(-1)
    pos = int(0)
    x0_wait = int(0)
    bgq = wp.uint32(0)      # BG FIFO: 2 bits per pixel, the next one lowest
    bgn = int(8)            # starts with 8 junk pixels
    obq = wp.uint32(0)      # object FIFO: 4 bits per pixel (colour, OBP1, behind BG)
    obn = int(0)
    step = int(0)           # the fetcher's step, 0..7
    fx = int(0)             # its BG tile counter
    tile = int(0)
    lo = int(0)
    hi = int(0)
    win = int(0)
    win_x = int(0)          # the window's tile counter
    starts = int(0)
    fresh = int(0)          # the window just started: no pixel shown since
    oi = int(0)             # next object in fetch order
    phase = _PIXEL
    count = int(0)
    obj_lo = int(0)
    checked = int(0)        # the window checks ran this dot (1) or are skipped (an object fetch ended)
    end = int(-1)
    while end < 0 and d < MAX_END_DOT:
        # the writes that have landed by this dot
        while wi < n_writes and ((log[LOG_FIRST + wi] >> 16) - DOT_BIAS) <= d:
            e = log[LOG_FIRST + wi]
            reg = (e >> 8) & 0xFF
            v = e & 0xFF
            if reg == 0x40:
                lcdc = v
            elif reg == 0x42:
                scy = v
            elif reg == 0x43:
                scx = v
            elif reg == 0x47:
                bgp = v
            elif reg == 0x48:
                obp0 = v
            elif reg == 0x49:
                obp1 = v
            elif reg == 0x4A:
                wy = v
            elif reg == 0x4B:
                wx = v
            if (reg == 0x40 or reg == 0x4A) and (lcdc & 0x20) != 0 and ly == wy:
                wyt = 1     # the WY condition (ppu._wy_check)
            wi += 1
        if fine < 0:        # the pipeline starts: SCX mod 8 is read
            fine = scx & 7
            pos = -8 - fine
            x0_wait = wp.min(fine, 5)   # with the fetcher's wait: 5 dots in all (Pan Docs: X = 0 costs 11)
        advance = int(0)
        checked = 1
        if phase == _FETCH and count == 6:
            # the object's row is read: its opaque pixels fill the transparent ones of the FIFO
            i = keys[oi] & 63
            attr = (int(ow[i]) >> 24) & 0xFF
            plo = int(vr[obj_lo])
            phi = int(vr[_obj_row(ow, i, ly, lcdc) + 1])
            if (attr & 0x20) == 0:      # bit 7 is the leftmost pixel unless X-flipped
                plo = _reverse8(plo)
                phi = _reverse8(phi)
            extra = ((attr >> 4) & 1) * 4 + ((attr >> 7) & 1) * 8
            for p in range(8):
                c = ((plo >> p) & 1) | (((phi >> p) & 1) << 1)
                if c != 0 and (p >= obn or ((int(obq) >> (4 * p)) & 3) == 0):
                    obq = (obq & ~(wp.uint32(15) << wp.uint32(4 * p))) | (wp.uint32(c | extra) << wp.uint32(4 * p))
            obn = 8
            oi += 1
            phase = _PIXEL
            checked = 0
        if phase == _PIXEL:
            if checked != 0:
                if win == 0:
                    if _window_due(lcdc, wyt, wx, pos) != 0:
                        win = 1
                        fresh = 1
                        starts += 1
                        win_x = 0
                        bgn = 0
                        step = 0
                elif fresh == 0 and step == 0 and wx == ((pos + 7) & 255):
                    bgq = bgq << wp.uint32(2)   # DMG: a colour-0 pixel is inserted at the front
                    bgn += 1
            while oi < n_obj and pos >= -8 and pos < 160 and (keys[oi] >> 6) < pos + 8:
                oi += 1                          # passed while objects were off (LCDC.1)
            if oi < n_obj and pos >= -8 and pos < 160 and (lcdc & 0x02) != 0 and (keys[oi] >> 6) == pos + 8:
                phase = _WAIT
            else:
                if bgn > 0:
                    c = int(bgq & wp.uint32(3))
                    bgq = bgq >> wp.uint32(2)
                    bgn -= 1
                    o = int(0)
                    if obn > 0:
                        o = int(obq & wp.uint32(15))
                        obq = obq >> wp.uint32(4)
                        obn -= 1
                    if pos >= 0 and pos < 160:
                        fresh = 0
                        if draw != 0:
                            if (lcdc & 0x01) == 0:
                                c = 0
                            shade = (bgp >> (2 * c)) & 3
                            if (o & 3) != 0 and (lcdc & 0x02) != 0 and ((o & 8) == 0 or c == 0):
                                pal = obp0
                                if (o & 4) != 0:
                                    pal = obp1
                                shade = (pal >> (2 * (o & 3))) & 3
                            px[pos] = wp.uint8(shade)
                    pos += 1
                    if pos == 160:
                        end = d
                advance = 1
        if phase == _WAIT:
            if step < 5 or bgn == 0:
                advance = 1
            elif x0_wait > 0 and (keys[oi] >> 6) == 0:
                phase = _X0
                count = x0_wait
                x0_wait = 0
            else:
                phase = _FETCH
                count = 0
        if phase == _X0:
            count -= 1
            if count == 0:
                phase = _FETCH
        elif phase == _FETCH:
            if count <= 1:
                advance = 1
            if count == 4:
                obj_lo = _obj_row(ow, keys[oi] & 63, ly, lcdc)
            count += 1
        if advance != 0 and end < 0:
            # one fetcher step
            if step == 1:
                if (lcdc & 0x20) == 0:
                    win = 0
                y = (ly + scy) & 255
                col = ((scx >> 3) + fx) & 31
                base = 0x1800 + ((lcdc >> 3) & 1) * 0x400
                if win != 0:
                    y = win_line + starts - 1
                    col = win_x
                    base = 0x1800 + ((lcdc >> 6) & 1) * 0x400
                tile = int(vr[base + (y >> 3) * 32 + col])
                step = 2
            elif step == 3:
                y = (ly + scy) & 255
                if win != 0:
                    y = win_line + starts - 1
                lo = int(vr[_bg_tile_row(vr, tile, y, lcdc)])
                step = 4
            elif step >= 5:
                if step == 5:
                    y = (ly + scy) & 255
                    if win != 0:
                        y = win_line + starts - 1
                        win_x = (win_x + 1) & 31
                    hi = int(vr[_bg_tile_row(vr, tile, y, lcdc) + 1])
                elif step == 6:
                    fx = (fx + 1) & 31
                if step < 7:
                    step += 1
                if bgn == 0:
                    bgq = wp.uint32(_colours_packed(lo, hi))
                    bgn = 8
                    step = 0
            else:
                step += 1
        if end < 0:
            d += 1
    return d | (starts << 16)


@wp.func
def _reverse8(v: int) -> int:
    """The byte with its bits in reverse order (bit 7 <-> bit 0)."""
    r = ((v & 0xF0) >> 4) | ((v & 0x0F) << 4)
    r = ((r & 0xCC) >> 2) | ((r & 0x33) << 2)
    return ((r & 0xAA) >> 1) | ((r & 0x55) << 1)


@wp.func
def _colours_packed(lo: int, hi: int) -> int:
    """A tile row's 8 colour numbers, 2 bits each, the leftmost pixel (bit 7) lowest."""
    r = int(0)
    for p in range(8):
        c = ((lo >> (7 - p)) & 1) | (((hi >> (7 - p)) & 1) << 1)
        r = r | (c << (2 * p))
    return r


@wp.func
def ppu_log_row(ms: MachinePtr, env: int) -> wp.array(dtype=wp.int32):
    """env's PPU_LOG_WORDS log words."""
    m = machine(ms)
    return wp.array(ptr=wp.uint64(m.ppu_log.ptr) + wp.uint64(env * PPU_LOG_WORDS * 4), shape=(PPU_LOG_WORDS,),
                    dtype=wp.int32)


@wp.func
def _line_objects(ms: MachinePtr, env: int, ly: int, log: wp.array(dtype=wp.int32), t: wp.int64) -> wp.uint64:
    """OAM's selection for line ly as the mode-2 scan made it: with LCDC.2 as mode 3 started; LCDC.1
    plays no part in the scan (it gates the fetches and the mixing, which may see it change)."""
    m = machine(ms)
    dma_sync(ms, env, t)
    return objects_on_line(m.oam, env, ly, (log[LOG_REGS_A] & 0xFF) | 0x02)


@wp.func
def _run(ms: MachinePtr, env: int, ly: int, t: wp.int64, draw: int) -> int:
    m = machine(ms)
    log = ppu_log_row(ms, env)
    return dots_line(wp.uint64(m.vram.ptr) + wp.uint64(env * 8192), wp.uint64(m.oam.ptr) + wp.uint64(env * 160),
                     wp.uint64(m.ppu_log.ptr) + wp.uint64(env * PPU_LOG_WORDS * 4),
                     wp.uint64(m.line_buf.ptr) + wp.uint64(env * LINE_BUF_WORDS * 8), ly, _line_objects(ms, env, ly, log, t),
                     draw)


@wp.func(inline=False)
def log_mode3_write(ms: MachinePtr, env: int, ly: int, reg: int, value: int, t: wp.int64) -> int:
    """Log a write to PPU register $FF00 + reg in the M-cycle at t, which falls in line ly's mode 3
    (the register not yet changed). Returns the dot of the line's last pixel if the write may move it
    (LCDC, WY, WX, or SCX before the pipeline reads it): ppu.py then moves mode 3's end; else -1."""
    m = machine(ms)
    log = ppu_log_row(ms, env)
    n = log[LOG_COUNT]
    if n == 0:
        # the registers as mode 3 started (a write in mode 3 is logged before it lands)
        log[LOG_REGS_A] = (int(m.io[env, 0x40]) | (int(m.io[env, 0x42]) << 8) | (int(m.io[env, 0x43]) << 16)
                           | (int(m.io[env, 0x47]) << 24))
        log[LOG_REGS_B] = (int(m.io[env, 0x48]) | (int(m.io[env, 0x49]) << 8) | (int(m.io[env, 0x4A]) << 16)
                           | (int(m.io[env, 0x4B]) << 24))
        log[LOG_WINDOW] = m.r32[env, R_WY_TRIGGERED] | (m.r32[env, R_WIN_LINE] << 8)
        log[LOG_TIMING] = 0
    dot = int(t + WRITE_PHASE - m.r64[env, T_LINE_START]) - PIPE_START_T
    if n < PPU_LOG_WORDS - LOG_FIRST:
        log[LOG_FIRST + n] = ((dot + DOT_BIAS) << 16) | ((reg & 0xFF) << 8) | (value & 0xFF)
        log[LOG_COUNT] = n + 1
    end = int(-1)
    if reg == 0x40 or reg == 0x4A or reg == 0x4B or (reg == 0x43 and dot <= 0):
        log[LOG_TIMING] = 1
        r = _run(ms, env, ly, t, 0)
        log[LOG_STARTS] = r >> 16
        end = r & 0xFFFF
    return end


@wp.func(inline=False)
def mode3_end_logged(ms: MachinePtr, env: int, ly: int, mode: int, t: wp.int64) -> int:
    """Line ly's mode 3 ends at t and it had logged writes: draw it dot by dot if `mode` draws it
    (render.store_line), clear the log. Returns the window's starts on the line (its line counter
    advances by as many)."""
    m = machine(ms)
    log = ppu_log_row(ms, env)
    starts = int(0)
    if mode == RENDER_FULL or (mode == RENDER_OBS and (ly & 1) == 0):
        r = _run(ms, env, ly, t, 1)
        starts = r >> 16
        line = wp.uint64(m.line_buf.ptr) + wp.uint64(env * LINE_BUF_WORDS * 8)
        store_line(line + wp.uint64(176), wp.uint64(m.frame.ptr) + wp.uint64((env * 144 + ly) * 160),
                   wp.uint64(m.obs.ptr) + wp.uint64((env * 72 + (ly >> 1)) * 80), ly, mode)
    elif log[LOG_TIMING] != 0:
        starts = log[LOG_STARTS]
    else:   # no write that moves the window: as the line started
        starts = window_visible(int(m.io[env, 0x40]), m.r32[env, R_WY_TRIGGERED], int(m.io[env, 0x4B]))
    log[LOG_COUNT] = 0
    return starts
