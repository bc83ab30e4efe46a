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


def test_bench_emu_suite_prints_a_row_per_rom(capsys):
    pytest.importorskip("warp")
    bench = _load()
    bench.main(["--suite", "--suite-roms", "idiom_ly,idiom_joypad", "--envs", "2", "--env-frames", "4",
                "--peer-frames", "3", "--repeats", "1"])
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith("idiom_")]
    assert [r.split()[0] for r in rows] == ["idiom_ly", "idiom_joypad"]
    if "unavailable" not in out:
        for row in rows:   # full and obs paired against gambatte
            assert len(re.findall(r"\d+\.\d\dx \(\d+\.\d\d\.\.\d+\.\d\d\)", row)) >= 2, row


def test_bench_emu_counters_run_in_a_counter_build():
    """--counters sets GBX_EMU_COUNTERS before the emulator is imported: a fresh process."""
    pytest.importorskip("warp")
    import subprocess
    import sys

    out = subprocess.run([sys.executable, str(BENCH), "--counters", "--rom", "idiom_ly", "--counter-frames", "8"],
                         capture_output=True, text=True, check=True).stdout
    row = [line for line in out.splitlines() if line.startswith("idiom_ly")]
    assert row, out
    instructions, run_ends = (float(x.replace(",", "")) for x in row[0].split()[1:3])
    assert instructions > 0 and run_ends >= 1


def _load():
    spec = importlib.util.spec_from_file_location("bench_emu", BENCH)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    return bench


def test_bench_emu_rejects_unknown_buttons():
    spec = importlib.util.spec_from_file_location("bench_emu", BENCH)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    with pytest.raises(SystemExit, match="--buttons: expected names"):
        bench.main(["--buttons", "right+turbo"])


def test_bench_emu_step_only_against_gambatte(capsys):
    """--step-only --peers gambatte: only the env-step rows, paired against gambatte alone (issue 38's
    ours / gambatte per core with frames read every --step-frames)."""
    pytest.importorskip("warp")
    bench = _load()
    bench.main(["--rom", "cpu_mix", "--envs", "2", "--renders", "obs", "--step-only", "--peers", "gambatte",
                "--step-frames", "2", "--env-frames", "4", "--peer-frames", "3", "--repeats", "1"])
    out = capsys.readouterr().out
    assert "VecGameBoy" not in out and "PyBoy" not in out
    rows = [line for line in out.splitlines() if line.startswith("env step")]
    assert len(rows) == 1 and "2 frames, 2 envs, render=obs" in rows[0], out
    if "unavailable" not in out:
        assert re.search(r"\d+\.\d\dx \(\d+\.\d\d\.\.\d+\.\d\d\)$", rows[0]), rows[0]


def test_bench_emu_rejects_unknown_peers():
    with pytest.raises(SystemExit, match="--peers: expected names"):
        _load().main(["--peers", "mgba"])
