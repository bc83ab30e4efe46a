"""Cartridge loading and validation (gbx_lightning.emu.cartridge)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from gbx_lightning.emu.cartridge import (
    CART_TYPE_NAMES, MBC1, MBC2, MBC3, MBC5, MBC_NONE, NINTENDO_LOGO, SUPPORTED_CART_TYPES, Cartridge,
    RomError, RomWarning, load_boot_rom, load_cartridge,
)
from gbx_lightning.roms.asm import NINTENDO_LOGO as ASM_LOGO, assemble, fix_checksums


BANK = 0x4000


def make_rom(cart_type=0x00, rom_code=0, ram_code=0, title="CARTTEST") -> bytes:
    return assemble(f'title "{title}"\ncart_type ${cart_type:02X}\nrom_size {rom_code}\n'
                    f'ram_size {ram_code}\norg $100\nnop\njp $150\n')


def patched(rom: bytes, offset: int, value: int, *, fix=True) -> bytes:
    b = bytearray(rom)
    b[offset] = value
    return fix_checksums(b) if fix else bytes(b)


@pytest.mark.parametrize("cart_type, kind, ram, battery, rtc", [
    (0x00, MBC_NONE, False, False, False),
    (0x09, MBC_NONE, True, True, False),
    (0x01, MBC1, False, False, False),
    (0x03, MBC1, True, True, False),
    (0x05, MBC2, False, False, False),
    (0x06, MBC2, False, True, False),
    (0x0F, MBC3, False, True, True),
    (0x10, MBC3, True, True, True),
    (0x13, MBC3, True, True, False),
    (0x19, MBC5, False, False, False),
    (0x1E, MBC5, True, True, False),
])
def test_supported_types_parse(cart_type, kind, ram, battery, rtc):
    rom = make_rom(cart_type, rom_code=2, ram_code=3 if ram else 0)
    cart = load_cartridge(rom)
    assert isinstance(cart, Cartridge)
    assert (cart.cart_type, cart.mbc, cart.has_battery, cart.has_rtc) == (cart_type, kind, battery, rtc)
    assert cart.rom_banks == 8 and cart.rom.dtype == np.uint8 and cart.rom.size == 128 * 1024
    assert cart.ram_bytes == (32 * 1024 if ram else 512 if kind == MBC2 else 0)
    assert not cart.multicart
    assert cart.title == "CARTTEST"
    assert cart.header_checksum_ok and cart.global_checksum_ok
    assert len(cart.sha256) == 64


def test_load_from_path_and_bytes_agree(tmp_path):
    rom = make_rom(0x01, rom_code=1)
    path = tmp_path / "game.gb"
    path.write_bytes(rom)
    a, b = load_cartridge(path), load_cartridge(str(path))
    c = load_cartridge(rom)
    assert a.sha256 == b.sha256 == c.sha256
    assert np.array_equal(a.rom, c.rom)
    assert a.source == str(path)
    assert not a.rom.flags.writeable


@pytest.mark.parametrize("ram_code, ram_bytes", [(0, 0), (2, 8192), (3, 32768), (4, 131072), (5, 65536)])
def test_ram_size_codes(ram_code, ram_bytes):
    cart = load_cartridge(make_rom(0x1B, rom_code=0, ram_code=ram_code))
    assert cart.ram_bytes == ram_bytes and cart.ram_banks == ram_bytes // 8192


def test_missing_file_names_the_path(tmp_path):
    missing = tmp_path / "nope.gb"
    with pytest.raises(RomError, match=r"file not found: .*nope\.gb"):
        load_cartridge(missing)
    with pytest.raises(RomError, match="is not a file"):
        load_cartridge(tmp_path)


@pytest.mark.parametrize("size, pattern", [
    (0, r"is 0 bytes; a Game Boy ROM is at least 32768 bytes"),
    (1000, r"is 1000 bytes; a Game Boy ROM is at least 32768"),
    (32 * 1024 + 100, r"is 32868 bytes, not a multiple of 16384"),
])
def test_bad_sizes(size, pattern):
    data = (make_rom() * 2)[:size]
    with pytest.raises(RomError, match=pattern):
        load_cartridge(data)


def test_truncated_rom_disagrees_with_header():
    rom = make_rom(0x01, rom_code=2)          # 128 KiB declared
    with pytest.raises(RomError, match=r"\$0148 = \$02 declares 128 KiB \(8 banks\) but the file is "
                                        r"65536 bytes \(64 KiB, 4 banks\)"):
        load_cartridge(rom[:64 * 1024])


def test_file_larger_than_its_header_runs_as_the_file():
    rom = make_rom(0x01, rom_code=2)          # 128 KiB, built and declared
    bigger = patched(rom, 0x148, 0x00)        # now declares 32 KiB
    with pytest.warns(RomWarning, match=r"\$0148 = \$00 declares 32 KiB but the file is 128 KiB; "
                                        r"using all 8 banks of the file"):
        cart = load_cartridge(bigger)
    assert cart.rom_banks == 8 and cart.rom.size == 128 * 1024


def test_file_larger_than_its_header_must_be_a_power_of_two():
    padded = make_rom(0x01, rom_code=0) + bytes(BANK)        # 48 KiB, 32 KiB declared
    with pytest.raises(RomError, match=r"declares 32 KiB but the file is 49152 bytes \(3 banks\); a file "
                                       r"larger than its header must be a power of two up to 8192 KiB"):
        load_cartridge(padded)


def test_mbc1_header_asking_for_more_ram_than_it_reaches_gets_32k():
    with pytest.warns(RomWarning, match=r"asks for 128 KiB of RAM, but an MBC1 addresses 32 KiB"):
        cart = load_cartridge(make_rom(0x03, rom_code=0, ram_code=4))
    assert cart.ram_bytes == 32 * 1024


def test_unknown_rom_size_code():
    with pytest.raises(RomError, match=r"\$0148 \(ROM size\) is \$52"):
        load_cartridge(patched(make_rom(), 0x148, 0x52))


UNSUPPORTED_NAMED = {0x0B: "MMM01", 0x0C: "MMM01+RAM", 0x0D: "MMM01+RAM+BATTERY", 0x20: "MBC6",
                     0x22: "MBC7+SENSOR+RUMBLE+RAM+BATTERY", 0xFC: "POCKET CAMERA",
                     0xFD: "BANDAI TAMA5", 0xFE: "HuC3", 0xFF: "HuC1+RAM+BATTERY"}


def test_supported_and_unsupported_type_lists():
    assert sorted(SUPPORTED_CART_TYPES) == [0x00, 0x01, 0x02, 0x03, 0x05, 0x06, 0x08, 0x09, 0x0F, 0x10,
                                            0x11, 0x12, 0x13, 0x19, 0x1A, 0x1B, 0x1C, 0x1D, 0x1E]
    assert {t: n for t, n in CART_TYPE_NAMES.items() if t not in SUPPORTED_CART_TYPES} == UNSUPPORTED_NAMED


@pytest.mark.parametrize("cart_type", [t for t in range(256) if t not in SUPPORTED_CART_TYPES])
def test_every_unsupported_type_byte_is_one_clear_rom_error(cart_type):
    """Each of the 237 type bytes we cannot run: one line naming the byte, its Pan Docs name
    (or "unknown type") and what is supported, before any kernel work."""
    with pytest.raises(RomError) as info:
        load_cartridge(patched(make_rom(), 0x147, cart_type))
    msg = str(info.value)
    name = UNSUPPORTED_NAMED.get(cart_type, "unknown type")
    assert f"cartridge type ${cart_type:02X} ({name}) is not supported" in msg
    assert "supported: $00 ROM ONLY" in msg and "$01-$03 MBC1" in msg and "$05/$06 MBC2" in msg
    assert "$19-$1E MBC5" in msg
    assert "\n" not in msg


def test_mbc2_ram_is_built_in_whatever_the_header_says():
    # Pan Docs, $0149: MBC2 carts declare $00; the 512 x 4 bits are inside the MBC2.
    cart = load_cartridge(make_rom(0x06, rom_code=3))
    assert (cart.mbc, cart.ram_bytes, cart.ram_banks, cart.has_battery) == (MBC2, 512, 0, True)
    assert (cart.spec().kind, cart.spec().ram_banks) == (MBC2, 0)
    with pytest.warns(RomWarning, match=r"\$0149 = \$02, but an MBC2 cartridge declares \$00"):
        cart = load_cartridge(make_rom(0x05, ram_code=2))
    assert cart.ram_bytes == 512


def test_mbc2_rom_over_256k_is_refused():
    with pytest.raises(RomError, match=r"MBC2 addresses at most 256 KiB of ROM \(16 banks\), the file is 512 KiB"):
        load_cartridge(make_rom(0x05, rom_code=4))


def with_logo_at(rom: bytes, offset: int) -> bytes:
    b = bytearray(rom)
    b[offset:offset + len(NINTENDO_LOGO)] = NINTENDO_LOGO
    return fix_checksums(b)


def test_logo_constant_matches_the_assembler():
    assert NINTENDO_LOGO == ASM_LOGO and len(NINTENDO_LOGO) == 48


@pytest.mark.parametrize("cart_type", [0x01, 0x02, 0x03])
def test_mbc1m_detected_by_the_logo_in_bank_10(cart_type):
    # Pan Docs, MBC1: multicarts "can normally be identified by having a Nintendo copyright
    # header in bank $10" (file offset $40104); only 1 MiB carts are wired this way.
    plain = make_rom(cart_type, rom_code=5, ram_code=2 if cart_type > 1 else 0)
    assert not load_cartridge(plain).multicart
    cart = load_cartridge(with_logo_at(plain, 0x40104))
    assert cart.multicart and cart.mbc == MBC1 and cart.spec().variant == 1
    assert cart.cart_type_name.startswith("MBC1M") and "MBC1M" in repr(cart)


def test_mbc1m_needs_1mib_mbc1_and_the_whole_logo():
    assert not load_cartridge(with_logo_at(make_rom(0x01, rom_code=4), 0x40104)).multicart   # 512 KiB
    assert not load_cartridge(with_logo_at(make_rom(0x01, rom_code=6), 0x40104)).multicart   # 2 MiB
    assert not load_cartridge(with_logo_at(make_rom(0x19, rom_code=5), 0x40104)).multicart   # MBC5
    assert not load_cartridge(with_logo_at(make_rom(0x01, rom_code=5), 0x80104)).multicart   # bank $20 only
    almost = bytearray(with_logo_at(make_rom(0x01, rom_code=5), 0x40104))
    almost[0x40133] ^= 1
    assert not load_cartridge(fix_checksums(almost)).multicart


def test_invalid_ram_size_code():
    with pytest.raises(RomError, match=r"\$0149 \(RAM size\) is \$07; valid codes are \$00-\$05"):
        load_cartridge(patched(make_rom(0x03), 0x149, 0x07))


def test_bad_header_checksum_is_only_a_warning():
    rom = patched(make_rom(), 0x14D, make_rom()[0x14D] ^ 0xFF, fix=False)
    with pytest.warns(RomWarning, match=r"header checksum at \$014D"):
        cart = load_cartridge(rom)
    assert not cart.header_checksum_ok


def test_good_rom_loads_without_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        load_cartridge(make_rom(0x13, rom_code=3, ram_code=3))


def test_ram_declared_on_type_without_ram_is_ignored_with_warning():
    with pytest.warns(RomWarning, match="has none"):
        cart = load_cartridge(make_rom(0x01, ram_code=3))
    assert cart.ram_bytes == 0


def test_wrong_argument_type():
    with pytest.raises(TypeError, match="rom: expected a file path or bytes, got int"):
        load_cartridge(123)


def test_spec_matches_header():
    cart = load_cartridge(make_rom(0x10, rom_code=4, ram_code=3))
    spec = cart.spec()
    assert (spec.kind, spec.rom_banks, spec.ram_banks, spec.variant) == (MBC3, 32, 4, 1)


def test_boot_rom_loader(tmp_path):
    boot = bytes(range(256))
    path = tmp_path / "dmg_boot.bin"
    path.write_bytes(boot)
    arr = load_boot_rom(path)
    assert arr.dtype == np.uint8 and arr.shape == (256,) and arr[255] == 255
    assert np.array_equal(load_boot_rom(boot), arr)
    with pytest.raises(RomError, match=r"boot ROM .* is 255 bytes; a DMG boot ROM is exactly 256 bytes"):
        load_boot_rom(boot[:255])
    with pytest.raises(RomError, match="boot_rom: file not found"):
        load_boot_rom(tmp_path / "missing.bin")


def test_title_stops_at_nul_and_cgb_flag():
    rom = bytearray(make_rom(title="ABCDEFGHIJKLMNOP"))
    assert load_cartridge(bytes(rom)).title == "ABCDEFGHIJKLMNOP"
    rom[0x143] = 0x80                       # CGB-compatible flag: title is 15 chars
    assert load_cartridge(fix_checksums(rom)).title == "ABCDEFGHIJKLMNO"


def test_garbage_images_only_ever_raise_rom_error():
    """Random bytes of valid and invalid sizes: a clean RomError or a loaded cartridge, nothing else."""
    rng = np.random.default_rng(7)
    loaded = 0
    for i in range(300):
        size = int(rng.choice([0, 100, 0x4000, 0x8000, 0x8000 + 7, 0x10000]))
        data = rng.integers(0, 256, size, dtype=np.uint8).tobytes()
        if i % 3 == 0 and size >= 0x8000:    # make some headers plausible so deeper checks run
            b = bytearray(data)
            b[0x147] = int(rng.choice([0x00, 0x01, 0x13, 0x19, 0x06, 0xFF]))
            b[0x148] = int(rng.choice([0, 1, 9]))
            b[0x149] = int(rng.choice([0, 3, 6]))
            data = bytes(b)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RomWarning)
            try:
                cart = load_cartridge(data)
            except RomError as e:
                assert "\n" not in str(e) and str(e)
                continue
        loaded += 1
        assert cart.rom.size == size and cart.rom_banks * 0x4000 == size
    assert loaded > 0
