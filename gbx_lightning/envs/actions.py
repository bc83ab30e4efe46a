"""Action codecs: which buttons each discrete action holds. All named codecs live here.

An action index selects a button mask (``gbx_lightning.emu.buttons``: bit0 Right .. bit7
Start) that the env holds for ``release_after_frames`` frames of each step. Start is in
the 7- and 8-action sets because many games need it (menus, "press start"); Select is
left out (rarely needed in play, and it often opens debug or option screens).
"""
from __future__ import annotations

from typing import Literal

import numpy as np

from gbx_lightning.emu.buttons import buttons_mask, buttons_name

from .base import OptionError

__all__ = ["ACTION_CODECS", "CodecName", "resolve_codec"]

ACTION_CODECS: dict[str, tuple[str, ...]] = {
    # the D-pad alone: for games where standing still is never useful
    "dpad": ("right", "left", "up", "down"),
    # the D-pad and "press nothing": top-down movement games (the built-in task)
    "dpad_noop": ("-", "right", "left", "up", "down"),
    # the D-pad, A, B and Start: the usual 7-action Game Boy set
    "dpad_ab_start": ("right", "left", "up", "down", "a", "b", "start"),
    # the same plus "press nothing": e.g. Pokemon Red (waiting is a real choice there)
    "dpad_ab_start_noop": ("-", "right", "left", "up", "down", "a", "b", "start"),
}

# the names, as a type: a config's action_codec is checked against it by the parser
CodecName = Literal["dpad", "dpad_noop", "dpad_ab_start", "dpad_ab_start_noop"]
assert set(CodecName.__args__) == set(ACTION_CODECS)


def resolve_codec(spec) -> tuple[tuple[str, ...], np.ndarray]:
    """A codec name from ACTION_CODECS, or a list of button specs ('right+a', '-', or masks),
    -> (action names, uint8 masks [A]). OptionError("action_codec", ...) (a ValueError) for anything else."""
    if isinstance(spec, str):
        if spec not in ACTION_CODECS:
            raise OptionError("action_codec", f"must be one of {sorted(ACTION_CODECS)} or a list of button "
                                              f"combinations (e.g. ['-', 'right', 'a+right']), got {spec!r}")
        spec = ACTION_CODECS[spec]
    if not isinstance(spec, (list, tuple)) or not spec:
        raise OptionError("action_codec", f"must be a codec name or a non-empty list of button combinations, "
                                          f"got {spec!r}")
    try:
        masks = np.array([buttons_mask(s) for s in spec], np.uint8)
    except ValueError as err:
        raise OptionError("action_codec", f"has a bad entry: {err}") from None
    return tuple(buttons_name(int(m)) for m in masks), masks
