"""Typed values of a tracefs record's fields: ``int`` (arrays: lists; a field shown in
hex, a :class:`~ehtool.values.shown.Hex`), ``str`` for char arrays (up to the first NUL,
one Latin-1 character a byte), ``bytes`` for blobs (``struct``), None for a field beyond
the end of the record.

Integers keep their declared signedness (perf-decode's JSON shows 8- and 16-bit
signed fields unsigned; the typed value is the C value).
"""

from __future__ import annotations

import struct
from collections.abc import Callable

from ehtool.formats.tracefs_format import HEX, NONE, SCALAR, SIGNED, STRING, UNSIGNED, FieldFormat
from ehtool.values.shown import Hex
from ehtool.values.typed_json import json_bytes

_CODES = {(1, False): "B", (2, False): "H", (4, False): "I", (8, False): "Q",
          (1, True): "b", (2, True): "h", (4, True): "i", (8, True): "q"}


def field_value(f: FieldFormat, raw: bytes | memoryview, big_endian: bool = False) -> object:
    """The Python value of field ``f`` in record ``raw``."""
    data = f.data(raw, big_endian)
    if f.format == STRING:
        return _text(bytes(data))
    if f.format == NONE and (f.array == SCALAR or f.element_size == 1):
        return bytes(data) if data or f.array != SCALAR else None
    size = f.element_size
    code = _CODES[size, f.format == SIGNED]
    order = ">" if big_endian else "<"
    shown = _shown(f)
    if f.array == SCALAR:
        if len(data) < size:
            return None
        value = struct.unpack_from(order + code, data)[0]
        return value if shown is None else shown(value)
    values = struct.unpack_from(f"{order}{len(data) // size}{code}", data)
    return list(values) if shown is None else list(map(shown, values))


def _text(data: bytes) -> str:
    """A char array's text: up to the first NUL, one Latin-1 character a byte."""
    nul = data.find(b"\0")
    return (data if nul < 0 else data[:nul]).decode("latin-1")


def _shown(f: FieldFormat) -> Callable[[int], object] | None:
    """The type of ``f``'s integers when not ``int``: Hex for a field shown in hex."""
    return Hex if f.format == HEX else None


def value_reader(f: FieldFormat, big_endian: bool = False) -> Callable[[bytes | memoryview],
                                                                        object]:
    """``read(raw)``: :func:`field_value` of ``f``, resolved once: a scalar integer is
    unpacked in place (None when the record ends before it), a fixed char array sliced
    (``""`` when the record ends before its end), others by field_value."""
    if f.char_array:
        offset, end = f.offset, f.offset + f.size

        def string(raw: bytes | memoryview) -> object:
            return _text(bytes(raw[offset:end])) if end <= len(raw) else ""
        return string
    if not _in_place(f):
        return lambda raw: field_value(f, raw, big_endian)
    unpack = struct.Struct((">" if big_endian else "<") + _CODES[f.element_size,
                                                                  f.format == SIGNED]).unpack_from
    offset, end = f.offset, f.offset + f.size  # (the field's bytes must all be there)

    shown = _shown(f)
    if shown is not None:
        def shown_scalar(raw: bytes | memoryview) -> object:
            return shown(unpack(raw, offset)[0]) if end <= len(raw) else None
        return shown_scalar

    def scalar(raw: bytes | memoryview) -> object:
        return unpack(raw, offset)[0] if end <= len(raw) else None
    return scalar


def _in_place(f: FieldFormat) -> bool:
    """Whether ``f`` is a scalar integer read in place: its first ``element_size`` bytes,
    when the record holds all of its ``size``."""
    return (f.array == SCALAR and f.format in (UNSIGNED, SIGNED, HEX)
            and f.element_size in (1, 2, 4, 8) and f.size >= f.element_size)


def typed_json_renderer(fields: list[FieldFormat], big_endian: bool,
                        fallback: Callable[[bytes], bytes]) -> Callable[[bytes], bytes] | None:
    """``render(raw)``: the members of the JSON object of the fields' typed values (as
    :func:`value_reader` reads them) by ``ehtool.values.typed_json``, each after a comma
    (``,"pid":18``), in C: scalar integers and char arrays read in place, the other
    fields by their reader and the Python rule; a record shorter than those fields, and
    one that is not ``bytes``, by ``fallback(raw)`` (the same text). None without the C
    module, or when a name comes twice (the typed object keeps the first)."""
    from ehtool import speedups as sp

    speedups = sp.load()
    if speedups is None or len({f.name for f in fields}) < len(fields):
        return None
    ops: list[tuple] = []
    end = 0
    for f in fields:
        ops.append((sp.OP_LIT, b"," + json_bytes(f.name) + b":"))
        if _in_place(f):
            kind = sp.FX_SIGNED if f.format == SIGNED else sp.FX_UNSIGNED  # (Hex: its number)
            ops += [(sp.OP_SEEK, f.offset), (sp.OP_FIXED, f.element_size, kind, None)]
        elif f.char_array:
            ops += [(sp.OP_SEEK, f.offset), (sp.OP_CSTR, f.size, _latin1_json)]
        else:
            read = value_reader(f, big_endian)
            ops.append((sp.OP_CALL, lambda raw, read=read: json_bytes(read(raw))))
            continue
        end = max(end, f.offset + f.size)
    return speedups.Plan(ops, not big_endian, 0, fallback, end).render_record


def _latin1_json(data: bytes) -> bytes:
    """A char array's bytes before its NUL as the JSON of their Latin-1 text."""
    return json_bytes(data.decode("latin-1"))
