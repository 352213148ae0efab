"""A slow reference decoder for the tests: every byte read with the construct grammar
(header, extensions, metadata, payload), values formatted with the generic
``plan.value_formatter``. The generated fast path must agree with it."""

from __future__ import annotations

import construct as c

from ehtool.eventheader.enums import FieldEncoding as E
from ehtool.eventheader.enums import FieldFormat as F
from ehtool.eventheader.grammar import (
    FieldDef,
    grammar,
    parse_metadata,
    payload_grammar,
)
from ehtool.render.plan import FIXED_SIZES, UNIT_SIZES, value_formatter
from ehtool.render.style import JsonStyle
from ehtool.values import text as v

#: counted char8 formats whose value depends on the event byte order
ORDERED_FORMATS = {F.UNSIGNED_INT: (1, 2, 4, 8), F.SIGNED_INT: (1, 2, 4, 8),
                   F.HEX_INT: (1, 2, 4, 8), F.ERRNO: (4,), F.PID: (4,), F.TIME: (4, 8),
                   F.BOOLEAN: (1, 2, 4), F.FLOAT: (4, 8)}


class Parsed:
    """An event split by the construct grammar."""

    def __init__(self, data: bytes) -> None:
        self.little = bool(data[0] & 0x02)
        g = grammar(self.little)
        self.header = g["header"].parse(data[:8])
        self.extensions = []
        pos = 8
        while True:
            ext = g["extension"].parse(data[pos:])
            self.extensions.append(ext)
            pos += 4 + ext.size
            if not ext.kind & 0x8000:
                break
        self.payload_offset = pos
        self.metadata = next(bytes(e.data) for e in self.extensions if e.kind & 0x7FFF == 1)
        self.name, self.defs = parse_metadata(self.metadata, self.little)
        self.values = payload_grammar(self.defs, self.little).parse(data[pos:])


def fields_json(parsed: Parsed, style: JsonStyle) -> bytes:
    """The ``fields`` bytes the decoder must produce for this event."""
    return b"".join(style.sep + _member(d, val, parsed.little, style)
                    for d, val in zip(parsed.defs, parsed.values, strict=True))


def _member(d: FieldDef, val: object, little: bool, style: JsonStyle) -> bytes:
    name = d.name + (b";tag=0x%X" % d.tag if d.tag and style.field_tags else b"")
    return v.utf8_json(name) + style.colon + _value(d, val, little, style)


def _value(d: FieldDef, val: object, little: bool, style: JsonStyle) -> bytes:
    if d.array is not None:
        assert isinstance(val, list)
        return style.arr([_element(d, x, little, style) for x in val])
    return _element(d, val, little, style)


def _element(d: FieldDef, val: object, little: bool, style: JsonStyle) -> bytes:
    if d.encoding == E.STRUCT:
        assert isinstance(val, list)
        return style.obj([_member(m, x, little, style)
                          for m, x in zip(d.members, val, strict=True)])
    return value_formatter(d.encoding, d.format, little)(raw_bytes(d, val, little))


def raw_bytes(d: FieldDef, val: object, little: bool) -> bytes:
    """The stored bytes of one parsed value (no count, no terminator)."""
    order = "little" if little else "big"
    if isinstance(val, int):
        return val.to_bytes(FIXED_SIZES[d.encoding], order)
    if isinstance(val, bytes):
        return val
    assert isinstance(val, list)  # char16/char32 code units
    unit = UNIT_SIZES[d.encoding]
    if d.encoding in (E.ZSTRING_CHAR16, E.ZSTRING_CHAR32):
        val = val[:-1]
    return b"".join(u.to_bytes(unit, order) for u in val)


def to_big_endian(data: bytes) -> bytes:
    """Re-encode a little-endian event in big-endian order through the grammar: numbers
    and code units change order, raw-byte values (hex bytes, IPv4, port, UUID) do not."""
    p = Parsed(data)
    assert p.little
    le, be = grammar(True), grammar(False)
    header = dict(p.header)
    header["flags"] &= ~0x02
    out = be["header"].build(header)
    for ext in p.extensions:
        body = bytes(ext.data)
        if ext.kind & 0x7FFF == 1:
            body = be["metadata"].build(le["metadata"].parse(body))
        out += be["extension"].build({"size": len(body), "kind": ext.kind, "data": body})
    values = [_swap_counted(d, x) for d, x in zip(p.defs, p.values, strict=True)]
    return out + payload_grammar(p.defs, False).build(values)


def _swap_counted(d: FieldDef, val: object) -> object:
    """Counted char8 data read as a number (a size its format accepts) is reversed."""
    if d.array is not None:
        return [_swap_element(d, x) for x in val]
    return _swap_element(d, val)


def _swap_element(d: FieldDef, val: object) -> object:
    if d.encoding == E.STRUCT:
        return [_swap_counted(m, x) for m, x in zip(d.members, val, strict=True)]
    if d.encoding in (E.STRING_LENGTH16_CHAR8, E.BINARY_LENGTH16_CHAR8):
        if len(val) in ORDERED_FORMATS.get(d.format, ()):
            return val[::-1]
    elif isinstance(val, list) and d.format == F.HEX_BYTES:
        # char16/char32 units shown as hex bytes keep their stored bytes
        unit = UNIT_SIZES[d.encoding]
        return [int.from_bytes(u.to_bytes(unit, "little"), "big") for u in val]
    return val


def construct_fails(data: bytes, offset: int = 0) -> bool:
    """Whether the grammar refuses the payload (or metadata) of a well-headed event."""
    try:
        Parsed(data[offset:])
    except (c.ConstructError, ValueError):
        return True
    return False
