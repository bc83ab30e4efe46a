"""Banked test ROMs built by the project's assembler, checked on PyBoy and (once it lands) VecGameBoy.

Each ROM fills bank N with the byte N (bank 0 holds 0 at $0000), then runs a
table of MBC register settings through a probe routine copied to WRAM (so the
code keeps running when MBC1 mode 1 banks $0000-$3FFF) and stores what $4000
and $0000 read at $C100 + 2*i. Expected values come from the Pan Docs rules,
written out independently of emu/mbc.py.
"""
from __future__ import annotations

import os
import tempfile

import pytest

from gbx_lightning.roms.asm import assemble_with_symbols

PROBE_SOURCE = """
    bank 0
    org $0000
    db 0                    ; bank 0 identifies itself at $0000
    org $0100
    nop
    jp Main
    org $0150
Main:
    di
    ld sp, $DFFF
    ld hl, Probe            ; copy the probe to WRAM at $D000
    ld de, $D000
    ld b, ProbeEnd - Probe
.copy:
    ld a, [hl+]
    ld [de], a
    inc de
    dec b
    jr nz, .copy
    ld hl, Cases
    ld de, $C100
.case:
    ld a, [hl+]
    cp $FF
    jr z, .done
    ld b, a                 ; value for $4000-$5FFF
    ld a, [hl+]
    ld c, a                 ; value for $2000-$3FFF
    ld a, [hl+]             ; value for $6000-$7FFF (mode)
    push hl
    push de
    ld d, a
    call $D000              ; -> e = [$4000], d = [$0000]
    ld a, e
    ld h, d
    pop de
    ld [de], a
    inc de
    ld a, h
    ld [de], a
    inc de
    pop hl
    jr .case
.done:
    ld a, $A5
    ld [$C000], a
.halt:
    halt
    jr .halt

Probe:                      ; position independent: runs from $D000
    ld a, b
    ld [$4000], a
    ld a, c
    ld [$2000], a
    ld a, d
    ld [$6000], a
    ld a, [$4000]
    ld e, a
    ld a, [$0000]
    ld d, a
    xor a
    ld [$6000], a           ; back to mode 0 before returning to bank 0 code
    ld [$4000], a
    ret
ProbeEnd:

Cases:
"""


def build(cart_type: int, rom_code: int, cases) -> bytes:
    banks = 2 << rom_code
    fill = "\n".join(f"    bank {n}\n    org $4000\n    db {n & 0xFF}" for n in range(1, banks))
    table = "\n".join(f"    db ${a:02X}, ${b:02X}, ${m:02X}" for a, b, m in cases) + "\n    db $FF\n"
    src = (f'title "MBCPROBE"\ncart_type ${cart_type:02X}\nrom_size {rom_code}\n'
           + fill + "\n" + PROBE_SOURCE + table)
    rom, _ = assemble_with_symbols(src)
    assert len(rom) == banks * 0x4000
    return rom


def mbc1_expected(banks, bank2, bank1, mode):
    """Pan Docs MBC1: 5-bit BANK1 (0 -> 1 within 5 bits), BANK2 above it; mode 1 banks $0000."""
    lo = bank1 & 0x1F or 1
    hi = bank2 & 3
    romx = ((hi << 5) | lo) % banks
    rom0 = ((hi << 5) % banks) if mode & 1 else 0
    return romx & 0xFF, rom0 & 0xFF


def mbc5_expected(banks, bank_hi_unused, bank_lo, mode_unused):
    return (bank_lo % banks) & 0xFF, 0


MBC1_CASES = [(0, 0, 0), (0, 1, 0), (0, 0x1F, 0), (0, 0x20, 0), (1, 0, 0), (1, 5, 0), (2, 0, 0),
              (3, 0x1F, 0), (1, 0, 1), (2, 3, 1), (3, 0, 1), (0, 0xE2, 0)]


def run_pyboy(rom: bytes, frames: int = 60) -> bytes:
    pyboy_mod = pytest.importorskip("pyboy")
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "probe.gb")
        with open(path, "wb") as f:
            f.write(rom)
        pb = pyboy_mod.PyBoy(path, window="null", sound_emulated=False)
        try:
            pb.tick(frames + 240, False)      # PyBoy runs its boot ROM first
            return bytes(pb.memory[0xC000:0xC200])
        finally:
            pb.stop(save=False)


def run_vecgameboy(rom: bytes, frames: int = 60) -> bytes:
    try:
        from gbx_lightning.emu import VecGameBoy
    except ImportError:
        pytest.skip("VecGameBoy not available on this branch yet")
    gb = VecGameBoy(rom, 1)
    gb.run_frames(frames)
    return gb.read_memory(0, 0xC000, 0x200)


@pytest.mark.parametrize("rom_code", [5, 6])       # 1 MiB and 2 MiB
@pytest.mark.parametrize("runner", [run_pyboy, run_vecgameboy], ids=["pyboy", "vecgameboy"])
def test_mbc1_probe_rom(runner, rom_code):
    banks = 2 << rom_code
    mem = runner(build(0x01, rom_code, MBC1_CASES))
    assert mem[0] == 0xA5, "probe ROM did not finish"
    got = [(mem[0x100 + 2 * i], mem[0x101 + 2 * i]) for i in range(len(MBC1_CASES))]
    expected = [mbc1_expected(banks, *case) for case in MBC1_CASES]
    assert got == expected


MBC5_CASES = [(0, 0, 0), (0, 1, 0), (0, 0x20, 0), (0, 0x7F, 0), (0, 0xFF, 0)]


@pytest.mark.parametrize("runner", [run_pyboy, run_vecgameboy], ids=["pyboy", "vecgameboy"])
def test_mbc5_probe_rom_reaches_bank_zero(runner):
    # The probe writes $4000 (RAM bank) and $6000 (no effect on MBC5); bank 0 is selectable.
    mem = runner(build(0x19, 4, MBC5_CASES))        # 512 KiB, 32 banks
    assert mem[0] == 0xA5
    got = [(mem[0x100 + 2 * i], mem[0x101 + 2 * i]) for i in range(len(MBC5_CASES))]
    assert got == [mbc5_expected(32, *c) for c in MBC5_CASES]


RTC_SOURCE = """
    title "RTCPROBE"
    cart_type $10               ; MBC3+TIMER+RAM+BATTERY
    ram_size 3
    org $0100
    nop
    jp Main
    org $0150
Main:
    di
    ld sp, $DFFF
    ld a, $0A
    ld [$0000], a               ; enable RAM and RTC
    ld b, $0C
    ld a, $40                   ; halt the clock while setting it
    call SetReg
    ld b, $08
    ld a, 58
    call SetReg
    ld b, $09
    ld a, 59
    call SetReg
    ld b, $0A
    ld a, 23
    call SetReg
    ld b, $0B
    ld a, $FF
    call SetReg
    ld b, $0C
    ld a, $01                   ; day bit 8 set, clock running: 23:59:58 on day 511
    call SetReg
.poll:                          ; latch and copy S, M, H, DL, DH to $C100 forever
    xor a
    ld [$6000], a
    inc a
    ld [$6000], a
    ld hl, $C100
    ld b, $08
.read:
    ld a, b
    ld [$4000], a
    ld a, [$A000]
    ld [hl+], a
    inc b
    ld a, b
    cp $0D
    jr nz, .read
    jr .poll

SetReg:                         ; RTC register b := a
    push af
    ld a, b
    ld [$4000], a
    pop af
    ld [$A000], a
    ret
"""


def test_mbc3_rtc_runs_on_emulated_time():
    """60 frames are 60 * 70224 T-cycles = 1.0046 s of emulated time (4194304 T per second)."""
    try:
        from gbx_lightning.emu import VecGameBoy
    except ImportError:
        pytest.skip("VecGameBoy not available on this branch yet")
    rom, _ = assemble_with_symbols(RTC_SOURCE)
    gb = VecGameBoy(rom, 2)
    readings = []
    for _ in range(3):
        gb.run_frames(60)
        readings.append(list(gb.read_memory(1, 0xC100, 5)))
    assert readings == [
        [59, 59, 23, 0xFF, 0x01],      # 1 s after 23:59:58 on day 511
        [0, 0, 0, 0x00, 0x80],         # day counter overflowed: carry bit set, day 0
        [1, 0, 0, 0x00, 0x80],
    ]
