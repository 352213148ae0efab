"""perf.data reading (file and pipe mode) and writing, for ``ehtool decode``.

::

    from ehtool.perfdata import PerfDataFile
    with PerfDataFile.open("perf.data") as f:  # or "-", or open_stream(sys.stdin.buffer)
        for s in f.samples(order="time"):      # "time" (perf-decode) or "file"
            s.time, s.cpu, s.pid, s.tid        # ints, or None when not recorded
            s.raw                              # RAW payload (bytes, perf's padding included)
            s.desc.name, s.desc.format         # "sched:sched_switch", EventFormat or None
            s.offset                           # byte offset of the record (for messages)
        f.session.time_json(s.time)  # b'"2024-03-28T00:45:12.640913120Z"' (bare number w/o -k)
        f.session.comm(tid)          # thread name from COMM records, or None
        f.info.hostname, f.info.osrelease, f.info.perf_version, f.info.clock_data, ...
        f.big_endian, f.long_size, f.descs, f.counts  # records per type, so far
        f.lost.lost                  # events lost (LOST and LOST_SAMPLES records), so far

Iteration yields every complete record, then raises ``ehtool.errors.InputError``
(file and offset in the message) when the input is truncated or corrupt, so a
caller can write what was decoded and then report. Recoverable problems
(unknown sample id, a format that does not parse) go to ``on_error`` when given
to ``open``, else the first is raised at the end. ``f.records(order,
nonsample=True)`` also yields the other records (COMM, FORK, EXIT, LOST,
LOST_SAMPLES, ...) as :class:`Record` objects with ``pid/tid/time/cpu`` from
their ``sample_id_all`` trailer.

Layers: ``grammar`` (construct definitions, one set per byte order),
``tracing_data`` (the tracefs format blob), ``hotpath`` (struct readers derived
from the grammar), ``reader``, ``session`` (comm and clock), ``writer``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

__all__ = ["EventDesc", "PerfDataFile", "PerfInfo", "Record", "Sample"]

if TYPE_CHECKING:
    from ehtool.perfdata.reader import PerfDataFile, PerfInfo
    from ehtool.perfdata.records import EventDesc, Record, Sample


def __getattr__(name: str):
    # lazy: importing the package must not pull in construct (light CLI start-up)
    if name in ("PerfDataFile", "PerfInfo"):
        from ehtool.perfdata import reader

        return getattr(reader, name)
    if name in ("EventDesc", "Record", "Sample"):
        from ehtool.perfdata import records

        return getattr(records, name)
    raise AttributeError(name)
