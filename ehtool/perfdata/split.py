"""Splitting a file-mode data section for a second process: just after a
FINISHED_ROUND past the middle, so that both halves decode independently and their
outputs concatenate in perf-decode's order. One rule (:func:`split_here`) serves the
second process, which walks to the split point, and the first, which stops there."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from ehtool.perfdata.counts import RecordCounts
from ehtool.perfdata.grammar import RecordType, grammar_for
from ehtool.perfdata.hotpath import HEADER_SIZE, header_struct
from ehtool.perfdata.rounds import sort_by_time
from ehtool.speedups import load as load_speedups

_R = RecordType
#: bytes walked between two releases of the mapping
_WINDOW = 1 << 20
#: records after which the data cannot be split: AUXTRACE's payload is not made of
#: records, and compressed records need the zstd stream from its start
NO_SPLIT = frozenset((int(_R.AUXTRACE), int(_R.COMPRESSED), int(_R.COMPRESSED2)))
#: records in the data section that change how later samples read (attrs, ids, names,
#: formats): the second process applies them while it looks for its split point
METADATA = frozenset(int(r) for r in (_R.HEADER_ATTR, _R.HEADER_TRACING_DATA, _R.ID_INDEX,
                                      _R.EVENT_UPDATE, _R.HEADER_FEATURE))
_FINISHED_ROUND = int(_R.FINISHED_ROUND)


#: records that name threads (COMM, FORK): applied on the way when the part after the
#: split shows thread names (``split_point(threads=True)``)
THREADS = frozenset((int(_R.COMM), int(_R.FORK)))
#: record types the walk to a split point stops at (all others are stepped over)
_STOPS = bytes(1 if t in METADATA or t in NO_SPLIT or t == _FINISHED_ROUND else 0
               for t in range(256))
_STOPS_THREADS = bytes(1 if stop or t in THREADS else 0 for t, stop in enumerate(_STOPS))


def _hop(buf: Any, pos: int, end: int, big_endian: bool, stops: bytes) -> tuple[int, int, int]:
    """From ``pos``, step over records until one whose type is in ``stops`` (a 256-byte
    table; types >= 256 stop too) or whose size is below a header's: ``(pos, type, size)``, or
    ``(pos, -1, 0)`` at ``end``. ``_speedups.hop`` does the same in C."""
    header = _header(big_endian)
    while pos + HEADER_SIZE <= end:
        rtype, _misc, size = header(buf, pos)
        if size < HEADER_SIZE or rtype >= 256 or stops[rtype]:
            return pos, rtype, size
        pos += size
    return pos, -1, 0


@functools.cache
def _header(big_endian: bool) -> Callable[[Any, int], tuple[int, int, int]]:
    return header_struct(grammar_for(big_endian)).unpack_from


def split_here(rtype: int, after: int, middle: int, end: int) -> bool | None:
    """The split rule, for a record of type ``rtype`` that ends at ``after``: True to
    split just after it, None when no split can follow, False to go on."""
    if rtype in NO_SPLIT:
        return None
    return rtype == _FINISHED_ROUND and middle <= after < end


class Split:
    """The splitting part of :class:`ehtool.perfdata.PerfDataFile` (its state lives there)."""

    def split_point(self, target: int | None = None, threads: bool = False) -> int | None:
        """The offset just after the first FINISHED_ROUND that ends at or after ``target``
        (default: the middle of the data), walking from the start of the data (file
        mode), so that the parts before and after decode independently and concatenate
        in perf-decode's order; None when there is no such point. The metadata records
        on the way are applied (the part after needs them); with ``threads`` also COMM
        and FORK (thread names)."""
        mm = self._mm
        if mm is None:
            return None
        speedups = load_speedups()
        hop = speedups.hop if speedups is not None else _hop
        pos, end = self._data_start, self._data_end
        middle = pos + (end - pos) // 2 if target is None else target
        stops, applied = (_STOPS_THREADS, METADATA | THREADS) if threads else (_STOPS, METADATA)
        self._round_names = []
        released = pos
        while pos + HEADER_SIZE <= end:
            if pos - released > _WINDOW * 8:  # keep resident memory flat while walking
                self._release(released, pos)
                released = pos
            pos, rtype, size = hop(mm, pos, min(end, pos + _WINDOW * 8), self.big_endian,
                                   stops)
            if rtype < 0:  # the end of this window
                continue
            if size < HEADER_SIZE:
                return None
            if rtype in applied:  # the next part needs what they say (ids, names...)
                pos = self._apply_quietly(rtype, mm, pos, size, end)
                if pos < 0:
                    return None
            else:
                pos += size
            if rtype == _FINISHED_ROUND and self._round_names:  # (thread names: see below)
                self._name_now(sort_by_time(self._round_names))
                self._round_names = []
            verdict = split_here(rtype, pos, middle, end)
            if verdict is None:
                return None
            if verdict:
                self._release(self._data_start, pos)
                return pos
        self._release(self._data_start, pos)
        return None

    def _apply_quietly(self, rtype: int, buf: Any, pos: int, size: int, end: int) -> int:
        """Apply a metadata record while looking for the split point: its problems are
        the first core's to report (it reads the same record), so none are kept here."""
        saved = self.counts, self.lost, self.on_error, self._fatal, self._named_out
        self.counts, self.lost = dict(self.counts), RecordCounts()
        self.on_error = lambda err: None
        out: list = []
        try:
            return self._other(rtype, buf, pos, size, end, 0, out, [])
        finally:
            self.counts, self.lost, self.on_error, self._fatal, self._named_out = saved
            # a thread's name applies at the round's end, the round's names in time order,
            # as one process applies them (so a part starts with -j 1's names)
            self._round_names += out

    def stop_at_split(self, target: int | None = None) -> None:
        """Make the next iteration end where :meth:`split_point` (same ``target``) would
        cut, without walking there first: after the first FINISHED_ROUND that ends at or
        after ``target`` (nowhere when an AUXTRACE or compressed record comes first, as
        split_point gives up). One process decodes a part this way while the next one
        finds the split itself."""
        start, end = self._data_start, self._data_end
        self._stop_middle = start + (end - start) // 2 if target is None else target

    def split_targets(self, parts: int) -> list[int]:
        """Where ``parts`` equal parts of the data would start (after the first): the
        targets of :meth:`split_point` for ``parts`` processes."""
        start, end = self._data_start, self._data_end
        return [start + (end - start) * k // parts for k in range(1, parts)]

    @property
    def data_range(self) -> tuple[int, int]:
        """``(start, end)`` byte offsets of the records this file reads."""
        return self._data_start, self._data_end

    def restrict(self, start: int, end: int) -> None:
        """Read only the records in ``[start, end)`` of the data section (file mode)."""
        if self._mm is None or not self._data_start <= start <= end <= self._data_end:
            raise ValueError("restrict() needs a file-mode input and a range inside its data")
        self._data_start, self._data_end = start, end
