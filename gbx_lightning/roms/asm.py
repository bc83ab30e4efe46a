"""A small two-pass SM83 assembler that builds complete Game Boy ROM images.

The project writes its own test ROMs and its embedded game in assembly; this
module turns that source into a ROM the emulator (and PyBoy, gambatte) will
boot: Nintendo logo, header fields and both checksums filled in, padded to the
size the header declares.

Syntax (an RGBDS-flavoured subset)::

    NAME EQU expr            ; or: DEF NAME EQU expr
    label:                   ; global label (label:: also accepted)
    .local:                  ; local to the last global label (Global.local from elsewhere)
    org $0150                ; set the address (within the current bank)
    bank 2                   ; switch to ROM bank 2; org then takes $4000-$7FFF
    db 1, "text\\n", 'c'      ; bytes and strings;  dw $1234 ; ds 16[, fill]
    include "file.inc"       ; relative to the including file, then include_dirs
    incbin "tiles.bin"       ; raw bytes
    assert expr[, "msg"]     ; checked in pass 2
    title "NAME"  cart_type $01  rom_size 2  ram_size 0   ; header fields
    MACRO check_eq           ; (or: check_eq: MACRO) \\1-\\9 arguments, \\@ unique
        cp \\2             ; suffix per call, _NARG argument count
        jr z, .ok\\@
    .ok\\@:
    ENDM
    rept 4 / endr            ; repeat a block (count known in pass 1)
    if expr / elif / else / endc   ; conditional assembly (known in pass 1)

Numbers: ``$FF 0xFF %1010 0b1010 255 'c'``, and tile rows ``dw `01233210`` (RGBDS's graphics
literal: colour indices, leftmost pixel first; ``dw`` stores the low bit plane, then the high);
``@`` is the address of the current line. Operators (C precedence): ``|| && | ^ & == != < <= > >= << >> + - * / %``
and unary ``- + ~ !``; functions ``high() low() bank()``.

Instructions use the standard mnemonics: ``ld a, [hl+]`` (``[hli]``, ``ldi``
too), ``ldh [$ff00+c], a`` / ``ldh [c], a``, ``ldh [$44], a``, ``ld [$ff40], a``
(always the 3-byte form), ``ld hl, sp+5``, ``jp hl``, ``jr nz, .loop``,
``bit 7, h``, ``rst $38``, ``add a, b`` or ``add b``.

Instruction encodings come from one table (``FORMS``) generated from the
opcode map's register/condition fields, so each family is written once.
"""
from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "AsmError",
    "assemble",
    "assemble_with_symbols",
    "FORMS",
    "NINTENDO_LOGO",
    "header_checksum",
    "global_checksum",
    "fix_checksums",
]

# The 48-byte logo bitmap the boot ROM compares at $0104-$0133; a cartridge
# without it does not boot on hardware (Pan Docs, "The Cartridge Header").
NINTENDO_LOGO = bytes.fromhex(
    "CEED6666CC0D000B03730083000C000D0008111F8889000E"
    "DCCC6EE6DDDDD999BBBB67636E0EECCCDDDC999FBBB9333E"
)

HEADER_START, HEADER_END = 0x0104, 0x0150   # bytes the assembler owns
BANK_SIZE = 0x4000


class AsmError(ValueError):
    """An assembly error; the message starts with ``file:line:``."""


# --------------------------------------------------------------------------
# Instruction table
# --------------------------------------------------------------------------
# An operand pattern is either a literal (register, condition, [reg]) or one of
# these placeholders, which take an expression:
#   n8 n16     immediate byte / word
#   e8         jr target address (encoded relative to the next instruction)
#   s8         signed byte (add sp, e8 / ldhl sp, e8)
#   u3         bit number 0-7, OR-ed into the opcode as bits 3-5
#   vec        rst vector $00-$38, OR-ed into the opcode
#   [n16]      absolute memory address
#   [ff8]      high-page address ($FF00-$FFFF, or $00-$FF) for ldh
#   sp+s8      "sp+expr" / "sp-expr" for ld hl, sp+e8
PLACEHOLDERS = ("n8", "n16", "e8", "s8", "u3", "vec", "[n16]", "[ff8]", "sp+s8")
_IMM_SIZE = {"n8": 1, "n16": 2, "e8": 1, "s8": 1, "u3": 0, "vec": 0,
             "[n16]": 2, "[ff8]": 1, "sp+s8": 1}

R8 = ("b", "c", "d", "e", "h", "l", "[hl]", "a")      # opcode field order
R16 = ("bc", "de", "hl", "sp")
R16_STACK = ("bc", "de", "hl", "af")
CONDITIONS = ("nz", "z", "nc", "c")
ALU_OPS = ("add", "adc", "sub", "sbc", "and", "xor", "or", "cp")
CB_SHIFTS = ("rlc", "rrc", "rl", "rr", "sla", "sra", "swap", "srl")


@dataclass(frozen=True)
class Form:
    """One encodable instruction shape: operand patterns -> opcode bytes."""

    mnemonic: str
    operands: tuple
    opcode: bytes

    @property
    def placeholder(self):
        for i, p in enumerate(self.operands):
            if p in PLACEHOLDERS:
                return i, p
        return None

    @property
    def size(self) -> int:
        ph = self.placeholder
        return len(self.opcode) + (_IMM_SIZE[ph[1]] if ph else 0)


def _build_forms() -> dict:
    forms: dict[str, list[Form]] = {}

    def add(mnemonic, operands, *opcode):
        entry = Form(mnemonic, tuple(operands), bytes(opcode))
        for other in forms.setdefault(mnemonic, []):
            if other.operands == entry.operands:
                raise AssertionError(f"duplicate form {mnemonic} {operands}")
        forms[mnemonic].append(entry)

    # Block 0 ($00-$3F)
    add("nop", (), 0x00)
    for p, rr in enumerate(R16):
        add("ld", (rr, "n16"), 0x01 + 16 * p)
        add("inc", (rr,), 0x03 + 16 * p)
        add("dec", (rr,), 0x0B + 16 * p)
        add("add", ("hl", rr), 0x09 + 16 * p)
    for p, mem in enumerate(("[bc]", "[de]", "[hl+]", "[hl-]")):
        add("ld", (mem, "a"), 0x02 + 16 * p)
        add("ld", ("a", mem), 0x0A + 16 * p)
    for y, r in enumerate(R8):
        add("inc", (r,), 0x04 + 8 * y)
        add("dec", (r,), 0x05 + 8 * y)
        add("ld", (r, "n8"), 0x06 + 8 * y)
    for y, m in enumerate(("rlca", "rrca", "rla", "rra", "daa", "cpl", "scf", "ccf")):
        add(m, (), 0x07 + 8 * y)
    add("ld", ("[n16]", "sp"), 0x08)
    add("stop", (), 0x10, 0x00)          # STOP is followed by a padding byte
    add("jr", ("e8",), 0x18)
    for y, cc in enumerate(CONDITIONS):
        add("jr", (cc, "e8"), 0x20 + 8 * y)
        add("ret", (cc,), 0xC0 + 8 * y)
        add("jp", (cc, "n16"), 0xC2 + 8 * y)
        add("call", (cc, "n16"), 0xC4 + 8 * y)
    # Block 1 ($40-$7F): ld r, r' — except $76, which is HALT
    for d, rd in enumerate(R8):
        for s, rs in enumerate(R8):
            if rd == rs == "[hl]":
                continue
            add("ld", (rd, rs), 0x40 + 8 * d + s)
    add("halt", (), 0x76)
    # Block 2 ($80-$BF) and the n8 column of block 3: ALU a, x ("a," optional)
    for o, m in enumerate(ALU_OPS):
        for s, r in enumerate(R8):
            add(m, ("a", r), 0x80 + 8 * o + s)
            add(m, (r,), 0x80 + 8 * o + s)
        add(m, ("a", "n8"), 0xC6 + 8 * o)
        add(m, ("n8",), 0xC6 + 8 * o)
    # Block 3 ($C0-$FF)
    for p, rr in enumerate(R16_STACK):
        add("pop", (rr,), 0xC1 + 16 * p)
        add("push", (rr,), 0xC5 + 16 * p)
    add("ret", (), 0xC9)
    add("reti", (), 0xD9)
    add("jp", ("n16",), 0xC3)
    add("jp", ("hl",), 0xE9)
    add("jp", ("[hl]",), 0xE9)
    add("call", ("n16",), 0xCD)
    add("rst", ("vec",), 0xC7)
    add("ldh", ("[ff8]", "a"), 0xE0)
    add("ldh", ("a", "[ff8]"), 0xF0)
    for m in ("ld", "ldh"):
        add(m, ("[c]", "a"), 0xE2)
        add(m, ("a", "[c]"), 0xF2)
    add("add", ("sp", "s8"), 0xE8)
    add("ld", ("[n16]", "a"), 0xEA)
    add("ld", ("a", "[n16]"), 0xFA)
    add("di", (), 0xF3)
    add("ei", (), 0xFB)
    add("ld", ("hl", "sp+s8"), 0xF8)
    add("ldhl", ("sp", "s8"), 0xF8)
    add("ld", ("sp", "hl"), 0xF9)
    # CB prefix: rotates/shifts, then bit/res/set with the bit number in bits 3-5
    for o, m in enumerate(CB_SHIFTS):
        for s, r in enumerate(R8):
            add(m, (r,), 0xCB, 8 * o + s)
    for o, m in enumerate(("bit", "res", "set")):
        for s, r in enumerate(R8):
            add(m, ("u3", r), 0xCB, 0x40 + 0x40 * o + s)
    return forms


FORMS: dict = _build_forms()

# Operand spellings that mean the same literal pattern.
_LITERALS = {r: r for r in R8 + R16 + R16_STACK + CONDITIONS}
_LITERALS.update({
    "[bc]": "[bc]", "[de]": "[de]", "[hl]": "[hl]",
    "[hl+]": "[hl+]", "[hli]": "[hl+]", "[hl-]": "[hl-]", "[hld]": "[hl-]",
    "[c]": "[c]", "[$ff00+c]": "[c]", "[0xff00+c]": "[c]", "[65280+c]": "[c]",
})
for _k in list(_LITERALS):
    if _k.startswith("["):      # (hl) etc. also accepted for register operands
        _LITERALS["(" + _k[1:-1] + ")"] = _LITERALS[_k]
_EXPR_KINDS = frozenset(("n8", "n16", "e8", "s8", "u3", "vec"))
_MEM_KINDS = frozenset(("[n16]", "[ff8]"))


# --------------------------------------------------------------------------
# Expressions
# --------------------------------------------------------------------------
_TOKEN_RE = re.compile(r"""
    (?P<ws>\s+)
  | (?P<hex>(?:\$|0[xX])[0-9A-Fa-f_]+)
  | (?P<bin>0[bB][01_]+)
  | (?P<gfx>`[0-3]{8})
  | (?P<dec>[0-9][0-9_]*)
  | (?P<char>'(?:\\.|[^'\\])')
  | (?P<name>[A-Za-z_.][A-Za-z0-9_.]*|@)
  | (?P<op><<|>>|<=|>=|==|!=|&&|\|\||[-+*/%&|^~()<>!,])
""", re.X)

_ESCAPES = {"n": 10, "r": 13, "t": 9, "0": 0, "\\": 92, '"': 34, "'": 39}

_BINARY_LEVELS = (
    ("||",), ("&&",), ("|",), ("^",), ("&",), ("==", "!="),
    ("<", "<=", ">", ">="), ("<<", ">>"), ("+", "-"), ("*", "/", "%"),
)


class _Undefined(Exception):
    """A symbol is not (yet) defined; pass 1 tolerates this."""

    def __init__(self, name):
        super().__init__(name)
        self.name = name


def _char_value(text: str) -> int:
    body = text[1:-1]
    if body.startswith("\\"):
        if body[1] not in _ESCAPES:
            raise ValueError(f"unknown escape {body!r}")
        return _ESCAPES[body[1]]
    return ord(body)


def _gfx_row(pixels: str) -> int:
    """RGBDS's graphics literal: 8 colour indices 0-3, leftmost pixel first, as the 16-bit value whose low
    byte is the row's low bit plane and high byte its high plane, so ``dw`` stores a tile row as the PPU reads
    it (Pan Docs, Tile Data: the first byte of a row holds each pixel's bit 0, bit 7 = leftmost)."""
    lo = hi = 0
    for ch in pixels:
        c = int(ch)
        lo = lo << 1 | (c & 1)
        hi = hi << 1 | (c >> 1)
    return lo | hi << 8


def _tokenize(text: str):
    tokens, pos = [], 0
    while pos < len(text):
        m = _TOKEN_RE.match(text, pos)
        if not m:
            raise ValueError(f"unexpected character {text[pos]!r} in expression {text!r}")
        pos = m.end()
        kind = m.lastgroup
        if kind != "ws":
            tokens.append((kind, m.group()))
    return tokens


class _ExprParser:
    """Recursive-descent evaluator over tokens; `lookup(name)` resolves symbols."""

    def __init__(self, text, lookup, bank_of):
        self.text = text
        self.tokens = _tokenize(text)
        self.i = 0
        self.lookup = lookup
        self.bank_of = bank_of

    def peek(self):
        return self.tokens[self.i] if self.i < len(self.tokens) else (None, None)

    def take(self):
        tok = self.peek()
        self.i += 1
        return tok

    def expect(self, value):
        kind, tok = self.take()
        if tok != value:
            raise ValueError(f"expected {value!r} in expression {self.text!r}, got {tok!r}")

    def parse(self):
        if not self.tokens:
            raise ValueError("empty expression")
        value = self.binary(0)
        if self.i != len(self.tokens):
            raise ValueError(f"unexpected {self.peek()[1]!r} in expression {self.text!r}")
        return value

    def binary(self, level):
        if level == len(_BINARY_LEVELS):
            return self.unary()
        left = self.binary(level + 1)
        while self.peek()[0] == "op" and self.peek()[1] in _BINARY_LEVELS[level]:
            op = self.take()[1]
            right = self.binary(level + 1)
            left = _apply(op, left, right)
        return left

    def unary(self):
        kind, tok = self.peek()
        if kind == "op" and tok in ("-", "+", "~", "!"):
            self.take()
            v = self.unary()
            return {"-": -v, "+": v, "~": ~v, "!": int(not v)}[tok]
        return self.primary()

    def primary(self):
        kind, tok = self.take()
        if kind is None:
            raise ValueError(f"expression {self.text!r} ends too early")
        if kind == "hex":
            return int(tok[1:] if tok[0] == "$" else tok[2:], 16)
        if kind == "bin":
            return int(tok[2:], 2)
        if kind == "dec":
            return int(tok)
        if kind == "char":
            return _char_value(tok)
        if kind == "gfx":                       # `01233210: one 8-pixel row of a 2bpp tile
            return _gfx_row(tok[1:])
        if kind == "op" and tok == "%":          # %1010 binary literal
            k2, digits = self.take()
            if k2 != "dec" or set(digits) - set("01_"):
                raise ValueError(f"bad binary number '%{digits}' in {self.text!r}")
            return int(digits, 2)
        if kind == "op" and tok == "(":
            v = self.binary(0)
            self.expect(")")
            return v
        if kind == "name":
            lower = tok.lower()
            if lower in ("high", "low", "bank") and self.peek()[1] == "(":
                self.take()
                if lower == "bank":
                    k2, name = self.take()
                    if k2 != "name":
                        raise ValueError(f"bank() takes a label, got {name!r}")
                    self.expect(")")
                    return self.bank_of(name)
                v = self.binary(0)
                self.expect(")")
                return (v >> 8) & 0xFF if lower == "high" else v & 0xFF
            return self.lookup(tok)
        raise ValueError(f"unexpected {tok!r} in expression {self.text!r}")


def _shift_count(b):
    if not 0 <= b <= 63:
        raise ValueError(f"shift count {b} out of range (0..63)")
    return b


def _apply(op, a, b):
    if op in ("/", "%"):
        if b == 0:
            raise ValueError("division by zero in expression")
        q = abs(a) // abs(b) * (1 if (a >= 0) == (b >= 0) else -1)   # C-style truncation
        return q if op == "/" else a - q * b
    return {
        "||": lambda: int(bool(a) or bool(b)), "&&": lambda: int(bool(a) and bool(b)),
        "|": lambda: a | b, "^": lambda: a ^ b, "&": lambda: a & b,
        "==": lambda: int(a == b), "!=": lambda: int(a != b),
        "<": lambda: int(a < b), "<=": lambda: int(a <= b),
        ">": lambda: int(a > b), ">=": lambda: int(a >= b),
        "<<": lambda: a << _shift_count(b), ">>": lambda: a >> _shift_count(b),
        "+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b,
    }[op]()


# --------------------------------------------------------------------------
# Source lines
# --------------------------------------------------------------------------
@dataclass
class _Line:
    file: str
    number: int
    text: str
    via: str = ""          # "macro NAME called at file:line" for expanded lines

    @property
    def where(self):
        return f"{self.file}:{self.number}" + (f" ({self.via})" if self.via else "")


def _strip_comment(text: str) -> str:
    quote = None
    i = 0
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 1
            elif ch == quote:
                quote = None
        elif ch in "\"'":
            # 'x' is a character literal only when it closes two characters on
            if ch == '"' or re.match(r"'(\\.|[^'\\])'", text[i:]):
                quote = ch
        elif ch == ";":
            return text[:i]
        i += 1
    return text


def _split_operands(text: str) -> list:
    parts, depth, quote, cur = [], 0, None, []
    i = 0
    while i < len(text):
        ch = text[i]
        if quote:
            cur.append(ch)
            if ch == "\\" and i + 1 < len(text):
                cur.append(text[i + 1])
                i += 1
            elif ch == quote:
                quote = None
        elif ch == '"' or (ch == "'" and re.match(r"'(\\.|[^'\\])'", text[i:])):
            quote = ch
            cur.append(ch)
        elif ch in "([":
            depth += 1
            cur.append(ch)
        elif ch in ")]":
            depth -= 1
            cur.append(ch)
        elif ch == "," and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
        i += 1
    tail = "".join(cur).strip()
    if tail or parts:
        parts.append(tail)
    return parts


def _parse_string(text: str) -> bytes:
    """A double-quoted string literal with C escapes -> bytes (ASCII)."""
    if len(text) < 2 or not (text[0] == text[-1] == '"'):
        raise ValueError(f"expected a quoted string, got {text!r}")
    out, i, body = bytearray(), 0, text[1:-1]
    while i < len(body):
        ch = body[i]
        if ch == "\\":
            if i + 1 >= len(body) or body[i + 1] not in _ESCAPES:
                raise ValueError(f"unknown escape in string {text!r}")
            out.append(_ESCAPES[body[i + 1]])
            i += 2
            continue
        if ord(ch) > 0x7F:
            raise ValueError(f"non-ASCII character {ch!r} in string {text!r}")
        out.append(ord(ch))
        i += 1
    return bytes(out)


_LABEL_RE = re.compile(r"^\s*((?:[A-Za-z_][A-Za-z0-9_]*)?(?:\.[A-Za-z_][A-Za-z0-9_]*)?)(::?)")
_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _load_lines(source, origin_file, include_dirs, stack=()):
    """Expand include directives recursively into one list of _Line."""
    lines = []
    base_dir = None if origin_file.startswith("<") else Path(origin_file).resolve().parent
    for number, raw in enumerate(source.splitlines(), 1):
        line = _Line(origin_file, number, _strip_comment(raw).rstrip())
        m = re.match(r"^\s*include\s+(.*)$", line.text, re.I)
        if not m:
            lines.append(line)
            continue
        try:
            name = _parse_string(m.group(1).strip()).decode()
        except ValueError as e:
            raise AsmError(f"{line.where}: include needs a quoted file name: {e}") from None
        path = _find_file(name, base_dir, include_dirs)
        if path is None:
            raise AsmError(f"{line.where}: include file {name!r} not found "
                           f"(searched {_search_dirs(base_dir, include_dirs)})")
        key = str(path.resolve())
        if key in stack:
            raise AsmError(f"{line.where}: recursive include of {name!r}")
        lines.extend(_load_lines(path.read_text(), str(path), include_dirs, stack + (key,)))
    return lines


_MACRO_START = re.compile(r"^\s*(?:macro\s+([A-Za-z_][A-Za-z0-9_]*)|([A-Za-z_][A-Za-z0-9_]*)\s*:\s*macro)\s*$",
                          re.I)
_MACRO_END = re.compile(r"^\s*endm\s*$", re.I)
_MACRO_ARG = re.compile(r"\\([1-9@])")
_MAX_MACRO_DEPTH = 64


def _first_word(text: str) -> str:
    parts = text.split(None, 1)
    return parts[0].lower() if parts else ""


def _expand_macros(lines):
    """Collect MACRO/ENDM definitions and expand their invocations.

    Inside a body, \\1-\\9 are the arguments, \\@ a suffix unique to the call
    (for labels) and _NARG the argument count.
    """
    macros: dict[str, list] = {}
    calls = [0]
    out: list[_Line] = []

    def walk(block, depth):
        i = 0
        while i < len(block):
            line = block[i]
            m = _MACRO_START.match(line.text)
            if m:
                name = m.group(1) or m.group(2)
                if name.lower() in FORMS or name.lower() in _DIRECTIVES:
                    raise AsmError(f"{line.where}: macro name {name!r} is an instruction or directive")
                if name in macros:
                    raise AsmError(f"{line.where}: macro {name!r} is already defined")
                j = i + 1
                while j < len(block) and not _MACRO_END.match(block[j].text):
                    if _MACRO_START.match(block[j].text):
                        raise AsmError(f"{block[j].where}: macro definitions cannot nest")
                    j += 1
                if j == len(block):
                    raise AsmError(f"{line.where}: macro {name!r} has no ENDM")
                macros[name] = block[i + 1:j]
                i = j + 1
                continue
            if _MACRO_END.match(line.text):
                raise AsmError(f"{line.where}: ENDM without MACRO")
            text = line.text
            label = ""
            lm = _LABEL_RE.match(text)
            if lm and lm.group(1):
                label, text = text[:lm.end()], text[lm.end():]
            parts = text.split(None, 1)
            if parts and parts[0] in macros:
                name = parts[0]
                if depth >= _MAX_MACRO_DEPTH:
                    raise AsmError(f"{line.where}: macro {name!r} nests deeper than {_MAX_MACRO_DEPTH} "
                                   "(recursive macro?)")
                args = _split_operands(parts[1]) if len(parts) > 1 else []
                if label:
                    out.append(_Line(line.file, line.number, label, line.via))
                calls[0] += 1
                suffix = f"_{calls[0]}"
                via = f"macro {name} called at {line.file}:{line.number}"

                def substitute(m, _args=args, _line=line, _name=name, _suffix=suffix):
                    key = m.group(1)
                    if key == "@":
                        return _suffix
                    k = int(key)
                    if k > len(_args):
                        raise AsmError(f"{_line.where}: macro {_name!r} uses \\{k} but got "
                                       f"{len(_args)} argument(s)")
                    return _args[k - 1]

                body = []
                for b in macros[name]:
                    t = _MACRO_ARG.sub(substitute, b.text)
                    t = re.sub(r"\b_NARG\b", str(len(args)), t)
                    body.append(_Line(b.file, b.number, t, via))
                walk(body, depth + 1)
            else:
                out.append(line)
            i += 1

    walk(lines, 0)
    return out


def _search_dirs(base_dir, include_dirs):
    dirs = ([base_dir] if base_dir else [Path.cwd()]) + [Path(d) for d in include_dirs]
    return [str(d) for d in dirs]


def _find_file(name, base_dir, include_dirs):
    if os.path.isabs(name):
        return Path(name) if Path(name).is_file() else None
    for d in _search_dirs(base_dir, include_dirs):
        candidate = Path(d) / name
        if candidate.is_file():
            return candidate
    return None


# --------------------------------------------------------------------------
# The assembler
# --------------------------------------------------------------------------
@dataclass
class _Symbol:
    value: int | None      # None: a variable whose value is not known yet in pass 1
    bank: int | None
    where: str
    variable: bool = False  # NAME = expr / NAME SET expr may be reassigned


@dataclass
class _State:
    symbols: dict = field(default_factory=dict)
    pass_no: int = 1
    scope: str = ""            # last global label, for .local names
    bank: int | None = None    # None = linear $0000-$7FFF (banks 0 and 1)
    addr: int = 0x0000
    header: dict = field(default_factory=dict)
    image: bytearray = field(default_factory=bytearray)
    written: bytearray = field(default_factory=bytearray)
    max_offset: int = 0
    deferred_equ: list = field(default_factory=list)


class _Assembler:
    def __init__(self, lines, include_dirs, origin_file):
        self.lines = lines
        self.include_dirs = include_dirs
        self.base_dir = None if origin_file.startswith("<") else Path(origin_file).resolve().parent
        self.st = _State()
        self.line = None

    # ---- errors and symbols
    def error(self, msg):
        where = self.line.where if self.line else "<assembler>"
        return AsmError(f"{where}: {msg}")

    def full_name(self, name):
        if name.startswith("."):
            if not self.st.scope:
                raise self.error(f"local label {name!r} before any global label")
            return self.st.scope + name
        return name

    def lookup(self, name):
        if name == "@":
            return self.st.addr
        full = self.full_name(name)
        sym = self.st.symbols.get(full)
        if sym is None or sym.value is None:
            raise _Undefined(full)
        return sym.value

    def bank_of(self, name):
        if name == "@":
            return self.current_bank()
        full = self.full_name(name)
        sym = self.st.symbols.get(full)
        if sym is None:
            raise _Undefined(full)
        if sym.bank is None:
            raise ValueError(f"bank() of {full!r}: it is a constant, not a label")
        return sym.bank

    def eval(self, text, *, required=None):
        """Evaluate; in pass 1 undefined symbols give None unless `required`."""
        try:
            return _ExprParser(text, self.lookup, self.bank_of).parse()
        except _Undefined as u:
            if self.st.pass_no == 1 and not required:
                return None
            why = f" ({required})" if required else ""
            raise self.error(f"undefined symbol {u.name!r} in {text!r}{why}") from None
        except (ValueError, IndexError) as e:
            raise self.error(str(e)) from None

    def define(self, name, value, bank):
        full = self.full_name(name)
        old = self.st.symbols.get(full)
        if old is not None and old.variable:
            raise self.error(f"{full!r} is a variable (defined with = at {old.where}), "
                             "not a label or constant")
        if self.st.pass_no == 1:
            if old is not None:
                raise self.error(f"{full!r} is already defined at {old.where}")
            self.st.symbols[full] = _Symbol(value, bank, self.line.where)
        elif old is None or old.value != value:
            # Pass 2 sees the same sizes, so a label only moves on an assembler bug.
            raise self.error(f"{full!r} changed value between passes")

    # ---- output position
    def file_offset(self, addr):
        if self.st.bank is None:
            if not 0 <= addr < 0x8000:
                raise self.error(f"address ${addr:04X} is outside ROM $0000-$7FFF "
                                 "(use 'bank N' for more than 32 KiB)")
            return addr
        lo = 0 if self.st.bank == 0 else BANK_SIZE
        if not lo <= addr < lo + BANK_SIZE:
            hint = " (write 'bank 0' first for $0000-$3FFF)" if addr < BANK_SIZE else ""
            raise self.error(f"address ${addr:04X} is outside bank {self.st.bank} "
                             f"(${lo:04X}-${lo + BANK_SIZE - 1:04X}){hint}")
        return self.st.bank * BANK_SIZE + (addr - lo)

    def current_bank(self):
        return self.file_offset(self.st.addr) // BANK_SIZE if self.st.addr < 0x8000 else None

    def emit(self, data: bytes):
        if not data:
            return
        start = self.file_offset(self.st.addr)
        end_addr = self.st.addr + len(data) - 1
        self.file_offset(end_addr)                      # range check of the last byte
        if start < HEADER_END and start + len(data) > HEADER_START:
            raise self.error(f"output at ${self.st.addr:04X}-${end_addr:04X} overlaps the cartridge "
                             f"header ${HEADER_START:04X}-${HEADER_END - 1:04X}, which the assembler "
                             "fills in (put code at $0100-$0103 and from $0150)")
        if self.st.pass_no == 2:
            img, written = self.st.image, self.st.written
            need = start + len(data)
            if need > len(img):
                img.extend(bytes(need - len(img)))
                written.extend(bytes(need - len(written)))
            if any(written[start:need]):
                first = start + next(i for i, w in enumerate(written[start:need]) if w)
                raise self.error(f"output overlaps bytes already assembled at file offset ${first:05X}")
            img[start:need] = data
            written[start:need] = b"\x01" * len(data)
        self.st.max_offset = max(self.st.max_offset, start + len(data))
        self.st.addr += len(data)

    def skip(self, count, fill):
        # ds output is ordinary bytes: range-checked and protected from overlap
        self.emit(bytes([fill & 0xFF]) * count)

    # ---- passes
    def run(self):
        for pass_no in (1, 2):
            self.st.pass_no = pass_no
            self.st.scope, self.st.bank, self.st.addr = "", None, 0
            self.st.header = {}
            # Variables are re-run from scratch: a use before the first assignment fails
            # in pass 2 instead of silently seeing the value left over from pass 1.
            self.st.symbols = {k: v for k, v in self.st.symbols.items() if not v.variable}
            self.exec_lines(self.lines)
            self.line = None
            if pass_no == 1:
                self.resolve_deferred()
        return self.build_image()

    def exec_lines(self, lines):
        """Run statements, expanding REPT/ENDR and IF/ELIF/ELSE/ENDC blocks."""
        i = 0
        while i < len(lines):
            line = lines[i]
            self.line = line
            word = _first_word(line.text)
            if word == "rept":
                end, _ = self.block_end(lines, i)
                count = self.eval(line.text.split(None, 1)[1] if len(line.text.split()) > 1 else "",
                                  required="rept count must be known in pass 1")
                if not 0 <= count <= 0x10000:
                    raise self.error(f"rept count {count} out of range (0..65536)")
                for _ in range(count):
                    self.exec_lines(lines[i + 1:end])
                i = end + 1
            elif word == "if":
                end, branches = self.block_end(lines, i)
                chosen = None
                for start, stop in branches:
                    head = lines[start]
                    self.line = head
                    kw = _first_word(head.text)
                    if kw == "else":
                        chosen = (start, stop)
                        break
                    cond = head.text.split(None, 1)
                    if len(cond) < 2:
                        raise self.error(f"{kw} needs a condition")
                    if self.eval(cond[1], required=f"{kw} condition must be known in pass 1"):
                        chosen = (start, stop)
                        break
                if chosen:
                    self.exec_lines(lines[chosen[0] + 1:chosen[1]])
                i = end + 1
            elif word in ("endr", "endc", "else", "elif"):
                raise self.error(f"{word.upper()} without a matching {'REPT' if word == 'endr' else 'IF'}")
            else:
                self.statement(line.text)
                i += 1

    def block_end(self, lines, i):
        """Index of the ENDR/ENDC closing the block opened at lines[i], and IF branches."""
        opener = _first_word(lines[i].text)
        closer = "endr" if opener == "rept" else "endc"
        stack = []
        branches, branch_start = [], i
        for j in range(i + 1, len(lines)):
            w = _first_word(lines[j].text)
            if w in ("rept", "if"):
                stack.append(w)
            elif w in ("endr", "endc") and stack:
                expected = "endr" if stack[-1] == "rept" else "endc"
                if w != expected:
                    self.line = lines[j]
                    raise self.error(f"{w.upper()} closes a {stack[-1].upper()} block")
                stack.pop()
            elif not stack and w in ("elif", "else") and opener == "if":
                branches.append((branch_start, j))
                branch_start = j
            elif not stack and w == closer:
                branches.append((branch_start, j))
                return j, branches
            elif not stack and w in ("endr", "endc"):
                self.line = lines[j]
                raise self.error(f"{w.upper()} closes a {opener.upper()} block")
        raise self.error(f"{opener.upper()} has no {closer.upper()}")

    def resolve_deferred(self):
        pending = self.st.deferred_equ
        while pending:
            still = []
            for name, expr, scope, line in pending:
                self.line, self.st.scope = line, scope
                value = self.eval(expr)
                if value is None:
                    still.append((name, expr, scope, line))
                else:
                    self.define(name, value, None)
            if len(still) == len(pending):
                name, expr, scope, line = still[0]
                self.line, self.st.scope = line, scope
                self.eval(expr, required=f"in the definition of {name}")
            pending = still
        self.st.deferred_equ = []
        self.line = None

    def statement(self, text):
        if not text.strip():
            return
        m = _LABEL_RE.match(text)
        if m and m.group(1):
            name = m.group(1)
            if not name.startswith("."):
                if "." in name:
                    raise self.error(f"label {name!r}: write local labels as .name after their global label")
                self.st.scope = name
            if self.st.addr >= 0x8000:
                raise self.error(f"label {name!r} at ${self.st.addr:04X} is past the end of ROM")
            self.define(name, self.st.addr, self.current_bank())
            text = text[m.end():]
            if not text.strip():
                return
        parts = text.strip().split(None, 1)
        head = parts[0]
        rest = parts[1].strip() if len(parts) > 1 else ""
        # NAME EQU expr / NAME = expr / NAME SET expr, each optionally after DEF
        if head.lower() == "def":
            m = re.match(r"(?i)^([A-Za-z_][A-Za-z0-9_]*)\s*(equ\b|set\b|=)\s*(.*)$", rest)
            if not m:
                raise self.error(f"DEF needs 'DEF NAME EQU value' or 'DEF NAME = value', got {text.strip()!r}")
            head, rest = m.group(1), m.group(2) + " " + m.group(3)
        m = re.match(r"(?i)^([A-Za-z_][A-Za-z0-9_]*)\s*=(?!=)\s*(.*)$", text.strip())
        if m:
            return self.assign(m.group(1), m.group(2))
        m = re.match(r"(?i)^(equ|set|=)(?:\s+|$)(.*)$", rest)
        if m and m.group(1).lower() in ("set", "="):
            return self.assign(head, m.group(2))
        if m:
            return self.equ(head, m.group(2))
        lower = head.lower()
        directive = getattr(self, "d_" + lower, None)
        if directive is not None:
            return directive(rest)
        if lower in FORMS or lower in ("ldi", "ldd"):
            return self.instruction(lower, rest)
        raise self.error(f"unknown instruction or directive {head!r}")

    def assign(self, name, expr):
        """NAME = expr: a variable, reassignable, taking effect from this line on."""
        if not _NAME_RE.match(name):
            raise self.error(f"bad variable name {name!r}")
        if name.lower() in _LITERALS or name.lower() in FORMS:
            raise self.error(f"variable name {name!r} is a register or mnemonic")
        value = self.eval(expr)
        old = self.st.symbols.get(name)
        if old is not None and not old.variable:
            raise self.error(f"{name!r} is already defined at {old.where} as a label or constant")
        self.st.symbols[name] = _Symbol(value, None, self.line.where, variable=True)

    def equ(self, name, expr):
        if not _NAME_RE.match(name):
            raise self.error(f"bad constant name {name!r}")
        if name.lower() in _LITERALS or name.lower() in FORMS:
            raise self.error(f"constant name {name!r} is a register or mnemonic")
        value = self.eval(expr)
        if value is None:        # forward reference: resolved after pass 1
            self.st.deferred_equ.append((name, expr, self.st.scope, self.line))
            return
        if self.st.pass_no == 1 or name in self.st.symbols:
            self.define(name, value, None)

    # ---- instructions
    def instruction(self, mnemonic, rest):
        operands = _split_operands(rest)
        if mnemonic in ("ldi", "ldd"):
            suffix = "+" if mnemonic == "ldi" else "-"
            operands = [f"[hl{suffix}]" if _norm(o) in ("[hl]", "(hl)") else o for o in operands]
            mnemonic = "ld"
        classes = [self.classify(o) for o in operands]
        matches = [f for f in FORMS[mnemonic]
                   if len(f.operands) == len(classes)
                   and all(p in c[0] for p, c in zip(f.operands, classes))]
        if not matches:
            shown = ", ".join(operands) if operands else "(no operands)"
            forms = "; ".join(_form_text(f) for f in FORMS[mnemonic][:12])
            more = " ..." if len(FORMS[mnemonic]) > 12 else ""
            raise self.error(f"invalid operands for {mnemonic!r}: {shown} (valid forms: {forms}{more})")
        form = matches[0]
        ph = form.placeholder
        start = self.st.addr
        if ph is None:
            return self.emit(form.opcode)
        index, kind = ph
        expr = classes[index][1]
        for tok_kind, tok in _tokenize_or_empty(expr):
            if tok_kind == "name" and tok.lower() in _LITERALS:
                raise self.error(f"invalid operands for {mnemonic!r}: {', '.join(operands)} "
                                 f"(register {tok!r} cannot be part of an expression)")
        value = self.eval(expr)
        if value is None:                # pass 1: only the size matters
            return self.emit(bytes(form.size))
        opcode = bytearray(form.opcode)
        tail = b""
        what = f"{mnemonic} operand {expr!r} = {value}"
        if kind in ("n8", "[ff8]"):
            if kind == "[ff8]" and 0xFF00 <= value <= 0xFFFF:
                value -= 0xFF00
            lo = 0 if kind == "[ff8]" else -128
            if not lo <= value <= 0xFF:
                rng = "$FF00-$FFFF or $00-$FF" if kind == "[ff8]" else "-128..255"
                raise self.error(f"{what} out of range ({rng})")
            tail = bytes([value & 0xFF])
        elif kind in ("n16", "[n16]"):
            if not -0x8000 <= value <= 0xFFFF:
                raise self.error(f"{what} out of range (-32768..65535)")
            tail = bytes([value & 0xFF, (value >> 8) & 0xFF])
        elif kind in ("s8", "sp+s8"):
            if not -128 <= value <= 127:
                raise self.error(f"{what} out of range (-128..127)")
            tail = bytes([value & 0xFF])
        elif kind == "e8":
            offset = value - (start + form.size)
            if not -128 <= offset <= 127:
                raise self.error(f"jr target {expr!r} (${value & 0xFFFF:04X}) is out of range: offset "
                                 f"{offset} from ${start + form.size:04X}, must be -128..127 (use jp)")
            tail = bytes([offset & 0xFF])
        elif kind == "u3":
            if not 0 <= value <= 7:
                raise self.error(f"bit number {expr!r} = {value} out of range (0..7)")
            opcode[-1] |= value << 3
        elif kind == "vec":
            if value not in range(0, 0x40, 8):
                raise self.error(f"rst vector {expr!r} = {value} must be one of $00,$08,...,$38")
            opcode[-1] |= value
        self.emit(bytes(opcode) + tail)

    def classify(self, operand):
        """Operand text -> (set of patterns it can fill, expression text or None)."""
        if not operand:
            raise self.error("empty operand")
        norm = _norm(operand)
        if norm in _LITERALS:
            return {_LITERALS[norm]}, None
        if operand.startswith("[") and operand.endswith("]"):
            return _MEM_KINDS, operand[1:-1].strip()
        m = re.match(r"(?i)^sp\s*([-+].*)$", operand)
        if m:
            return {"sp+s8"}, "0" + m.group(1)
        return _EXPR_KINDS, operand

    # ---- directives
    def d_org(self, rest):
        value = self.eval(rest, required="org needs a value known in pass 1")
        if not 0 <= value < 0x8000:
            raise self.error(f"org ${value:X} is outside ROM $0000-$7FFF")
        self.file_offset(value)
        self.st.addr = value

    def d_bank(self, rest):
        value = self.eval(rest, required="bank needs a value known in pass 1")
        if not 0 <= value < 512:
            raise self.error(f"bank {value} out of range (0..511)")
        self.st.bank = value
        self.st.addr = 0 if value == 0 else BANK_SIZE

    def d_db(self, rest):
        out = bytearray()
        for op in _split_operands(rest):
            if op.startswith('"'):
                try:
                    out += _parse_string(op)
                except ValueError as e:
                    raise self.error(str(e)) from None
                continue
            v = self.eval(op)
            if v is not None and not -128 <= v <= 0xFF:
                raise self.error(f"db value {op!r} = {v} out of range (-128..255)")
            out.append((v or 0) & 0xFF)
        if not out:
            raise self.error("db needs at least one value")
        self.emit(bytes(out))

    def d_dw(self, rest):
        out = bytearray()
        for op in _split_operands(rest):
            v = self.eval(op)
            if v is not None and not -0x8000 <= v <= 0xFFFF:
                raise self.error(f"dw value {op!r} = {v} out of range (-32768..65535)")
            v = (v or 0) & 0xFFFF
            out += bytes([v & 0xFF, v >> 8])
        if not out:
            raise self.error("dw needs at least one value")
        self.emit(bytes(out))

    def d_ds(self, rest):
        ops = _split_operands(rest)
        if len(ops) not in (1, 2):
            raise self.error(f"ds takes 'count[, fill]', got {rest!r}")
        count = self.eval(ops[0], required="ds count must be known in pass 1")
        if count < 0:
            raise self.error(f"ds count {count} is negative")
        fill = self.eval(ops[1]) if len(ops) == 2 else 0
        if fill is not None and not -128 <= fill <= 0xFF:
            raise self.error(f"ds fill value {ops[1]!r} = {fill} out of range (-128..255)")
        self.skip(count, fill or 0)

    def d_incbin(self, rest):
        try:
            name = _parse_string(rest.strip()).decode()
        except ValueError as e:
            raise self.error(f"incbin needs a quoted file name: {e}") from None
        base = Path(self.line.file).resolve().parent if not self.line.file.startswith("<") else None
        path = _find_file(name, base, self.include_dirs)
        if path is None:
            raise self.error(f"incbin file {name!r} not found (searched {_search_dirs(base, self.include_dirs)})")
        self.emit(path.read_bytes())

    def d_assert(self, rest):
        ops = _split_operands(rest)
        if self.st.pass_no == 1:
            return
        if not ops or len(ops) > 2:
            raise self.error(f"assert takes 'expr[, \"message\"]', got {rest!r}")
        if not self.eval(ops[0]):
            try:
                msg = _parse_string(ops[1]).decode() if len(ops) == 2 else ""
            except ValueError as e:
                raise self.error(f"assert message: {e}") from None
            raise self.error(f"assertion failed: {ops[0]}" + (f": {msg}" if msg else ""))

    def d_title(self, rest):
        try:
            title = _parse_string(rest.strip())
        except ValueError as e:
            raise self.error(f"title needs a quoted string: {e}") from None
        if len(title) > 16:
            raise self.error(f"title {title.decode()!r} is {len(title)} characters; the header holds 16")
        self.set_header("title", title)

    def _header_byte(self, name, rest, valid=range(256)):
        value = self.eval(rest, required=f"{name} must be a constant")
        if value not in valid:
            raise self.error(f"{name} {value} is not valid (expected {valid.start}..{valid.stop - 1})")
        self.set_header(name, value)

    def d_cart_type(self, rest):
        self._header_byte("cart_type", rest)

    def d_rom_size(self, rest):
        self._header_byte("rom_size", rest, range(0, 9))     # 32 KiB << code

    def d_ram_size(self, rest):
        self._header_byte("ram_size", rest, range(0, 6))

    def set_header(self, name, value):
        if name in self.st.header and self.st.header[name] != value:
            raise self.error(f"{name} given twice with different values")
        self.st.header[name] = value

    # ---- image
    def build_image(self) -> bytes:
        header = self.st.header
        used_banks = max(2, -(-self.st.max_offset // BANK_SIZE))
        if "rom_size" in header:
            code = header["rom_size"]
            if used_banks > 2 << code:
                raise AsmError(f"rom_size {code} declares {2 << code} banks of 16 KiB but the code "
                               f"uses {used_banks}")
        else:
            code = 0
            while (2 << code) < used_banks:
                code += 1
        size = BANK_SIZE * (2 << code)
        rom = bytearray(size)
        rom[:len(self.st.image)] = self.st.image
        rom[0x104:0x134] = NINTENDO_LOGO
        title = header.get("title", b"")
        rom[0x134:0x144] = title + bytes(16 - len(title))
        rom[0x147] = header.get("cart_type", 0x00)
        rom[0x148] = code
        rom[0x149] = header.get("ram_size", 0x00)
        rom[0x14A] = 0x01          # destination: overseas
        rom[0x14B] = 0x00          # old licensee: none
        return fix_checksums(rom)


_DIRECTIVES = frozenset(
    [name[2:] for name in dir(_Assembler) if name.startswith("d_")]
    + ["equ", "def", "include", "macro", "endm", "rept", "endr", "if", "elif", "else", "endc"]
)


def _tokenize_or_empty(text):
    try:
        return _tokenize(text)
    except ValueError:
        return []       # eval() reports the bad character with its context


def _norm(operand: str) -> str:
    return re.sub(r"\s+", "", operand).lower()


def _form_text(form: Form) -> str:
    return (form.mnemonic + " " + ", ".join(form.operands)).strip()


def header_checksum(rom) -> int:
    """Pan Docs: x = 0; for each byte in $0134-$014C: x = x - byte - 1 (mod 256)."""
    x = 0
    for b in bytes(rom[0x134:0x14D]):
        x = (x - b - 1) & 0xFF
    return x


def global_checksum(rom) -> int:
    """Sum of every ROM byte except the two checksum bytes at $014E-$014F (mod 65536)."""
    data = bytes(rom)
    return (sum(data) - data[0x14E] - data[0x14F]) & 0xFFFF


def fix_checksums(rom) -> bytes:
    """Recompute the header ($014D) and global ($014E-F, big-endian) checksums.

    Handy for tests that patch header bytes of an assembled ROM.
    """
    rom = bytearray(rom)
    if len(rom) < 0x150:
        raise ValueError(f"rom: expected at least $150 bytes for a header, got {len(rom)}")
    rom[0x14D] = header_checksum(rom)
    total = global_checksum(rom)
    rom[0x14E], rom[0x14F] = total >> 8, total & 0xFF
    return bytes(rom)


def assemble(source: str, *, origin_file: str = "<string>", include_dirs=()) -> bytes:
    """Assemble SM83 `source` into a complete ROM image (header and checksums filled).

    `origin_file` names the source in error messages and anchors relative
    include paths; `include_dirs` are searched after the including file's
    directory. Raises AsmError ("file:line: what") on any error.
    """
    return assemble_with_symbols(source, origin_file=origin_file, include_dirs=include_dirs)[0]


def assemble_with_symbols(source: str, *, origin_file: str = "<string>", include_dirs=()):
    """Like assemble(), but also return {name: value} of every label and constant.

    Tests use it to find where a routine or variable ended up.
    """
    if not isinstance(source, str):
        raise TypeError(f"source: expected str, got {type(source).__name__}")
    origin_file = os.fspath(origin_file)
    include_dirs = tuple(os.fspath(d) for d in include_dirs)
    lines = _expand_macros(_load_lines(source, origin_file, include_dirs))
    asm = _Assembler(lines, include_dirs, origin_file)
    rom = asm.run()
    return rom, {name: sym.value for name, sym in asm.st.symbols.items()}


def main(argv=None) -> int:
    """``python -m gbx_lightning.roms.asm SOURCE.asm -o OUT.gb [-I DIR]``"""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m gbx_lightning.roms.asm",
                                     description="Assemble SM83 source into a Game Boy ROM image.")
    parser.add_argument("source")
    parser.add_argument("-o", "--output", required=True)
    parser.add_argument("-I", "--include", action="append", default=[], help="include directory")
    parser.add_argument("--symbols", action="store_true", help="print label/constant values")
    args = parser.parse_args(argv)
    path = Path(args.source)
    try:
        rom, symbols = assemble_with_symbols(path.read_text(), origin_file=str(path),
                                             include_dirs=args.include)
    except (AsmError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    Path(args.output).write_bytes(rom)
    if args.symbols:
        for name, value in sorted(symbols.items(), key=lambda kv: kv[1]):
            print(f"${value & 0xFFFF:04X} {name}")
    print(f"{args.output}: {len(rom)} bytes", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
