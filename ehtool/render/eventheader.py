"""EventHeader events -> perf-decode JSON.

``EventHeaderDecoder(style).decode(tracepoint_name, data, offset)`` follows the
reference ``EventEnumerator`` + ``EventFormatter``:

* ``None`` when the event is not EventHeader by perf-decode's rules (short
  data, unknown flags, a name without ``_L<level>K<keyword>``, a level that
  differs from the name's, bad extension blocks, no metadata extension); the
  caller then shows it as a plain tracepoint;
* ``EventHeaderError`` (a ValueError) when it is EventHeader but malformed
  midway (bad metadata, a value running past the data, limits);
* else a :class:`DecodedEvent` with the JSON pieces.

Speed: each distinct metadata is compiled once into a generated renderer
(:mod:`ehtool.render.plan`). On top of that, the first 12 bytes of an
event (header + first extension header) are a cache key per tracepoint name:
a hit already knows everything the header says (name, meta JSON, flags) and
only has to check that the metadata bytes are the ones it compiled
(``bytes.startswith``) before running the renderer on the payload.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import NamedTuple

from ehtool.eventheader.decoder import (
    NameInfo,
    RawEvent,
    parse_name,
    prefix_key,
    read_event,
)
from ehtool.eventheader.grammar import EventHeaderError
from ehtool.render.plan import PLAN_CACHE_MAX, Plan, compile_plan
from ehtool.render.style import JsonStyle
from ehtool.speedups import load
from ehtool.values import text as v
from ehtool.values.strings import UTF8_AS_SHOWN

__all__ = ["DecodedEvent", "EventHeaderDecoder", "EventHeaderError", "EventInfo"]

_META_KEYS = ("id", "version", "level", "keyword", "opcode", "tag", "activity",
              "relatedActivity")


class EventInfo:
    """What the header, the tracepoint name and the metadata say: shared by all events
    with the same header bytes and metadata."""

    __slots__ = ("tracepoint", "provider", "event_name", "attributes", "options", "flags",
                 "version", "id", "tag", "opcode", "level", "keyword", "name_json", "meta",
                 "plan")

    def __init__(self, tracepoint: str, provider: str, options: str, keyword: int,
                 header: tuple[int, ...], plan: Plan, name_json: bytes, meta: bytes) -> None:
        self.tracepoint = tracepoint
        self.provider = provider
        self.event_name = plan.event_name.decode("utf-8", UTF8_AS_SHOWN)
        #: the metadata event name's ``;key=value`` attributes (``""`` when none)
        self.attributes = plan.attributes.decode("utf-8", UTF8_AS_SHOWN)
        self.options = options
        self.flags, self.version, self.id, self.tag, self.opcode, self.level = header
        self.keyword = keyword
        self.name_json = name_json
        self.meta = meta
        self.plan = plan


class DecodedEvent:
    """One decoded EventHeader event.

    ``name_json`` (``"Provider:Event"``), ``fields`` (every member prefixed with
    the style's separator) and ``meta`` (the EventHeader meta members, each
    prefixed with the separator) are JSON bytes; ``activity`` and
    ``related_activity`` are 16 raw bytes or None; ``payload`` is where the field
    data starts in the data decoded; the header facts are attributes too
    (``provider``, ``event_name``, ``level``, ``keyword``, ...).
    """

    __slots__ = ("name_json", "fields", "meta", "info", "activity", "related_activity",
                 "payload")

    def __init__(self, name_json: bytes, fields: bytes, meta: bytes, info: EventInfo,
                 activity: bytes | None, related_activity: bytes | None,
                 payload: int = 0) -> None:
        self.name_json = name_json
        self.fields = fields
        self.meta = meta
        self.info = info
        self.activity = activity
        self.related_activity = related_activity
        self.payload = payload

    provider = property(lambda self: self.info.provider)
    event_name = property(lambda self: self.info.event_name)
    attributes = property(lambda self: self.info.attributes)
    options = property(lambda self: self.info.options)
    flags = property(lambda self: self.info.flags)
    version = property(lambda self: self.info.version)
    id = property(lambda self: self.info.id)
    tag = property(lambda self: self.info.tag)
    opcode = property(lambda self: self.info.opcode)
    level = property(lambda self: self.info.level)
    keyword = property(lambda self: self.info.keyword)

    def __repr__(self) -> str:
        return (f"DecodedEvent({self.name_json.decode('utf-8', 'replace')}, "
                f"fields={self.fields[:60]!r})")


class FastEntry(NamedTuple):
    """A fast-path cache entry: an event whose extensions are [activity id,] metadata,
    recognised by its first 12 bytes and then ``expect`` (read by the C loop too)."""

    expect: bytes  # metadata bytes expected at byte 12, or after the activity id
    activity_size: int  # 0, 16 or 32
    skip: int  # payload offset from the event start
    render: Callable[[bytes, int, int], bytes]  # the compiled fields renderer
    info: EventInfo


#: tracepoint name -> first 12 event bytes -> a FastEntry; an int ``n`` when several
#: metadata share those 12 bytes (then the first ``n`` bytes are the key); a list of
#: FastEntry for events with activity ids (tried in order)
FastCache = dict[str, dict[bytes, "FastEntry | int | list[FastEntry]"]]


def decoder_for(style: JsonStyle) -> EventHeaderDecoder:
    """The process's decoder for ``style``, shared by every input it decodes: its plans
    and caches depend only on the tracepoint name and the event's bytes (checked on
    every hit), so the inputs after the first, and the workers forked after it, start
    warm. One per renderer too: its plans keep the C or pure-Python renderer they were
    compiled with (``EHTOOL_PURE`` set later in the process gets its own)."""
    key = (style, load() is not None)
    decoder = _DECODERS.get(key)
    if decoder is None:
        decoder = _DECODERS[key] = EventHeaderDecoder(style)
    return decoder


def forget_decoders() -> None:
    """Drop the process's decoders and their caches: what a fresh process starts with
    (the fuzz harness checks each input so, and measures its memory alone)."""
    _DECODERS.clear()


class EventHeaderDecoder:
    """Decodes EventHeader events into JSON pieces in one :class:`JsonStyle`."""

    def __init__(self, style: JsonStyle) -> None:
        self.style = style
        self._names: dict[str, NameInfo | None] = {}
        #: LRU caches: (byte order, metadata) -> its plan (or why it fails every event);
        #: (tracepoint, header, plan) -> the event's name and meta pieces
        self._plans: OrderedDict[tuple[bool, bytes], Plan | EventHeaderError] = OrderedDict()
        self._infos: OrderedDict[tuple, EventInfo] = OrderedDict()
        #: the fast path's cache (see FastCache); the C formatting loop reads it
        self.fast_cache: FastCache = {}
        #: the C formatting loop's lookup in it (``_speedups.fast_hit``), None without C
        self._fast_hit = getattr(load(), "fast_hit", None)
        s = style
        self._meta_keys = {k: s.sep + b'"' + k.encode() + b'"' + s.colon for k in _META_KEYS}

    @property
    def activity_keys(self) -> tuple[bytes, bytes]:
        """The meta members' keys of the activity id and the related one (each with the
        separator before it), as :meth:`_activity_meta` writes them."""
        return self._meta_keys["activity"], self._meta_keys["relatedActivity"]

    def decode(self, tracepoint_name: str, data: bytes | memoryview,
               offset: int = 0) -> DecodedEvent | None:
        """Decode ``data[offset:]``; see the module docstring for None and errors."""
        parts = self.decode_parts(tracepoint_name, data, offset)
        return None if parts is None else DecodedEvent(*parts)

    def decode_parts(self, tracepoint_name: str, data: bytes | memoryview,
                     offset: int = 0) -> tuple | None:
        """:meth:`decode` without building the object (the formatter's hot path):
        ``(name_json, fields, meta, info, activity, related_activity, payload)`` or
        None (``payload``: the offset of the field data in ``data``)."""
        if type(data) is not bytes:
            data = bytes(data)
        per_name = self.fast_cache.get(tracepoint_name)
        if per_name is not None:
            hit = per_name.get(data[offset:offset + 12])
            if hit is not None:
                if type(hit) is int:
                    # several metadata share these 12 bytes: the whole prefix is the key
                    hit = per_name.get(data[offset:offset + hit])
                    if type(hit) is FastEntry:  # (not the marker itself: data cut at 12)
                        info = hit[4]
                        pos = offset + hit[2]
                        return (info.name_json, hit[3](data, pos, offset), info.meta, info,
                                None, None, pos)
                elif type(hit) is list:
                    for entry in hit:
                        if data.startswith(entry[0], offset + 12 + entry[1]):
                            return self._with_activity(data, offset, entry)
                else:
                    expect, activity_size, skip, render, info = hit
                    if not activity_size:
                        if data.startswith(expect, offset + 12):
                            return (info.name_json, render(data, offset + skip, offset),
                                    info.meta, info, None, None, offset + skip)
                    elif data.startswith(expect, offset + 12 + activity_size):
                        return self._with_activity(data, offset, hit)
        return self._decode_slow(tracepoint_name, data, offset)

    def check_parts(self, tracepoint_name: str, data: bytes | memoryview,
                    offset: int = 0) -> tuple | None:
        """What filters need of :meth:`decode_parts`, without the JSON:
        ``(info, activity, related_activity, payload)`` or None, raising as it raises
        (the whole event is checked: bounds, terminators and limits by the C walk,
        :meth:`Plan.check <ehtool.render.plan.Plan>`, for the formatter loop's hits)."""
        if type(data) is not bytes:
            data = bytes(data)
        if self._fast_hit is not None:
            hit = self._fast_hit(self.fast_cache, tracepoint_name, data, offset)
            if hit is not None:
                info = hit[4]
                pos = offset + hit[2]
                info.plan.check(data, pos, offset)
                return info, None, None, pos
        parts = self.decode_parts(tracepoint_name, data, offset)
        return None if parts is None else parts[3:]

    def _with_activity(self, data: bytes, offset: int, hit: FastEntry) -> tuple:
        expect, activity_size, skip, render, info = hit
        activity = data[offset + 12:offset + 28]
        related = data[offset + 28:offset + 44] if activity_size == 32 else None
        return (info.name_json, render(data, offset + skip, offset),
                self._activity_meta(info.meta, activity, related), info, activity, related,
                offset + skip)

    def _decode_slow(self, tracepoint_name: str, data: bytes, offset: int) -> tuple | None:
        """Full checks; remembers the event's layout for the fast path when it can."""
        name = self._names.get(tracepoint_name, False)
        if name is False:
            if len(self._names) >= PLAN_CACHE_MAX:
                self._names.clear()
            name = self._names[tracepoint_name] = parse_name(tracepoint_name)
        event = read_event(name, data, offset)
        if event is None:
            return None
        little, header, metadata, activity, pos = event
        plan = self._plan(metadata, little)
        info = self._info(tracepoint_name, name, header, plan)
        related = activity[16:32] if activity is not None and len(activity) == 32 else None
        act = activity[:16] if activity is not None else None
        self._remember(tracepoint_name, data, offset, event, info)
        meta = info.meta if act is None else self._activity_meta(info.meta, act, related)
        return info.name_json, plan.render(data, pos, offset), meta, info, act, related, pos

    def _plan(self, metadata: bytes, little: bool) -> Plan:
        key = (little, metadata)
        plan = self._plans.get(key)
        if plan is None:
            if len(self._plans) >= PLAN_CACHE_MAX:
                self._plans.popitem(last=False)  # the least recently used
            try:
                plan = compile_plan(metadata, little, self.style)
            except EventHeaderError as exc:
                plan = exc
            self._plans[key] = plan
        else:
            self._plans.move_to_end(key)
        if isinstance(plan, EventHeaderError):
            raise EventHeaderError(str(plan))
        return plan

    def _info(self, tracepoint: str, name: NameInfo, header: tuple[int, ...],
              plan: Plan) -> EventInfo:
        key = (tracepoint, header, plan)  # (the plan itself: its id could be reused)
        info = self._infos.get(key)
        if info is not None:
            self._infos.move_to_end(key)
        else:
            if len(self._infos) >= PLAN_CACHE_MAX:
                self._infos.popitem(last=False)
            flags, version, ident, tag, opcode, level = header
            info = self._infos[key] = EventInfo(
                tracepoint, name.provider, name.options, name.keyword, header, plan,
                v.utf8_json(name.provider.encode("utf-8", "surrogateescape"))[:-1] + b":"
                + plan.event_name_json,
                self._header_meta(ident, version, level, name.keyword, opcode, tag))
        return info

    def _remember(self, tracepoint: str, data: bytes, offset: int, event: RawEvent,
                  info: EventInfo) -> None:
        """Fast-path entry for events whose extensions are [activity id,] metadata."""
        key = prefix_key(data, offset, event)
        if key is None:
            return
        first, expect, activity_size = key
        pos = event.payload
        per_name = self.fast_cache.get(tracepoint)
        if per_name is None:
            if len(self.fast_cache) >= PLAN_CACHE_MAX:  # (the process's: bounded too)
                self.fast_cache.clear()
            per_name = self.fast_cache[tracepoint] = {}
        if len(per_name) >= PLAN_CACHE_MAX:
            per_name.clear()
        entry = FastEntry(expect, activity_size, pos - offset, info.plan.render, info)
        known = per_name.get(first)
        if known is None or type(known) is FastEntry and known.expect == expect:
            per_name[first] = entry
        elif activity_size:
            listed = [known] if type(known) is FastEntry else known
            per_name[first] = [entry, *listed[:15]]
        else:
            # a second metadata after these 12 bytes: key every one by its whole prefix
            # (header, extension header, metadata), which no 12-byte key can equal
            if type(known) is FastEntry:
                per_name[first + known.expect] = known
            per_name[first] = 12 + len(expect)
            per_name[first + expect] = entry

    # -- meta -------------------------------------------------------------------

    def _header_meta(self, ident: int, version: int, level: int, keyword: int, opcode: int,
                     tag: int) -> bytes:
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
        return b"".join(parts)

    def _activity_meta(self, base: bytes, activity: bytes, related: bytes | None) -> bytes:
        extra = self._meta_keys["activity"] + v.uuid_json(activity)
        if related is not None:
            extra += self._meta_keys["relatedActivity"] + v.uuid_json(related)
        return base + extra


#: see decoder_for: (style, C renderer loaded) -> decoder
_DECODERS: dict[tuple[JsonStyle, bool], EventHeaderDecoder] = {}
