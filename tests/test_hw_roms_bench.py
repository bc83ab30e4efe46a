"""Smoke test of tools/bench_emu.py: it runs end to end and prints its table (no timing is asserted)."""
from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "tools" / "bench_emu.py"


def test_bench_emu_prints_a_row_per_configuration(capsys):
    pytest.importorskip("warp")
    spec = importlib.util.spec_from_file_location("bench_emu", BENCH)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    bench.main(["--envs", "2", "--renders", "full,none", "--env-frames", "4", "--peer-frames", "3",
                "--repeats", "1"])
    out = capsys.readouterr().out
    assert "VecGameBoy    2 envs, render=full" in out and "VecGameBoy    2 envs, render=none" in out
    if "unavailable" not in out:
        assert "PyBoy (render on)" in out and "gambatte (render on)" in out
        rows = [line for line in out.splitlines() if line.startswith(("VecGameBoy", "env step", "PyBoy", "gambatte"))]
        assert len(rows) == 4 + 2  # 2 render modes, 2 env-step rows, 2 peers
        for row in rows:  # every row has ratios against the faster peer; ours also a paired one
            assert re.search(r" \d+\.\d\dx .* \d+\.\d\dx", row), row
            if not row.startswith(("PyBoy", "gambatte")):
                assert re.search(r"\d+\.\d\dx \(\d+\.\d\d\.\.\d+\.\d\d\)$", row), row


def test_bench_emu_rejects_unknown_buttons():
    spec = importlib.util.spec_from_file_location("bench_emu", BENCH)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    with pytest.raises(SystemExit, match="--buttons: expected names"):
        bench.main(["--buttons", "right+turbo"])
