"""Typed values of a tracefs record's fields: ``int`` (arrays: lists), ``str`` for
char arrays (up to the first NUL, one Latin-1 character a byte), ``bytes`` for
blobs (``struct``), None for a field beyond the end of the record.

Integers keep their declared signedness (perf-decode's JSON shows 8- and 16-bit
signed fields unsigned; the typed value is the C value).
"""

from __future__ import annotations

import struct

from ehtool.formats.tracefs_format import NONE, SCALAR, SIGNED, STRING, FieldFormat

_CODES = {(1, False): "B", (2, False): "H", (4, False): "I", (8, False): "Q",
          (1, True): "b", (2, True): "h", (4, True): "i", (8, True): "q"}


def field_value(f: FieldFormat, raw: bytes | memoryview, big_endian: bool = False) -> object:
    """The Python value of field ``f`` in record ``raw``."""
    data = f.data(raw, big_endian)
    if f.format == STRING:
        data = bytes(data)
        nul = data.find(b"\0")
        return (data if nul < 0 else data[:nul]).decode("latin-1")
    if f.format == NONE and (f.array == SCALAR or f.element_size == 1):
        return bytes(data) if data or f.array != SCALAR else None
    size = f.element_size
    code = _CODES[size, f.format == SIGNED]
    order = ">" if big_endian else "<"
    if f.array == SCALAR:
        return struct.unpack_from(order + code, data)[0] if len(data) >= size else None
    return list(struct.unpack_from(f"{order}{len(data) // size}{code}", data))
