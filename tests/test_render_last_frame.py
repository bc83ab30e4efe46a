"""run_frames draws only the last frame of a call (earlier frames would be overwritten unseen).

What a user can see must not depend on how frames are grouped into calls: after N frames
run as one call, frame(), obs(), the registers and memory equal those after N one-frame
calls, including a ROM that switches the LCD off and on (blank screen, blank first frame
after LCD on) at points that fall inside a call, at its last frame, or between calls.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gbx_lightning.emu import VecGameBoy
from gbx_lightning.roms import build_rom
from gbx_lightning.roms.asm import assemble

ROM_DIR = Path(__file__).resolve().parent / "roms"

# LCD on for 2 frames (a checkerboard), off for about 1.5 frames, on again, forever.
LCD_TOGGLE = """
    title "LCDTOGGLE"
    include "testlib.asm"
main:
    ld sp, STACK_TOP
    call lib_init
    di
    call lcd_off
    ld hl, $8010            ; tile 1: solid shade 3
    ld b, 16
.tile:
    ld a, $FF
    ld [hl+], a
    dec b
    jr nz, .tile
    ld hl, $9800            ; BG map: tiles 0 and 1 alternating
    ld bc, $0400
.map:
    ld a, l
    and 1
    ld [hl+], a
    dec bc
    ld a, b
    or c
    jr nz, .map
    ld a, $E4
    ldh [$47], a
.cycle:
    ld a, $91
    ldh [$40], a            ; LCD on
    ld d, 3                 ; three VBlank starts: the blank first frame, then two drawn
.frames:
    ldh a, [$44]
    cp 144
    jr nz, .frames
.leave:
    ldh a, [$44]
    cp 144
    jr z, .leave
    dec d
    jr nz, .frames
    call lcd_off
    ld bc, 5000             ; LCD off for ~1.5 frames (5000 x 24 T-cycles)
.off:
    dec bc
    ld a, b
    or c
    jr nz, .off
    jr .cycle
"""


def _lcd_toggle_rom() -> bytes:
    return assemble(LCD_TOGGLE, origin_file=str(ROM_DIR / "lcd_toggle.asm"), include_dirs=(str(ROM_DIR),))


def _state(gb: VecGameBoy, render: str) -> tuple:
    obs = gb.obs().numpy().copy()
    frame = gb.frame() if render == "full" else None
    return frame, obs, gb.registers(0), gb.read_memory(0, 0xC000, 0x2000)


@pytest.mark.parametrize("rom_name", ["lcd_toggle", "orchard"])
@pytest.mark.parametrize("render", ["full", "obs"])
def test_one_call_of_n_frames_equals_n_calls_of_one(rom_name, render):
    rom = _lcd_toggle_rom() if rom_name == "lcd_toggle" else build_rom("orchard")
    buttons = np.full(2, 0x01, np.uint8)                 # Right held (orchard moves)
    grouped, single = VecGameBoy(rom, 2), VecGameBoy(rom, 2)
    seen_blank = seen_drawn = False
    for call in (1, 3, 2, 5, 1, 4, 7, 2, 3, 6):          # call ends land on every LCD phase
        grouped.run_frames(call, buttons=buttons, render=render)
        for _ in range(call):
            single.run_frames(1, buttons=buttons, render=render)
        a, b = _state(grouped, render), _state(single, render)
        if render == "full":
            np.testing.assert_array_equal(a[0], b[0])
        np.testing.assert_array_equal(a[1], b[1])
        assert a[2] == b[2] and a[3] == b[3]
        seen_blank |= not a[1][0].any()
        seen_drawn |= bool(a[1][0].any())
    assert seen_drawn
    if rom_name == "lcd_toggle":
        assert seen_blank                                # some calls ended on a blank screen


def test_recorded_launch_takes_every_changed_argument():
    """run_frames re-packs only the arguments that changed since its recorded launch:
    frames, buttons (numpy, a new wp.array, the same wp.array refilled), release_after and
    the render mode must each take effect as a fully packed launch does."""
    import warp as wp

    from gbx_lightning.emu.cpu import kernel_for, kernel_inputs

    rom = build_rom("orchard")
    recorded, direct = VecGameBoy(rom, 2), VecGameBoy(rom, 2)
    held = wp.array(np.array([0x01, 0x10], np.uint8), dtype=wp.uint8)
    calls = [(3, np.array([0x01, 0x02], np.uint8), None, "obs"),
             (2, np.array([0x02, 0x01], np.uint8), 1, "obs"),
             (4, held, None, "full"),
             (1, held, 0, "full"),
             (5, wp.array(np.array([0x04, 0x08], np.uint8), dtype=wp.uint8), 2, "none"),
             (2, np.array([0x01, 0x01], np.uint8), None, "full")]
    for i, (frames, buttons, release, render) in enumerate(calls):
        if i == 3:
            held.assign(np.array([0x02, 0x20], np.uint8))   # same array, new contents
        recorded.run_frames(frames, buttons=buttons, release_after=release, render=render)
        b = buttons if isinstance(buttons, wp.array) else wp.array(buttons, dtype=wp.uint8)
        wp.launch(kernel_for(direct.device), dim=2, inputs=kernel_inputs(direct._m, direct._ref(render))
                  + [frames, b, 1, -1 if release is None else release])
        assert recorded.registers(0) == direct.registers(0) and recorded.registers(1) == direct.registers(1)
        assert recorded.read_memory(1, 0xC000, 0x2000) == direct.read_memory(1, 0xC000, 0x2000)
        np.testing.assert_array_equal(recorded.obs().numpy(), direct.obs().numpy())
