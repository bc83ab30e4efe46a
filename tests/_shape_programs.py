"""Random programs for differential runs of the machine kernel's two shapes (the CPU shape and the
CUDA shape, cpu.machine_kernel / machine_kernel_staged) against each other: tools/shape_diff.py
runs them by the thousand, tests/test_shape_parity.py a short batch in CI.

Nothing here is checked against the hardware: both shapes run the same program and must end every
frame in the same machine state, whatever the program does. So the programs aim at what the two
shapes do differently (docs/gpu.md: the operand and data stages, the loop state kept in a struct,
the run limit) and at the scheduler around them: every opcode group, EI/DI/HALT/STOP/RETI and the
HALT bug, interrupts from every source (timer, STAT, LYC, VBlank, serial, joypad) taken anywhere,
also during HALT with IME 0, MBC1/MBC3/MBC5 ROM and RAM banks switched right before banked calls
(from ROM and from HRAM, as Pokemon Red's far calls), code running from WRAM, HRAM, cartridge RAM,
VRAM and across the $3FFF/$4000 and $7FFF/$8000 edges, OAM DMA from an HRAM routine, RST and CALL
to odd places, and I/O writes and reads by every addressing mode ((HL), (C), (n), (nn), SET/RES/INC
on (HL)). Each env gets its own buttons (the programs branch on them), so envs of one machine
follow different paths.

The programs never write their stack ($DF00-$DFFF), their RAM routines or the interrupt log
outside the code that owns them, and each HALT is preceded by IE's VBlank bit and the LCD on, so a
program keeps running for as many frames as it is given (an interrupt may still arrive while IME
is 0 and the HALT bug repeat a byte: deterministic, so compared all the same)."""
from __future__ import annotations

import random

# Memory map of a program
HRAM_CODE = 0xFF80        # HRAM routines (OAM DMA, far call trampoline, a random one), to $FFBF
HRAM_DATA = 0xFFC0        # data the blocks read and write, to $FFEF
HRAM_SEED = 0xFFF0        # the program's mixing byte (buttons, LY, DIV ... folded in)
HRAM_BANK = 0xFFF1        # the ROM bank the far call trampoline returns to
WRAM_CODE = 0xC800        # a WRAM routine, to $C8FF
IRQ_LOG = 0xD800          # interrupt log: $D800 index, then vector id / DIV / LY triples
STACK = 0xDFF0
# where the blocks read and write data: (first, last) with 4 bytes to spare for LD [HL+]
DATA_AREAS = ((0xC000, 0xC7FB), (0xD000, 0xD7FB), (0xE000, 0xE7FB), (0x8100, 0x9FFB), (0xFE00, 0xFE9F),
              (HRAM_DATA, 0xFFEB), (0xA100, 0xBFFB))

# Register opcodes that touch neither memory nor SP nor control flow (raw bytes, some with an n)
_REG_OPS = ([op for op in range(0x40, 0x80) if op != 0x76 and (op & 7) != 6 and (op >> 3) & 7 != 6]
            + [op for op in range(0x80, 0xC0) if (op & 7) != 6]
            + [0x04, 0x05, 0x0C, 0x0D, 0x14, 0x15, 0x1C, 0x1D, 0x24, 0x25, 0x2C, 0x2D, 0x3C, 0x3D,
               0x03, 0x0B, 0x13, 0x1B, 0x23, 0x2B, 0x09, 0x19, 0x29,
               0x07, 0x0F, 0x17, 0x1F, 0x27, 0x2F, 0x37, 0x3F, 0x00])
_IMM_OPS = [0x06, 0x0E, 0x16, 0x1E, 0x26, 0x2E, 0x3E, 0xC6, 0xCE, 0xD6, 0xDE, 0xE6, 0xEE, 0xF6, 0xFE]
_R = ["b", "c", "d", "e", "h", "l", "a"]
_CONDS = ["nz", "z", "nc", "c"]
# I/O registers written, and how their values are drawn
_IO_WRITES = {
    0x07: lambda r: r.choice([0x04, 0x05, 0x06, 0x07, 0x00, 0x01, r.randrange(256)]),     # TAC
    0x05: lambda r: r.choice([0xFF, 0xFE, 0xF0, r.randrange(256)]),                          # TIMA
    0x06: lambda r: r.choice([0xFF, 0xFE, 0xF8, 0x00, r.randrange(256)]),                    # TMA
    0x04: lambda r: r.randrange(256),                                                        # DIV
    0x0F: lambda r: r.randrange(32),                                                         # IF
    0xFF: lambda r: r.randrange(32) | r.choice([1, 1, 0]),                                   # IE
    0x41: lambda r: r.choice([0x08, 0x10, 0x20, 0x40, 0x48, 0x00, r.randrange(256)]),        # STAT
    0x45: lambda r: r.choice([0, 1, 143, 144, 153, r.randrange(154)]),                       # LYC
    0x40: lambda r: r.choice([0x91, 0x93, 0xB3, 0xE3, 0x83, 0x97, 0x11]),                    # LCDC (off rarely)
    0x42: lambda r: r.randrange(256), 0x43: lambda r: r.randrange(256),                      # SCY SCX
    0x47: lambda r: r.randrange(256), 0x48: lambda r: r.randrange(256),                      # BGP OBP0
    0x4A: lambda r: r.randrange(160), 0x4B: lambda r: r.randrange(176),                      # WY WX
    0x01: lambda r: r.randrange(256),                                                        # SB
    0x02: lambda r: r.choice([0x81, 0x81, 0x80, 0x01, 0x00]),                                # SC
    0x00: lambda r: r.choice([0x10, 0x20, 0x30, 0x00]),                                      # P1 select
    0x26: lambda r: r.choice([0x80, 0x80, 0x00]),                                            # NR52
    0x12: lambda r: r.choice([0xF0, 0x00, 0x08]), 0x14: lambda r: r.choice([0x80, 0xC0, 0x40]),
    0x11: lambda r: r.randrange(256), 0x24: lambda r: r.randrange(256),
}
_IO_READS = [0x44, 0x41, 0x04, 0x05, 0x0F, 0xFF, 0x00, 0x02, 0x01, 0x26, 0x07, 0x06, 0x40, 0x45, 0x11]


class _Gen:
    def __init__(self, seed: int, mbc: str | None = None):
        self.r = random.Random(seed)
        self.mbc = mbc or self.r.choice(["mbc1", "mbc3", "mbc5"])
        self.lines: list[str] = []
        self.n = 0

    def label(self, stem: str = "l") -> str:
        self.n += 1
        return f".{stem}{self.n}"

    def emit(self, *lines: str):
        self.lines.extend(lines)

    # ---- small pieces ----------------------------------------------------------------------
    def reg_ops(self, count: int):
        """Raw register opcodes: every LD r,r' / ALU / INC / DEC / rotate / 16-bit register op."""
        r = self.r
        out = []
        for _ in range(count):
            k = r.random()
            if k < 0.6:
                out.append(f"${r.choice(_REG_OPS):02X}")
            elif k < 0.8:
                out.append(f"${r.choice(_IMM_OPS):02X}, ${r.randrange(256):02X}")
            else:                                            # CB on a register
                out.append(f"$CB, ${(r.randrange(256) & ~7) | r.choice([0, 1, 2, 3, 4, 5, 7]):02X}")
        self.emit("    db " + ", ".join(out))

    def data_addr(self) -> int:
        lo, hi = self.r.choice(DATA_AREAS)
        return self.r.randint(lo, hi)

    def mix(self):
        """Fold A into the mixing byte (so what a read saw steers later branches)."""
        self.emit(f"    ld b, a", f"    ldh a, [${HRAM_SEED & 0xFF:02X}]", "    rlca", "    xor b",
                  f"    ldh [${HRAM_SEED & 0xFF:02X}], a")

    def wake_safe(self):
        """IE's VBlank bit and the LCD on, so a HALT that follows always ends."""
        self.emit("    ldh a, [$FF]", "    or 1", "    ldh [$FF], a", "    ldh a, [$40]", "    or $80", "    ldh [$40], a")

    # ---- blocks ----------------------------------------------------------------------------
    def b_regs(self):
        self.reg_ops(self.r.randint(1, 8))

    def b_mem(self):
        r = self.r
        addr = self.data_addr()
        self.emit(f"    ld hl, ${addr:04X}")
        for _ in range(r.randint(1, 4)):
            k = r.randrange(12)
            if k == 0:
                self.emit(f"    ld [hl], {r.choice(_R[:4] + ['a'])}")
            elif k == 1:
                self.emit(f"    ld {r.choice(['a', 'b', 'c', 'd', 'e'])}, [hl]")
            elif k == 2:
                self.emit(r.choice(["    inc [hl]", "    dec [hl]"]))
            elif k == 3:
                self.emit(f"    {r.choice(['set', 'res', 'bit'])} {r.randrange(8)}, [hl]")
            elif k == 4:
                self.emit(f"    {r.choice(['rlc', 'rrc', 'rl', 'rr', 'sla', 'sra', 'swap', 'srl'])} [hl]")
            elif k == 5:
                self.emit(f"    {r.choice(['add', 'adc', 'sub', 'sbc', 'and', 'xor', 'or', 'cp'])} a, [hl]")
            elif k == 6:
                self.emit(f"    ld [hl], ${r.randrange(256):02X}")
            elif k == 7:
                self.emit(r.choice(["    ld [hl+], a", "    ld [hl-], a", "    ld a, [hl+]", "    ld a, [hl-]"]))
            elif k == 8:
                a2 = self.data_addr()
                self.emit(f"    ld {r.choice(['a', 'b'])}, ${r.randrange(256):02X}" if r.random() < 0.3 else "    nop",
                          r.choice([f"    ld [${a2:04X}], a", f"    ld a, [${a2:04X}]"]))
            elif k == 9:
                a2 = self.data_addr()
                rp = r.choice(["bc", "de"])
                self.emit(f"    ld {rp}, ${a2:04X}", r.choice([f"    ld [{rp}], a", f"    ld a, [{rp}]"]))
            elif k == 10:
                a2 = r.randint(HRAM_DATA, 0xFFEE)
                self.emit(f"    ld [${a2:04X}], sp")
            else:
                a2 = r.randint(HRAM_DATA, 0xFFEF) & 0xFF
                self.emit(r.choice([f"    ldh [${a2:02X}], a", f"    ldh a, [${a2:02X}]"]))

    def b_io_write(self):
        r = self.r
        reg = r.choice(list(_IO_WRITES))
        v = _IO_WRITES[reg](r)
        addr = 0xFF00 | reg
        k = r.randrange(7)
        if k == 0:
            self.emit(f"    ld a, ${v:02X}", f"    ldh [${reg:02X}], a")
        elif k == 1:
            self.emit(f"    ld a, ${v:02X}", f"    ld [${addr:04X}], a")
        elif k == 2:
            self.emit(f"    ld hl, ${addr:04X}", f"    ld [hl], ${v:02X}")
        elif k == 3 and reg != 0xFF:
            self.emit(f"    ld a, ${v:02X}", f"    ld c, ${reg:02X}", "    ld [c], a")
        elif k == 4:
            self.emit(f"    ld hl, ${addr:04X}", f"    {r.choice(['set', 'res'])} {r.randrange(8)}, [hl]")
        elif k == 5:
            self.emit(f"    ld hl, ${addr:04X}", r.choice(["    inc [hl]", "    dec [hl]"]))
        else:
            self.emit(f"    ld b, ${v:02X}", f"    ld hl, ${addr:04X}", "    ld [hl], b")

    def b_io_read(self):
        r = self.r
        reg = r.choice(_IO_READS)
        k = r.randrange(4)
        if k == 0:
            self.emit(f"    ldh a, [${reg:02X}]")
        elif k == 1:
            self.emit(f"    ld c, ${reg:02X}", "    ld a, [c]")
        elif k == 2:
            self.emit(f"    ld hl, ${0xFF00 | reg:04X}", f"    {r.choice(['ld a, [hl]', 'xor [hl]', 'add a, [hl]'])}")
        else:
            self.emit(f"    ld a, [${0xFF00 | reg:04X}]")
        self.mix()

    def b_irq(self):
        r = self.r
        k = r.randrange(11)
        if k == 0:
            self.emit("    ei")
        elif k == 1:
            self.emit("    di")
        elif k == 2:
            self.emit("    ei", "    di")
        elif k == 3:
            self.emit("    di", "    ei")
        elif k in (4, 5):
            self.wake_safe()
            self.emit(r.choice(["    ei", "    di", "    nop"]), "    halt", r.choice(["    nop", "    inc a", "    ld b, $42"]))
        elif k == 6:
            self.wake_safe()
            self.emit("    ei", "    halt")                          # EI then HALT with a request pending
        elif k == 7:                                                  # request an interrupt now
            self.emit(f"    ld a, ${r.randrange(1, 32):02X}", "    ldh [$0F], a", r.choice(["    ei", "    nop"]))
        elif k == 8:                                                  # EI's delay over one instruction
            self.emit("    ei", r.choice(["    nop", "    ld a, b", "    di", "    ei", "    push bc\n    pop bc"]))
        elif k == 9:
            self.emit(f"    call sub_reti{r.randrange(2)}")               # RETI from a plain call
        else:
            self.emit("    ei", "    nop", "    nop", "    di")

    def b_bank_call(self):
        r = self.r
        bank = r.randint(1, 7)
        routine = r.randrange(6)
        k = r.randrange(4)
        if k == 0:
            self.emit(f"    ld a, {bank}", "    ld [$2000], a", f"    call bank_routine_{routine}")
        elif k == 1:                                                  # the register written through (HL)
            reg = r.randint(0x2000, 0x2FFF if self.mbc == "mbc5" else 0x3FFF)
            self.emit(f"    ld a, {bank}", f"    ld hl, ${reg:04X}", "    ld [hl], a", f"    call bank_routine_{routine}")
        elif k == 2:                                                  # far call through HRAM (Pokemon Red's)
            self.emit(f"    ld a, {bank}", f"    ld hl, bank_routine_{routine}", "    call hram_farcall")
        else:                                                         # switched from the banked area itself:
            self.emit(f"    ld a, {bank}", "    call bank_hop")          # the next fetch is the new bank's
        if self.mbc == "mbc5" and r.random() < 0.2:
            self.emit(f"    ld a, {r.randrange(2)}", "    ld [$3000], a", "    xor a", "    ld [$3000], a")
        if self.mbc == "mbc1" and r.random() < 0.2:
            self.emit(f"    ld a, {r.randrange(2)}", "    ld [$6000], a", "    ld a, 1", "    ld [$4000], a",
                      "    xor a", "    ld [$4000], a", "    ld [$6000], a")

    def b_ram(self):
        r = self.r
        k = r.randrange(5)
        if k == 0:
            self.emit(f"    ld a, ${r.choice([0x0A, 0x0A, 0x00]):02X}", "    ld [$0000], a")
        elif k == 1:
            bank = r.randrange(4) if self.mbc != "mbc3" else r.choice([0, 1, 2, 3, 8, 9, 10, 11, 12])
            self.emit(f"    ld a, {bank}", "    ld [$4000], a")
            if self.mbc == "mbc1":
                self.emit("    ld a, 1", "    ld [$6000], a")
        elif k == 2:
            a = r.randint(0xA000, 0xBFFF)
            self.emit(f"    ld a, ${r.randrange(256):02X}", f"    ld [${a:04X}], a", f"    ld a, [${a:04X}]")
            self.mix()
        elif k == 3 and self.mbc == "mbc3":
            self.emit("    xor a", "    ld [$6000], a", "    inc a", "    ld [$6000], a")     # RTC latch
        else:                                                         # run the SRAM routine
            self.emit("    call sram_call")

    def b_call_ram(self):
        r = self.r
        self.emit(r.choice(["    call wram_routine", "    call hram_random", "    call hram_oam_dma",
                            "    call vram_call", "    call edge_3fff", "    call edge_7fff"]))

    def b_rst(self):
        self.emit(f"    rst ${self.r.randrange(8) * 8:02X}")

    def b_loop(self):
        r = self.r
        lab = self.label("w")
        k = r.randrange(4)
        if k == 0:
            self.emit(f"    ld b, {r.randint(1, 60)}", f"{lab}:", "    dec b", f"    jr nz, {lab}")
        elif k == 1:                                                  # bounded LY / STAT / DIV poll
            reg, want = r.choice([(0x44, r.randrange(154)), (0x41, r.randrange(4)), (0x04, r.randrange(256)),
                                  (0x05, r.randrange(256))])
            out = self.label("x")
            mask = "    and 3" if reg == 0x41 else "    nop"
            self.emit(f"    ld b, {r.randint(20, 255)}", f"{lab}:", f"    ldh a, [${reg:02X}]", mask, f"    cp ${want:02X}",
                      f"    jr z, {out}", "    dec b", f"    jr nz, {lab}", f"{out}:")
        elif k == 2:
            self.emit(f"    ld de, {r.randint(1, 400)}", f"{lab}:", "    dec de", "    ld a, d", "    or e",
                      f"    jr nz, {lab}")
        else:                                                         # JP backwards
            self.emit(f"    ld c, {r.randint(1, 40)}", f"{lab}:", "    dec c", f"    jp nz, {lab}")

    def b_branch(self):
        r = self.r
        skip = self.label("s")
        cc = r.choice(_CONDS)
        self.emit(f"    ldh a, [${HRAM_SEED & 0xFF:02X}]", f"    {r.choice(['and', 'cp', 'sub', 'xor'])} ${r.randrange(256):02X}")
        k = r.randrange(4)
        if k == 0:
            self.emit(f"    jr {cc}, {skip}")
            self.reg_ops(r.randint(1, 3))
            self.emit(f"{skip}:")
        elif k == 1:
            self.emit(f"    jp {cc}, {skip}")
            self.b_io_write()
            self.emit(f"{skip}:")
        elif k == 2:
            self.emit(f"    call {cc}, sub_plain{r.randrange(3)}")
        else:
            self.emit(f"    call sub_retcc{r.randrange(2)}")

    def b_joypad(self):
        r = self.r
        skip = self.label("j")
        self.emit(f"    ld a, ${r.choice([0x10, 0x20]):02X}", "    ldh [$00], a", "    ldh a, [$00]", "    ldh a, [$00]",
                  f"    bit {r.randrange(4)}, a", f"    jr nz, {skip}")
        self.reg_ops(r.randint(1, 3))
        if r.random() < 0.3:
            self.b_irq()
        self.emit(f"{skip}:", "    ldh a, [$00]")
        self.mix()
        if r.random() < 0.05:                                         # STOP: ends on a press
            self.emit("    ld a, $30", "    ldh [$00], a", "    ldh a, [$00]", "    and $0F", "    cp $0F",
                      f"    jr nz, {skip}x", "    ld a, $10", "    ldh [$00], a", "    stop", f"{skip}x:")

    def b_stack(self):
        r = self.r
        k = r.randrange(4)
        if k == 0:
            a, b = r.choice(["bc", "de", "hl", "af"]), r.choice(["bc", "de", "hl", "af"])
            self.emit(f"    push {a}", f"    pop {b}")
        elif k == 1:
            e = r.randint(1, 64)
            self.emit(f"    add sp, -{e}", f"    add sp, {e}")
        elif k == 2:
            self.emit(f"    ld hl, sp+{r.randint(-128, 127)}")
        else:
            self.emit("    ld hl, 0", "    add hl, sp", "    ld sp, hl")

    def block(self):
        r = self.r
        kinds = [(self.b_regs, 10), (self.b_mem, 10), (self.b_io_write, 12), (self.b_io_read, 8), (self.b_irq, 10),
                 (self.b_bank_call, 9), (self.b_ram, 4), (self.b_call_ram, 6), (self.b_rst, 3), (self.b_loop, 5),
                 (self.b_branch, 5), (self.b_joypad, 4), (self.b_stack, 3)]
        f = r.choices([k for k, _ in kinds], [w for _, w in kinds])[0]
        f()

    def snippet(self, count: int):
        """A few blocks that keep the stack balanced and return nothing (for handlers, routines)."""
        keep = self.lines
        self.lines = []
        for _ in range(count):
            self.r.choice([self.b_regs, self.b_mem, self.b_io_read, self.b_io_write])()
        out, self.lines = self.lines, keep
        return out

    # ---- the program -------------------------------------------------------------------------
    def build(self, blocks: int, keep=None) -> str:
        r = self.r
        cart = {"mbc1": "$03", "mbc3": "$13", "mbc5": "$1B"}[self.mbc]
        self.emit('    title "SHAPEDIFF"', f"    cart_type {cart}", "    rom_size $02", "    ram_size $03")
        for k in range(8):                                            # RST vectors
            self.emit(f"    org ${k * 8:04X}", f"    jp rst_{k}")
        for k in range(5):                                            # interrupt vectors
            self.emit(f"    org ${0x40 + 8 * k:04X}", f"    jp irq_{k}")
        self.emit("    org $0100", "    nop", "    jp main", "    org $0150")
        # handlers: log (vector, DIV, LY), a random snippet, then RETI / EI+RET / RET (IME stays 0)
        for k in range(5):
            self.emit(f"irq_{k}:", "    push af", "    push bc", "    push de", "    push hl",
                      f"    ld hl, ${IRQ_LOG:04X}", "    ld a, [hl]", "    add 3", "    ld [hl], a", "    ld l, a",
                      f"    ld [hl], {k}", "    inc l", "    ldh a, [$04]", "    ld [hl+], a", "    ldh a, [$44]", "    ld [hl], a")
            self.lines += self.snippet(r.randint(0, 2))
            if r.random() < 0.2:
                self.emit("    ei")                                   # nested interrupts
                self.lines += self.snippet(1)
            self.emit("    pop hl", "    pop de", "    pop bc", "    pop af",
                      *r.choices([["    reti"], ["    ei", "    ret"], ["    ret"]], [6, 2, 1])[0])
        for k in range(8):
            self.emit(f"rst_{k}:", "    push hl")
            self.lines += self.snippet(r.randint(0, 2))
            self.emit("    pop hl", "    ret")
        for k in range(3):
            self.emit(f"sub_plain{k}:", "    push hl")
            self.lines += self.snippet(r.randint(1, 2))
            self.emit("    pop hl", "    ret")
        for k in range(2):
            self.emit(f"sub_retcc{k}:", f"    ldh a, [${HRAM_SEED & 0xFF:02X}]", f"    cp ${r.randrange(256):02X}",
                      f"    ret {r.choice(_CONDS)}", "    push hl")
            self.lines += self.snippet(1)
            self.emit("    pop hl", "    ret")
            self.emit(f"sub_reti{k}:", "    push hl")
            self.lines += self.snippet(r.randint(0, 1))
            self.emit("    pop hl", "    reti")
        # main: set up RAM code, then the blocks forever
        self.emit("main:", "    di", f"    ld sp, ${STACK:04X}", "    xor a", "    ldh [$40], a",      # LCD off: VRAM free
                  f"    ld hl, ${IRQ_LOG:04X}", "    ld [hl], a",
                  "    ld hl, $8000", "    ld bc, $0100", ".vfill:", "    ld a, $C9", "    ld [hl+], a", "    dec bc",
                  "    ld a, b", "    or c", "    jr nz, .vfill",
                  "    ld hl, hram_src", f"    ld de, ${HRAM_CODE:04X}", "    ld b, hram_end - hram_src", ".hcopy:",
                  "    ld a, [hl+]", "    ld [de], a", "    inc e", "    dec b", "    jr nz, .hcopy",
                  "    ld hl, wram_src", f"    ld de, ${WRAM_CODE:04X}", "    ld b, wram_end - wram_src", ".wcopy:",
                  "    ld a, [hl+]", "    ld [de], a", "    inc de", "    dec b", "    jr nz, .wcopy",
                  "    ld a, $0A", "    ld [$0000], a", "    xor a", "    ld [$4000], a",
                  "    ld hl, sram_src", "    ld de, $A000", "    ld b, sram_end - sram_src", ".scopy:",
                  "    ld a, [hl+]", "    ld [de], a", "    inc de", "    dec b", "    jr nz, .scopy",
                  f"    ld a, ${r.randrange(256):02X}", f"    ldh [${HRAM_SEED & 0xFF:02X}], a",
                  f"    ld a, ${_IO_WRITES[0x07](r) | 4:02X}", "    ldh [$07], a",
                  f"    ld a, ${r.randrange(1, 32) | 1:02X}", "    ldh [$FF], a", "    xor a", "    ldh [$0F], a",
                  f"    ld a, ${r.choice([0x08, 0x40, 0x48, 0x00, 0x20]):02X}", "    ldh [$41], a",
                  f"    ld a, {r.randrange(154)}", "    ldh [$45], a", "    ld a, $91", "    ldh [$40], a",
                  "    ld a, 1", "    ld [$2000], a", f"    ldh [${HRAM_BANK & 0xFF:02X}], a", "    ei", "main_loop:")
        for i in range(blocks):
            start = len(self.lines)
            self.block()
            if keep is not None and not keep(i):          # (generated all the same: the rest is unchanged)
                del self.lines[start:]
        self.emit("    jp main_loop")
        # code copied to RAM (its own labels resolve to ROM addresses: only relative jumps inside)
        saved, self.lines = self.lines, []
        self.reg_ops(r.randint(1, 4))
        self.b_io_read()
        hram_random, self.lines = self.lines, saved
        self.emit("hram_src:",                                         # OAM DMA as games do it
                  "    ld a, $C1", "    ldh [$46], a", "    ld a, 40", ".dma_wait:", "    dec a", "    jr nz, .dma_wait", "    ret",
                  "hram_farcall_src:",                                 # A = bank, HL = routine
                  "    ld b, a", f"    ldh a, [${HRAM_BANK & 0xFF:02X}]", "    push af", "    ld a, b",
                  f"    ldh [${HRAM_BANK & 0xFF:02X}], a", "    ld [$2000], a", "    call hram_tramp_jump", "    pop af",
                  f"    ldh [${HRAM_BANK & 0xFF:02X}], a", "    ld [$2000], a", "    ret",
                  "hram_random_src:", *hram_random, "    ret",
                  "hram_end:",
                  f"    assert hram_end - hram_src <= ${HRAM_DATA - HRAM_CODE:02X}, \"HRAM routines overlap the data\"")
        self.emit("wram_src:", *self.snippet(r.randint(1, 4)), "    ret", "wram_end:")
        self.emit("sram_src:", *self.snippet(r.randint(1, 3)), "    ret", "sram_end:")
        self.emit(f"hram_oam_dma EQU ${HRAM_CODE:04X}", f"hram_farcall EQU ${HRAM_CODE:04X} + hram_farcall_src - hram_src",
                  f"hram_random EQU ${HRAM_CODE:04X} + hram_random_src - hram_src", f"wram_routine EQU ${WRAM_CODE:04X}",
                  "hram_tramp_jump:", "    jp hl",
                  "sram_call:", "    ld a, $0A", "    ld [$0000], a", "    xor a", "    ld [$4000], a",
                  *(["    ld [$6000], a"] if self.mbc == "mbc1" else []), "    jp $A000",
                  "vram_call:", "    jp $8000 + " + str(r.randrange(0x100)))
        # the $3FFF/$4000 edge: LD HL,nn at $3FFD takes its high byte from the mapped bank's $4000
        self.emit("    org $3FF0", "edge_3fff:", "    jp $3FFD", "    org $3FFD", "    db $21, $00")
        # banks: routines at fixed addresses; $4000 = LD HL's operand byte, then RET at $4001
        for bank in range(1, 8):
            self.emit(f"    bank {bank}", "    org $4000", f"    db {bank}", "    ret")
            # the same three instructions at the same address in every bank: the LD A after the
            # switch is fetched from the new bank
            self.emit("    org $4008")
            if bank == 1:
                self.emit("bank_hop:")
            self.emit("    ld [$2000], a", f"    ld a, {bank}", "    ret")
            for k in range(6):
                self.emit(f"    org ${0x4010 + 0x80 * k:04X}")
                if bank == 1:
                    self.emit(f"bank_routine_{k}:")
                self.emit(f"    ld a, {bank}", "    push hl")
                body = self.snippet(r.randint(1, 3))
                self.lines += body
                self.emit("    pop hl", "    ret")
            # the $7FFF/$8000 edge: LD A,n at $7FFF takes n from VRAM $8000, then runs $8001 (RET)
            self.emit("    org $7FF0")
            if bank == 1:
                self.emit("edge_7fff:")
            self.emit("    jp $7FFF", "    org $7FFF", "    db $3E")
        return "\n".join(self.lines) + "\n"


def program(seed: int, blocks: int = 60, mbc: str | None = None, keep=None) -> str:
    """The assembly source of random program `seed` (MBC1, MBC3 or MBC5 from the seed if not given);
    keep(i) False leaves main's block i out (the rest of the program unchanged: for shrinking a
    program that shows a difference)."""
    return _Gen(seed, mbc).build(blocks, keep)


_ILLEGAL = (0xD3, 0xDB, 0xDD, 0xE3, 0xE4, 0xEB, 0xEC, 0xED, 0xF4, 0xFC, 0xFD)


def chaos_rom(seed: int) -> bytes:
    """A ROM of random bytes (MBC1, MBC3 or MBC5, 8 banks) entered at $0150: every opcode, including
    STOP, HALT, DI/EI and RETI, with whatever operands, writes to any register and jumps anywhere, also
    into RAM and I/O; the illegal opcodes (which lock the CPU for good) are replaced by NOPs, and 9 in
    10 HALTs and STOPs (which, with IE = 0, stop it for good), so a program keeps running longer. Not a program anyone would write: both shapes must still agree on it."""
    r = random.Random(seed)
    rom = bytearray(r.randbytes(8 * 0x4000))
    for i, b in enumerate(rom):
        if b in _ILLEGAL or b in (0x76, 0x10) and r.random() < 0.9:   # (HALT, STOP: rarer)
            rom[i] = 0x00
    from gbx_lightning.roms.asm import NINTENDO_LOGO, fix_checksums

    rom[0x100:0x104] = bytes([0x00, 0xC3, 0x50, 0x01])            # nop; jp $0150
    rom[0x104:0x134] = NINTENDO_LOGO
    rom[0x134:0x150] = bytes(0x1C)
    rom[0x147] = r.choice([0x03, 0x13, 0x1B])                     # MBC1 / MBC3 / MBC5, with RAM
    rom[0x148], rom[0x149] = 0x02, 0x03                           # 128 KiB ROM, 32 KiB RAM
    return fix_checksums(rom)
