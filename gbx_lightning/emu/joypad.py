"""P1/JOYP ($FF00): select bits 4 (directions) and 5 (buttons), active low; both selected
-> lines ANDed. IF bit 4 is raised on any high-to-low transition of a P1 input line, whether
caused by a press (between frames / at the release frame) or by a select-bit write."""
import warp as wp

from .interrupts import raise_if
from .state import R_BUTTONS, R_JOYP_LINES, R_STOPPED, Machine


@wp.func
def joypad_lines(m: Machine, env: int) -> int:
    """Low nibble of P1 (1 = not pressed or not selected)."""
    sel = int(m.io[env, 0])
    pressed = m.r32[env, R_BUTTONS]
    lines = 0xF
    if (sel & 0x10) == 0:
        lines = lines & ((pressed & 0xF) ^ 0xF)
    if (sel & 0x20) == 0:
        lines = lines & (((pressed >> 4) & 0xF) ^ 0xF)
    return lines


@wp.func
def joypad_update(m: Machine, env: int):
    """Raise the joypad interrupt on a falling input line; a press also ends STOP."""
    new = joypad_lines(m, env)
    old = m.r32[env, R_JOYP_LINES]
    if (old & (new ^ 0xF)) != 0:
        raise_if(m, env, 16)
        m.r32[env, R_STOPPED] = 0
    m.r32[env, R_JOYP_LINES] = new


@wp.func
def p1_read(m: Machine, env: int) -> int:
    return 0xC0 | (int(m.io[env, 0]) & 0x30) | joypad_lines(m, env)


@wp.func
def set_buttons(m: Machine, env: int, buttons: int):
    m.r32[env, R_BUTTONS] = buttons & 0xFF
    joypad_update(m, env)
