"""Read perf.data files (mmap, constant memory) and pipe-mode streams (sequential).

:class:`PerfDataFile` parses the metadata (attrs, ids, features, tracing data)
at open in file mode, or as it arrives in pipe mode, and iterates the data
records in file order or in perf-decode's time order (samples sorted by time,
stably, within each FINISHED_ROUND). Errors are :class:`ehtool.errors.InputError`
naming the input and byte offset; a truncated or corrupt stream first yields
every complete record, then raises.
"""

from __future__ import annotations

import contextlib
import mmap
import operator
import os
import re
import struct
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, BinaryIO

import construct as c

from ehtool.errors import InputError, combined
from ehtool.perfdata.compression import Compression, compressed_data, zstd_decompressor
from ehtool.perfdata.grammar import (
    EVENT_UPDATE_NAME,
    FILE_HEADER_SIZE,
    PERF_TYPE_TRACEPOINT,
    PIPE_HEADER_SIZE,
    Feature,
    PerfGrammar,
    RecordType,
    SampleType,
    detect_byte_order,
    grammar_for,
)
from ehtool.perfdata.hotpath import (
    CorruptSample,
    make_run_scanner,
    make_sample_reader,
    make_trailer_reader,
)
from ehtool.perfdata.records import EventDesc, Record, Sample
from ehtool.perfdata.session import Session
from ehtool.perfdata.tracing_data import SIGNATURE as TRACING_SIGNATURE
from ehtool.perfdata.tracing_data import TracingData, parse_tracing_data

#: bytes scanned per batch in file mode; records read per pipe read
_WINDOW = 1 << 20
_PIPE_READ = 1 << 20

_R = RecordType
_SAMPLE = int(_R.SAMPLE)
# Only FINISHED_ROUND ends a time-sort group: perf-decode (LinuxTracepoints,
# tools/perf-decode.cpp) flushes its sorted map at FINISHED_ROUND and at the end of
# the input; at FINISHED_INIT PerfDataFile.cpp only re-reads EVENT_DESC.
_FLUSH_TYPES = frozenset((int(_R.FINISHED_ROUND),))
#: records after which the data cannot be split for a second process: AUXTRACE's payload
#: is not made of records, and compressed records need the zstd stream from the start
_NO_SPLIT = frozenset((int(_R.AUXTRACE), int(_R.COMPRESSED), int(_R.COMPRESSED2)))
#: records in the data section that change how later samples read (attrs, ids, names,
#: formats): the second core applies them while it looks for its split point
_METADATA = frozenset(int(r) for r in (_R.HEADER_ATTR, _R.HEADER_TRACING_DATA, _R.ID_INDEX,
                                       _R.EVENT_UPDATE, _R.HEADER_FEATURE))
_NAME_RE = re.compile(r"^name:\s*(\S+)", re.MULTILINE)


@dataclass
class PerfInfo:
    """Header and feature metadata of a recording (None when perf did not write it)."""

    hostname: str | None = None
    osrelease: str | None = None
    perf_version: str | None = None
    arch: str | None = None
    nrcpus_available: int | None = None
    nrcpus_online: int | None = None
    cpudesc: str | None = None
    cpuid: str | None = None
    total_mem_kb: int | None = None
    cmdline: list[str] | None = None
    clock_resolution_ns: int | None = None
    #: CLOCK_DATA: (clockid, wall_clock_ns, clockid_time_ns)
    clock_data: tuple[int, int, int] | None = None
    #: SAMPLE_TIME: (first, last) sample time
    sample_time: tuple[int, int] | None = None
    #: every feature's raw payload by feature id (unknown ones included)
    features: dict[int, bytes] = field(default_factory=dict)


def _time_key(item: Any) -> int:
    t = item.time
    return 0 if t is None else t


_by_time = operator.attrgetter("time")


def _sort_by_time(items: list) -> list:
    """Stable sort by time (None first, as 0), at C speed when every item has one."""
    saved = items[:]
    try:
        items.sort(key=_by_time)
    except TypeError:  # a None time: the comparison failed midway, start again
        items = saved
        items.sort(key=_time_key)
    return items


class PerfDataFile:
    """One perf.data input. Use :meth:`open` (path or ``-``) or :meth:`open_stream`.

    ``on_error`` receives recoverable problems (a sample with an unknown attr id, a
    format that does not parse, a corrupt sample) as they are met; without it,
    the first one is raised when iteration ends.
    """

    def __init__(self, name: str, big_endian: bool, *,
                 on_error: Callable[[InputError], None] | None = None) -> None:
        self.path = name
        self.big_endian = big_endian
        self.grammar: PerfGrammar = grammar_for(big_endian)
        self.on_error = on_error
        self.pipe_mode = False
        self.header: Any = None
        self.info = PerfInfo()
        self.session = Session()
        self.tracing: TracingData | None = None
        self.descs: list[EventDesc] = []
        #: record counts by type, filled while iterating
        self.counts: dict[int, int] = {}
        self._readers: dict[int, Callable] = {}  # sample id -> sample reader
        self._desc_by_id: dict[int, EventDesc] = {}
        self._id_at = -1  # sample id offset from the record start, -1 none
        self._nonsample_id_at = -1  # non-sample id offset from the record end, -1 none
        self._format_ids: dict[int, tuple[str, str]] = {}
        self._format_at: dict[int, int | None] = {}  # format ID -> absolute byte offset
        self._trailers: dict[int, Any] = {}
        self._deferred: list[InputError] = []
        self._want_records = False  # (set by each iteration)
        #: ``perf record -z``: bytes before and after decompression, the zstd stream
        self.compression = Compression()
        self._fatal: InputError | None = None
        self._event_desc_applied = False
        self._u64 = struct.Struct(self.grammar.endian + "Q").unpack_from
        self._u32 = struct.Struct(self.grammar.endian + "I").unpack_from
        self._hdr = struct.Struct(self.grammar.endian + "IHH").unpack_from
        self._hdr_id = struct.Struct(self.grammar.endian + "IHHQ").unpack_from
        self._run: Callable | None = None
        self._run_key: tuple | None = None
        self._file: BinaryIO | None = None
        self._mm: mmap.mmap | None = None
        self._stream: BinaryIO | None = None
        self._data_start = 0
        self._data_end = 0
        self._declared_end = 0
        self._consumed = False
        #: absolute offset up to which records have been read (for progress reports)
        self.position = 0
        self._stop_middle: int | None = None  # see stop_at_split()

    # -- opening ---------------------------------------------------------------

    @classmethod
    def open(cls, path: str | os.PathLike | BinaryIO, *,
             on_error: Callable[[InputError], None] | None = None) -> PerfDataFile:
        """Open a perf.data path; ``-`` or a binary stream reads pipe mode sequentially."""
        if path == "-":
            return cls.open_stream(sys.stdin.buffer, "stdin", on_error=on_error)
        if not isinstance(path, (str, bytes, os.PathLike)):
            return cls.open_stream(path, getattr(path, "name", "stream"), on_error=on_error)
        name = os.fsdecode(path)
        try:
            f = open(path, "rb")  # noqa: SIM115 - owned by the PerfDataFile
        except OSError as exc:
            raise InputError(f"cannot open: {exc.strerror or exc}", name) from None
        try:
            return cls._open_file(f, name, on_error)
        except BaseException:
            f.close()
            raise

    @classmethod
    def open_stream(cls, stream: BinaryIO, name: str = "stdin", *,
                    on_error: Callable[[InputError], None] | None = None) -> PerfDataFile:
        """Read a pipe-mode stream (``perf record -o -``) without seeking."""
        head = _read_exact(stream, PIPE_HEADER_SIZE)
        big = _check_magic(head, name)
        self = cls(name, big, on_error=on_error)
        size = self._u64(head, 8)[0]
        if size != PIPE_HEADER_SIZE:
            raise InputError(
                f"file-mode perf.data (header size {size}) cannot be read from a pipe; "
                "pass the file path instead", name, 8)
        self.pipe_mode = True
        self.header = self.grammar.pipe_header.parse(head)
        self._stream = stream
        self._data_start = PIPE_HEADER_SIZE
        return self

    @classmethod
    def _open_file(cls, f: BinaryIO, name: str, on_error) -> PerfDataFile:
        file_len = os.fstat(f.fileno()).st_size
        head = f.read(FILE_HEADER_SIZE)
        big = _check_magic(head, name)
        self = cls(name, big, on_error=on_error)
        self._file = f
        g = self.grammar
        size = self._u64(head, 8)[0]
        if size == PIPE_HEADER_SIZE:  # a pipe-mode recording saved to a file
            self.pipe_mode = True
            self.header = g.pipe_header.parse(head)
            self._map(file_len)
            self._data_start, self._data_end = PIPE_HEADER_SIZE, file_len
            self._declared_end = file_len
            return self
        if size < FILE_HEADER_SIZE or len(head) < FILE_HEADER_SIZE:
            raise InputError(f"bad perf.data header size {size}", name, 8)
        self.header = h = g.file_header.parse(head)
        self._map(file_len)
        self._load_attrs(file_len)
        if h.data.offset < FILE_HEADER_SIZE or h.data.offset > file_len:
            raise InputError(f"truncated file: data section starts at {h.data.offset:#x} but "
                             f"the file has {file_len:#x} bytes", name, 40)
        self._data_start = h.data.offset
        if h.data.size == 0:  # perf killed before it finalized the header: read to EOF
            self._declared_end = file_len
        else:
            self._declared_end = h.data.offset + h.data.size
            if self._declared_end <= file_len:
                self._load_features(file_len)
        self._data_end = min(self._declared_end, file_len)
        self._finish_metadata()
        return self

    def _map(self, file_len: int) -> None:
        assert self._file is not None
        if file_len == 0:
            raise InputError("empty file", self.path)
        self._mm = mmap.mmap(self._file.fileno(), 0, access=mmap.ACCESS_READ)
        if hasattr(self._mm, "madvise"):
            with contextlib.suppress(OSError, AttributeError):
                self._mm.madvise(mmap.MADV_SEQUENTIAL)

    def _load_attrs(self, file_len: int) -> None:
        g, h, mm = self.grammar, self.header, self._mm
        attr_size = h.attr_size
        if attr_size < 64 + 16 or attr_size > 0x10000:
            raise InputError(f"bad attr_size {attr_size}", self.path, 16)
        if h.attrs.offset + h.attrs.size > file_len:
            raise InputError("attrs section runs past the end of the file", self.path, 24)
        for i in range(h.attrs.size // attr_size):
            at = h.attrs.offset + i * attr_size
            try:
                entry = g.file_attr.parse(mm[at:at + attr_size], attr_size=attr_size)
            except c.ConstructError as exc:
                raise InputError(f"bad perf_event_attr: {_brief(exc)}", self.path, at) from None
            ids_sec = entry.ids
            if ids_sec.offset + ids_sec.size > file_len:
                raise InputError("attr ids run past the end of the file", self.path, at)
            ids = list(g.ids.parse(mm[ids_sec.offset:ids_sec.offset + ids_sec.size]))
            self._add_desc(entry.attr, ids, at)

    def _load_features(self, file_len: int) -> None:
        h, mm, g = self.header, self._mm, self.grammar
        bits = [b for b in range(256) if h.features[b // 64] >> (b % 64) & 1]
        table = h.data.offset + h.data.size
        for i, bit in enumerate(bits):
            at = table + 16 * i
            if at + 16 > file_len:
                self._defer(InputError(
                    "truncated file: the feature sections (event names, tracepoint formats) "
                    "are missing; tracepoints show as raw bytes (on the recording machine, "
                    "try --formats-from-host)", self.path, at))
                return
            sec = g.section.parse(mm[at:at + 16])
            if sec.offset + sec.size > file_len:
                self._defer(InputError(f"feature {bit} runs past the end of the file",
                                       self.path, at))
                continue
            self._apply_feature(bit, mm[sec.offset:sec.offset + sec.size], sec.offset)

    # -- metadata ----------------------------------------------------------------

    def _add_desc(self, attr: Any, ids: list[int], offset: int, name: str = "") -> EventDesc:
        desc = EventDesc(attr, ids, name, len(self.descs))
        st = attr.sample_type
        if st & SampleType.IDENTIFIER:
            id_at, nid_at = 8, 8
        elif st & SampleType.ID:
            before = SampleType.IP | SampleType.TID | SampleType.TIME | SampleType.ADDR
            id_at = 8 + 8 * bin(st & before).count("1")
            nid_at = 8 + 8 * bin(st & (SampleType.CPU | SampleType.STREAM_ID)).count("1")
        else:
            id_at = nid_at = -1
        if not attr.flags.sample_id_all:
            nid_at = -1
        if self.descs and (id_at, nid_at) != (self._id_at, self._nonsample_id_at):
            raise InputError("attrs disagree on where sample ids are", self.path, offset)
        self._id_at, self._nonsample_id_at = id_at, nid_at
        try:
            desc.reader = make_sample_reader(self.grammar, desc)
        except TypeError as exc:
            raise InputError(f"unsupported sample layout: {exc}", self.path, offset) from None
        self.descs.append(desc)
        for i in ids:
            self._desc_by_id[i] = desc
            self._readers[i] = desc.reader
        if self._format_ids:
            self._attach_format(desc)
        return desc

    def _apply_feature(self, bit: int, data: bytes, offset: int) -> None:
        info, g = self.info, self.grammar
        info.features[bit] = bytes(data)
        grammar = g.features.get(bit)
        if bit == Feature.TRACING_DATA:
            self._set_tracing_data(data, offset)
            return
        if grammar is None:
            return
        try:
            value = grammar.parse(data)
        except c.ConstructError as exc:
            self._defer(InputError(f"bad feature {bit} section: {_brief(exc)}", self.path,
                                   offset))
            return
        if bit in (Feature.HOSTNAME, Feature.OSRELEASE, Feature.VERSION, Feature.ARCH,
                   Feature.CPUDESC, Feature.CPUID):
            attr = {Feature.HOSTNAME: "hostname", Feature.OSRELEASE: "osrelease",
                    Feature.VERSION: "perf_version", Feature.ARCH: "arch",
                    Feature.CPUDESC: "cpudesc", Feature.CPUID: "cpuid"}[bit]
            setattr(info, attr, value)
        elif bit == Feature.NRCPUS:
            info.nrcpus_available, info.nrcpus_online = value.available, value.online
        elif bit == Feature.TOTAL_MEM:
            info.total_mem_kb = value
        elif bit == Feature.CMDLINE:
            info.cmdline = list(value)
        elif bit == Feature.SAMPLE_TIME:
            info.sample_time = (value.first, value.last)
        elif bit == Feature.CLOCKID:
            info.clock_resolution_ns = value
            self.session.clock.resolution_ns = value
        elif bit == Feature.CLOCK_DATA:
            if value.version >= 1:
                info.clock_data = (value.clockid, value.wall_clock_ns, value.clockid_time_ns)
                self.session.clock.set_clock_data(*info.clock_data)
        elif bit == Feature.EVENT_DESC:
            self._apply_event_desc(value, offset)

    def _apply_event_desc(self, value: Any, offset: int) -> None:
        """Names from EVENT_DESC; events it lists that no attr had become new descs."""
        for i, ev in enumerate(value.events):
            desc = next((self._desc_by_id[x] for x in ev.ids if x in self._desc_by_id), None)
            if desc is None and not ev.ids and i < len(self.descs) and not self.descs[i].ids:
                desc = self.descs[i]
            if desc is None:
                desc = self._add_desc(ev.attr, list(ev.ids), offset, ev.name)
            if ev.name:
                desc.name = ev.name
        self._event_desc_applied = True

    def _set_tracing_data(self, blob: bytes, offset: int) -> None:
        """Parse the tracing data found at absolute ``offset``; attach the descs' formats."""
        try:
            self.tracing = parse_tracing_data(bytes(blob))
        except c.ConstructError as exc:
            self._defer(InputError(f"bad tracing data: {_brief(exc)}", self.path, offset))
            return
        tracing = self.tracing
        index = tracing.format_index()
        self._format_ids = {ident: tracing.formats[i] for ident, i in index.items()}
        self._format_at = {ident: _plus(offset, tracing.format_offset(i))
                           for ident, i in index.items()}
        for desc in self.descs:
            self._attach_format(desc)

    def _attach_format(self, desc: EventDesc) -> None:
        """Parse ``desc``'s format once: a format that failed is reported once, not retried."""
        if desc.format_text is not None or desc.attr.type != PERF_TYPE_TRACEPOINT:
            return
        ident = desc.attr.config & 0xFFFFFFFF
        entry = self._format_ids.get(ident)
        if entry is None:
            return
        desc.format_text = entry
        system, text = entry
        from ehtool.formats.tracefs_format import parse_format

        try:
            desc.format = parse_format(text, system, self.long_size)
        except ValueError as exc:
            self._defer(InputError(
                f"format of {system}:{_format_name(text)} (id {desc.attr.config}) "
                f"does not parse: {_brief(exc)}", self.path, self._format_at.get(ident)))
        if not desc.name:
            fmt = desc.format
            desc.name = (f"{fmt.system}:{fmt.name}" if fmt is not None
                         else f"{system}:{_format_name(text)}")

    def missing_formats(self) -> list[int]:
        """Tracepoint ids of recorded events whose format this file does not have (a
        file cut before its feature sections)."""
        return sorted({d.attr.config & 0xFFFFFFFF for d in self.descs
                       if d.attr.type == PERF_TYPE_TRACEPOINT and d.format_text is None})

    def add_formats(self, formats: dict[int, tuple[str, str]]) -> None:
        """Formats found elsewhere (``{id: (system, format text)}``, e.g. the running
        kernel's tracefs) for events this file has none for."""
        for ident, entry in formats.items():
            self._format_ids.setdefault(ident, entry)
        self._finish_metadata()

    def _finish_metadata(self) -> None:
        """Attach the formats of descs added after the tracing data (each desc once)."""
        for desc in self.descs:
            self._attach_format(desc)

    @property
    def long_size(self) -> int:
        """``sizeof(long)`` of the traced machine (from the tracing data; default 8)."""
        return self.tracing.long_size if self.tracing is not None and self.tracing.long_size else 8

    def desc_for_id(self, sample_id: int) -> EventDesc | None:
        return self._desc_by_id.get(sample_id)

    # -- errors --------------------------------------------------------------------

    def _defer(self, err: InputError) -> None:
        if self.on_error is not None:
            self.on_error(err)
        else:
            self._deferred.append(err)

    def _raise_pending(self) -> None:
        if self._fatal is not None:
            raise self._fatal
        if self._deferred:
            raise combined(self._deferred)

    # -- iteration -----------------------------------------------------------------

    def samples(self, order: str = "time") -> Iterator[Sample]:
        """PERF_RECORD_SAMPLEs in ``order`` ("time": perf-decode's order, or "file")."""
        return self.records(order, nonsample=False)  # type: ignore[return-value]

    def records(self, order: str = "time", nonsample: bool = True) -> Iterator[Sample | Record]:
        """Samples and (if ``nonsample``) every other data record, in ``order``.

        Raises InputError after the last complete record when the input is
        truncated or corrupt, or when a recoverable problem was met and no
        ``on_error`` callback took it.
        """
        for batch in self.batches(order, nonsample):
            yield from batch

    def batches(self, order: str = "time", nonsample: bool = True) -> Iterator[list]:
        """:meth:`records` a list at a time (each FINISHED_ROUND's records, sorted, in
        time order; a window of the input in file order): the fast way to consume."""
        if order not in ("time", "file"):
            raise ValueError(f"order must be 'time' or 'file', not {order!r}")
        if self._consumed:
            if self.pipe_mode:  # metadata arrived with the records: read them once
                raise RuntimeError("a pipe-mode PerfDataFile can be iterated once")
            self.counts = {}
            self.compression = Compression()
            self._deferred = []
            self._fatal = None
        self._consumed = True
        self._want_records = nonsample
        batches = self._stream_batches() if self._stream is not None else self._mmap_batches()
        if order == "file":
            for items, _flushes in batches:
                if items:
                    yield items
        else:
            pending: list = []
            for items, flushes in batches:
                prev = 0
                for k in flushes:
                    pending += items[prev:k]
                    if pending:
                        yield _sort_by_time(pending)
                        pending = []
                    prev = k
                pending += items[prev:]
            if pending:
                yield _sort_by_time(pending)
        self._check_compressed_end(self.position)
        self._raise_pending()

    def _mmap_batches(self) -> Iterator[tuple[list, list[int]]]:
        mm = self._mm
        assert mm is not None
        pos, end = self._data_start, self._data_end
        while pos < end:
            limit = min(end, pos + _WINDOW)
            items: list = []
            flushes: list[int] = []
            new = self._scan(mm, pos, end, limit, 0, items, flushes)
            if items or flushes:
                yield items, flushes
            if self._fatal is not None or self._data_end < end:  # (stopped at the split)
                return
            if new < limit:  # stopped at a record that does not fit
                self._truncated(new, end)
                return
            self._release(pos, new)
            pos = self.position = new
        if self._declared_end > end:  # cut at a record boundary: the header knows
            self._truncated(end, end)

    def _release(self, start: int, end: int) -> None:
        """Drop the page cache mappings of records already read (samples hold copies),
        so resident memory stays constant whatever the file size."""
        page = mmap.PAGESIZE
        lo, hi = start - start % page, end - end % page
        if hi > lo and self._mm is not None:
            with contextlib.suppress(OSError, ValueError):
                self._mm.madvise(mmap.MADV_DONTNEED, lo, hi - lo)

    def _check_compressed_end(self, end: int) -> None:
        """A record cut inside the compressed stream at the end of the data."""
        if self.compression.pending and self._fatal is None:
            self._fatal = InputError(
                f"the compressed data ends inside a record ({len(self.compression.pending)} "
                "bytes left over; truncated input?)", self.path, end)

    def _truncated(self, pos: int, end: int) -> None:
        if self._declared_end > end:
            self._fatal = InputError(
                f"truncated file: data section ends at {self._declared_end:#x} but the file "
                f"has {end:#x} bytes (perf killed mid-write?); the records after the cut and "
                "the feature sections (event names, tracepoint formats) are missing",
                self.path, pos)
        else:
            what = "pipe stream" if self._stream is not None else "data section"
            self._fatal = InputError(f"record runs past the end of the {what} "
                                     "(truncated input?)", self.path, pos)

    def _stream_batches(self) -> Iterator[tuple[list, list[int]]]:
        stream = self._stream
        assert stream is not None
        read = getattr(stream, "read1", None) or stream.read
        buf = b""
        base = self._data_start  # absolute offset of buf[0]
        eof = False
        while not eof:
            chunk = read(_PIPE_READ)
            if not chunk:
                eof = True
            else:
                buf = buf + chunk if buf else bytes(chunk)
            items: list = []
            flushes: list[int] = []
            pos = self._scan(buf, 0, len(buf), len(buf), base, items, flushes)
            if items or flushes:
                yield items, flushes
            if self._fatal is not None:
                return
            base += pos
            self.position = base
            buf = buf[pos:]
        if buf:
            self._truncated(base, base + len(buf))

    def _scan(self, buf: Any, pos: int, end: int, limit: int, base: int,
              out: list, flushes: list[int]) -> int:
        """Read the complete records in ``buf[pos:end]`` that start before ``limit``.

        Appends samples (and other records when wanted) to ``out`` and the
        ``len(out)`` of each flush point to ``flushes``; returns the position of
        the first unread record. Sets ``self._fatal`` on corrupt sizes.
        """
        hdr = self._hdr
        hdr_id = self._hdr_id  # header + IDENTIFIER in one unpack
        u64 = self._u64
        readers = self._readers
        append = out.append
        id_at = self._id_at
        lone = self.descs[0].reader if len(self.descs) == 1 else None
        sample_type = _SAMPLE
        nsamples = 0
        run = self._run_scanner()
        while pos < limit:
            if run is not None:  # consecutive samples of the common layout, one unpack each
                pos, n = run(buf, pos, end, base, append)
                nsamples += n
                if pos >= limit:
                    break
            if pos + 16 <= end:
                rtype, _misc, size, ident = hdr_id(buf, pos)
            elif pos + 8 <= end:
                rtype, _misc, size = hdr(buf, pos)
                ident = None
            else:
                break
            if rtype == sample_type and size >= 16 and pos + size <= end:
                if id_at == 8:
                    reader = readers.get(ident)
                elif id_at > 0:
                    reader = readers.get(u64(buf, pos + id_at)[0]) if id_at + 8 <= size else None
                else:
                    reader = lone
                if reader is None:
                    self._unknown_sample(buf, pos, size, base)
                else:
                    try:
                        append(reader(buf, pos, size, base))
                    except CorruptSample as exc:
                        self._defer(InputError(f"corrupt sample: {exc}", self.path, base + pos))
                    except struct.error:
                        self._defer(InputError("corrupt sample: fields run past the record",
                                               self.path, base + pos))
                nsamples += 1
                pos += size
                continue
            if size < 8:
                self._fatal = InputError(f"corrupt record: size {size} < 8", self.path, base + pos)
                break
            if pos + size > end:
                break
            nxt = self._other(rtype, buf, pos, size, end, base, out, flushes)
            if nxt < 0:
                break  # incomplete (needs bytes beyond ``end``) or fatal
            pos = nxt
            if self._stop_middle is not None:  # mirror split_point() (see stop_at_split)
                if rtype in _NO_SPLIT:
                    self._stop_middle = None
                elif rtype == _R.FINISHED_ROUND and self._stop_middle <= pos < self._data_end:
                    self._stop_middle = None
                    self._data_end = pos
                    break
            id_at = self._id_at
            lone = self.descs[0].reader if len(self.descs) == 1 else None
            run = self._run_scanner()
        if nsamples:
            self.counts[_SAMPLE] = self.counts.get(_SAMPLE, 0) + nsamples
        return pos

    def _run_scanner(self):
        """The generated scanner for runs of common-layout samples (rebuilt when ids change)."""
        key = (len(self.descs), len(self._readers), self._id_at)
        if self._run_key != key:
            self._run_key = key
            self._run = make_run_scanner(self.grammar, self.descs, self._id_at) \
                if self.descs else None
        return self._run

    def _unknown_sample(self, buf: Any, pos: int, size: int, base: int) -> None:
        if self._id_at < 0:
            msg = (f"sample has no id and the file has {len(self.descs)} events "
                   "(record with --sample-identifier)")
        elif self._id_at + 8 > size:
            msg = f"sample of {size} bytes is too short for its id"
        else:
            msg = f"sample id {self._u64(buf, pos + self._id_at)[0]} matches no event"
        self._defer(InputError(msg, self.path, base + pos))

    def _other(self, rtype: int, buf: Any, pos: int, size: int, end: int, base: int,
               out: list, flushes: list[int]) -> int:
        """Handle a non-sample record; return the next position, or -1 to stop."""
        self.counts[rtype] = self.counts.get(rtype, 0) + 1
        nxt = pos + size
        g = self.grammar
        offset = base + pos
        if rtype in _FLUSH_TYPES:
            flushes.append(len(out))
        elif rtype == _SAMPLE:
            self._defer(InputError(f"corrupt sample: size {size} is too short", self.path,
                                   offset))
        elif rtype == _R.HEADER_TRACING_DATA:
            # perf 6.x writes header + u32 size + u32 pad (16 bytes), older perf header +
            # u32 size (12): the record size says which, the data's signature confirms it
            if size not in (12, 16):
                self._fatal = InputError(f"corrupt HEADER_TRACING_DATA record (size {size})",
                                         self.path, offset)
                return -1
            extra = self._u32(buf, pos + 8)[0]
            if extra > 0x80000000:
                self._fatal = InputError(f"corrupt HEADER_TRACING_DATA size {extra}",
                                         self.path, offset)
                return -1
            if nxt + min(extra, len(TRACING_SIGNATURE)) > end:
                self.counts[rtype] -= 1
                return -1  # the caller reads more (pipe) or reports truncation
            if bytes(buf[nxt:nxt + len(TRACING_SIGNATURE)]) != TRACING_SIGNATURE:
                self._fatal = InputError("HEADER_TRACING_DATA without the tracing data "
                                         "signature", self.path, offset + size)
                return -1
            if nxt + extra > end:
                self.counts[rtype] -= 1
                return -1
            if self.tracing is None:
                blob = bytes(buf[nxt:nxt + extra])
                self.info.features[Feature.TRACING_DATA] = blob
                self._set_tracing_data(blob, base + nxt)
            nxt += extra
        elif rtype == _R.AUXTRACE:
            if size < 16:
                self._fatal = InputError(f"corrupt AUXTRACE record (size {size})",
                                         self.path, offset)
                return -1
            extra = self._u64(buf, pos + 8)[0]
            if extra & 7 or extra > 0x80000000:
                self._fatal = InputError(f"corrupt AUXTRACE size {extra}", self.path, offset)
                return -1
            if nxt + extra > end:
                self.counts[rtype] -= 1
                return -1  # the caller reads more (pipe) or reports truncation
            nxt += extra
        elif rtype == _R.HEADER_ATTR:
            try:
                body = g.records[rtype].parse(bytes(buf[pos + 8:nxt]))
            except c.ConstructError as exc:
                self._defer(InputError(f"bad HEADER_ATTR: {_brief(exc)}", self.path, offset))
            else:
                self._add_desc(body.attr, list(body.ids), offset)
        elif rtype == _R.HEADER_FEATURE:
            if size >= 16:
                bit = self._u64(buf, pos + 8)[0]
                self._apply_feature(bit, bytes(buf[pos + 16:nxt]), offset + 16)
        elif rtype == _R.EVENT_UPDATE:
            self._event_update(buf, pos, nxt, offset)
        elif rtype == _R.ID_INDEX:
            self._id_index(buf, pos, nxt, offset)
        elif (rtype == _R.COMPRESSED or rtype == _R.COMPRESSED2) and not self._decompress(
                rtype, buf, pos, nxt, offset, out, flushes):
            return -1
        if rtype == _R.COMM or rtype == _R.FORK or self._want_records:
            rec = self._record(rtype, buf, pos, size, base)
            if rtype == _R.COMM and rec.body is not None:
                self.session.set_comm(rec.body.tid, rec.body.comm)
            elif rtype == _R.FORK and rec.body is not None:
                self.session.fork(rec.body.ptid, rec.body.tid)
            if self._want_records:
                out.append(rec)
        return nxt

    def _decompress(self, rtype: int, buf: Any, pos: int, nxt: int, offset: int, out: list,
                    flushes: list[int]) -> bool:
        """Read the records inside a COMPRESSED/COMPRESSED2 record (``perf record -z``).

        perf compresses the whole recording as one zstd stream cut into these records, so
        one decompressor serves the file and a record may continue in the next one.
        Records found inside carry the COMPRESSED record's offset in messages. False
        (and ``_fatal``) when the data does not decompress.
        """
        data = compressed_data(rtype == _R.COMPRESSED2, buf, pos, nxt, self._u64)
        if data is None:
            size = self._u64(buf, pos + 8)[0] if nxt - pos >= 16 else -1
            self._fatal = InputError(f"corrupt COMPRESSED2 record (data size {size})",
                                     self.path, offset)
            return False
        z = self.compression
        if z.decompressor is None:
            z.decompressor = zstd_decompressor(self.path, offset)
        try:
            chunk = z.decompressor.decompress(data)
        except Exception as exc:  # the binding's own error type
            self._fatal = InputError(f"compressed data does not decompress: {exc}", self.path,
                                     offset)
            return False
        z.records += 1
        z.compressed += len(data)
        z.decompressed += len(chunk)
        inner = z.pending + chunk if z.pending else chunk
        used = self._scan(inner, 0, len(inner), len(inner), offset, out, flushes)
        z.pending = inner[used:]
        return self._fatal is None

    def _event_update(self, buf: Any, pos: int, nxt: int, offset: int) -> None:
        if nxt - pos < 24:
            return
        kind = self._u64(buf, pos + 8)[0]
        if kind != EVENT_UPDATE_NAME:
            return
        desc = self._desc_by_id.get(self._u64(buf, pos + 16)[0])
        if desc is None:
            return
        body = self.grammar.records[_R.EVENT_UPDATE].parse(bytes(buf[pos + 8:nxt]))
        desc.name = body.data

    def _id_index(self, buf: Any, pos: int, nxt: int, offset: int) -> None:
        try:
            body = self.grammar.records[_R.ID_INDEX].parse(bytes(buf[pos + 8:nxt]))
        except c.ConstructError as exc:
            self._defer(InputError(f"bad ID_INDEX: {_brief(exc)}", self.path, offset))
            return
        for e in body.entries:
            if e.id not in self._desc_by_id and e.idx < len(self.descs):
                desc = self.descs[e.idx]
                self._desc_by_id[e.id] = desc
                self._readers[e.id] = desc.reader

    def _record(self, rtype: int, buf: Any, pos: int, size: int, base: int) -> Record:
        """A non-sample record with its sample_id trailer and (known types) body."""
        nxt = pos + size
        desc = None
        trailer: dict[str, int] = {}
        nid = self._nonsample_id_at
        if nid >= 0 and rtype < 64 and size >= 8 + nid:
            desc = self._desc_by_id.get(self._u64(buf, nxt - nid)[0])
        elif nid < 0 and rtype < 64 and len(self.descs) == 1:
            only = self.descs[0]
            desc = only if only.attr.flags.sample_id_all else None
        trailer_size = 0
        # records perf synthesizes carry a zeroed trailer (id 0): lay it out as the first event's
        layout = desc if desc is not None or nid < 0 or rtype >= 64 or not self.descs \
            else self.descs[0]
        if layout is not None:
            tr = self._trailers.get(layout.sample_type)
            if tr is None:
                tr = self._trailers[layout.sample_type] = make_trailer_reader(
                    self.grammar, layout.sample_type)
            if tr.size <= size - 8:
                trailer = tr.read(buf, nxt)
                trailer_size = tr.size
        body = None
        grammar = self.grammar.records.get(rtype) if rtype < 64 else None
        data = bytes(buf[pos:nxt])
        if grammar is not None:
            try:
                body = grammar.parse(data[8:size - trailer_size])
            except c.ConstructError:
                body = None
        return Record(rtype, self._hdr(buf, pos)[1], base + pos, data, body,
                      trailer.get("pid"), trailer.get("tid"), trailer.get("time"),
                      trailer.get("cpu"), desc)

    # -- splitting (parallel decoding) ---------------------------------------------------

    def split_point(self) -> int | None:
        """The offset just after a FINISHED_ROUND near the middle of the data section
        (file mode), so both halves can be decoded independently and concatenated in
        perf-decode's order; None when there is no such point."""
        mm = self._mm
        if mm is None:
            return None
        hdr = self._hdr
        pos, end = self._data_start, self._data_end
        middle = pos + (end - pos) // 2
        released = pos
        while pos + 8 <= end:
            if pos - released > _WINDOW * 8:  # keep resident memory flat while walking
                self._release(released, pos)
                released = pos
            rtype, _misc, size = hdr(mm, pos)
            if size < 8 or rtype in _NO_SPLIT:
                return None
            if rtype in _METADATA:  # the second core needs what they say (ids, names...)
                pos = self._apply_quietly(rtype, mm, pos, size, end)
                if pos < 0:
                    return None
            else:
                pos += size
            if pos >= middle and rtype == _R.FINISHED_ROUND and pos < end:
                self._release(self._data_start, pos)
                return pos
        self._release(self._data_start, pos)
        return None

    def _apply_quietly(self, rtype: int, buf: Any, pos: int, size: int, end: int) -> int:
        """Apply a metadata record while looking for the split point: its problems are
        the first core's to report (it reads the same record), so none are kept here."""
        saved = self.counts, self.on_error, self._fatal
        self.counts, self.on_error = dict(self.counts), lambda err: None
        try:
            return self._other(rtype, buf, pos, size, end, 0, [], [])
        finally:
            self.counts, self.on_error, self._fatal = saved

    def stop_at_split(self) -> None:
        """Make the next iteration end where :meth:`split_point` would cut, without
        walking there first: after the first FINISHED_ROUND that ends in the second
        half (nowhere when an AUXTRACE record comes first, as split_point gives up).
        The first core decodes this way while the second finds the split itself."""
        start, end = self._data_start, self._data_end
        self._stop_middle = start + (end - start) // 2

    @property
    def data_range(self) -> tuple[int, int]:
        """``(start, end)`` byte offsets of the records this file reads."""
        return self._data_start, self._data_end

    def restrict(self, start: int, end: int) -> None:
        """Read only the records in ``[start, end)`` of the data section (file mode)."""
        if self._mm is None or not self._data_start <= start <= end <= self._data_end:
            raise ValueError("restrict() needs a file-mode input and a range inside its data")
        self._data_start, self._data_end = start, end

    # -- lifetime ----------------------------------------------------------------------

    def close(self) -> None:
        if self._mm is not None:
            self._mm.close()
            self._mm = None
        if self._file is not None:
            self._file.close()
            self._file = None

    def __enter__(self) -> PerfDataFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        mode = "pipe" if self.pipe_mode else "file"
        order = "big" if self.big_endian else "little"
        return f"PerfDataFile({self.path!r}, {mode} mode, {order}-endian, {len(self.descs)} events)"


def _read_exact(stream: BinaryIO, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = stream.read(n - len(data))
        if not chunk:
            break
        data += chunk
    return data


def _check_magic(head: bytes, name: str) -> bool:
    if len(head) < PIPE_HEADER_SIZE:
        raise InputError("not a perf.data file (too short)", name, 0)
    big = detect_byte_order(head[:8])
    if big is None:
        raise InputError("not a perf.data file (no PERFILE2 magic)", name, 0)
    return big


def _plus(base: int, offset: int | None) -> int:
    """``base + offset``, or ``base`` when the offset inside it is unknown."""
    return base if offset is None else base + offset


def _format_name(text: str) -> str:
    m = _NAME_RE.search(text)
    return m.group(1) if m else "?"


def _brief(exc: Exception) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
