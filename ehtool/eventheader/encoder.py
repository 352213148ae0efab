"""Build EventHeader events (standard library only: this is on ``ehtool write``'s path).

::

    event = Event("MyEvent", level=5, fields=[
        Field("count", "u32", 7),
        Field("where", "str", "here"),
        Field("point", "struct", [Field("x", "i32", 1), Field("y", "i32", -1)]),
        Field("samples", "f64[]", [0.5, 1.5]),
    ])
    data = encode(event)          # header + extensions + payload, ready for writev

The same event with only the values varying is the job of
:mod:`ehtool.eventheader.encode_plans` (``compile_event``), ``ehtool write
--batch``'s hot path.

Layout (see ``grammar.py``): the 8-byte header with this machine's byte order
and pointer size, an optional activity-id extension, the metadata extension
(event name and field definitions), then the packed values.

``encode`` is the definition of every type's bytes.
"""

from __future__ import annotations

import math
import re
import struct
import sys
from typing import Any

from ehtool.eventheader.enums import ENCODING_CARRAY_FLAG as _CARRAY
from ehtool.eventheader.enums import ENCODING_CHAIN_FLAG as _ENC_CHAIN
from ehtool.eventheader.enums import ENCODING_VARRAY_FLAG as _VARRAY
from ehtool.eventheader.enums import EXTENSION_KIND_CHAIN_FLAG as _EXT_CHAIN
from ehtool.eventheader.enums import FORMAT_CHAIN_FLAG as _FMT_CHAIN
from ehtool.eventheader.enums import (
    STRUCT_NESTING_LIMIT,
    TOP_LEVEL_FIELD_LIMIT,
    ExtensionKind,
    HeaderFlags,
)
from ehtool.eventheader.enums import FieldEncoding as E
from ehtool.eventheader.enums import FieldFormat as F

LITTLE = sys.byteorder == "little"
POINTER64 = struct.calcsize("P") == 8
_O = "<" if LITTLE else ">"
#: perf drops events whose 8-aligned common header + data exceed this
PERF_MAX_TRACE_SIZE = 8192
#: bytes the kernel puts before the event (struct trace_entry)
COMMON_HEADER_SIZE = 8
#: the largest event (header, extensions, payload) perf keeps
MAX_EVENT_SIZE = PERF_MAX_TRACE_SIZE - COMMON_HEADER_SIZE
#: ``eventheader.flags`` for events built on this machine
HEADER_FLAGS = int((HeaderFlags.LITTLE_ENDIAN if LITTLE else HeaderFlags.NONE)
                   | (HeaderFlags.POINTER64 if POINTER64 else HeaderFlags.NONE)
                   | HeaderFlags.EXTENSION)

# the grammar's header, extension header and count (eventheader/grammar.py), written
# out: ``ehtool write`` does not import construct (its start-up is a shell loop's cost);
# tests/eventheader/test_grammar_structs.py proves they equal the derived ones
_HEADER = struct.Struct(_O + "BBHHBB")
_EXT = struct.Struct(_O + "HH")
_U16 = struct.Struct(_O + "H")


class EncodeError(ValueError):
    """A field or event that cannot be encoded; the message names the field."""


class FieldType:
    """How one field type name maps onto EventHeader (encoding, format, packing)."""

    __slots__ = ("name", "encoding", "format", "pack", "help")

    def __init__(self, name: str, encoding: int, format: int, pack: str, help: str) -> None:
        self.name = name
        self.encoding = encoding
        self.format = format
        self.pack = pack  # struct code for fixed-size numbers, "" for the others
        self.help = help

    def __repr__(self) -> str:
        return f"FieldType({self.name!r})"


def _types() -> dict[str, FieldType]:
    ptr = "q" if POINTER64 else "i"
    uptr = "Q" if POINTER64 else "I"
    vptr = E.VALUE64 if POINTER64 else E.VALUE32
    table = [
        ("i8", E.VALUE8, F.SIGNED_INT, "b", "signed 8-bit integer"),
        ("i16", E.VALUE16, F.SIGNED_INT, "h", "signed 16-bit integer"),
        ("i32", E.VALUE32, F.SIGNED_INT, "i", "signed 32-bit integer"),
        ("i64", E.VALUE64, F.SIGNED_INT, "q", "signed 64-bit integer"),
        ("u8", E.VALUE8, F.DEFAULT, "B", "unsigned 8-bit integer"),
        ("u16", E.VALUE16, F.DEFAULT, "H", "unsigned 16-bit integer"),
        ("u32", E.VALUE32, F.DEFAULT, "I", "unsigned 32-bit integer"),
        ("u64", E.VALUE64, F.DEFAULT, "Q", "unsigned 64-bit integer"),
        ("x8", E.VALUE8, F.HEX_INT, "B", "8-bit integer shown in hex"),
        ("x16", E.VALUE16, F.HEX_INT, "H", "16-bit integer shown in hex"),
        ("x32", E.VALUE32, F.HEX_INT, "I", "32-bit integer shown in hex"),
        ("x64", E.VALUE64, F.HEX_INT, "Q", "64-bit integer shown in hex"),
        ("iptr", vptr, F.SIGNED_INT, ptr, "signed pointer-sized integer"),
        ("uptr", vptr, F.DEFAULT, uptr, "unsigned pointer-sized integer"),
        ("xptr", vptr, F.HEX_INT, uptr, "pointer-sized integer shown in hex"),
        ("bool", E.VALUE8, F.BOOLEAN, "B", "boolean, 1 byte (true/false/1/0)"),
        ("bool32", E.VALUE32, F.BOOLEAN, "i", "boolean, 4 bytes"),
        ("f32", E.VALUE32, F.FLOAT, "f", "32-bit float"),
        ("f64", E.VALUE64, F.FLOAT, "d", "64-bit float"),
        ("char", E.VALUE8, F.STRING8, "B", "one Latin-1 character"),
        ("char16", E.VALUE16, F.STRING_UTF, "H", "one UTF-16 code unit"),
        ("str", E.ZSTRING_CHAR8, F.DEFAULT, "", "UTF-8 string, NUL-terminated"),
        ("str16", E.ZSTRING_CHAR16, F.DEFAULT, "", "UTF-16 string, NUL-terminated"),
        ("str32", E.ZSTRING_CHAR32, F.DEFAULT, "", "UTF-32 string, NUL-terminated"),
        ("lstr", E.STRING_LENGTH16_CHAR8, F.DEFAULT, "", "UTF-8 string, counted"),
        ("lstr16", E.STRING_LENGTH16_CHAR16, F.DEFAULT, "", "UTF-16 string, counted"),
        ("lstr32", E.STRING_LENGTH16_CHAR32, F.DEFAULT, "", "UTF-32 string, counted"),
        ("bin", E.BINARY_LENGTH16_CHAR8, F.DEFAULT, "", "bytes, given in hex"),
        ("guid", E.VALUE128, F.UUID, "", "UUID (xxxxxxxx-xxxx-...)"),
        ("time", E.VALUE64, F.TIME, "q", "seconds since 1970, or ISO 8601 (UTC)"),
        ("time32", E.VALUE32, F.TIME, "i", "seconds since 1970, 32-bit"),
        ("errno", E.VALUE32, F.ERRNO, "i", "errno value (number or name: ENOENT)"),
        ("pid", E.VALUE32, F.PID, "i", "process id"),
        ("port", E.VALUE16, F.PORT, ">H", "TCP/UDP port (stored in network order)"),
        ("ipv4", E.VALUE32, F.IP_ADDRESS, "", "IPv4 address"),
        ("ipv6", E.VALUE128, F.IP_ADDRESS, "", "IPv6 address"),
        ("struct", E.STRUCT, F.DEFAULT, "", "nested fields (batch form only)"),
    ]
    out = {name: FieldType(name, int(enc), int(fmt), pack, text)
           for name, enc, fmt, pack, text in table}
    out["uuid"] = out["guid"]
    return out


TYPES = _types()
_ARRAY_SUFFIX = re.compile(r"^(\w+)\[(\d*)\]$")


class Field:
    """One field: ``type`` is a name from :data:`TYPES`, with ``[]`` or ``[N]`` for arrays.

    A struct's value is a list of Fields; an array of structs is a list of such lists.
    """

    __slots__ = ("name", "type", "value", "tag")

    def __init__(self, name: str, type: str, value: Any, tag: int = 0) -> None:
        self.name = name
        self.type = type
        self.value = value
        self.tag = tag

    def __repr__(self) -> str:
        return f"Field({self.name!r}, {self.type!r}, {self.value!r}, tag={self.tag})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Field):
            return NotImplemented
        return (self.name, self.type, self.value, self.tag) == (
            other.name, other.type, other.value, other.tag)


class Event:
    """An event to encode; ``name`` may carry ``;key=value`` attributes.

    ``activity`` and ``related_activity`` are UUIDs (text or 16 bytes).
    """

    __slots__ = ("name", "fields", "level", "opcode", "id", "version", "tag", "activity",
                 "related_activity")

    def __init__(self, name: str, fields: list[Field] | None = None, *, level: int = 5,
                 opcode: int = 0, id: int = 0, version: int = 0, tag: int = 0,
                 activity: Any = None, related_activity: Any = None) -> None:
        self.name = name
        self.fields = [] if fields is None else fields
        self.level = level
        self.opcode = opcode
        self.id = id
        self.version = version
        self.tag = tag
        self.activity = activity
        self.related_activity = related_activity

    def __repr__(self) -> str:
        return f"Event({self.name!r}, {self.fields!r}, level={self.level})"


def parse_type(text: str) -> tuple[FieldType, int | None]:
    """``"u32"`` -> (type, None); ``"u32[]"`` -> (type, 0); ``"u32[4]"`` -> (type, 4)."""
    ftype = TYPES.get(text)
    if ftype is not None:
        return ftype, None
    match = _ARRAY_SUFFIX.match(text) if isinstance(text, str) else None
    ftype = TYPES.get(match.group(1)) if match else None
    if ftype is None:
        raise EncodeError(f"unknown type {text!r}; types: {', '.join(sorted(TYPES))}")
    count = match.group(2)
    if count == "":
        return ftype, 0
    n = int(count)
    if not 1 <= n <= 0xFFFF:
        raise EncodeError(f"type {text!r}: a constant array has 1..65535 elements")
    return ftype, n


def check_shape(event: Event) -> None:
    """EncodeError for an event decoders would not show as sent: no name, too many fields."""
    if event.name == "":
        raise EncodeError("the event name is empty")
    if len(event.fields) > TOP_LEVEL_FIELD_LIMIT:
        raise EncodeError(f"{len(event.fields)} fields; decoders take at most "
                          f"{TOP_LEVEL_FIELD_LIMIT} (group them in structs)")


def encode(event: Event) -> bytes:
    """The whole event (header, extensions, payload); EncodeError when it cannot be sent."""
    check_shape(event)
    meta = bytearray(_cstr(event.name, "event name"))
    payload = bytearray()
    for f in event.fields:
        _encode_field(f, meta, payload, 1)
    data = (_header(event) + activity_extension(event.activity, event.related_activity)
            + _metadata_extension(meta) + payload)
    check_size(len(data))
    return data


def activity_extension(activity: Any, related: Any = None) -> bytes:
    """The activity-id extension (chained to the metadata), or b"" without an activity."""
    if activity is None:
        if related is not None:
            raise EncodeError("a related activity id needs an activity id")
        return b""
    ids = uuid_bytes(activity, "activity")
    if related is not None:
        ids += uuid_bytes(related, "related activity")
    return _EXT.pack(len(ids), ExtensionKind.ACTIVITY_ID | _EXT_CHAIN) + ids


def check_size(size: int) -> None:
    """Refuse an event perf would silently drop."""
    total = (COMMON_HEADER_SIZE + size + 7) & ~7
    if total > PERF_MAX_TRACE_SIZE:
        raise EncodeError(f"event is {size} bytes ({total} with the kernel's header, aligned); "
                          f"perf drops events over {PERF_MAX_TRACE_SIZE} bytes")


def _header(event: Event) -> bytes:
    return _HEADER.pack(HEADER_FLAGS, _u8(event.version, "version"), _u16(event.id, "id"),
                        _u16(event.tag, "tag"), _u8(event.opcode, "opcode"),
                        _u8(event.level, "level"))


def _metadata_extension(meta: bytes | bytearray) -> bytes:
    if len(meta) > 0xFFFF:
        raise EncodeError(f"metadata is {len(meta)} bytes; the limit is 65535")
    return _EXT.pack(len(meta), ExtensionKind.METADATA) + meta


def _encode_field(f: Field, meta: bytearray, payload: bytearray, depth: int) -> None:
    ftype, count = parse_type(f.type)
    if ftype.encoding == E.STRUCT:
        if depth > STRUCT_NESTING_LIMIT:  # (decoders' rule: members of the 8th are fine)
            raise EncodeError(f"field {f.name!r}: structs nest at most "
                              f"{STRUCT_NESTING_LIMIT} deep")
        _encode_struct(f, count, meta, payload, depth)
        return
    _field_def(f, ftype.encoding, ftype.format, count, meta)
    _payload(ftype, count, f, payload)


def _payload(ftype: FieldType, count: int | None, f: Field, payload: bytearray) -> None:
    """Append the bytes of a non-struct field's value (or array of values)."""
    if count is None:
        payload += _value(ftype, f.value, f.name)
        return
    values = _as_list(f, count)
    if count == 0:
        payload += _U16.pack(len(values))
    for item in values:
        payload += _value(ftype, item, f.name)


def _encode_struct(f: Field, count: int | None, meta: bytearray, payload: bytearray,
                   depth: int) -> None:
    elements = [f.value] if count is None else _as_list(f, count)
    if not elements or not elements[0]:
        raise EncodeError(f"struct field {f.name!r} needs at least one member (and element)")
    template = elements[0]
    if len(template) > 127:
        raise EncodeError(f"struct field {f.name!r} has {len(template)} members; the limit is 127")
    _field_def(f, E.STRUCT, len(template), count, meta, struct_=True)
    if count == 0:
        payload += _U16.pack(len(elements))
    member_meta = bytearray()
    for index, members in enumerate(elements):
        shape = [(m.name, m.type) for m in members]
        if shape != [(m.name, m.type) for m in template]:
            raise EncodeError(f"struct array {f.name!r}: element {index} has other members "
                              "than element 0")
        scratch = bytearray()
        for m in members:
            _encode_field(m, scratch, payload, depth + 1)
        if index == 0:
            member_meta = scratch
    meta += member_meta


def _field_def(f: Field, encoding: int, fmt: int, count: int | None, meta: bytearray,
               struct_: bool = False) -> None:
    meta += _cstr(f.name, "field name")
    enc = encoding
    if count is not None:
        enc |= _VARRAY if count == 0 else _CARRAY
    tag = _u16(f.tag, f"tag of {f.name!r}")
    if fmt or tag or struct_:
        meta.append(enc | _ENC_CHAIN)
        meta.append(fmt | (_FMT_CHAIN if tag else 0))
        if tag:
            meta += _U16.pack(tag)
    else:
        meta.append(enc)
    if count:
        meta += _U16.pack(count)


def _as_list(f: Field, count: int) -> list:
    values = f.value
    if not isinstance(values, list | tuple):
        raise EncodeError(f"field {f.name!r}: an array needs a list of values")
    if count and len(values) != count:
        raise EncodeError(f"field {f.name!r}: {len(values)} values for a [{count}] array")
    if len(values) > 0xFFFF:
        raise EncodeError(f"field {f.name!r}: {len(values)} elements; the limit is 65535")
    return list(values)


def _value(t: FieldType, value: Any, name: str) -> bytes:
    """The payload bytes of one value of type ``t``."""
    try:
        return _VALUE_ENCODERS.get(t.name, _packed)(t, value)
    except EncodeError as exc:
        raise EncodeError(f"field {name!r}: {exc}") from None
    except (ValueError, TypeError, OverflowError, struct.error, OSError) as exc:
        # (OSError: socket.inet_pton's answer to a bad address)
        reason = (exc.strerror if isinstance(exc, OSError) and exc.strerror
                  else "out of range" if isinstance(exc, struct.error | OverflowError)
                  else exc)
        raise EncodeError(f"field {name!r}: {value!r} is not a valid {t.name} ({reason})"
                          ) from None


def _int(value: Any) -> int:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        if abs(value) >= 2.0 ** 53:
            raise ValueError("a float this large is not an exact integer; write the digits")
        return int(value)
    return int(str(value).strip(), 0)


def _packed(t: FieldType, value: Any) -> bytes:
    code = t.pack if t.pack.startswith(">") else _O + t.pack
    if t.pack in ("f", "d"):
        number = float(value)
        if math.isinf(number) and not (isinstance(value, float) or str(value).strip().lower()
                                       .lstrip("+-") in ("inf", "infinity")):
            raise ValueError("out of range")  # 1e309 reads as inf; only 'inf' means it
        return struct.pack(code, number)
    number = _int(value)
    if t.pack.lstrip(">").isupper() and number < 0:
        raise ValueError("a negative number for an unsigned type")
    return struct.pack(code, number)


def _bool(t: FieldType, value: Any) -> bytes:
    if isinstance(value, str):
        text = value.strip().lower()
        if text in ("true", "yes", "on"):
            value = 1
        elif text in ("false", "no", "off"):
            value = 0
    return _packed(t, value)


def _char(t: FieldType, value: Any) -> bytes:
    if isinstance(value, str):
        if len(value) != 1:
            raise EncodeError(f"{value!r} is not one character")
        code = ord(value)
        if t.name == "char" and code > 0xFF:
            raise EncodeError(f"{value!r} is not a Latin-1 character")
        if t.name == "char16" and code > 0xFFFF:
            raise EncodeError(f"{value!r} does not fit one UTF-16 unit")
        value = code
    return _packed(t, value)


_UNIT = {E.ZSTRING_CHAR16: 2, E.STRING_LENGTH16_CHAR16: 2,
         E.ZSTRING_CHAR32: 4, E.STRING_LENGTH16_CHAR32: 4}
_CODEC = {1: "utf-8", 2: "utf-16-le" if LITTLE else "utf-16-be",
          4: "utf-32-le" if LITTLE else "utf-32-be"}
_ZSTRINGS = (E.ZSTRING_CHAR8, E.ZSTRING_CHAR16, E.ZSTRING_CHAR32)


def _text(t: FieldType, value: Any) -> bytes:
    if value is None or isinstance(value, bool | dict | list | tuple | bytes):
        raise EncodeError(f"{value!r} is not a string")
    text = value if isinstance(value, str) else str(value)
    unit = _UNIT.get(t.encoding, 1)
    data = text.encode(_CODEC[unit], "surrogatepass")
    if t.encoding in _ZSTRINGS:
        if b"\0" * unit in [data[i:i + unit] for i in range(0, len(data), unit)]:
            raise EncodeError("a NUL-terminated string cannot contain NUL (use lstr)")
        return data + b"\0" * unit
    units = len(data) // unit
    if units > 0xFFFF:
        raise EncodeError(f"{units} code units; a counted string holds at most 65535")
    return _U16.pack(units) + data


def _binary(t: FieldType, value: Any) -> bytes:
    data = value if isinstance(value, bytes | bytearray) else bytes.fromhex(
        str(value).replace(":", " "))
    if len(data) > 0xFFFF:
        raise EncodeError(f"{len(data)} bytes; binary fields hold at most 65535")
    return _U16.pack(len(data)) + bytes(data)


def _guid(t: FieldType, value: Any) -> bytes:
    return uuid_bytes(value, "value")


def _time(t: FieldType, value: Any) -> bytes:
    """Seconds since 1970 from an int, its text, ISO 8601 text or a ``datetime`` (what
    ``ehtool.open`` gives back); one without a time zone is UTC. The field holds whole
    seconds: a number with a fraction is refused, not rounded."""
    if isinstance(value, str):
        number = re.fullmatch(r"\s*(-?\d+)(?:\.(\d*))?\s*", value)
        if number is None:
            from datetime import datetime

            try:
                value = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
            except ValueError:
                raise EncodeError(f"{value!r} is neither seconds since 1970 nor ISO 8601 "
                                  "text (2026-11-27T10:00:00Z)") from None
        elif (number.group(2) or "").strip("0"):  # (compared as text: never rounded)
            raise EncodeError(f"{value!r}: a time field holds whole seconds since 1970")
        else:
            value = int(number.group(1))
    if isinstance(value, float):
        if not value.is_integer():
            raise EncodeError(f"{value!r}: a time field holds whole seconds since 1970")
        value = int(value)
    if callable(getattr(value, "timestamp", None)) and hasattr(value, "tzinfo"):
        from datetime import UTC

        moment = value if value.tzinfo is not None else value.replace(tzinfo=UTC)
        value = int(moment.timestamp())
    return _packed(t, value)


def _errno(t: FieldType, value: Any) -> bytes:
    if isinstance(value, str) and value.strip().upper().startswith("E"):
        from ehtool.values.text import errno_value  # (the names decode shows)

        code = errno_value(value)
        if code is None:
            raise EncodeError(f"unknown errno name {value!r}")
        value = code
    return _packed(t, value)


def _ipv4(t: FieldType, value: Any) -> bytes:
    import socket

    return socket.inet_pton(socket.AF_INET, str(value).strip())


def _ipv6(t: FieldType, value: Any) -> bytes:
    import socket

    return socket.inet_pton(socket.AF_INET6, str(value).strip())


_VALUE_ENCODERS = {
    "bool": _bool, "bool32": _bool, "char": _char, "char16": _char,
    "str": _text, "str16": _text, "str32": _text, "lstr": _text, "lstr16": _text,
    "lstr32": _text, "bin": _binary, "guid": _guid, "uuid": _guid, "time": _time,
    "time32": _time, "errno": _errno, "ipv4": _ipv4, "ipv6": _ipv6,
}


def uuid_bytes(value: Any, what: str) -> bytes:
    """16 bytes from a UUID's text (``{...}``, ``urn:uuid:`` and bare hex too) or bytes."""
    if isinstance(value, bytes | bytearray) and len(value) == 16:
        return bytes(value)
    text = str(value).strip().lower()
    text = text.removeprefix("urn:uuid:")
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1]
    digits = text.replace("-", "")
    if len(digits) == 32 and all(c in "0123456789abcdef" for c in digits):
        return bytes.fromhex(digits)
    raise EncodeError(f"{what} {value!r} is not a UUID")


def _cstr(text: str, what: str) -> bytes:
    if not isinstance(text, str):
        raise EncodeError(f"{what} {text!r} is not a string")
    data = text.encode("utf-8", "surrogatepass")
    if b"\0" in data:
        raise EncodeError(f"{what} {text!r} contains NUL")
    return data + b"\0"


def _u8(value: int, what: str) -> int:
    if not isinstance(value, int) or not 0 <= value <= 0xFF:
        raise EncodeError(f"{what} must be 0..255, not {value!r}")
    return value


def _u16(value: int, what: str) -> int:
    if not isinstance(value, int) or not 0 <= value <= 0xFFFF:
        raise EncodeError(f"{what} must be 0..65535, not {value!r}")
    return value
