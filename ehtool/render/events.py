"""One perf sample -> one JSON event object, as perf-decode's ``AppendSampleAsJson``.

``{ "n": "provider:event", <fields...>, "meta": { <meta...> } }``

EventHeader samples are decoded by ``ehtool.render.eventheader``; every other
tracepoint (and EventHeader events that are not self-describing or are
malformed) is rendered from its tracefs format. A handler is built once per
event description and cached, so the per-sample work is a dict lookup, the
field renderer and a few byte joins.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

from ehtool.perfdata.grammar import SampleType
from ehtool.render.meta_keys import EVENTHEADER_DEFAULT, META_DEFAULT
from ehtool.render.style import JsonStyle, grouped
from ehtool.render.times import TIME_MODES, TimeFormat
from ehtool.speedups import TIME_PERF
from ehtool.values.text import hex_int, latin1_json, text_json, utf8_json, uuid_json

if TYPE_CHECKING:
    from ehtool.render.eventheader import FastCache

class PlainSpec(NamedTuple):
    """What the C formatting loop needs for a plain tracepoint: ``head + render(raw)`` and
    the meta template with ``extra`` (its field order is the C code's)."""

    kind: int  # 0
    head: bytes
    render: Callable[[bytes], bytes]
    extra: bytes
    handler: Callable[[Any], bytes]  # the Python way, for what the C loop leaves


class EventHeaderSpec(NamedTuple):
    """What the C formatting loop needs for an EventHeader tracepoint: the decoder's
    fast-path cache (``EventHeaderDecoder.fast_cache``); a hit (with or without activity
    ids) is formatted in C, anything else by ``handler``."""

    kind: int  # 1
    tracepoint: str
    eventheader_offset: int
    head: bytes  # ``{ "n": `` in the style
    fast_cache: FastCache
    handler: Callable[[Any], bytes]
    #: the meta keys of the activity ids (``EventHeaderDecoder.activity_keys``)
    activity_keys: tuple[bytes, bytes]
    #: meta members after the event's own (JSON Lines' ``"file"``), or b""
    tail: bytes
    #: None: the event's meta members are its EventInfo's (the default --meta keys);
    #: else a dict EventInfo -> its members for the formatter's --meta keys, which the C
    #: loop fills with ``meta_of(info)`` (events with activity ids: ``handler``)
    metas: dict[Any, bytes] | None
    meta_of: Callable[[Any], bytes] | None
    #: the common fields' renderer (--meta common: before the event's own), or None
    common: Callable[[bytes], bytes] | None


#: PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU
_TIME_CPU_TID = int(SampleType.TID | SampleType.TIME | SampleType.CPU)


class SampleFormatter:
    """Formats samples of one perf.data file as JSON event objects (bytes)."""

    def __init__(
        self,
        style: JsonStyle,
        *,
        big_endian: bool,
        long_size: int,
        time_json: Callable[[int], bytes],
        comm_of: Callable[[int], str | None] | None = None,
        meta: frozenset[str] = META_DEFAULT,
        warn: Callable[[str], None] | None = None,
        file: str | None = None,
        source: str | None = None,
        clock: Any = None,
        time_mode: str = "perf",
        fields_key: str | None = None,
    ) -> None:
        self.style = style
        self.big_endian = big_endian
        self.long_size = long_size
        self.time_json = time_json
        #: the session's SessionClock, when time_json is its method: the hot path
        #: then formats UTC times inside the meta template
        self.clock = clock
        #: --time (ehtool/render/times.py); ns, rel and delta replace time_json
        self.time_mode = time_mode
        self._iso_clock = clock
        if TIME_MODES[time_mode] != TIME_PERF:
            self.time_json = TimeFormat(time_mode, clock).json
            self._iso_clock = None
        self.comm_of = comm_of
        self.meta = meta
        self.warn = warn
        #: the input's name, which warnings start with
        self.source = source
        self._eh: Any = None  # the EventHeader decoder, made when first needed
        self._handlers: dict[Any, Callable[[Any], bytes]] = {}
        #: desc -> what the C loop formats itself (see _speedups.c Formatter)
        self._specs: dict[Any, PlainSpec | EventHeaderSpec] = {}
        #: ``"file"`` meta member (JSON Lines output names each event's input)
        self._file_meta = b""
        if file is not None:
            name = text_json(file)
            self._file_meta = style.sep + b'"file"' + style.colon + name
        #: --fields-key: the event's fields nested under this key (JSON bytes), or None
        self._fields_key = None
        if fields_key is not None:
            self._fields_key = text_json(fields_key)
        s = style
        self._k_n = b"{" + s.first + b'"n"' + s.colon
        self._k_meta = s.sep + b'"meta"' + s.colon + b"{"
        self._k_time = b'"time"' + s.colon
        self._k_cpu = b'"cpu"' + s.colon
        self._k_pid = b'"pid"' + s.colon
        self._k_tid = b'"tid"' + s.colon
        self._k_comm = b'"comm"' + s.colon
        self._end_meta = s.close_obj + s.close_obj
        # the meta object, then the event's closing
        opening, sep, closing, empty = s.group(b'"meta"')
        self._meta_group = (opening, sep, closing + s.close_obj, empty + s.close_obj)
        #: the fields' group under --fields-key, or None
        self._fields_group = None if self._fields_key is None else s.group(self._fields_key)
        # one template for the usual meta (time, cpu, pid, tid all recorded and wanted)
        self._fast_meta = None
        self._fast_utc_meta = None
        if {"time", "cpu", "pid", "tid"} <= meta and "comm" not in meta:
            rest = (s.sep + self._k_cpu + b"%d" + s.sep + self._k_pid + b"%d" + s.sep
                    + self._k_tid + b"%d%s" + self._end_meta)
            self._fast_meta = self._k_meta + s.first + self._k_time + b"%s" + rest
            # the same with a UTC time as (cached second prefix, nanoseconds)
            self._fast_utc_meta = self._k_meta + s.first + self._k_time + b'%s%09dZ"' + rest
        # the decoder's precomputed meta bytes serve whenever the EventHeader keys are default
        self._eh_meta_default = set(EVENTHEADER_DEFAULT) <= meta and not (
            meta & {"provider", "event", "options", "flags"}
        )
        self._native = self._native_loop()
        if self._native is not None and self._iso_clock is None:
            self.time_json = self._native.time_json  # one rel/delta state, the C loop's

    # -- public ---------------------------------------------------------------

    def format(self, sample: Any) -> bytes:
        """The JSON object for one sample."""
        handler = self._handlers.get(sample.desc)
        if handler is None:
            handler = self._handlers[sample.desc] = self._make_handler(sample.desc)
        return handler(sample)

    def format_many(self, samples: list) -> list[bytes]:
        """The JSON objects for a list of samples (the decode hot loop)."""
        if self._native is not None:
            try:
                return self._native.format_many(samples)
            except OverflowError:
                pass  # a clock offset beyond 64 bits (corrupt CLOCK_DATA): Python's ints
        handlers = self._handlers
        out = []
        append = out.append
        for sample in samples:
            handler = handlers.get(sample.desc)
            if handler is None:
                handler = handlers[sample.desc] = self._make_handler(sample.desc)
            append(handler(sample))
        return out

    def format_joined(self, samples: list, sep: bytes, lead: bytes = b"",
                      tail: bytes = b"") -> bytes:
        """``lead + sep.join(self.format_many(samples)) + tail``, written by the C loop
        into one buffer when it is built (no bytes object per event)."""
        if self._native is not None:
            try:
                return self._native.format_joined(samples, sep, lead, tail)
            except OverflowError:
                pass  # as format_many
        return lead + sep.join(self.format_many(samples)) + tail

    def format_record(self, record: Any) -> bytes | None:
        """A COMM, FORK, EXIT, LOST or LOST_SAMPLES record as an event (``--nonsample``):
        ``{ "n": "perf:comm", "pid": ..., ..., "meta": { ... } }``; None for other types."""
        spec = RECORD_FIELDS.get(record.type)
        if spec is None or record.body is None:
            return None
        name, keys = spec
        s = self.style
        members = b"".join(
            s.sep + b'"' + k.encode() + b'"' + s.colon + _json_value(getattr(record.body, k))
            for k in keys)
        return (self._k_n + b'"perf:' + name + b'"' + self._nest(members)
                + self._meta(record, b""))

    # -- handlers -------------------------------------------------------------

    def _native_loop(self) -> Any:
        """The C version of :meth:`format_many` when it is built and the meta object
        shows one of time, cpu, pid and tid at least (the C loop writes the members
        :meth:`_meta` writes for samples that record all four), else None."""
        from ehtool.speedups import load

        speedups = load()
        if speedups is None or self.clock is None:
            return None
        shown = [k for k in ("time", "cpu", "pid", "tid") if k in self.meta]
        s = self.style
        keys = {"time": self._k_time, "cpu": self._k_cpu, "pid": self._k_pid,
                "tid": self._k_tid}
        pieces = {k: (self._k_meta + s.first if k == shown[0] else s.sep) + keys[k]
                  for k in shown}
        return speedups.Formatter(
            self._native_spec, self.clock, *(pieces.get(k) for k in keys), self._end_meta,
            TIME_MODES[self.time_mode], self._comm_json(),
            None if shown else self._meta_group, self._fields_group)

    def _comm_json(self) -> Callable[[int], bytes | None] | None:
        """For the C loop: a thread's comm member (with the separator before it), or
        None when it has no name; None when comm is not shown."""
        comm_of = self.comm_of
        if "comm" not in self.meta or comm_of is None:
            return None
        sep = self.style.sep
        texts: dict[str, bytes] = {}

        def comm_json(tid: int) -> bytes | None:
            comm = comm_of(tid)
            if comm is None:
                return None
            text = texts.get(comm)
            if text is None:
                if len(texts) >= 4096:
                    texts.clear()
                text = texts[comm] = sep + self._comm_member(comm)
            return text
        return comm_json

    def _comm_member(self, comm: str) -> bytes:
        """The meta object's ``"comm": NAME`` member."""
        return self._k_comm + utf8_json(comm.encode("utf-8", "replace"))

    def _native_spec(self, desc: Any) -> Any:
        """For the C loop: the spec of ``desc``'s hot path, or its Python handler."""
        handler = self._handlers.get(desc)
        if handler is None:
            handler = self._handlers[desc] = self._make_handler(desc)
        return self._specs.get(desc, handler)

    def _make_handler(self, desc: Any) -> Callable[[Any], bytes]:
        from ehtool.render.tracefs_fields import make_renderer, raw_renderer

        fmt = getattr(desc, "format", None)
        provider, event = _split_name(desc, fmt)
        name_json = latin1_json(f"{provider}:{event}".encode("latin-1", "replace"))
        if fmt is not None:
            render = make_renderer(fmt, self.style, self.long_size, self.big_endian,
                                   common="common" in self.meta)
        else:
            render = raw_renderer(self.style)
        nest = self._nest
        members = render  # (the C loop nests them itself)
        if self._fields_key is not None:
            render = lambda raw, members=members: nest(members(raw))  # noqa: E731
        plain_meta_extra = self._plain_meta_extra(provider, event)
        plain_head = self._k_n + name_json
        # time, cpu and tid recorded for every sample of this event: the C loop writes
        # the meta object; and when those four are wanted and comm is not, the Python
        # handler fills one template (extra members last)
        recorded = desc.sample_type & _TIME_CPU_TID == _TIME_CPU_TID
        native = recorded and self._native is not None
        fast = self._fast_meta if recorded else None
        time_json = self.time_json
        file_meta = self._file_meta
        slow_meta = self._meta

        clock = self._iso_clock
        utc = self._fast_utc_meta
        if fast is not None:
            plain_fast_extra = plain_meta_extra + file_meta

            def plain(sample: Any) -> bytes:
                off = clock.offset_ns if clock is not None else None
                if off is None:
                    return plain_head + render(sample.raw) + fast % (
                        time_json(sample.time), sample.cpu, sample.pid, sample.tid,
                        plain_fast_extra)
                sec, ns = divmod(sample.time + off, 1_000_000_000)
                return plain_head + render(sample.raw) + utc % (
                    clock.last_prefix if sec == clock.last_second else clock.prefix_for(sec),
                    ns, sample.cpu, sample.pid, sample.tid, plain_fast_extra)
        else:
            def plain(sample: Any) -> bytes:
                return plain_head + render(sample.raw) + slow_meta(sample, plain_meta_extra)
        if native:
            self._specs[desc] = PlainSpec(0, plain_head, members, plain_meta_extra + file_meta,
                                          plain)

        eh_offset = getattr(fmt, "eventheader_offset", None) if fmt is not None else None
        if eh_offset is None:
            return plain
        self._specs.pop(desc, None)  # an EventHeader tracepoint: not the plain spec

        tracepoint = fmt.name
        if self._eh is None:
            from ehtool.render.eventheader import decoder_for

            self._eh = decoder_for(self.style)
        from ehtool.render.eventheader import DecodedEvent
        from ehtool.render.plan import PLAN_CACHE_MAX

        decode = self._eh.decode_parts  # tuple: no DecodedEvent per sample
        common_render = (
            make_renderer(fmt, self.style, self.long_size, self.big_endian, common="only")
            if "common" in self.meta else None
        )
        k_n = self._k_n
        where = f"{self.source}: " if self.source is not None else ""

        def fallback(sample: Any, exc: ValueError) -> bytes:
            if self.warn is not None:  # (a worker process sets its own)
                self.warn(f"{where}offset {sample.offset:#x}: {tracepoint}: {exc}; "
                          "shown as a plain tracepoint")
            return plain(sample)

        def eventheader(sample: Any) -> bytes:
            raw = sample.raw
            try:
                ev = decode(tracepoint, raw, eh_offset)
            except ValueError as exc:
                return fallback(sample, exc)
            if ev is None:
                return plain(sample)
            common = common_render(raw) if common_render is not None else b""
            eh_meta = ev[2] if self._eh_meta_default else self._eh_meta(DecodedEvent(*ev))
            return k_n + ev[0] + nest(common + ev[1]) + slow_meta(sample, eh_meta)

        if not native:
            return eventheader
        if not self._eh_meta_default:  # the C loop takes each event's --meta members
            # from a dict it fills (events with activity ids stay the handler's)
            metas: dict[Any, bytes] = {}

            def meta_of(info: Any) -> bytes:
                if len(metas) >= PLAN_CACHE_MAX:  # bounded as the decoder's own caches
                    metas.clear()
                return self._eh_meta_of(info)

            self._specs[desc] = EventHeaderSpec(
                1, tracepoint, eh_offset, k_n, self._eh.fast_cache, eventheader,
                self._eh.activity_keys, file_meta, metas, meta_of, common_render)
            return eventheader

        def eventheader_fast(sample: Any) -> bytes:
            try:
                ev = decode(tracepoint, sample.raw, eh_offset)
            except ValueError as exc:
                return fallback(sample, exc)
            if ev is None:
                return plain(sample)
            off = clock.offset_ns if clock is not None else None
            if off is None:
                return k_n + ev[0] + ev[1] + fast % (
                    time_json(sample.time), sample.cpu, sample.pid, sample.tid,
                    ev[2] + file_meta)
            sec, ns = divmod(sample.time + off, 1_000_000_000)
            return k_n + ev[0] + ev[1] + utc % (
                clock.last_prefix if sec == clock.last_second else clock.prefix_for(sec),
                ns, sample.cpu, sample.pid, sample.tid, ev[2] + file_meta)

        handler = (eventheader_fast if fast is not None and common_render is None
                   and self._fields_key is None else eventheader)
        self._specs[desc] = EventHeaderSpec(1, tracepoint, eh_offset, k_n,
                                            self._eh.fast_cache, handler,
                                            self._eh.activity_keys, file_meta, None, None,
                                            common_render)
        return handler

    def _nest(self, members: bytes) -> bytes:
        """The fields as they are, or nested under --fields-key."""
        if self._fields_key is None:
            return members
        return self.style.nest(self._fields_key, members)

    # -- meta -----------------------------------------------------------------

    def _meta(self, sample: Any, extra: bytes) -> bytes:
        """``, "meta": { "time": ..., "cpu": ..., "pid": ..., "tid": ... <extra> } }``."""
        extra += self._file_meta
        fast = self._fast_meta
        if fast is not None and sample.time is not None and sample.cpu is not None \
                and sample.pid is not None:
            return fast % (self.time_json(sample.time), sample.cpu, sample.pid, sample.tid,
                           extra)
        s = self.style
        m = self.meta
        parts = []
        if sample.time is not None and "time" in m:
            parts.append(self._k_time + self.time_json(sample.time))
        if sample.cpu is not None and "cpu" in m:
            parts.append(self._k_cpu + b"%d" % sample.cpu)
        if sample.pid is not None:
            if "pid" in m:
                parts.append(self._k_pid + b"%d" % sample.pid)
            if "tid" in m:
                parts.append(self._k_tid + b"%d" % sample.tid)
            if "comm" in m and self.comm_of is not None:
                comm = self.comm_of(sample.pid if sample.tid is None else sample.tid)
                if comm is not None:
                    parts.append(self._comm_member(comm))
        if not parts:
            return grouped(self._meta_group, extra)
        return self._k_meta + s.first + s.sep.join(parts) + extra + self._end_meta

    def _plain_meta_extra(self, provider: str, event: str) -> bytes:
        s = self.style
        out = b""
        for key, text in (("provider", provider), ("event", event)):
            if key in self.meta and text:
                value = latin1_json(text.encode("latin-1", "replace"))
                out += s.sep + b'"' + key.encode() + b'"' + s.colon + value
        return out

    def _eh_meta(self, ev: Any) -> bytes:
        if self._eh_meta_default:
            return ev.meta
        return self._eh_meta_of(ev.info, ev.activity, ev.related_activity)

    def _eh_meta_of(self, info: Any, activity: bytes | None = None,
                    related_activity: bytes | None = None) -> bytes:
        """The --meta members of an event from its EventInfo and activity ids."""
        s = self.style
        m = self.meta
        out = []

        def add(key: str, value: bytes) -> None:
            out.append(s.sep + b'"' + key.encode() + b'"' + s.colon + value)

        if "provider" in m:
            add("provider", utf8_json(info.provider.encode()))
        if "event" in m:
            add("event", utf8_json(info.event_name.encode()))
        if "id" in m and info.id:
            add("id", b"%d" % info.id)
        if "version" in m and info.version:
            add("version", b"%d" % info.version)
        if "level" in m and info.level:
            add("level", b"%d" % info.level)
        if "keyword" in m and info.keyword:
            add("keyword", hex_int(info.keyword))
        if "opcode" in m and info.opcode:
            add("opcode", b"%d" % info.opcode)
        if "tag" in m and info.tag:
            add("tag", hex_int(info.tag))
        if "activity" in m and activity is not None:
            add("activity", uuid_json(activity))
        if "relatedActivity" in m and related_activity is not None:
            add("relatedActivity", uuid_json(related_activity))
        if "options" in m and info.options:
            add("options", utf8_json(info.options.encode()))
        if "flags" in m:
            add("flags", hex_int(info.flags))
        return b"".join(out)


#: the records ``--nonsample`` shows as events ``perf:NAME``: type -> (NAME, its fields)
RECORD_FIELDS = {
    3: (b"comm", ("pid", "tid", "comm")),
    7: (b"fork", ("pid", "ppid", "tid", "ptid")),
    4: (b"exit", ("pid", "ppid", "tid", "ptid")),
    2: (b"lost", ("id", "lost")),
    13: (b"lost_samples", ("lost",)),
}


def _json_value(value: Any) -> bytes:
    if isinstance(value, int):
        return b"%d" % value
    if isinstance(value, bytes):
        value = value.split(b"\0", 1)[0].decode("utf-8", "replace")
    return text_json(str(value))


def _split_name(desc: Any, fmt: Any) -> tuple[str, str]:
    """provider and event for ``"n"``: the EVENT_DESC name split at ':', else the format's."""
    name = getattr(desc, "name", "") or ""
    if not name and fmt is not None:
        return fmt.system, fmt.name
    provider, colon, event = name.partition(":")
    return (provider, event) if colon else (name, "")
