"""The EventHeader binary layout as construct grammars (the single source of truth).

::

    eventheader            flags u8, version u8, id u16, tag u16, opcode u8, level u8
    extension *            size u16, kind u16 (bit 15: another extension follows), data
    payload                field values, packed, in the event's byte order

The metadata extension holds the event name (NUL-terminated, ``;key=value``
attributes allowed) and field definitions: name (NUL-terminated), encoding
byte (bit 7: a format byte follows; bit 5 constant array, bit 6 variable
array), format byte (bit 7: a u16 tag follows; for structs the member count),
tag, constant-array count.

The per-event hot path (:func:`parse_extensions`) reads headers with
``struct`` formats derived from these grammars; metadata is parsed with the
grammar itself, once per distinct metadata (the decoder caches the result),
and :func:`payload_grammar` turns the parsed field definitions into the
grammar of the payload, from which ``ehtool.render.plan`` derives its
generated fast path (tests prove the two agree).

Errors follow the reference ``EventEnumerator``: a malformed field definition
or a field with both array flags fails every event of that metadata, while an
invalid encoding, a constant array of 0 elements or a non-array struct of 0
members only fail an event whose enumeration reaches that field (fields inside
a zero-length array of structs are skipped); such definitions carry ``error``.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from functools import cache

import construct as c

from ehtool.errors import brief
from ehtool.eventheader.enums import (
    ENCODING_CARRAY_FLAG,
    ENCODING_CHAIN_FLAG,
    ENCODING_VALUE_MASK,
    ENCODING_VARRAY_FLAG,
    EXTENSION_KIND_CHAIN_FLAG,
    EXTENSION_KIND_VALUE_MASK,
    FORMAT_CHAIN_FLAG,
    FORMAT_VALUE_MASK,
    STRUCT_NESTING_LIMIT,
    TOP_LEVEL_FIELD_LIMIT,
    ExtensionKind,
    FieldEncoding,
    FieldFormat,
)

#: ... or that needs more MoveNext steps than this (perf-decode's default)
MOVE_NEXT_LIMIT = 4096


class EventHeaderError(ValueError):
    """An EventHeader event that is malformed."""


@cache
def grammar(little_endian: bool) -> dict[str, c.Construct]:
    """The construct definitions for one byte order."""
    u16 = c.Int16ul if little_endian else c.Int16ub
    header = c.Struct(
        "flags" / c.Int8ub,
        "version" / c.Int8ub,
        "id" / u16,
        "tag" / u16,
        "opcode" / c.Int8ub,
        "level" / c.Int8ub,
    )
    extension_header = c.Struct("size" / u16, "kind" / u16)
    extension = c.Struct("size" / u16, "kind" / u16, "data" / c.Bytes(c.this.size))
    field_def = c.Struct(
        "name" / c.NullTerminated(c.GreedyBytes),
        "encoding" / c.Int8ub,
        "format" / c.If(c.this.encoding & ENCODING_CHAIN_FLAG, c.Int8ub),
        "tag" / c.If(lambda this: this.format is not None and this.format & FORMAT_CHAIN_FLAG,
                     u16),
        "array_count" / c.If(
            lambda this: this.encoding & (ENCODING_CARRAY_FLAG | ENCODING_VARRAY_FLAG)
            == ENCODING_CARRAY_FLAG, u16),
    )
    metadata = c.Struct(
        "name" / c.NullTerminated(c.GreedyBytes),
        "fields" / c.GreedyRange(field_def),
        c.Terminated,
    )
    # the u16 of a tag, a constant-array count, and (payload) of a variable array's or a
    # counted string's length
    count = c.Struct("count" / u16)
    return {"header": header, "extension_header": extension_header, "extension": extension,
            "field_def": field_def, "metadata": metadata, "count": count}


@dataclass(slots=True)
class FieldDef:
    """One field definition; structs hold their members."""

    name: bytes
    encoding: int  # FieldEncoding value (flags masked off)
    format: int  # FieldFormat value, or the member count of a struct
    tag: int
    array: int | None  # None: scalar; N >= 1: constant array; 0: variable array
    members: list[FieldDef] = field(default_factory=list)
    #: why an event fails when its enumeration reaches this field (None: it does not)
    error: str | None = None


def static_steps(defs: list[FieldDef], depth: int = 1) -> int:
    """The MoveNext steps that enumerating ``defs`` (members at struct nesting ``depth``)
    costs whatever the data holds: 1 per value, 2 per struct and per array (its begin
    and end) and 1 per element of a constant-count array of values. A field that fails
    the event (``error``, a struct nested too deep) counts 0 (an array of structs nested
    too deep its 2: it fails only with elements). The data adds the rest
    (:func:`has_data_steps`): 1 per element of a variable-count array of values,
    :func:`element_steps` per element of an array of structs. Past MOVE_NEXT_LIMIT in
    all, the event fails."""
    total = 0
    for d in defs:
        if d.error is not None:
            continue
        if d.array is not None:
            total += 2 if d.encoding == FieldEncoding.STRUCT else 2 + d.array
        elif d.encoding != FieldEncoding.STRUCT:
            total += 1
        elif depth <= STRUCT_NESTING_LIMIT:
            total += 2 + static_steps(d.members, depth + 1)
    return total


def has_data_steps(d: FieldDef, depth: int = 1) -> bool:
    """Whether the data adds MoveNext steps to :func:`static_steps` for field ``d`` (at
    struct nesting ``depth``): a variable count (read before a struct's depth is
    checked), an array of structs not nested too deep, or a struct holding one. Without
    any, an event whose static steps are too many fails before its first field; with
    one, after its bounds are checked (as the JSON renderer checks them)."""
    if d.error is not None:
        return False
    if d.array == 0:
        return True
    if d.encoding != FieldEncoding.STRUCT or depth > STRUCT_NESTING_LIMIT:
        return False
    return d.array is not None or any(has_data_steps(m, depth + 1) for m in d.members)


def step_budget(defs: list[FieldDef]) -> int | None:
    """The MoveNext steps the data may add to ``defs``' :func:`static_steps` before an
    event fails (below 0: every event fails, once its bounds are checked); None when
    every event fails before its first field: the static steps alone are too many and
    nothing is counted from the data (the JSON renderer checks that first)."""
    budget = MOVE_NEXT_LIMIT - 1 - static_steps(defs)  # (the last MoveNext finds the end)
    if budget < 0 and not any(has_data_steps(d) for d in defs):
        return None
    return budget


def element_steps(d: FieldDef, depth: int) -> int:
    """The MoveNext steps of one element of ``d``, an array of structs at ``depth``, by
    itself (its begin, end and members' :func:`static_steps`)."""
    return 2 + static_steps(d.members, depth + 1)


def header_struct(little_endian: bool) -> struct.Struct:
    """``struct`` format of the 8-byte header, derived from the grammar."""
    return _derive(grammar(little_endian)["header"], little_endian)


def extension_struct(little_endian: bool) -> struct.Struct:
    """``struct`` format of an extension's size/kind pair, derived from the grammar."""
    return _derive(grammar(little_endian)["extension_header"], little_endian)


@cache
def count_struct(little_endian: bool) -> struct.Struct:
    """``struct`` format of the u16 before a variable array or a counted string (payload)
    and of a tag or constant-array count (metadata), derived from the grammar."""
    return _derive(grammar(little_endian)["count"], little_endian)


@cache
def _derive(st: c.Struct, little_endian: bool) -> struct.Struct:
    codes = {1: "B", 2: "H", 4: "I", 8: "Q"}
    return struct.Struct(("<" if little_endian else ">")
                         + "".join(codes[sub.subcon.sizeof()] for sub in st.subcons))


_EXT = {True: extension_struct(True), False: extension_struct(False)}


def parse_extensions(data: bytes, pos: int, little_endian: bool
                     ) -> tuple[bytes | None, bytes | None, int]:
    """Walk the extension blocks at ``pos``: (metadata, activity ids, payload offset).

    Raises EventHeaderError where the reference decoder refuses the event
    (invalid kind, a block past the end, two metadata or activity blocks, an
    activity block not 16 or 32 bytes, an event name without NUL).
    """
    ext = _EXT[little_endian]
    end = len(data)
    metadata = activity = None
    while True:
        if pos + 4 > end:
            raise EventHeaderError("extension header past the end of the event")
        size, kind = ext.unpack_from(data, pos)
        pos += 4
        if pos + size > end:
            raise EventHeaderError("extension data past the end of the event")
        value = kind & EXTENSION_KIND_VALUE_MASK
        if value == ExtensionKind.INVALID:
            raise EventHeaderError("invalid extension kind 0")
        if value == ExtensionKind.METADATA:
            if metadata is not None:
                raise EventHeaderError("two metadata extensions")
            metadata = data[pos:pos + size]
            if b"\0" not in metadata:
                raise EventHeaderError("event name without terminator")
        elif value == ExtensionKind.ACTIVITY_ID:
            if activity is not None or size not in (16, 32):
                raise EventHeaderError("bad activity id extension")
            activity = data[pos:pos + size]
        pos += size
        if not kind & EXTENSION_KIND_CHAIN_FLAG:
            return metadata, activity, pos


#: a field definition as read: (name, encoding, format or None, tag or None, count or None)
RawFieldDef = tuple[bytes, int, "int | None", "int | None", "int | None"]
_U16 = {True: count_struct(True).unpack_from, False: count_struct(False).unpack_from}


def read_field_defs(metadata: bytes, little_endian: bool
                    ) -> tuple[bytes, list[RawFieldDef]] | None:
    """The ``metadata`` grammar read by hand, for speed (an event's metadata is parsed
    once, but a trace can hold thousands of distinct ones): the event name and each
    field definition's grammar values. None for anything the grammar would refuse
    (:func:`grammar_field_defs` then says why); tests/eventheader check that both
    read the same."""
    end = len(metadata)
    nul = metadata.find(0)
    if nul < 0:
        return None
    name = metadata[:nul]
    pos = nul + 1
    u16 = _U16[little_endian]
    out: list[RawFieldDef] = []
    carray = ENCODING_CARRAY_FLAG
    arrays = ENCODING_CARRAY_FLAG | ENCODING_VARRAY_FLAG
    while pos < end:
        nul = metadata.find(0, pos)
        if nul < 0 or nul + 1 >= end:
            return None
        field_name = metadata[pos:nul]
        enc = metadata[nul + 1]
        pos = nul + 2
        fmt = tag = count = None
        if enc & ENCODING_CHAIN_FLAG:
            if pos >= end:
                return None
            fmt = metadata[pos]
            pos += 1
            if fmt & FORMAT_CHAIN_FLAG:
                if pos + 2 > end:
                    return None
                tag = u16(metadata, pos)[0]
                pos += 2
        if enc & arrays == carray:
            if pos + 2 > end:
                return None
            count = u16(metadata, pos)[0]
            pos += 2
        out.append((field_name, enc, fmt, tag, count))
    return name, out


def grammar_field_defs(metadata: bytes, little_endian: bool
                       ) -> tuple[bytes, list[RawFieldDef]]:
    """:func:`read_field_defs` through the construct grammar (EventHeaderError says
    what is wrong)."""
    try:
        parsed = grammar(little_endian)["metadata"].parse(metadata)
    except c.ConstructError as exc:
        raise EventHeaderError(f"bad metadata: {brief(exc)}") from None
    return bytes(parsed.name), [(bytes(f.name), f.encoding, f.format, f.tag, f.array_count)
                                for f in parsed.fields]


def parse_metadata(metadata: bytes, little_endian: bool) -> tuple[bytes, list[FieldDef]]:
    """Parse the metadata extension into the event name and a tree of field definitions."""
    read = read_field_defs(metadata, little_endian)
    name, raw_defs = read if read is not None else grammar_field_defs(metadata, little_endian)
    flat = []
    for field_name, enc, fmt, tag, count in raw_defs:
        if enc & ENCODING_CARRAY_FLAG and enc & ENCODING_VARRAY_FLAG:
            raise EventHeaderError(f"field {field_name!r}: both array flags set")
        array = (count if enc & ENCODING_CARRAY_FLAG
                 else 0 if enc & ENCODING_VARRAY_FLAG else None)
        d = FieldDef(field_name, enc & ENCODING_VALUE_MASK, (fmt or 0) & FORMAT_VALUE_MASK,
                     tag or 0, array)
        if array == 0 and enc & ENCODING_CARRAY_FLAG:
            d.array, d.error = None, f"field {field_name!r}: constant array of 0 elements"
        elif d.encoding == FieldEncoding.INVALID or d.encoding >= FieldEncoding.MAX:
            d.error = f"field {field_name!r}: unsupported encoding {d.encoding}"
        elif d.encoding == FieldEncoding.STRUCT and d.format == 0 and array is None:
            d.error = f"struct {field_name!r} with 0 members"
        flat.append(d)
    fields, used = _tree(flat, 0, len(flat))
    return name, fields


def _tree(flat: list[FieldDef], start: int, count: int) -> tuple[list[FieldDef], int]:
    """Nest struct members (a struct's format is its member count), without recursion:
    the depth comes from the input (a 3 KB metadata can nest ~1000 levels)."""
    top: list[FieldDef] = []
    # (members list being filled, how many it still takes)
    stack: list[tuple[list[FieldDef], int]] = [(top, count)]
    i = start
    while stack and i < len(flat):
        members, left = stack.pop()
        if not left:
            continue
        d = flat[i]
        i += 1
        members.append(d)
        stack.append((members, left - 1))
        if d.encoding == FieldEncoding.STRUCT and d.format:
            d.members = []
            stack.append((d.members, d.format))
    return top, i


def build_metadata(name: bytes, fields: list[dict], little_endian: bool = True) -> bytes:
    """Build metadata bytes with the grammar (used by tests to cross-check the encoder)."""
    return grammar(little_endian)["metadata"].build({"name": name, "fields": fields})


# -- payload -------------------------------------------------------------------

_VALUE_SIZES = {FieldEncoding.VALUE8: 1, FieldEncoding.VALUE16: 2, FieldEncoding.VALUE32: 4,
                FieldEncoding.VALUE64: 8}


def raw_bytes_value(size: int, fmt: int) -> bool:
    """Whether a ``size``-byte value field of format ``fmt`` is rendered from its bytes in
    stored order (hex bytes, IPv4, port) rather than as a number in the event's order."""
    return (fmt == FieldFormat.HEX_BYTES
            or (size == 2 and fmt == FieldFormat.PORT)
            or (size == 4 and fmt in (FieldFormat.IP_ADDRESS, FieldFormat.IP_ADDRESS_OBSOLETE)))


def payload_grammar(fields: list[FieldDef], little_endian: bool) -> c.Construct:
    """The payload layout of parsed field definitions, as a construct grammar.

    Parses into a list with one item per top-level field: an int (value8..64 as
    unsigned numbers in the event's byte order), bytes (value128, raw-byte
    formats, char8 strings without their terminator or count), a list of code
    units (char16/char32 strings; zero-terminated ones keep their 0), a list
    (struct members) or a list of elements (arrays). A field the reference
    decoder refuses when it reaches it parses as ``construct.Error``. Bytes after
    the last field (perf's padding) are ignored.
    """
    if len(fields) > TOP_LEVEL_FIELD_LIMIT:
        return c.Error
    return c.Sequence(*[_field_grammar(d, little_endian, 1) for d in fields])


def _field_grammar(d: FieldDef, little: bool, depth: int) -> c.Construct:
    if d.error is not None:
        return c.Error
    if d.encoding == FieldEncoding.STRUCT:
        if depth > STRUCT_NESTING_LIMIT:
            element: c.Construct = c.Error
        else:
            element = c.Sequence(*[_field_grammar(m, little, depth + 1) for m in d.members])
    else:
        element = _scalar_grammar(d.encoding, d.format, little)
    if d.array is None:
        return element
    u16 = c.Int16ul if little else c.Int16ub
    return c.PrefixedArray(u16, element) if d.array == 0 else c.Array(d.array, element)


def _scalar_grammar(encoding: int, fmt: int, little: bool) -> c.Construct:
    E = FieldEncoding
    ints = {1: c.Int8ul, 2: c.Int16ul, 4: c.Int32ul, 8: c.Int64ul} if little else {
        1: c.Int8ub, 2: c.Int16ub, 4: c.Int32ub, 8: c.Int64ub}
    size = _VALUE_SIZES.get(encoding)
    if size is not None:
        return c.Bytes(size) if raw_bytes_value(size, fmt) else ints[size]
    if encoding == E.VALUE128:
        return c.Bytes(16)
    if encoding == E.ZSTRING_CHAR8:
        return c.NullTerminated(c.GreedyBytes)
    if encoding in (E.ZSTRING_CHAR16, E.ZSTRING_CHAR32):
        return c.RepeatUntil(lambda unit, units, ctx: unit == 0,
                             ints[2 if encoding == E.ZSTRING_CHAR16 else 4])
    if encoding in (E.STRING_LENGTH16_CHAR8, E.BINARY_LENGTH16_CHAR8):
        return c.Prefixed(ints[2], c.GreedyBytes)
    if encoding in (E.STRING_LENGTH16_CHAR16, E.STRING_LENGTH16_CHAR32):
        return c.PrefixedArray(ints[2], ints[2 if encoding == E.STRING_LENGTH16_CHAR16 else 4])
    return c.Error
