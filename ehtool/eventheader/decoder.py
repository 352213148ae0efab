"""EventHeader events -> Python values (the typed layer).

:func:`read_event` applies perf-decode's rules for *whether* a tracepoint's
data is an EventHeader event (a ``_L<level>K<keyword>`` name, known flags, the
name's level, a metadata extension); the JSON renderer uses it too.
:class:`TypedDecoder` then walks the field definitions with the value rulebook
(:mod:`ehtool.eventheader.kinds`) and returns :class:`Fields` of ``int``,
``float``, ``str``, ``bytes``, ``bool``, ``uuid.UUID``, ``ipaddress`` and
``datetime`` values, lists for arrays and nested :class:`Fields` for structs.
"""

from __future__ import annotations

import struct
import uuid
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

from ehtool.eventheader.cplan import native_check, native_typed_json
from ehtool.eventheader.enums import (
    EXTENSION_KIND_CHAIN_FLAG,
    HEADER_FLAGS_KNOWN,
    STRUCT_NESTING_LIMIT,
    ExtensionKind,
    FieldEncoding,
    HeaderFlags,
)
from ehtool.eventheader.grammar import (
    MOVE_NEXT_LIMIT,
    TOP_LEVEL_FIELD_LIMIT,
    EventHeaderError,
    FieldDef,
    count_struct,
    element_steps,
    extension_struct,
    has_data_steps,
    header_struct,
    parse_extensions,
    parse_metadata,
    step_budget,
)
from ehtool.eventheader.kinds import FIXED_SIZES, UNIT_SIZES, ZSTRINGS, fixed_kind, string_kind
from ehtool.values.strings import UTF8_AS_SHOWN
from ehtool.values.typed_json import json_bytes

__all__ = ["EventHeaderEvent", "EventHeaderError", "EventLayout", "Fields", "NameInfo",
           "ParsedMetadata", "RawEvent", "TypedDecoder", "activity_ids", "field_extractor",
           "fields_reader", "parse_name", "prefix_key", "read_event"]

_HEX_DIGITS = frozenset(b"0123456789abcdef")


class Fields(tuple):
    """Decoded fields in payload order: ``(name, value)`` pairs, duplicate names kept.

    ``fields["count"]`` is the first field of that name, ``fields[0]`` the first pair;
    ``"count" in fields``, :meth:`get`, :meth:`getall` and :meth:`to_dict` as for a
    multi-dict.
    """

    __slots__ = ()

    def __contains__(self, key: object) -> bool:
        if isinstance(key, str):  # a name (a pair is looked for among the pairs)
            return any(name == key for name, _ in self)
        return tuple.__contains__(self, key)

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            for name, value in self:
                if name == key:
                    return value
            raise KeyError(key)
        return tuple.__getitem__(self, key)

    def get(self, key: str, default: Any = None) -> Any:
        for name, value in self:
            if name == key:
                return value
        return default

    def getall(self, key: str) -> list[Any]:
        return [value for name, value in self if name == key]

    def names(self) -> list[str]:
        return [name for name, _ in self]

    def to_dict(self) -> dict[str, Any]:
        """A plain dict (nested structs too); of duplicate names the first wins."""
        out = dict(self)
        if len(out) == len(self) and not any(isinstance(v, _NESTED) for v in out.values()):
            return out  # (no duplicate names, nothing nested: the usual event)
        out = {}
        for name, value in self:
            out.setdefault(name, _plain(value))
        return out

    def __repr__(self) -> str:
        return "Fields(" + ", ".join(f"{n}={v!r}" for n, v in self) + ")"


#: the types of values :meth:`Fields.to_dict` converts (structs, arrays)
_NESTED = (Fields, list)


def _plain(value: Any) -> Any:
    if isinstance(value, Fields):
        return value.to_dict()
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


# -- is it EventHeader? ----------------------------------------------------------------

class NameInfo(NamedTuple):
    """What a tracepoint name says, read leniently as the reference decoder does."""

    provider: str
    level: int
    keyword: int
    options: str


def parse_name(name: str) -> NameInfo | None:
    """``Provider_L<hex>K<hex><options>`` -> NameInfo, or None: last ``_``, ``L`` hex,
    ``K`` hex, options of an uppercase letter and ``[0-9a-z]*`` (the reference's rules)."""
    if len(name) >= 256 or "\0" in name:
        return None
    cut = name.rfind("_")
    if cut < 0:
        return None
    raw = name.encode("utf-8", "surrogateescape")
    if len(raw) >= 256:
        return None
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
    return NameInfo(name[:cut], level, keyword, options.decode("ascii"))


def _hex(raw: bytes, pos: int, mask: int) -> tuple[int, int]:
    value = 0
    while pos < len(raw) and raw[pos] in _HEX_DIGITS:
        value = ((value << 4) | int(chr(raw[pos]), 16)) & mask
        pos += 1
    return value, pos


class RawEvent(NamedTuple):
    """An EventHeader event's parts, before its fields are decoded."""

    little: bool
    header: tuple[int, ...]  # flags, version, id, tag, opcode, level
    metadata: bytes
    activity: bytes | None  # 16 or 32 bytes (activity id, related activity id)
    payload: int  # offset of the field data


#: the header flags as plain ints (IntFlag arithmetic costs a microsecond per event)
_UNKNOWN_FLAGS = ~int(HEADER_FLAGS_KNOWN) & 0xFF
_EXTENSION = int(HeaderFlags.EXTENSION)
_LITTLE_ENDIAN = int(HeaderFlags.LITTLE_ENDIAN)


def read_event(name: NameInfo | None, data: bytes, offset: int = 0) -> RawEvent | None:
    """The event at ``data[offset:]`` if perf-decode shows it as EventHeader, else None."""
    if name is None or len(data) - offset < 8:
        return None
    flags = data[offset]
    if flags & _UNKNOWN_FLAGS or not flags & _EXTENSION:
        return None  # unknown flags, or no extension and so no metadata
    little = bool(flags & _LITTLE_ENDIAN)
    header = header_struct(little).unpack_from(data, offset)
    if header[5] != name.level:
        return None
    try:
        metadata, activity, pos = parse_extensions(data, offset + 8, little)
    except EventHeaderError:
        return None  # the reference's StartEvent fails: not shown as EventHeader
    if metadata is None:
        return None
    return RawEvent(little, header, metadata, activity, pos)


_EXTENSION_HEADER = {True: extension_struct(True), False: extension_struct(False)}
_ACTIVITY_CHAINED = ExtensionKind.ACTIVITY_ID | EXTENSION_KIND_CHAIN_FLAG


def prefix_key(data: bytes, offset: int, event: RawEvent) -> tuple[bytes, bytes, int] | None:
    """What makes another event of a tracepoint read as ``event`` (read by
    :func:`read_event` from ``data[offset:]``) up to its field data, when its extensions
    are its activity ids (optional), then its metadata: ``(first, expect, activity_size)``,
    the event's first 12 bytes (header, first extension header), the bytes that must
    follow them after ``activity_size`` bytes of activity ids (the metadata extension),
    and that size. None for other extension layouts (read them with read_event)."""
    little, _, metadata, activity, pos = event
    ext = _EXTENSION_HEADER[little]
    size, kind = ext.unpack_from(data, offset + 8)
    if kind == ExtensionKind.METADATA and size == len(metadata):
        return data[offset:offset + 12], metadata, 0
    if activity is not None and kind == _ACTIVITY_CHAINED and size == len(activity):
        # then exactly one more extension: the metadata, not chained
        expect = data[offset + 12 + size:pos]
        if (ext.unpack_from(expect) == (len(metadata), ExtensionKind.METADATA)
                and expect[4:] == metadata):
            return data[offset:offset + 12], expect, size
    return None


# -- typed values ----------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class EventHeaderEvent:
    """One decoded EventHeader event."""

    provider: str
    name: str
    attributes: str  # the metadata name's ``;key=value`` suffix, without the first ``;``
    options: str  # the tracepoint name's options (``G<group>``...)
    level: int
    keyword: int
    opcode: int
    id: int
    version: int
    tag: int
    flags: int
    activity: uuid.UUID | None
    related_activity: uuid.UUID | None
    fields: Fields


_U16 = {True: count_struct(True), False: count_struct(False)}


class TypedDecoder:
    """Decodes EventHeader events to :class:`EventHeaderEvent` (metadata parsed once)."""

    def __init__(self, cache_size: int = 1024) -> None:
        self._names: dict[str, NameInfo | None] = {}
        self._metadata: OrderedDict[tuple[bool, bytes], ParsedMetadata] = OrderedDict()
        self._cache_size = cache_size
        #: (byte order, metadata, only) -> the walk that keeps only those fields
        self._plans: dict[tuple[bool, bytes, frozenset[bytes]], list[tuple[int, Any]]] = {}
        #: tracepoint -> an event's first 12 bytes (:func:`prefix_key`) -> the layouts
        #: read before with those bytes, by the size of the activity ids and of the
        #: bytes expected after them: [(activity size, expect size, {expect: layout})]
        self._layouts: dict[str, dict[bytes, list[tuple[int, int, dict]]]] = {}
        self._remembered = 0  # layouts in _layouts
        #: (byte order, metadata) -> the renderer of the fields' typed JSON (typed_json_render)
        self._typed_json: dict[tuple[bool, bytes], Callable[[bytes, int, int], bytes]] = {}

    def _name(self, tracepoint_name: str) -> NameInfo | None:
        name = self._names.get(tracepoint_name, False)
        if name is False:
            if len(self._names) >= self._cache_size:
                self._names.clear()
            name = self._names[tracepoint_name] = parse_name(tracepoint_name)
        return name

    def identify(self, tracepoint_name: str, data: bytes | memoryview,
                 offset: int = 0) -> tuple[NameInfo, RawEvent, str] | None:
        """What an event is without decoding its fields: (name info, header parts,
        event name), or None when it is not EventHeader. Raises EventHeaderError for
        malformed metadata."""
        found = self._payload(tracepoint_name, data, offset, whole=False)
        if found is None:
            return None
        layout, activity, _, payload = found
        raw = RawEvent(layout.little, layout.header, layout.metadata, activity, payload)
        return layout.name, raw, layout.parsed.event_name

    def decode(self, tracepoint_name: str, data: bytes | memoryview,
               offset: int = 0, only: frozenset[bytes] | None = None) -> EventHeaderEvent | None:
        """None when the data is not EventHeader (show it as a plain tracepoint);
        raises EventHeaderError when it is but is malformed. ``only``: keep just the
        top-level fields of these names (the others are stepped over, and checked
        as a whole decode checks them)."""
        parts = self.decode_parts(tracepoint_name, data, offset, only)
        if parts is None:
            return None
        layout, act, fields = parts
        name = layout.name
        flags, version, ident, tag, opcode, level = layout.header
        return EventHeaderEvent(
            name.provider, layout.parsed.event_name, layout.parsed.attributes, name.options,
            level, name.keyword, opcode, ident, version, tag, flags, *activity_ids(act), fields)

    def decode_parts(self, tracepoint_name: str, data: bytes | memoryview, offset: int = 0,
                     only: frozenset[bytes] | None = None,
                     ) -> tuple[EventLayout, bytes | None, Fields] | None:
        """:meth:`decode` without the object: ``(layout, activity ids, fields)``."""
        found = self._payload(tracepoint_name, data, offset)
        if found is None:
            return None
        layout, act, data, payload = found
        parsed = layout.parsed
        if only is None:
            return layout, act, parsed.read(data, payload, offset)
        if not only and parsed.check is not None:  # no field: the event checked whole
            parsed.check(data, payload, offset)
            return layout, act, Fields(())
        key = (layout.little, layout.metadata, only)
        plan = self._plans.get(key)
        if plan is None:
            if len(self._plans) >= self._cache_size:
                self._plans.clear()
            plan = self._plans[key] = _skip_plan(parsed.defs, only)
        return layout, act, _Walker(data, layout.little, offset).planned(plan, payload,
                                                                         parsed.budget)

    def typed_json_parts(self, tracepoint_name: str, data: bytes | memoryview, offset: int = 0,
                         ) -> tuple[EventLayout, bytes | None, bytes] | None:
        """:meth:`decode_parts` with the fields as the members of their JSON object by
        ``ehtool.values.typed_json`` (:func:`json_members`), rendered in C where the
        metadata allows (``cplan.native_typed_json``), else from the typed fields; the
        same errors."""
        found = self._payload(tracepoint_name, data, offset)
        if found is None:
            return None
        layout, act, data, payload = found
        return layout, act, self.typed_json_render(layout)(data, payload, offset)

    def typed_json_render(self, layout: EventLayout) -> Callable[[bytes, int, int], bytes]:
        """``render(data, payload, offset)``: :meth:`typed_json_parts`' members for events
        of ``layout`` whose fields can be read (``parsed.read``), made once per metadata:
        in C where it can be, else the typed values' JSON."""
        key = (layout.little, layout.metadata)
        render = self._typed_json.get(key)
        if render is None:
            if len(self._typed_json) >= self._cache_size:
                self._typed_json.clear()
            read = layout.parsed.read
            assert read is not None, "past TOP_LEVEL_FIELD_LIMIT: _payload raises"

            def typed(data: bytes, p: int, o: int) -> bytes:
                return json_members(read(data, p, o))
            render = self._typed_json[key] = native_typed_json(
                layout.parsed.defs, layout.little, typed) or typed
        return render

    @property
    def layout_cache(self) -> dict:
        """The layouts of the events read so far, as :meth:`_layout` finds them: tracepoint
        -> first 12 event bytes -> [(activity ids' size, expect's size, {expect:
        EventLayout})] (``_speedups.RowMaker`` looks there too); cleared, never replaced."""
        return self._layouts

    def _payload(self, tracepoint_name: str, data: bytes | memoryview, offset: int,
                 whole: bool = True) -> tuple[EventLayout, bytes | None, bytes, int] | None:
        """``(layout, activity ids, data as bytes, offset of the field data)`` of the event
        at ``data[offset:]``, None when it is not EventHeader; with ``whole`` (its fields
        are to be read), EventHeaderError past TOP_LEVEL_FIELD_LIMIT top-level fields."""
        if type(data) is not bytes:
            data = bytes(data)
        found = self._layout(tracepoint_name, data, offset)
        if found is None:
            return None
        layout, act = found
        if whole and layout.parsed.read is None:
            raise EventHeaderError(f"more than {TOP_LEVEL_FIELD_LIMIT} top-level fields")
        return layout, act, data, offset + layout.skip

    def _layout(self, tracepoint_name: str, data: bytes,
                offset: int) -> tuple[EventLayout, bytes | None] | None:
        """The layout of the event at ``data[offset:]`` and its activity ids, or None
        when it is not EventHeader; read by :func:`read_event`, or found by the bytes
        that made an event of this tracepoint read so before (:func:`prefix_key`)."""
        per_name = self._layouts.get(tracepoint_name)
        if per_name is not None:
            for activity_size, size, by_expect in per_name.get(data[offset:offset + 12], ()):
                start = offset + 12 + activity_size
                layout = by_expect.get(data[start:start + size])
                if layout is not None:
                    return layout, data[offset + 12:start] if activity_size else None
        name = self._name(tracepoint_name)
        raw = read_event(name, data, offset)
        if raw is None:
            return None
        assert name is not None  # (read_event said so)
        parsed = self._parse(raw.metadata, raw.little)
        flags, version, ident, tag, opcode, level = raw.header
        layout = EventLayout(name, raw.header, raw.little, raw.metadata, parsed,
                             raw.payload - offset, f"{name.provider}:{parsed.event_name}",
                             {"id": ident, "version": version, "level": level,
                              "keyword": name.keyword, "opcode": opcode, "tag": tag,
                              "activity": None, "related_activity": None,
                              "options": name.options, "flags": flags})
        key = prefix_key(data, offset, raw)
        if key is not None:
            if self._remembered >= self._cache_size:  # (all of them: bounded as _metadata)
                self._layouts.clear()
                self._remembered = 0
                per_name = None
            if per_name is None:
                per_name = self._layouts.setdefault(tracepoint_name, {})
            first, expect, activity_size = key
            groups = per_name.setdefault(first, [])
            for group in groups:
                if group[:2] == (activity_size, len(expect)):
                    group[2][expect] = layout
                    break
            else:
                groups.append((activity_size, len(expect), {expect: layout}))
            self._remembered += 1
        return layout, raw.activity

    def _parse(self, metadata: bytes, little: bool) -> ParsedMetadata:
        key = (little, metadata)
        hit = self._metadata.get(key)
        if hit is None:
            name, defs = parse_metadata(metadata, little)
            event_name, _, attributes = name.partition(b";")
            fits = len(defs) <= TOP_LEVEL_FIELD_LIMIT
            budget = step_budget(defs)
            hit = ParsedMetadata(event_name.decode("utf-8", UTF8_AS_SHOWN),
                                 attributes.decode("utf-8", UTF8_AS_SHOWN), defs,
                                 fields_reader(defs, little, budget) if fits else None,
                                 _whole_check(defs, little, budget) if fits else None,
                                 budget)
            self._metadata[key] = hit
            if len(self._metadata) > self._cache_size:
                self._metadata.popitem(last=False)
        else:
            self._metadata.move_to_end(key)
        return hit


def json_members(fields: Fields) -> bytes:
    """The members of ``fields``' JSON object by ``ehtool.values.typed_json``, each after
    a comma (``,"a":1,"b":"x"``; empty for no field): the text
    :meth:`TypedDecoder.typed_json_parts` gives."""
    text = json_bytes(fields.to_dict())
    return b"," + text[1:-1] if len(text) > 2 else b""


def object_text(members: bytes) -> str:
    """The JSON object of :func:`json_members`' text."""
    return "{" + members[1:].decode() + "}" if members else "{}"


def activity_ids(activity: bytes | None) -> tuple[uuid.UUID | None, uuid.UUID | None]:
    """An activity-id extension's (16 or 32 bytes) ids: (activity, related activity)."""
    if not activity:
        return None, None
    return (uuid.UUID(bytes=activity[:16]),
            uuid.UUID(bytes=activity[16:32]) if len(activity) == 32 else None)


class ParsedMetadata(NamedTuple):
    """What an event's metadata says, parsed once."""

    event_name: str
    attributes: str  # the name's ``;key=value`` suffix, without the first ``;``
    defs: list[FieldDef]
    #: fields_reader(defs, byte order); None past TOP_LEVEL_FIELD_LIMIT top-level fields
    read: Callable[[bytes, int, int], Fields] | None
    #: ``check(data, p, o)``: the field data checked whole, decoding nothing (the C
    #: walk of the JSON renderer's bounds; where it cannot finish, the walk of
    #: ``decode(only=())`` raises why); None without the C module
    check: Callable[[bytes, int, int], object] | None
    #: the MoveNext steps the field data may add to the metadata's (static_steps) before
    #: the event fails (:func:`step_budget`; None: it fails before its first field)
    budget: int | None


class EventLayout(NamedTuple):
    """What an event's bytes before its field data say (all but its activity ids)."""

    name: NameInfo
    header: tuple[int, ...]  # flags, version, id, tag, opcode, level
    little: bool
    metadata: bytes
    parsed: ParsedMetadata
    skip: int  # the field data's offset from the event's start
    title: str  # ``provider:event``
    #: the typed event's meta items from the header and the name (``ehtool.events``),
    #: activity ids None: id, version, level, keyword, opcode, tag, activity,
    #: related_activity, options, flags (do not change it)
    meta: dict[str, Any]


#: why an event fails that needs more MoveNext steps than the reference takes
_TOO_MANY_STEPS = f"more than {MOVE_NEXT_LIMIT} enumeration steps"


def _step_counter(d: FieldDef, depth: int = 1) -> Callable[[Any], int] | None:
    """``count(value)``: the MoveNext steps that field ``d`` (at struct nesting
    ``depth``), read as ``value``, adds to its :func:`static_steps` (1 per element of a
    variable-count array of values, :func:`element_steps` per element of an array of
    structs); None when it adds none (:func:`has_data_steps`). Made once per metadata."""
    if not has_data_steps(d, depth):
        return None
    if d.encoding != FieldEncoding.STRUCT:
        return len
    members = [(i, count) for i, m in enumerate(d.members)
               if (count := _step_counter(m, depth + 1)) is not None]

    def inside(fields: Fields) -> int:
        return sum(count(fields[i][1]) for i, count in members)
    if d.array is None:
        return inside
    per = element_steps(d, depth)
    if not members:
        return lambda items: per * len(items)
    return lambda items: per * len(items) + sum(map(inside, items))


def _whole_check(defs: list[FieldDef], little: bool,
                 budget: int | None) -> Callable[[bytes, int, int], object] | None:
    """The C check of :attr:`ParsedMetadata.check`, or None."""
    plan = _skip_plan(defs, frozenset())

    def walk(data: bytes, p: int, o: int) -> None:  # (where the C walk stops: why)
        _Walker(data, little, o).planned(plan, p, budget)
    return native_check(defs, little, walk)


def _skip_plan(defs: list[FieldDef], only: frozenset[bytes]) -> list[tuple[int, Any]]:
    """The top-level walk of ``decode(only=...)``: (0, sizes) steps over fixed-size fields
    nobody wants, (1, def) reads a wanted field, (2, def) steps over another."""
    plan: list[tuple[int, Any]] = []
    for d in defs:
        if d.name in only:
            plan.append((1, d))
            continue
        size = FIXED_SIZES.get(d.encoding)
        if d.error is None and d.array is None and size is not None:
            if plan and plan[-1][0] == 0:
                plan[-1] = (0, plan[-1][1] + (size,))
            else:
                plan.append((0, (size,)))
            continue
        plan.append((2, d))
    return [(0, (sum(arg), arg)) if step == 0 else (step, arg) for step, arg in plan]


def field_extractor(defs: list[FieldDef], little: bool,
                    only: frozenset[bytes]) -> Callable[[bytes, int, int], Fields]:
    """``extract(data, pos, origin)``: the top-level fields of ``only`` of a payload at
    ``data[pos:]`` as ``decode(only=only).fields`` has them, for a payload already
    known whole (the JSON renderer took it): nothing after the last wanted field is
    read, the fields before it are stepped over by their sizes (fixed-size runs as one
    step), and fixed-size values and their arrays are read in place by their rule
    (:attr:`ehtool.eventheader.kinds.Kind.reader`), the others as the typed walk does.
    On a payload that is not whole it may raise or read past what the event holds."""
    wanted = [i for i, d in enumerate(defs) if d.name in only]
    if not wanted:
        return lambda data, pos, origin: Fields(())
    steps: list[tuple[int, Any]] = []  # (0, bytes to step), (1, (name, read)), (2, def)
    for d in defs[:wanted[-1] + 1]:
        if d.name in only:
            steps.append((1, (d.name.decode("utf-8", UTF8_AS_SHOWN), _reader(d, little))))
            continue
        size = FIXED_SIZES.get(d.encoding)
        if d.error is None and d.array != 0 and d.encoding != FieldEncoding.STRUCT \
                and size is not None:
            size *= d.array or 1
            if steps and steps[-1][0] == 0:
                steps[-1] = (0, steps[-1][1] + size)
            else:
                steps.append((0, size))
            continue
        steps.append((2, d))
    if len(steps) <= 2 and steps[-1][0] == 1 and (len(steps) == 1 or steps[0][0] == 0):
        # the one wanted field at a fixed place: no walk
        at = steps[0][1] if len(steps) == 2 else 0
        name, read = steps[-1][1]

        def one(data: bytes, pos: int, origin: int) -> Fields:
            return Fields(((name, read(data, pos + at, little, origin)[0]),))
        return one
    plan = tuple(steps)

    def extract(data: bytes, pos: int, origin: int) -> Fields:
        out = []
        walker = None
        for step, arg in plan:
            if step == 0:
                pos += arg
            elif step == 1:
                value, pos = arg[1](data, pos, little, origin)
                out.append((arg[0], value))
            else:
                if walker is None:
                    walker = _Walker(data, little, origin)
                pos = walker.skip(arg, pos, 1)
        return Fields(out)
    return extract


def fields_reader(defs: list[FieldDef], little: bool,
                  budget: int | None) -> Callable[[bytes, int, int], Fields]:
    """``read(data, pos, origin)``: the fields of a payload at ``data[pos:]`` (the event
    at ``origin``) as the walk reads them (:meth:`_Walker.members`), each top-level field
    by its compiled reader (:func:`_reader`), then the MoveNext steps its data adds
    counted from the values. A payload a reader cannot take (a value past the end, a
    malformed one) is left to the walk, which raises what it raises where it raises it
    (the readers count steps per field, the walk over the whole event)."""
    steps = tuple((d.name.decode("utf-8", UTF8_AS_SHOWN), _reader(d, little)) for d in defs)
    counters = tuple((i, count) for i, d in enumerate(defs)
                     if (count := _step_counter(d)) is not None)

    def read(data: bytes, pos: int, origin: int) -> Fields:
        if budget is None:
            raise EventHeaderError(_TOO_MANY_STEPS)
        start = pos
        out = []
        try:
            for name, read_one in steps:
                value, pos = read_one(data, pos, little, origin)
                out.append((name, value))
        except (struct.error, EventHeaderError):  # (the walk says which error, and where)
            return _Walker(data, little, origin).whole(defs, start, budget)
        if counters and sum(count(out[i][1]) for i, count in counters) > budget:
            raise EventHeaderError(_TOO_MANY_STEPS)
        return Fields(out)
    return read


def _reader(d: FieldDef, little: bool) -> Callable[[bytes, int, bool, int], tuple[Any, int]]:
    """``read(data, pos, little, origin) -> (value, pos after)`` of one top-level field
    as :meth:`_Walker.value` reads it: fixed-size values and arrays of them in place,
    the others by the walker."""
    size = FIXED_SIZES.get(d.encoding)
    if d.error is not None or size is None or d.encoding == FieldEncoding.STRUCT:
        def walk(data: bytes, pos: int, little: bool, origin: int) -> tuple[Any, int]:
            return _Walker(data, little, origin).value(d, pos, 1)
        if d.error is None and d.array is None and d.encoding in UNIT_SIZES:
            return _string_reader(d, little, walk)
        return walk
    at = fixed_kind(size, d.format, little).reader
    if d.array is None:
        return lambda data, pos, little, origin: (at(data, pos), pos + size)
    if d.array:
        span = size * d.array

        def constant(data: bytes, pos: int, little: bool, origin: int) -> tuple[Any, int]:
            end = pos + span
            return [at(data, q) for q in range(pos, end, size)], end
        return constant
    count = _U16[little].unpack_from

    def variable(data: bytes, pos: int, little: bool, origin: int) -> tuple[Any, int]:
        end = pos + 2 + count(data, pos)[0] * size
        return [at(data, q) for q in range(pos + 2, end, size)], end
    return variable


def _string_reader(d: FieldDef, little: bool, walk: Callable[[bytes, int, bool, int],
                   tuple[Any, int]]) -> Callable[[bytes, int, bool, int], tuple[Any, int]]:
    """The reader of a string field (not an array): its value in place when it is
    there whole, else ``walk`` (which raises the walk's error)."""
    typed = string_kind(d.encoding, d.format, little).typed
    unit = UNIT_SIZES[d.encoding]
    if d.encoding in ZSTRINGS:
        if unit != 1:
            return walk  # (a terminator of 2 or 4 bytes: the walk's search)

        def zstring(data: bytes, pos: int, little: bool, origin: int) -> tuple[Any, int]:
            end = data.find(b"\0", pos)
            if end < 0:
                return walk(data, pos, little, origin)
            return typed(data[pos:end]), end + 1
        return zstring
    count = _U16[little].unpack_from

    def counted(data: bytes, pos: int, little: bool, origin: int) -> tuple[Any, int]:
        start = pos + 2
        if start <= len(data):
            end = start + count(data, pos)[0] * unit
            if end <= len(data):
                return typed(data[start:end]), end
        return walk(data, pos, little, origin)
    return counted


class _Walker:
    """Reads field values from one event's payload, in payload order."""

    __slots__ = ("data", "little", "origin", "steps")

    def __init__(self, data: bytes, little: bool, origin: int) -> None:
        self.data = data
        self.little = little
        self.origin = origin
        self.steps = 0  # MoveNext steps the data added so far (variable counts, step)

    def whole(self, defs: list[FieldDef], pos: int, budget: int | None) -> Fields:
        """All the fields of a payload, checked as the JSON renderer checks them: its
        MoveNext steps too (``budget``: :attr:`ParsedMetadata.budget`)."""
        if budget is None:
            raise EventHeaderError(_TOO_MANY_STEPS)
        fields = self.members(defs, pos, 1)[0]
        self.enumerated(budget)
        return fields

    def enumerated(self, budget: int) -> None:
        """After a whole walk: fail if the data added more MoveNext steps than
        ``budget``."""
        if self.steps > budget:
            raise EventHeaderError(_TOO_MANY_STEPS)

    def members(self, defs: list[FieldDef], pos: int, depth: int,
                only: frozenset[bytes] | None = None) -> tuple[Fields, int]:
        out = []
        for d in defs:
            if only is not None and d.name not in only:
                pos = self.skip(d, pos, depth)
                continue
            value, pos = self.value(d, pos, depth)
            out.append((d.name.decode("utf-8", UTF8_AS_SHOWN), value))
        return Fields(out), pos

    def planned(self, plan: list[tuple[int, Any]], pos: int, budget: int | None) -> Fields:
        """The wanted top-level fields, walking the whole payload by a :func:`_skip_plan`
        (``budget`` as for :meth:`whole`)."""
        if budget is None:
            raise EventHeaderError(_TOO_MANY_STEPS)
        out = []
        for step, arg in plan:
            if step == 0:
                total, sizes = arg
                if pos + total > len(self.data):
                    for size in sizes:  # the first field that does not fit, as value() says
                        if pos + size > len(self.data):
                            self.past_end(pos)
                        pos += size
                pos += total
            elif step == 1:
                value, pos = self.value(arg, pos, 1)
                out.append((arg.name.decode("utf-8", UTF8_AS_SHOWN), value))
            else:
                pos = self.skip(arg, pos, 1)
        self.enumerated(budget)
        return Fields(out)

    def skip(self, d: FieldDef, pos: int, depth: int) -> int:
        """The position after ``d``'s value, checked as :meth:`value` checks it."""
        if d.error is not None:
            raise EventHeaderError(d.error)
        count, per, pos = self.elements(d, pos, depth)
        size = FIXED_SIZES.get(d.encoding)
        if size is not None:
            end = pos + size * count
            if end > len(self.data):  # the first element that does not fit, as value() says
                self.past_end(pos + (len(self.data) - pos) // size * size)
            return end
        if d.encoding == FieldEncoding.STRUCT:
            for _ in range(count):
                if per:
                    self.step(per)
                for member in d.members:
                    pos = self.skip(member, pos, depth + 1)
            return pos
        for _ in range(count):
            pos = self.string_span(d, pos)[2]
        return pos

    def value(self, d: FieldDef, pos: int, depth: int) -> tuple[Any, int]:
        if d.error is not None:
            raise EventHeaderError(d.error)
        if d.array is None and d.encoding != FieldEncoding.STRUCT:  # (most values)
            return self.element(d, pos, depth)
        count, per, pos = self.elements(d, pos, depth)
        if d.array is None:
            return self.element(d, pos, depth)
        items = []
        for _ in range(count):
            if per:
                self.step(per)
            item, pos = self.element(d, pos, depth)
            items.append(item)
        return items, pos

    def elements(self, d: FieldDef, pos: int, depth: int) -> tuple[int, int, int]:
        """``(count, per, pos)`` of field ``d`` (at struct nesting ``depth``) at ``pos``:
        its elements (1 for a plain value; a variable count read, its steps counted when
        the elements are values), the MoveNext steps of each element of an array of
        structs (else 0), and where the elements start. A struct nested too deep fails
        here when it has an element (an array of none is never entered)."""
        count, per = 1, 0
        if d.array is not None:
            count = d.array
            if d.encoding == FieldEncoding.STRUCT:
                per = element_steps(d, depth)
            if not count:
                count, pos = self.u16(pos), pos + 2
                if not per:
                    self.steps += count
        if count and d.encoding == FieldEncoding.STRUCT and depth > STRUCT_NESTING_LIMIT:
            raise EventHeaderError(f"struct {d.name!r} nested deeper than "
                                   f"{STRUCT_NESTING_LIMIT}")
        return count, per, pos

    def step(self, steps: int) -> None:
        """Count the MoveNext steps of one element of an array of structs, and fail past
        MOVE_NEXT_LIMIT, as the JSON renderer does there: an element of no bytes (an
        empty struct) costs no data, so without this bound an event of a few bytes could
        ask for 65535 x 65535 of them."""
        self.steps += steps
        if self.steps > MOVE_NEXT_LIMIT:
            raise EventHeaderError(_TOO_MANY_STEPS)

    def element(self, d: FieldDef, pos: int, depth: int) -> tuple[Any, int]:
        if d.encoding == FieldEncoding.STRUCT:
            return self.members(d.members, pos, depth + 1)
        data = self.data
        size = FIXED_SIZES.get(d.encoding)
        if size is not None:
            if pos + size > len(data):
                self.past_end(pos)
            return fixed_kind(size, d.format, self.little).python(data[pos:pos + size]), \
                pos + size
        start, end, after = self.string_span(d, pos)
        return string_kind(d.encoding, d.format, self.little).typed(self.data[start:end]), after

    def string_span(self, d: FieldDef, pos: int) -> tuple[int, int, int]:
        """(start, end, after) of the string value at ``pos``."""
        data = self.data
        unit = UNIT_SIZES[d.encoding]
        if d.encoding in ZSTRINGS:
            end = pos
            nul = b"\0" * unit
            while True:
                end = data.find(nul, end)
                if end < 0:
                    raise EventHeaderError(f"string at byte {pos - self.origin} has no "
                                           "terminator")
                if (end - pos) % unit == 0:
                    break
                end += 1
            return pos, end, end + unit
        if pos + 2 > len(data):
            self.past_end(pos)
        start = pos + 2
        end = start + self.u16(pos) * unit
        if end > len(data):
            self.past_end(pos)
        return start, end, end

    def u16(self, pos: int) -> int:
        if pos + 2 > len(self.data):
            self.past_end(pos)
        return _U16[self.little].unpack_from(self.data, pos)[0]

    def past_end(self, pos: int) -> None:
        raise EventHeaderError(f"field data runs past the end of the event "
                               f"(byte {pos - self.origin})")
