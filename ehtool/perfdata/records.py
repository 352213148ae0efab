"""Objects the record stream yields: samples, other records, event descriptions."""

from __future__ import annotations

from typing import Any, NamedTuple


class EventDesc:
    """One recorded event (one ``perf_event_attr``): what its samples are.

    ``name`` is ``"system:event"`` from EVENT_DESC/EVENT_UPDATE, else from the
    format file; ``format`` is the parsed tracefs format (an ``EventFormat``)
    or None; ``ids`` are the sample ids perf assigned to it. Descs compare and
    hash by identity, so they can key caches.
    """

    __slots__ = ("attr", "ids", "name", "format", "format_text", "index", "reader",
                 "sample_type", "__weakref__")

    def __init__(self, attr: Any, ids: list[int], name: str = "", index: int = 0) -> None:
        self.attr = attr
        self.ids = ids
        self.name = name
        self.format: Any = None
        #: ``(system, text)`` of its format file when known
        self.format_text: tuple[str, str] | None = None
        self.index = index
        self.sample_type: int = attr.sample_type
        #: set by the reader: ``reader(buf, pos, size) -> Sample`` (see hotpath.py)
        self.reader: Any = None

    @property
    def id(self) -> int | None:
        """The first sample id, or None when perf recorded none."""
        return self.ids[0] if self.ids else None

    def __repr__(self) -> str:
        return f"EventDesc({self.name or '?'!r}, type={self.attr.type}, config={self.attr.config})"


class Sample(NamedTuple):
    """One PERF_RECORD_SAMPLE: the hot-path object (only what a decoder needs).

    ``time``, ``cpu``, ``pid``/``tid`` are None when the attr's sample_type
    lacks them; ``raw`` is the RAW payload as bytes (perf's trailing padding
    included); ``offset`` is the record's byte offset in the input. A tuple, so
    the record walk makes one with a single ``tuple.__new__``.
    """

    time: int | None
    cpu: int | None
    pid: int | None
    tid: int | None
    raw: bytes
    desc: EventDesc
    offset: int

    is_sample = True  # (a class attribute, not a field)

    def __repr__(self) -> str:
        return (f"Sample({self.desc.name!r}, time={self.time}, cpu={self.cpu}, pid={self.pid}, "
                f"tid={self.tid}, raw={len(self.raw)}B, offset={self.offset:#x})")


class Record:
    """A record other than a sample (COMM, FORK, EXIT, LOST, LOST_SAMPLES, ...).

    ``pid``/``tid``/``time``/``cpu`` come from the ``sample_id_all`` trailer
    (None when absent); ``body`` is the construct-parsed body (None for types
    without a grammar); ``data`` the record's bytes.
    """

    __slots__ = ("type", "misc", "offset", "data", "body", "pid", "tid", "time", "cpu", "desc")

    is_sample = False

    def __init__(self, rtype: int, misc: int, offset: int, data: bytes, body: Any,
                 pid: int | None, tid: int | None, time: int | None, cpu: int | None,
                 desc: EventDesc | None) -> None:
        self.type = rtype
        self.misc = misc
        self.offset = offset
        self.data = data
        self.body = body
        self.pid = pid
        self.tid = tid
        self.time = time
        self.cpu = cpu
        self.desc = desc

    @property
    def type_name(self) -> str:
        from ehtool.perfdata.grammar import RecordType

        try:
            return RecordType(self.type).name
        except ValueError:
            return f"TYPE_{self.type}"

    def __repr__(self) -> str:
        return (f"Record({self.type_name}, time={self.time}, pid={self.pid}, tid={self.tid}, "
                f"offset={self.offset:#x})")
