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
In RENDER_OBS mode odd lines return at once and the full frame is not written;
the window flag is computed in every mode because it is machine state.

Cost: a line is built eight pixels at a time, as uint64 words of eight bytes
(one byte per pixel, little-endian: byte i is the i-th pixel from the left), in
a per-env line buffer (Machine.line_buf): 22 words of colour numbers and 22 of shades (word 0
is x = -8..-1, words 1..20 the screen, word 21 x = 160..167, so objects partly
off screen need no bounds test).  A tile row (two VRAM bytes) becomes a word of
colour numbers by two loads from a 256-entry table (``_colours8``, ``BIT_BYTES``:
each bitplane byte spread to one bit per byte). On a CPU each tile row is then one
unaligned 8-byte store at its pixels' place (``_tile_rows_at``), so SCX % 8 and the
window's start cost nothing; on a GPU, which faults on unaligned stores, a span that is
not tile-aligned shifts two tile words together (``_span``; ``tile_stores_unaligned``
picks, and the tests run both). The palette maps all eight colours at once (``_shades8``).
Objects are drawn over the finished line highest priority first (out of line,
``_draw_objects``, so lines without objects skip its setup): each one's opaque
pixels claim their bytes in a claim word (lower-priority objects cannot show
there, even where the winner hides behind BG colours 1-3).  The finished
line is stored as 20 uint64 words into frame[env, ly] and/or, on even lines,
compacted to 10 words (even bytes: one pext or byte_perm per word, ``_even_bytes_pair``)
into obs[env, ly / 2].  The line is drawn by
one out-of-line function (``_draw_line``) that takes the env's VRAM, OAM and
output rows as plain addresses and views them as 1-d arrays (constant strides;
one copy of the code however many places the PPU catches up from), so these
arrays must be contiguous (every array the machine allocates is).

The OAM scan (``objects_on_line``) is one branch-free pass over the 40 Y bytes,
read as uint32 OAM words, to a 40-bit mask (three AVX-512 compares where the CPU has
them, ``_objects_covering``), then the 10-object limit; the PPU makes it once per line
as mode 3 starts (its length depends on the objects) and hands the mask to
``render_line`` when mode 3 ends.

Limits (documented hardware behaviour not modelled): a line is drawn at once
with the registers as mode 3 ends, so a write that lands inside mode 3 affects
the whole line rather than the pixels after it; the DMG window glitches (WX=0
shifted by SCX%8, WX=166, window disabled mid-line) are not reproduced.
"""

from __future__ import annotations

import numpy as np
import warp as wp

RENDER_NONE = wp.constant(0)
RENDER_OBS = wp.constant(1)
RENDER_FULL = wp.constant(2)

SCREEN_W = wp.constant(160)
SCREEN_H = wp.constant(144)
OBS_W = wp.constant(80)
OBS_H = wp.constant(72)
MAX_OBJ_PER_LINE = wp.constant(10)

# VRAM array index = CPU address - $8000.
_MAP_9800 = wp.constant(0x1800)
_MAP_9C00 = wp.constant(0x1C00)

# Eight pixels per uint64, byte i = pixel i from the left (little-endian hosts and GPUs).
_ONES = wp.constant(wp.uint64(0x0101010101010101))
_LOW7 = wp.constant(wp.uint64(0x7F7F7F7F7F7F7F7F))
_TWOS = wp.constant(wp.uint64(0x0202020202020202))
_BIT_I_IN_BYTE_I = wp.constant(wp.uint64(0x8040201008040201))
_LINE_WORDS = wp.constant(22)   # x = -8..167 in words of 8 (word 0: x = -8..-1)
# Per-env scratch for drawing a line (Machine.line_buf): colour numbers, shades and the
# objects' claim words, 22 each. A local array instead (wp.zeros) was zeroed and copied on
# every line: about a third of the cost of a line without BG.
LINE_BUF_WORDS = 66


@wp.func
def _obj_height(lcdc: int) -> int:
    """8 or 16 rows (LCDC.2)."""
    return 8 + ((lcdc >> 2) & 1) * 8


def _bit_bytes(b: int) -> int:
    """Byte b's bits as eight bytes of 0/1, bit 7 (the leftmost pixel) in byte 0."""
    return sum(((b >> (7 - i)) & 1) << (8 * i) for i in range(8))


# A tile row's bitplane byte -> its 8 pixels' bits, one per byte (the Machine holds it as
# `bit_bytes`): a row's colour numbers are BIT_BYTES[lo] | BIT_BYTES[hi] << 1. Two loads
# instead of a multiply, shift and mask per plane (measured: docs/performance.md).
BIT_BYTES = np.array([_bit_bytes(b) for b in range(256)], dtype=np.uint64)


@wp.func
def _colours8(bits: wp.array(dtype=wp.uint64), lo: int, hi: int) -> wp.uint64:
    """Colour numbers 0..3 of a tile row's 8 pixels (bitplanes lo, hi), leftmost in byte 0.
    bits: BIT_BYTES."""
    return bits[lo] | (bits[hi] << wp.uint64(1))


@wp.func
def _spread_xflip(plane: int) -> wp.uint64:
    """A bitplane byte -> 8 bytes of 0/1, byte i = bit i (an X-flipped object row)."""
    x = (wp.uint64(plane) * _ONES) & _BIT_I_IN_BYTE_I
    return ((x + _LOW7) >> wp.uint64(7)) & _ONES


@wp.func
def _opaque8(colours: wp.uint64) -> wp.uint64:
    """0xFF in every byte whose colour number is not 0."""
    return ((colours | (colours >> wp.uint64(1))) & _ONES) * wp.uint64(0xFF)


@wp.func
def _shades8(colours: wp.uint64, palette: int) -> wp.uint64:
    """BGP/OBP0/OBP1 applied to 8 colour numbers at once (colour n -> palette bits 2n+1..2n).

    Each colour's bytes are masked to 3 and ANDed with that colour's shade repeated in
    every byte (a scalar per palette, which loops hoist): no vector multiplies (vpmullq is
    slow, and LLVM vectorises the BG loop)."""
    b0 = colours & _ONES
    b1 = (colours >> wp.uint64(1)) & _ONES
    c3 = b0 & b1
    c1 = b0 ^ c3
    c2 = b1 ^ c3
    c0 = _ONES ^ (b0 | b1)
    return (((c0 | (c0 << wp.uint64(1))) & (wp.uint64(palette & 3) * _ONES))
            | ((c1 | (c1 << wp.uint64(1))) & (wp.uint64((palette >> 2) & 3) * _ONES))
            | ((c2 | (c2 << wp.uint64(1))) & (wp.uint64((palette >> 4) & 3) * _ONES))
            | ((c3 | (c3 << wp.uint64(1))) & (wp.uint64((palette >> 6) & 3) * _ONES)))


# The observation keeps a line's even pixels: bytes 0, 2, 4, 6 of each word. One pext (x86
# BMI2) or byte_perm (CUDA) per word instead of three mask-shift-or steps (measured:
# docs/performance.md). The portable branch is tested through a generic-CPU build
# (tests/_render_native_kernels.py).
_EVEN_BYTES_PAIR = """
#if defined(__CUDA_ARCH__)
    return (wp::uint64)__byte_perm((unsigned int)a, (unsigned int)(a >> 32), 0x6420)
         | ((wp::uint64)__byte_perm((unsigned int)b, (unsigned int)(b >> 32), 0x6420) << 32);
#elif defined(__BMI2__)
    return __builtin_ia32_pext_di(a, 0x00FF00FF00FF00FFull) | (__builtin_ia32_pext_di(b, 0x00FF00FF00FF00FFull) << 32);
#else
    wp::uint64 r = 0;
    for (int i = 0; i < 4; ++i)
        r |= ((a >> (16 * i)) & 0xFF) << (8 * i) | ((b >> (16 * i)) & 0xFF) << (8 * i + 32);
    return r;
#endif
"""


@wp.func_native(_EVEN_BYTES_PAIR)
def _even_bytes_pair(a: wp.uint64, b: wp.uint64) -> wp.uint64:
    """Bytes 0, 2, 4, 6 of a, then of b: eight pixels of the observation from 16 of a line.
    One instruction on the GPU (byte_perm) and on x86 with BMI2 (pext)."""
    ...


@wp.func
def _oam_words(oam: wp.array2d(dtype=wp.uint8), env: int) -> wp.array(dtype=wp.uint32):
    """env's OAM as 40 uint32 words: Y | X << 8 | tile << 16 | attributes << 24."""
    return wp.array(ptr=wp.uint64(oam.ptr) + wp.uint64(env * 160), shape=(40,), dtype=wp.uint32)


@wp.func
def _tile_colours(vr: wp.array(dtype=wp.uint8), rows: wp.array(dtype=wp.uint16), bits: wp.array(dtype=wp.uint64),
                  map_index: int, tile_xor: int, row_base: int) -> wp.uint64:
    """Colour numbers of one row of the BG/window tile named at map_index.

    rows: VRAM as 4096 (lo, hi) byte pairs. LCDC.4=1: tile n at $8000+16n; LCDC.4=0:
    signed n at $9000+16n = $8800 + 16 (n ^ $80). So the pair index is
    (n ^ tile_xor) * 8 + row_base, with tile_xor = 0 or $80 and row_base = the tile row,
    plus $400 in the signed case (_tile_addressing)."""
    pair = int(rows[((int(vr[map_index]) ^ tile_xor) << 3) + row_base])
    return _colours8(bits, pair & 0xFF, pair >> 8)


@wp.func
def _tile_addressing(lcdc: int, row: int) -> wp.vec2i:
    """(tile_xor, row_base) of _tile_colours for tile row `row` under LCDC.4."""
    if (lcdc & 0x10) != 0:
        return wp.vec2i(0, row)
    return wp.vec2i(0x80, 0x400 + row)


@wp.func
def window_visible(lcdc: int, wy_triggered: int, wx: int) -> int:
    """1 if the window is drawn on a line: LCDC.5 and LCDC.0 (DMG), WY fired, WX <= 166."""
    if (lcdc & 0x21) == 0x21 and wy_triggered != 0 and wx <= 166:
        return 1
    return 0


@wp.func(inline=False)
def refused_window_x(lcdc: int, wy_triggered: int, wx: int, scx: int) -> int:
    """DMG: where the window would start (x = WX - 7, the frame's WY condition met) on a BG tile boundary
    but LCDC.5 is clear, one colour-0 pixel is inserted into the BG FIFO there and the rest of the BG
    comes a pixel later (Pan Docs, "Window"; SameBoy issue 278; Mealybug
    m3_lcdc_win_en_change_multiple_wx). Mode 3 keeps its length (160 pixels still end it; the last BG
    pixel is not shown), but objects right of it meet the BG tiles a pixel later (objects_mode3_penalty).
    Its screen x, 0..159, or -1 (also for x < 0: not modelled). The boundaries lie at
    x = 8k - SCX mod 8; the dot-by-dot path finds the same ones (ppu_dots). Out of line: the form whose
    CUDA footprint tests/test_kernel_report.py pins."""
    x = wx - 7
    if (lcdc & 0x20) == 0 and wy_triggered != 0 and x >= 0 and x < 160 and ((x + scx) & 7) == 0:
        return x
    return -1


# The OAM scan's 40 compares as three AVX-512 compares straight into bit masks (x86 with
# AVX-512F), against ~68 instructions for LLVM's vectorisation of the portable loop, which
# builds the mask from lane constants (measured: docs/performance.md). The loop is
# the portable branch (GPUs, other CPUs; tested through a generic-CPU build,
# tests/_render_native_kernels.py).
_OBJECTS_COVERING = """
    const unsigned int* ow = (const unsigned int*)oam_at;
    const unsigned int t = (unsigned int)top, hh = (unsigned int)h;
#if defined(__AVX512F__) && !defined(__CUDA_ARCH__)
    typedef int i32x16 __attribute__((vector_size(64)));
    i32x16 a, b, c;
    __builtin_memcpy(&a, ow, 64);
    __builtin_memcpy(&b, ow + 16, 64);
    __builtin_memcpy(&c, ow + 24, 64);     // objects 24..39: 24..31 again, masked off below
    const i32x16 ys = {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF};
    const i32x16 tv = (i32x16){} + (int)t, hv = (i32x16){} + (int)hh;
    wp::uint64 m0 = __builtin_ia32_ucmpd512_mask(tv - (a & ys), hv, 1, 0xFFFF);
    wp::uint64 m1 = __builtin_ia32_ucmpd512_mask(tv - (b & ys), hv, 1, 0xFFFF);
    wp::uint64 m2 = __builtin_ia32_ucmpd512_mask(tv - (c & ys), hv, 1, 0xFF00);
    return m0 | (m1 << 16) | (m2 << 24);
#else
    wp::uint64 mask = 0;
    for (int i = 0; i < 40; ++i)      // rows cover the line iff 0 <= top - Y < h (unsigned)
        mask |= (wp::uint64)((t - (ow[i] & 0xFF)) < hh) << i;
    return mask;
#endif
"""


@wp.func_native(_OBJECTS_COVERING)
def _objects_covering(oam_at: wp.uint64, top: int, h: int) -> wp.uint64:
    """Bit i set if object i's rows (Y - 16 .. Y - 17 + h) cover screen line top - 16.
    oam_at: the env's OAM."""
    ...


@wp.func
def objects_on_line(oam: wp.array2d(dtype=wp.uint8), env: int, ly: int, lcdc: int) -> wp.uint64:
    """The OAM scan for line ly: bit i set if object i is among the first 10 (in OAM order)
    whose rows cover the line (X plays no part); 0 when LCDC.1 disables objects.

    One branch-free pass over the 40 Y bytes (read as uint32 OAM words), then the 10 limit.
    """
    if (lcdc & 0x02) == 0:
        return wp.uint64(0)
    mask = _objects_covering(wp.uint64(oam.ptr) + wp.uint64(env * 160), ly + 16, _obj_height(lcdc))
    if wp.bit_count(mask) > 10:
        rest = mask
        for k in range(10):
            rest = rest & (rest - wp.uint64(1))  # drop the 10 lowest: what is left is past the limit
        mask = mask ^ rest
    return mask


@wp.func
def _lowest_index(bits: wp.uint64) -> int:
    """Index of the lowest set bit of a non-zero mask."""
    return int(wp.bit_count((bits & (~bits + wp.uint64(1))) - wp.uint64(1)))


@wp.func
def sprites_on_line(oam: wp.array2d(dtype=wp.uint8), env: int, ly: int, lcdc: int) -> int:
    """Objects the OAM scan selects for line ly (0..10); 0 when LCDC.1 disables objects.

    With objects disabled the DMG fetches none, so mode 3 is not lengthened.
    """
    return int(wp.bit_count(objects_on_line(oam, env, ly, lcdc)))


@wp.func
def _span(vr: wp.array(dtype=wp.uint8), rows: wp.array(dtype=wp.uint16), bits: wp.array(dtype=wp.uint64),
          line: wp.array(dtype=wp.uint64), lcdc: int, map_row: int, tile_row: int, j0: int, j1: int, map_x: int):
    """Colour numbers of screen words j0..j1-1 (x = 8*j0 .. 8*j1-1) from one 32-tile map row,
    screen x showing map pixel x + map_x (wrapping at 256) -> line[j + 1]."""
    addressing = _tile_addressing(lcdc, tile_row)
    tile_xor = addressing[0]
    row_base = addressing[1]
    mx = 8 * j0 + map_x
    fine = mx & 7
    col = mx >> 3
    j = j0
    if fine == 0:
        while j < j1:
            line[j + 1] = _tile_colours(vr, rows, bits, map_row + (col & 31), tile_xor, row_base)
            col += 1
            j += 1
    else:
        right = wp.uint64(8 * fine)
        left = wp.uint64(64 - 8 * fine)
        cur = _tile_colours(vr, rows, bits, map_row + (col & 31), tile_xor, row_base)
        while j < j1:
            col += 1
            nxt = _tile_colours(vr, rows, bits, map_row + (col & 31), tile_xor, row_base)
            line[j + 1] = (cur >> right) | (nxt << left)
            cur = nxt
            j += 1


# Tile rows at any byte offset (CPUs): every BG or window tile row is one 8-byte store at
# its pixels' place in the line buffer, so a span that is not tile-aligned (SCX % 8, the
# window's start) needs no shifting of neighbour words together (_span), and the store
# that ends a tile row depends on nothing before it. memcpy keeps the unaligned store
# defined in C++; x86-64 and ARM64 do it at full speed. GPUs fault on unaligned 8-byte
# stores (byte stores would be slow), so they take _span (see tile_stores_unaligned).
# From ~19 to ~12 instructions per tile row (measured with the pext packing of the
# observation: docs/performance.md).
_TILE_ROWS_AT = """
    const unsigned char* vr = (const unsigned char*)vram_at;
    const unsigned char* map = vr + map_row;
    const unsigned char* rows = vr + 2 * row_base;
    const wp::uint64* bits = (const wp::uint64*)bits_at;
    unsigned char* out = (unsigned char*)dest_at;
    for (int t = 0; t < n; ++t) {
        const unsigned char* r = rows + 16 * (unsigned char)(map[(col + t) & 31] ^ tile_xor);
        wp::uint64 w = bits[r[0]] | (bits[r[1]] << 1);
#if defined(__CUDA_ARCH__)
        for (int b = 0; b < 8; ++b) out[8 * t + b] = (unsigned char)(w >> (8 * b));
#else
        __builtin_memcpy(out + 8 * t, &w, 8);
#endif
    }
"""


@wp.func_native(_TILE_ROWS_AT)
def _tile_rows_at(vram_at: wp.uint64, bits_at: wp.uint64, dest_at: wp.uint64, map_row: int, row_base: int,
                  tile_xor: int, col: int, n: int):
    """Colour numbers of n tiles' rows, named from map index map_row + col on (the column
    wrapping at 32), to the bytes at dest_at, dest_at + 8, ... (any alignment).
    row_base, tile_xor: _tile_addressing."""
    ...


@wp.func_native("""
#if defined(__CUDA_ARCH__)
    return 0;
#else
    return 1;
#endif
""")
def tile_stores_unaligned() -> int:
    """1 where this code runs on a CPU (tile rows stored unaligned: _tile_rows_at), 0 on a
    GPU (aligned words shifted together: _span). Either way the pixels are the same; the
    renderer tests run both on the CPU."""
    ...


@wp.func(inline=False)
def _draw_objects(vram_env: wp.uint64, oam_env: wp.uint64, bits_at: wp.uint64, ly: int, lcdc: int, obp0: int,
                  obp1: int, selected: wp.uint64, line: wp.uint64, shades_at: wp.uint64):
    """Draw this line's objects over the BG/window shades, highest priority first.

    The first opaque object pixel at a position claims it, so lower-priority objects
    cannot show there even where the winner hides behind BG colours 1-3. line: the env's
    line_buf row (22 words of BG/window colour numbers, then shades, then the claim words,
    which are cleared here); shades_at: of the 22 words of
    shades (the same words with the identity palette: a pixel an object draws is claimed,
    so no later object reads its colour number).
    Out of line, so that lines without objects do not set up its local arrays.
    """
    vr = wp.array(ptr=vram_env, shape=(8192,), dtype=wp.uint8)
    ow = wp.array(ptr=oam_env, shape=(40,), dtype=wp.uint32)
    bits = wp.array(ptr=bits_at, shape=(256,), dtype=wp.uint64)
    colours = wp.array(ptr=line, shape=(22,), dtype=wp.uint64)
    shades = wp.array(ptr=shades_at, shape=(22,), dtype=wp.uint64)
    h = _obj_height(lcdc)
    # the selected objects sorted by priority key X * 64 + index (unique)
    keys = wp.zeros(shape=(10,), dtype=wp.int32)
    n = int(0)
    rest = selected
    while rest != wp.uint64(0):
        i = _lowest_index(rest)
        rest = rest & (rest - wp.uint64(1))
        x = (int(ow[i]) >> 8) & 0xFF
        if x > 0 and x < 168:  # X = 0 or >= 168: selected but off screen
            key = x * 64 + i
            k = n
            while k > 0 and keys[k - 1] > key:
                keys[k] = keys[k - 1]
                k -= 1
            keys[k] = key
            n += 1
    if n == 0:
        return
    claimed = wp.array(ptr=line + wp.uint64(352), shape=(22,), dtype=wp.uint64)
    for k in range(22):
        claimed[k] = wp.uint64(0)
    for r in range(n):
        w = int(ow[keys[r] & 63])
        x = (w >> 8) & 0xFF
        tile = (w >> 16) & 0xFF
        attr = (w >> 24) & 0xFF
        row = ly + 16 - (w & 0xFF)
        if (attr & 0x40) != 0:
            row = h - 1 - row
        if h == 16:
            tile = tile & 0xFE
        addr = tile * 16 + row * 2
        lo = int(vr[addr])
        hi = int(vr[addr + 1])
        if (lo | hi) != 0:  # a transparent row draws nothing
            c = wp.uint64(0)
            if (attr & 0x20) != 0:
                c = _spread_xflip(lo) | (_spread_xflip(hi) << wp.uint64(1))
            else:
                c = _colours8(bits, lo, hi)
            pal = obp0
            if (attr & 0x10) != 0:
                pal = obp1
            s = _shades8(c, pal)
            opq = _opaque8(c)
            # line word k holds x = 8k-8 .. 8k-1: the object's screen x = X - 8 .. X - 1
            k = x >> 3
            sh = wp.uint64((x & 7) * 8)
            for part in range(2):
                po = opq << sh
                ps = s << sh
                if part == 1:
                    k += 1
                    po = wp.uint64(0)
                    if sh != wp.uint64(0):
                        po = opq >> (wp.uint64(64) - sh)
                        ps = s >> (wp.uint64(64) - sh)
                show = po & ~claimed[k]
                claimed[k] = claimed[k] | po
                if (attr & 0x80) != 0:
                    show = show & ~_opaque8(colours[k])
                shades[k] = (shades[k] & ~show) | (ps & show)


@wp.func
def render_scanline(vram: wp.array2d(dtype=wp.uint8), oam: wp.array2d(dtype=wp.uint8), env: int, ly: int,
                    lcdc: int, scy: int, scx: int, wy_triggered: int, wx: int, window_line: int, bgp: int,
                    obp0: int, obp1: int, frame: wp.array3d(dtype=wp.uint8), obs: wp.array3d(dtype=wp.uint8),
                    line_buf: wp.array2d(dtype=wp.uint64), bit_bytes: wp.array(dtype=wp.uint64),
                    render_mode: int, unaligned: int) -> int:
    """Draw line ly (0..143) into frame[env, ly] (RENDER_FULL) and obs[env, ly/2] (even ly, mode >= RENDER_OBS).

    Returns 1 if the window was drawn on this line (the caller then advances
    window_line), else 0 — in every render mode, since it is machine state.
    unaligned: tile_stores_unaligned() (the machine passes it; tests run both ways).
    """
    win = window_visible(lcdc, wy_triggered, wx)
    if render_mode == RENDER_NONE or (render_mode == RENDER_OBS and (ly & 1) != 0):
        return win
    return render_line(vram, oam, env, ly, lcdc, scy, scx, wy_triggered, wx, window_line, bgp, obp0, obp1,
                       objects_on_line(oam, env, ly, lcdc), frame, obs, line_buf, bit_bytes, render_mode, unaligned)


@wp.func
def render_line(vram: wp.array2d(dtype=wp.uint8), oam: wp.array2d(dtype=wp.uint8), env: int, ly: int,
                lcdc: int, scy: int, scx: int, wy_triggered: int, wx: int, window_line: int, bgp: int,
                obp0: int, obp1: int, selected: wp.uint64, frame: wp.array3d(dtype=wp.uint8),
                obs: wp.array3d(dtype=wp.uint8), line_buf: wp.array2d(dtype=wp.uint64),
                bit_bytes: wp.array(dtype=wp.uint64), render_mode: int, unaligned: int) -> int:
    """render_scanline with the line's OAM selection given (objects_on_line's mask, which
    the PPU keeps from the start of mode 3 when OAM cannot have changed since)."""
    win = window_visible(lcdc, wy_triggered, wx)
    if render_mode == RENDER_NONE or (render_mode == RENDER_OBS and (ly & 1) != 0):
        return win
    _draw_line(wp.uint64(vram.ptr) + wp.uint64(env * 8192), wp.uint64(oam.ptr) + wp.uint64(env * 160),
               wp.uint64(frame.ptr) + wp.uint64((env * 144 + ly) * 160),
               wp.uint64(obs.ptr) + wp.uint64((env * 72 + (ly >> 1)) * 80),
               wp.uint64(line_buf.ptr) + wp.uint64(env * LINE_BUF_WORDS * 8), wp.uint64(bit_bytes.ptr), ly,
               lcdc, scy, scx, win | (wp.where(wy_triggered != 0, 1, 0) << 1), wx, window_line, bgp, obp0, obp1,
               selected, render_mode, unaligned)
    return win


@wp.func(inline=False)
def _draw_line(vram_env: wp.uint64, oam_env: wp.uint64, frame_row: wp.uint64, obs_row: wp.uint64, line: wp.uint64,
               bits_at: wp.uint64, ly: int,
               lcdc: int, scy: int, scx: int, win: int, wx: int, window_line: int, bgp: int, obp0: int,
               obp1: int, selected: wp.uint64, render_mode: int, unaligned: int):
    """The line into frame_row (RENDER_FULL) and obs_row (even ly). Out of line, with the
    env's VRAM/OAM and the output rows as plain addresses: one copy of the code for every
    place the PPU catches up, and a call that copies no array descriptors. win: bit 0 the
    window shows (window_visible), bit 1 the frame's WY condition (for refused_window_x)."""
    insert_x = refused_window_x(lcdc, win >> 1, wx, scx)
    win = win & 1
    vr = wp.array(ptr=vram_env, shape=(8192,), dtype=wp.uint8)
    rows = wp.array(ptr=vram_env, shape=(4096,), dtype=wp.uint16)
    bits = wp.array(ptr=bits_at, shape=(256,), dtype=wp.uint64)
    colours = wp.array(ptr=line, shape=(22,), dtype=wp.uint64)   # line: this env's line_buf row
    shades_at = line + wp.uint64(176)
    if bgp == 0xE4 and (lcdc & 0x01) != 0:   # the identity palette (common): shades = colours
        shades_at = line
    shades = wp.array(ptr=shades_at, shape=(22,), dtype=wp.uint64)
    if (lcdc & 0x01) != 0:
        win_start = int(1 << 20)
        if win != 0:
            win_start = wx - 7
        bg_end = wp.min(160, wp.max(win_start, 0))
        bg_map_row = _MAP_9800
        if (lcdc & 0x08) != 0:
            bg_map_row = _MAP_9C00
        bg_y = (ly + scy) & 255
        win_map_row = _MAP_9800
        if (lcdc & 0x40) != 0:
            win_map_row = _MAP_9C00
        if unaligned != 0:
            # BG tiles from x = -(SCX % 8) on; the window's from win_start on, over them
            if bg_end > 0:
                ad = _tile_addressing(lcdc, bg_y & 7)
                fine = scx & 7
                _tile_rows_at(vram_env, bits_at, line + wp.uint64(8 - fine), bg_map_row + (bg_y >> 3) * 32, ad[1],
                              ad[0], scx >> 3, (bg_end + fine + 7) >> 3)
            if bg_end < 160:
                ad = _tile_addressing(lcdc, window_line & 7)
                _tile_rows_at(vram_env, bits_at, line + wp.uint64(8 + win_start), win_map_row + (window_line >> 3) * 32,
                              ad[1], ad[0], 0, (167 - win_start) >> 3)
        else:
            if bg_end > 0:
                _span(vr, rows, bits, colours, lcdc, bg_map_row + (bg_y >> 3) * 32, bg_y & 7, 0, (bg_end + 7) >> 3,
                      scx)
            if bg_end < 160:
                j = bg_end >> 3
                shared = colours[j + 1]  # BG pixels left of the window in a word both draw
                _span(vr, rows, bits, colours, lcdc, win_map_row + (window_line >> 3) * 32, window_line & 7, j, 20,
                      -win_start)
                if (bg_end & 7) != 0:
                    keep = (wp.uint64(1) << wp.uint64(8 * (bg_end & 7))) - wp.uint64(1)
                    colours[j + 1] = (shared & keep) | (colours[j + 1] & ~keep)
        colours[0] = wp.uint64(0)    # off screen: BG colour 0 under objects that reach past x = 0 / 159
        colours[21] = wp.uint64(0)
        if insert_x >= 0:            # the window refused on a tile boundary: a colour-0 pixel inserted
            px = wp.array(ptr=line + wp.uint64(8), shape=(160,), dtype=wp.uint8)
            for k in range(159 - insert_x):
                px[159 - k] = px[158 - k]
            px[insert_x] = wp.uint8(0)
        if bgp != 0xE4:
            for k in range(1, 21):
                shades[k] = _shades8(colours[k], bgp)
    else:  # DMG: BG and window blank (colour 0); objects still drawn
        blank = wp.uint64(bgp & 3) * _ONES
        colours[0] = wp.uint64(0)
        colours[21] = wp.uint64(0)
        for k in range(1, 21):
            colours[k] = wp.uint64(0)
            shades[k] = blank
    if selected != wp.uint64(0):
        _draw_objects(vram_env, oam_env, bits_at, ly, lcdc, obp0, obp1, selected, line, shades_at)
    store_line(shades_at, frame_row, obs_row, ly, render_mode)


@wp.func
def store_line(shades_at: wp.uint64, frame_row: wp.uint64, obs_row: wp.uint64, ly: int, render_mode: int):
    """A finished line's shades (words 1..20 of the 22 at shades_at: x = 0..159) into frame_row
    (RENDER_FULL) and, on even lines, their even pixels into obs_row."""
    shades = wp.array(ptr=shades_at, shape=(22,), dtype=wp.uint64)
    if render_mode == RENDER_FULL:
        row = wp.array(ptr=frame_row, shape=(20,), dtype=wp.uint64)
        for j in range(20):
            row[j] = shades[j + 1]
    if (ly & 1) == 0:
        orow = wp.array(ptr=obs_row, shape=(10,), dtype=wp.uint64)
        for j in range(10):
            orow[j] = _even_bytes_pair(shades[2 * j + 1], shades[2 * j + 2])


@wp.func
def objects_mode3_penalty(oam: wp.array2d(dtype=wp.uint8), env: int, selected: wp.uint64, scx: int,
                          win_start: int, insert_x: int) -> int:
    """Dots that this line's objects (objects_on_line's mask) add to mode 3 (Pan Docs,
    "Mode 3 length").

    Each selected object with X < 168 costs 6 dots; the first object whose leftmost
    pixel falls in a given BG (or window) tile also waits for that tile's fetch:
    5 - (pixel's offset in the tile) more dots, at least 0. So each tile touched costs
    its largest wait once. Objects at X = 0 lie in the tile left of the screen and wait 5
    (the fetcher's 5 - SCX mod 8, at least 0, then min(SCX mod 8, 5) more), the largest
    wait in that tile: n of them cost 6n + 5 whatever SCX, and objects at X = 1..7 - SCX mod 8
    add only their 6 (the DMG values of mooneye-gb's intr_2_mode0_timing_sprites,
    tests/roms/ppu_sprite_timing.asm; the cap at 5: SameBoy issue 293, measured on
    hardware). The same rules as ppu_dots.dots_line's pipeline, which checks them.
    win_start: screen x where the window starts on this line (>= 160: none). insert_x: where a
    refused window's colour-0 pixel is inserted (refused_window_x; -1: none): the fetches after the
    tile pushed with it come a pixel later, from x + 8 on (as the dot-by-dot pipeline waits).
    """
    ow = _oam_words(oam, env)
    # (tile key << 3 | wait) of each counted object: BG tiles 1.., window 128..
    waits = wp.zeros(shape=(10,), dtype=wp.int32)
    n = int(0)
    rest = selected
    while rest != wp.uint64(0):
        x = (int(ow[_lowest_index(rest)]) >> 8) & 0xFF
        rest = rest & (rest - wp.uint64(1))
        if x < 168:
            sx = x - 8
            key = int(0)
            p = int(0)
            if x == 0:
                key = 1       # the tile left of the screen, with the largest wait there: 5
            elif sx >= win_start:
                p = sx - win_start
                key = 128 + (p >> 3)
            else:
                p = sx + (scx & 7) + 8  # >= 1: fetcher position, one tile to the left of the screen
                if insert_x >= 0 and sx >= insert_x + 8:
                    p -= 1      # (the tile pushed with the inserted pixel was under way as before)
                key = 1 + (p >> 3)
            waits[n] = key * 8 + wp.max(0, 5 - (p & 7))
            n += 1
    dots = 6 * n
    for j in range(n):
        kj = waits[j] >> 3
        wj = waits[j] & 7
        first = int(1)  # the tile's largest wait, paid once (by the first such object)
        for k in range(n):
            if (waits[k] >> 3) == kj:
                wk = waits[k] & 7
                if wk > wj or (wk == wj and k < j):
                    first = 0
        dots += first * wj
    return dots


@wp.func
def blank_scanline(env: int, ly: int, shade: int, frame: wp.array3d(dtype=wp.uint8),
                   obs: wp.array3d(dtype=wp.uint8), render_mode: int):
    """Fill line ly with one shade (LCD off: the DMG shows a blank, white screen)."""
    fill = wp.uint64(shade) * _ONES
    if render_mode == RENDER_FULL:
        row = wp.array(ptr=wp.uint64(frame.ptr) + wp.uint64((env * 144 + ly) * 160), shape=(20,),
                       dtype=wp.uint64)
        for j in range(20):
            row[j] = fill
    if render_mode >= RENDER_OBS and (ly & 1) == 0:
        orow = wp.array(ptr=wp.uint64(obs.ptr) + wp.uint64((env * 72 + (ly >> 1)) * 80), shape=(10,),
                        dtype=wp.uint64)
        for j in range(10):
            orow[j] = fill
