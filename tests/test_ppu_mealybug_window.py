"""The window and WX Mealybug Tearoom facts, on our own replicas of those ROMs' write timing.

Mealybug Tearoom's m3_wx_4/5/6_change, m3_wx_4_change_sprites, m2_win_en_toggle and
m3_lcdc_win_en_change_multiple(_wx) take a mode-2 STAT interrupt out of a field of NOPs (no
jitter) and write WX or LCDC at counted cycles; we cannot run them here against their DMG
reference screenshots. tests/roms/mealy_*.asm make the same writes at the same cycles (the handler starts 32 T
after the interrupt, 20 T dispatch + the vector's jp as the sources count it) over our own scenes,
and each test below draws, in Python, the frame that the facts documented about those references
give (the ROM headers; the per-test account of another emulator's authors, who match the
references pixel for pixel), and asks for it exactly, line by line:

* A WX match while the window already shows inserts one colour-0 pixel ("reactivation zero
  pixel") only where the pixel it reactivates on falls on the window's tile-number read: on the
  _4 ROM's reference every such pixel lies on one lattice, x mod 8 = 5 (the window started at
  x = WX - 7 = -3 from the line's start, tiles at -3 + 8k: the first pixel of a window tile),
  through bands carrying objects too; objects with the BG-over-OBJ bit show through it.
* WX = 6 in mode 2 then WX = LY as the first pixels go out (m3_wx_6_change): no window on LY 4
  and 5 (WX 4 and 5 compared too late), the whole line on LY 6 (window row 0: the comparator
  matches one slot left of the first pixel) and LY 7 (row 1).
* The window's row counter advances once per activation: not on lines where the window is off
  (m2_win_en_toggle), twice on a line where it is started twice (m3_lcdc_win_en_change_multiple:
  the second start shows the next row).
* LCDC.5 cleared in mode 3 takes effect at the next tile fetch: the window shows whole tiles
  (multiples of 8 pixels) and the BG resumes on the window's tile boundary, except where the
  window began off the left edge (WX < 7): on the WX = 6 line the BG resumes at x = 7.
* Line 0's mode-2 interrupt comes 4 T later than the other lines' (the sources' line_0_fix
  spends 4 T less there so that the writes land on the same dot of every line).

Our frames show every such fact checked here (the last one, WX < 7 written as line 0-1 start,
since ppu_dots takes a WX write landing before the pipeline's first dot for x = -7).
"""
from __future__ import annotations

import numpy as np
import pytest

from tests import oracles
from tests.test_ppu_mode3_writes import _gambatte_frame, build_rom

BGP = 0xE4


def _run(rom: bytes, frames: int = 10):
    """Our frame after `frames` frames and VRAM then (the scene the expected frame is drawn from)."""
    from gbx_lightning.emu.machine import VecGameBoy

    gb = VecGameBoy(rom, 1)
    gb.run_frames(frames)
    assert gb.serial_output(0).startswith(b"PASS")
    return gb.frame()[0].copy(), np.frombuffer(bytes(gb.read_memory(0, 0x8000, 0x2000)), np.uint8)


# ---------------------------------------------------------------- drawing a line from the rules


def _tile_colour(vram, tile: int, row: int, col: int, unsigned: bool) -> int:
    base = 16 * tile if unsigned else 0x1000 + 16 * ((tile ^ 0x80) - 0x80)
    lo, hi = int(vram[base + 2 * (row & 7)]), int(vram[base + 2 * (row & 7) + 1])
    b = 7 - (col & 7)
    return ((lo >> b) & 1) | (((hi >> b) & 1) << 1)


def _bg(vram, lcdc: int, ly: int, x: int) -> int:
    m = 0x1C00 if lcdc & 0x08 else 0x1800
    return _tile_colour(vram, int(vram[m + (ly >> 3) * 32 + ((x >> 3) & 31)]), ly, x, bool(lcdc & 0x10))


def _win(vram, lcdc: int, row: int, wx: int) -> int:
    m = 0x1C00 if lcdc & 0x40 else 0x1800
    return _tile_colour(vram, int(vram[m + ((row & 255) >> 3) * 32 + ((wx >> 3) & 31)]), row, wx, bool(lcdc & 0x10))


def draw(vram, lcdc: int, ly: int, segments, zero: int | None = None, bgp: int = BGP) -> np.ndarray:
    """Line ly's 160 shades. segments: (x0, "bg") or (x0, "bg", x of a BG tile's first pixel) or
    (x0, "win", x of the window's first pixel, window row), in order of x0; zero: x of an
    inserted colour-0 pixel (the window's pixels after it one place to the right)."""
    out = np.zeros(160, np.uint8)
    for x in range(160):
        seg = [s for s in segments if s[0] <= x][-1]
        if x == zero:
            c = 0
        elif seg[1] == "bg":
            c = _bg(vram, lcdc, ly, x if len(seg) == 2 else x - seg[2])
        else:
            c = _win(vram, lcdc, seg[3], x - seg[2] - int(zero is not None and seg[0] <= zero < x))
        out[x] = (bgp >> (2 * c)) & 3
    return out


def _where_differs(shown, want, lines) -> list:
    return [ly for ly in lines if not (shown[ly] == want[ly]).all()]


# ---------------------------------------------------------------- WX rewritten: zero pixels


def _wx_rom(wx0: int, **equ) -> bytes:
    # the _4 ROMs load WX with an extra `ld b, a` and wait 5 NOPs, the _5/_6 ones 6: the same
    # cycle for WX = LY (92 T), 4 T apart for the mode-2 write
    extra = dict(MW_LDB=0, MW_NOPS=6) if wx0 != 4 else {}
    return build_rom("mealy_wx_change.asm", MW_WX0=wx0, **extra, **equ)


# WX = 80 is written at 188 T: on a line whose window started at the line's start, as x = 87
# goes out (the BGP write at 188 T shows from x = 188 - 95 = 93, and the window's start held the
# pixels 6 dots). So the last reactivation reached is x = LY - 7 < 87.
LAST_REACH = 87


def _zero_lines(origin: int) -> dict:
    """Lines whose WX = LY match reactivates the window on the first pixel of one of its tiles
    (x = origin + 8k, on screen, before WX = 80 lands): line -> x of the zero pixel."""
    return {ly: ly - 7 for ly in range(4, 144) if 0 < ly - 7 < LAST_REACH and (ly - 7 - origin) % 8 == 0}


@pytest.mark.parametrize("wx0", [4, 5])
def test_wx_written_again_while_the_window_shows_inserts_a_zero_pixel_on_the_tile_lattice(wx0):
    """m3_wx_4_change / m3_wx_5_change: WX = wx0 in mode 2 (the window from x = wx0 - 7, its first
    tile covering wx0 - 7 .. wx0, as every WX's does), WX = LY as the first pixels go out, WX = 80
    mid-line. Each line from LY 5 shows the window from wx0 - 7 with the next row (one activation
    per line), and a colour-0 pixel at x = LY - 7 exactly on the lines where that is the first
    pixel of a window tile (x mod 8 = 5 for WX = 4: the _4 references' lattice; 6 for WX = 5);
    everywhere else no pixel is inserted. (LY 4 with WX = 5: WX = 4 is written on the very dot
    x = -2 is compared, which no documented fact settles; the rows are counted from LY 5.)"""
    shown, vram = _run(_wx_rom(wx0))
    lcdc, origin = 0xF3, wx0 - 7
    zeros = _zero_lines(origin)
    assert len(zeros) == 11
    row5 = None
    for r in range(2):                  # the row LY 5 shows: 1, or 0 if LY 4 had no window
        if (shown[5] == draw(vram, lcdc, 5, [(0, "win", origin, r)])).all():
            row5 = r
    assert row5 == 1 or (wx0 == 5 and row5 == 0), row5
    want = np.stack([draw(vram, lcdc, ly, [(0, "bg")]) if ly < 4 else
                     draw(vram, lcdc, ly, [(0, "win", origin, row5 + ly - 5)], zeros.get(ly)) for ly in range(144)])
    lines = [ly for ly in range(144) if ly != 4 or wx0 == 4]
    assert _where_differs(shown, want, lines) == []


@pytest.mark.slow
@pytest.mark.skipif(not oracles.gambatte_available(), reason="gambaterm not installed")
@pytest.mark.parametrize("wx0", [4, 5])
def test_gambatte_draws_the_same_frame_without_the_zero_pixels(wx0):
    """gambatte has no reactivation zero pixel: its frame differs from ours exactly on the lines
    that have one, and there by that pixel (our line with it removed and the last pixel its)."""
    rom = _wx_rom(wx0)
    shown, _ = _run(rom)
    g = _gambatte_frame(rom)
    zeros = _zero_lines(wx0 - 7)
    assert [ly for ly in range(144) if (shown[ly] != g[ly]).any()] == sorted(zeros)
    for ly, x in zeros.items():
        np.testing.assert_array_equal(np.concatenate([shown[ly][:x], shown[ly][x + 1:]]), g[ly][:159], err_msg=str(ly))


def test_objects_behind_the_bg_show_through_the_zero_pixels():
    """m3_wx_4_change_sprites: every tile solid colour 3, BGP $1B (BG and window white, a
    colour-0 pixel black), OBP0 $55. Ten objects on lines 16-23 (x 0..79) draw over everything;
    ten with the BG-over-OBJ bit on lines 32-39 hide behind colours 1-3 and show through a
    colour-0 pixel only. Expected: white everywhere, light grey where the first ten are, black
    at the zero pixels of the lattice (x mod 8 = 5: lines 12, 20, ..., 92), light grey instead
    where an object of either band covers one (line 20: x = 13 under the first band; line 36:
    x = 29 over the second band, the documented 'show through')."""
    shown, _ = _run(_wx_rom(4, MW_SPRITES=1))
    want = np.zeros((144, 160), np.uint8)          # BGP $1B: colour 3 -> shade 0
    want[16:24, 0:80] = 1                          # OBP0 $55: colour 3 -> shade 1
    for ly, x in _zero_lines(-3).items():
        want[ly, x] = 1 if (16 <= ly < 24 or 32 <= ly < 40) and x < 80 else 3
    assert want[36, 29] == 1 and want[20, 13] == 1 and want[12, 5] == 3
    assert _where_differs(shown, want, range(144)) == []


def test_wx_6_then_ly_starts_the_window_only_where_the_first_slot_matches():
    """m3_wx_6_change: WX = 6 in mode 2, WX = LY at 92 T, WX = 80 at 188 T, WY = 4. The reference:
    LY 4 and 5 no window (WX 4, 5 written before the first slot is compared), LY 6 the window
    over the whole line with row 0 (WX = 6 matches at x = -1), LY 7 the whole line with row 1;
    from LY 8 the window from x = LY - 7 (BG before it), one row further per line; once WX = 80
    lands before x = LY - 7 is reached (x = 93: the BGP write at 188 T shows there), no window.
    LY 101 (x = 94, the write's own dot) is left out: no fact settles it."""
    shown, vram = _run(_wx_rom(6))
    lcdc = 0xF3
    want = []
    for ly in range(144):
        if ly < 6 or ly > 101:
            segs = [(0, "bg")]
        elif ly < 8:
            segs = [(0, "win", ly - 7, ly - 6)]
        else:
            segs = [(0, "bg"), (ly - 7, "win", ly - 7, ly - 6)]
        want.append(draw(vram, lcdc, ly, segs))
    lines = [ly for ly in range(144) if ly != 101]
    assert _where_differs(shown, np.stack(want), lines) == []
    assert not (shown[6] == draw(vram, lcdc, 6, [(0, "bg")])).all()


# ---------------------------------------------------------------- the window's row counter


def test_window_row_counter_advances_only_on_lines_the_window_starts():
    """m2_win_en_toggle: LCDC.5 flipped in every line's mode 2 (set again in VBlank), WX = 7,
    WY = 0: the window covers every other line whole, and each such line shows the row after the
    previous window line's - the lines without it do not advance the counter. (Which parity has
    the window depends on the DMG's extra mode-2 interrupt at line 144, not on this fact.)"""
    shown, vram = _run(build_rom("mealy_win_toggle.asm"))
    lcdc = 0x99
    blank = [ly for ly in range(144) if (shown[ly] == draw(vram, lcdc, ly, [(0, "bg")])).all()]
    parity = 1 - blank[0] % 2
    assert blank == [ly for ly in range(144) if ly % 2 != parity]
    want = np.stack([draw(vram, lcdc, ly, [(0, "win", 0, ly // 2)]) if ly % 2 == parity else
                     draw(vram, lcdc, ly, [(0, "bg")]) for ly in range(144)])
    assert _where_differs(shown, want, range(144)) == []


def test_window_started_twice_on_a_line_shows_the_next_row_the_second_time():
    """m3_lcdc_win_en_change_multiple: WX = 24 before the line's pixels (window from x = 17),
    WX = 120 (x = 113) while it shows, LCDC.5 cleared as x = 47 goes out (148 T - 95, 6 dots
    later for the window's start) and set again 16 T later. The tile in flight when it is cleared
    (x = 49-56, fetched as x = 41 went out) is the window's; the next fetch is the BG's, which
    resumes on the window's tile boundary (x = 57: the BG tile's first pixel, the map column
    not distinguishable here: every BG tile is the same). At x = 113 the window starts again, with
    the next row. Every line: window rows 2 LY and 2 LY + 1, 40 pixels (five tiles) and 47."""
    shown, vram = _run(build_rom("mealy_win_multi.asm"))
    lcdc = 0xF3
    want = np.stack([draw(vram, lcdc, ly, [(0, "bg"), (17, "win", 17, 2 * ly), (57, "bg", 57),
                                           (113, "win", 113, 2 * ly + 1)]) for ly in range(144)])
    assert _where_differs(shown, want, range(144)) == []


# ---------------------------------------------------------------- LCDC.5 toggled with WX = LY


def _runs(line: np.ndarray, shade: int) -> list:
    """[start, end) runs of `shade` in the line."""
    out, x = [], 0
    while x < 160:
        if line[x] == shade:
            e = x
            while e < 160 and line[e] == shade:
                e += 1
            out.append((x, e))
            x = e
        else:
            x += 1
    return out


def test_window_toggled_with_wx_ly_shows_whole_tiles_except_off_the_left_edge():
    """m3_lcdc_win_en_change_multiple_wx: WX = LY at 84 T, LCDC.5 off at 96, on at 104, off at
    124, on at 132; the window black, the BG light grey. A window that starts on screen
    (WX >= 7: at x = LY - 7) shows whole tiles: one run starting there, a multiple of 8 long when
    LCDC.5 ends it (or none; or to the screen's edge when it starts after the last clear). One
    that begins off the left edge (WX < 7: its first tile covers LY - 7 .. LY) is cut at that
    tile's end: on the reference's WX = 6 line the BG resumes at x = 7; WX = 2..5 are asked the
    same (x = 0 .. LY black, the BG from LY + 1: the window's start-up fetch takes 6 dots whatever
    WX, so LCDC.5 is cleared before the second tile's fetch on each). LY 0-7: see below."""
    shown, _ = _run(build_rom("mealy_win_multi.asm", MW_WXLY=1))
    for ly in range(2, 7):
        assert _runs(shown[ly], 3) == [(0, ly + 1)], (ly, _runs(shown[ly], 3))
        assert set(shown[ly][ly + 1:].tolist()) == {1}, ly
    started = cut = 0
    for ly in range(7, 144):
        runs = _runs(shown[ly], 3)
        assert len(runs) <= 1, (ly, runs)
        if runs:
            (a, b), = runs
            assert a == ly - 7 and ((b - a) % 8 == 0 or b == 160), (ly, runs)
            cut += int(b < 160)
            started += 1
    assert started > 100 and cut >= 8, (started, cut)


def test_window_refused_on_a_tile_boundary_inserts_one_white_pixel():
    """m3_lcdc_win_en_change_multiple_wx: where LCDC.5 refuses a WX match (the window does not start) that
    falls on a BG tile boundary, the DMG inserts one colour-0 pixel at the match column (Pan Docs,
    "Window"; the DMG reference, as another emulator's notes read it: t = LY - 7 = 8 and 32 are the
    refused matches at a multiple of 8, each a single white pixel, the BG grey either side; no other
    white pixel in the frame). BGP $E4, the BG colour 1: white is the inserted pixel."""
    shown, _ = _run(build_rom("mealy_win_multi.asm", MW_WXLY=1))
    white = [(int(y), int(x)) for y, x in np.argwhere(shown == 0)]
    assert white == [(15, 8), (39, 32)], white
    for ly, x in white:
        assert shown[ly][x - 1] == 1 and shown[ly][x + 1] == 1


def test_window_with_wx_below_7_written_as_the_line_starts():
    """m3_lcdc_win_en_change_multiple_wx, LY 0-7 (WX = LY, written 3 dots before the pipeline's first
    dot: the comparison for x = -7 sees it, as m3_window_timing's LY 0 shows). The reference's black
    run at the head of each line (dingbat's docs/gb-mealybug-sources.md, its table of the DMG
    frame): 9, 10, 3, 4, 5, 6, 7, 8 for WX 0..7. WX = 0 and 1 show one tile more than their first
    (the LCDC.5 clear at 96 T finds the fetch of the tile after it under way)."""
    shown, _ = _run(build_rom("mealy_win_multi.asm", MW_WXLY=1))
    assert [_runs(shown[ly], 3)[0] for ly in range(8)] == [(0, n) for n in (9, 10, 3, 4, 5, 6, 7, 8)]


# ---------------------------------------------------------------- line 0's interrupt


def test_line_0_mode2_interrupt_comes_4_t_later_than_other_lines():
    """The Mealybug ROMs' line_0_fix spends 4 T less on line 0 because the DMG's mode-2 interrupt
    comes 4 T later there. mealy_wx_change with its writes sent to BGP instead (no line-0 fix in
    this handler): the write at 188 T shows from x = 93 on lines 1-3 and 4 pixels later on line
    0 (every tile solid colour 3, BGP $50 after the write: shade 1)."""
    shown, _ = _run(build_rom("mealy_wx_change.asm", MW_C="low(rBGP)", MW_WX0="$E4", MW_SPRITES=1))
    first = [int(np.argmax(shown[ly] == 1)) for ly in range(4)]
    assert first == [97, 93, 93, 93], first
    assert (shown[1][93:] == 1).all() and (shown[1][:93] == 0).all()


@pytest.mark.parametrize("bit", ["$40", "$10"])
def test_line_0_draws_the_8_t_lcdc_pulse_as_the_rest_of_its_band(bit):
    """m3_lcdc_win_map_change / m3_lcdc_tile_sel_win_change: LCDC.6 (window map) or LCDC.4 (tile
    data) set for 8 T at 104 T while the window covers every line, an object per 8-line band as a
    ruler (band 0's off screen at X = 0). With line_0_fix the pulse lands on the same dot of line
    0 as of lines 1-7 (their DMG references show line 0 as the rest of band 0: another emulator's
    only line-0 residuals there came from its line-0 interrupt not being 4 T later), so line 0
    must be drawn as lines 1-7 - and the pulse 4 T later draws band 0 differently (the check can
    see a 4-T error)."""
    shown, _ = _run(build_rom("mealy_win_lcdc.asm", MW_BIT=bit))
    later, _ = _run(build_rom("mealy_win_lcdc.asm", MW_BIT=bit, MW_LATE=1))
    for ly in range(1, 8):
        np.testing.assert_array_equal(shown[0], shown[ly], err_msg=f"line {ly}")
    assert (later[0] != shown[0]).any()


def test_window_map_pulse_per_band_is_the_documented_table():
    """m3_lcdc_win_map_change: LCDC.6 set for 8 T while the window (WX = 7) covers every line; map
    $9C00 is all black tiles, $9800 all white, so each window tile shows which map its tile-number
    read used. The DMG reference, band by band (dingbat's docs/gb-mealybug-sources.md, its table of
    the DMG frame): window tile 0 black for OAM X = 0, 1, 2; tile 1 black for X = 1..7 (and
    neither otherwise). Read off the pixels the band's object (solid, OBP0 $FF: black too) does not
    cover."""
    shown, _ = _run(build_rom("mealy_win_lcdc.asm", MW_BIT="$40"))
    checked = 0
    for band in range(18):
        covered = set(range(max(band - 8, 0), band))          # the object at X = band: x = band - 8 ..
        for tile, blacks in ((0, {0, 1, 2}), (1, set(range(1, 8)))):
            xs = [x for x in range(8 * tile, 8 * tile + 8) if x not in covered]
            for ly in range(8 * band, 8 * band + 8):
                if xs:
                    want = 3 if band in blacks else 0
                    assert set(shown[ly][xs].tolist()) == {want}, (band, tile, ly)
                    checked += 1
    assert checked > 250
