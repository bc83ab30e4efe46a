"""The per-env bookkeeping words: every r32/r64 slot is named once, in gbx_lightning/emu/state.py."""
from __future__ import annotations

import pytest

from gbx_lightning.emu import state


def test_every_slot_is_inside_its_array_and_used_once():
    state.check_slot_map()                      # (also run at import)
    slots = state.slot_map()
    assert slots["R_"]["R_IDLE"] < state.NUM_R32 and slots["T_"]["T_IDLE_SKIPS"] < state.NUM_R64
    for prefix in ("R_", "T_"):
        values = list(slots[prefix].values())
        assert len(values) == len(set(values)), prefix


def test_a_colliding_slot_is_caught(monkeypatch):
    monkeypatch.setattr(state, "R_SOMETHING_NEW", state.R_LY, raising=False)
    with pytest.raises(AssertionError, match="R_LY and R_SOMETHING_NEW|R_SOMETHING_NEW and R_LY"):
        state.check_slot_map()
    monkeypatch.setattr(state, "R_SOMETHING_NEW", state.NUM_R32, raising=False)
    with pytest.raises(AssertionError, match="outside"):
        state.check_slot_map()
