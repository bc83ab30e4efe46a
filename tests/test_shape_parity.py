"""The machine kernel's CUDA shape (cpu.machine_kernel_staged, what a GPU runs) ends every launch in the
same machine state as the CPU shape (cpu.machine_kernel), checked on the CPU: both kernels are built for
the CPU device in this process, two machines run the same ROM with the same random buttons, one per
shape, and every state array (registers, clocks, WRAM, HRAM, VRAM, OAM, I/O, cartridge RAM, MBC, the
PPU's, sound unit's and serial's words, the frame) is compared after each launch (tools/shape_diff.py,
which runs the same comparison at any size). On every ROM in tests/roms and orchard, and on random
programs aimed at what the shapes do differently (tests/_shape_programs.py: interrupts and HALT, EI/DI,
MBC banks switched before calls, code in RAM, every addressing mode of the I/O registers), and ROMs of
random bytes.

Before the fix in tests/test_warp_scope.py's docstring, apu_lazy differed here and the random programs
crashed the process (docs/gpu.md); tests/roms/far_call.asm failed on the CUDA shape."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tools"))

import shape_diff  # noqa: E402

FRAMES, ENVS, STEP = 40, 2, 4      # 10 launches a ROM, render none / obs / full in turn
PROGRAMS, PROGRAM_FRAMES = range(6), 40
CHAOS = (0, 1, 2, 1084, 2014, 2030)   # (the last three differed in the idle words before d669452: IDLE_LOOPS below)


def _differs(rom: bytes, frames: int, envs: int) -> str:
    at, pair, diff = shape_diff.run_pair(rom, frames, envs, step=STEP)
    kernels = [rec[0].kernel.key for gb in pair for rec in gb._launches.values()]
    assert {k.split("_")[-1] for k in kernels} == {"kernel", "staged"}, f"not one machine per shape: {kernels}"
    return "" if at is None else f"after {at} frames: {diff}\n{shape_diff.describe(*pair, diff)}"


@pytest.mark.parametrize("name", shape_diff.test_rom_names())
def test_test_rom_runs_alike_in_both_shapes(name):
    pytest.importorskip("warp")
    from bench_emu import load_rom
    from gbx_lightning.roms.asm import AsmError

    try:
        rom = load_rom(name)[0]
    except AsmError as err:
        if "undefined symbol" in str(err):
            pytest.skip(f"{name} is a template, not a ROM of its own ({err})")
        raise
    problem = _differs(rom, FRAMES, ENVS)
    assert not problem, f"{name}: the CUDA shape differs {problem}"


@pytest.mark.parametrize("seed", PROGRAMS)
def test_random_program_runs_alike_in_both_shapes(seed):
    pytest.importorskip("warp")
    from _shape_programs import program
    from gbx_lightning.roms.asm import assemble

    problem = _differs(assemble(program(seed)), PROGRAM_FRAMES, 4)
    assert not problem, f"random program {seed} (tests/_shape_programs.py): the CUDA shape differs {problem}"


@pytest.mark.parametrize("seed", CHAOS)
def test_random_bytes_run_alike_in_both_shapes(seed):
    pytest.importorskip("warp")
    from _shape_programs import chaos_rom

    problem = _differs(chaos_rom(seed), PROGRAM_FRAMES, 4)
    assert not problem, f"chaos ROM {seed} (tests/_shape_programs.py): the CUDA shape differs {problem}"


# Loops that poll LY and also read memory the two shapes reach by different paths: both must leave
# the idle-loop check's state (emu/idle.py) alike, or one shape skips the loop's repeated iterations
# and the other does not (the same registers and memory, other idle words). Found by `python
# tools/shape_diff.py --chaos 100 --seed 1000` (chaos ROMs 1084, 2014, 2030).
IDLE_LOOPS = {
    # POP from a table in ROM (a way games read tables fast): the CPU shape's stack reads sent ROM
    # to bus_read, which resets the check's state; the CUDA shape's read8 reads ROM directly
    "stack_in_rom": """
main:
    ldh a, [$44]
    ld sp, table
    pop hl
    pop de
    jr main
table:
    db $12, $34, $56, $78
""",
    # an echo RAM read: the CUDA shape's read_data8 sends it to bus_read (which resets the check's
    # state); the CPU shape reads it as WRAM
    "echo_read": """
main:
    ldh a, [$44]
    ld a, [$E123]
    jr main
""",
}


@pytest.mark.parametrize("name", list(IDLE_LOOPS))
def test_polling_loops_leave_the_idle_check_alike_in_both_shapes(name):
    pytest.importorskip("warp")
    from gbx_lightning.roms.asm import assemble

    rom = assemble(f'    title "IDLELOOP"\n    org $0100\n    nop\n    jp main\n    org $0150\n{IDLE_LOOPS[name]}')
    problem = _differs(rom, 12, 2)
    assert not problem, f"{name}: the CUDA shape differs {problem}"
