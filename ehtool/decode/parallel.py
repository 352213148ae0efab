"""Decoding with several processes, with the output of one (``-j N``): a relay.

The inputs are cut into parts, in output order: a small file is one part, a big
file-mode one is cut at FINISHED_ROUND records every PART_MIN_BYTES or so (perf-decode
sorts by time only within a round, so the parts' outputs concatenate in its order).
N worker processes take the parts in turn (part i goes to worker i mod N) and decode
each one as soon as they can. The calling process frames the document and hands the
output on from part to part, in order: it tells the part's worker that its turn has
come, and the worker writes what it held of the part, then the rest straight through,
and reports the part (its count, warnings, problems or fatal error) when it is written.

A worker whose part's turn has not come holds its events in memory that it reuses from
part to part (a temporary file takes what does not fit), and goes on to its next part;
it keeps at most two parts so. Every process touches the memory of a couple of parts,
whatever the size of the inputs, and no part is copied twice.

Whatever the cut, the result is one process's: each part's warnings follow the previous
part's, recoverable problems are reported together after an input's last part, a fatal
input error in a part (where one process would stop reading) drops the input's parts
after it, and a signal that ends a worker ends the decode the same way.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import functools
import gc
import mmap
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING

import orjson

from ehtool import workers
from ehtool.decode.formatting import Joined, format_batches, open_perf
from ehtool.decode.options import DecodeOptions
from ehtool.errors import (
    EhtoolError,
    InputError,
    OutputError,
    SignalExit,
    combined,
    input_name,
    output_error,
    part_file_error,
)
from ehtool.render.document import copy_rest
from ehtool.render.times import no_clock_warning

if TYPE_CHECKING:
    from ehtool.perfdata import PerfDataFile
    from ehtool.render.document import EventsWriter
    from ehtool.render.events import SampleFormatter
    from ehtool.workers import Worker

#: data sections smaller than this are one part
PARALLEL_MIN_BYTES = 8 << 20
#: each part of a cut file is at least this big
PART_MIN_BYTES = 4 << 20
#: what a worker keeps of one held part in memory (the rest goes to a temporary file)
HELD_BYTES = 64 << 20

#: what the calling process tells a worker, a byte per part in the worker's order
GO, FIRST, DROP = b"g", b"f", b"d"  # (FIRST: no event of its input came before)


@dataclass
class WorkerReport:
    """What a worker tells the calling process of a part, once the part is written."""

    count: int = 0
    warnings: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    #: a fatal input error in this part: the input's parts after it are dropped
    fatal: str | None = None
    selection: list[str] = field(default_factory=list)
    # what ended the worker (it says nothing after): the decode ends the same way
    signal: int = 0
    internal: str | None = None
    #: the worker could not write (ENOSPC, EFBIG): -o FILE is left as it was
    output_error: str | None = None
    #: the reader of the output went away (EPIPE) while the worker wrote to it
    broken_pipe: bool = False

    def encode(self) -> bytes:
        return orjson.dumps(dataclasses.asdict(self))


@dataclass(frozen=True)
class Part:
    """Part ``index`` of the ``parts`` input ``number`` (``path``) is cut into."""

    number: int
    path: str
    index: int
    parts: int


def parts_of(path: str, options: DecodeOptions) -> int:
    """How many parts ``path`` is cut into (1: it is not cut). Decided from its size
    alone, so that the calling process opens no input; a worker that finds the input
    cannot be cut (pipe mode, zstd, no FINISHED_ROUND) reads it all in part 0."""
    selection = options.selection
    if ("comm" in options.meta  # thread names and rel/delta times need every record before
            or options.time in ("rel", "delta")
            or (selection is not None and not selection.parallel_safe)):
        return 1
    try:
        st = os.stat(path)
    except OSError:
        return 1
    if not stat.S_ISREG(st.st_mode) or st.st_size < PARALLEL_MIN_BYTES:
        return 1
    return max(1, st.st_size // PART_MIN_BYTES)


def relay(paths: list[str], options: DecodeOptions,
          writer: EventsWriter) -> Iterator[tuple[str, EhtoolError | None]]:
    """Decode ``paths`` into ``writer`` (which must write to a file descriptor) with up to
    ``options.jobs`` workers; after each input, yield it and its error (or None). The
    workers' warnings go to ``options.warn``, the names they found to the selection."""
    inputs = [(path, parts_of(path, options)) for path in paths]
    parts = [Part(i, path, k, n) for i, (path, n) in enumerate(inputs) for k in range(n)]
    size = max(1, min(options.jobs, len(parts)))
    fd = writer.out.fileno()
    crew: list[Worker] = []
    try:
        for w in range(size):
            run = functools.partial(_work, parts[w::size], options, writer, fd)
            with workers.held_signals():
                crew.append(workers.fork(run, told=True))
        turn = 0
        for path, n in inputs:
            writer.begin_file(input_name(path))
            count, problems, fatal = 0, [], None
            for _ in range(n):
                worker = crew[turn % size]
                turn += 1
                if fatal is not None:
                    workers.tell(worker, DROP)
                    continue
                writer.out.flush()
                workers.tell(worker, FIRST if count == 0 else GO)
                report = _hear(worker)
                count += report.count
                writer.written(report.count)
                _replay(report, options)
                problems += [InputError(message) for message in report.problems]
                if report.fatal is not None:
                    fatal = InputError(report.fatal)
            writer.end_file()
            yield path, fatal or (combined(problems) if problems else None)
        while any(w.running for w in crew):  # each one exits after its last part
            workers.wait_any(crew)
    finally:
        workers.stop(crew)


def _hear(worker: Worker) -> WorkerReport:
    """The report of ``worker``'s part whose turn it is (what ended the worker raises)."""
    message = workers.hear(worker)
    try:
        report = WorkerReport(**orjson.loads(message)) if message is not None else None
    except (ValueError, TypeError):
        report = None
    if report is None:
        raise EhtoolError(f"a decoding worker died (wait status {worker.status})")
    if report.signal:
        raise SignalExit(report.signal)
    if report.internal:
        raise EhtoolError(report.internal)
    if report.broken_pipe:
        raise BrokenPipeError(32, os.strerror(32))
    if report.output_error:
        raise OutputError(report.output_error)
    return report


def _replay(report: WorkerReport, options: DecodeOptions) -> None:
    """A part's warnings and found names, in the calling process."""
    if options.selection is not None:
        options.selection.absorb(report.selection)
    if options.warn is not None:
        for message in report.warnings:
            options.warn(message)


# -- a worker ----------------------------------------------------------------------------

class _Dropped(Exception):
    """The part being decoded is not wanted (its input had a fatal error before it)."""


def _work(parts: list[Part], options: DecodeOptions, writer: EventsWriter, fd: int) -> None:
    """A worker: decode ``parts`` in order, each written when its turn comes; exit."""
    crew = None
    try:
        workers.release()  # (held since the fork)
        gc.freeze()  # the objects inherited: never collected here
        crew = _Worker(options, writer, fd)
        for part in parts:
            crew.decode(part)
        crew.drain()
    except BaseException as exc:  # reported to the caller, which owns stderr's story
        if crew is not None:
            crew.failed(exc)
    finally:
        os._exit(0)


class _Worker:
    """A worker's parts: the one being decoded, those decoded that wait for their turn,
    the open input, the reused memory."""

    def __init__(self, options: DecodeOptions, writer: EventsWriter, fd: int) -> None:
        self.options = options
        self.writer = writer
        self.out = open(os.dup(fd), "wb", buffering=1 << 20)  # noqa: SIM115
        self.waiting: collections.deque[_Held] = collections.deque()
        self.current: _Held | None = None
        self.arenas: list[mmap.mmap] = []  # (at most two: the current part's, a waiting one's)
        self.input: _Input | None = None

    def decode(self, part: Part) -> None:
        """Decode ``part``; then, if two parts wait for their turn, wait for the first."""
        held = self.current = _Held(self, part, self._arena())
        with contextlib.suppress(_Dropped):
            self._decode(part, held)
        self.current = None
        if held.state == "held":
            self.waiting.append(held)
        elif held.state == "direct":
            held.done()
        else:
            held.free()
        while len(self.waiting) > 1:  # (two arenas are in use)
            self.listen(wait=True)

    def drain(self) -> None:
        """Write the parts that still wait, as their turns come."""
        while self.waiting:
            self.listen(wait=True)

    def listen(self, wait: bool = False) -> None:
        """Act on what the caller said for the first part that waits for its turn (or
        the one being decoded); with ``wait``, wait until it said something."""
        while True:
            held = self.waiting[0] if self.waiting else self.current
            if held is None or held.state != "held":
                return
            message = workers.heard(wait)
            if message is None:
                return
            if not message:  # the caller is gone: nobody will read these events
                raise SystemExit(0)
            wait = False
            if held is not self.current:
                self.waiting.popleft()
            if message == DROP:
                held.state = "dropped"
                if held is not self.current:
                    held.free()
                continue
            held.go(first=message == FIRST)
            if held is not self.current:
                held.done()

    def failed(self, exc: BaseException) -> None:
        """Tell the caller what ended this worker (it hears it at the next part it waits
        for from here)."""
        report = WorkerReport()
        if isinstance(exc, KeyboardInterrupt):
            report.signal = 2
        elif isinstance(exc, SystemExit):  # SignalExit: a terminating signal reached it
            code = exc.code
            if code == 0:  # the caller is gone
                return
            report.signal = code - 128 if isinstance(code, int) and code > 128 else 15
        elif isinstance(exc, BrokenPipeError):
            report.broken_pipe = True
        elif isinstance(exc, OutputError):
            report.output_error = str(exc)
        elif isinstance(exc, OSError) and exc.strerror:  # ENOSPC, EFBIG
            report.output_error = str(output_error(exc))
        else:
            report.internal = f"internal error in a decoding worker: {exc!r}"
        workers.say(report.encode())

    # -- decoding a part --------------------------------------------------------------

    def _decode(self, part: Part, held: _Held) -> None:
        report = held.report
        options = dataclasses.replace(self.options, jobs=1, progress=None,
                                      warn=report.warnings.append)
        try:
            found = self._open(part, options)
            if part.index == 0 and self.input is not None:
                report.problems += self.input.problems
            if found is not None:
                f, fmt = found
                f.on_error = lambda err: report.problems.append(str(err))
                fmt.warn = report.warnings.append
                sub = self.writer.continuation(held, first=part.index == 0)
                for batch in format_batches(f, fmt, options, self.writer.separator):
                    self.listen()  # (a part waiting for its turn is not kept waiting)
                    if type(batch) is Joined:
                        sub.joined(batch.data, batch.count)
                        report.count += batch.count
                    else:
                        sub.events(batch)
                        report.count += len(batch)
                assert self.input is not None
                self.input.stopped = f.data_range[1]
            if part.index == part.parts - 1 and self.input is not None:
                self.input.close(options)
        except (_Dropped, OutputError):
            self._close()
            raise
        except EhtoolError as exc:
            report.fatal = str(exc)
            self._close()
        if options.selection is not None:
            report.selection = options.selection.report()

    def _open(self, part: Part,
              options: DecodeOptions) -> tuple[PerfDataFile, SampleFormatter] | None:
        """The input of ``part``, set to read the part; None when the part is empty."""
        now = self.input
        if now is not None and now.number != part.number:
            self._close()
            now = None
        if now is None:
            now = self.input = _Input(part, options, announce=part.index == 0)
        f = now.file
        last = part.index == part.parts - 1
        if part.index > 0:
            if not now.cut:
                return None
            start = f.seek_part(now.stopped, now.end, now.targets[part.index - 1])
            now.stopped = now.end if start is None else start
            if start is None or (not last and start >= now.targets[part.index]):
                return None  # (no split follows; or the next part starts here too)
        if now.cut and not last:
            f.stop_at_split(now.targets[part.index])
        return f, now.fmt

    def _close(self) -> None:
        if self.input is not None:
            self.input.stack.close()
            self.input = None

    # -- memory ----------------------------------------------------------------------

    def _arena(self) -> mmap.mmap:
        """Memory for the part about to be decoded: one no other part holds."""
        free = self._free_arena()
        if free is None:
            free = mmap.mmap(-1, HELD_BYTES, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
            self.arenas.append(free)
        return free

    def _free_arena(self) -> mmap.mmap | None:
        busy = {id(h.arena) for h in self.waiting}
        return next((a for a in self.arenas if id(a) not in busy), None)


class _Input:
    """The input a worker reads its parts of, open (with its formatter)."""

    def __init__(self, part: Part, options: DecodeOptions, *, announce: bool) -> None:
        self.number, self.path = part.number, part.path
        self.stack = contextlib.ExitStack()
        self.file, self.fmt, problems = self.stack.enter_context(
            open_perf(part.path, options, announce=announce))
        #: the problems met opening it (part 0 reports them)
        self.problems = [str(problem) for problem in problems]
        start, self.end = self.file.data_range
        self.cut = part.parts > 1 and not self.file.pipe_mode
        self.targets = self.file.split_targets(part.parts)
        #: where the last part read stopped (a split point or the end of the data), or
        #: the start of the data
        self.stopped = start

    def close(self, options: DecodeOptions) -> None:
        """After the input's last part: what one process says after its last event."""
        if (options.time == "iso" and not self.file.session.clock.utc_known
                and options.warn is not None):
            options.warn(no_clock_warning(self.path))


class _Held:
    """A part's output in a worker: held until its turn comes (in an arena, then a
    temporary file), then written to the output, the rest straight through."""

    def __init__(self, crew: _Worker, part: Part, arena: mmap.mmap) -> None:
        self.crew = crew
        self.part = part
        self.arena = arena
        self.report = WorkerReport()
        #: held until told; direct: written as it comes; dropped: discarded
        self.state = "held"
        self.size = 0
        self.spill: IO[bytes] | None = None
        #: the first bytes out must lead as the first events of the input's array
        self.relead = False

    def write(self, data: bytes) -> int:
        self.crew.listen()
        if self.state == "direct":
            self._out(data)
        elif self.state == "dropped":
            raise _Dropped
        elif self.spill is None and self.size + len(data) <= len(self.arena):
            self.arena[self.size:self.size + len(data)] = data
            self.size += len(data)
        else:
            try:
                if self.spill is None:
                    import tempfile

                    self.spill = tempfile.TemporaryFile(buffering=1 << 20)  # noqa: SIM115
                self.spill.write(data)
            except OSError as exc:
                raise OutputError(part_file_error(exc)) from None
        return len(data)

    def go(self, *, first: bool) -> None:
        """The turn came: write what is held; what comes next is written through."""
        self.state = "direct"
        self.relead = first and self.part.index > 0
        if self.size:
            with memoryview(self.arena) as view:
                self._out(view[:self.size])
            self.size = 0
        if self.spill is not None:
            spill, self.spill = self.spill, None
            with spill:
                try:
                    spill.flush()
                    spill.seek(0)
                except OSError as exc:
                    raise OutputError(part_file_error(exc)) from None
                if self.relead:  # (nothing out yet: the arena was empty)
                    self._out(spill.read(1 << 20))
                copy_rest(spill, self.crew.out)

    def _out(self, data: bytes | memoryview) -> None:
        if self.relead and data:
            follower, first = self.crew.writer.leads()
            if bytes(data[:len(follower)]) != follower:
                raise AssertionError(f"a part does not start with {follower!r}")
            self.crew.out.write(first)
            data = data[len(follower):]
            self.relead = False
        self.crew.out.write(data)

    def done(self) -> None:
        """The part is decoded and written: report it."""
        self.crew.out.flush()
        workers.say(self.report.encode())

    def free(self) -> None:
        if self.spill is not None:
            self.spill.close()
            self.spill = None
