"""Joypad buttons by name, and input traces ("from frame F on, hold these buttons").

Bit order is the joypad register's own (Pan Docs, Joypad Input): P1's low nibble with P14
low reads Right, Left, Up, Down; with P15 low A, B, Select, Start. So a mask is
bit0 Right, bit1 Left, bit2 Up, bit3 Down, bit4 A, bit5 B, bit6 Select, bit7 Start.

A trace is a list of ``(frame, mask)`` changes with increasing frames, written in text as one
``FRAME BUTTONS`` pair per line (``-`` = no button; ``#`` starts a comment)::

    0   -
    40  right
    48  right+a
"""
from __future__ import annotations

import os
from pathlib import Path

BUTTON_BITS = {"right": 0, "left": 1, "up": 2, "down": 3, "a": 4, "b": 5, "select": 6, "start": 7}
RIGHT, LEFT, UP, DOWN, A, B, SELECT, START = (1 << i for i in range(8))

__all__ = ["BUTTON_BITS", "RIGHT", "LEFT", "UP", "DOWN", "A", "B", "SELECT", "START",
           "buttons_mask", "buttons_name", "parse_trace", "read_trace", "trace_segments"]


def buttons_mask(spec) -> int:
    """'right+a' (or '-'/'' for none, an int 0..255 or its digits, or a list of names) -> bit mask."""
    if isinstance(spec, bool):
        raise ValueError(f"buttons: expected names joined by '+' (e.g. 'right+a') or a mask 0..255, got {spec!r}")
    if isinstance(spec, int):
        if not 0 <= spec <= 255:
            raise ValueError(f"buttons: a mask must be in 0..255, got {spec}")
        return spec
    if isinstance(spec, str) and spec.strip().isdigit():
        return buttons_mask(int(spec))
    names = spec if isinstance(spec, (list, tuple)) else str(spec).lower().replace(" ", "").split("+")
    mask = 0
    for name in names:
        name = str(name).lower()
        if name in ("", "-", "none", "noop"):
            continue
        if name not in BUTTON_BITS:
            raise ValueError(f"buttons: unknown button {name!r} in {spec!r}; expected names from "
                             f"{list(BUTTON_BITS)} joined by '+'")
        mask |= 1 << BUTTON_BITS[name]
    return mask


def buttons_name(mask: int) -> str:
    """The inverse of buttons_mask: 0x11 -> 'right+a', 0 -> '-'."""
    names = [n for n, bit in BUTTON_BITS.items() if mask >> bit & 1]
    return "+".join(names) if names else "-"


def parse_trace(text: str, name: str = "trace") -> list[tuple[int, int]]:
    """Trace text -> [(frame, mask), ...] starting at frame 0 (a missing frame-0 line = no buttons)."""
    changes: list[tuple[int, int]] = []
    for lineno, line in enumerate(text.splitlines(), 1):
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        if len(words) != 2 or not words[0].isdigit():
            raise ValueError(f"{name}:{lineno}: expected 'FRAME BUTTONS' (e.g. '40 right+a'), got {line.strip()!r}")
        frame = int(words[0])
        if changes and frame <= changes[-1][0]:
            raise ValueError(f"{name}:{lineno}: frames must increase, got {frame} after {changes[-1][0]}")
        try:
            changes.append((frame, buttons_mask(words[1])))
        except ValueError as err:
            raise ValueError(f"{name}:{lineno}: {err}") from None
    if not changes or changes[0][0] != 0:
        changes.insert(0, (0, 0))
    return changes


def read_trace(source, name: str = "trace") -> list[tuple[int, int]]:
    """A trace from a file path, trace text, or a list of (frame, buttons) pairs (buttons as
    names or masks), checked and normalised to [(frame, mask), ...] from frame 0."""
    if isinstance(source, (str, os.PathLike)):
        text = os.fspath(source)
        if "\n" in text or (text[:1].isdigit() and " " in text.strip()):   # trace text, e.g. "0 select"
            return parse_trace(text, name)
        if not os.path.exists(text):
            raise FileNotFoundError(f"{name}: no trace file at {text!r}")
        return parse_trace(Path(text).read_text(), text)
    if not isinstance(source, (list, tuple)):
        raise TypeError(f"{name}: expected a trace file, trace text or a list of [frame, buttons] pairs, "
                        f"got {type(source).__name__}")
    changes = []
    for i, item in enumerate(source):
        if not isinstance(item, (list, tuple)) or len(item) != 2 or isinstance(item[0], bool) \
                or not isinstance(item[0], int) or item[0] < 0:
            raise ValueError(f"{name}[{i}]: expected [frame >= 0, buttons], got {item!r}")
        if changes and item[0] <= changes[-1][0]:
            raise ValueError(f"{name}[{i}]: frames must increase, got {item[0]} after {changes[-1][0]}")
        try:
            changes.append((int(item[0]), buttons_mask(item[1])))
        except ValueError as err:
            raise ValueError(f"{name}[{i}]: {err}") from None
    if not changes or changes[0][0] != 0:
        changes.insert(0, (0, 0))
    return changes


def trace_segments(changes: list[tuple[int, int]], frames: int) -> list[tuple[int, int]]:
    """(frame count, mask) runs covering frames 0..frames-1 of a trace."""
    bounds = [f for f, _ in changes[1:]] + [frames]
    return [(min(end, frames) - start, mask) for (start, mask), end in zip(changes, bounds)
            if min(end, frames) > start]
