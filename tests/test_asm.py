"""Tests for the project's SM83 assembler (gbx_lightning.roms.asm)."""
from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest

from gbx_lightning.roms import asm
from gbx_lightning.roms.asm import AsmError, FORMS, NINTENDO_LOGO, assemble

CONFORMANCE = Path(__file__).resolve().parents[2] / "shared" / "conformance" / "sm83" / "cases-dev.json.gz"
if not CONFORMANCE.exists():  # worktrees live at /work/wt/<name>; shared data at /work/shared
    CONFORMANCE = Path("/work/shared/conformance/sm83/cases-dev.json.gz")


def code_at(source: str, org: int = 0x150, length: int | None = None) -> bytes:
    """Assemble `source` placed at `org` and return the bytes it produced."""
    rom = assemble(f"org ${org:X}\n{source}\n__end:\n")
    end = _label_end(source, org)
    return rom[org:end if length is None else org + length]


def _label_end(source: str, org: int) -> int:
    # Assemble again with a trailing dw of the end label to learn the code size.
    rom = assemble(f"org ${org:X}\n{source}\n__end:\norg $7FFE\ndw __end\n")
    return rom[0x7FFE] | rom[0x7FFF] << 8


def one(instruction: str) -> bytes:
    return code_at(instruction)


# ----------------------------------------------------------------------------
# Encodings: every opcode, cross-checked against an independent opcode table
# ----------------------------------------------------------------------------
# The 11 opcodes with no instruction (Pan Docs, CPU instruction set).
ILLEGAL = {0xD3, 0xDB, 0xDD, 0xE3, 0xE4, 0xEB, 0xEC, 0xED, 0xF4, 0xFC, 0xFD}


def _pyboy_names():
    pytest.importorskip("pyboy")
    from pyboy.core.opcodes import CPU_COMMANDS
    return list(CPU_COMMANDS)


def _to_our_syntax(name: str) -> tuple[str, bytes]:
    """PyBoy's table names ('LD (a16),SP', 'JR NZ,r8', 'RST 38H') -> our source + operand bytes.

    Jump targets for r8 are placed so that the offset is +5 from $0150+2.
    """
    text = name.lower()
    tail = b""
    text = re.sub(r"\(([^)]*)\)", r"[\1]", text)
    if "d16" in text or "a16" in text:
        text = text.replace("d16", "$1234").replace("a16", "$1234")
        tail = b"\x34\x12"
    elif "sp+r8" in text:
        text = text.replace("sp+r8", "sp+5")
        tail = b"\x05"
    elif "r8" in text:
        if text.startswith("jr"):
            text = text.replace("r8", "$0157")   # $0150 + 2 + 5
        else:
            text = text.replace("r8", "-3")
        tail = b"\x05" if text.startswith("jr") else b"\xfd"
    elif "[a8]" in text:
        text = text.replace("[a8]", "[$ff42]")
        tail = b"\x42"
    elif "d8" in text:
        text = text.replace("d8", "$42")
        tail = b"\x42"
    m = re.match(r"rst ([0-9a-f]+)h", text)
    if m:
        text = f"rst ${m.group(1)}"
    if text == "stop 0":
        text, tail = "stop", b"\x00"
    return text, tail


def test_every_base_and_cb_opcode_matches_pyboy_opcode_table():
    names = _pyboy_names()
    checked = 0
    for opcode in range(512):
        name = names[opcode]
        if opcode < 256 and (opcode in ILLEGAL or opcode == 0xCB):
            continue
        source, tail = _to_our_syntax(name)
        expected = (bytes([0xCB, opcode - 256]) if opcode >= 256 else bytes([opcode])) + tail
        got = code_at(source, length=len(expected))
        assert got == expected, f"{name!r} -> {source!r}: got {got.hex()} expected {expected.hex()}"
        assert _label_end(source, 0x150) - 0x150 == len(expected), f"size of {source!r}"
        checked += 1
    assert checked == 244 + 256   # 256 - 11 illegal - CB prefix


def test_table_covers_exactly_the_conformance_opcodes():
    """Every opcode in the SM83 conformance set is produced by some form, and nothing else is."""
    keys = set(json.load(gzip.open(CONFORMANCE)))
    produced = set()
    for forms in FORMS.values():
        for f in forms:
            code = f.opcode
            ph = f.placeholder
            if ph and ph[1] == "u3":
                for b in range(8):
                    produced.add(f"cb {code[1] | b << 3:02x}")
            elif ph and ph[1] == "vec":
                for v in range(0, 0x40, 8):
                    produced.add(f"{code[0] | v:02x}")
            elif code[0] == 0xCB:
                produced.add(f"cb {code[1]:02x}")
            elif code == b"\x10\x00":
                produced.add("10")
            else:
                produced.add(f"{code[0]:02x}")
    assert produced == keys


@pytest.mark.parametrize("src, expected", [
    ("ld a, [hli]", "2a"), ("ld a, [hld]", "3a"), ("ldi [hl], a", "22"), ("ldd a, [hl]", "3a"),
    ("ld [hl-], a", "32"), ("ld a, (hl)", "7e"), ("ld (bc), a", "02"),
    ("ldh [$ff00+c], a", "e2"), ("ldh [c], a", "e2"), ("ld [c], a", "e2"), ("ld a, [$FF00 + C]", "f2"),
    ("ldh [$44], a", "e044"), ("ldh a, [$ff44]", "f044"), ("ld [$ff40], a", "ea40ff"),
    ("ld hl, sp + 5", "f805"), ("ld hl, sp-1", "f8ff"), ("ldhl sp, -2", "f8fe"), ("add sp, -128", "e880"),
    ("jp hl", "e9"), ("jp [hl]", "e9"), ("add b", "80"), ("cp $10", "fe10"), ("sub a, 1", "d601"),
    ("xor a", "af"), ("LD B, B", "40"), ("Bit 7, H", "cb7c"), ("set 0, [hl]", "cbc6"), ("res 3, a", "cb9f"),
    ("swap a", "cb37"), ("rst 0", "c7"), ("rst $38", "ff"), ("stop", "1000"), ("halt", "76"),
    ("ld a, -1", "3eff"), ("ld bc, -1", "01ffff"), ("ld a, 'A'", "3e41"), ("ld a, ';'", "3e3b"),
    ("ld a, %1010_0101", "3ea5"), ("ld a, 0b11", "3e03"), ("ld a, 0x1F", "3e1f"), ("ld a, 1_000 % 256", "3ee8"),
])
def test_alternate_spellings(src, expected):
    assert one(src).hex() == expected


# ----------------------------------------------------------------------------
# Labels, expressions, directives
# ----------------------------------------------------------------------------
def test_labels_local_labels_and_forward_references():
    src = """
        org $150
    Start:
        jp Later          ; forward reference
    .loop:
        dec b
        jr nz, .loop
        jr Later.done     ; another scope's local label, by full name
    Later:
        nop
    .loop:                ; same local name, different scope
        jr .loop
    .done:
        call Start.loop
    """
    rom = assemble(src)
    assert rom[0x150:0x153] == bytes([0xC3, 0x58, 0x01])      # jp $0158
    assert rom[0x153:0x156] == bytes([0x05, 0x20, 0xFD])      # dec b; jr nz, -3
    assert rom[0x156:0x158] == bytes([0x18, 0x03])            # jr $015B
    assert rom[0x158:0x15B] == bytes([0x00, 0x18, 0xFE])      # nop; .loop: jr .loop
    assert rom[0x15B:0x15E] == bytes([0xCD, 0x53, 0x01])      # call $0153


def test_expressions_precedence_functions_and_equ():
    src = """
    A_CONST EQU 2 + 3 * 4         ; 14
    DEF B_CONST EQU (2 + 3) * 4   ; 20
    LATE EQU Target - $150        ; forward label in an EQU
        org $150
        db A_CONST, B_CONST, 1 << 4 | 1, ~0 & $FF, -7 / 2, -7 % 2, 10 - 2 - 3
        db high($BEEF), low($BEEF), LATE, 1 == 1, 2 < 1, (3 > 2) && (0 || 1), !5
        dw @, $1234
    Target:
    """
    rom = assemble(src)
    assert list(rom[0x150:0x157]) == [14, 20, 0x11, 0xFF, (-3) & 0xFF, (-1) & 0xFF, 5]
    assert list(rom[0x157:0x15E]) == [0xBE, 0xEF, 0x12, 1, 0, 1, 0]
    assert rom[0x15E:0x162] == bytes([0x5E, 0x01, 0x34, 0x12])


def test_db_strings_dw_ds_and_org():
    rom = assemble('org $200\ndb "Hi\\n", 0\ndw $ABCD, 1\nds 3, $EE\nds 2\ndb 7\n')
    assert rom[0x200:0x20E] == b"Hi\n\x00\xcd\xab\x01\x00\xee\xee\xee\x00\x00\x07"


def test_include_and_incbin(tmp_path):
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "hw.inc").write_text("rLCDC EQU $FF40\n")
    (tmp_path / "data.bin").write_bytes(b"\x01\x02\x03")
    main = tmp_path / "main.asm"
    main.write_text('include "hw.inc"\norg $150\nldh [rLCDC], a\nincbin "data.bin"\n')
    rom = assemble(main.read_text(), origin_file=str(main), include_dirs=[tmp_path / "inc"])
    assert rom[0x150:0x155] == bytes([0xE0, 0x40, 1, 2, 3])


def test_banks_and_rom_size():
    src = """
        cart_type $01
        org $150
        db bank(Far), high(Far), low(Far)
        bank 3
    Far:
        db $33
        org $7FFF
        db $3F
    """
    rom = assemble(src)
    assert len(rom) == 64 * 1024            # 4 banks -> rom_size code 1
    assert rom[0x148] == 1
    assert rom[0x150:0x153] == bytes([3, 0x40, 0x00])
    assert rom[3 * 0x4000] == 0x33 and rom[4 * 0x4000 - 1] == 0x3F
    rom = assemble("rom_size 3\nbank 1\nnop\n")
    assert len(rom) == 256 * 1024 and rom[0x148] == 3


def test_header_logo_title_and_checksums_follow_pan_docs():
    rom = assemble('title "GBX TEST"\ncart_type $13\nram_size 3\norg $100\nnop\njp $150\n')
    assert len(rom) == 32 * 1024
    assert rom[0x104:0x134] == NINTENDO_LOGO and len(NINTENDO_LOGO) == 48
    assert rom[0x134:0x144] == b"GBX TEST" + bytes(8)
    assert rom[0x147] == 0x13 and rom[0x148] == 0 and rom[0x149] == 3
    x = 0
    for i in range(0x134, 0x14D):
        x = (x - rom[i] - 1) & 0xFF
    assert rom[0x14D] == x
    total = (sum(rom) - rom[0x14E] - rom[0x14F]) & 0xFFFF
    assert rom[0x14E:0x150] == total.to_bytes(2, "big")
    # Patched headers can be re-summed for tests that build bad ROMs on purpose.
    patched = bytearray(rom)
    patched[0x147] = 0x06
    fixed = asm.fix_checksums(patched)
    assert fixed[0x14D] == (rom[0x14D] - (0x06 - 0x13)) & 0xFF


def test_defaults_are_rom_only_32k_no_ram():
    rom = assemble("")
    assert len(rom) == 0x8000
    assert (rom[0x147], rom[0x148], rom[0x149]) == (0, 0, 0)


# ----------------------------------------------------------------------------
# Errors name file:line and the bad token
# ----------------------------------------------------------------------------
@pytest.mark.parametrize("src, pattern", [
    ("nop\nfrob a", r"<string>:2: unknown instruction or directive 'frob'"),
    ("org $150\nx:\njr y\nds 200\ny:", r"<string>:3: jr target 'y' .* out of range: offset 200"),
    ("ld a, missing", r"<string>:1: undefined symbol 'missing'"),
    ("ld a, 256", r"<string>:1: .*'256' = 256 out of range"),
    ("ld [bc], b", r"<string>:1: invalid operands for 'ld': \[bc\], b"),
    ("bit 8, a", r"bit number '8' = 8 out of range"),
    ("rst $39", r"rst vector"),
    ("ldh [$1234], a", r"\$FF00-\$FFFF"),
    ("org $104\ndb 1", r"<string>:2: .*overlaps the cartridge header"),
    ("org $150\ndb 1\norg $150\ndb 2", r"<string>:4: output overlaps"),
    ("x:\nx:", r"<string>:2: 'x' is already defined at <string>:1"),
    (".loop:", r"local label '.loop' before any global label"),
    ("org $7FFF\ndw 1", r"outside ROM"),
    ("bank 2\norg $150", r"outside bank 2"),
    ('title "THIS TITLE IS TOO LONG"', r"holds 16"),
    ("rom_size 0\nbank 2\nnop", r"rom_size 0 declares 2 banks .* uses 3"),
    ("ld a, (1 + 2", r"expected '\)'"),
    ("db 1 / 0", r"division by zero"),
    ("A EQU 1", r"register or mnemonic"),
    ("X EQU Y\nY EQU X", r"undefined symbol 'Y'"),
    ("assert 1 == 2, \"sizes differ\"", r"assertion failed: 1 == 2: sizes differ"),
    ('include "nope.inc"', r"include file 'nope.inc' not found"),
])
def test_errors_name_line_and_token(src, pattern):
    with pytest.raises(AsmError, match=pattern):
        assemble(src)


def test_errors_in_included_files_name_that_file(tmp_path):
    (tmp_path / "bad.inc").write_text("nop\nld a, [de+]\n")
    with pytest.raises(AsmError, match=r"bad\.inc:2: invalid operands for 'ld'"):
        assemble('include "bad.inc"', origin_file=str(tmp_path / "main.asm"))


def test_build_rom_rejects_unknown_name():
    from gbx_lightning.roms import build_rom
    with pytest.raises(ValueError, match="no packaged ROM source 'no_such_rom'"):
        build_rom("no_such_rom")


# ----------------------------------------------------------------------------
# Second opinion: an assembled ROM runs on PyBoy and stores what it computes
# ----------------------------------------------------------------------------
def test_assembled_rom_runs_on_pyboy():
    pyboy_mod = pytest.importorskip("pyboy")
    src = """
        title "ASMTEST"
        org $100
        nop
        jp Main
        org $150
    Main:
        ld sp, $DFFF
        ld hl, $C000
        ld b, 10
        xor a
    .sum:                   ; a = 10 + 9 + ... + 1 = 55
        add b
        dec b
        jr nz, .sum
        ld [hl+], a
        call Double         ; 110
        ld [hl+], a
        ld a, $A5
        ld [$C010], a
    .forever:
        halt
        jr .forever
    Double:
        add a
        ret
    """
    rom = assemble(src)
    import tempfile, os
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "t.gb")
        with open(path, "wb") as f:
            f.write(rom)
        pb = pyboy_mod.PyBoy(path, window="null", sound_emulated=False)
        try:
            pb.tick(300, False)   # PyBoy runs its boot ROM first
            assert pb.memory[0xC000] == 55
            assert pb.memory[0xC001] == 110
            assert pb.memory[0xC010] == 0xA5
        finally:
            pb.stop(save=False)


# ----------------------------------------------------------------------------
# Macros, REPT, IF
# ----------------------------------------------------------------------------
def test_macros_with_arguments_unique_labels_and_narg():
    src = r"""
    MACRO expect_a          ; jump over the failure path when a == \2
        cp \2
        jr z, .ok\@
        ld a, \1
    .ok\@:
        db _NARG
    ENDM
    old_style: MACRO
        db \1 + 1
    ENDM
        org $150
    Main:
        expect_a 7, 9
        expect_a 8, $10
    here: old_style 4
    """
    rom, syms = asm.assemble_with_symbols(src)
    assert rom[0x150:0x15E].hex() == "fe092802" "3e07" "02" "fe102802" "3e08" "02"
    assert rom[0x15E] == 5 and syms["here"] == 0x15E
    assert syms["Main.ok_1"] == 0x156 and syms["Main.ok_2"] == 0x15D


def test_rept_and_if_blocks():
    src = """
    N EQU 3
        org $150
        rept N
        inc a
        rept 2
        nop
        endr
        endr
        if N == 2
        db $22
        elif N == 3
        db $33
        if 0
        db $FF
        endc
        else
        db $11
        endc
        db $EE
    """
    rom = assemble(src)
    assert rom[0x150:0x15B] == bytes([0x3C, 0, 0] * 3 + [0x33, 0xEE])


@pytest.mark.parametrize("src, pattern", [
    ("MACRO m\nnop\n", r"<string>:1: macro 'm' has no ENDM"),
    ("ENDM", r"ENDM without MACRO"),
    ("MACRO m\ndb \\2\nENDM\nm 1", r"<string>:4: macro 'm' uses \\2 but got 1 argument"),
    ("MACRO m\nfrob\nENDM\nm", r"<string>:2 \(macro m called at <string>:4\): unknown instruction"),
    ("MACRO m\nm\nENDM\nm", r"nests deeper than 64"),
    ("MACRO ld\nENDM", r"macro name 'ld' is an instruction or directive"),
    ("rept 2\nnop", r"REPT has no ENDR"),
    ("if 1\nrept 1\nendc\nendr", r"ENDC closes a REPT block"),
    ("endc", r"ENDC without a matching IF"),
    ("if LATER\nendc\nLATER EQU 1", r"undefined symbol 'LATER' .*if condition must be known in pass 1"),
])
def test_block_errors(src, pattern):
    with pytest.raises(AsmError, match=pattern):
        assemble(src)


def test_command_line(tmp_path, capsys):
    src = tmp_path / "t.asm"
    src.write_text("org $150\nStart:\nnop\n")
    out = tmp_path / "t.gb"
    assert asm.main([str(src), "-o", str(out), "--symbols"]) == 0
    assert out.read_bytes() == assemble("org $150\nStart:\nnop\n")
    assert "$0150 Start" in capsys.readouterr().out
    src.write_text("bogus\n")
    assert asm.main([str(src), "-o", str(out)]) == 1
    assert "t.asm:1: unknown instruction or directive 'bogus'" in capsys.readouterr().err


def test_variables_count_in_rept_loops():
    src = """
    N = 1
        rept 3
        bank N
        db N * 2
    DEF N = N + 1
        endr
    X SET 5
    X = X * 2
        bank 0
        org $150
        db X
    """
    rom = assemble(src)
    assert len(rom) == 0x10000
    assert [rom[0x4000], rom[0x8000], rom[0xC000], rom[0x150]] == [2, 4, 6, 10]
    with pytest.raises(AsmError, match=r"'X' is already defined at <string>:1 as a label or constant"):
        assemble("X EQU 1\nX = 2")
    with pytest.raises(AsmError, match=r"'b' is a register or mnemonic"):
        assemble("b = 2")
    with pytest.raises(AsmError, match=r"write 'bank 0' first"):
        assemble("bank 1\norg $150")
    with pytest.raises(AsmError, match=r"<string>:1: undefined symbol 'V'"):
        assemble("db V\nV = 3")         # variables are not forward references


def test_build_rom_assembles_packaged_sources_once(tmp_path, monkeypatch):
    import gbx_lightning.roms as roms
    (tmp_path / "consts.inc").write_text("VALUE EQU $42\n")
    (tmp_path / "demo.asm").write_text('include "consts.inc"\norg $150\ndb VALUE\n')
    monkeypatch.setattr(roms, "ROM_DIR", tmp_path)
    roms.build_rom.cache_clear()
    try:
        assert roms.available_roms() == ["demo"]
        rom = roms.build_rom("demo")
        assert rom[0x150] == 0x42 and len(rom) == 0x8000
        assert roms.build_rom("demo.asm") == rom and roms.build_rom("demo") is rom
        with pytest.raises(ValueError, match=r"no packaged ROM source '\.\./x'"):
            roms.build_rom("../x")
    finally:
        roms.build_rom.cache_clear()
