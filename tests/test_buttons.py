"""Button names and input traces (emu/buttons.py) and the action codecs (envs/actions.py)."""

import numpy as np
import pytest

from gbx_lightning.emu.buttons import buttons_mask, buttons_name, read_trace, trace_segments
from gbx_lightning.envs.actions import ACTION_CODECS, resolve_codec


def test_masks_follow_the_joypad_register_order():
    # P1 low nibble with P14 low: Right Left Up Down; with P15 low: A B Select Start (Pan Docs)
    assert [buttons_mask(n) for n in ("right", "left", "up", "down", "a", "b", "select", "start")] == \
        [1, 2, 4, 8, 16, 32, 64, 128]
    assert buttons_mask("right+a") == 0x11 and buttons_mask("-") == 0 and buttons_mask(["up", "b"]) == 0x24
    assert buttons_name(0x11) == "right+a" and buttons_name(0) == "-"
    with pytest.raises(ValueError, match="unknown button 'jump'"):
        buttons_mask("right+jump")


def test_traces_from_text_lists_and_files(tmp_path):
    text = "# warm-up\n10 select\n12 -\n20 right+a\n"
    want = [(0, 0), (10, 64), (12, 0), (20, 17)]
    assert read_trace(text) == want
    assert read_trace([[10, "select"], [12, 0], [20, "right+a"]]) == want
    path = tmp_path / "t.trace"
    path.write_text(text)
    assert read_trace(str(path)) == want
    assert trace_segments(want, 25) == [(10, 0), (2, 64), (8, 0), (5, 17)]
    assert trace_segments(want, 11) == [(10, 0), (1, 64)]
    with pytest.raises(ValueError, match="frames must increase"):
        read_trace("5 a\n5 b\n")
    with pytest.raises(FileNotFoundError, match="no trace file"):
        read_trace(str(tmp_path / "missing.trace"))


def test_codecs():
    names, masks = resolve_codec("dpad_noop")
    assert names == ("-", "right", "left", "up", "down") and masks.tolist() == [0, 1, 2, 4, 8]
    names, masks = resolve_codec("dpad_ab_start")
    assert len(names) == 7 and masks.tolist() == [1, 2, 4, 8, 16, 32, 128]
    assert len(resolve_codec("dpad_ab_start_noop")[0]) == 8
    assert resolve_codec(["-", "a+right"])[1].tolist() == [0, 17]
    assert set(ACTION_CODECS) >= {"dpad", "dpad_noop", "dpad_ab_start", "dpad_ab_start_noop"}
    with pytest.raises(ValueError, match="action_codec must be one of"):
        resolve_codec("all")
    with pytest.raises(ValueError, match="unknown button"):
        resolve_codec(["right", "jump"])
    assert masks.dtype == np.uint8
