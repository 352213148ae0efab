"""tracefs ``format`` files: the layout of one tracepoint's raw record.

::

    name: sched_switch
    ID: 316
    format:
    \tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
    ...                                  (a blank line ends the common fields)
    \tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;
    ...
    print fmt: "prev_comm=%s ...", REC->prev_comm, ...

Each field's declaration is classified the way perf-decode's
``PerfFieldMetadata`` does it (element size, rendering format, array kind),
so the JSON renderer can be built from this model alone. Standard library
only: this also reads live tracefs files for ``ehtool list`` and ``record``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

#: rendering formats (PerfFieldFormat)
NONE, UNSIGNED, SIGNED, HEX, STRING = "none", "unsigned", "signed", "hex", "string"
#: array kinds (PerfFieldArray)
SCALAR, FIXED, DATA_LOC, REL_LOC = "scalar", "fixed", "data_loc", "rel_loc"

_TOKEN = re.compile(r'[A-Za-z_][A-Za-z0-9_]*|\[[^\]]*\]?|\([^)]*\)?|"(?:[^"\\]|\\.)*"?|\S')
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


class FormatError(ValueError):
    """A format file that does not parse."""


@dataclass(slots=True)
class FieldFormat:
    """One ``field:`` line, classified as perf-decode classifies it."""

    decl: str  # the declaration text, e.g. "char prev_comm[16]"
    name: str
    offset: int
    size: int
    signed: bool | None  # the ``signed:`` value, None when absent
    format: str  # NONE, UNSIGNED, SIGNED, HEX or STRING
    element_size: int  # 1, 2, 4 or 8
    array: str  # SCALAR, FIXED, DATA_LOC or REL_LOC
    array_count: int  # declared count of a fixed array, else 0

    def data(self, raw: bytes | memoryview, big_endian: bool = False) -> bytes | memoryview | None:
        """This field's bytes in a raw record (following ``__data_loc``/``__rel_loc``),
        or None when the record is too short (perf-decode then prints null)."""
        off, size, end = self.offset, self.size, len(raw)
        if off + size > end:
            return None
        if size == 0:
            return raw[off:]
        if self.array in (SCALAR, FIXED):
            return raw[off:off + size]
        order = "big" if big_endian else "little"
        if size == 4:
            loc = int.from_bytes(raw[off:off + 4], order)
            dyn_size, dyn_off = loc >> 16, loc & 0xFFFF
            if self.array == REL_LOC:
                dyn_off += off + 4
            return raw[dyn_off:dyn_off + dyn_size] if dyn_off + dyn_size <= end else None
        if size == 2:
            dyn_off = int.from_bytes(raw[off:off + 2], order)
            if self.array == REL_LOC:
                dyn_off += off + 2
            if dyn_off >= end:
                return None
            nul = bytes(raw[dyn_off:]).find(b"\0")
            return raw[dyn_off:dyn_off + nul] if nul >= 0 else None
        return raw[off:off + size]


@dataclass(slots=True)
class EventFormat:
    """A parsed ``format`` file."""

    system: str
    name: str
    id: int
    common_fields: list[FieldFormat] = field(default_factory=list)
    fields: list[FieldFormat] = field(default_factory=list)
    print_fmt: str = ""

    @property
    def common_size(self) -> int:
        """Bytes taken by the common fields (where the event's own fields start)."""
        return max((f.offset + f.size for f in self.common_fields), default=0)

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
    """Parse a tracefs ``format`` file; raise ``FormatError`` naming the bad line."""
    if isinstance(text, bytes):
        text = text.decode("latin-1")
    name: str | None = None
    ident: int | None = None
    print_fmt = ""
    common: list[FieldFormat] = []
    own: list[FieldFormat] = []
    state = "head"  # head -> common -> own -> done
    for lineno, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if state in ("common", "own"):
            if not stripped:
                if state == "common" and common:
                    state = "own"
                elif state == "own" and own:
                    state = "done"
                continue
            if stripped.startswith("field"):
                fld = _parse_field(stripped, long_size, lineno)
                (common if state == "common" else own).append(fld)
                continue
            state = "done"
        key, colon, value = stripped.partition(":")
        if not colon:
            continue
        if key == "name" and name is None:
            name = value.strip()
        elif key == "ID" and ident is None:
            try:
                ident = int(value.strip())
            except ValueError:
                raise FormatError(f"line {lineno}: ID is not a number: {value.strip()!r}") from None
        elif key == "format":
            state = "common"
        elif key == "print fmt":
            print_fmt = value.strip()
    if name is None:
        raise FormatError("no 'name:' line")
    if ident is None:
        raise FormatError(f"{name}: no 'ID:' line")
    if not common and not own:
        raise FormatError(f"{name}: no 'format:' fields")
    if not own and state == "common":
        # a format with no blank line after the common fields: they are all common
        pass
    return EventFormat(system, name, ident, common, own, print_fmt)


def _parse_field(line: str, long_size: int, lineno: int) -> FieldFormat:
    parts = [p.strip() for p in line.split(";")]
    head, _, decl = parts[0].partition(":")
    if not head.startswith("field"):
        raise FormatError(f"line {lineno}: expected 'field:', got {parts[0]!r}")
    props: dict[str, str] = {}
    for part in parts[1:]:
        key, colon, value = part.partition(":")
        if colon:
            props[key.strip()] = value.strip()
    try:
        offset = int(props["offset"], 0)
        size = int(props["size"], 0)
        signed = int(props["signed"]) != 0 if "signed" in props else None
    except (KeyError, ValueError):
        raise FormatError(f"line {lineno}: bad or missing offset/size in {line!r}") from None
    if not 0 <= offset <= 0xFFFF or not 0 <= size <= 0xFFFF:
        raise FormatError(f"line {lineno}: offset/size out of range in {line!r}")
    return classify(decl.strip(), offset, size, signed, long_size)


def classify(decl: str, offset: int, size: int, signed: bool | None,
             long_size: int = 8) -> FieldFormat:
    """Deduce name, element size, format and array kind from a C declaration."""
    n_long = 0
    short = unsigned = signed_kw = struct = data_loc = rel_loc = array = pointer = False
    name = base = ""
    count = 0
    tokens = _TOKEN.findall(decl)
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        i += 1
        if tok[0].isalpha() or tok[0] == "_":
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
        elif tok[0] == "[":
            array = True
            digits = tok[1:].rstrip("]").strip()
            try:
                count = int(digits, 0) if digits else 0
            except ValueError:
                count = 0
            if not 0 <= count <= 0xFFFF:
                count = 0
            if i < len(tokens) and (tokens[i][0].isalpha() or tokens[i][0] == "_"):
                base, name = name, tokens[i]
            break
        elif tok == "*":
            pointer = True
    name = name or "noname"

    fixup = False
    element = 1
    if pointer:
        fmt, element = HEX, 8 if long_size == 8 else 4
    elif struct:
        fmt, element = NONE, 1
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
        fmt, fixup = HEX, True
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
        if size in (1, 2, 4, 8):
            element, fixup = size, False
    if fixup:
        element = 1
    return FieldFormat(decl, name, offset, size, signed, fmt, element, kind, count)
