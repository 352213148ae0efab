"""A file worker's output: held until its turn comes, then written to the output itself.

Decoding inputs side by side, a worker's events must follow those of the inputs before
it. Instead of writing them into a part file that the calling process copies later
(one more write and copy of every byte), the worker keeps them, in memory up to a
limit and in a temporary file beyond it, and when its turn comes (the caller has
written everything before, flushed its buffer and let it go) writes them to the output
descriptor it shares with the caller, then the rest of its events as they come.

What it keeps in memory is copied into private mappings of CHUNK_BYTES, mapped as they
are needed, with transparent huge pages asked for (``MADV_HUGEPAGE``): kept as the
formatter's own buffers, each 4 KB page was a page fault of its own. Measured on four
250,000-event inputs with ``-j 2`` (malloc thresholds as ``decode`` sets them): half the
page faults, ~5% less CPU time, for one more copy of each held byte. A mapping that
cannot be made (a memory limit) sends the rest to the temporary file. Once written, a
chunk is kept for the worker's next input (``spare``, up to SPARE_BYTES), its pages given
back lazily (``MADV_FREE``: the kernel takes them only when memory runs short): the
first 50 MB a worker holds cost it 25 ms of page faults here (and up to 100 ms when
the kernel had to find huge pages in memory never touched), the next 50 MB 2 ms.
"""

from __future__ import annotations

import contextlib
import functools
import mmap
import os
import signal
import stat
from collections.abc import Callable, Iterable
from typing import Any, BinaryIO

from ehtool import workers
from ehtool.errors import OutputError, part_file_error
from ehtool.render.document import copy_rest

#: what the file workers waiting for their turn together keep in memory, at most
HELD_BYTES = 256 << 20
#: what one worker keeps in memory before it uses a temporary file: at most, and at
#: least (when the others already keep the rest of HELD_BYTES)
HELD_MAX = 64 << 20
HELD_MIN = 1 << 20


def held_limit(others: int) -> int:
    """Bytes a new worker may keep in memory when the running ones may keep ``others``
    (so all of them keep at most HELD_BYTES, plus HELD_MIN for each one started past
    it)."""
    return max(HELD_MIN, min(HELD_MAX, HELD_BYTES - others))


class Stopped(BaseException):
    """The caller asked a worker that was let go to stop (:func:`workers.ask_to_stop`):
    its output so far ends with a whole write."""


class HeldOutput:
    """A binary sink (``write``) for a worker forked with ``holds=True``: what it is
    given is held until the worker is let go, then written to ``fd``."""

    def __init__(self, fd: int, limit: int, spare: list[mmap.mmap] | None = None) -> None:
        self.fd = fd
        self.limit = limit
        #: chunks written before, to be used again (this one's go there once written)
        self._spare = [] if spare is None else spare
        del self._spare[limit // CHUNK_BYTES:]  # (no more than this input may hold)
        self._chunks: list[mmap.mmap] = []  # full but the last, which has _used bytes
        self._used = 0
        self._size = 0  # bytes in the chunks
        self._spill: BinaryIO | None = None
        self._direct: BinaryIO | None = None

    def write(self, data: bytes) -> int:
        self._check()
        return self._put(data)

    def writelines(self, parts: Iterable[bytes]) -> None:
        """Write ``parts`` as one write: the turn, or a request to stop, comes before
        or after all of them."""
        self._check()
        if self._direct is not None:  # (in C: no signal handler runs between them)
            self._direct.writelines(parts)
            return
        for part in parts:
            self._put(part)

    def _check(self) -> None:
        """Before a write: write what is held once the turn came; end here if the
        caller is gone or asked to stop, or a signal came during the writes before."""
        if self._direct is None:
            turn = workers.released()
            if turn is False:  # the caller is gone: nobody will read these events
                raise SystemExit(0)
            if turn:
                self._open()
        elif workers.asked_to_stop():
            self._direct.flush()
            raise Stopped
        elif _noted:
            self._direct.flush()
            _act()

    def _put(self, data: bytes) -> int:
        if self._direct is not None:
            return self._direct.write(data)
        size = len(data)
        rest = self._keep(data) if self._spill is None else data
        if not rest:
            return size
        try:
            if self._spill is None:
                import tempfile

                self._spill = tempfile.TemporaryFile(buffering=1 << 20)  # noqa: SIM115
            self._spill.write(rest)
            return size
        except OSError as exc:
            raise OutputError(part_file_error(exc)) from None

    def _keep(self, data: bytes) -> memoryview:
        """Copy ``data`` into the chunks, mapping more as needed; what was not kept
        (all of it past the limit, the rest when no more memory can be mapped)."""
        view = memoryview(data).cast("B")
        if self._size + len(view) > self.limit:
            return view
        while view:
            if not self._chunks or self._used == CHUNK_BYTES:
                chunk = self._spare.pop() if self._spare else _chunk()
                if chunk is None:
                    return view
                self._chunks.append(chunk)
                self._used = 0
            n = min(len(view), CHUNK_BYTES - self._used)
            self._chunks[-1][self._used:self._used + n] = view[:n]
            self._used += n
            self._size += n
            view = view[n:]
        return view

    def flush_written(self) -> None:
        """Ended early: flush what was written since the turn came (whole writes), into a
        regular file (into a pipe the output is cut anyway, and a reader that stopped
        reading would keep the flush waiting for ever)."""
        if self._direct is not None:
            with contextlib.suppress(OSError, ValueError):
                if stat.S_ISREG(os.fstat(self.fd).st_mode):
                    self._direct.flush()
                    return
            _abandoned.append(self._direct)  # (freed, it would flush: the worker exits
            #                                   through os._exit, which frees nothing)

    def finish(self) -> bool:
        """Wait for the turn and write what is held; False if the caller is gone."""
        if self._direct is None:
            if not workers.hold():
                return False
            self._open()
        assert self._direct is not None
        self._direct.flush()
        _writing[:] = []
        _act()  # (a signal during the last writes)
        return True

    def _open(self) -> None:
        """The turn came: write what is held (whole: a signal meanwhile acts after it),
        then write straight through."""
        with workers.held_signals():
            self._write_held()
            _writing[:] = [True]

    def _write_held(self) -> None:
        chunks, self._chunks = self._chunks, []
        while chunks:
            chunk = chunks.pop(0)
            _write_all(self.fd, memoryview(chunk)[:CHUNK_BYTES if chunks else self._used])
            if len(self._spare) < SPARE_BYTES // CHUNK_BYTES:
                _give_back(chunk)
                self._spare.append(chunk)
            del chunk  # (or unmapped: held memory goes as it is written)
        self._direct = open(os.dup(self.fd), "wb", buffering=1 << 20)  # noqa: SIM115
        if self._spill is not None:
            spill, self._spill = self._spill, None
            try:
                spill.flush()
                spill.seek(0)
            except OSError as exc:
                raise OutputError(part_file_error(exc)) from None
            with spill:
                copy_rest(spill, self._direct)


#: writers to an output a worker stopped writing to, never flushed
_abandoned: list[BinaryIO] = []
#: (handler, signal number) of a terminating signal that came while this worker wrote
#: straight to the output, to be acted on before its next write
_noted: list[tuple[Callable[[int, Any], None], int]] = []
#: not empty while this worker writes straight to the output
_writing: list[bool] = []


def defer_signals() -> None:
    """In a file worker writing into a regular file: a terminating signal that comes
    while it writes straight to the output is acted on (its handler runs) before its
    next write, so that the output ends with a whole one: raised at once, it could stop
    a write in the middle (an interrupted system call runs the handler there), and the
    caller would close the document after half an event. At any other time the handler
    runs at once. (Not into a pipe: a write there may wait for its reader for ever, and
    a signal cuts that output anyway.)"""
    for sig in workers.HELD:
        handler = signal.getsignal(sig)
        if callable(handler):
            signal.signal(sig, functools.partial(_deferred, handler))


def _deferred(handler: Callable[[int, Any], None], signum: int, frame: Any) -> None:
    if _writing:
        _noted.append((handler, signum))
    else:
        handler(signum, frame)


def _act() -> None:
    """Run the handler of a signal noted while writing (it raises, as a rule)."""
    if _noted:
        handler, signum = _noted.pop(0)
        handler(signum, None)


#: the size of each private mapping that holds events in memory
CHUNK_BYTES = 8 << 20
#: what a worker keeps mapped for its next input, at most
SPARE_BYTES = 16 << 20


def _chunk() -> mmap.mmap | None:
    """CHUNK_BYTES of private memory, in huge pages where the kernel gives them; None
    when it cannot be mapped (ENOMEM: ``ulimit -v``, strict overcommit)."""
    try:
        chunk = mmap.mmap(-1, CHUNK_BYTES, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    except (OSError, MemoryError):
        return None
    if hasattr(mmap, "MADV_HUGEPAGE"):
        with contextlib.suppress(OSError):  # a kernel without transparent huge pages
            chunk.madvise(mmap.MADV_HUGEPAGE)
    return chunk


def _give_back(chunk: mmap.mmap) -> None:
    """Let the kernel take ``chunk``'s pages when it needs them; until then writing to
    it again costs no page fault (its content is undefined meanwhile)."""
    if hasattr(mmap, "MADV_FREE"):
        with contextlib.suppress(OSError):  # (before Linux 4.5)
            chunk.madvise(mmap.MADV_FREE)


def _write_all(fd: int, data: memoryview) -> None:
    while data:
        data = data[os.write(fd, data):]
