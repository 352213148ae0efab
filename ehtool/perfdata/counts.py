"""Counting a recording: samples and lost events, and how far a record extends, one rule
for every reader (a parsed record from :class:`PerfDataFile`, or the raw bytes of a
pipe-mode stream going by)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ehtool.perfdata.grammar import ReadFormat, RecordType, grammar_for
from ehtool.perfdata.hotpath import body_offset, field_offset

_SAMPLE, _LOST, _LOST_SAMPLES = (int(RecordType.SAMPLE), int(RecordType.LOST),
                                 int(RecordType.LOST_SAMPLES))
_TRACING_DATA, _AUXTRACE = int(RecordType.HEADER_TRACING_DATA), int(RecordType.AUXTRACE)
_READ_LOST = int(ReadFormat.LOST)


def _offset(rtype: int, name: str) -> int:
    return body_offset(grammar_for(False), rtype, name)  # (the same in both byte orders)


#: where the size of the data that follows HEADER_TRACING_DATA and AUXTRACE is
_TRACING_SIZE_AT = _offset(_TRACING_DATA, "size")
_AUXTRACE_SIZE_AT = _offset(_AUXTRACE, "size")


def payload_size(rtype: int, buf: Any, pos: int, size: int,
                 u32: Callable[[Any, int], tuple[int]],
                 u64: Callable[[Any, int], tuple[int]]) -> int | None:
    """Bytes that follow the record at ``pos`` beyond its header's size: the tracing data
    after HEADER_TRACING_DATA (its u32 size; the record is 12 bytes in older perf, 16 with
    a pad in perf 6.x), AUXTRACE's data (its u64 size); 0 for every other record; None
    when the record is too short to hold the size."""
    if rtype == _TRACING_DATA:
        return u32(buf, pos + _TRACING_SIZE_AT)[0] if size >= _TRACING_SIZE_AT + 4 else None
    if rtype == _AUXTRACE:
        return u64(buf, pos + _AUXTRACE_SIZE_AT)[0] if size >= _AUXTRACE_SIZE_AT + 8 else None
    return 0


#: (record type, offset of its u64 "lost" count, the least record size that holds it)
_LOST_AT = {rtype: (at, at + 8) for rtype, at in ((_LOST, _offset(_LOST, "lost")),
                                                  (_LOST_SAMPLES, _offset(_LOST_SAMPLES, "lost")))}
#: the records that say how many events were lost
LOST_TYPES = frozenset(_LOST_AT)
_HEADER_ATTR = int(RecordType.HEADER_ATTR)


#: where a HEADER_ATTR record's ``attr.read_format`` is
_READ_FORMAT_AT = (_offset(_HEADER_ATTR, "attr")
                   + field_offset(grammar_for(False).attr, "read_format"))


@dataclass
class RecordCounts:
    """Samples and lost events of a recording (perf's PERF_RECORD_LOST: ring buffer
    overruns; LOST_SAMPLES: samples the kernel dropped).

    With ``read_format`` LOST in an attr (perf 6.0+ on Linux 6.0+), perf writes at the
    end of the recording a LOST_SAMPLES record per event from the kernel's count of its
    lost samples, which includes the ring buffer overruns that the LOST records report:
    both say the same loss (measured: 16,885 and 16,885; 14,045 and 14,555), and
    ``lost`` is the larger (the LOST records alone when perf was killed before it wrote
    the others). Without it LOST_SAMPLES only come from the kernel for samples the
    hardware dropped, a loss of its own, and ``lost`` is the sum."""

    samples: int = 0
    lost_events: int = 0  # sum of PERF_RECORD_LOST.lost
    lost_samples: int = 0  # sum of PERF_RECORD_LOST_SAMPLES.lost
    lost_records: int = 0
    #: an attr has read_format LOST: LOST_SAMPLES include the LOST records' loss
    counters: bool = False
    errors: list[str] = field(default_factory=list)

    @property
    def lost(self) -> int:
        if self.counters:
            return max(self.lost_events, self.lost_samples)
        return self.lost_events + self.lost_samples

    def add_bytes(self, rtype: int, buf: Any, pos: int, size: int,
                  u64: Callable[[Any, int], tuple[int]]) -> None:
        """Count the record at ``buf[pos:pos + size]`` (``u64``: the file's byte order)."""
        if rtype == _SAMPLE:
            self.samples += 1
            return
        if rtype == _HEADER_ATTR:  # (pipe mode: the attrs come as records)
            if size >= _READ_FORMAT_AT + 8 and u64(buf, pos + _READ_FORMAT_AT)[0] & _READ_LOST:
                self.counters = True
            return
        at = _LOST_AT.get(rtype)
        if at is not None and size >= at[1]:
            self._lost(rtype, u64(buf, pos + at[0])[0])

    def _lost(self, rtype: int, count: int) -> None:
        self.lost_records += 1
        if rtype == _LOST:
            self.lost_events += count
        else:
            self.lost_samples += count
