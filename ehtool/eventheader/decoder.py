"""EventHeader events -> perf-decode JSON.

``EventHeaderDecoder(style).decode(tracepoint_name, data, offset)`` follows the
reference ``EventEnumerator`` + ``EventFormatter``:

* ``None`` when the event is not EventHeader by perf-decode's rules (short
  data, unknown flags, a name without ``_L<level>K<keyword>``, a level that
  differs from the name's, no metadata extension); the caller then shows it
  as a plain tracepoint;
* ``EventHeaderError`` when it is EventHeader but malformed midway (bad
  metadata, a value running past the data, nesting deeper than 8);
* else a :class:`DecodedEvent` with the JSON pieces.

The metadata of an event is parsed once (cached by its bytes) into a tree of
:class:`~ehtool.eventheader.grammar.FieldDef`; each node gets a render
function built once, so a cache hit costs one dict lookup and the payload
reads.
"""

from __future__ import annotations

import struct
from collections.abc import Callable

from ehtool.eventheader.enums import FieldEncoding as E
from ehtool.eventheader.enums import FieldFormat as F
from ehtool.eventheader.grammar import (
    EventHeaderError,
    FieldDef,
    parse_extensions,
    parse_metadata,
)
from ehtool.output import values as v
from ehtool.output.style import JsonStyle

__all__ = ["DecodedEvent", "EventHeaderDecoder", "EventHeaderError"]

#: render(data, pos) -> (json bytes, new pos)
Render = Callable[[bytes, int], tuple[bytes, int]]

_HEX_DIGITS = frozenset(b"0123456789abcdef")
_NUMERIC_FORMATS = {
    F.UNSIGNED_INT: (1, 2, 4, 8), F.SIGNED_INT: (1, 2, 4, 8), F.HEX_INT: (1, 2, 4, 8),
    F.ERRNO: (4,), F.PID: (4,), F.TIME: (4, 8), F.BOOLEAN: (1, 2, 4), F.FLOAT: (4, 8),
    F.UUID: (16,), F.PORT: (2,), F.IP_ADDRESS: (4, 16), F.IP_ADDRESS_OBSOLETE: (4, 16),
}
_STRING_FORMATS = frozenset((F.STRING_UTF, F.STRING_UTF_BOM, F.STRING_XML, F.STRING_JSON))
_FIXED_SIZES = {E.VALUE8: 1, E.VALUE16: 2, E.VALUE32: 4, E.VALUE64: 8, E.VALUE128: 16}
_UNIT_SIZES = {
    E.ZSTRING_CHAR8: 1, E.ZSTRING_CHAR16: 2, E.ZSTRING_CHAR32: 4,
    E.STRING_LENGTH16_CHAR8: 1, E.STRING_LENGTH16_CHAR16: 2, E.STRING_LENGTH16_CHAR32: 4,
    E.BINARY_LENGTH16_CHAR8: 1,
}


class DecodedEvent:
    """The JSON pieces and header facts of one decoded EventHeader event."""

    __slots__ = ("name_json", "fields", "meta", "provider", "event_name", "options", "flags",
                 "version", "id", "tag", "opcode", "level", "keyword", "activity",
                 "related_activity")

    def __init__(self, name_json: bytes, fields: bytes, meta: bytes, provider: str,
                 event_name: str, options: str, flags: int, version: int, id: int, tag: int,
                 opcode: int, level: int, keyword: int, activity: bytes | None,
                 related_activity: bytes | None) -> None:
        self.name_json = name_json
        self.fields = fields
        self.meta = meta
        self.provider = provider
        self.event_name = event_name
        self.options = options
        self.flags = flags
        self.version = version
        self.id = id
        self.tag = tag
        self.opcode = opcode
        self.level = level
        self.keyword = keyword
        self.activity = activity
        self.related_activity = related_activity


class _NameInfo:
    """What the decoder needs from a tracepoint name (reference StartEvent rules)."""

    __slots__ = ("provider", "level", "keyword", "options", "provider_json")

    def __init__(self, provider: str, level: int, keyword: int, options: str) -> None:
        self.provider = provider
        self.level = level
        self.keyword = keyword
        self.options = options
        self.provider_json = v.utf8_json(provider.encode("utf-8", "surrogateescape"))[:-1]


def _parse_name(name: str) -> _NameInfo | None:
    """Lenient parse, exactly as the reference decoder: last ``_``, ``L`` hex, ``K`` hex,
    options of an uppercase letter and ``[0-9a-z]*``."""
    if len(name) >= 256 or "\0" in name:
        return None
    cut = name.rfind("_")
    if cut < 0:
        return None
    raw = name.encode("utf-8", "surrogateescape")
    pos = len(name[: cut + 1].encode("utf-8", "surrogateescape"))
    if pos >= len(raw) or raw[pos] != ord("L"):
        return None
    level, pos = _hex(raw, pos + 1, 0xFF)
    if pos >= len(raw) or raw[pos] != ord("K"):
        return None
    keyword, pos = _hex(raw, pos + 1, 0xFFFFFFFFFFFFFFFF)
    options = raw[pos:]
    i = 0
    while i < len(options):
        if not 65 <= options[i] <= 90:
            return None
        i += 1
        while i < len(options) and (48 <= options[i] <= 57 or 97 <= options[i] <= 122):
            i += 1
    return _NameInfo(name[:cut], level, keyword, options.decode("ascii"))


def _hex(raw: bytes, pos: int, mask: int) -> tuple[int, int]:
    value = 0
    while pos < len(raw) and raw[pos] in _HEX_DIGITS:
        value = ((value << 4) | int(chr(raw[pos]), 16)) & mask
        pos += 1
    return value, pos


class EventHeaderDecoder:
    """Decodes EventHeader events into JSON pieces in one :class:`JsonStyle`."""

    def __init__(self, style: JsonStyle) -> None:
        self.style = style
        self._names: dict[str, _NameInfo | None] = {}
        self._plans: dict[tuple[bool, bytes], tuple[bytes, str, Render]] = {}
        self._metas: dict[tuple, bytes] = {}
        s = style
        self._meta_keys = {k: s.sep + b'"' + k.encode() + b'"' + s.colon for k in (
            "id", "version", "level", "keyword", "opcode", "tag", "activity",
            "relatedActivity")}

    def decode(self, tracepoint_name: str, data: bytes | memoryview,
               offset: int = 0) -> DecodedEvent | None:
        """Decode ``data[offset:]``; see the module docstring for None and errors."""
        if not isinstance(data, bytes):
            data = bytes(data)
        if len(data) - offset < 8:
            return None
        info = self._names.get(tracepoint_name, False)
        if info is False:
            info = self._names[tracepoint_name] = _parse_name(tracepoint_name)
        if info is None:
            return None
        flags, version = data[offset], data[offset + 1]
        if flags & ~0x07:
            return None
        little = bool(flags & 0x02)
        ident, tag, opcode, level = struct.unpack_from("<HHBB" if little else ">HHBB", data,
                                                       offset + 2)
        if level != info.level:
            return None
        pos = offset + 8
        metadata = activity = None
        if flags & 0x04:
            try:
                metadata, activity, pos = parse_extensions(data, pos, little)
            except EventHeaderError:
                return None  # StartEvent fails: not shown as EventHeader
        if metadata is None:
            return None
        key = (little, metadata)
        plan = self._plans.get(key)
        if plan is None:
            plan = self._plans[key] = self._compile(metadata, little)
        event_name_json, event_name, render = plan
        fields, _ = render(data, pos)
        related = activity[16:32] if activity is not None and len(activity) == 32 else None
        act = activity[:16] if activity is not None else None
        return DecodedEvent(
            info.provider_json + b":" + event_name_json, fields,
            self._meta(ident, version, level, info.keyword, opcode, tag, act, related),
            info.provider, event_name, info.options, flags, version, ident, tag, opcode, level,
            info.keyword, act, related)

    # -- meta -------------------------------------------------------------------

    def _meta(self, ident: int, version: int, level: int, keyword: int, opcode: int, tag: int,
              activity: bytes | None, related: bytes | None) -> bytes:
        key = (ident, version, level, keyword, opcode, tag)
        base = self._metas.get(key)
        if base is None:
            k = self._meta_keys
            parts = []
            if ident:
                parts.append(k["id"] + b"%d" % ident)
            if version:
                parts.append(k["version"] + b"%d" % version)
            if level:
                parts.append(k["level"] + b"%d" % level)
            if keyword:
                parts.append(k["keyword"] + v.hex_int(keyword))
            if opcode:
                parts.append(k["opcode"] + b"%d" % opcode)
            if tag:
                parts.append(k["tag"] + v.hex_int(tag))
            base = self._metas[key] = b"".join(parts)
        if activity is None:
            return base
        extra = self._meta_keys["activity"] + v.uuid_json(activity)
        if related is not None:
            extra += self._meta_keys["relatedActivity"] + v.uuid_json(related)
        return base + extra

    # -- plan ---------------------------------------------------------------------

    def _compile(self, metadata: bytes, little: bool) -> tuple[bytes, str, Render]:
        name, defs = parse_metadata(metadata, little)
        event_name = name.split(b";", 1)[0]
        event_name_json = v.utf8_json(event_name)[1:]
        members = [self._member(d, little, 1) for d in defs]
        sep = self.style.sep

        def render(data: bytes, pos: int) -> tuple[bytes, int]:
            out = []
            for m in members:
                text, pos = m(data, pos)
                out.append(sep + text)
            return b"".join(out), pos

        return event_name_json, event_name.decode("utf-8", "replace"), render

    def _member(self, d: FieldDef, little: bool, depth: int) -> Render:
        """Render ``"name": value`` for one field definition."""
        s = self.style
        name = d.name
        if d.tag and s.field_tags:
            name += b";tag=0x%X" % d.tag
        key = v.utf8_json(name) + s.colon
        size = _FIXED_SIZES.get(d.encoding)
        if size is not None and d.array is None:
            text = _fixed_text(size, d.format, little)

            def scalar(data: bytes, pos: int) -> tuple[bytes, int]:
                end = pos + size
                if end > len(data):
                    raise EventHeaderError(f"field {d.name!r} runs past the data")
                return key + text(data[pos:end]), end
            return scalar
        value = self._value(d, little, depth)

        def member(data: bytes, pos: int) -> tuple[bytes, int]:
            text, pos = value(data, pos)
            return key + text, pos

        return member

    def _value(self, d: FieldDef, little: bool, depth: int) -> Render:
        s = self.style
        if d.encoding == E.STRUCT:
            if depth > 8:
                raise_ = EventHeaderError("struct nesting deeper than 8")

                def too_deep(data: bytes, pos: int) -> tuple[bytes, int]:
                    raise raise_
                element: Render = too_deep
            else:
                members = [self._member(m, little, depth + 1) for m in d.members]
                obj_open, first, sep, close, empty = (b"{", s.first, s.sep, s.close_obj,
                                                      s.empty_obj)

                def element(data: bytes, pos: int) -> tuple[bytes, int]:
                    if not members:
                        return empty, pos
                    out = []
                    for m in members:
                        text, pos = m(data, pos)
                        out.append(text)
                    return obj_open + first + sep.join(out) + close, pos
        else:
            element = _scalar(d.encoding, d.format, little)
        if d.array is None:
            return element
        return _array(element, d, little, s)


def _array(element: Render, d: FieldDef, little: bool, s: JsonStyle) -> Render:
    count_fmt = struct.Struct("<H" if little else ">H")
    fixed = d.array  # an int for carray, 0 for varray
    open_, first, sep, close, empty = b"[", s.first, s.sep, s.close_arr, s.empty_arr

    def array(data: bytes, pos: int) -> tuple[bytes, int]:
        if fixed:
            count = fixed
        else:
            if pos + 2 > len(data):
                raise EventHeaderError(f"array count of {d.name!r} past the end of the data")
            count = count_fmt.unpack_from(data, pos)[0]
            pos += 2
        if not count:
            return empty, pos
        out = []
        for _ in range(count):
            text, pos = element(data, pos)
            out.append(text)
        return open_ + first + sep.join(out) + close, pos

    return array


def _scalar(encoding: int, fmt: int, little: bool) -> Render:
    """Render one value of ``encoding`` with ``fmt`` (reference EventFormatter rules)."""
    size = _FIXED_SIZES.get(encoding)
    if size is not None:
        text = _fixed_text(size, fmt, little)

        def fixed(data: bytes, pos: int) -> tuple[bytes, int]:
            end = pos + size
            if end > len(data):
                raise EventHeaderError(f"a {size}-byte value at offset {pos} runs past the data")
            return text(data[pos:end]), end
        return fixed

    unit = _UNIT_SIZES.get(encoding)
    if unit is None:
        raise EventHeaderError(f"unsupported field encoding {encoding}")
    text = _string_text(encoding, unit, fmt, little)
    if encoding in (E.ZSTRING_CHAR8, E.ZSTRING_CHAR16, E.ZSTRING_CHAR32):
        nul = b"\0" * unit

        def zstring(data: bytes, pos: int) -> tuple[bytes, int]:
            end = pos
            if unit == 1:
                end = data.find(b"\0", pos)
            else:
                while True:
                    end = data.find(nul, end)
                    if end < 0 or (end - pos) % unit == 0:
                        break
                    end += 1
            if end < 0:
                raise EventHeaderError(f"string at offset {pos} has no terminator")
            return text(data[pos:end]), end + unit
        return zstring

    count_fmt = struct.Struct("<H" if little else ">H")

    def counted(data: bytes, pos: int) -> tuple[bytes, int]:
        if pos + 2 > len(data):
            raise EventHeaderError(f"length at offset {pos} runs past the data")
        start = pos + 2
        end = start + count_fmt.unpack_from(data, pos)[0] * unit
        if end > len(data):
            raise EventHeaderError(f"string at offset {pos} runs past the data")
        return text(data[start:end]), end
    return counted


def _fixed_text(size: int, fmt: int, little: bool) -> Callable[[bytes], bytes]:
    """Formatter of a ``size``-byte value (valueN encodings, and counted data of that size)."""
    order = "little" if little else "big"
    sizes = _NUMERIC_FORMATS.get(fmt)
    if size == 16:
        if fmt == F.UUID:
            return v.uuid_json
        if fmt in (F.IP_ADDRESS, F.IP_ADDRESS_OBSOLETE):
            return v.ipv6_json
        return v.hex_bytes
    if fmt == F.HEX_BYTES:
        return v.hex_bytes
    if fmt == F.STRING8 and size == 1:
        return v.latin1_json
    if fmt == F.STRING_UTF and size in (2, 4):
        return (lambda b: v.utf16_json(b, not little)) if size == 2 else (
            lambda b: v.utf32_json(b, not little))
    if sizes is None or size not in sizes or fmt in (F.UUID,):
        fmt = F.UNSIGNED_INT
    if fmt == F.UNSIGNED_INT:
        return lambda b: b"%d" % int.from_bytes(b, order)
    if fmt in (F.SIGNED_INT, F.PID):
        return lambda b: b"%d" % int.from_bytes(b, order, signed=True)
    if fmt == F.HEX_INT:
        return lambda b: b'"0x%X"' % int.from_bytes(b, order)
    if fmt == F.ERRNO:
        return lambda b: v.errno_json(int.from_bytes(b, order))
    if fmt == F.TIME:
        return lambda b: v.time_json(int.from_bytes(b, order, signed=True))
    if fmt == F.BOOLEAN:
        return lambda b: v.boolean_json(int.from_bytes(b, order), size)
    if fmt == F.FLOAT:
        unpack = struct.Struct(("<" if little else ">") + ("f" if size == 4 else "d")).unpack
        render = v.float32_json if size == 4 else v.float64_json
        return lambda b: render(unpack(b)[0])
    if fmt == F.PORT:
        return v.port_json
    if fmt in (F.IP_ADDRESS, F.IP_ADDRESS_OBSOLETE):
        return v.ipv4_json
    return lambda b: b"%d" % int.from_bytes(b, order)


def _string_text(encoding: int, unit: int, fmt: int, little: bool) -> Callable[[bytes], bytes]:
    """Formatter of string/binary data (the bytes without count or terminator)."""
    big = not little
    counted8 = encoding in (E.STRING_LENGTH16_CHAR8, E.BINARY_LENGTH16_CHAR8)
    if counted8 and fmt in _NUMERIC_FORMATS:
        default = v.hex_bytes if encoding == E.BINARY_LENGTH16_CHAR8 else v.utf8_json
        by_size = {n: _fixed_text(n, fmt, little) for n in _NUMERIC_FORMATS[fmt]}

        def sized(b: bytes) -> bytes:
            if not b:
                return b"null"
            render = by_size.get(len(b))
            return render(b) if render is not None else default(b)
        return sized
    if fmt == F.DEFAULT:
        fmt = F.HEX_BYTES if encoding == E.BINARY_LENGTH16_CHAR8 else F.STRING_UTF
    if fmt == F.HEX_BYTES:
        return v.hex_bytes
    if fmt == F.STRING8 and unit == 1:
        return v.latin1_json
    if fmt in (F.STRING_UTF_BOM, F.STRING_XML, F.STRING_JSON):
        return lambda b: v.bom_string_json(b, unit, big)
    if fmt != F.STRING_UTF and encoding == E.BINARY_LENGTH16_CHAR8:
        return v.hex_bytes
    return lambda b: v.string_json(b, unit, big)
