"""How meta ``time`` is shown (``ehtool decode --time``).

=======  ===============================================================================
perf     perf-decode's: a UTC string ``"2024-03-28T00:45:12.640913120Z"`` when the file has
         clock data (``perf record -k CLOCK``), else the session clock's seconds (a number)
iso      the same, and a warning for a file without clock data
ns       integer nanoseconds: since the Unix epoch (UTC) with clock data, else of the
         session clock
rel      seconds since the first event printed (a number, ``0.000000000`` first)
delta    seconds since the previous event printed (a number, ``0.000000000`` first)
=======  ===============================================================================

``rel`` and ``delta`` depend on the events before: a file is decoded by one process.
"""

from __future__ import annotations

from typing import Any

from ehtool.speedups import TIME_DELTA, TIME_NS, TIME_PERF, TIME_REL

#: --time name -> the C Formatter's time_mode
TIME_MODES = {"perf": TIME_PERF, "iso": TIME_PERF, "ns": TIME_NS, "rel": TIME_REL,
              "delta": TIME_DELTA}

_BILLION = 1_000_000_000


def no_clock_warning(path: str) -> str:
    """``--time iso`` on a file without clock data: what the warning says."""
    return (f"{path}: no clock data (record with perf record -k monotonic): times are "
            "seconds of the session clock")


def seconds_json(ns: int) -> bytes:
    """``[-]sec.nnnnnnnnn`` of a signed nanosecond count."""
    sec, rest = divmod(abs(ns), _BILLION)
    return b"%s%d.%09d" % (b"-" if ns < 0 else b"", sec, rest)


class TimeFormat:
    """The meta time value of a non-ISO mode (``ns``, ``rel``, ``delta``); ``rel`` and
    ``delta`` keep the first or previous time of the events shown so far."""

    def __init__(self, mode: str, clock: Any) -> None:
        self.mode = TIME_MODES[mode]
        self.clock = clock  # SessionClock: offset_ns
        self._base: int | None = None

    def json(self, time: int) -> bytes:
        if self.mode == TIME_NS:
            return b"%d" % (time + (self.clock.offset_ns or 0))
        if self.mode == TIME_REL:
            if self._base is None:
                self._base = time
            return seconds_json(time - self._base)
        if self.mode == TIME_DELTA:
            base, self._base = self._base, time
            return seconds_json(0 if base is None else time - base)
        raise ValueError("TimeFormat is for the ns, rel and delta modes")
