"""gbx_lightning.emu: the DMG Game Boy in Warp kernels, one kernel thread per Game Boy.
No torch import here.

    VecGameBoy(rom, num_envs, device="cpu", boot_rom=None)
        .reset(mask=None) .run_frames(frames, buttons=None, release_after=None, render="full")
        .frame() .obs() .serial_output(env) .registers(env) .read_memory(env, addr, length)
        .snapshot() .restore(snap, mask=None) .state_bytes_per_env
    conformance.run_sm83_cases(cases)          # SingleStepTests format, flat 64 KiB bus
    python -m gbx_lightning.emu run ROM [--frames N] [--print-serial] [--screenshot PNG] [--bench]

Hardware map: cpu.py (SM83 + the scheduler kernel), opcodes.py (the opcode table as data),
bus.py (address space, I/O dispatch), interrupts.py, timer.py, serial.py, joypad.py,
dma.py, ppu.py (PPU timing), render.py (scanline renderer), cartridge.py / mbc.py
(cartridges), state.py (structure-of-arrays layout, post-boot values), machine.py
(VecGameBoy), savestate.py (masked per-env copies), conformance.py.

Timing model: a T-cycle counter per env (int64); every CPU bus access is one M-cycle at
its place in the instruction; peripherals catch up lazily when their registers are touched
and at scheduled events; a frame ends at VBlank (70224 T-cycles; see run_frames);
HALT/STOP sleep straight to events.
"""
from .machine import Snapshot, VecGameBoy

__all__ = ["VecGameBoy", "Snapshot"]
