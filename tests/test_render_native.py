"""render.py's native (C++) helpers against numpy: the observation's even-byte packing
(pext / byte_perm / portable), the unaligned tile-row stores and the OAM cover mask. The
full renderer is checked pixel by pixel in test_render.py; these pin each helper's
contract on its own."""
from __future__ import annotations

import numpy as np
import warp as wp

from gbx_lightning.emu import render
from tests import _render_native_kernels as kernels

BUILDS = [kernels, kernels.generic_build()]   # -march=native, generic CPU


@wp.kernel(enable_backward=False)
def _tile_rows_kernel(vram: wp.array(dtype=wp.uint8), bits: wp.array(dtype=wp.uint64),
                      dest: wp.array(dtype=wp.uint8), args: wp.array2d(dtype=wp.int32),
                      stores: wp.array(dtype=wp.int32)):
    i = wp.tid()
    a = args[i]
    render._tile_rows_at(wp.uint64(vram.ptr), wp.uint64(bits.ptr), wp.uint64(dest.ptr) + wp.uint64(i * 200 + a[0]),
                         a[1], a[2], a[3], a[4], a[5])
    stores[i] = render.tile_stores_unaligned()


def _even_bytes_reference(a, b):
    packed = np.concatenate([a.view(np.uint8).reshape(-1, 8)[:, ::2], b.view(np.uint8).reshape(-1, 8)[:, ::2]],
                            axis=1)
    return np.ascontiguousarray(packed).view(np.uint64).ravel()


def test_even_bytes_pair_packs_pixels_0_2_4_6_of_each_word():
    rng = np.random.default_rng(7)
    a = rng.integers(0, 2**64, 200, dtype=np.uint64)
    b = rng.integers(0, 2**64, 200, dtype=np.uint64)
    expected = _even_bytes_reference(a, b)
    # a hand-checked case: bytes 0..7 = 0..7 and 8..15 -> 0 2 4 6 8 10 12 14
    a[0], b[0] = np.uint64(0x0706050403020100), np.uint64(0x0F0E0D0C0B0A0908)
    expected[0] = np.uint64(0x0E0C0A0806040200)
    for kernel in (build.even_bytes_pair for build in BUILDS):
        out = wp.zeros(200, dtype=wp.uint64)
        wp.launch(kernel, dim=200, inputs=[wp.array(a, dtype=wp.uint64), wp.array(b, dtype=wp.uint64), out])
        np.testing.assert_array_equal(out.numpy(), expected, err_msg=kernel.module.name)


def test_tile_rows_at_stores_each_row_at_any_byte_offset():
    rng = np.random.default_rng(8)
    vram = rng.integers(0, 256, 0x2000, dtype=np.uint8)
    n_cases = 24
    # dest offset 0..7 (alignment), map row $9800/$9C00 + 32 * row, row_base for both tile
    # data areas (rows 0..7, signed area at pair $400), tile_xor 0/$80, start column with wrap
    args = np.stack([np.arange(n_cases) % 8,
                     rng.choice([0x1800, 0x1C00], n_cases) + 32 * rng.integers(0, 32, n_cases),
                     rng.integers(0, 8, n_cases) + rng.choice([0, 0x400], n_cases),
                     rng.choice([0, 0x80], n_cases), rng.integers(0, 32, n_cases),
                     rng.integers(0, 22, n_cases)], axis=1).astype(np.int32)
    dest = wp.array(np.full(n_cases * 200, 0xEE, np.uint8), dtype=wp.uint8)
    stores = wp.zeros(n_cases, dtype=wp.int32)
    wp.launch(_tile_rows_kernel, dim=n_cases, inputs=[wp.array(vram, dtype=wp.uint8),
                                                      wp.array(render.BIT_BYTES, dtype=wp.uint64), dest,
                                                      wp.array(args, dtype=wp.int32), stores])
    out = dest.numpy().reshape(n_cases, 200)
    assert (stores.numpy() == 1).all(), "a CPU build must take the unaligned stores"
    for i, (off, map_row, row_base, tile_xor, col, n) in enumerate(args):
        expected = np.full(200, 0xEE, np.uint8)
        for t in range(n):
            tile = int(vram[map_row + (col + t) % 32]) ^ tile_xor
            lo, hi = vram[2 * row_base + 16 * tile], vram[2 * row_base + 16 * tile + 1]
            # pixel x of the row: bit 7 - x of each plane (Pan Docs, Tile Data)
            expected[off + 8 * t: off + 8 * t + 8] = [((lo >> (7 - x)) & 1) | (((hi >> (7 - x)) & 1) << 1)
                                                      for x in range(8)]
        np.testing.assert_array_equal(out[i], expected, err_msg=f"case {i}: {args[i]}")


def test_objects_covering_sets_bit_i_for_objects_whose_rows_cover_the_line():
    rng = np.random.default_rng(9)
    n = 64
    oam = rng.integers(0, 256, (n, 160), dtype=np.uint8)
    oam[:, 0::4] = rng.integers(0, 176, (n, 40))          # Y: on and off screen, both edges
    oam[0, 0::4] = 16                                     # case 0: every object starts on line 0
    ly = rng.integers(0, 144, n)
    ly[0] = 0
    h = rng.choice([8, 16], n)
    lines = np.stack([ly + 16, h], axis=1).astype(np.int32)
    y = oam[:, 0::4].astype(np.int64)
    # object i covers line ly iff Y - 16 <= ly < Y - 16 + h (Pan Docs, OAM: Y = line + 16)
    cover = (y - 16 <= ly[:, None]) & (ly[:, None] < y - 16 + h[:, None])
    expected = (cover.astype(np.uint64) << np.arange(40, dtype=np.uint64)).sum(axis=1).astype(np.uint64)
    assert expected[0] == (1 << 40) - 1
    for kernel in (build.objects_covering for build in BUILDS):
        out = wp.zeros(n, dtype=wp.uint64)
        wp.launch(kernel, dim=n, inputs=[wp.array(oam, dtype=wp.uint8), wp.array(lines, dtype=wp.int32), out])
        np.testing.assert_array_equal(out.numpy(), expected, err_msg=kernel.module.name)
