"""P1/JOYP ($FF00): select bits 4 (directions) and 5 (buttons), active low; both selected
-> lines ANDed. IF bit 4 is raised on any high-to-low transition of a P1 input line, whether
caused by a press (between frames / at the release frame) or by a select-bit write."""
import warp as wp

from .interrupts import raise_if
from .state import R_BUTTONS, R_JOYP_LINES, R_STOPPED, MachineRef


@wp.func
def joypad_lines(ms: MachineRef, env: int) -> int:
    """Low nibble of P1 (1 = not pressed or not selected)."""
    m = ms[0]
    sel = int(m.io[env, 0])
    pressed = m.r32[env, R_BUTTONS]
    lines = 0xF
    if (sel & 0x10) == 0:
        lines = lines & ((pressed & 0xF) ^ 0xF)
    if (sel & 0x20) == 0:
        lines = lines & (((pressed >> 4) & 0xF) ^ 0xF)
    return lines


@wp.func
def joypad_update(ms: MachineRef, env: int):
    """Raise the joypad interrupt on a falling input line; a press also ends STOP."""
    m = ms[0]
    new = joypad_lines(ms, env)
    old = m.r32[env, R_JOYP_LINES]
    if (old & (new ^ 0xF)) != 0:
        raise_if(ms, env, 16)
        m.r32[env, R_STOPPED] = 0
    m.r32[env, R_JOYP_LINES] = new


@wp.func
def p1_read(ms: MachineRef, env: int) -> int:
    m = ms[0]
    return 0xC0 | (int(m.io[env, 0]) & 0x30) | joypad_lines(ms, env)


@wp.func
def set_buttons(ms: MachineRef, env: int, buttons: int):
    m = ms[0]
    m.r32[env, R_BUTTONS] = buttons & 0xFF
    joypad_update(ms, env)
