"""The SM83 opcode table as data: mnemonic, length in bytes, M-cycles (not taken) and
M-cycles when a conditional branch is taken. cpu.py's microcode produces these timings by
construction; tests check both against the SingleStepTests cases.

Cycle grids are in M-cycles (1 M-cycle = 4 T-cycles), row = high nibble, column = low
nibble; "--" marks the 11 illegal opcodes (they lock the CPU) and CB (the prefix).
"""
from __future__ import annotations

from typing import NamedTuple

_BASE_CYCLES = """
1 3 2 2 1 1 2 1 5 2 2 2 1 1 2 1
1 3 2 2 1 1 2 1 3 2 2 2 1 1 2 1
2 3 2 2 1 1 2 1 2 2 2 2 1 1 2 1
2 3 2 2 3 3 3 1 2 2 2 2 1 1 2 1
1 1 1 1 1 1 2 1 1 1 1 1 1 1 2 1
1 1 1 1 1 1 2 1 1 1 1 1 1 1 2 1
1 1 1 1 1 1 2 1 1 1 1 1 1 1 2 1
2 2 2 2 2 2 1 2 1 1 1 1 1 1 2 1
1 1 1 1 1 1 2 1 1 1 1 1 1 1 2 1
1 1 1 1 1 1 2 1 1 1 1 1 1 1 2 1
1 1 1 1 1 1 2 1 1 1 1 1 1 1 2 1
1 1 1 1 1 1 2 1 1 1 1 1 1 1 2 1
2 3 3 4 3 4 2 4 2 4 3 - 3 6 2 4
2 3 3 - 3 4 2 4 2 4 3 - 3 - 2 4
3 3 2 - - 4 2 4 4 1 4 - - - 2 4
3 3 2 1 - 4 2 4 3 2 4 1 - - 2 4
"""

_BASE_LENGTHS = """
1 3 1 1 1 1 2 1 3 1 1 1 1 1 2 1
2 3 1 1 1 1 2 1 2 1 1 1 1 1 2 1
2 3 1 1 1 1 2 1 2 1 1 1 1 1 2 1
2 3 1 1 1 1 2 1 2 1 1 1 1 1 2 1
1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1
1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1
1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1
1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1
1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1
1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1
1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1
1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1
1 1 3 3 3 1 2 1 1 1 3 - 3 3 2 1
1 1 3 - 3 1 2 1 1 1 3 - 3 - 2 1
2 1 1 - - 1 2 1 2 1 3 - - - 2 1
2 1 1 1 - 1 2 1 2 1 3 1 - - 2 1
"""

# Conditional branches: M-cycles when the condition holds.
_TAKEN = {0x20: 3, 0x28: 3, 0x30: 3, 0x38: 3,              # JR cc
          0xC0: 5, 0xC8: 5, 0xD0: 5, 0xD8: 5,              # RET cc
          0xC2: 4, 0xCA: 4, 0xD2: 4, 0xDA: 4,              # JP cc
          0xC4: 6, 0xCC: 6, 0xD4: 6, 0xDC: 6}              # CALL cc

ILLEGAL = (0xD3, 0xDB, 0xDD, 0xE3, 0xE4, 0xEB, 0xEC, 0xED, 0xF4, 0xFC, 0xFD)


class Opcode(NamedTuple):
    code: int
    mnemonic: str
    length: int
    cycles: int
    cycles_taken: int | None  # None: not a conditional branch


def _grid(text: str) -> list[int | None]:
    cells = text.split()
    assert len(cells) == 256
    return [None if c == "-" else int(c) for c in cells]


_R = ["B", "C", "D", "E", "H", "L", "(HL)", "A"]
_RP = ["BC", "DE", "HL", "SP"]
_RP2 = ["BC", "DE", "HL", "AF"]
_CC = ["NZ", "Z", "NC", "C"]
_ALU = ["ADD A,", "ADC A,", "SUB", "SBC A,", "AND", "XOR", "OR", "CP"]
_ROT = ["RLC", "RRC", "RL", "RR", "SLA", "SRA", "SWAP", "SRL"]
_X0Z7 = ["RLCA", "RRCA", "RLA", "RRA", "DAA", "CPL", "SCF", "CCF"]
_SPECIAL = {
    0x00: "NOP", 0x08: "LD (a16),SP", 0x10: "STOP", 0x18: "JR e8", 0x76: "HALT",
    0x02: "LD (BC),A", 0x12: "LD (DE),A", 0x22: "LD (HL+),A", 0x32: "LD (HL-),A",
    0x0A: "LD A,(BC)", 0x1A: "LD A,(DE)", 0x2A: "LD A,(HL+)", 0x3A: "LD A,(HL-)",
    0xE0: "LDH (a8),A", 0xF0: "LDH A,(a8)", 0xE2: "LD (C),A", 0xF2: "LD A,(C)",
    0xE8: "ADD SP,e8", 0xF8: "LD HL,SP+e8", 0xC9: "RET", 0xD9: "RETI", 0xE9: "JP HL",
    0xF9: "LD SP,HL", 0xC3: "JP a16", 0xCB: "PREFIX CB", 0xF3: "DI", 0xFB: "EI",
    0xCD: "CALL a16", 0xEA: "LD (a16),A", 0xFA: "LD A,(a16)",
}


def _mnemonic(op: int) -> str:
    if op in ILLEGAL:
        return "ILLEGAL"
    if op in _SPECIAL:
        return _SPECIAL[op]
    x, y, z, p, q = op >> 6, (op >> 3) & 7, op & 7, (op >> 4) & 3, (op >> 3) & 1
    if x == 0:
        if z == 0:
            return f"JR {_CC[y - 4]},e8"
        if z == 1:
            return f"LD {_RP[p]},n16" if q == 0 else f"ADD HL,{_RP[p]}"
        if z == 3:
            return f"{'INC' if q == 0 else 'DEC'} {_RP[p]}"
        if z == 4:
            return f"INC {_R[y]}"
        if z == 5:
            return f"DEC {_R[y]}"
        if z == 6:
            return f"LD {_R[y]},n8"
        return _X0Z7[y]
    if x == 1:
        return f"LD {_R[y]},{_R[z]}"
    if x == 2:
        return f"{_ALU[y]} {_R[z]}".replace(", ", ",")
    if z == 0:
        return f"RET {_CC[y]}"
    if z == 1:
        return f"POP {_RP2[p]}"
    if z == 2:
        return f"JP {_CC[y]},a16"
    if z == 4:
        return f"CALL {_CC[y]},a16"
    if z == 5:
        return f"PUSH {_RP2[p]}"
    if z == 6:
        return f"{_ALU[y]} n8".replace(", ", ",")
    return f"RST ${y * 8:02X}"


def _build_base() -> list[Opcode]:
    cycles, lengths = _grid(_BASE_CYCLES), _grid(_BASE_LENGTHS)
    out = []
    for op in range(256):
        if op in ILLEGAL:
            out.append(Opcode(op, "ILLEGAL", 1, 0, None))
        elif op == 0xCB:
            out.append(Opcode(op, "PREFIX CB", 2, 0, None))
        else:
            out.append(Opcode(op, _mnemonic(op), lengths[op], cycles[op], _TAKEN.get(op)))
    return out


def _build_cb() -> list[Opcode]:
    out = []
    for op in range(256):
        x, y, z = op >> 6, (op >> 3) & 7, op & 7
        name = _ROT[y] if x == 0 else ("BIT", "RES", "SET")[x - 1] + f" {y},"
        name = f"{name} {_R[z]}".replace(", ", ",")
        cyc = 2 if z != 6 else (3 if x == 1 else 4)
        out.append(Opcode(op, name, 2, cyc, None))
    return out


BASE: list[Opcode] = _build_base()   # index = opcode
CB: list[Opcode] = _build_cb()       # index = byte after $CB
