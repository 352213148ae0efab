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
import os
import stat
import struct
import sys
from collections.abc import Callable, Iterator
from typing import Any, BinaryIO

from ehtool.errors import STDIN_NAME, InputError, combined
from ehtool.eventheader.dat import looks_like_capture
from ehtool.perfdata.compression import Compression
from ehtool.perfdata.counts import RecordCounts
from ehtool.perfdata.directory import HEADER_FILE, data_files, file_to_open
from ehtool.perfdata.grammar import (
    FILE_HEADER_SIZE,
    PIPE_HEADER_SIZE,
    PerfGrammar,
    detect_byte_order,
    grammar_for,
)
from ehtool.perfdata.hotpath import header_struct, identified_header_struct
from ehtool.perfdata.metadata import Metadata, PerfInfo
from ehtool.perfdata.records import EventDesc, Record, Sample
from ehtool.perfdata.rounds import rounds_by_time
from ehtool.perfdata.session import Session
from ehtool.perfdata.split import Split
from ehtool.perfdata.tracing_data import TracingData
from ehtool.perfdata.walk import RecordWalk

#: bytes scanned per batch in file mode; records read per pipe read
_WINDOW = 1 << 20
_PIPE_READ = 1 << 20

__all__ = ["PerfDataFile", "PerfInfo"]

#: called with a file's name when it is mapped (the command line sets it: a SIGBUS,
#: the file cut short while mapped, then ends the command with an error naming it)
mapped_hook: Callable[[str], None] | None = None


class PerfDataFile(Metadata, RecordWalk, Split):
    """One perf.data input. Use :meth:`open` (path or ``-``) or :meth:`open_stream`.

    This module opens, maps and iterates (file order, or each FINISHED_ROUND sorted by
    time); :mod:`~ehtool.perfdata.metadata` reads attrs, features and formats,
    :mod:`~ehtool.perfdata.walk` the records, :mod:`~ehtool.perfdata.split` finds the
    second process's half.

    ``on_error`` receives recoverable problems (a sample with an unknown attr id, a
    format that does not parse, a corrupt sample) as they are met; without it,
    the first one is raised when iteration ends.
    """

    def __init__(self, name: str, big_endian: bool, *,
                 on_error: Callable[[InputError], None] | None = None) -> None:
        self.path = name
        #: the file the records being read are in, for errors (a directory recording's
        #: ``data.N`` while it is read; else ``path``)
        self.where = name
        #: a directory recording's ``data.N`` files, read after this file's records
        self.more_files: list[str] = []
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
        #: events the kernel lost (LOST and LOST_SAMPLES records), counted while iterating
        self.lost = RecordCounts()
        self._readers: dict[int, Callable] = {}  # sample id -> sample reader
        self._desc_by_id: dict[int, EventDesc] = {}
        self._id_at = -1  # sample id offset from the record start, -1 none
        self._nonsample_id_at = -1  # non-sample id offset from the record end, -1 none
        self._format_ids: dict[int, tuple[str, str]] = {}
        self._format_at: dict[int, int | None] = {}  # format ID -> absolute byte offset
        self._trailers: dict[int, Any] = {}
        self._bodies: dict[int, Any] = {}  # record type -> BodyReader or None
        self._thread_at: dict[int, tuple[int, int]] = {}  # COMM/FORK -> its fields' indexes
        self._deferred: list[InputError] = []
        self._want_records = False  # (set by each iteration)
        #: learn thread names (COMM, FORK) for ``session.comm``; False: never (faster)
        self.threads = True
        #: thread updates put among the records, and applied (RecordWalk._named)
        self._named_out = self._named_done = 0
        #: the thread updates of the round a split search is in (Split.split_point)
        self._round_names: list = []
        #: ``perf record -z``: bytes before and after decompression, the zstd stream
        self.compression = Compression()
        self._fatal: InputError | None = None
        self._event_desc_applied = False
        self._u64 = struct.Struct(self.grammar.endian + "Q").unpack_from
        self._u32 = struct.Struct(self.grammar.endian + "I").unpack_from
        self._hdr = header_struct(self.grammar).unpack_from
        hdr_id = identified_header_struct(self.grammar)
        self._hdr_id, self._hdr_id_size = hdr_id.unpack_from, hdr_id.size
        self._run: Callable | None = None
        self._run_key: tuple | None = None
        self._file: BinaryIO | None = None
        self._mm: mmap.mmap | None = None
        self._stream: BinaryIO | None = None
        self._owned: BinaryIO | None = None  # a stream it opened (a FIFO's path)
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
        header = None  # (the path opened, when it is one)
        if path == "-":
            if sys.stdin is None:  # (<&-)
                raise InputError("cannot open: standard input is closed", STDIN_NAME)
            if not _a_file_from_its_start(sys.stdin.buffer):  # (``< perf.data`` is one)
                return cls.open_stream(sys.stdin.buffer, STDIN_NAME, on_error=on_error)
            f, name = os.fdopen(os.dup(sys.stdin.buffer.fileno()), "rb"), STDIN_NAME
        elif not isinstance(path, (str, bytes, os.PathLike)):
            return cls.open_stream(path, getattr(path, "name", "stream"), on_error=on_error)
        else:
            name = os.fsdecode(path)
            header = file_to_open(name)
            try:
                f = open(header, "rb")  # noqa: SIM115 - owned by the PerfDataFile
            except OSError as exc:
                raise _cannot_open(exc, name) from None
        try:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):  # a FIFO, <(...): a stream
                self = cls.open_stream(f, name, on_error=on_error)
                self._owned = f
                return self
            self = cls._open_file(f, name, on_error)
        except BaseException:
            f.close()
            raise
        if self.info.dir_format is not None:
            if header is not None and os.path.basename(header) == HEADER_FILE:
                self.more_files = data_files(os.path.dirname(header) or ".")
            if not self.more_files:
                self._defer(InputError(
                    "the data file of a directory recording (perf record --threads) without "
                    "its data.N files beside it: their events are missing (give the "
                    "directory)", name))
        return self

    @staticmethod
    def probe(path: str | os.PathLike) -> None:
        """Raise the error :meth:`open` raises first when ``path`` cannot be opened or
        does not start as a perf.data file does (its magic); cheap: the rest of the
        header, the attributes and features are not read. A stream (a FIFO) is not
        read."""
        name = os.fsdecode(path)
        try:
            with open(file_to_open(name), "rb") as f:
                if stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                    _check_magic(f.read(PIPE_HEADER_SIZE), name)
        except OSError as exc:
            raise _cannot_open(exc, name) from None

    @classmethod
    def open_stream(cls, stream: BinaryIO, name: str = STDIN_NAME, *,
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
            self._defer(InputError(
                "perf did not finish this file (killed?): the header's data size is 0, so "
                "the records are read to the end of the file, and the feature sections "
                "(event names, tracepoint formats) are missing; tracepoints show as raw "
                "bytes (on the recording machine, try --formats-from-host)", name, 48))
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
        try:
            self._mm = mmap.mmap(self._file.fileno(), 0, access=mmap.ACCESS_READ)
        except OSError as exc:  # ENOMEM (ulimit -v), ENODEV (a file system without mmap)
            raise InputError(f"cannot map: {exc.strerror or exc}", self.path) from None
        if mapped_hook is not None:
            mapped_hook(self.path)
        if hasattr(self._mm, "madvise"):
            with contextlib.suppress(OSError, AttributeError):
                self._mm.madvise(mmap.MADV_SEQUENTIAL)



    # -- metadata ----------------------------------------------------------------











    # -- errors --------------------------------------------------------------------

    def _defer(self, err: InputError) -> None:
        if self.on_error is not None:
            self.on_error(err)
        else:
            self._deferred.append(err)

    def _raise_pending(self) -> None:
        """Raise the input error met, if any (handed over: this file keeps no reference
        to it, else its traceback, whose frames hold this file, would make a cycle that
        keeps the file's buffers until a full garbage collection)."""
        fatal, self._fatal = self._fatal, None
        if fatal is not None:
            try:
                raise fatal
            finally:
                del fatal  # (nor does this frame, which its traceback holds)
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
            self.lost = RecordCounts(counters=self.lost.counters)
            self.compression = Compression()
            self._deferred = []
            self._fatal = None
        self._consumed = True
        self._want_records = nonsample
        self._named_out = self._named_done = 0
        batches = self._stream_batches() if self._stream is not None else self._mmap_batches()
        if order == "file":
            for items, _flushes in batches:
                if items:
                    yield from self._named(items)
                    self._check_open()
        else:
            for items in rounds_by_time(batches):
                yield from self._named(items)
                self._check_open()
        self._check_compressed_end(self.position)
        self._raise_pending()

    def _check_open(self) -> None:
        """Between two batches: an iteration goes no further once the file is closed."""
        if self.closed:
            raise ValueError(f"{self.path}: the file was closed during its iteration")

    def _mmap_batches(self) -> Iterator[tuple[list, list[int]]]:
        mm = self._mm
        assert mm is not None
        self.where = self.path
        end = self._data_end
        if not (yield from self._mapped_batches(mm, self._data_start, end)):
            return
        if self._declared_end > end:  # cut at a record boundary: the header knows
            self._truncated(end, end)
            return
        for path in self.more_files:  # (a directory recording's data.N files)
            self.where = path
            yield from self._more_batches(path)
            self._check_compressed_end(self.position)
            fatal, self._fatal = self._fatal, None
            if fatal is not None:  # (the rest of this file is lost, not the other files)
                self._defer(fatal)
            self.compression.decompressor = None  # (each file is a zstd stream of its own)
            self.compression.pending = b""
        self.where = self.path

    def _more_batches(self, path: str) -> Iterator[tuple[list, list[int]]]:
        """The batches of a ``data.N`` file (records from its start to its end)."""
        self.position = 0
        try:
            if not stat.S_ISREG(os.stat(path).st_mode):  # (a FIFO would block the open)
                self._fatal = InputError("cannot open: not a regular file", path)
                return
            with open(path, "rb") as f:
                size = os.fstat(f.fileno()).st_size
                if not size:
                    return
                mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        except OSError as exc:
            self._fatal = _cannot_open(exc, path)
            return
        if mapped_hook is not None:
            mapped_hook(path)
        with contextlib.closing(mm):
            yield from self._mapped_batches(mm, 0, size)

    def _mapped_batches(self, mm: Any, pos: int, end: int
                        ) -> Iterator[tuple[list, list[int]]]:
        """The batches of the records of ``mm[pos:end]``, a window at a time; True when
        they reached ``end`` (else a fatal error or the split point stopped them)."""
        while pos < end:
            limit = min(end, pos + _WINDOW)
            items: list = []
            flushes: list[int] = []
            new = self._scan(mm, pos, end, limit, 0, items, flushes)
            if items or flushes:
                yield items, flushes
            if self._fatal is not None or (mm is self._mm and self._data_end < end):
                return False  # (a fatal error, or stopped at the split)
            if new < limit:  # stopped at a record that does not fit
                self._truncated(new, end)
                return False
            _release(mm, pos, new)
            pos = self.position = new
        return True

    def _release(self, start: int, end: int) -> None:
        if self._mm is not None:
            _release(self._mm, start, end)

    def _check_compressed_end(self, end: int) -> None:
        """A record cut inside the compressed stream at the end of the data."""
        if self.compression.pending and self._fatal is None:
            self._fatal = InputError(
                f"the compressed data ends inside a record ({len(self.compression.pending)} "
                "bytes left over; truncated input?)", self.where, end)

    def cut_short(self) -> InputError | None:
        """The error reading the records to the end meets when the header's data section
        runs past the end of the file (its last records and the feature sections are
        missing), known from the header alone; else None."""
        if self._stream is not None or self._declared_end <= self._data_end:
            return None
        return self._cut_error(self._data_end, self._data_end)

    def _cut_error(self, pos: int, end: int) -> InputError:
        return InputError(
            f"truncated file: data section ends at {self._declared_end:#x} but the file "
            f"has {end:#x} bytes (perf killed mid-write?); the records after the cut and "
            "the feature sections (event names, tracepoint formats) are missing",
            self.path, pos)

    def _truncated(self, pos: int, end: int) -> None:
        if self._declared_end > end and self.where == self.path:
            self._fatal = self._cut_error(pos, end)
        else:
            if self._stream is not None:
                what = "pipe stream"
            elif self.pipe_mode or self.where != self.path:  # (no data section)
                what = "file"
            else:
                what = "data section"
            self._fatal = InputError(f"record runs past the end of the {what} "
                                     "(truncated input?)", self.where, pos)

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









    # -- splitting (parallel decoding) ---------------------------------------------------






    @property
    def splittable(self) -> bool:
        """Its records can be cut into parts that processes decode side by side (not in
        pipe mode, nor a directory recording, whose files perf sorts as one)."""
        return not self.pipe_mode and not self.more_files

    # -- lifetime ----------------------------------------------------------------------

    #: :meth:`close` was called
    closed = False

    def close(self) -> None:
        self.closed = True
        if self._owned is not None:
            self._owned.close()
            self._owned = None
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


def _release(mm: mmap.mmap, start: int, end: int) -> None:
    """Drop the page cache mappings of records already read (samples hold copies), so
    resident memory stays constant whatever the file size."""
    page = mmap.PAGESIZE
    lo, hi = start - start % page, end - end % page
    if hi > lo:
        with contextlib.suppress(OSError, ValueError):
            mm.madvise(mmap.MADV_DONTNEED, lo, hi - lo)


def _a_file_from_its_start(stream: BinaryIO) -> bool:
    """Whether ``stream`` is a regular file read from its start (standard input
    redirected from a file: read as a file, so file mode works too)."""
    try:
        fd = stream.fileno()
        return stat.S_ISREG(os.fstat(fd).st_mode) and os.lseek(fd, 0, os.SEEK_CUR) == 0
    except (OSError, ValueError, AttributeError):
        return False


def _read_exact(stream: BinaryIO, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = stream.read(n - len(data))
        if not chunk:
            break
        data += chunk
    return data


def _cannot_open(exc: OSError, name: str) -> InputError:
    return InputError(f"cannot open: {exc.strerror or exc}", name)


def _check_magic(head: bytes, name: str) -> bool:
    if len(head) < PIPE_HEADER_SIZE:
        raise InputError("not a perf.data file (too short)", name, 0)
    big = detect_byte_order(head[:8])
    if big is None:
        hint = ("; an EventHeaderInterceptor capture? 'ehtool decode --input-format dat'"
                if looks_like_capture(head) else "")
        raise InputError(f"not a perf.data file (no PERFILE2 magic){hint}", name, 0)
    return big




