"""Relay perf's pipe-mode output (``perf record -o -``) to its reader, counting on the way.

::

    from ehtool.record.stream import StreamRelay
    relay = StreamRelay(perf_stdout, sys.stdout.buffer)   # or the decoder's stdin
    relay.start()
    ...                                   # perf records, then exits
    stats = relay.join()                  # RecordingStats: samples, lost events

perf writes into a pipe that ehtool reads; a thread copies every byte to the
sink unchanged and walks the record headers as they pass, so a streamed
session reports its samples and perf's lost events (PERF_RECORD_LOST,
LOST_SAMPLES) like a recorded file, counted by the same rule
(:class:`ehtool.perfdata.counts.RecordCounts`). Compressed records (``perf record
-z``) are decompressed on the way (one zstd stream) and the records inside counted.
"""

from __future__ import annotations

import contextlib
import errno
import os
import struct
import threading
from collections.abc import Callable
from typing import IO

from ehtool.errors import STDIN_NAME, InputError
from ehtool.perfdata.compression import Decompressor, compressed_data, zstd_decompressor
from ehtool.perfdata.counts import payload_size
from ehtool.perfdata.grammar import PIPE_HEADER_SIZE, RecordType, detect_byte_order, grammar_for
from ehtool.perfdata.hotpath import HEADER_SIZE, header_struct
from ehtool.record.perf import RecordingStats

_COMPRESSED, _COMPRESSED2 = RecordType.COMPRESSED, RecordType.COMPRESSED2
_READ = 1 << 20


class StreamCounter:
    """Walks pipe-mode perf.data bytes fed in arbitrary pieces; counts samples and lost events."""

    def __init__(self, stats: RecordingStats | None = None) -> None:
        self.stats = RecordingStats() if stats is None else stats
        self.compressed = False
        #: the records inside compressed records: a counter of the decompressed stream
        self._inner: StreamCounter | None = None
        self._zstd: Decompressor | None = None
        self._pending = b""  # an incomplete header or record
        self._skip = 0  # payload bytes still to pass over
        self._header: Callable | None = None  # unpacks (type, misc, size); set by the pipe header
        self._u64: Callable = struct.Struct("<Q").unpack_from
        self._u32: Callable = struct.Struct("<I").unpack_from
        self._stopped = False
        self._fed = 0  # bytes fed so far: the stream offset just past the last piece

    def feed(self, data: bytes) -> None:
        """Account for the next bytes of the stream."""
        if self._stopped or not data:
            return
        self._fed += len(data)
        view = memoryview(data)
        if self._skip:
            skipped = min(self._skip, len(view))
            self._skip -= skipped
            view = view[skipped:]
        buf = self._pending + view if self._pending else view
        pos = 0
        if self._header is None:
            if len(buf) < PIPE_HEADER_SIZE:
                self._pending = bytes(buf)
                return
            if not self._check_header(buf):
                return
            pos = PIPE_HEADER_SIZE
        pos = self._walk(buf, pos)
        self._pending = b"" if self._stopped else bytes(buf[pos:])

    def finish(self) -> RecordingStats:
        """The counts; notes a stream that ended early or inside a record."""
        if self._stopped:
            pass
        elif self._header is None:
            self._stop("perf wrote no complete pipe-mode header")
        elif self._pending or self._skip:
            self._stop("the stream ends inside a record (perf killed mid-write?)")
        elif self._inner is not None and (self._inner._pending or self._inner._skip):
            self._stop("the compressed stream ends inside a record (perf killed mid-write?)")
        return self.stats

    def _check_header(self, buf: memoryview | bytes) -> bool:
        """Check the pipe header and learn the byte order from it."""
        big_endian = detect_byte_order(bytes(buf[:8]))
        if big_endian is None:
            self._stop("perf's output is not perf.data (no PERFILE2 magic)")
            return False
        g = grammar_for(big_endian)
        if g.pipe_header.parse(bytes(buf[:PIPE_HEADER_SIZE])).size != PIPE_HEADER_SIZE:
            self._stop("perf's output is not a pipe-mode stream")
            return False
        self._header = header_struct(g).unpack_from
        self._u64 = struct.Struct(g.endian + "Q").unpack_from
        self._u32 = struct.Struct(g.endian + "I").unpack_from
        return True

    def _walk(self, buf: memoryview | bytes, pos: int) -> int:
        """Count the complete records from ``pos``; return where the incomplete one starts."""
        header, u64 = self._header, self._u64
        assert header is not None
        stats = self.stats
        end = len(buf)
        while pos + HEADER_SIZE <= end:
            rtype, _misc, size = header(buf, pos)
            if size < HEADER_SIZE:
                offset = self._fed - end + pos
                return self._stop(f"corrupt record at stream offset {offset}: size {size}")
            if pos + size > end:
                break
            extra = payload_size(rtype, buf, pos, size, self._u32, u64)
            if extra:  # tracing data or AUX data follows the record
                nxt = pos + size + extra
                if nxt > end:
                    self._skip = nxt - end
                    return end
                pos = nxt
                continue
            elif rtype in (_COMPRESSED, _COMPRESSED2):
                self.compressed = True
                if not self._decompress(rtype, buf, pos, size, end):
                    return -1
            else:
                stats.add_bytes(rtype, buf, pos, size, u64)
            pos += size
        return pos

    def _decompress(self, rtype: int, buf: memoryview | bytes, pos: int, size: int,
                    end: int) -> bool:
        """Count the records inside a compressed record (False: counting stopped)."""
        offset = self._fed - end + pos
        data = compressed_data(rtype == _COMPRESSED2, buf, pos, pos + size, self._u64)
        if data is None:
            self._stop(f"corrupt COMPRESSED2 record at stream offset {offset}")
            return False
        try:
            if self._zstd is None:
                self._zstd = zstd_decompressor(STDIN_NAME, offset)
                self._inner = StreamCounter(self.stats)
                self._inner._header, self._inner._u64 = self._header, self._u64
                self._inner._u32 = self._u32
            chunk = self._zstd.decompress(data)
        except InputError as exc:
            self._stop(str(exc))
            return False
        except Exception as exc:  # the binding's own error type
            self._stop(f"compressed data at stream offset {offset} does not decompress: {exc}")
            return False
        assert self._inner is not None
        self._inner.feed(chunk)
        return True

    def _stop(self, problem: str) -> int:
        """Give up counting (the bytes are still relayed); returns -1."""
        self.stats.errors.append(problem)
        self._stopped = True
        self._pending = b""
        self._skip = 0
        return -1


class StreamRelay:
    """A thread that copies ``source`` (perf's stdout) to ``sink`` and counts records.

    ``close_sink``: close the sink at the end of the stream (the decoder's stdin,
    so that it sees EOF). When the sink's reader goes away, the source is closed
    too, so perf gets EPIPE as if it wrote to that reader directly.
    """

    def __init__(self, source: IO[bytes], sink: IO[bytes] | int, close_sink: bool = False) -> None:
        self.source = source
        self.sink = sink
        self.close_sink = close_sink
        self.counter = StreamCounter()
        #: the sink could not be written: the source was closed
        self.broken_pipe = False
        #: why, unless its reader went away (EPIPE): the output cannot be written
        self.error: OSError | None = None
        self._thread = threading.Thread(target=self._run, name="ehtool-perf-relay", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def join(self, timeout: float | None = None) -> RecordingStats | None:
        """Wait for the end of the stream; the counts, or None if it has not ended."""
        self._thread.join(timeout)
        if self._thread.is_alive():
            return None
        return self.counter.finish()

    def _run(self) -> None:
        src = self.source.fileno()
        dst = self.sink if isinstance(self.sink, int) else self.sink.fileno()
        try:
            while data := _read(src):
                self.counter.feed(data)
                _write_all(dst, data)
        except OSError as exc:  # the reader went away (EPIPE) or the sink is unusable
            self.broken_pipe = True
            if exc.errno != errno.EPIPE:
                self.error = exc
        finally:
            with contextlib.suppress(OSError):
                self.source.close()
            if self.close_sink and not isinstance(self.sink, int):
                with contextlib.suppress(OSError):
                    self.sink.close()


def _read(fd: int) -> bytes:
    """The next bytes of the pipe (b'' at its end or when it cannot be read)."""
    while True:
        try:
            return os.read(fd, _READ)
        except InterruptedError:
            continue
        except OSError:
            return b""


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
