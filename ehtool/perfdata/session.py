"""Session state: thread names from COMM/FORK records and the session clock.

With CLOCK_DATA (``perf record -k CLOCK``), a sample time converts to UTC as
``wall_ns = time + (wall_clock_ns - clockid_time_ns)`` and prints as
``"YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ"``; without it perf-decode prints the bare
JSON number ``<sec>.<9-digit ns>`` of the session clock.
"""

from __future__ import annotations

from ehtool.values.strings import utf8_text
from ehtool.values.times import format_utc_seconds

CLOCKID_UNKNOWN = 0xFFFFFFFF
_BILLION = 1_000_000_000


class SessionClock:
    """Converts session-clock times (ns) to perf-decode's JSON time values."""

    def __init__(self) -> None:
        self.clockid: int | None = None
        self.resolution_ns: int | None = None  # HEADER_CLOCKID
        self.wall_clock_ns: int | None = None
        self.clockid_time_ns: int | None = None
        self.offset_ns: int | None = None  # None: UTC unknown
        #: cache: the last whole UTC second formatted and its ``b'"YYYY-MM-DDTHH:MM:SS.'``
        self.last_second: int | None = None
        self.last_prefix = b""

    def set_clock_data(self, clockid: int, wall_clock_ns: int, clockid_time_ns: int) -> None:
        self.clockid = clockid
        self.wall_clock_ns = wall_clock_ns
        self.clockid_time_ns = clockid_time_ns
        self.offset_ns = None if clockid == CLOCKID_UNKNOWN else wall_clock_ns - clockid_time_ns
        self.last_second = None

    @property
    def utc_known(self) -> bool:
        return self.offset_ns is not None

    def time_json(self, time: int) -> bytes:
        """The JSON value of meta ``time`` for a sample time (bytes, quoted when UTC)."""
        if self.offset_ns is None:
            sec, ns = divmod(time, _BILLION)
            return b"%d.%09d" % (sec, ns)
        sec, ns = divmod(time + self.offset_ns, _BILLION)
        prefix = self.last_prefix if sec == self.last_second else self.prefix_for(sec)
        return prefix + b'%09dZ"' % ns

    def prefix_for(self, sec: int) -> bytes:
        """``b'"YYYY-MM-DDTHH:MM:SS.'`` of a UTC second (becomes ``last_prefix``); the
        formatter's hot path appends ``b'%09dZ"' % ns`` itself."""
        self.last_prefix = b'"' + format_utc_seconds(sec).encode("ascii") + b"."
        self.last_second = sec
        return self.last_prefix

    def time_text(self, time: int) -> str:
        """``time_json`` without JSON quotes (for messages and ``--nonsample``)."""
        return self.time_json(time).decode("ascii").strip('"')


#: the idle task's name, as perf shows it (no COMM record names thread 0)
IDLE_COMM = "swapper"


class Session:
    """What a record stream has taught so far: thread names and the clock. A name is
    each thread's as of the records read so far in time order (the reader applies COMM
    and FORK records where they come among the samples it hands on)."""

    def __init__(self) -> None:
        self.clock = SessionClock()
        self._comm: dict[int, str] = {0: IDLE_COMM}
        self.time_json = self.clock.time_json

    def comm(self, tid: int) -> str | None:
        """The thread's name from COMM (or inherited at FORK), if seen."""
        return self._comm.get(tid)

    @property
    def comms(self) -> dict[int, str]:
        """Thread id -> name: the live dict :meth:`comm` reads (do not change it)."""
        return self._comm

    def set_comm(self, tid: int, comm: str) -> None:
        """Name a thread; ``comm`` as the record's bytes decoded as Latin-1 (the grammar's
        rule), shown as UTF-8 text (invalid bytes as their Latin-1 characters) as perf
        shows it."""
        if not comm.isascii():
            comm = utf8_text(comm.encode("latin-1"))
        self._comm[tid] = comm

    def fork(self, parent_tid: int, child_tid: int) -> None:
        name = self._comm.get(parent_tid)
        if name is not None:
            self._comm[child_tid] = name
