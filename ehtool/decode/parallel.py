"""Decoding with several processes, with the output of one (``-j N``).

A big file-mode input is split into N parts at FINISHED_ROUND records (perf-decode
sorts by time only within a round, so the parts' outputs concatenate in its order).
The processes form a chain: each one forks the next, which walks the record headers
to its own split point (applying the metadata records on the way, so it knows what
the records before its part said), forks the next in turn, and formats its part into
a temporary file framed to follow the previous part. The first part is formatted by
the calling process, the others are spliced in after it, in order.

Several inputs are decoded side by side instead, one process each (at most N at a
time); each worker holds its events until the inputs before it are written, then
writes them to the output itself (:mod:`ehtool.decode.handover`).

Whatever the split, the result is one process's: each part's warnings follow the
previous part's, recoverable problems are reported together after the last record,
a fatal input error in a part (where one process would stop reading) drops the parts
after it, and a signal that ends a worker ends the decode the same way.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import gc
import os
import signal
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, BinaryIO

import orjson

from ehtool import workers
from ehtool.decode.formatting import Batch, Joined, Spliced, format_batches
from ehtool.decode.handover import HeldOutput, held_limit
from ehtool.decode.options import DecodeOptions
from ehtool.errors import (
    EhtoolError,
    InputError,
    OutputError,
    SignalExit,
    output_error,
    part_file_error,
)
from ehtool.workers import Worker

if TYPE_CHECKING:
    from ehtool.perfdata import PerfDataFile
    from ehtool.render.document import EventsWriter
    from ehtool.render.events import SampleFormatter

#: data sections smaller than this are decoded by one process
PARALLEL_MIN_BYTES = 8 << 20
#: each part of a split file is at least this big
PART_MIN_BYTES = 4 << 20


@dataclass
class WorkerReport:
    """What a worker process tells the calling one (as JSON, through a file)."""

    #: False: the worker found no split point (it and every later part are empty)
    started: bool = False
    count: int = 0
    warnings: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    #: a fatal input error in this part: the parts after it are dropped
    fatal: str | None = None
    signal: int = 0
    internal: str | None = None
    #: the worker could not write its part (ENOSPC, EFBIG): -o FILE is left as it was
    output_error: str | None = None
    #: the reader of the output went away (EPIPE) while the worker wrote to it
    broken_pipe: bool = False
    selection: list[str] = field(default_factory=list)

    @classmethod
    def read(cls, f: IO[bytes], status: int | None = None) -> WorkerReport:
        f.seek(0)
        try:
            return cls(**orjson.loads(f.read()))
        except (ValueError, TypeError):
            raise EhtoolError(f"a decoding worker died (wait status {status})") from None

    def write(self, f: IO[bytes]) -> None:
        f.write(orjson.dumps(dataclasses.asdict(self)))
        f.flush()


def parts_for(f: PerfDataFile, options: DecodeOptions) -> int:
    """How many processes decode the open input ``f`` (1: no split)."""
    selection = options.selection
    if (options.jobs < 2 or f.pipe_mode or "comm" in options.meta
            or (selection is not None and not selection.parallel_safe)
            or options.time in ("rel", "delta")):  # each time depends on the one before
        return 1
    start, end = f.data_range
    if end - start < PARALLEL_MIN_BYTES:
        return 1
    return max(1, min(options.jobs, (end - start) // PART_MIN_BYTES))


def split_batches(f: PerfDataFile, fmt: SampleFormatter, options: DecodeOptions,
                  writer: EventsWriter, problems: list[InputError],
                  parts: int) -> Iterator[Batch]:
    """The formatted events of ``f`` decoded by ``parts`` processes: this one's part as
    batches, then each worker's part as a :class:`Spliced` file (``writer`` frames it)."""
    targets = f.split_targets(parts)
    with contextlib.ExitStack() as stack:
        import tempfile

        outs = [stack.enter_context(tempfile.TemporaryFile()) for _ in targets]
        reports = [stack.enter_context(workers.report_file()) for _ in targets]
        pid = status = 0
        try:
            with workers.held_signals():  # a signal meanwhile is raised once pid is set
                pid = _fork_chain(f, fmt, options, writer, outs, reports, targets)
            f.stop_at_split(targets[0])
            yield from format_batches(f, fmt, options, writer.separator)
        except BaseException:  # a fatal input error, a signal: the other parts are not wanted
            if pid:
                _kill_group(pid)
            raise
        finally:
            if pid:
                status = os.waitpid(pid, 0)[1]
        for out, report_file in zip(outs, reports, strict=True):
            report = WorkerReport.read(report_file, status)
            if report.signal:
                raise SignalExit(report.signal)
            if report.internal:
                raise EhtoolError(report.internal)
            if report.output_error:
                raise OutputError(report.output_error)
            if not report.started:
                break
            out.seek(0)
            yield Spliced(out, report.count)
            _replay(report, options, problems)
            if report.fatal:
                raise InputError(report.fatal)


def _fork_chain(f: PerfDataFile, fmt: SampleFormatter, options: DecodeOptions,
                writer: EventsWriter, outs: list[BinaryIO], reports: list[BinaryIO],
                targets: list[int]) -> int:
    """Fork the first worker of the chain, in a process group of its own; its pid."""
    pid = os.fork()
    if pid == 0:  # never returns
        try:
            _worker(f, fmt, options, writer, outs, reports, targets, 1)
        finally:
            os._exit(1)
    with contextlib.suppress(OSError):
        os.setpgid(pid, pid)  # (the worker does the same): the chain is one group
    return pid


def _replay(report: WorkerReport, options: DecodeOptions, problems: list[InputError]) -> None:
    """A worker's warnings, found names and problems, in the calling process."""
    if options.selection is not None:
        options.selection.absorb(report.selection)
    if options.warn is not None:
        for message in report.warnings:
            options.warn(message)
    problems += [InputError(message) for message in report.problems]


def _write_part(batches: Iterator[Batch], sub: EventsWriter, report: WorkerReport) -> None:
    """A worker's events through ``sub`` (a continuation of the caller's writer); a
    fatal input error ends them and goes into ``report``."""
    try:
        for batch in batches:  # (a worker's batches are never Spliced: jobs=1)
            if type(batch) is Joined:
                sub.joined(batch.data, batch.count)
                report.count += batch.count
            else:
                sub.events(batch)
                report.count += len(batch)
    except OutputError:
        raise  # (not the input's: the worker could not hold or write its events)
    except EhtoolError as exc:
        report.fatal = str(exc)


def _ended(report: WorkerReport, exc: BaseException, *, part: bool) -> None:
    """What ended a worker early, for the caller: a signal, an output error (``part``:
    the worker writes only its part file) or an internal error."""
    if isinstance(exc, KeyboardInterrupt):
        report.signal = 2
    elif isinstance(exc, SystemExit):  # SignalExit: a terminating signal reached it
        code = exc.code
        report.signal = code - 128 if isinstance(code, int) and code > 128 else 15
    elif isinstance(exc, BrokenPipeError) and not part:
        report.broken_pipe = True
    elif isinstance(exc, OutputError):
        report.output_error = str(exc)
    elif isinstance(exc, OSError) and exc.strerror:  # ENOSPC, EFBIG
        report.output_error = (part_file_error(exc) if part
                               else str(output_error(exc)))
    else:
        report.internal = f"internal error in a decoding worker: {exc!r}"


def _kill_group(pid: int) -> None:
    """Kill the chain of workers (they may have exited: waitpid reaps the first)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def _worker(f: PerfDataFile, fmt: SampleFormatter, options: DecodeOptions, writer: EventsWriter,
            outs: list[BinaryIO], reports: list[BinaryIO], targets: list[int],
            index: int) -> None:
    """Worker ``index`` of the chain: find the split point of ``targets[index - 1]``, fork
    the next worker, format the part into ``outs[index - 1]``, report, wait for the
    next worker, exit without returning."""
    if index == 1:
        with contextlib.suppress(OSError):
            os.setpgid(0, 0)
    report = WorkerReport()
    f.on_error = lambda err: report.problems.append(str(err))
    fmt.warn = report.warnings.append  # no handler exists yet: this is the one they take
    child = 0
    try:
        workers.release()  # (held since the fork)
        gc.freeze()  # the objects inherited: never collected here
        split = f.split_point(targets[index - 1])
        if split is not None:
            report.started = True
            f.restrict(split, f.data_range[1])
            if index < len(targets):
                with workers.held_signals():
                    child = os.fork()
                    if child == 0:  # never returns
                        try:
                            _worker(f, fmt, options, writer, outs, reports, targets, index + 1)
                        finally:
                            os._exit(1)
                f.stop_at_split(targets[index])
            with open(os.dup(outs[index - 1].fileno()), "wb", buffering=1 << 20) as sink:
                _write_part(format_batches(f, fmt, options, writer.separator),
                            writer.continuation(sink), report)
            if options.selection is not None:
                report.selection = options.selection.report()
    except BaseException as exc:  # reported by the caller, which owns stderr's story
        _ended(report, exc, part=True)
    finally:
        report.write(reports[index - 1])
        if child:
            if report.fatal or report.signal or report.internal or report.output_error:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(child, signal.SIGKILL)  # its part would be dropped
            with contextlib.suppress(ChildProcessError):
                os.waitpid(child, 0)
        os._exit(0)


# -- several inputs side by side ------------------------------------------------------

def concurrent_files(paths: list[str], options: DecodeOptions, writer: EventsWriter,
                     decode_one: Callable[[str, DecodeOptions, EventsWriter], Iterator[Batch]],
                     ) -> Iterator[tuple[str, WorkerReport | None]]:
    """Decode ``paths`` with up to ``options.jobs`` processes at a time, in argument
    order. ``decode_one(path, options, writer)`` gives an input's batches (one process:
    its options say jobs=1). ``writer`` must write to a file descriptor.

    The calling process is one of the N: when every input before the next one is
    written and no worker has taken it, this yields ``(path, None)`` and the caller
    decodes that input itself, straight to ``writer``, while workers take the inputs
    after it. A worker's input is written here: its array is opened, the worker (which
    has held its events: :mod:`ehtool.decode.handover`) is let go to write them to the
    shared descriptor, and the array is closed; then this yields ``(path, report)`` for
    the caller to report its warnings and error (``report.fatal``)."""
    pending = list(enumerate(paths))
    running: list[_Running] = []  # in argument order
    fd = writer.out.fileno()
    # into a regular file, held events go to a temporary file as they come and the
    # kernel copies them at the turn (sendfile): writing 50 MB held in memory there
    # took 3-5 times as long, all of it after the decoding
    to_file = stat.S_ISREG(os.fstat(fd).st_mode)

    def start(busy: int, tail: bool = False) -> None:
        """Fork workers for the next inputs while fewer than ``busy`` compute; with
        ``tail``, when no more inputs are left than processes, for the last ones (the
        one after the head is best left to the core the head frees: it will not wait)."""
        while (pending and sum(r.worker.busy for r in running) < busy
               and len(running) < workers.ahead(options.jobs)):
            index, path = pending.pop(-1 if tail and len(pending) <= options.jobs else 0)
            report_file = workers.report_file()
            limit = 0 if to_file else held_limit(sum(r.limit for r in running))
            with workers.held_signals():
                worker = workers.fork(lambda path=path, report_file=report_file, limit=limit:
                                      _file_worker(path, options, writer, decode_one, fd, limit,
                                                   report_file), holds=True)
            running.append(_Running(index, path, worker, report_file, limit))
            running.sort(key=lambda r: r.index)

    try:
        while pending or running:
            if pending and (not running or pending[0][0] < running[0].index):
                # the caller's turn: every input before this one is written
                mine = pending.pop(0)[1]
                start(options.jobs - 1)
                yield mine, None
                continue
            head = running[0]  # (stays in running until it ended: finally stops it)
            writer.begin_file(head.path)
            writer.out.flush()
            workers.let_go(head.worker)
            while True:  # meanwhile the other cores take the next inputs
                start(options.jobs, tail=head.worker.busy)  # (the head counts while busy)
                if not head.worker.running:
                    break
                workers.wait_any(r.worker for r in running)
            running.pop(0)
            report = WorkerReport.read(head.report_file, head.worker.status)
            head.report_file.close()
            if report.signal:
                raise SignalExit(report.signal)
            if report.internal:
                raise EhtoolError(report.internal)
            if report.broken_pipe:
                raise BrokenPipeError(errno.EPIPE, os.strerror(errno.EPIPE))
            if report.output_error:
                raise OutputError(report.output_error)
            writer.written(report.count)
            writer.end_file()
            yield head.path, report
    finally:
        workers.stop(r.worker for r in running)
        for r in running:
            r.report_file.close()


@dataclass
class _Running:
    """A file worker: its input (and its place among the inputs), process and report
    file."""

    index: int
    path: str
    worker: Worker
    report_file: BinaryIO
    #: the bytes it may keep in memory until it is let go
    limit: int


def _file_worker(path: str, options: DecodeOptions, writer: EventsWriter,
                 decode_one: Callable[[str, DecodeOptions, EventsWriter], Iterator[Batch]],
                 fd: int, limit: int, report_file: BinaryIO) -> None:
    """Decode one input, holding its events until it is let go, then writing them to
    ``fd`` (framed as the array's whole content); report, exit."""
    report = WorkerReport(started=True)
    try:
        workers.release()  # (held since the fork)
        one = dataclasses.replace(options, jobs=1, progress=None,
                                  warn=report.warnings.append)
        held = HeldOutput(fd, limit)
        _write_part(decode_one(path, one, writer), writer.continuation(held, first=True),
                    report)
        if options.selection is not None:
            report.selection = options.selection.report()
        workers.idle()
        if not held.finish():
            return  # the caller is gone
    except BaseException as exc:
        _ended(report, exc, part=False)
    finally:
        report.write(report_file)
        os._exit(0)
