"""VecGameBoy core behaviour on tiny hand-assembled programs (bytes written directly).

Expected values come from the hardware documentation (Pan Docs): post-boot state, EI
delay, HALT wake/HALT bug, timer interrupt, serial transfer, joypad lines."""
import numpy as np
import pytest
import warp as wp

from gbx_lightning.emu import Snapshot, VecGameBoy

wp.config.quiet = True


def make_rom(code: dict) -> bytes:
    """32 KiB ROM-only image with `code` = {address: bytes}."""
    rom = bytearray(0x8000)
    rom[0x147] = 0x00
    for addr, data in code.items():
        rom[addr:addr + len(data)] = bytes(data)
    x = 0
    for i in range(0x134, 0x14D):          # header checksum (Pan Docs, $014D)
        x = (x - rom[i] - 1) & 0xFF
    rom[0x14D] = x
    return bytes(rom)


def send(ch: int) -> bytes:
    """SB := ch; SC := $81; wait until SC bit 7 clears (internal-clock transfer)."""
    return bytes([0x3E, ch, 0xE0, 0x01, 0x3E, 0x81, 0xE0, 0x02,
                  0xF0, 0x02, 0xCB, 0x7F, 0x20, 0xFA])


LOOP = bytes([0x18, 0xFE])  # jr $


def run_one_frame(code: dict) -> tuple[VecGameBoy, tuple, int]:
    """One env on make_rom(code) for a frame: (the machine, its A F B C D E H L, its SP)."""
    gb = VecGameBoy(make_rom(code), 1)
    gb.run_frames(1)
    r = gb.registers(0)
    return gb, tuple(r[k] for k in ("a", "f", "b", "c", "d", "e", "h", "l")), r["sp"]


@pytest.fixture(scope="session")
def hello():
    prog = send(ord("H")) + send(ord("I")) + send(ord("\n")) + LOOP
    return VecGameBoy(make_rom({0x100: prog}), 2)


def test_post_boot_registers(hello):
    hello.reset()
    r = hello.registers(1)
    assert (r["a"], r["f"], r["b"], r["c"], r["d"], r["e"], r["h"], r["l"]) == \
        (0x01, 0xB0, 0x00, 0x13, 0x00, 0xD8, 0x01, 0x4D)
    assert (r["sp"], r["pc"], r["ime"], r["halted"], r["locked"]) == (0xFFFE, 0x0100, 0, 0, 0)


def test_post_boot_io(hello):
    hello.reset()
    io = hello.read_memory(0, 0xFF00, 0x80)
    assert io[0x00] == 0xCF          # P1: nothing selected
    assert io[0x04] == 0xAB          # DIV
    assert io[0x07] == 0xF8          # TAC
    assert io[0x0F] == 0xE1          # IF (upper 3 bits read 1)
    assert io[0x40] == 0x91          # LCDC
    assert io[0x41] == 0x85          # STAT
    assert io[0x44] == 0x00          # LY
    assert io[0x47] == 0xFC          # BGP
    assert hello.read_memory(0, 0xFFFF, 1) == b"\x00"   # IE


def test_serial_hello_and_timing(hello):
    hello.reset()
    hello.run_frames(1)
    assert hello.serial_output(0) == b"HI\n"
    assert hello.serial_output(1) == b"HI\n"
    io = hello.read_memory(0, 0xFF00, 0x10)
    assert io[0x01] == 0xFF                 # nothing shifted in
    assert io[0x02] & 0x80 == 0             # transfer done
    assert io[0x0F] & 0x08                  # serial interrupt requested


def test_serial_transfer_takes_4096_cycles():
    # start one transfer, then count loop iterations until SC bit 7 clears
    prog = bytes([0x3E, 0x41, 0xE0, 0x01, 0x3E, 0x81, 0xE0, 0x02,   # start
                  0x01, 0x00, 0x00,                                 # ld bc,0
                  0x03,                                             # .w: inc bc (2)
                  0xF0, 0x02,                                       # ldh a,(02) (3)
                  0xCB, 0x7F,                                       # bit 7,a (2)
                  0x20, 0xF9]) + LOOP                               # jr nz,.w (3/2)
    gb = VecGameBoy(make_rom({0x100: prog}), 1)
    gb.run_frames(1)
    r = gb.registers(0)
    n = (r["b"] << 8) | r["c"]
    # 10 M-cycles (40 T) per iteration; 8 bits at 512 T-cycles each = 4096 T (+ alignment
    # to the 8192 Hz clock edge): between 4096-512 and 4096 T-cycles after the write.
    assert 3584 // 40 <= n <= 4096 // 40 + 1
    assert gb.serial_output(0) == b"A"


TIMER_SETUP = bytes([0xF3,                    # di
                     0x3E, 0x04, 0xE0, 0xFF,  # IE = timer
                     0xAF, 0xE0, 0x0F])       # IF = 0


def test_timer_interrupt_wakes_halt_and_dispatches():
    prog = TIMER_SETUP + bytes([
        0x06, 0x00,                 # ld b,0
        0x3E, 0xFE, 0xE0, 0x05,     # TIMA = $FE
        0x3E, 0x05, 0xE0, 0x07,     # TAC = 5 (enabled, 16 T-cycles)
        0xFB,                       # ei
        0x76,                       # halt
        0x78,                       # ld a,b
        0xEA, 0x00, 0xC0,           # ld ($C000),a
    ]) + LOOP
    handler = bytes([0x04, 0xD9])   # inc b; reti
    gb = VecGameBoy(make_rom({0x100: prog, 0x50: handler}), 1)
    gb.run_frames(1)
    assert gb.read_memory(0, 0xC000, 1) == b"\x01"
    r = gb.registers(0)
    assert r["ime"] == 1 and r["halted"] == 0


def test_ei_delay_one_instruction():
    prog = TIMER_SETUP + bytes([
        0x0E, 0x00,                 # ld c,0
        0x3E, 0x04, 0xE0, 0x0F,     # IF = timer (pending now)
        0xFB,                       # ei
        0x0C, 0x0C, 0x0C,           # inc c x3
    ]) + LOOP
    handler = bytes([0x79, 0xEA, 0x01, 0xC0, 0xD9])   # ld a,c; ld ($C001),a; reti
    gb = VecGameBoy(make_rom({0x100: prog, 0x50: handler}), 1)
    gb.run_frames(1)
    # the interrupt is taken after the instruction following EI: one inc c done
    assert gb.read_memory(0, 0xC001, 1) == b"\x01"
    assert gb.registers(0)["c"] == 3


def test_ei_di_never_dispatches():
    prog = TIMER_SETUP + bytes([
        0x3E, 0x04, 0xE0, 0x0F,     # IF = timer
        0xFB, 0xF3,                 # ei; di
        0x00,
    ]) + LOOP
    handler = bytes([0x3E, 0x99, 0xEA, 0x02, 0xC0, 0xD9])
    gb = VecGameBoy(make_rom({0x100: prog, 0x50: handler}), 1)
    gb.run_frames(1)
    assert gb.read_memory(0, 0xC002, 1) == b"\x00"
    assert gb.read_memory(0, 0xFF0F, 1)[0] & 0x04        # still requested


def test_halt_bug_reads_next_byte_twice():
    prog = TIMER_SETUP + bytes([
        0x0E, 0x00,                 # ld c,0
        0x3E, 0x04, 0xE0, 0x0F,     # IF = timer, IME = 0
        0x76,                       # halt  (IE&IF != 0, IME=0 -> HALT bug)
        0x0C,                       # inc c (executed twice)
    ]) + LOOP
    gb = VecGameBoy(make_rom({0x100: prog}), 1)
    gb.run_frames(1)
    r = gb.registers(0)
    assert r["c"] == 2 and r["halted"] == 0


def test_halt_with_ime0_wakes_without_dispatch():
    prog = TIMER_SETUP + bytes([
        0x0E, 0x00,
        0x3E, 0xFF, 0xE0, 0x05,     # TIMA = $FF
        0x3E, 0x05, 0xE0, 0x07,     # TAC = 5
        0x76,                       # halt (IME = 0, nothing pending yet)
        0x0C,                       # inc c once after waking
    ]) + LOOP
    handler = bytes([0x3E, 0x99, 0xEA, 0x02, 0xC0, 0xD9])
    gb = VecGameBoy(make_rom({0x100: prog, 0x50: handler}), 1)
    gb.run_frames(1)
    assert gb.registers(0)["c"] == 1
    assert gb.read_memory(0, 0xC002, 1) == b"\x00"


def test_vblank_interrupt_once_per_frame():
    prog = bytes([0xF3, 0x3E, 0x01, 0xE0, 0xFF, 0xAF, 0xE0, 0x0F, 0x06, 0x00, 0xFB,
                  0x76, 0x18, 0xFD])                 # .l: halt; jr .l
    handler = bytes([0x04, 0xD9])                   # inc b; reti
    gb = VecGameBoy(make_rom({0x100: prog, 0x40: handler}), 1)
    gb.run_frames(10)
    # a frame ends as VBlank is requested: the 10th VBlank is serviced as the next frame starts
    assert gb.registers(0)["b"] == 9
    gb.run_frames(1)
    assert gb.registers(0)["b"] == 10


def test_illegal_opcode_locks_cpu():
    gb = VecGameBoy(make_rom({0x100: bytes([0x00, 0xD3, 0x00])}), 1)
    gb.run_frames(2)
    r = gb.registers(0)
    assert r["locked"] == 1 and r["pc"] == 0x101
    # time keeps running, nothing else does: to the M-cycle boundary at or after the 2nd
    # VBlank request (2 T after line 144 starts, 65720 T after power-on in the first frame)
    assert r["cycles"] == 65720 + 70224 + 4


def test_joypad_lines_and_interrupt():
    prog = bytes([0x3E, 0x10, 0xE0, 0x00,          # P1 = $10: select buttons (bit 5 = 0)
                  0xF0, 0x00, 0xEA, 0x00, 0xC0,    # .l: ld a,(P1); ld ($C000),a
                  0x18, 0xF9])                     # jr .l
    gb = VecGameBoy(make_rom({0x100: prog}), 2)
    gb.run_frames(1)
    gb.run_frames(1, buttons=np.array([0x10, 0x01], np.uint8))   # env0: A, env1: Right
    mem = [gb.read_memory(e, 0xC000, 1)[0] for e in range(2)]
    assert mem[0] == 0xDE            # A pressed: bit 0 low, buttons selected
    assert mem[1] == 0xDF            # Right is a direction: not selected, nothing low
    assert gb.read_memory(0, 0xFF0F, 1)[0] & 0x10
    assert not gb.read_memory(1, 0xFF0F, 1)[0] & 0x10
    gb.run_frames(2, buttons=np.array([0x10, 0x10], np.uint8), release_after=1)
    assert gb.read_memory(0, 0xC000, 1)[0] == 0xDF


COUNTER = bytes([0x21, 0x00, 0xC0, 0x34, 0x18, 0xFD])   # ld hl,$C000; .l: inc (hl); jr .l


def test_snapshot_restore_and_masked_restore():
    gb = VecGameBoy(make_rom({0x100: COUNTER}), 3)
    gb.run_frames(1)
    snap = gb.snapshot()
    before = [gb.read_memory(e, 0xC000, 1) for e in range(3)]
    regs = gb.registers(2)
    gb.run_frames(1)
    assert gb.read_memory(0, 0xC000, 1) != before[0]
    gb.restore(snap)
    assert [gb.read_memory(e, 0xC000, 1) for e in range(3)] == before
    assert gb.registers(2) == regs
    gb.run_frames(1)
    after = [gb.read_memory(e, 0xC000, 1) for e in range(3)]
    gb.restore(snap, mask=np.array([False, True, False]))
    assert gb.read_memory(1, 0xC000, 1) == before[1]
    assert gb.read_memory(0, 0xC000, 1) == after[0]
    with pytest.raises(TypeError, match="snapshot"):
        gb.restore({"not": "a snapshot"})
    other = VecGameBoy(make_rom({0x100: COUNTER}), 2)
    with pytest.raises(ValueError, match="snapshot"):
        other.restore(snap)


def test_masked_reset():
    gb = VecGameBoy(make_rom({0x100: COUNTER}), 2)
    gb.run_frames(2)
    gb.reset(mask=np.array([True, False]))
    r0, r1 = gb.registers(0), gb.registers(1)
    assert r0["pc"] == 0x100 and r0["cycles"] == 0
    assert gb.read_memory(0, 0xC000, 1) == b"\x00"
    assert r1["cycles"] >= 65720 + 70224 and gb.read_memory(1, 0xC000, 1) != b"\x00"  # untouched


def test_read_memory_regions():
    prog = bytes([0x3E, 0x5A, 0xEA, 0x34, 0xC1,    # ld ($C134),a
                  0xEA, 0x00, 0x80,                # ld ($8000),a
                  0xE0, 0x90]) + LOOP              # ldh ($FF90),a
    gb = VecGameBoy(make_rom({0x100: prog, 0x7FFE: b"\x12\x34"}), 1)
    gb.run_frames(1)
    assert gb.read_memory(0, 0x100, 3) == prog[:3]
    assert gb.read_memory(0, 0xC134, 1) == b"\x5A"
    assert gb.read_memory(0, 0xE134, 1) == b"\x5A"   # echo RAM
    assert gb.read_memory(0, 0x8000, 1) == b"\x5A"
    assert gb.read_memory(0, 0xFF90, 1) == b"\x5A"
    assert gb.read_memory(0, 0xFFFF, 3) == b"\x00\x00\x00"   # IE, then wraps to ROM $0000
    assert gb.read_memory(0, 0x7FFE, 2) == b"\x12\x34"
    assert gb.read_memory(0, 0, 0) == b""


def test_echo_ram_data_accesses_reach_wram():
    """LD (HL),r / LD r,(HL) / ALU (HL) / INC (HL) at the echo addresses ($E000-$FDFF) reach
    WRAM ($C000-$DDFF), at both ends of the echo range; $BFFF (a cart without RAM) reads $FF.
    (The CPU shape decides WRAM and echo first, by one range test: bus.read_data8_cpu.)"""
    prog = bytes([0x3E, 0x5A,          # ld a,$5A
                  0x21, 0x00, 0xE0,    # ld hl,$E000
                  0x77,                # ld (hl),a        ; $C000 = $5A
                  0x3E, 0xA5,          # ld a,$A5
                  0x21, 0xFF, 0xDD,    # ld hl,$DDFF
                  0x77,                # ld (hl),a        ; $DDFF = $A5
                  0x21, 0xFF, 0xFD,    # ld hl,$FDFF
                  0x46,                # ld b,(hl)        ; B = $A5 (echo of $DDFF)
                  0x21, 0x00, 0xC0,    # ld hl,$C000
                  0x4E,                # ld c,(hl)        ; C = $5A
                  0x21, 0x00, 0xE0,    # ld hl,$E000
                  0x86,                # add a,(hl)       ; A = $A5 + $5A = $FF
                  0x34,                # inc (hl)         ; $C000 = $5B
                  0x21, 0xFF, 0xBF,    # ld hl,$BFFF
                  0x56,                # ld d,(hl)        ; D = $FF (no cartridge RAM)
                  0x21, 0x01, 0xDE,    # ld hl,$DE01
                  0x71,                # ld (hl),c        ; $DE01 = $5A
                  0x21, 0x01, 0xFE,    # ld hl,$FE01
                  0x5E]) + LOOP        # ld e,(hl)        ; OAM, not echo: not WRAM's $DE01
    gb = VecGameBoy(make_rom({0x100: prog}), 1)
    gb.run_frames(1)
    r = gb.registers(0)
    assert (r["a"], r["b"], r["c"], r["d"]) == (0xFF, 0xA5, 0x5A, 0xFF)
    assert gb.read_memory(0, 0xC000, 1) == b"\x5B" and gb.read_memory(0, 0xE000, 1) == b"\x5B"
    assert gb.read_memory(0, 0xDDFF, 1) == b"\xA5"
    assert gb.read_memory(0, 0xDE01, 1) == b"\x5A" and r["e"] in (0x00, 0xFF)   # (OAM: $00 or locked $FF)


def test_stack_accesses_in_wram_echo_hram_and_cart_ram():
    """PUSH/POP/CALL/RET with SP at both ends of WRAM, in echo RAM, in HRAM and at $A000 (a cart
    without RAM reads $FF). (The CPU shape's stack accesses test WRAM first: bus.stack_read8_cpu /
    stack_write8_cpu; the rest takes the other paths.)"""
    prog = bytes([0x31, 0x00, 0xE0,    # ld sp,$E000
                  0x01, 0x34, 0x12,    # ld bc,$1234
                  0xC5,                # push bc          ; $DFFF = $12, $DFFE = $34 (WRAM's top)
                  0x31, 0x02, 0xC0,    # ld sp,$C002
                  0x11, 0x78, 0x56,    # ld de,$5678
                  0xD5,                # push de          ; $C001 = $56, $C000 = $78
                  0xE1,                # pop hl           ; HL = $5678
                  0x31, 0xFE, 0xDF,    # ld sp,$DFFE
                  0xD1,                # pop de           ; DE = $1234
                  0x31, 0x02, 0xE0,    # ld sp,$E002      ; echo of $C002
                  0x01, 0xBC, 0x9A,    # ld bc,$9ABC
                  0xC5,                # push bc          ; $C001 = $9A, $C000 = $BC through echo
                  0x31, 0x00, 0xC0,    # ld sp,$C000
                  0xF1,                # pop af           ; A = $9A, F = $B0 (low nibble reads 0)
                  0x31, 0xFE, 0xFF,    # ld sp,$FFFE
                  0xCD, 0x2C, 0x01,    # call $012C       ; $FFFD = $01, $FFFC = $24
                  0x31, 0x00, 0xA0,    # ld sp,$A000      ; (at $0124)
                  0xC1]) + LOOP        # pop bc           ; BC = $FFFF (no cartridge RAM)
    sub = bytes([0x26, 0x77,           # ld h,$77         ; (at $012C)
                 0xC9])                # ret
    assert 0x100 + len(prog) <= 0x12C
    gb, regs, sp = run_one_frame({0x100: prog, 0x12C: sub})
    assert regs == (0x9A, 0xB0, 0xFF, 0xFF, 0x12, 0x34, 0x77, 0x78)
    assert sp == 0xA002
    assert gb.read_memory(0, 0xDFFE, 2) == b"\x34\x12"
    assert gb.read_memory(0, 0xC000, 2) == b"\xBC\x9A"
    assert gb.read_memory(0, 0xFFFC, 2) == b"\x24\x01"


def test_inc_dec_rp_and_ld_indirect_a_with_carries():
    """INC/DEC BC/DE/SP with a carry or borrow out of the low byte (and DE/SP through $0000), LD
    (BC)/(DE),A and back, LD (HL+)/(HL-),A and back with L wrapping into H, on the WRAM fast path.
    (Each is stored in its group's branch, the high byte only on a carry or borrow out of the low.)
    Pan Docs: INC/DEC rp change no flag; HL+ / HL- step HL after the access."""
    prog = bytes([0x01, 0x00, 0xC2,    # ld bc,$C200
                  0x3E, 0x77,          # ld a,$77
                  0x02,                # ld (bc),a        ; [$C200] = $77
                  0x11, 0x00, 0xC2,    # ld de,$C200
                  0xAF,                # xor a
                  0x1A,                # ld a,(de)        ; A = $77
                  0x3C,                # inc a            ; A = $78, F = $00
                  0x12,                # ld (de),a        ; [$C200] = $78
                  0x01, 0xFF, 0x12,    # ld bc,$12FF
                  0x03,                # inc bc           ; $1300
                  0x0B,                # dec bc           ; $12FF
                  0x0B,                # dec bc           ; $12FE
                  0x11, 0x00, 0x00,    # ld de,$0000
                  0x1B,                # dec de           ; $FFFF
                  0x13,                # inc de           ; $0000
                  0x1B,                # dec de           ; $FFFF
                  0x31, 0x00, 0x00,    # ld sp,$0000
                  0x3B,                # dec sp           ; $FFFF
                  0x3B,                # dec sp           ; $FFFE
                  0x33,                # inc sp           ; $FFFF
                  0x21, 0x00, 0xC1,    # ld hl,$C100
                  0x2B,                # dec hl           ; $C0FF
                  0x3E, 0x5A,          # ld a,$5A
                  0x22,                # ld (hl+),a       ; [$C0FF] = $5A, HL = $C100
                  0x3E, 0xA5,          # ld a,$A5
                  0x32,                # ld (hl-),a       ; [$C100] = $A5, HL = $C0FF
                  0x3A,                # ld a,(hl-)       ; A = $5A, HL = $C0FE
                  0x23, 0x23,          # inc hl ; inc hl  ; HL = $C100
                  0x2A]) + LOOP        # ld a,(hl+)       ; A = $A5, HL = $C101
    gb, regs, sp = run_one_frame({0x100: prog})
    assert regs == (0xA5, 0x00, 0x12, 0xFE, 0xFF, 0xFF, 0xC1, 0x01)
    assert sp == 0xFFFF
    assert gb.read_memory(0, 0xC0FF, 2) == b"\x5A\xA5"
    assert gb.read_memory(0, 0xC200, 1) == b"\x78"


def test_push_and_call_nn_on_stacks_in_wram_and_hram():
    """PUSH BC/DE/HL/AF and CALL nn (the CPU shape runs them in groups of their own: cpu.G_PUSH,
    cpu.G_CALL) with the stack in WRAM, then in HRAM; POP and RET read back what they pushed.
    Pan Docs: PUSH rr stores the high byte at SP-1 and the low at SP-2 (AF: A, then F); CALL nn
    pushes the address of the next instruction and jumps to nn."""
    sub = 0x0180
    prog = bytes([0x31, 0x00, 0xD0,    # ld sp,$D000
                  0x01, 0x34, 0x12,    # ld bc,$1234
                  0x11, 0x78, 0x56,    # ld de,$5678
                  0x21, 0xBC, 0x9A,    # ld hl,$9ABC
                  0xAF,                # xor a            ; F = $80
                  0x3E, 0x3C,          # ld a,$3C
                  0x37,                # scf              ; F = $90
                  0xF5,                # push af          ; [$CFFF] = $3C, [$CFFE] = $90
                  0xC5,                # push bc          ; $12, $34
                  0xD5,                # push de          ; $56, $78
                  0xE5,                # push hl          ; $9A, $BC; SP = $CFF8
                  0xCD, sub & 0xFF, sub >> 8,   # call sub      ; [$CFF7] = $01, [$CFF6] = ret & $FF
                  0x31, 0xFE, 0xFF,    # ld sp,$FFFE
                  0xD5,                # push de          ; HRAM: [$FFFD] = $56, [$FFFC] = $78
                  0xCD, (sub + 4) & 0xFF, (sub + 4) >> 8,   # call sub+4: [$FFFB] = $01, [$FFFA] = ...
                  0xE1]) + LOOP        # pop hl           ; HL = $5678
    ret1 = 0x100 + 23
    ret2 = 0x100 + 30
    sub_code = bytes([0xC1,            # sub:   pop bc     ; BC = ret1
                      0xC5,            #        push bc
                      0xC9,            #        ret
                      0x00,
                      0xD1,            # sub+4: pop de     ; DE = ret2
                      0xD5,            #        push de
                      0xC9])           #        ret
    gb, regs, sp = run_one_frame({0x100: prog, sub: sub_code})
    assert regs == (0x3C, 0x90, ret1 >> 8, ret1 & 0xFF, ret2 >> 8, ret2 & 0xFF, 0x56, 0x78)
    assert sp == 0xFFFE
    assert gb.read_memory(0, 0xCFF6, 10) == bytes([ret1 & 0xFF, ret1 >> 8, 0xBC, 0x9A, 0x78, 0x56,
                                                     0x34, 0x12, 0x90, 0x3C])
    assert gb.read_memory(0, 0xFFFA, 4) == bytes([ret2 & 0xFF, ret2 >> 8, 0x78, 0x56])


def test_io_registers_through_the_slow_path():
    """I/O registers that the instruction loop's fast paths leave to bus_read / bus_write (BGP, SB,
    NR50, IF: every register but P1, LY, STAT, DIV), written and read back through (HL), each value
    logged to WRAM. Pan Docs: BGP, SB and NR50 read back what was written; IF's upper 3 bits read 1.
    (On the CPU bus_read and bus_write take I/O and HRAM before they read the Machine: bus.io_first.)"""
    prog = bytes([0x11, 0x00, 0xC0,    # ld de,$C000      ; the log
                  0x21, 0x47, 0xFF,    # ld hl,BGP
                  0x36, 0x1B,          # ld (hl),$1B
                  0x7E, 0x12, 0x13,    # ld a,(hl) ; ld (de),a ; inc de   -> $1B
                  0x2E, 0x01,          # ld l,SB
                  0x36, 0x5A,          # ld (hl),$5A
                  0x7E, 0x12, 0x13,    # -> $5A
                  0x2E, 0x24,          # ld l,NR50
                  0x36, 0x35,          # ld (hl),$35
                  0x7E, 0x12, 0x13,    # -> $35
                  0x2E, 0x0F,          # ld l,IF
                  0x36, 0x04,          # ld (hl),$04      ; the timer request alone
                  0x7E, 0x12, 0x13,    # -> $E4
                  0x36, 0x00,          # ld (hl),$00
                  0x7E, 0x12]) + LOOP  # -> $E0
    gb = VecGameBoy(make_rom({0x100: prog}), 1)
    gb.run_frames(1)
    assert gb.read_memory(0, 0xC000, 5) == bytes([0x1B, 0x5A, 0x35, 0xE4, 0xE0])
    assert gb.read_memory(0, 0xFF47, 1) == b"\x1B" and gb.read_memory(0, 0xFF24, 1) == b"\x35"


def test_state_is_per_env_and_rom_shared():
    gb = VecGameBoy(make_rom({0x100: LOOP}), 4)
    assert 0 < gb.state_bytes_per_env < 64 * 1024
    assert gb.obs().shape == (4, 72, 80) and gb.obs() is gb.obs()
    assert gb.frame().shape == (4, 144, 160) and gb.frame().dtype == np.uint8


def test_bad_arguments():
    rom = make_rom({0x100: LOOP})
    with pytest.raises(ValueError, match="num_envs"):
        VecGameBoy(rom, 0)
    with pytest.raises(TypeError, match="num_envs"):
        VecGameBoy(rom, 1.5)
    with pytest.raises(ValueError, match="256"):
        VecGameBoy(rom, 1, boot_rom=b"\x00" * 100)
    gb = VecGameBoy(rom, 2)
    with pytest.raises(ValueError, match="frames"):
        gb.run_frames(-1)
    with pytest.raises(ValueError, match="buttons"):
        gb.run_frames(1, buttons=np.zeros(2, np.int32))
    with pytest.raises(ValueError, match="buttons"):
        gb.run_frames(1, buttons=np.zeros(3, np.uint8))
    with pytest.raises(ValueError, match="release_after"):
        gb.run_frames(1, release_after=-2)
    with pytest.raises(ValueError, match="render"):
        gb.run_frames(1, render="rgb")
    with pytest.raises(IndexError, match="env"):
        gb.registers(2)
    with pytest.raises(IndexError, match="env"):
        gb.serial_output(-1)
    with pytest.raises(ValueError, match="addr"):
        gb.read_memory(0, 0x10000, 1)
    with pytest.raises(ValueError, match="mask"):
        gb.reset(mask=np.ones(3, bool))


def test_cli_run_prints_serial_and_writes_png(tmp_path, capsys):
    from gbx_lightning.emu.__main__ import main
    from gbx_lightning.media import decode_png_grey

    rom = tmp_path / "hello.gb"
    rom.write_bytes(make_rom({0x100: send(ord("O")) + send(ord("K")) + LOOP}))
    png = tmp_path / "shot.png"
    assert main(["run", str(rom), "--frames", "2", "--print-serial",
                 "--screenshot", str(png), "--scale", "1"]) == 0
    assert capsys.readouterr().out.endswith("OK")     # (after any Warp banner)
    assert decode_png_grey(png.read_bytes()).shape == (144, 160)
    with pytest.raises(SystemExit):
        main(["run", str(rom), "--frames", "-1"])


def test_boot_rom_runs_then_unmaps():
    boot = bytearray(256)
    code = bytes([0x31, 0xFE, 0xFF,             # ld sp,$FFFE
                  0x3E, 0x42, 0xEA, 0x00, 0xC0])  # ld a,$42; ld ($C000),a
    boot[:len(code)] = code                     # then NOPs up to $FC
    boot[0xFC:0x100] = bytes([0x3E, 0x01, 0xE0, 0x50])   # ld a,1; ldh ($50),a -> falls to $0100
    cart = make_rom({0x0000: b"\x77", 0x100: bytes([0xFA, 0x00, 0x00, 0xEA, 0x01, 0xC0]) + LOOP})
    gb = VecGameBoy(cart, 1, boot_rom=bytes(boot))
    r = gb.registers(0)
    assert r["pc"] == 0 and r["a"] == 0 and r["sp"] == 0
    assert gb.read_memory(0, 0x0000, 1) == b"\x31"       # boot ROM mapped over the cartridge
    gb.run_frames(1)
    assert gb.read_memory(0, 0xC000, 2) == b"\x42\x77"   # boot ran; after $FF50 the cart shows
    assert gb.read_memory(0, 0x0000, 1) == b"\x77"


def test_dispatch_cancelled_when_push_overwrites_ie():
    # SP = $0000: the PC-high push lands on IE ($FFFF) and clears the timer enable, so the
    # dispatch finds nothing pending and jumps to $0000 (Pan Docs, Interrupts: dispatch).
    prog = TIMER_SETUP + bytes([
        0x31, 0x00, 0x00,           # ld sp,$0000
        0x3E, 0x04, 0xE0, 0x0F,     # IF = timer only
        0xFB, 0x00,                 # ei; nop -> dispatch
    ]) + LOOP
    at_zero = bytes([0x3E, 0x77, 0xEA, 0x00, 0xC0, 0x18, 0xFE])    # ld ($C000),$77
    handler = bytes([0x3E, 0x55, 0xEA, 0x00, 0xC0, 0x18, 0xFE])    # ld ($C000),$55
    gb = VecGameBoy(make_rom({0x100: prog, 0x0000: at_zero, 0x50: handler}), 1)
    gb.run_frames(1)
    assert gb.read_memory(0, 0xC000, 1) == b"\x77"
    assert gb.read_memory(0, 0xFFFF, 1) == b"\x01"    # PC high byte of the return address


def test_stop_sleeps_until_a_button_press():
    prog = bytes([0x3E, 0x10, 0xE0, 0x00,   # select buttons
                  0x10, 0x00,               # stop
                  0x0C]) + LOOP             # inc c
    gb = VecGameBoy(make_rom({0x100: prog}), 2)
    gb.run_frames(1)
    assert all(gb.registers(e)["stopped"] == 1 and gb.registers(e)["c"] == 0x13 for e in range(2))
    gb.run_frames(1, buttons=np.array([0x10, 0x00], np.uint8))
    r0, r1 = gb.registers(0), gb.registers(1)
    assert (r0["stopped"], r0["c"]) == (0, 0x14)
    assert (r1["stopped"], r1["c"]) == (1, 0x13)


def test_buttons_as_device_array():
    prog = bytes([0x3E, 0x20, 0xE0, 0x00,          # P1 = $20: select directions (bit 4 = 0)
                  0xF0, 0x00, 0xEA, 0x00, 0xC0,    # .l: ld a,(P1); ld ($C000),a
                  0x18, 0xF9])
    gb = VecGameBoy(make_rom({0x100: prog}), 2)
    gb.run_frames(1, buttons=wp.array(np.array([0x01, 0x08], np.uint8), dtype=wp.uint8))
    assert [gb.read_memory(e, 0xC000, 1)[0] for e in range(2)] == [0xEE, 0xE7]  # Right / Down
    with pytest.raises(ValueError, match="buttons"):
        gb.run_frames(1, buttons=wp.zeros(2, dtype=wp.int32))


def test_opcode_groups_table():
    """Every base opcode has an execute branch; the 11 illegal ones hang (Pan Docs, CPU
    instruction set: D3 DB DD E3 E4 EB EC ED F4 FC FD), $CB is the prefix, $76 HALT."""
    from gbx_lightning.emu import cpu
    groups = cpu.OPCODE_GROUPS
    assert groups.shape == (256,) and set(groups.tolist()) == set(range(cpu.G_ILLEGAL + 1))
    illegal = [op for op in range(256) if groups[op] == cpu.G_ILLEGAL]
    assert illegal == [0xD3, 0xDB, 0xDD, 0xE3, 0xE4, 0xEB, 0xEC, 0xED, 0xF4, 0xFC, 0xFD]
    assert groups[0xCB] == cpu.G_CB and groups[0x76] == cpu.G_HALT and groups[0x00] == cpu.G_NOP
    assert [op for op in range(256) if groups[op] == cpu.G_LD_R_R] == [
        op for op in range(0x40, 0x80) if op & 7 != 6 and (op >> 3) & 7 != 6]


# APU on, CH2's DAC on, its length 64 clocks, triggered with the length enabled (Pan Docs, Audio
# Registers: NR21-NR24); it turns off after 64 length clocks of 2 DIV-APU events (8192 T) each,
# 1,048,576 T-cycles: 14.9 frames.
CH2_LENGTH = bytes([0x3E, 0x80, 0xE0, 0x26, 0x3E, 0xF0, 0xE0, 0x17, 0xAF, 0xE0, 0x16,
                    0x3E, 0xC0, 0xE0, 0x19]) + LOOP


def _nr52_per_frame(gb, frames: int) -> list[int]:
    out = []
    for _ in range(frames):
        gb.run_frames(1)
        out.append(gb.read_memory(0, 0xFF26, 1)[0])
    return out


def test_state_file_keeps_the_sound_counters(tmp_path):
    """A state file saved while CH2's length timer runs: the loaded machine's NR52 turns CH2 off
    at the same frame as the machine it was saved from. A version-2 file (saved before the sound
    counters existed) still loads: its channels keep the flags they had, their timers at rest."""
    from gbx_lightning.emu import state as S
    from gbx_lightning.emu.savestate import rows_digest

    rom = make_rom({0x100: CH2_LENGTH})
    gb = VecGameBoy(rom, 1)
    gb.run_frames(5)
    gb.save_state(tmp_path / "ch2.npz")
    rows = gb.env_rows(0)
    want = _nr52_per_frame(gb, 14)
    # (CH1 on since the boot ROM) CH2 on 12 frames after the trigger, off by 19
    assert want[7] == 0xF3 and want[-1] == 0xF1
    other = VecGameBoy(rom, 2)
    other.load_state(tmp_path / "ch2.npz")
    assert _nr52_per_frame(other, 14) == want
    old = {k: v for k, v in rows.items() if k != "apu"}
    with open(tmp_path / "v2.npz", "wb") as f:
        np.savez_compressed(f, format=np.array("gbx_lightning.state"), version=np.array(2),
                            rom_sha256=np.array(gb.cart.sha256), rom_title=np.array(""),
                            rows_sha256=np.array(rows_digest(old)), **{f"row_{k}": v for k, v in old.items()})
    other.load_state(tmp_path / "v2.npz")
    apu = other.state_array("apu").numpy()[0]
    assert apu[S.A_SYNC_T] == rows["r64"][S.T_NOW] and not apu[S.A_LEN1:S.A_LEN1 + 4].any()
    assert _nr52_per_frame(other, 14) == [0xF3] * 14
