"""The in-kernel scanline renderer against hand-derived pixels and a pixel-by-pixel reference.

Expected values come from the DMG rules in Pan Docs (Rendering, Tile Data,
Tile Maps, LCDC, Window, OAM, Palettes); see tests/_ppu_helpers.py for the
slow reference renderer.
"""

from __future__ import annotations

import numpy as np
import pytest

from gbx_lightning.emu import render
from tests._ppu_helpers import (BGP, LCDC, SCX, SENTINEL, WX, WY, Scene, count_sprites, frame_sha256, random_scene,
                                reference_frame, render_scenes)

SOLID = {c: [[c] * 8 for _ in range(8)] for c in range(4)}


def _render_one(scene, mode=render.RENDER_FULL):
    frames, obs, wl = render_scenes([scene], mode)
    return frames[0], obs[0], wl[0]


# ------------------------------------------------------------ property test


@pytest.fixture(scope="module")
def random_batch():
    rng = np.random.default_rng(20261122)
    scenes = [random_scene(rng) for _ in range(6)]
    scenes += [random_scene(rng, crowded=True) for _ in range(4)]
    scenes += [random_scene(rng, per_line=True) for _ in range(4)]
    scenes += [random_scene(rng, per_line=True, crowded=True) for _ in range(2)]
    refs = [reference_frame(s) for s in scenes]
    return scenes, refs


@pytest.mark.parametrize("unaligned", [1, 0], ids=["cpu_stores", "gpu_stores"])
def test_random_states_match_reference_full(random_batch, unaligned):
    """Both ways of storing tile rows (render.tile_stores_unaligned) draw the reference's pixels."""
    scenes, refs = random_batch
    frames, obs, wl = render_scenes(scenes, render.RENDER_FULL, unaligned)
    for i, (ref_frame, ref_wl) in enumerate(refs):
        bad = np.argwhere(frames[i] != ref_frame)
        assert bad.size == 0, f"scene {i}: {len(bad)} pixels differ, first (y, x) = {tuple(bad[0])}"
        np.testing.assert_array_equal(obs[i], ref_frame[::2, ::2], err_msg=f"scene {i} obs")
        np.testing.assert_array_equal(wl[i], ref_wl, err_msg=f"scene {i} window line counter")


def test_obs_mode_draws_only_the_observation(random_batch):
    scenes, refs = random_batch
    frames, obs, wl = render_scenes(scenes, render.RENDER_OBS)
    for i, (ref_frame, ref_wl) in enumerate(refs):
        np.testing.assert_array_equal(obs[i], ref_frame[::2, ::2], err_msg=f"scene {i} obs")
        np.testing.assert_array_equal(wl[i], ref_wl, err_msg=f"scene {i} window line counter")
    assert (frames == SENTINEL).all(), "RENDER_OBS must not touch the full frame"


def test_none_mode_draws_nothing_but_tracks_the_window(random_batch):
    scenes, refs = random_batch
    frames, obs, wl = render_scenes(scenes, render.RENDER_NONE)
    assert (frames == SENTINEL).all() and (obs == SENTINEL).all()
    for i, (_, ref_wl) in enumerate(refs):
        np.testing.assert_array_equal(wl[i], ref_wl, err_msg=f"scene {i} window line counter")
    assert any(r[1][144] > 0 for r in refs), "no random scene drew the window: the check above is vacuous"


def test_sprites_on_line_counts_first_ten_by_rows_only():
    s = Scene()
    for i in range(12):  # 12 objects covering lines 0..7, X=0 (off screen) still counts
        s.obj(i, 16, 0 if i == 0 else 8 * i, 1)
    s.obj(20, 16 + 4, 50, 1)  # lines 4..11 in 8x8, 4..19 in 8x16
    s.obj(21, 0, 50, 1)       # lines -16..-9 in 8x8: never; 8x16: -16..-1: never
    counts8, counts16, counts_off = count_sprites([s, s, s], [0x82, 0x86, 0x80])
    assert list(counts8[:12]) == [10] * 8 + [1] * 4
    assert counts8[12] == 0
    assert list(counts16[:20]) == [10] * 16 + [1] * 4
    assert counts16[20] == 0
    assert (counts_off == 0).all()


# ------------------------------------------------------------ hand-built cases


def test_checkerboard_bg_at_scx_3():
    s = Scene(lcdc=0x91, scx=3)  # LCD on, $8000 data, $9800 map, BG on
    s.tile(1, [[3, 3, 3, 3, 0, 0, 0, 0]] * 4 + [[0, 0, 0, 0, 3, 3, 3, 3]] * 4)
    s.fill_map(0x9800, 1)
    frame, obs, _ = _render_one(s)
    y, x = np.mgrid[0:144, 0:160]
    expected = np.where(((x + 3) // 4 + y // 4) % 2 == 0, 3, 0)
    np.testing.assert_array_equal(frame, expected)
    np.testing.assert_array_equal(obs, expected[::2, ::2])


def test_bg_scroll_wraps_and_bgp_maps_shades():
    s = Scene(lcdc=0x91, scx=250, scy=252, bgp=0x1B)  # reversed palette: colour c -> shade 3-c
    for t in range(4):
        s.tile(t, SOLID[t])
    for row in range(32):
        for col in range(32):
            s.vram[0x1800 + 32 * row + col] = (row + col) % 4
    frame, _, _ = _render_one(s)
    y, x = np.mgrid[0:144, 0:160]
    expected = 3 - ((((y + 252) % 256) // 8 + ((x + 250) % 256) // 8) % 4)
    np.testing.assert_array_equal(frame, expected)


def test_signed_tile_data_at_8800():
    s = Scene(lcdc=0x81)  # LCDC.4 = 0: tile n at $9000 + 16 * signed(n)
    s.tile(0, SOLID[1], base=0x9000)
    s.tile(0x80, SOLID[2], base=0x8000)  # $8800 = tile -128 in signed addressing
    s.tile(0, SOLID[3], base=0x8000)     # must NOT be used for tile 0
    s.vram[0x1800:0x1800 + 32 * 32] = 0
    s.vram[0x1800 + 1] = 0x80            # map column 1 of row 0
    frame, _, _ = _render_one(s)
    assert (frame[0:8, 0:8] == 1).all() and (frame[0:8, 8:16] == 2).all() and (frame[0:8, 16:] == 1).all()


def test_window_at_wx_15_with_its_own_line_counter():
    """WX=15 puts the window at x=8; lines where it is off do not advance its counter."""
    s = Scene(lcdc=0xF3 & ~0x02, wy=50, wx=15)  # $9C00 window map, $8000 data, BG on
    s.tile(0, SOLID[0])
    s.fill_map(0x9800, 0)
    for m in range(18):  # window map row m: tile 0x20 + m; window row w has colour w % 4
        s.vram[0x1C00 + 32 * m: 0x1C00 + 32 * m + 32] = 0x20 + m
        s.tile(0x20 + m, [[(8 * m + k) % 4] * 8 for k in range(8)])
    s.regs[60:70, LCDC] &= ~0x20  # window disabled on lines 60..69
    frame, _, wl = _render_one(s)
    for ly in range(144):
        if ly < 50 or 60 <= ly < 70:
            assert (frame[ly] == 0).all(), ly
            continue
        w = ly - 50 if ly < 60 else ly - 60
        assert (frame[ly, :8] == 0).all(), ly
        assert (frame[ly, 8:] == w % 4).all(), (ly, frame[ly, 8:12], w)
    assert wl[144] == 144 - 50 - 10


def test_window_clipped_left_at_small_wx_and_absent_past_166():
    s = Scene(lcdc=0xB1, wy=0, wx=3)  # window map $9800 = BG map; tile data $8000
    for t in range(4):
        s.tile(t, SOLID[t])
    for row in range(32):
        s.vram[0x1800 + 32 * row: 0x1800 + 32 * row + 32] = np.arange(32) % 4  # map column c -> colour c % 4
    s.regs[0:40, SCX] = 2    # BG scrolled, window not: the window must ignore SCX
    s.regs[40:80, WX] = 167  # WX > 166: no window, counter holds
    frame, _, wl = _render_one(s)
    x = np.arange(160)
    np.testing.assert_array_equal(frame[0], ((x + 4) // 8) % 4)  # WX=3: window column = x + 7 - 3
    np.testing.assert_array_equal(frame[39], ((x + 4) // 8) % 4)
    np.testing.assert_array_equal(frame[40], (x // 8) % 4)       # BG again, SCX back to 0
    assert list(wl[39:42]) == [39, 40, 40]


def test_lcdc0_off_blanks_bg_and_window_but_not_objects():
    s = Scene(lcdc=0xB2, wy=0, wx=7, bgp=0xE4)  # BG/window off (bit 0), window enable set, objects on
    s.tile(1, SOLID[3])
    s.fill_map(0x9800, 1)
    s.obj(0, 16, 8, 1, attr=0x80)  # behind BG: still shows, BG counts as colour 0
    frame, _, wl = _render_one(s)
    assert (frame[0:8, 0:8] == 3).all()
    assert (frame[0:8, 8:] == 0).all() and (frame[8:] == 0).all()
    assert wl[144] == 0, "window must not count lines while LCDC.0 hides it"


def test_eleven_objects_on_a_line_only_first_ten_drawn():
    s = Scene(lcdc=0x93)
    s.tile(1, SOLID[3])
    s.obj(0, 16 + 20, 0, 1)  # X=0: off screen but still takes one of the 10 slots
    for i in range(1, 12):
        s.obj(i, 16 + 20, 8 + 12 * i, 1)
    frame, _, _ = _render_one(s)
    for i in range(1, 12):
        expected = 3 if i <= 9 else 0
        assert (frame[20:28, 12 * i: 12 * i + 8] == expected).all(), i
    assert frame[20:28].sum() == 3 * 64 * 9


def test_object_priority_x_then_oam_index_and_transparency():
    s = Scene(lcdc=0x93)
    s.tile(1, SOLID[1])
    s.tile(2, SOLID[2])
    s.tile(3, [[0, 0, 0, 0, 3, 3, 3, 3]] * 8)
    # equal X: lower OAM index wins
    s.obj(5, 16, 40, 2)
    s.obj(6, 16, 40, 1)
    # different X: smaller X wins even with a higher OAM index
    s.obj(0, 16 + 16, 20, 1)  # x 12..19
    s.obj(1, 16 + 16, 16, 2)  # x 8..15, wins on 12..15
    # winner's transparent pixels let the loser show
    s.obj(2, 16 + 32, 30, 3)  # x 22..29, left half transparent, smaller X
    s.obj(3, 16 + 32, 31, 1)  # x 23..30
    frame, _, _ = _render_one(s)
    assert (frame[0:8, 32:40] == 2).all()
    assert (frame[16, 8:12] == 2).all() and (frame[16, 12:16] == 2).all() and (frame[16, 16:20] == 1).all()
    assert list(frame[32, 22:31]) == [0, 1, 1, 1, 3, 3, 3, 3, 1]


def test_8x16_objects_ignore_tile_bit0_and_flip_as_one_object():
    s = Scene(lcdc=0x97, obp0=0xE4, obp1=0x1B)
    top = [[3] * 8] + [[3, 1, 1, 1, 1, 1, 1, 1]] * 7   # row 0 solid 3, then a colour-3 left edge
    bottom = [[3, 2, 2, 2, 2, 2, 2, 2]] * 8
    s.tile(0x40, top)
    s.tile(0x41, bottom)
    s.obj(0, 16, 8, 0x41)                  # bit 0 ignored: top half is tile $40
    s.obj(1, 16 + 20, 8, 0x40, attr=0x40)  # Y flip: the whole 16-row object flips
    s.obj(2, 16 + 40, 8, 0x40, attr=0x20)  # X flip
    s.obj(3, 16 + 60, 8, 0x40, attr=0x10)  # OBP1 reverses shades
    frame, _, _ = _render_one(s)
    a = frame[0:16, 0:8]
    assert (a[0] == 3).all() and (a[1:8, 0] == 3).all() and (a[1:8, 1:] == 1).all()
    assert (a[8:, 0] == 3).all() and (a[8:, 1:] == 2).all()
    b = frame[20:36, 0:8]
    np.testing.assert_array_equal(b, a[::-1])
    c = frame[40:56, 0:8]
    np.testing.assert_array_equal(c, a[:, ::-1])
    d = frame[60:76, 0:8]
    np.testing.assert_array_equal(d, 3 - a)


def test_bg_over_obj_attribute_and_masking():
    s = Scene(lcdc=0x93)
    s.tile(0, [[0, 0, 0, 0, 1, 1, 1, 1]] * 8)  # BG: colour 0 left half, colour 1 right half of each tile
    s.fill_map(0x9800, 0)
    s.tile(1, SOLID[3])
    s.tile(2, SOLID[2])
    s.obj(0, 16, 8, 1, attr=0x80)       # behind BG: visible only where BG colour is 0
    s.obj(1, 16 + 16, 8, 1, attr=0x80)  # higher priority (lower index, equal X), behind BG...
    s.obj(2, 16 + 16, 8, 2)             # ...masks this normal one even over BG colour 1
    frame, _, _ = _render_one(s)
    assert list(frame[0, 0:8]) == [3, 3, 3, 3, 1, 1, 1, 1]
    assert list(frame[16, 0:8]) == [3, 3, 3, 3, 1, 1, 1, 1]


def test_objects_disabled_by_lcdc1():
    s = Scene(lcdc=0x91)
    s.tile(1, SOLID[3])
    s.obj(0, 16, 8, 1)
    frame, _, _ = _render_one(s)
    assert (frame == 0).all()


# ------------------------------------------------------------ golden hashes

# sha256 of the 144x160 shade frame for fixed scenes built by arithmetic (no RNG,
# so the bytes never depend on a numpy version); the test first checks the kernel
# against the reference renderer, so the hashes are derived from the hardware rules.
GOLDEN = {
    "static_8000": "29cf9f69f3f167a001f08bda4091dbd7c1f8c533a0d29b17c9e7cc49e7579c52",
    "static_8800_8x16": "8f8ae9ee4cfee0ee48c2acdc035954cce23cbb062479f30bcb1144aa5f2f51cf",
    "raster_per_line": "06e489bcbaebefbe773365534c8e3ec294ed52867e3749d17e96980b6a546bf8",
}


def _golden_scene(name):
    s = Scene()
    i = np.arange(0x2000)
    s.vram[:] = (i * 37 + (i >> 5) * 11 + (i >> 9)) & 0xFF
    k = np.arange(40)
    s.oam[0::4] = (k * 7 + 10) % 168
    s.oam[1::4] = (k * 13 + 3) % 176
    s.oam[2::4] = (k * 29) & 0xFF
    s.oam[3::4] = ((k * 5) & 0x7) << 4
    ly = np.arange(144)
    if name == "static_8000":
        s.regs[:] = [0xF3, 5, 9, 40, 60, 0xE4, 0xD2, 0x1B]
    elif name == "static_8800_8x16":
        s.regs[:] = [0xA7, 200, 77, 100, 7, 0x93, 0xE4, 0x6C]
    else:  # SCX, BGP and LCDC change every line, as an HBlank handler would do
        s.regs[:] = [0xF3, 0, 0, 30, 90, 0xE4, 0xD2, 0x1B]
        s.regs[:, SCX] = (ly * 3) & 0xFF
        s.regs[:, BGP] = np.where(ly % 16 < 8, 0xE4, 0x1B)
        s.regs[:, LCDC] = np.where(ly % 32 < 16, 0xF3, 0xE7)
        s.regs[:, WX] = 20 + ly // 2
    return s


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_golden_frame_hashes(name):
    scene = _golden_scene(name)
    ref, _ = reference_frame(scene)
    frame, _, _ = _render_one(scene)
    np.testing.assert_array_equal(frame, ref)
    assert frame_sha256(frame) == GOLDEN[name]
