"""Bad and random ROM images: clear RomErrors before any kernel work; random code never crashes or hangs.

The random-image runs happen in a subprocess so that a crash (an out-of-bounds
access that segfaults the Warp CPU kernel) fails the test instead of killing
pytest; the subprocess timeout is the hang guard (generous: it bounds, it does
not measure).  A slower variant recompiles the machine in Warp's debug mode,
where every array access is bounds-checked and an out-of-bounds one raises.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest

from gbx_lightning.emu.cartridge import RomError, RomWarning, load_cartridge
from gbx_lightning.roms.asm import NINTENDO_LOGO, fix_checksums

REPO = Path(__file__).resolve().parents[1]
BANK = 0x4000


def make_image(size: int = 2 * BANK, *, cart_type: int = 0x00, rom_code: int | None = None,
               ram_code: int = 0x00, fill: int = 0x00, checksums: bool = True) -> bytes:
    """A ROM image of `size` bytes with the given header fields (entry: jr -2 at $0100)."""
    rom = bytearray([fill]) * size
    rom[0x100:0x104] = bytes([0x00, 0x18, 0xFE, 0x00])
    rom[0x104:0x134] = NINTENDO_LOGO
    rom[0x134:0x138] = b"TEST"
    rom[0x147] = cart_type
    rom[0x148] = (size // (2 * BANK)).bit_length() - 1 if rom_code is None else rom_code
    rom[0x149] = ram_code
    return bytes(fix_checksums(rom)) if checksums else bytes(rom)


# ------------------------------------------------------------------ bad files -> RomError


def test_missing_file(tmp_path):
    missing = tmp_path / "nope.gb"
    with pytest.raises(RomError, match="file not found") as e:
        load_cartridge(missing)
    assert "nope.gb" in str(e.value)


@pytest.mark.parametrize("size", [0, 1, 0x100, 0x7FFF])
def test_too_small(size):
    with pytest.raises(RomError, match=rf"is {size} bytes; a Game Boy ROM is at least 32768 bytes"):
        load_cartridge(bytes(size))


@pytest.mark.parametrize("size", [0x8001, 0x8000 + 0x2000, 0xC000 - 1])
def test_truncated_or_padded(size):
    with pytest.raises(RomError, match=rf"is {size} bytes, not a multiple of 16384"):
        load_cartridge(make_image(0x10000)[:size] + bytes(max(0, size - 0x10000)))


def test_header_declares_more_rom_than_the_file():
    lying = make_image(0x8000, rom_code=0x02)  # says 128 KiB
    with pytest.raises(RomError, match=r"\$0148 = \$02 declares 128 KiB \(8 banks\) but the file is 32768 bytes"):
        load_cartridge(lying)


def test_file_cut_after_a_bank():
    cut = make_image(0x10000, cart_type=0x01)[:0xC000]  # 64 KiB declared, 48 KiB left
    with pytest.raises(RomError, match=r"declares 64 KiB \(4 banks\) but the file is 49152 bytes"):
        load_cartridge(cut)


def test_unknown_rom_size_code():
    with pytest.raises(RomError, match=r"\$0148 \(ROM size\) is \$52; known codes are \$00-\$08"):
        load_cartridge(make_image(rom_code=0x52))


@pytest.mark.parametrize("cart_type, label", [(0x0B, "MMM01"), (0xFC, "POCKET CAMERA"), (0x42, "unknown type")])
def test_unsupported_cartridge_type(cart_type, label):
    with pytest.raises(RomError) as e:
        load_cartridge(make_image(cart_type=cart_type))
    msg = str(e.value)
    assert f"cartridge type ${cart_type:02X} ({label}) is not supported" in msg
    assert "MBC1" in msg and "MBC3" in msg and "MBC5" in msg  # lists what is supported


def test_bad_ram_size_code():
    with pytest.raises(RomError, match=r"\$0149 \(RAM size\) is \$09; valid codes are \$00-\$05"):
        load_cartridge(make_image(cart_type=0x03, ram_code=0x09))


def test_bad_header_checksum_is_only_a_warning():
    rom = bytearray(make_image())
    rom[0x14D] ^= 0xFF
    with pytest.warns(RomWarning, match="header checksum"):
        cart = load_cartridge(bytes(rom))
    assert not cart.header_checksum_ok


def test_vecgameboy_validates_before_kernel_work():
    """The machine rejects a lying header with the same RomError (no compile, no launch needed)."""
    from gbx_lightning.emu import VecGameBoy

    with pytest.raises(RomError, match="declares 128 KiB"):
        VecGameBoy(make_image(0x8000, rom_code=0x02), 4)
    with pytest.raises(RomError, match="at least 32768 bytes"):
        VecGameBoy(b"\x00" * 100, 4)


def test_garbage_files_fail_validation_or_load():
    """Fully random images either raise RomError (naming the byte) or load: never another exception."""
    rng = np.random.default_rng(1234)
    errors = 0
    for _ in range(200):
        size = int(rng.choice([0x8000, 0x10000, 0x20000, 0x9000, 0x5000]))
        data = rng.integers(0, 256, size, dtype=np.uint8).tobytes()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RomWarning)
            try:
                load_cartridge(data)
            except RomError as e:
                errors += 1
                assert "ROM <" in str(e)
    assert errors >= 190  # random headers almost never describe their own size and a supported type


# ------------------------------------------------------- random images run without crashing

RANDOM_KINDS = [
    # (name, size, cart type, ram code)
    ("rom_only", 0x8000, 0x00, 0x00),
    ("mbc1_ram", 0x20000, 0x03, 0x03),
    ("mbc3_rtc_ram", 0x20000, 0x10, 0x03),
    ("mbc5_ram", 0x10000, 0x1B, 0x04),
    ("mbc1_2mib", 0x200000, 0x01, 0x00),  # largest MBC1: bank bits 5-6 from $4000
    ("mbc5_8mib", 0x800000, 0x1B, 0x04),  # largest MBC5: 9-bit bank numbers
]
ILLEGAL_OPCODES = [0xD3, 0xDB, 0xDD, 0xE3, 0xE4, 0xEB, 0xEC, 0xED, 0xF4, 0xFC, 0xFD]


def random_image(seed: int, size: int, cart_type: int, ram_code: int, *, legal_only: bool) -> bytes:
    """Random bytes under a valid header; `legal_only` turns the 11 illegal opcodes into NOPs so the
    random code keeps running (and pokes I/O, banks, DMA, HALT/STOP...) instead of locking the CPU."""
    rng = np.random.default_rng(seed)
    body = rng.integers(0, 256, size, dtype=np.uint8)
    if legal_only:
        body[np.isin(body, ILLEGAL_OPCODES)] = 0x00
    rom = bytearray(body.tobytes())
    rom[0x104:0x134] = NINTENDO_LOGO
    rom[0x143] = 0x00
    rom[0x147] = cart_type
    rom[0x148] = (size // 0x8000).bit_length() - 1
    rom[0x149] = ram_code
    return bytes(fix_checksums(rom))


RUNNER = textwrap.dedent(
    """
    import sys, numpy as np, warp as wp
    wp.config.quiet = True
    if {debug!r}:
        wp.config.mode = "debug"
        wp.config.kernel_cache_dir = {cache!r}
    sys.path.insert(0, {tests!r})
    from test_robustness import RANDOM_KINDS, random_image
    from gbx_lightning.emu import VecGameBoy
    envs, frames = {envs}, {frames}
    for k, (name, size, cart_type, ram_code) in enumerate(RANDOM_KINDS):
        for legal_only in (False, True):
            rom = random_image(1000 + k, size, cart_type, ram_code, legal_only=legal_only)
            gb = VecGameBoy(rom, envs)
            rng = np.random.default_rng(k)
            gb.run_frames(frames // 2, buttons=rng.integers(0, 256, envs, dtype=np.uint8))
            snap = gb.snapshot()
            second = rng.integers(0, 256, envs, dtype=np.uint8)
            def observe():
                return ([gb.registers(e) for e in (0, envs // 2, envs - 1)], gb.frame().tobytes(),
                        gb.read_memory(envs - 1, 0x8000, 0x8000), gb.serial_output(0))
            gb.run_frames(frames - frames // 2, buttons=second)
            first_run = observe()
            gb.restore(snap)  # the same half again from the snapshot: deterministic
            gb.run_frames(frames - frames // 2, buttons=second)
            assert observe() == first_run, "restore + rerun diverged"
            for env in (0, envs // 2, envs - 1):
                r = gb.registers(env)
                assert all(0 <= r[x] <= 0xFF for x in "abcdehl") and 0 <= r["f"] <= 0xF0 and r["f"] & 0x0F == 0, r
                assert 0 <= r["pc"] <= 0xFFFF and 0 <= r["sp"] <= 0xFFFF, r
                # any two consecutive frames span >= 144 lines (VecGameBoy.run_frames)
                assert r["cycles"] >= (frames // 2) * 144 * 456, r
            frame = gb.frame()
            assert frame.shape == (envs, 144, 160) and int(frame.max()) <= 3
            assert len(gb.read_memory(0, 0, 0x10000)) == 0x10000
            print(name, "legal" if legal_only else "raw", "ok", flush=True)
    print("ALL OK")
    """
)


def run_random_images(envs: int, frames: int, *, debug: bool, timeout: int) -> str:
    code = RUNNER.format(debug=debug, cache=str(Path.home() / ".cache" / "warp-debug"),
                         tests=str(Path(__file__).resolve().parent), envs=envs, frames=frames)
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    try:
        proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True,
                              text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:  # a hang: the machine never returned from run_frames
        pytest.fail(f"random ROM run did not finish within {timeout} s; output so far:\n{e.stdout}")
    assert proc.returncode == 0, (f"random ROM run died with exit code {proc.returncode} "
                                  f"(negative = killed by a signal, e.g. -11 SIGSEGV)\n"
                                  f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr[-4000:]}")
    assert "ALL OK" in proc.stdout
    return proc.stdout


def test_random_images_run_100_frames_in_64_envs():
    """Random code on every cartridge kind: 100 frames x 64 envs, no crash, no hang, sane state, and
    the second 50 frames replayed from a snapshot give the same machine state."""
    out = run_random_images(64, 100, debug=False, timeout=900)
    assert out.count(" ok") == 2 * len(RANDOM_KINDS)


@pytest.mark.slow
def test_random_images_bounds_checked_in_warp_debug_mode():
    """Same random images with Warp's debug build: any out-of-bounds array access raises."""
    out = run_random_images(8, 30, debug=True, timeout=1800)
    assert out.count(" ok") == 2 * len(RANDOM_KINDS)
