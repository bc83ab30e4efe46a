"""`python -m gbx_lightning.emu run`: button traces, built-in ROM names, screenshots, bad ROMs."""

import struct
import zlib

import pytest

from gbx_lightning.emu.__main__ import _parse_trace, main

RIGHT, A = 1 << 0, 1 << 4


def test_button_spec_without_file_holds_for_the_whole_run():
    assert _parse_trace("right+a", 100) == [(100, RIGHT | A)]
    assert _parse_trace(None, 5) == [(5, 0)]


def test_trace_file_becomes_frame_segments(tmp_path):
    trace = tmp_path / "t.txt"
    trace.write_text("# warm-up\n10 right\n15 right+a  # jump\n30 -\n")
    assert _parse_trace(str(trace), 40) == [(10, 0), (5, RIGHT), (15, RIGHT | A), (10, 0)]
    assert _parse_trace(str(trace), 12) == [(10, 0), (2, RIGHT)]


@pytest.mark.parametrize("text, needle", [("5 right\n3 left\n", "frames must increase"),
                                          ("five right\n", "expected 'FRAME BUTTONS'"),
                                          ("0 jump\n", "expected names")])
def test_bad_trace_is_a_clear_error(tmp_path, text, needle):
    trace = tmp_path / "t.txt"
    trace.write_text(text)
    with pytest.raises(SystemExit, match=needle):
        _parse_trace(str(trace), 10)


def _png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    length, kind = struct.unpack(">I4s", data[8:16])
    assert kind == b"IHDR" and length == 13
    width, height = struct.unpack(">II", data[16:24])
    assert zlib.crc32(data[12:29]) == struct.unpack(">I", data[29:33])[0]
    return width, height


def test_builtin_game_with_trace_writes_a_screenshot(tmp_path, capsys):
    trace = tmp_path / "t.txt"
    trace.write_text("0 -\n40 right\n")
    png = tmp_path / "shot.png"
    assert main(["run", "orchard", "--frames", "60", "--buttons", str(trace),
                 "--screenshot", str(png), "--scale", "1"]) == 0
    assert _png_size(png.read_bytes()) == (160, 144)


def test_missing_rom_is_a_one_line_error(tmp_path, capsys):
    assert main(["run", str(tmp_path / "nope.gb"), "--frames", "1"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error:") and "nope.gb" in err and "\n" not in err


def test_bad_counts_are_one_line_usage_errors(capsys):
    from gbx_lightning.emu.__main__ import main as emu_main

    for args, message in ((["--envs", "0"], "--envs: expected >= 1, got 0"), (["--scale", "0"], "--scale: expected >= 1")):
        with pytest.raises(SystemExit) as exc:
            emu_main(["run", "orchard", *args])
        assert exc.value.code == 2 and message in capsys.readouterr().err
