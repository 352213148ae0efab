"""JSON members for a plain (non-EventHeader) tracepoint record, as perf-decode
renders tracefs fields.

* ``char`` arrays and ``__data_loc char[]``: a string of the bytes up to the
  first NUL, each byte one Latin-1 code point;
* pointers, ``unsigned long`` and unknown typedefs (``pid_t``, ``gfp_t``...):
  ``"0x%X"``;
* other integers: decimal. Like perf-decode, 8- and 16-bit signed fields are
  read unsigned (``s8 -1`` prints ``255``), 32- and 64-bit ones signed;
* arrays of numbers: JSON arrays; ``struct`` blobs: hex bytes;
* a field beyond the end of the record: ``null``.

A renderer is built once per format and then called for every sample.
"""

from __future__ import annotations

import dataclasses
import re
import struct
from collections.abc import Callable

from ehtool.caches import Bounded
from ehtool.eventheader.kinds import Kind, integer_kind
from ehtool.formats.tracefs_format import (
    HEX,
    NONE,
    SCALAR,
    SIGNED,
    STRING,
    EventFormat,
    FieldFormat,
    decimal_pid,
)
from ehtool.render.style import JsonStyle
from ehtool.values.text import hex_bytes, latin1_json

Renderer = Callable[[bytes | memoryview], bytes]


def make_renderer(fmt: EventFormat, style: JsonStyle, long_size: int = 8,
                  big_endian: bool = False, common: bool | str = False) -> Renderer:
    """Renderer of a record's members, each prefixed by ``style.sep``.

    ``common``: False for the event's own fields, True for the ``common_*``
    fields followed by the own fields, ``"only"`` for just the common fields.

    A renderer depends only on the fields it shows (every attribute of each), the style,
    the byte order and whether the C module is used (EHTOOL_PURE): it is made once per
    process for each distinct set of those (the inputs of a fleet repeat the same
    formats) and shared.
    """
    if common == "only":
        fields = fmt.common_fields
    elif common:
        fields = fmt.common_fields + fmt.fields
    else:
        fields = fmt.fields
    from ehtool import speedups

    key = (tuple(tuple(getattr(f, name) for name in _FIELD_ATTRS) for f in fields),
           style, long_size, big_endian, speedups.load() is not None)
    return _RENDERERS.made(key, lambda: _make_renderer(fields, style, big_endian))


#: what a field's renderer reads of it: every FieldFormat attribute
_FIELD_ATTRS = tuple(f.name for f in dataclasses.fields(FieldFormat))
#: made renderers by what they depend on (see make_renderer)
_RENDERERS: Bounded[tuple, Renderer] = Bounded(256)


def _make_renderer(fields: list[FieldFormat], style: JsonStyle, big_endian: bool) -> Renderer:
    if style.decimal_pids:
        fields = [decimal_pid(f) for f in fields]
    order = ">" if big_endian else "<"
    parts = [(style.sep + latin1_json(f.name.encode("latin-1", "replace")) + style.colon,
              _value_getter(f, style, order, big_endian)) for f in fields]

    if not fields:
        return lambda raw: b""
    return _compiled_renderer(fields, parts, order)


def raw_renderer(style: JsonStyle) -> Renderer:
    """``"raw": "<hex bytes>"`` for a tracepoint without a format."""
    key = style.sep + b'"raw"' + style.colon
    return lambda raw: key + hex_bytes(raw)


def _compiled_renderer(fields: list[FieldFormat], parts: list, order: str) -> Renderer:
    """One ``struct`` unpack for every fixed-offset number and char array, one bytes
    template for the whole record; other fields (dynamic, arrays, blobs) call
    their getters. Records too short for the struct take the per-field path."""
    fast = sorted((f for f in fields if _is_fast(f)), key=lambda f: f.offset)
    layout, pos, slots = order, 0, {}
    for f in fast:
        if f.offset < pos:  # overlapping fields: leave this one to its getter
            continue
        layout += "x" * (f.offset - pos) + (f"{f.size}s" if f.format == STRING else _code(f))
        pos = f.offset + f.size
        slots[id(f)] = len(slots)
    unpack_from = struct.Struct(layout).unpack_from
    end = pos
    template = b""
    args = []
    env: dict = {"unpack_from": unpack_from, "slow": _generic(parts), "cstr": _cstr_json,
                 "cget": _CSTR_CACHE.get}
    for i, (f, (key, get)) in enumerate(zip(fields, parts, strict=True)):
        template += key.replace(b"%", b"%%")
        slot = slots.get(id(f))
        if slot is None:
            template += b"%s"
            env[f"g{i}"] = get
            args.append(f"g{i}(raw)")
        elif f.format == STRING:
            template += b"%s"
            args.append(f"(cget(v[{slot}]) or cstr(v[{slot}]))")
        else:
            template += _kind(f, order).piece
            args.append(f"v[{slot}]")
    env["template"] = template
    src = (f"def render(raw):\n"
           f"    if len(raw) < {end}:\n        return slow(raw)\n"
           f"    v = unpack_from(raw)\n"
           f"    return template % ({', '.join(args)},)\n")
    exec(compile(src, "<tracefs renderer>", "exec"), env)  # noqa: S102
    return _native_renderer(fields, parts, slots, end, order, env["render"]) or env["render"]


def _native_renderer(fields: list[FieldFormat], parts: list, slots: dict[int, int], end: int,
                     order: str, render: Renderer) -> Renderer | None:
    """The C version of the generated ``render`` (``_speedups.Plan.render_record``): the
    same members from the same offsets; records shorter than ``end`` go to ``render``."""
    from ehtool import speedups as sp

    speedups = sp.load()
    if speedups is None:
        return None
    ops: list[tuple] = []
    for f, (key, get) in zip(fields, parts, strict=True):
        ops.append((sp.OP_LIT, key))
        if id(f) not in slots:
            ops.append((sp.OP_CALL, get))  # the field's getter on the whole record
        elif f.format == STRING:
            ops += [(sp.OP_SEEK, f.offset), (sp.OP_CSTR, f.size, latin1_json)]
        else:
            kind = _kind(f, order).c_kind
            ops += [(sp.OP_SEEK, f.offset), (sp.OP_FIXED, f.element_size, kind, None)]
    return speedups.Plan(ops, order == "<", 0, render, end).render_record


def _is_fast(f: FieldFormat) -> bool:
    if f.array == SCALAR:
        return f.format not in (NONE, STRING) and f.size == f.element_size
    return f.char_array


_PLAIN = re.compile(rb'[\x00-\x1f"\\\x80-\xff]')


#: char arrays seen (task names repeat in almost every sample) -> their JSON
_CSTR_CACHE: dict[bytes, bytes] = {}
_CSTR_CACHE_MAX = 4096


def _cstr_json(field: bytes) -> bytes:
    """A char array: bytes up to the first NUL as a JSON string of Latin-1 characters."""
    data = field.split(b"\0", 1)[0]
    out = b'"' + data + b'"' if _PLAIN.search(data) is None else latin1_json(data)
    if len(_CSTR_CACHE) >= _CSTR_CACHE_MAX:
        _CSTR_CACHE.clear()
    _CSTR_CACHE[field] = out
    return out


def _generic(parts: list) -> Renderer:
    def render(raw: bytes | memoryview) -> bytes:
        return b"".join([key + get(raw) for key, get in parts])
    return render


def _kind(f: FieldFormat, order: str) -> Kind:
    """The value rule of a numeric field: hex for HEX/NONE, else decimal; perf-decode reads
    8- and 16-bit values unsigned even for signed fields."""
    size = f.element_size
    return integer_kind(size, f.format == SIGNED and size >= 4, f.format in (HEX, NONE),
                        order == "<")


def _code(f: FieldFormat) -> str:
    return _kind(f, "<").code


def _value_getter(f: FieldFormat, style: JsonStyle, order: str,
                  big_endian: bool) -> Callable[[bytes | memoryview], bytes]:
    """A function raw -> JSON value of field ``f``."""
    if f.format == STRING:
        def string(raw: bytes | memoryview) -> bytes:
            data = f.data(raw, big_endian)
            if data is None:
                return b"null"
            data = bytes(data)
            nul = data.find(b"\0")
            return latin1_json(data if nul < 0 else data[:nul])
        return string
    if f.format == NONE and (f.array == SCALAR or f.element_size == 1):
        def blob(raw: bytes | memoryview) -> bytes:
            data = f.data(raw, big_endian)
            return b"null" if data is None else hex_bytes(data)
        return blob

    size = f.element_size
    text = _kind(f, order).piece
    one = struct.Struct(order + _code(f))
    if f.array == SCALAR:
        def scalar(raw: bytes | memoryview) -> bytes:
            data = f.data(raw, big_endian)
            if data is None or len(data) < size:
                return b"null"
            return text % one.unpack_from(data)[0]
        return scalar

    sep, open_, close, empty = style.sep, b"[" + style.first, style.close_arr, style.empty_arr
    code = _code(f)

    def array(raw: bytes | memoryview) -> bytes:
        data = f.data(raw, big_endian)
        if data is None:
            return b"null"
        n = len(data) // size
        if not n:
            return empty
        values = struct.unpack_from(f"{order}{n}{code}", data)
        return open_ + sep.join([text % v for v in values]) + close

    return array
