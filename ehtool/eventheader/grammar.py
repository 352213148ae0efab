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
grammar itself, once per distinct metadata (the decoder caches the result).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from functools import cache

import construct as c

from ehtool.eventheader.enums import (
    ENCODING_CARRAY_FLAG,
    ENCODING_CHAIN_FLAG,
    ENCODING_VALUE_MASK,
    ENCODING_VARRAY_FLAG,
    EXTENSION_KIND_CHAIN_FLAG,
    EXTENSION_KIND_VALUE_MASK,
    FORMAT_CHAIN_FLAG,
    FORMAT_VALUE_MASK,
    ExtensionKind,
    FieldEncoding,
)


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
    return {"header": header, "extension_header": extension_header, "extension": extension,
            "field_def": field_def, "metadata": metadata}


@dataclass(slots=True)
class FieldDef:
    """One field definition; structs hold their members."""

    name: bytes
    encoding: int  # FieldEncoding value (flags masked off)
    format: int  # FieldFormat value, or the member count of a struct
    tag: int
    array: int | None  # None: scalar; N >= 1: constant array; 0: variable array
    members: list[FieldDef] = field(default_factory=list)


def header_struct(little_endian: bool) -> struct.Struct:
    """``struct`` format of the 8-byte header, derived from the grammar."""
    return _derive(grammar(little_endian)["header"], little_endian)


def extension_struct(little_endian: bool) -> struct.Struct:
    """``struct`` format of an extension's size/kind pair, derived from the grammar."""
    return _derive(grammar(little_endian)["extension_header"], little_endian)


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


def parse_metadata(metadata: bytes, little_endian: bool) -> tuple[bytes, list[FieldDef]]:
    """Parse the metadata extension into the event name and a tree of field definitions."""
    try:
        parsed = grammar(little_endian)["metadata"].parse(metadata)
    except c.ConstructError as exc:
        raise EventHeaderError(f"bad metadata: {str(exc).splitlines()[0]}") from None
    flat = []
    for raw in parsed.fields:
        enc = raw.encoding
        if enc & ENCODING_CARRAY_FLAG and enc & ENCODING_VARRAY_FLAG:
            raise EventHeaderError(f"field {bytes(raw.name)!r}: both array flags set")
        if enc & ENCODING_CARRAY_FLAG and raw.array_count == 0:
            raise EventHeaderError(f"field {bytes(raw.name)!r}: constant array of 0 elements")
        array = (raw.array_count if enc & ENCODING_CARRAY_FLAG
                 else 0 if enc & ENCODING_VARRAY_FLAG else None)
        flat.append(FieldDef(bytes(raw.name), enc & ENCODING_VALUE_MASK,
                             (raw.format or 0) & FORMAT_VALUE_MASK, raw.tag or 0, array))
    fields, used = _tree(flat, 0, len(flat))
    return bytes(parsed.name), fields


def _tree(flat: list[FieldDef], start: int, count: int) -> tuple[list[FieldDef], int]:
    """Nest struct members: a struct's format is its member count."""
    out = []
    i = start
    while i < len(flat) and len(out) < count:
        d = flat[i]
        i += 1
        if d.encoding == FieldEncoding.STRUCT:
            if d.format == 0:
                raise EventHeaderError(f"struct {d.name!r} with 0 members")
            d.members, i = _tree(flat, i, d.format)
        out.append(d)
    return out, i


def build_metadata(name: bytes, fields: list[dict], little_endian: bool = True) -> bytes:
    """Build metadata bytes with the grammar (used by tests to cross-check the encoder)."""
    return grammar(little_endian)["metadata"].build({"name": name, "fields": fields})
