"""Compiled encoders for events of one shape (``ehtool write --batch``'s hot path).

``compile_event(event)`` encodes the header and metadata once; the plan's
``encode(values)`` adds the payload. Values go through packers that accept only
the plain input (an int for an integer type, a str for a UTF-8 string, a list
of ints for a numeric array) and raise on anything else, so callers fall back to
:func:`ehtool.eventheader.encoder.encode`, which defines every type's bytes (a
test proves both give the same bytes).
"""

from __future__ import annotations

import struct
from typing import Any

from ehtool.eventheader.encoder import (
    _O,
    _U16,
    _VALUE_ENCODERS,
    LITTLE,
    MAX_EVENT_SIZE,
    EncodeError,
    Event,
    Field,
    FieldType,
    _cstr,
    _field_def,
    _header,
    _metadata_extension,
    _packed,
    _payload,
    check_shape,
    check_size,
    parse_type,
)
from ehtool.eventheader.enums import FieldEncoding as E

#: what a plan meets when a value does not fit its packing (a wrong type, a value out of
#: range, another count, an address inet_pton refuses: OSError): the general encoder
#: then says what is wrong; anything else is a bug and propagates
MISSES = (AttributeError, LookupError, TypeError, ValueError, struct.error, OverflowError,
          OSError)


class EventPlan:
    """An event with its header and metadata encoded once; ``encode(values)`` adds the payload.

    ``encode`` is generated for the shape: consecutive fixed-size numbers are
    packed by one ``struct.Struct``, the other values by packers that accept the
    plain input only. Anything else (or any error) goes through the general
    packers, which run :func:`encode`'s own code and raise its EncodeError.
    """

    __slots__ = ("head", "meta", "general", "encode")

    def __init__(self, head: bytes, meta: bytes, packers: list, general: list) -> None:
        self.head = head
        self.meta = meta
        self.general = general
        self.encode = _generate(head, meta, packers, self._general)

    def _general(self, values: Any, activity_ext: bytes) -> bytes:
        if not isinstance(values, list | tuple) or len(values) != len(self.general):
            raise EncodeError(f"expected {len(self.general)} values, got {values!r}")
        parts = [g(v) for g, v in zip(self.general, values, strict=True)]
        data = b"".join([self.head, activity_ext, self.meta, *parts])
        check_size(len(data))
        return data


def _generate(head: bytes, meta: bytes, packers: list, general: Any):
    """Source for ``encode(values, activity_ext=b"")`` of one shape, compiled once."""
    names: dict[str, Any] = {"HEAD": head, "META": meta, "GENERAL": general, "MISSES": MISSES,
                             "LIMIT": MAX_EVENT_SIZE, "check_size": check_size}
    parts, run_codes, run_args = [], [], []
    order = None

    def flush() -> None:
        nonlocal order
        if run_codes:
            name = f"S{len(names)}"
            names[name] = struct.Struct(order + "".join(run_codes)).pack
            parts.append(f"{name}({', '.join(run_args)})")
            run_codes.clear()
            run_args.clear()
        order = None

    for index, packer in enumerate(packers):
        if isinstance(packer, tuple):  # ("<", "I"): a fixed-size number, joins the run
            if order is not None and packer[0] != order:
                flush()
            order = packer[0]
            run_codes.append(packer[1])
            run_args.append(f"v{index}")
        else:
            flush()
            name = f"P{len(names)}"
            names[name] = packer
            parts.append(f"{name}(v{index})")
    flush()
    names["PREFIX"] = head + meta
    values = "".join(f"v{i}, " for i in range(len(packers)))
    body = " + ".join(parts) or "b''"
    source = (
        "def encode(values, activity_ext=b''):\n"
        "    try:\n"
        f"        ({values}) = values\n"
        f"        data = {body}\n"
        "    except MISSES:\n"
        "        return GENERAL(values, activity_ext)\n"
        "    data = HEAD + activity_ext + META + data if activity_ext else PREFIX + data\n"
        "    if len(data) > LIMIT:\n"
        "        check_size(len(data))\n"
        "    return data\n"
    )
    exec(source, names)  # noqa: S102 - generated from type codes, no user text
    return names["encode"]


def compile_event(event: Event) -> EventPlan | None:
    """The plan for events shaped like ``event`` (its values are ignored).

    None when a field is a struct (those go through :func:`encode`). The
    activity ids are not part of the plan: pass :func:`activity_extension`'s
    bytes to ``EventPlan.encode``.
    """
    check_shape(event)
    meta = bytearray(_cstr(event.name, "event name"))
    packers, general = [], []
    for f in event.fields:
        ftype, count = parse_type(f.type)
        if ftype.encoding == E.STRUCT:
            return None
        _field_def(f, ftype.encoding, ftype.format, count, meta)
        packers.append(_packer(ftype, count))
        general.append(_general_packer(ftype, count, f.name, f.tag))
    return EventPlan(_header(event), _metadata_extension(meta), packers, general)


def _general_packer(ftype: FieldType, count: int | None, name: str, tag: int):
    """value -> bytes through ``encode``'s own code (every input form, its messages)."""
    def general(value: Any) -> bytes:
        payload = bytearray()
        _payload(ftype, count, Field(name, ftype.name, value, tag), payload)
        return bytes(payload)
    return general


def _packer(t: FieldType, count: int | None):
    """value -> bytes for plain input, raising on anything else; (order, code) for a number."""
    code = t.pack.lstrip(">")
    order = ">" if t.pack.startswith(">") else _O
    if code:
        if count is None:
            return (order, code)  # packed with its neighbours by one Struct
        if count:
            return _carray_packer(struct.Struct(f"{order}{count}{code}").pack, count)
        return _varray_packer(order, code)
    one = _string_packer(t) or _fallback_packer(t)
    if count is None:
        return one
    return _any_array_packer(one, count)


def _carray_packer(pack, count: int):
    def carray(values: list) -> bytes:
        if type(values) is not list or len(values) != count:
            raise ValueError("not a list of the constant length")
        return pack(*values)
    return carray


def _varray_packer(order: str, code: str):
    count = "<H" if LITTLE else ">H"
    packs: dict[int, Any] = {}  # length -> pack of the u16 count and the elements

    def varray(values: list) -> bytes:
        if type(values) is not list:
            raise ValueError("not a list")
        n = len(values)
        pack = packs.get(n)
        if pack is None:
            if n > 0xFFFF:
                raise ValueError("too many elements")
            pack = packs[n] = struct.Struct(f"{count}{n}{code}").pack \
                if order == count[0] else _split_pack(count, f"{order}{n}{code}")
            if len(packs) > 64:
                packs.clear()
        return pack(n, *values)
    return varray


def _split_pack(count: str, elements: str):
    head, body = struct.Struct(count).pack, struct.Struct(elements).pack

    def pack(n: int, *values: Any) -> bytes:
        return head(n) + body(*values)
    return pack


def _any_array_packer(one, count: int):
    prefix = _U16.pack

    def array(values: list) -> bytes:
        if type(values) is not list or (count and len(values) != count):
            raise ValueError("not a list of the right length")
        body = b"".join([one(v) for v in values])
        return body if count else prefix(len(values)) + body
    return array


def _string_packer(t: FieldType):
    if t.encoding == E.ZSTRING_CHAR8:
        def zstring(value: str) -> bytes:
            if "\0" in value:
                raise ValueError("NUL")
            return value.encode() + b"\0"
        return zstring
    if t.encoding == E.STRING_LENGTH16_CHAR8:
        prefix = _U16.pack

        def counted(value: str) -> bytes:
            data = value.encode()
            return prefix(len(data)) + data
        return counted
    return None


def _fallback_packer(t: FieldType):
    encoder = _VALUE_ENCODERS.get(t.name, _packed)

    def general(value: Any) -> bytes:
        return encoder(t, value)
    return general
