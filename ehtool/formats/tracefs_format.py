"""tracefs ``format`` files: the layout of one tracepoint's raw record.

::

    name: sched_switch
    ID: 316
    format:
    \tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
    ...                                  (the first empty line ends the common fields)
    \tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;
    ...                                  (the second one ends the format)
    print fmt: "prev_comm=%s ...", REC->prev_comm, ...

Each field's declaration is classified the way perf-decode's
``PerfFieldMetadata`` does it (element size, rendering format, array kind),
so the JSON renderer can be built from this model alone. Standard library
only: this also reads live tracefs files for ``ehtool list`` and ``record``.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from dataclasses import dataclass, field

#: rendering formats (perf-decode's PerfFieldFormat): NONE is a blob of bytes
#: (``struct``), HEX covers pointers, ``unsigned long`` and unknown typedefs
NONE, UNSIGNED, SIGNED, HEX, STRING = "none", "unsigned", "signed", "hex", "string"
#: array kinds (PerfFieldArray): SCALAR ``int x``, FIXED ``char x[16]``,
#: DATA_LOC ``__data_loc char[] x``, REL_LOC ``__rel_loc char[] x``
SCALAR, FIXED, DATA_LOC, REL_LOC = "scalar", "fixed", "data_loc", "rel_loc"

_SIZED = {
    "u8": (UNSIGNED, 1), "__u8": (UNSIGNED, 1), "uint8_t": (UNSIGNED, 1),
    "s8": (SIGNED, 1), "__s8": (SIGNED, 1), "int8_t": (SIGNED, 1),
    "u16": (UNSIGNED, 2), "__u16": (UNSIGNED, 2), "uint16_t": (UNSIGNED, 2),
    "s16": (SIGNED, 2), "__s16": (SIGNED, 2), "int16_t": (SIGNED, 2),
    "u32": (UNSIGNED, 4), "__u32": (UNSIGNED, 4), "uint32_t": (UNSIGNED, 4),
    "s32": (SIGNED, 4), "__s32": (SIGNED, 4), "int32_t": (SIGNED, 4),
    "u64": (UNSIGNED, 8), "__u64": (UNSIGNED, 8), "uint64_t": (UNSIGNED, 8),
    "s64": (SIGNED, 8), "__s64": (SIGNED, 8), "int64_t": (SIGNED, 8),
}
_IGNORED = frozenset(("__attribute__", "const", "volatile"))
_FIELD_KEYS = frozenset(("field", "field special"))
# C strtoul(s, NULL, 0) prefix: optional space and sign, then hex, octal or decimal
_STRTOUL = re.compile(r"[ \t\n\v\f\r]*([+-]?)(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)")
_NUMBER = re.compile(r"0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*")


class FormatError(ValueError):
    """A format file that does not parse."""


@dataclass(slots=True)
class FieldFormat:
    """One ``field:`` line, classified as perf-decode classifies it."""

    decl: str  # the declaration text, e.g. "char prev_comm[16]"
    name: str
    offset: int
    size: int  # total bytes at ``offset`` (0: the rest of the record)
    signed: bool | None  # the ``signed:`` value, None when absent or unreadable
    format: str  # NONE, UNSIGNED, SIGNED, HEX or STRING
    element_size: int  # 1, 2, 4 or 8
    array: str  # SCALAR, FIXED, DATA_LOC or REL_LOC
    array_count: int  # declared count of a FIXED array (0 when unknown), else 0

    @property
    def location(self) -> str:
        """``"static"`` (the value is at ``offset``), ``"data_loc"`` or ``"rel_loc"``."""
        return self.array if self.array in (DATA_LOC, REL_LOC) else "static"

    @property
    def char_array(self) -> bool:
        """A fixed ``char`` array (``char comm[16]``): the text of its bytes before the
        first NUL, read in place."""
        return self.array == FIXED and self.format == STRING and self.size > 0

    def data(self, raw: bytes | memoryview, big_endian: bool = False) -> bytes | memoryview:
        """This field's bytes in a raw record (following ``__data_loc``/``__rel_loc``).

        Empty when the record is too short or the location points outside it,
        as perf-decode's ``GetFieldBytes``: scalars then print null, strings
        ``""`` and arrays ``[]``.
        """
        off, size, end = self.offset, self.size, len(raw)
        if off + size > end:
            return b""
        if size == 0:
            return raw[off:]
        if self.array in (SCALAR, FIXED):
            return raw[off:off + size]
        order = "big" if big_endian else "little"
        if size == 4:  # u32: length << 16 | offset
            loc = int.from_bytes(raw[off:off + 4], order)
            dyn_size, dyn_off = loc >> 16, loc & 0xFFFF
            if self.array == REL_LOC:
                dyn_off += off + 4  # relative to the end of the field
            return raw[dyn_off:dyn_off + dyn_size] if dyn_off + dyn_size <= end else b""
        if size == 2:  # old kernels: u16 offset of a NUL-terminated string
            dyn_off = int.from_bytes(raw[off:off + 2], order)
            if self.array == REL_LOC:
                dyn_off += off + 2
            if dyn_off >= end:
                return b""
            nul = bytes(raw[dyn_off:]).find(b"\0")
            return raw[dyn_off:dyn_off + nul] if nul >= 0 else b""
        return b""


@dataclass(slots=True)
class EventFormat:
    """A parsed ``format`` file."""

    system: str
    name: str
    id: int
    common_fields: list[FieldFormat] = field(default_factory=list)
    fields: list[FieldFormat] = field(default_factory=list)  # the event's own fields
    print_fmt: str = ""

    @property
    def common_size(self) -> int:
        """End of the last common field (where the event's own fields start)."""
        last = self.common_fields[-1] if self.common_fields else None
        return last.offset + last.size if last is not None else 0

    @property
    def eventheader_offset(self) -> int | None:
        """Offset of the EventHeader when the first own field is ``eventheader_flags``."""
        if self.fields and self.fields[0].name == "eventheader_flags":
            return self.fields[0].offset
        return None

    @property
    def all_fields(self) -> list[FieldFormat]:
        return self.common_fields + self.fields


def parse_format(text: str | bytes, system: str = "", long_size: int = 8) -> EventFormat:
    """Parse a tracefs ``format`` file; raise ``FormatError`` naming the bad line.

    ``long_size`` is ``sizeof(long)`` on the traced machine (pointers and
    ``long``). Lines are ``key: value``; after ``format:`` come ``field:``
    lines, the first empty line ends the common fields and the second the
    format (a line that is not a field also ends it).
    """
    if isinstance(text, (bytes, bytearray, memoryview)):
        text = bytes(text).decode("latin-1")
    name: str | None = None
    ident: int | None = None
    print_fmt = ""
    groups: tuple[list[FieldFormat], list[FieldFormat]] = ([], [])
    group = -1  # -1 outside the format, 0 common fields, 1 own fields
    for lineno, line in enumerate(re.split(r"\r\n|\r|\n", text), 1):
        if group >= 0:
            if not line:
                group += 1
                if group > 1:
                    group = -1
                continue
            stripped = line.strip(" \t")
            if not stripped:
                continue  # perf-decode drops a line of spaces
            if stripped.partition(":")[0] in _FIELD_KEYS:
                groups[group].append(_parse_field(stripped, long_size, lineno))
                continue
            group = -1
        key, colon, value = line.strip(" \t").partition(":")
        if not colon:
            continue
        value = value.strip(" \t")
        if key == "name":
            name = value
        elif key == "ID":
            if not _NUMBER.fullmatch(value):
                raise FormatError(f"line {lineno}: ID is not a number: {value!r}")
            ident = _c_int(value)
        elif key == "format":
            group = 0
            groups[0].clear()
            groups[1].clear()
        elif key == "print fmt":
            print_fmt = value
    if not name:
        raise FormatError("no 'name:' line")
    if ident is None:
        raise FormatError(f"{name}: no 'ID:' line")
    common, own = groups
    if not common and not own:
        raise FormatError(f"{name}: no 'format:' fields")
    return EventFormat(system, name, ident, common, own, print_fmt)


@functools.lru_cache(maxsize=256)
def shared_format(text: str, system: str = "", long_size: int = 8) -> EventFormat:
    """:func:`parse_format` once per process for each distinct ``(text, system,
    long_size)``: the inputs of a fleet repeat the same formats. The result is shared by
    every caller: read it, never change it. Raises as :func:`parse_format` (a format that
    does not parse is not kept)."""
    return parse_format(text, system, long_size)


def _parse_field(line: str, long_size: int, lineno: int) -> FieldFormat:
    """``field:TYPE NAME;\\toffset:N;\\tsize:N;\\tsigned:N;``"""
    props: dict[str, str] = {}
    for part in line.split(";"):
        key, colon, value = part.partition(":")
        key = key.strip(" \t")
        if colon and key not in props:
            props["field" if key in _FIELD_KEYS else key] = value.strip(" \t")
    decl = props.get("field", "")
    if not decl:
        raise FormatError(f"line {lineno}: empty field declaration in {line!r}")
    numbers = []
    for key in ("offset", "size"):
        value = props.get(key)
        if value is None:
            raise FormatError(f"line {lineno}: missing {key} in {line!r}")
        if not _NUMBER.fullmatch(value) or (number := _c_int(value)) > 0xFFFF:
            raise FormatError(f"line {lineno}: bad {key} {value!r} (want 0..65535)")
        numbers.append(number)
    signed = None
    if "signed" in props:
        value = _strtoul(props["signed"])
        signed = None if value is None or value > 0xFFFF else value != 0
    return classify(decl, numbers[0], numbers[1], signed, long_size)


def _c_int(digits: str) -> int:
    """A C integer literal: ``0x`` hex, leading ``0`` octal, else decimal."""
    if digits[:2] in ("0x", "0X"):
        return int(digits[2:], 16)
    return int(digits, 8) if digits[:1] == "0" else int(digits)


def _strtoul(text: str) -> int | None:
    """C ``strtoul(text, NULL, 0)``: the leading number (0 when there is none),
    None when it would overflow an unsigned long or is negative (wraps)."""
    m = _STRTOUL.match(text)
    if m is None:
        return 0
    value = _c_int(m.group(2))
    if m.group(1) == "-" and value:
        return None
    return value if value < 1 << 64 else None


def _tokens(decl: str) -> list[tuple[str, str]]:
    """C-ish tokens as perf-decode splits a declaration: (kind, text) with kind
    "id", "[" (a bracketed group, nesting allowed), "(" (parenthesized group),
    "str" (quoted) or "p" (one punctuation character)."""
    out: list[tuple[str, str]] = []
    i, n = 0, len(decl)
    while True:
        while i < n and decl[i] <= " ":
            i += 1
        if i >= n:
            return out
        start, ch = i, decl[i]
        if ch.isascii() and (ch.isalpha() or ch == "_"):
            i += 1
            while i < n and decl[i].isascii() and (decl[i].isalnum() or decl[i] == "_"):
                i += 1
            out.append(("id", decl[start:i]))
        elif ch in "\"'":
            i += 1
            while i < n:
                c = decl[i]
                i += 1
                if c == ch:
                    break
                if c == "\\":
                    i += 1
            out.append(("str", decl[start:i]))
        elif ch in "([":
            close, depth = ")" if ch == "(" else "]", 1
            i += 1
            while i < n and depth:
                c = decl[i]
                i += 1
                depth += (c == ch) - (c == close)
            out.append((ch, decl[start:i]))
        else:
            i += 1
            out.append(("p", ch))


def classify(decl: str, offset: int, size: int, signed: bool | None,
             long_size: int = 8) -> FieldFormat:
    """Deduce name, element size, format and array kind from a C declaration.

    The name is the last identifier (before any ``[...]``), the base type the
    identifier before it; ``long``/``short``/``unsigned``/``signed``/
    ``struct``/``__data_loc``/``__rel_loc`` are flags; a ``*`` makes a pointer.
    """
    n_long = 0
    short = unsigned = signed_kw = struct = data_loc = rel_loc = array = pointer = False
    name = base = ""
    count = 0
    tokens = _tokens(decl)
    for i, (kind, tok) in enumerate(tokens):
        if kind == "id":
            if tok == "long":
                n_long += 1
            elif tok == "short":
                short = True
            elif tok == "unsigned":
                unsigned = True
            elif tok == "signed":
                signed_kw = True
            elif tok == "struct":
                struct = True
            elif tok == "__data_loc":
                data_loc = True
            elif tok == "__rel_loc":
                rel_loc = True
            elif tok not in _IGNORED:
                base, name = name, tok
        elif kind == "[":
            array = True
            value = _strtoul(tok[1:])
            count = value if value is not None and value <= 0xFFFF else 0
            if i + 1 < len(tokens) and tokens[i + 1][0] == "id":
                base, name = name, tokens[i + 1][1]
            break
        elif kind == "p" and tok == "*":
            pointer = True
    name = name or "noname"

    fixup = False
    element = 1
    if pointer:
        fmt, element = HEX, 8 if long_size == 8 else 4
    elif struct:
        fmt = NONE
    elif not base or base == "int":
        fmt = UNSIGNED if unsigned else SIGNED
        if n_long >= 2:
            element = 8
        elif n_long:
            element = 8 if long_size == 8 else 4
            if unsigned:
                fmt = HEX  # perf-decode prints unsigned long in hex
        elif short:
            element = 2
        else:
            element = 4
    elif base == "char":
        fmt = UNSIGNED if unsigned else SIGNED if signed_kw else STRING
    elif base in _SIZED:
        fmt, element = _SIZED[base]
    else:
        fmt, fixup = HEX, True  # pid_t, gfp_t, bool, size_t...: hex of the field's size
    if fmt in (UNSIGNED, SIGNED) and signed is not None:
        fmt = SIGNED if signed else UNSIGNED

    if rel_loc:
        kind, count = REL_LOC, 0
    elif data_loc:
        kind, count = DATA_LOC, 0
    elif array:
        kind = FIXED
        if fixup and count and size % count == 0 and size // count in (1, 2, 4, 8):
            element, fixup = size // count, False
    else:
        kind, count = SCALAR, 0
        if size in (1, 2, 4, 8):  # the real size wins over the type's
            element, fixup = size, False
    if fixup:
        element = 1
    return FieldFormat(decl, name, offset, size, signed, fmt, element, kind, count)


def decimal_pid(f: FieldFormat) -> FieldFormat:
    """``f``, a ``pid_t`` field shown as a signed decimal (``--decimal-pids``; perf-decode
    shows it as hex)."""
    if f.format == HEX and f.decl.split()[:1] == ["pid_t"]:
        return dataclasses.replace(f, format=SIGNED)
    return f
