"""The DMG's mode 3 dot by dot: the pixel pipeline for lines whose PPU registers change mid-line.

render.py draws a line in one go with the registers as they stand. When the CPU writes LCDC,
SCY, SCX, BGP, OBP0/1, WY or WX while a line is in mode 3, the write is logged (its value and
the dot it lands on: ``log_mode3_write``), and that line is drawn here instead, by a model of
the PPU's pipeline that reads each register at the dot the hardware does. The same model gives
mode 3's length, so STAT and the picture agree (ppu.py moves the mode-0 event to its end).

The pipeline (Pan Docs, "Pixel FIFO"; the DMG timings below are those the mode-3 length of
ppu.py already follows: 172 dots + SCX mod 8, 6 for the window (7 from x = -7 with a fine
scroll), 6..11 per object):

* A background FIFO (colour numbers) and an object FIFO (colour, palette, BG-over-OBJ bit).
  Each dot, if the BG FIFO holds a pixel, one pixel of each is shifted out and mixed; the
  first 8 + SCX mod 8 are dropped (the first 8 are the junk the FIFO starts with: the LCD's
  x counter starts at -8, where objects with X < 8 begin; SCX mod 8 is read once, as the
  pipeline starts - Mealybug Tearoom m3_scx_low_3_bits).
* The fetcher, a step per dot in a cycle of 8: sleep, read the tile number (the map row from
  LY + SCY and the map from LCDC.3/LCDC.6, the column from SCX / 8 + its own tile counter, or
  the window's), sleep, read the low bitplane, sleep, read the high bitplane (each with SCY and
  LCDC.4 as they are then: a write between the two mixes two rows; DMG, m3_scy_change,
  m3_lcdc_tile_sel_change, SameBoy), then push the 8 pixels as soon as the BG FIFO is empty.
  Its tile counter advances on the step after the high read (so not when the push comes at
  once, as after the window starts); SCX's low bits play no part (the DMG reads them once, as
  the pipeline starts: a mid-line change of them shifts no tile, m3_scx_high_5_bits; gambatte
  takes the column from SCX + x and differs there). It sees LCDC, SCY and SCX as they were
  FETCH_LAG (1) dot before: the pixel at which a write to SCX's high bits, SCY, LCDC.3 or
  LCDC.4 shows, at every M-cycle of a line, with and without objects stalling the fetch,
  is gambatte's (on lines without objects any lag of 1-4 dots draws the same: the writes land
  on one dot phase mod 4; the object stalls pin it to 1).
* Mixing, per pixel: BGP, OBP0/1 as they are at that dot, LCDC.0 and LCDC.1 as the fetcher sees
  them (a dot later) but for the line's first pixel, which takes them as they are (the DMG:
  Mealybug m3_lcdc_obj_en_change's band 2 hides its x = 0, m3_lcdc_bg_en_change's white runs sit
  at x = -1..10 and 19..26 where the object is fetched before pixel 0 and cover x = 0 in bands
  0-2 only; docboy reads both bits as they were a dot before but for its LX = 8, dingbat one mixer
  stage before the palettes; gambatte reads LCDC.1 so and LCDC.0 with the palettes, a pixel
  earlier) (on the DMG LCDC.0 = 0 shows BG colour 0; an object pixel shows if opaque and not
  behind BG colours 1-3).
* Objects: OAM's selection for the line (the scan of mode 2), in order of X then OAM index.
  When the x counter reaches an object's X - 8 with LCDC.1 set, the pixels stop: the
  fetcher runs on until it has finished a tile (step >= 5) and the BG FIFO is not empty,
  an object at X = 0 waits min(SCX mod 8, 5) more dots once (SameBoy issue 293: so
  it costs 11 whatever SCX), then 6 dots of object fetch (the fetcher steps twice more; the
  row's low byte is read at its 4th dot and its high byte at its 6th, each with LCDC.2 as it
  stands on that dot, a write on it included - the DMG, Mealybug m3_lcdc_obj_size_change and
  _scx: which height each bitplane read used, as decoded from the reference; gambatte reads
  3 dots earlier); its opaque pixels fill the object FIFO where it is transparent. LCDC.1
  cleared while the object waits or before its fetch's last dot abandons it: it is not drawn
  and the pixels go on from the write's own dot (SameBoy's object_fetch_aborted; gambatte
  rechecks LCDC.1 each dot of the wait and draws the same; Mealybug
  m3_lcdc_obj_en_change_variant bands 16-17, dingbat's fifo_obj_abort). These waits are the DMG's 6..11 dots per object (Pan Docs, "Mode 3 length").
* The window: WX is compared with the x counter as the x counter reaches each value (as the
  previous pixel goes out, WX as it was before that dot's writes: gambatte; SameBoy's "WX
  checks if the window begins *next* pixel"), with the frame's WY condition met. The DMG
  compares LY with WY, gated by LCDC.5, all along every line and latches a match until VBlank
  (GateBoy, the gate-level model traced from the die: ROGE_WY_MATCH sampled by SARY each
  M-cycle into REJO), so a write to WY or LCDC in this mode 3 meets it from the dot it lands
  (ppu.py checks at each line's start and on every WY and LCDC write, any mode; gambatte misses
  an LCDC.5 set only briefly on that line: tests/roms/ppu_wy_lcdc.asm). On a match at
  x = WX - 7, with LCDC.5 (and LCDC.0, DMG) set then or when the pipeline gets to x, the window
  starts there: the BG FIFO is cleared and the fetcher restarts on the window's row (6 dots
  with no pixel; 7 when WX = 0 with SCX mod 8 > 0: the window starts a dot later, Mealybug
  Tearoom m3_window_timing_wx_0, SameBoy; ppu.py's mode-3 length adds it too). Each start on a
  line uses the next window row. LCDC.5 read as 0 by the fetcher, at any step, ends the window
  mode at once (DMG: LCDC.5 low resets the window-mode latch, GateBoy's PYNU via XOFO;
  gambatte): a tile whose number came from the window map reads its remaining bitplanes from
  the BG's row (Mealybug m3_lcdc_win_en_change_multiple: the window's tiles still show whole,
  its tile numbers), and the next tile is the BG's, its column from the x counter (the DMG's
  BG map x is the pixel counter + SCX, an adder: one tile ahead of the pixel going out). While
  the window shows, WX written to match the x counter again when the fetcher is at the start
  of its cycle inserts a pixel of colour 0 (DMG; Mealybug Tearoom m3_wx_4_change, SameBoy).

Dots are counted from the pipeline's start, PIPE_START_T after the line's start (5 dots after
STAT shows mode 3; on the line the LCD is switched on, LCD_ON_PIPE_DELAY_T later); mode 0
begins at the dot of the last pixel (the shortest line: dot 167, so at 87 + 167 = 254,
ppu.py's value). A write in the M-cycle at t lands on dot
t + WRITE_PHASE - (line start + PIPE_START_T): a BGP write shows from the pixel output at that
dot, as in gambatte, and that one pixel is drawn with old | new (the DMG; so for OBP0/OBP1 on
an object's pixel; not the line's first pixel, which takes the new value; no pixel when none goes
out on that dot, as in an object's fetch): Mealybug Tearoom m3_bgp_change, whose DMG frame is
BGP's low bits sampled once per pixel, shows each edge's first pixel so (tests/roms/ppu_bgp_or.asm
makes its writes; docs/emulator.md); gambatte draws a clean edge there.

What matches (tests/test_ppu_mode3_writes.py, the ppu_m3_* ROMs, one register written six
times per line at every M-cycle phase): whole frames equal to gambatte (BGP and OBP0: but for
each write's old | new pixel) for BGP, OBP0, LCDC.0,
SCX (high bits), SCY, LCDC.3, LCDC.4 and LCDC.1, lines with objects included (LCDC.2: but for
the objects whose rows the DMG's later reads take with another height); SCX's
low bits as the DMG ignores them mid-line (gambatte's frame of the ROM with the low bits held
at the fine scroll); LCDC.5 toggled around the window's start: gambatte's frame, lines with
objects included, except where LCDC.5 is cleared before the window's first tile number is
read (gambatte then fetches the BG's column 0; the DMG's adder gives the x counter's column);
WX: gambatte's frame plus the DMG's reactivation pixel; WY written in mode 3, LCDC.5 set on the
line LY == WY; STAT's mode-0 timing with a window started mid-line; WX = 0 with a fine scroll:
gambatte's STAT and pixels a dot later. Where it differs from gambatte as a whole frame (a
strict xfail): WX, by the reactivation pixel, which gambatte lacks. A WX match that LCDC.5
refuses (the window off there and a dot later, the frame's WY condition met) as a BG tile is pushed
inserts one colour-0 pixel (DMG: Pan Docs, "Window"; SameBoy issue 278; Mealybug
m3_lcdc_win_en_change_multiple_wx's two lone white pixels; render.refused_window_x draws the same
on lines without writes; on screen only, x >= 0). Not modelled: the window's start moving with SCX
mod 8 at WX = 0 (SameBoy; Pan Docs' "stutter"; gambatte keeps it at x = -7, as here). Built for
the CPU and CUDA alike (``dots_compiled``).

The log (per env, state "ppu_log", int32): the line's registers as mode 3 started (taken at its
first write) and every write in order. ``dots_line`` replays it. Costs nothing on a line
without such writes; a line with them costs one pass of up to ~300 dots when drawn, and one
more per write that can move mode 3's end (LCDC, WX, WY, SCX before its read).
"""
import os

import warp as wp

from .dma import dma_sync
from .render import LINE_BUF_WORDS, RENDER_FULL, RENDER_OBS, objects_on_line, store_line, window_visible
from .state import PPU_LOG_WORDS, R_LCD_WARMUP, R_WIN_LINE, R_WY_TRIGGERED, T_LINE_START, MachinePtr, machine

PIPE_START_T = wp.constant(87)    # line start -> the pipeline's dot 0 (mode 3 shows from 82)
# The line the LCD is switched on: its pipeline (mode 3, and so mode 0 and its request) starts 2 T
# later than on other lines (ppu.py, lcdc_write: gbmicrotest int_hblank_*_scx*, DMG; gambatte agrees)
LCD_ON_PIPE_DELAY_T = wp.constant(2)
WRITE_PHASE = wp.constant(wp.int64(0))     # a write in the M-cycle at t lands at t + WRITE_PHASE
                                           # (BGP, LCDC.0 and OBP0 writes: gambatte's pixel)
MAX_END_DOT = wp.constant(360)    # a guard: the last pixel comes by dot ~290, the line ends at 369

# GBX_EMU_CUDA_DOTS=0 when this module is imported compiles the per-dot path out of the CUDA kernel
# (mode-3 writes then take effect for the whole line there, as the line renderer draws them): a knob
# to measure on a GPU what the path costs, not a default (docs/gpu.md, Kernel footprint).
CUDA_DOTS = os.environ.get("GBX_EMU_CUDA_DOTS", "1") != "0"


@wp.func_native("    return 1;" if CUDA_DOTS else """
#if defined(__CUDA_ARCH__)
    return 0;
#else
    return 1;
#endif
""")
def dots_compiled() -> int:
    """1 where the per-dot path is built: every device by default (CPU and CUDA draw the same
    pixels). With GBX_EMU_CUDA_DOTS=0, 0 on a GPU: the compiler drops the path there. On sm_90 it
    costs the CUDA kernel 120 B of stack frame and of spill stores (1,976 -> 2,096 B frame, 928 ->
    1,048 B), its callees 164 B of spill stores (ptxas allocates registers across the call tree;
    tools/kernel_report.py)."""
    ...


# ppu_log words
LOG_COUNT = wp.constant(0)        # writes logged on the current line (0: none)
LOG_REGS_A = wp.constant(1)       # LCDC | SCY << 8 | SCX << 16 | BGP << 24 as mode 3 started
LOG_REGS_B = wp.constant(2)       # OBP0 | OBP1 << 8 | WY << 16 | WX << 24
LOG_WINDOW = wp.constant(3)       # the WY condition | the window's line counter << 8 | the LCD-on line << 24
LOG_TIMING = wp.constant(4)       # 1 if a logged write may have moved mode 3's end
LOG_STARTS = wp.constant(5)       # window starts on this line, from the last timing pass
LOG_FIRST = wp.constant(8)        # entries: (dot + DOT_BIAS) << 16 | register << 8 | value
                                  # (PPU_LOG_WORDS = 48: 40 entries; mode 3 lasts at most 295 dots,
                                  # 74 M-cycles, and a write takes 2 at least: 37 writes)
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




# The pipeline's state, in words 0..43 of the line_buf row (its colour words, unused here) rather
# than in locals: ptxas allocates registers across calls, and ~40 live locals here raised the
# register use of every caller in the machine kernel, growing its stack frame by 600 B
# (tools/kernel_report.py). From memory, the per-dot loop holds a few values at a time.
_LCDC = wp.constant(0)
_SCY = wp.constant(1)
_SCX = wp.constant(2)
_BGP = wp.constant(3)
_OBP0 = wp.constant(4)
_OBP1 = wp.constant(5)
_WY = wp.constant(6)
_WX = wp.constant(7)
_WYT = wp.constant(8)       # the WY condition
_WIN_LINE = wp.constant(9)  # the window's line counter as the line started
_N_OBJ = wp.constant(10)
_WI = wp.constant(11)       # next log entry
_FINE = wp.constant(12)     # SCX mod 8 as the pipeline started (-1: not yet)
_POS = wp.constant(13)      # the x counter (-8 - fine .. 160)
_X0_WAIT = wp.constant(14)
_BGQ = wp.constant(15)      # BG FIFO: 2 bits per pixel, the next one lowest
_BGN = wp.constant(16)
_OBQ = wp.constant(17)      # object FIFO: 4 bits per pixel (colour, OBP1, behind BG)
_OBN = wp.constant(18)
_STEP = wp.constant(19)     # the fetcher's step, 0..7
_FX = wp.constant(20)       # its BG tile counter
_TILE = wp.constant(21)
_LO = wp.constant(22)
_HI = wp.constant(23)
_WIN = wp.constant(24)      # fetching the window
_WIN_X = wp.constant(25)    # the window's tile counter
_STARTS = wp.constant(26)
_FRESH = wp.constant(27)    # the window just started: no pixel shown since
_OI = wp.constant(28)       # next object in fetch order
_PHASE = wp.constant(29)
_COUNT = wp.constant(30)
_OBJ_LO = wp.constant(31)   # the object row's bitplanes, as read during its fetch
_END = wp.constant(32)
_F_LCDC = wp.constant(33)   # LCDC, SCY, SCX as the fetcher sees them (FETCH_LAG dots behind)
_F_SCY = wp.constant(34)
_F_SCX = wp.constant(35)
_F_WI = wp.constant(36)     # next log entry for the fetcher's view
_WX_BEFORE = wp.constant(37)  # WX before this dot's writes
_HIT = wp.constant(38)      # WX matched the x counter (WX = x + 7, WY condition) as the x counter
                            # reached it (the previous pixel's dot, WX before that dot's writes)
_HIT_ON = wp.constant(39)   # LCDC.5 and LCDC.0 (bits $21) then
_OBJ_HI = wp.constant(40)
_PAL_OR = wp.constant(41)   # old BGP | old OBP0 << 8 | old OBP1 << 16 of a write landing this dot (DMG:
                            # the pixel output as a palette write lands is drawn with old | new)
_STATE_WORDS = 42
@wp.func
def _latch_window_match(st: wp.array(dtype=wp.int32)):
    """The x counter has just reached st[_POS]: latch whether WX (as it was before this dot's
    writes) and the WY condition start the window there, and LCDC.5/LCDC.0 as they are now. The
    window starts at that x counter if LCDC.5 is set then or when the pipeline gets there (gambatte:
    WX is compared as the previous pixel goes out, SameBoy: "WX checks if the window begins *next*
    pixel"; an LCDC.5 write just after the match still starts it)."""
    hit = int(0)
    wx = st[_WX_BEFORE]
    if st[_WYT] != 0 and wx <= 166 and wx == ((st[_POS] + 7) & 255):
        hit = 1
    st[_HIT] = hit
    st[_HIT_ON] = st[_LCDC] & 0x21


# The fetcher (and the object fetch, and the mixing's LCDC.1) sees a write to LCDC, SCY or SCX 1
# dot later than the pixel pipeline sees one to BGP or LCDC.0 (gambatte, whose BG fetch timing
# comes from its author's DMG tests - bgtiledata_*, scx_*: tests/test_ppu_mode3_writes.py, every
# M-cycle phase of a line; 1 is the one lag that also matches where object fetches move the BG
# fetch against the writes).
FETCH_LAG = wp.constant(1)


@wp.func(inline=False)
def _apply_writes(log: wp.array(dtype=wp.int32), st: wp.array(dtype=wp.int32), ly: int, d: int):
    """The logged writes that have landed by dot d, into the register words of st."""
    n_writes = wp.min(log[LOG_COUNT], PPU_LOG_WORDS - LOG_FIRST)
    while st[_WI] < n_writes and ((log[LOG_FIRST + st[_WI]] >> 16) - DOT_BIAS) <= d:
        e = log[LOG_FIRST + st[_WI]]
        reg = (e >> 8) & 0xFF
        v = e & 0xFF
        k = int(-1)
        if reg == 0x40:
            k = _LCDC
        elif reg == 0x42:
            k = _SCY
        elif reg == 0x43:
            k = _SCX
        elif reg == 0x47:
            k = _BGP
        elif reg == 0x48:
            k = _OBP0
        elif reg == 0x49:
            k = _OBP1
        elif reg == 0x4A:
            k = _WY
        elif reg == 0x4B:
            k = _WX
        if k >= _BGP and k <= _OBP1 and ((e >> 16) - DOT_BIAS) == d:
            st[_PAL_OR] = st[_PAL_OR] | (st[k] << (8 * (k - _BGP)))
        if k >= 0:
            st[k] = v
        if (reg == 0x40 or reg == 0x4A) and (st[_LCDC] & 0x20) != 0 and ly == st[_WY]:
            st[_WYT] = 1     # the WY condition (ppu._wy_check)
        st[_WI] = st[_WI] + 1


@wp.func
def _apply_fetch_writes(log: wp.array(dtype=wp.int32), st: wp.array(dtype=wp.int32), d: int):
    """The logged LCDC, SCY and SCX writes that the fetcher sees by dot d (FETCH_LAG behind)."""
    n_writes = wp.min(log[LOG_COUNT], PPU_LOG_WORDS - LOG_FIRST)
    while st[_F_WI] < n_writes and ((log[LOG_FIRST + st[_F_WI]] >> 16) - DOT_BIAS) + FETCH_LAG <= d:
        e = log[LOG_FIRST + st[_F_WI]]
        reg = (e >> 8) & 0xFF
        if reg == 0x40:
            st[_F_LCDC] = e & 0xFF
        elif reg == 0x42:
            st[_F_SCY] = e & 0xFF
        elif reg == 0x43:
            st[_F_SCX] = e & 0xFF
        st[_F_WI] = st[_F_WI] + 1


@wp.func
def _window_off(st: wp.array(dtype=wp.int32)):
    """LCDC.5 is 0 as the fetcher sees it: the window mode ends at once (DMG: LCDC.5 low resets
    the window-mode latch, GateBoy PYNU/XOFO), and the BG's tile column comes again from the x
    counter (the map x is the pixel counter + SCX, one tile ahead of the pixel going out)."""
    if st[_WIN] != 0:
        st[_WIN] = 0
        st[_FX] = ((st[_POS] + 8 + st[_FINE]) >> 3) & 31


@wp.func(inline=False)
def _fetcher_step(vr: wp.array(dtype=wp.uint8), st: wp.array(dtype=wp.int32), ly: int):
    """One step of the BG/window fetcher (see the module docstring)."""
    step = st[_STEP]
    lcdc = st[_F_LCDC]
    if step == 1:
        if (lcdc & 0x20) == 0:
            _window_off(st)
        y = (ly + st[_F_SCY]) & 255
        col = ((st[_F_SCX] >> 3) + st[_FX]) & 31
        base = 0x1800 + ((lcdc >> 3) & 1) * 0x400
        if st[_WIN] != 0:
            y = (st[_WIN_LINE] + st[_STARTS] - 1) & 255
            col = st[_WIN_X]
            base = 0x1800 + ((lcdc >> 6) & 1) * 0x400
        st[_TILE] = int(vr[base + (y >> 3) * 32 + col])
        st[_STEP] = 2
    elif step == 3 or step == 5:
        # the low bitplane at step 3, the high one at step 5, each with SCY and LCDC.4 as they
        # are then (a write between the two mixes the rows: DMG, gambatte)
        if (lcdc & 0x20) == 0:
            _window_off(st)
        y = (ly + st[_F_SCY]) & 255
        if st[_WIN] != 0:
            y = (st[_WIN_LINE] + st[_STARTS] - 1) & 255
        row = _bg_tile_row(vr, st[_TILE], y, lcdc)
        if step == 3:
            st[_LO] = int(vr[row])
            st[_STEP] = 4
        else:
            st[_HI] = int(vr[row + 1])
            if st[_WIN] != 0:
                st[_WIN_X] = (st[_WIN_X] + 1) & 31
            st[_STEP] = 6
            if st[_BGN] == 0:
                st[_BGQ] = _colours_packed(st[_LO], st[_HI])
                st[_BGN] = 8
                st[_STEP] = 0
    elif step >= 6:
        if step == 6:
            st[_FX] = (st[_FX] + 1) & 31
        if step < 7:
            st[_STEP] = step + 1
        if st[_BGN] == 0:
            st[_BGQ] = _colours_packed(st[_LO], st[_HI])
            st[_BGN] = 8
            st[_STEP] = 0
    else:
        st[_STEP] = step + 1


@wp.func(inline=False)
def _object_row_in(vr: wp.array(dtype=wp.uint8), ow: wp.array(dtype=wp.uint32), st: wp.array(dtype=wp.int32),
                   i: int, ly: int):
    """Object i's row is read: its opaque pixels fill the transparent ones of the object FIFO."""
    attr = (int(ow[i]) >> 24) & 0xFF
    plo = st[_OBJ_LO]
    phi = st[_OBJ_HI]
    if (attr & 0x20) == 0:      # bit 7 is the leftmost pixel unless X-flipped
        plo = _reverse8(plo)
        phi = _reverse8(phi)
    extra = ((attr >> 4) & 1) * 4 + ((attr >> 7) & 1) * 8
    obq = wp.uint32(st[_OBQ])
    obn = st[_OBN]
    for p in range(8):
        c = ((plo >> p) & 1) | (((phi >> p) & 1) << 1)
        sh = wp.uint32(4 * p)
        if c != 0 and (p >= obn or ((obq >> sh) & wp.uint32(3)) == wp.uint32(0)):
            obq = (obq & ~(wp.uint32(15) << sh)) | (wp.uint32(c | extra) << sh)
    st[_OBQ] = wp.int32(obq)
    st[_OBN] = 8


@wp.func(inline=False)
def _pixel_out(px: wp.array(dtype=wp.uint8), s: wp.array(dtype=wp.int32), draw: int) -> int:
    """Shift one pixel out of the FIFOs and mix it (BGP, OBP0/1, LCDC.0/1 as they are now) into
    px; returns 1 if it was the line's last."""
    c = s[_BGQ] & 3
    s[_BGQ] = s[_BGQ] >> 2      # (at most 9 pixels: 18 bits, never negative)
    s[_BGN] = s[_BGN] - 1
    o = int(0)
    if s[_OBN] > 0:
        q = wp.uint32(s[_OBQ])
        o = int(q & wp.uint32(15))
        s[_OBQ] = wp.int32(q >> wp.uint32(4))
        s[_OBN] = s[_OBN] - 1
    pos = s[_POS]
    if pos >= 0 and pos < 160:
        s[_FRESH] = 0
        if draw != 0:
            lcdc = s[_LCDC]
            # LCDC.0 as LCDC.1: one dot behind the palettes, but the line's first pixel takes it as it
            # is (DMG: docboy's last_lcdc, dingbat's MIXER_PRIORITY_BACK; Mealybug m3_lcdc_bg_en_change)
            bg_on = s[_F_LCDC] & 0x01
            if pos == 0:
                bg_on = lcdc & 0x01
            if bg_on == 0:
                c = 0
            # a palette write landing now: this pixel takes old | new (DMG), unless it is the line's first
            pal_or = s[_PAL_OR]
            if pos == 0:
                pal_or = 0
            shade = ((s[_BGP] | pal_or) >> (2 * c)) & 3
            # LCDC.1 as the fetcher sees it (a write shows 1 dot later than in BGP, LCDC.0: gambatte)
            obj_on = s[_F_LCDC] & 0x02
            if pos == 0:                # the line's first pixel: LCDC.1 as it is (DMG)
                obj_on = lcdc & 0x02
            if (o & 3) != 0 and obj_on != 0 and ((o & 8) == 0 or c == 0):
                pal = s[_OBP0] | (pal_or >> 8)
                if (o & 4) != 0:
                    pal = s[_OBP1] | (pal_or >> 16)
                shade = (pal >> (2 * (o & 3))) & 3
            px[pos] = wp.uint8(shade)
    s[_POS] = pos + 1
    last = int(0)
    if pos + 1 == 160:
        last = 1
    return last


@wp.func(inline=False)
def dots_line(vram_env: wp.uint64, oam_env: wp.uint64, log_at: wp.uint64, scratch: wp.uint64, ly: int,
              selected: wp.uint64, draw: int) -> int:
    """Run line ly's mode 3 dot by dot from the log at log_at (the registers as it started and the
    writes since). Returns the dot of the last pixel | window starts << 16. draw: 1 to write the
    160 shades to the bytes at scratch + 184 (line_buf's shade words 1..20); scratch + 352 holds
    the objects in fetch order, scratch + 0 the pipeline's state. selected: OAM's selection for
    the line (objects_on_line)."""
    vr = wp.array(ptr=vram_env, shape=(8192,), dtype=wp.uint8)
    ow = wp.array(ptr=oam_env, shape=(40,), dtype=wp.uint32)
    log = wp.array(ptr=log_at, shape=(PPU_LOG_WORDS,), dtype=wp.int32)
    keys = wp.array(ptr=scratch + wp.uint64(352), shape=(10,), dtype=wp.int32)
    px = wp.array(ptr=scratch + wp.uint64(184), shape=(160,), dtype=wp.uint8)
    st = wp.array(ptr=scratch, shape=(_STATE_WORDS,), dtype=wp.int32)
    a = log[LOG_REGS_A]
    b = log[LOG_REGS_B]
    for k in range(4):
        st[_LCDC + k] = (a >> (8 * k)) & 0xFF      # LCDC SCY SCX BGP
        st[_OBP0 + k] = (b >> (8 * k)) & 0xFF      # OBP0 OBP1 WY WX
    st[_WYT] = log[LOG_WINDOW] & 0xFF
    st[_F_LCDC] = st[_LCDC]
    st[_F_SCY] = st[_SCY]
    st[_F_SCX] = st[_SCX]
    st[_WIN_LINE] = (log[LOG_WINDOW] >> 8) & 0xFF
    for k in range(_WI, _F_LCDC):
        st[k] = 0
    st[_F_WI] = 0
    st[_STEP] = 0           # (zeroed above too: named here first, as the loop below reads it after
                            # the window branches that set it - a module constant first used in two
                            # branches is unset on other paths in Warp's code: tests/test_warp_scope.py)
    st[_FINE] = -1
    st[_BGN] = 8            # the BG FIFO starts with 8 junk pixels
    st[_PHASE] = _PIXEL
    st[_END] = -1
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
    st[_N_OBJ] = n_obj
    _apply_writes(log, st, ly, -1)  # writes landed in mode 3 before the pipeline started: WX as it starts
    d = int(0)
    while st[_END] < 0 and d < MAX_END_DOT:
        st[_WX_BEFORE] = st[_WX]
        st[_PAL_OR] = 0
        _apply_writes(log, st, ly, d)
        _apply_fetch_writes(log, st, d)
        if st[_FINE] < 0:        # the pipeline starts: SCX mod 8 is read
            st[_FINE] = st[_SCX] & 7
            st[_POS] = -8 - st[_FINE]
            st[_X0_WAIT] = wp.min(st[_FINE], 5)   # with the fetcher's wait: 5 dots in all (X = 0 costs 11)
            _latch_window_match(st)
        advance = int(0)
        checked = int(1)         # the window checks run this dot (0: an object fetch ended)
        if st[_PHASE] == _FETCH and st[_COUNT] == 6:
            _object_row_in(vr, ow, st, keys[st[_OI]] & 63, ly)
            st[_OI] = st[_OI] + 1
            st[_PHASE] = _PIXEL
            checked = 0
        if (st[_LCDC] & 0x02) == 0 and (st[_PHASE] == _WAIT or st[_PHASE] == _X0
                                         or (st[_PHASE] == _FETCH and st[_COUNT] < 5)):
            # LCDC.1 cleared while the object waits or before its fetch's last dot: the fetch is
            # abandoned and the object not drawn (DMG: SameBoy's object_fetch_aborted; gambatte
            # rechecks LCDC.1 each dot of the wait), and the pixels go on from the write's own dot
            # (Mealybug m3_lcdc_obj_en_change_variant bands 16-17; gambatte; dingbat's fifo_obj_abort)
            st[_PHASE] = _PIXEL
            st[_OI] = st[_OI] + 1
        if st[_PHASE] == _PIXEL:
            pos = st[_POS]
            if checked != 0:
                if st[_WIN] == 0:
                    # the match latched as the x counter got here, with LCDC.5 set then or now
                    if st[_HIT] != 0 and (st[_HIT_ON] == 0x21 or (st[_LCDC] & 0x21) == 0x21):
                        st[_HIT] = 0
                        st[_WIN] = 1
                        st[_FRESH] = 1
                        st[_STARTS] = st[_STARTS] + 1
                        st[_WIN_X] = 0
                        st[_BGN] = 0
                        st[_STEP] = 0
                        if pos == -7 and st[_FINE] != 0:
                            st[_STEP] = -1      # WX = 0 with a fine scroll: a dot later (DMG)
                    elif st[_HIT] != 0 and (st[_HIT_ON] & 0x20) == 0 and (st[_LCDC] & 0x20) == 0 \
                            and st[_BGN] == 8 and st[_STEP] == 0 and pos >= 0:
                        # refused by LCDC.5 on a BG tile boundary (a tile just pushed): the DMG inserts
                        # one colour-0 pixel there (render.refused_window_x, the same rule for a line
                        # without writes; x < 0 not modelled)
                        st[_HIT] = 0
                        st[_BGQ] = st[_BGQ] << 2
                        st[_BGN] = 9
                elif st[_FRESH] == 0 and st[_STEP] == 0 and st[_WX] == ((pos + 7) & 255):
                    st[_BGQ] = st[_BGQ] << 2    # DMG: a colour-0 pixel is inserted at the front
                    st[_BGN] = st[_BGN] + 1
            oi = st[_OI]
            while oi < n_obj and pos >= -8 and pos < 160 and (keys[oi] >> 6) < pos + 8:
                oi += 1                          # passed while objects were off (LCDC.1)
            st[_OI] = oi
            if oi < n_obj and pos >= -8 and pos < 160 and (st[_LCDC] & 0x02) != 0 and (keys[oi] >> 6) == pos + 8:
                st[_PHASE] = _WAIT
            else:
                if st[_BGN] > 0:
                    if _pixel_out(px, st, draw) != 0:
                        st[_END] = d
                    _latch_window_match(st)
                advance = 1
        if st[_PHASE] == _WAIT:
            if st[_STEP] < 5 or st[_BGN] == 0:
                advance = 1
            elif st[_X0_WAIT] > 0 and (keys[st[_OI]] >> 6) == 0:
                st[_PHASE] = _X0
                st[_COUNT] = st[_X0_WAIT]
                st[_X0_WAIT] = 0
            else:
                st[_PHASE] = _FETCH
                st[_COUNT] = 0
        if st[_PHASE] == _X0:
            st[_COUNT] = st[_COUNT] - 1
            if st[_COUNT] == 0:
                st[_PHASE] = _FETCH
        elif st[_PHASE] == _FETCH:
            count = st[_COUNT]
            if count <= 1:
                advance = 1
            if count == 3:      # the row's low byte, then its high byte: LCDC.2 as it stands (DMG)
                st[_OBJ_LO] = int(vr[_obj_row(ow, keys[st[_OI]] & 63, ly, st[_LCDC])])
            elif count == 5:
                st[_OBJ_HI] = int(vr[_obj_row(ow, keys[st[_OI]] & 63, ly, st[_LCDC]) + 1])
            st[_COUNT] = count + 1
        if advance != 0 and st[_END] < 0:
            _fetcher_step(vr, st, ly)
        if st[_END] < 0:
            d += 1
    return d | (st[_STARTS] << 16)


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
    # (the LCD-on line has no OAM scan: as a line no object reaches, ppu._mode3_length; LOG_WINDOW
    # bit 24, set when the log starts)
    return objects_on_line(m.oam, env, ly + ((log[LOG_WINDOW] >> 16) & 0x100), (log[LOG_REGS_A] & 0xFF) | 0x02)


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
    (LCDC, WY, WX, or SCX before the pipeline reads it), plus LCD_ON_PIPE_DELAY_T on the LCD-on line
    (so PIPE_START_T after the line's start is mode 3's end): ppu.py then moves mode 3's end; else -1."""
    m = machine(ms)
    log = ppu_log_row(ms, env)
    n = log[LOG_COUNT]
    if n == 0:
        # the registers as mode 3 started (a write in mode 3 is logged before it lands)
        log[LOG_REGS_A] = (int(m.io[env, 0x40]) | (int(m.io[env, 0x42]) << 8) | (int(m.io[env, 0x43]) << 16)
                           | (int(m.io[env, 0x47]) << 24))
        log[LOG_REGS_B] = (int(m.io[env, 0x48]) | (int(m.io[env, 0x49]) << 8) | (int(m.io[env, 0x4A]) << 16)
                           | (int(m.io[env, 0x4B]) << 24))
        # (the LCD-on flag at bit 24: the window's line counter passes 255 when it starts twice a line)
        log[LOG_WINDOW] = (m.r32[env, R_WY_TRIGGERED] | (m.r32[env, R_WIN_LINE] << 8)
                           | (wp.where(ly == 0, m.r32[env, R_LCD_WARMUP], 0) << 24))
        log[LOG_TIMING] = 0
    # (LOG_WINDOW bit 24: the line the LCD is switched on, whose pipeline starts LCD_ON_PIPE_DELAY_T later)
    dot = (int(t + WRITE_PHASE - m.r64[env, T_LINE_START]) - PIPE_START_T
           - ((log[LOG_WINDOW] >> 24) & 1) * LCD_ON_PIPE_DELAY_T)
    if n < PPU_LOG_WORDS - LOG_FIRST:
        log[LOG_FIRST + n] = ((dot + DOT_BIAS) << 16) | ((reg & 0xFF) << 8) | (value & 0xFF)
        log[LOG_COUNT] = n + 1
    end = int(-1)
    if reg == 0x40 or reg == 0x4A or reg == 0x4B or (reg == 0x43 and dot <= 0):
        log[LOG_TIMING] = 1
        r = _run(ms, env, ly, t, 0)
        log[LOG_STARTS] = r >> 16
        end = (r & 0xFFFF) + ((log[LOG_WINDOW] >> 24) & 1) * LCD_ON_PIPE_DELAY_T   # (read again: not kept live)
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
