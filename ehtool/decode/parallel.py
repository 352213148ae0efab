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
import struct
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, BinaryIO

from ehtool import workers
from ehtool.decode.formatting import Batch, Joined, Spliced, format_batches
from ehtool.decode.handover import HeldOutput, Stopped, defer_signals, held_limit
from ehtool.decode.options import DecodeOptions
from ehtool.errors import (
    EhtoolError,
    InputError,
    OutputError,
    PartialOutput,
    output_error,
    part_file_error,
    worker_signal,
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
    problems: list[list] = field(default_factory=list)  # (``InputError.record()``)
    #: a fatal input error in this part (``InputError.record()``): the parts after it
    #: are dropped
    fatal: list | None = None
    signal: int = 0
    internal: str | None = None
    #: the worker could not write its part (ENOSPC, EFBIG): -o FILE is left as it was
    output_error: str | None = None
    #: the reader of the output went away (EPIPE) while the worker wrote to it
    broken_pipe: bool = False
    selection: list[str] = field(default_factory=list)

    @classmethod
    def take(cls, f: BinaryIO, status: int | None = None) -> list[WorkerReport]:
        """The reports a worker put into ``f``, one per input of its task (``f`` emptied
        for the next); what its wait ``status`` says if there is none."""
        try:
            reports = [cls(**fields) for fields in workers.take_reports(f)]
        except TypeError:
            reports = []
        if reports:
            return reports
        if status is not None and os.WIFSIGNALED(status):  # (SIGKILL: the OOM killer)
            raise worker_signal(os.WTERMSIG(status))
        if status is not None and os.WIFEXITED(status) and os.WEXITSTATUS(status) == 1:
            raise PartialOutput("a decoding worker stopped before its part was done (its "
                                "error is above)")  # (a SIGBUS: an input cut short)
        raise PartialOutput(f"a decoding worker died (wait status {status})")

    def put(self, f: BinaryIO) -> None:
        workers.put_report(f, self)


def parts_for(f: PerfDataFile, options: DecodeOptions) -> int:
    """How many processes decode the open input ``f`` (1: no split)."""
    selection = options.selection
    if (options.jobs < 2 or not f.splittable or "comm" in options.meta
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
            yield from format_batches(f, fmt, options, writer.joining)
        except BaseException:  # a fatal input error, a signal: the other parts are not wanted
            if pid:
                _kill_group(pid)
            raise
        finally:
            if pid:
                status = os.waitpid(pid, 0)[1]
        for out, report_file in zip(outs, reports, strict=True):
            report = WorkerReport.take(report_file, status)[0]
            if report.signal:
                raise worker_signal(report.signal)
            if report.internal:
                raise PartialOutput(report.internal)
            if report.output_error:
                raise OutputError(report.output_error)
            if not report.started:
                break
            out.seek(0)
            yield Spliced(out, report.count)
            _replay(report, options, problems)
            if report.fatal:
                raise InputError.from_record(report.fatal)


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
    problems += [InputError.from_record(record) for record in report.problems]


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
        report.fatal = (exc.record() if isinstance(exc, InputError)
                        else InputError(str(exc)).record())


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
    f.on_error = lambda err: report.problems.append(err.record())
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
                _write_part(format_batches(f, fmt, options, writer.joining),
                            writer.continuation(sink), report)
            if options.selection is not None:
                report.selection = options.selection.report()
    except BaseException as exc:  # reported by the caller, which owns stderr's story
        _ended(report, exc, part=True)
    finally:
        report.put(reports[index - 1])
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
                     ) -> Iterator[tuple[str, WorkerReport]]:
    """Decode ``paths`` with up to ``options.jobs`` worker processes computing at a time,
    in argument order; small inputs go to a worker several at a time (a run:
    :func:`ehtool.workers.runs`), which frames their arrays one after another.
    ``decode_one(path, options, writer)`` gives an input's batches (one process: its
    options say jobs=1). ``writer`` must write to a file descriptor.

    The calling process only directs: it forks every worker before it has decoded
    anything (a fork copies each page its child writes to, and this process's pages stay
    few), and a worker whose run is written takes the next one instead of exiting.
    The first run in argument order not yet written is the head: its first array is
    opened here, its worker (which has held its events: :mod:`ehtool.decode.handover`)
    is let go to write them to the shared descriptor, and its last array is closed;
    then this yields ``(path, report)`` per input of the run for the caller to report
    its warnings and error (``report.fatal``). Meanwhile the next runs go to free
    workers while fewer than N compute. A worker that holds a run it has decoded counts
    as not computing: one more is forked for the next run if the head looks far from
    decoded (at the pace of the inputs decoded so far), else the run waits for the
    first worker to be free (a new process pays page faults for all it writes to:
    30-100 ms here)."""
    sizes = [input_size(path) for path in paths]
    pending = workers.runs(sizes, options.jobs)
    running: list[_Task] = []  # in argument order
    free: list[_FileWorker] = []  # done with their tasks, waiting for another
    spawned: list[_FileWorker] = []
    pace = _Pace()
    fd = writer.out.fileno()
    # into a regular file, held events go to a temporary file as they come and the
    # kernel copies them at the turn (sendfile): writing 50 MB held in memory there
    # took 3-5 times as long, all of it after the decoding
    to_file = stat.S_ISREG(os.fstat(fd).st_mode)

    def start(tail: bool) -> None:
        """Give the next inputs to workers while fewer than N compute; with ``tail``,
        when no more inputs are left than processes, the last ones (the one after the
        head is best left to the core the head frees: it will not wait)."""
        while (pending and sum(t.busy for t in running) < options.jobs
               and len(running) < workers.ahead(options.jobs)):
            if not free and not _fork_pays(running, spawned, pace, options.jobs):
                break
            run = pending.pop(-1 if tail and len(pending) <= options.jobs else 0)
            limit = 0 if to_file else held_limit(sum(t.limit for t in running))
            task = _TASK.pack(run.start, len(run), limit)
            if free:
                proc = free.pop()
                try:
                    workers.give(proc.worker, task)
                except BrokenPipeError:  # it ended while it waited for a task
                    workers.stop([proc.worker])
                    for report in proc.reports(proc.worker.status):
                        _check(report)
                    raise PartialOutput("a decoding worker ended between two inputs "
                                      f"(wait status {proc.worker.status})") from None
            else:
                with workers.held_signals():  # (recorded before a signal is raised)
                    report_file = workers.report_file()
                    worker = workers.fork(lambda task=task, report_file=report_file:
                                          _file_worker(paths, task, options, writer, decode_one,
                                                       fd, report_file), holds=True)
                    proc = _FileWorker(worker, report_file)
                    spawned.append(proc)
            running.append(_Task(run, proc, limit, sum(sizes[k] for k in run)))
            running.sort(key=lambda t: t.inputs.start)

    try:
        while pending or running:
            start(tail=bool(running) and running[0].proc.worker.busy)
            head = running[0]  # (stays in running until it is done: finally stops it)
            writer.begin_file(paths[head.inputs.start])
            writer.out.flush()
            workers.let_go(head.proc.worker)
            head.released = True
            worker = head.proc.worker
            while worker.running and not worker.done:  # meanwhile the next inputs start
                start(tail=worker.busy)  # (the head counts while it computes or writes)
                workers.wait_any(t.proc.worker for t in running)
            running.pop(0)
            pace.add(head)
            reports = head.proc.reports(worker.status)
            writer.written([report.count for report in reports])
            for k, report in zip(head.inputs, reports, strict=False):
                _check(report)
                yield paths[k], report
            if len(reports) < len(head.inputs):  # (a report that ends the decode is last)
                raise PartialOutput("a decoding worker reported on part of its inputs")
            if worker.running:
                free.append(head.proc)
            writer.end_file()
    except BaseException:  # a signal, an error: into a file, the output stays valid JSON
        if to_file and running and running[0].released:
            _stop_writing(running[0].proc.worker)
        raise
    finally:  # (the free workers wait for a task: nothing of theirs is lost)
        workers.stop(p.worker for p in spawned)
        for proc in spawned:
            proc.report_file.close()


#: how long a worker writing into a file may take to stop where its output can be cut
STOP_SECONDS = 5.0


def _stop_writing(worker: Worker) -> None:
    """Ask the worker writing the head input to stop after a whole write, and give it
    STOP_SECONDS to (killed in the middle of a write, it would leave half an event
    before the closing that the caller writes)."""
    workers.ask_to_stop(worker)
    deadline = time.monotonic() + STOP_SECONDS
    while worker.running and not worker.done and time.monotonic() < deadline:
        workers.wait_any([worker], deadline - time.monotonic())


def _check(report: WorkerReport) -> None:
    """Raise what ended a file worker's task early: a signal, an internal error, the
    output's reader gone (EPIPE), an output error."""
    if report.signal:
        raise worker_signal(report.signal)
    if report.internal:
        raise PartialOutput(report.internal)
    if report.broken_pipe:
        raise BrokenPipeError(errno.EPIPE, os.strerror(errno.EPIPE))
    if report.output_error:
        raise OutputError(report.output_error)


#: fork one more worker for the next input only if the head's input looks this many
#: seconds from decoded (else the input waits for the first worker to be free)
FORK_AHEAD_SECONDS = 0.1


def _fork_pays(running: list[_Task], spawned: list[_FileWorker], pace: _Pace,
               jobs: int) -> bool:
    """Whether to fork a worker for the next input, none being free."""
    if sum(p.worker.running for p in spawned) < jobs:
        return True
    head = running[0] if running else None
    if head is None or head.proc.worker.idle:
        return False  # (its worker writes what it holds: it will be free first)
    for t in running:
        if t.proc.worker.idle:
            pace.add(t)
    left = pace.seconds(head.size) - (time.monotonic() - head.started)
    return left > FORK_AHEAD_SECONDS


class _Pace:
    """Input bytes decoded per second by one worker, over the inputs decoded so far."""

    def __init__(self) -> None:
        self.bytes = 0
        self.time = 0.0

    def add(self, task: _Task) -> None:
        """Count ``task`` once its worker has decoded it."""
        w = task.proc.worker
        if w.idle and not task.paced:
            task.paced = True
            self.bytes += task.size
            self.time += max(w.idle_since - task.started, 0.0)

    def seconds(self, size: int) -> float:
        """The time an input of ``size`` bytes takes (0 while nothing is known)."""
        return size * self.time / self.bytes if self.bytes else 0.0


def input_size(path: str) -> int:
    """Bytes in a regular input file or a directory recording; 0 for stdin, pipes and
    missing files."""
    if path == "-":
        return 0
    try:
        st = os.stat(path)
    except OSError:
        return 0
    if stat.S_ISDIR(st.st_mode):
        from ehtool.perfdata.directory import recording_size

        return recording_size(path)
    return st.st_size if stat.S_ISREG(st.st_mode) else 0


#: a file worker's task: the index in ``paths`` of its first input, how many, and the
#: bytes it may keep in memory until it is let go
_TASK = struct.Struct("<QQQ")


@dataclass
class _FileWorker:
    """A file worker process and the file it reports each task in."""

    worker: Worker
    report_file: BinaryIO

    def reports(self, status: int | None) -> list[WorkerReport]:
        """Its reports on the task it is done with, one per input."""
        return WorkerReport.take(self.report_file, status)


@dataclass
class _Task:
    """Inputs given to a file worker: their places among the inputs, and what the
    worker may keep in memory until it is let go."""

    inputs: range
    proc: _FileWorker
    limit: int
    #: its inputs' size in bytes (0: unknown)
    size: int
    #: when it was given (``time.monotonic()``)
    started: float = field(default_factory=time.monotonic)
    #: let go: it writes straight to the output
    released: bool = False
    #: counted in the pace of decoding (:class:`_Pace`)
    paced: bool = False

    @property
    def busy(self) -> bool:
        """Its worker computes, or writes its input (and will soon take another)."""
        w = self.proc.worker
        return w.running and not w.done and (self.released or not w.idle)


def _file_worker(paths: list[str], task: bytes | None, options: DecodeOptions,
                 writer: EventsWriter,
                 decode_one: Callable[[str, DecodeOptions, EventsWriter], Iterator[Batch]],
                 fd: int, report_file: BinaryIO) -> None:
    """Decode runs of inputs as the caller gives them: their events held until it lets
    this go, then written to ``fd`` (framed as the first array's content, and the arrays
    of the others after it); a report per input into ``report_file``. Exit when the
    caller is gone or stops it, or after a task that ends the decode."""
    spare: list = []  # held memory, mapped and written once, for the next task
    while task is not None:
        first, count, limit = _TASK.unpack(task)
        reports: list[WorkerReport] = []
        held: HeldOutput | None = None
        try:
            workers.release()  # (held since the fork)
            if stat.S_ISREG(os.fstat(fd).st_mode):  # (a pipe's output is cut anyway)
                defer_signals()
            held = HeldOutput(fd, limit, spare)
            sub = writer.continuation(held, first=True)
            for index in range(first, first + count):
                report = WorkerReport(started=True)
                reports.append(report)
                if index > first:
                    sub.next_file(paths[index])
                one = dataclasses.replace(options, jobs=1, progress=None,
                                          warn=report.warnings.append)
                _write_part(decode_one(paths[index], one, writer), sub, report)
            if options.selection is not None:
                reports[-1].selection = options.selection.report()
            workers.idle()
            if not held.finish():
                return  # the caller is gone
        except Stopped:
            return  # (the caller ends the decode: it asked)
        except BaseException as exc:
            if held is not None:
                held.flush_written()  # (whole writes: the caller closes the document)
            if not reports:
                reports.append(WorkerReport(started=True))
            _ended(reports[-1], exc, part=False)
        for report in reports:
            report.put(report_file)
        last = reports[-1]
        if last.signal or last.internal or last.output_error or last.broken_pipe:
            return  # (the caller ends the decode)
        try:
            task = workers.done()
        except BaseException as exc:  # a signal while it waits: the caller reports it
            report = WorkerReport()
            _ended(report, exc, part=False)
            report.put(report_file)
            return
