"""P1/JOYP ($FF00): select bits 4 (directions) and 5 (buttons), active low; both selected
-> lines ANDed. IF bit 4 is raised on any high-to-low transition of a P1 input line, whether
caused by a press (between frames / at the release frame) or by a select-bit write.

P1 is computed, never stored: it changes only when the CPU writes the select bits or when
the buttons change at a frame boundary, so the instruction loop reads and writes it on
env rows (p1_value, p1_write) without a call or a catch-up."""
import warp as wp

from .state import (IO, R32, R_BUTTONS, R_JOYP_LINES, R_STOPPED, MachinePtr, io_row, machine,
                    r32_row)


@wp.func
def p1_lines(io: IO, r32: R32) -> int:
    """Low nibble of P1 (1 = not pressed or not selected)."""
    sel = int(io[0])
    pressed = r32[R_BUTTONS]
    lines = 0xF
    if (sel & 0x10) == 0:
        lines = lines & ((pressed & 0xF) ^ 0xF)
    if (sel & 0x20) == 0:
        lines = lines & (((pressed >> 4) & 0xF) ^ 0xF)
    return lines


@wp.func
def p1_value(io: IO, r32: R32) -> int:
    """P1 as read: bits 7-6 read 1, 5-4 the select bits, 3-0 the lines."""
    return 0xC0 | (int(io[0]) & 0x30) | p1_lines(io, r32)


@wp.func
def p1_update(io: IO, r32: R32) -> int:
    """After a select or button change: raise the joypad interrupt on a falling input line
    (a press also ends STOP). Returns 1 if a line fell."""
    new = p1_lines(io, r32)
    fell = int(0)
    if (r32[R_JOYP_LINES] & (new ^ 0xF)) != 0:
        io[0x0F] = wp.uint8(int(io[0x0F]) | 16)    # IF bit 4 (interrupts.raise_if)
        r32[R_STOPPED] = 0
        fell = 1
    r32[R_JOYP_LINES] = new
    return fell


@wp.func
def p1_write(io: IO, r32: R32, ie: int, value: int) -> int:
    """The CPU writes P1's select bits. Returns 1 if the scheduler must look again: a line
    fell and the joypad interrupt is enabled in IE (it may be taken, or end a HALT)."""
    io[0] = wp.uint8((value & 0x30) | 0xC0)
    fell = p1_update(io, r32)
    return fell & (ie >> 4)


@wp.func
def joypad_lines(ms: MachinePtr, env: int) -> int:
    """Low nibble of P1 (1 = not pressed or not selected)."""
    return p1_lines(io_row(ms, env), r32_row(ms, env))


@wp.func
def joypad_update(ms: MachinePtr, env: int):
    """Raise the joypad interrupt on a falling input line; a press also ends STOP."""
    p1_update(io_row(ms, env), r32_row(ms, env))


@wp.func
def p1_read(ms: MachinePtr, env: int) -> int:
    return p1_value(io_row(ms, env), r32_row(ms, env))


@wp.func(inline=False)   # cold; one copy instead of one per caller (docs/gpu.md, Kernel footprint)
def set_buttons(ms: MachinePtr, env: int, buttons: int):
    m = machine(ms)
    m.r32[env, R_BUTTONS] = buttons & 0xFF
    joypad_update(ms, env)
