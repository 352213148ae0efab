"""The typed event layer: perf.data samples as Python objects.

::

    import ehtool
    with ehtool.open("perf.data") as events:     # file or pipe mode; "-" for stdin
        for ev in events:
            ev.name                # "MyProvider:Started" or "sched:sched_switch"
            ev.provider, ev.event  # the two halves of ``name``
            ev.meta["level"], ev.meta["cpu"], ev.time
            ev.fields["count"]     # int, float, str, bytes, bool, uuid.UUID, ipaddress,
                                   # datetime, lists (arrays), Fields (structs)

EventHeader events are decoded with :class:`ehtool.eventheader.decoder.TypedDecoder`;
other tracepoints (and EventHeader events that are malformed: ``ev.error`` says
why) from their tracefs format. Filters, ``info`` and the columnar writers read
this layer; the JSON fast path (``ehtool.render``) renders the same samples
straight to text.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ehtool import speedups
from ehtool.errors import InputError
from ehtool.eventheader.decoder import (
    EventHeaderError,
    EventLayout,
    Fields,
    TypedDecoder,
    activity_ids,
    json_members,
    object_text,
)
from ehtool.formats.tracefs_format import FieldFormat, decimal_pid
from ehtool.formats.values import field_value, typed_json_renderer, value_reader
from ehtool.values.typed_json import json_value

__all__ = ["ROW_COLUMNS", "ROW_OFFSET", "Event", "EventFile", "Fields", "SampleConverter",
           "event_row", "open"]


@dataclass(slots=True)
class Event:
    """One decoded event."""

    #: ``provider:event`` as perf-decode's ``"n"``
    name: str
    provider: str
    event: str
    #: session-clock time in ns (None when not recorded); see :attr:`utc_ns`
    time: int | None
    #: time, cpu, pid, tid, comm, and for EventHeader events id, version, level,
    #: keyword, opcode, tag, activity, related_activity (uuid.UUID), options, flags
    meta: dict[str, Any]
    fields: Fields
    #: the tracepoint (``user_events:MyProvider_L5K1``)
    tracepoint: str
    #: True when decoded as EventHeader
    eventheader: bool = False
    #: nanoseconds since the epoch (UTC) when the file has clock data, else None
    utc_ns: int | None = None
    #: why an EventHeader tracepoint's data was decoded as a plain tracepoint
    error: str | None = None
    #: byte offset of the sample record in the input
    offset: int = field(default=0, repr=False)
    #: the fields as their JSON object by ``ehtool.values.typed_json``, when the events
    #: were opened for it (``fields_json=True``: the ``fields`` column's text); the
    #: fields are then this text alone (``fields`` is empty; a tracepoint without a
    #: format keeps its ``raw`` field instead)
    fields_json: str | None = field(default=None, repr=False)


#: ``only`` for a check of the whole event that decodes no field
_NONE: frozenset[bytes] = frozenset()
_NO_FIELDS = Fields(())

#: the values of an event's row for the columnar writers, in this order
#: (:func:`event_row`, :meth:`SampleConverter.row`), then the sample's offset
ROW_COLUMNS = ("time", "session_time", "cpu", "pid", "tid", "comm", "provider", "event",
               "level", "keyword", "opcode", "id", "version", "activity", "related_activity",
               "fields", "error")
#: the place of the sample's offset in a row (after ROW_COLUMNS)
ROW_OFFSET = len(ROW_COLUMNS)
#: the places in a row of the values each sample gives it (the others are its event's),
#: in the order ``_speedups.RowMaker`` takes them
_SAMPLE_SLOTS = (*(ROW_COLUMNS.index(c) for c in (
    "time", "session_time", "cpu", "pid", "tid", "comm", "activity", "related_activity",
    "fields")), ROW_OFFSET)


def _template(provider: str, event: str, header: tuple = (None,) * 5,
              error: str | None = None) -> tuple:
    """The row of an event (``header``: its level, keyword, opcode, id and version) with
    None where each sample gives its value (_SAMPLE_SLOTS)."""
    return (None, None, None, None, None, None, provider, event, *header, None, None, None,
            error, None)


def _layout_template(layout: EventLayout) -> tuple:
    """:func:`_template` of the EventHeader events read with ``layout``."""
    meta = layout.meta
    return _template(layout.name.provider, layout.parsed.event_name,
                     (meta["level"], meta["keyword"], meta["opcode"], meta["id"],
                      meta["version"]))


def event_row(ev: Event, with_fields: bool = True) -> tuple:
    """The row of a typed event: its values of ROW_COLUMNS (the UTC time as ``time``,
    activity ids as text, the fields as their typed JSON object's text, or None without
    ``with_fields``), then its sample's offset."""
    meta = ev.meta.get
    activity, related = meta("activity"), meta("related_activity")
    if not with_fields:
        fields_text = None
    elif ev.fields_json is not None:
        fields_text = ev.fields_json
    else:
        fields_text = json_value(ev.fields.to_dict())
    return (ev.utc_ns, ev.time, meta("cpu"), meta("pid"), meta("tid"), meta("comm"),
            ev.provider, ev.event, meta("level"), meta("keyword"), meta("opcode"), meta("id"),
            meta("version"), None if activity is None else str(activity),
            None if related is None else str(related), fields_text, ev.error, ev.offset)


class SampleConverter:
    """perf.data samples -> :class:`Event` (caches per event description)."""

    def __init__(self, *, big_endian: bool = False, comm_of: Callable[[int], str | None]
                 | None = None, clock: Any = None, decimal_pids: bool = False) -> None:
        self.big_endian = big_endian
        #: tracefs ``pid_t`` fields as signed ints, not :class:`Hex` (``--decimal-pids``)
        self.decimal_pids = decimal_pids
        self.comm_of = comm_of
        self.clock = clock
        self.decoder = TypedDecoder()
        self._descs: dict[Any, tuple[str, str, str, Any, int | None]] = {}
        self._names: dict[frozenset[str], frozenset[bytes]] = {}  # ``only`` as bytes
        self._fields: dict[Any, list[tuple[str, Callable[[Any], object]]]] = {}
        self._field_formats: dict[Any, list[FieldFormat]] = {}
        self._json_renderers: dict[Any, Callable[[bytes], bytes]] = {}

    def describe(self, desc: Any) -> tuple[str, str, str, Any, int | None]:
        """(name, provider, event, tracefs format, EventHeader offset or None) of the
        samples of ``desc`` as plain tracepoints, as decode shows them."""
        hit = self._descs.get(desc)
        if hit is None:
            fmt = desc.format
            name = _tracepoint(desc)
            if getattr(fmt, "bare", False):  # a .dat capture's: no system
                provider, event = "", name
            else:  # perf-decode's split: "cpu-clock" is "cpu-clock:", with no event
                provider, _, event = name.partition(":")
                name = f"{provider}:{event}"
            offset = getattr(fmt, "eventheader_offset", None) if fmt is not None else None
            hit = (name, provider, event, fmt, offset)
            self._descs[desc] = hit
        return hit

    def tracefs_fields(self, fmt: Any, common: bool = False) -> list[FieldFormat]:
        """The fields of a tracefs format as this reads them (``common``: the common
        fields after them)."""
        fields = [*fmt.fields, *getattr(fmt, "common_fields", ())] if common else fmt.fields
        return [decimal_pid(f) for f in fields] if self.decimal_pids else fields

    def _formats(self, desc: Any) -> list[FieldFormat]:
        """:meth:`tracefs_fields` of ``desc``'s format, made once."""
        hit = self._field_formats.get(desc)
        if hit is None:
            hit = self._field_formats[desc] = self.tracefs_fields(desc.format)
        return hit

    def _readers(self, desc: Any) -> list[tuple[str, Callable[[Any], object]]]:
        """The value readers of the fields of ``desc``'s tracefs format (``value_reader``)."""
        hit = self._fields.get(desc)
        if hit is None:
            hit = self._fields[desc] = [(f.name, value_reader(f, self.big_endian))
                                        for f in self._formats(desc)]
        return hit

    def _json_renderer(self, desc: Any) -> Callable[[bytes], bytes]:
        """The members of the typed JSON object of ``desc``'s tracefs fields
        (``typed_json_renderer``, or the typed values' Python rule), made once."""
        hit = self._json_renderers.get(desc)
        if hit is None:
            readers = self._readers(desc)

            def typed(raw: bytes) -> bytes:
                return json_members(Fields([(name, read(raw)) for name, read in readers]))
            hit = typed_json_renderer(self._formats(desc), self.big_endian, typed) or typed
            self._json_renderers[desc] = hit
        return hit

    def _encoded(self, names: frozenset[str]) -> frozenset[bytes]:
        hit = self._names.get(names)
        if hit is None:
            hit = self._names[names] = frozenset(n.encode("utf-8", "surrogateescape")
                                                 for n in names)
        return hit

    def identify(self, sample: Any) -> tuple[str, str, int | None, int | None]:
        """``(provider, event, level, keyword)`` of a sample as :meth:`convert` shows it,
        without decoding its fields (level and keyword None for a plain tracepoint: a
        malformed EventHeader event is one, as its data is checked whole)."""
        name, provider, event, fmt, eh_offset = self.describe(sample.desc)
        if eh_offset is not None:
            try:
                parts = self.decoder.decode_parts(fmt.name, sample.raw, eh_offset, _NONE)
            except EventHeaderError:
                parts = None
            if parts is not None:
                layout = parts[0]
                return (layout.name.provider, layout.parsed.event_name, layout.header[5],
                        layout.name.keyword)
        return provider, event, None, None

    def convert(self, sample: Any, only: frozenset[str] | None = None,
                fields_json: bool = False) -> Event:
        """The event of one :class:`ehtool.perfdata.Sample`; ``only``: just the
        top-level fields of these names (filters decode no more than they test);
        ``fields_json`` (with ``only`` None): the fields as :attr:`Event.fields_json` alone
        (rendered in C where it can be), not typed."""
        name, provider, event, fmt, eh_offset = self.describe(sample.desc)
        meta: dict[str, Any] = {"time": sample.time, "cpu": sample.cpu, "pid": sample.pid,
                                "tid": sample.tid}
        if self.comm_of is not None and sample.tid is not None:
            meta["comm"] = self.comm_of(sample.tid)
        raw = sample.raw
        error = text = None
        as_json = fields_json and only is None
        if eh_offset is not None:
            parts, error = self._eventheader(fmt, raw, eh_offset, as_json,
                                             None if only is None else self._encoded(only))
            if parts is not None:
                layout, act, fields = parts
                if as_json:
                    fields, text = _NO_FIELDS, object_text(fields)
                meta.update(layout.meta)
                if act:
                    meta["activity"], meta["related_activity"] = activity_ids(act)
                return Event(layout.title, layout.name.provider, layout.parsed.event_name,
                             sample.time, meta, fields, sample.desc.name, True,
                             self._utc(sample.time), None, sample.offset, text)
        if fmt is None:
            fields = Fields([("raw", bytes(raw))])
        elif as_json:
            text, fields = self._tracefs_json(sample), _NO_FIELDS
        elif only is None:
            fields = Fields([(name, read(raw)) for name, read in self._readers(sample.desc)])
        else:
            fields = Fields([(f.name, field_value(f, raw, self.big_endian))
                             for f in self._formats(sample.desc) if f.name in only])
        return Event(name, provider, event, sample.time, meta, fields,
                     _tracepoint(sample.desc), False, self._utc(sample.time), error,
                     sample.offset, text)

    def row(self, sample: Any, with_fields: bool = True) -> tuple:
        """``event_row(self.convert(sample, None if with_fields else frozenset(),
        with_fields), with_fields)`` without the event: the columnar writers' way
        (``with_fields`` False: the fields are not decoded, only checked, and their value
        is None). A test holds the two equal on every recording the tests have."""
        name, provider, event, fmt, eh_offset = self.describe(sample.desc)
        error = None
        if eh_offset is not None:
            parts, error = self._eventheader(fmt, sample.raw, eh_offset, with_fields, _NONE)
            if parts is not None:
                layout, act, members = parts
                activity, related = activity_ids(act) if act else (None, None)
                return self._filled(_layout_template(layout), sample,
                                    None if activity is None else str(activity),
                                    None if related is None else str(related),
                                    object_text(members) if with_fields else None)
        if fmt is not None:
            return self._filled(_template(provider, event, error=error), sample, None, None,
                                self._tracefs_json(sample) if with_fields else None)
        only = None if with_fields else frozenset()
        return event_row(self.convert(sample, only, with_fields), with_fields)

    def row_maker(self, with_fields: bool = True) -> Callable[[list], list[tuple]]:
        """``rows(batch)``: :meth:`row` of each sample of a list, in C where the events'
        layouts are known (the same templates; a test holds the two equal)."""
        native = speedups.load()
        if native is None:
            return lambda batch: [self.row(sample, with_fields) for sample in tuple(batch)]
        from ehtool.perfdata.records import Sample

        def spec(desc: Any) -> tuple | None:
            _, provider, event, fmt, eh_offset = self.describe(desc)
            if eh_offset is not None:
                return 1, fmt.name, eh_offset
            if fmt is None:
                return None
            return 0, _template(provider, event), (self._json_renderer(desc) if with_fields
                                                   else None)

        def entry(layout: EventLayout) -> tuple | None:
            if layout.parsed.read is None:  # (past the field limit: the fallback says so)
                return None
            fn = self.decoder.typed_json_render(layout) if with_fields else layout.parsed.check
            return None if fn is None else (_layout_template(layout), fn)

        return native.RowMaker(
            self.decoder.layout_cache, spec, entry,
            lambda sample: self.row(sample, with_fields), _SAMPLE_SLOTS,
            self.clock, self.comm_of, EventHeaderError, Sample, with_fields).rows

    def _filled(self, template: tuple, sample: Any, activity: str | None,
                related: str | None, fields: str | None) -> tuple:
        """``template`` with the sample's values in _SAMPLE_SLOTS (as RowMaker fills it)."""
        row = list(template)
        tid = sample.tid
        comm = self.comm_of(tid) if self.comm_of is not None and tid is not None else None
        for i, v in zip(_SAMPLE_SLOTS, (self._utc(sample.time), sample.time, sample.cpu,
                                        sample.pid, tid, comm, activity, related, fields,
                                        sample.offset), strict=True):
            row[i] = v
        return tuple(row)

    def _eventheader(self, fmt: Any, raw: Any, eh_offset: int, as_json: bool,
                     only: frozenset[bytes] | None) -> tuple[tuple | None, str | None]:
        """``(parts, None)`` of an EventHeader tracepoint's sample (the decoder's
        ``typed_json_parts`` with ``as_json``, else its ``decode_parts`` of ``only``);
        ``(None, None)`` when its data is not EventHeader, ``(None, why)`` when it is
        malformed: either way it is shown as the plain tracepoint."""
        try:
            if as_json:
                return self.decoder.typed_json_parts(fmt.name, raw, eh_offset), None
            return self.decoder.decode_parts(fmt.name, raw, eh_offset, only), None
        except EventHeaderError as exc:
            return None, str(exc)

    def _utc(self, time: int | None) -> int | None:
        """A session-clock time as ns since the epoch (UTC), when the file has clock data."""
        off = self.clock.offset_ns if self.clock is not None else None
        return time + off if off is not None and time is not None else None

    def _tracefs_json(self, sample: Any) -> str:
        """The JSON object of the tracefs fields of a sample whose format is known."""
        raw = sample.raw
        return object_text(self._json_renderer(sample.desc)(
            raw if type(raw) is bytes else bytes(raw)))


def _tracepoint(desc: Any) -> str:
    """The tracepoint name of ``desc``'s samples: EVENT_DESC's, else its format's
    ``system:name``."""
    fmt = desc.format
    return desc.name or (f"{fmt.system}:{fmt.name}" if fmt is not None else "")


class EventFile:
    """An open perf.data file whose iteration yields :class:`Event` objects.

    Iteration ends with the last complete record; a truncated or corrupt input
    then raises :class:`ehtool.errors.InputError` (the events before it were yielded).
    One iteration at a time: a second one while another is under way raises
    RuntimeError (open the file again to read it twice at once); a file-mode input may
    be iterated again afterwards.
    """

    def __init__(self, path: str | os.PathLike, *, order: str = "time",
                 on_error: Callable[[InputError], None] | None = None,
                 fields: frozenset[str] | None = None,
                 part: tuple[int, int] | None = None, decimal_pids: bool = False,
                 fields_json: bool = False) -> None:
        from ehtool.perfdata import PerfDataFile

        if order not in ("time", "file"):
            raise ValueError(f"order must be 'time' or 'file', not {order!r}")
        if part is not None and not 0 <= part[0] < part[1]:
            raise ValueError(f"part {part[0]} of {part[1]}")
        self.path = os.fspath(path)
        self.order = order
        #: an iteration is under way (the reader's state is one per file)
        self._iterating = False
        self.fields = fields
        #: the fields as :attr:`Event.fields_json` (see ``SampleConverter.convert``)
        self.fields_json = fields_json and fields is None
        self.perf = PerfDataFile.open(self.path, on_error=on_error)
        self.empty = False
        if part is not None:
            self._restrict(*part)
        self.converter = SampleConverter(big_endian=self.perf.big_endian,
                                         comm_of=self.perf.session.comm,
                                         clock=self.perf.session.clock,
                                         decimal_pids=decimal_pids)

    def _restrict(self, k: int, n: int) -> None:
        """Only part ``k`` of ``n`` (file mode): the records between the FINISHED_ROUND
        split points of ``-j n`` (an empty part where two points coincide). Parts
        0..n-1 together are the whole file, in the same order."""
        if not 0 <= k < n:
            raise ValueError(f"part {k} of {n}")
        if n == 1:
            return
        perf = self.perf
        if not perf.splittable:
            if k:
                self.empty = True  # a pipe is not split: part 0 is all of it
            return
        targets = perf.split_targets(n)
        for target in targets[:k]:  # walk the chain of split points as -j n's workers do
            split = perf.split_point(target, threads=True)
            if split is None:
                self.empty = True
                return
            perf.restrict(split, perf.data_range[1])
        if k < n - 1:
            perf.stop_at_split(targets[k])

    def __iter__(self) -> Iterator[Event]:
        convert, fields, as_json, perf = (self.converter.convert, self.fields,
                                          self.fields_json, self.perf)

        def events() -> Iterator[Event]:
            for sample in perf.samples(order=self.order):
                if perf.closed:  # (the samples of a batch read before the close)
                    raise ValueError(f"{self.path}: the EventFile was closed during its "
                                     "iteration")
                yield convert(sample, fields, as_json)
        return self._iteration(events)

    def rows(self) -> Iterator[tuple]:
        """The events as rows (:func:`event_row`: what the columnar writers store), the
        fields as their typed JSON object's text when the file was opened for all of
        them (``fields=None``; with a selection of fields, None); faster than the
        events."""
        return (row for batch in self.row_batches() for row in batch)

    def row_batches(self) -> Iterator[list[tuple]]:
        """:meth:`rows` a list at a time (as the reader's batches come: any length)."""
        rows = self.converter.row_maker(self.fields is None)
        return self._iteration(lambda: (rows(batch) for batch in self.perf.batches(
            self.order, nonsample=False)))

    def filtered(self, selection: Any) -> Iterator[Event]:
        """The events ``selection`` keeps: ``ehtool decode``'s filter options
        (:class:`ehtool.decode.filters.Selection`: ``bind``, ``filter_batch``), checked
        on the samples a batch at a time, as JSON output checks them, before they
        become events."""
        convert, fields, as_json = self.converter.convert, self.fields, self.fields_json

        def kept() -> Iterator[Event]:
            selection.bind(self.perf, decimal_pids=self.converter.decimal_pids)
            for batch in self.perf.batches(self.order, nonsample=False):
                for sample in selection.filter_batch(batch):
                    yield convert(sample, fields, as_json)
        return self._iteration(kept)

    def _iteration(self, items: Callable[[], Iterator[Any]]) -> Iterator[Any]:
        """``items()`` as the one iteration of the file under way (none of a part that is
        empty): from its first step, ValueError once closed, RuntimeError while another
        one is under way (each reads the file with the same reader: open it again
        instead)."""
        if self.perf.closed:
            raise ValueError(f"{self.path}: the EventFile is closed")
        if self._iterating:
            raise RuntimeError(f"{self.path}: an EventFile is read by one iteration at a "
                               "time (finish or close the other, or open the file again)")
        self._iterating = True
        try:
            if not self.empty:
                yield from items()
        finally:
            self._iterating = False

    def close(self) -> None:
        self.perf.close()

    def __enter__(self) -> EventFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open(path: str | os.PathLike, *, order: str = "time",  # noqa: A001 (ehtool.open)
         on_error: Callable[[InputError], None] | None = None,
         fields: Iterable[str] | None = None,
         part: tuple[int, int] | None = None, decimal_pids: bool = False,
         fields_json: bool = False) -> EventFile:
    """Open a perf.data file (file or pipe mode; ``"-"``: standard input) for typed events.

    ``order``: ``"time"`` (perf-decode's order) or ``"file"``. ``on_error`` receives
    recoverable problems (an unknown sample id...); without it the first is raised
    at the end. ``fields``: decode only the top-level fields of these names (``()``:
    none, for the names and meta alone; every event is still checked whole); None: all.
    ``part=(k, n)``: only the k-th of n parts of a file-mode file, split where ``-j n``
    splits it (parts 0..n-1 in turn give every event once, in the same order).
    ``decimal_pids``: tracefs ``pid_t`` fields as signed ints, as ``decode
    --decimal-pids`` shows them (else :class:`ehtool.values.shown.Hex`, as perf-decode
    shows them: ``0x12``). ``fields_json`` (with ``fields`` None): the fields as the JSON
    text of the ``fields`` column (:attr:`Event.fields_json`, rendered in C), not typed
    values.
    """
    return EventFile(path, order=order, on_error=on_error,
                     fields=None if fields is None else frozenset(fields), part=part,
                     decimal_pids=decimal_pids, fields_json=fields_json)
