"""The OAM scan (render.objects_on_line) and the objects' mode-3 penalty
(render.objects_mode3_penalty) against plain-Python statements of the rules
(Pan Docs, "OAM Scan" and "Mode 3 length") on random and crowded OAM.
"""

from __future__ import annotations

import numpy as np
import pytest
import warp as wp

from gbx_lightning.emu import render


@wp.kernel(enable_backward=False)
def _scan_kernel(oam: wp.array2d(dtype=wp.uint8), lcdc: wp.array(dtype=wp.int32), scx: wp.array(dtype=wp.int32),
                 win_start: wp.array(dtype=wp.int32), masks: wp.array2d(dtype=wp.uint64),
                 dots: wp.array2d(dtype=wp.int32)):
    env = wp.tid()
    for ly in range(144):
        sel = render.objects_on_line(oam, env, ly, lcdc[env])
        masks[env, ly] = sel
        dots[env, ly] = render.objects_mode3_penalty(oam, env, sel, scx[env], win_start[env], -1)


def _ref_selection(oam: np.ndarray, ly: int, lcdc: int) -> list[int]:
    """OAM order, the first 10 objects whose rows cover ly; none with LCDC.1 off."""
    if not lcdc & 0x02:
        return []
    h = 16 if lcdc & 0x04 else 8
    out = []
    for i in range(40):
        top = int(oam[4 * i]) - 16
        if top <= ly < top + h:
            out.append(i)
            if len(out) == 10:
                break
    return out


def _ref_penalty(oam: np.ndarray, sel: list[int], scx: int, win_start: int) -> int:
    """6 dots per object with X < 168; the first object (smallest offset, then OAM
    order) whose leftmost pixel lies in a given BG/window tile adds 5 - offset (>= 0);
    objects at X = 0 lie in the BG tile left of the screen (offset SCX mod 8) and add
    min(SCX mod 8, 5) once between them (so one alone costs 11 whatever SCX: SameBoy
    issue 293, measured on hardware; ppu_dots.dots_line's pipeline gives the same)."""
    objs = []
    x0 = 0
    for i in sel:
        x = int(oam[4 * i + 1])
        if x >= 168:
            continue
        sx = x - 8
        if x == 0:
            x0 = min(scx & 7, 5)
        if sx >= win_start:
            p = sx - win_start
            objs.append((("win", p >> 3), p & 7))
        else:
            p = sx + (scx & 7) + 8
            objs.append((("bg", p >> 3), p & 7))
    dots = x0
    for j, (key, off) in enumerate(objs):
        dots += 6
        first = all(not (k == key and (o < off or (o == off and m < j)))
                    for m, (k, o) in enumerate(objs) if m != j)
        if first:
            dots += max(0, 5 - off)
    return dots


@pytest.fixture(scope="module")
def scanned():
    rng = np.random.default_rng(4)
    n = 48
    oam = rng.integers(0, 256, (n, 160), dtype=np.uint8)
    oam[:, 0::4] = rng.integers(0, 170, (n, 40))
    oam[n // 2:, 0::4] = rng.integers(16, 40, (n - n // 2, 40))            # crowded lines: the 10 limit
    oam[n // 2:, 1::4] = rng.choice([0, 1, 7, 8, 9, 12, 13, 100, 160, 167, 168, 200], (n - n // 2, 40))
    lcdc = (rng.integers(0, 256, n) | 0x80).astype(np.int32)
    scx = rng.integers(0, 256, n).astype(np.int32)
    win_start = np.where(rng.random(n) < 0.5, 1 << 20, rng.integers(-7, 160, n)).astype(np.int32)
    masks = wp.zeros((n, 144), dtype=wp.uint64)
    dots = wp.zeros((n, 144), dtype=wp.int32)
    wp.launch(_scan_kernel, dim=n, inputs=[wp.array(oam, dtype=wp.uint8), wp.array(lcdc), wp.array(scx),
                                            wp.array(win_start), masks, dots])
    return oam, lcdc, scx, win_start, masks.numpy(), dots.numpy()


def test_selection_is_the_first_ten_in_oam_order(scanned):
    oam, lcdc, _, _, masks, _ = scanned
    for e in range(len(oam)):
        for ly in range(144):
            want = sum(1 << i for i in _ref_selection(oam[e], ly, int(lcdc[e])))
            assert int(masks[e, ly]) == want, f"env {e} line {ly}"
    assert (np.vectorize(lambda m: bin(int(m)).count("1"))(masks) == 10).any(), "the 10 limit was never hit"


def test_mode3_penalty_matches_the_rule(scanned):
    oam, lcdc, scx, win_start, _, dots = scanned
    for e in range(len(oam)):
        for ly in range(144):
            sel = _ref_selection(oam[e], ly, int(lcdc[e]))
            assert dots[e, ly] == _ref_penalty(oam[e], sel, int(scx[e]), int(win_start[e])), f"env {e} line {ly}"


# ------------------------------------------------- the selection kept from mode 3 start

from gbx_lightning.emu import ppu  # noqa: E402
from gbx_lightning.emu.state import (T_DMA_START, MachineRef, machine_ptr, machine_ref, r32_row,  # noqa: E402
                                      r64_row)


@wp.kernel(enable_backward=False)
def _selection_kernel(ms: MachineRef, ly: int, lcdc: int, t: wp.int64, out: wp.array(dtype=wp.uint64)):
    m = machine_ptr(ms)
    out[0] = ppu._line_selection(m, 0, r32_row(m, 0), r64_row(m, 0), ly, lcdc, t)


def test_kept_selection_is_used_only_while_oam_cannot_have_changed():
    """The renderer reuses the mask made as mode 3 started unless an OAM DMA started after
    that, LCDC.1/LCDC.2 changed, or the mask belongs to another mode 3: then it scans again."""
    from gbx_lightning.emu import VecGameBoy
    from gbx_lightning.roms import build_rom

    gb = VecGameBoy(build_rom("orchard"), 1)
    a = {name: gb.state_array(name) for name in gb.state_names}
    oam = np.zeros(160, np.uint8)
    oam[0::4] = 200                     # nothing on any line ...
    oam[4 * 7] = 16 + 30                # ... but object 7 on lines 30-37
    a["oam"].assign(oam[None])
    start, length, ly = 1_000_000, 200, 33
    kept = (1 << 3) | (1 << 25)         # a mask the scan would not give: proves it was reused
    r32 = a["r32"].numpy()
    r64 = a["r64"].numpy()

    def run(lcdc, dma_start=0, tag=start, mode3_len=length):
        r32[0, ppu.R_OBJ_SEL_LO] = (kept & 0xFFFFF) | (1 << 20) | (0x02 << 20)   # made with LCDC.1 on, 8x8
        r32[0, ppu.R_OBJ_SEL_HI] = kept >> 20
        r32[0, ppu.R_OBJ_SEL_T] = tag & 0x7FFFFFFF
        r32[0, ppu.R_MODE3_LEN] = mode3_len
        r64[0, T_DMA_START] = dma_start
        a["r32"].assign(r32)
        a["r64"].assign(r64)
        out = wp.zeros(1, dtype=wp.uint64)
        wp.launch(_selection_kernel, dim=1, inputs=[machine_ref(gb._m), ly, lcdc, start + length, out])
        return int(out.numpy()[0])

    assert run(0x83) == kept                                # same mode 3, no DMA since: reused
    assert run(0x83, dma_start=start - 600) == kept         # a DMA that started before: reused
    assert run(0x83, dma_start=start + 8) == 1 << 7         # a DMA written after the start: new scan
    assert run(0x87) == 1 << 7                              # LCDC.2 changed (8x16): new scan
    assert run(0x81) == 0                                   # LCDC.1 now off: no objects
    assert run(0x83, tag=start - 456) == 1 << 7             # kept from another line's mode 3
