"""Arrow record batches from several processes (``--format parquet -j N``, ``ehtool
query -j N``): the same rows, in the same order, as :func:`record_batches` in one.

The inputs are cut into parts: a file per part, and a big file-mode file into several,
split where ``ehtool decode -j N`` splits it (``ehtool.open(part=(k, n))``). A pool of
up to N forked workers takes the parts in turn, each part into an Arrow IPC file of its
own; this process yields the parts in order as they complete. Errors come out as they
would from one process: a file's recoverable problems raise at its end (after its rows),
a fatal one after the rows before it, and nothing after the first file that raised. With
a ``problems`` dict (``ehtool query``) nothing raises for the input: each file's
problems are kept there as they are met, and the rows go on with the next file.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import struct
import tempfile
import threading
from collections import deque
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from typing import Any, BinaryIO

from ehtool import workers
from ehtool.analysis.arrow import BATCH_ROWS, record_batches, require, schema
from ehtool.errors import (
    EhtoolError,
    InputError,
    OutputError,
    PartialOutput,
    UsageError,
    combined,
    input_name,
    part_file_error,
    worker_signal,
)
from ehtool.workers import Worker

#: the smallest part a file is split into (smaller files are one part): typed rows cost
#: ~10 us an event, so a 33 MB recording (250,000 events) is ~3 s of work: at 32 MB it
#: stayed one part (Parquet -j 2 of it 3.3 s, in two parts 1.8 s)
PART_MIN_BYTES = 4 << 20


@dataclass
class _Part:
    index: int  # among the parts, in order
    #: one file, or a run of small whole files decoded by one worker in turn
    paths: list[str]
    part: tuple[int, int] | None
    last: bool  # the last part of its file
    #: what its worker said once it was done with it (or what ended the worker)
    report: _Report | None = None


@dataclass
class _Report:
    #: each file's rows and problems, in order (:class:`_FileReport` fields)
    files: list[dict] = field(default_factory=list)
    error: str | None = None  # not the input's: the worker's own (its part's file)
    internal: str | None = None
    signal: int = 0


@dataclass
class _FileReport:
    path: str
    rows: int = 0
    #: (message, row): each problem and the rows of the part before the batch that met
    #: it (the caller keeps it before it hands on those rows, as one process would)
    problems: list[tuple[str, int]] = field(default_factory=list)
    #: an error that ended the file (its rows are those before it), and the rows before
    #: its last batch (one process keeps the error before that batch)
    fatal: str | None = None
    fatal_row: int = 0


def partitions(files: list[str], partition_bytes: int
               ) -> list[tuple[str, tuple[int, int] | None]]:
    """``(path, part)`` per partition: local file-mode files above ``partition_bytes`` of
    data in ``ceil(size / partition_bytes)`` parts, everything else whole (None)."""
    from ehtool.errors import InputError
    from ehtool.perfdata import PerfDataFile

    out: list[tuple[str, tuple[int, int] | None]] = []
    for path in files:
        n = 1
        if ("://" not in path and os.path.isfile(path)  # (a FIFO is read once, by its part)
                and _size(path) > partition_bytes):  # (else it holds less data than that)
            try:
                with PerfDataFile.open(path, on_error=lambda err: None) as f:
                    start, end = f.data_range
                    if f.splittable:
                        n = max(1, -(-(end - start) // partition_bytes))
            except (InputError, OSError):
                pass  # the partition reports it where it runs
        out.extend((path, (k, n) if n > 1 else None) for k in range(n))
    return out


def parts(paths: list[str], jobs: int) -> list[_Part]:
    """The parts of ``paths`` for ``jobs`` processes: a big file split, small whole files
    several to a part (:func:`ehtool.workers.runs`)."""
    sizes = {p: _size(p) for p in paths}
    total = sum(sizes[p] for p in paths)
    entries = partitions(paths, max(PART_MIN_BYTES, total // max(1, jobs)))
    out: list[_Part] = []
    for run in workers.runs([sizes[path] if part is None else None for path, part in entries],
                            jobs, total):
        path, part = entries[run.start]
        out.append(_Part(len(out), [entries[k][0] for k in run], part,
                         part is None or part[0] == part[1] - 1))
    return out


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


class _Crew:
    """The workers decoding parts, which another thread may stop (:meth:`stop`): no
    worker starts after it, and those started are killed."""

    def __init__(self) -> None:
        self.workers: list[Worker] = []
        self.stopped = False
        self.lock = threading.Lock()

    def check(self) -> None:
        if self.stopped:
            raise EhtoolError("stopped")

    def stop(self) -> None:
        with self.lock:
            self.stopped = True
            workers.kill(self.workers)


def batches(paths: list[str], columns: list[str] | None = None, jobs: int = 1,
            crew: _Crew | None = None,
            problems: dict[str, list[InputError]] | None = None,
            spent: Collection[str] = ()) -> Iterator[Any]:
    """:func:`ehtool.analysis.arrow.record_batches` of ``paths`` on up to ``jobs``
    processes (one when ``jobs`` is 1, a path is ``-``, or there is one part).
    ``crew``: how another thread stops them (:class:`Source`). ``problems``: instead of
    raising, keep each path's input errors there as they are met (a fatal one replaces
    the problems before it and ends that file's rows) and go on with the next file.
    ``spent``: inputs read once (standard input, a FIFO) that were read already: a
    UsageError at the first batch (reopened, one is empty, the other waits forever)."""
    again = [path for path in paths if path in spent]
    if again:
        raise UsageError(f"{input_name(again[0])} can be read once, and a statement before "
                         "read it: save the columns first ('create temp table t as select "
                         "... from events')")
    crew = crew or _Crew()
    todo = parts(paths, jobs) if jobs > 1 and "-" not in paths else []
    if len(todo) < 2:
        if problems is None:
            for batch in record_batches(paths, columns):
                crew.check()
                yield batch
            return
        for batch in _coalesced(_each_file(paths, columns, problems)):
            crew.check()
            yield batch
        return
    _preload()
    yield from _coalesced(_pooled(todo, columns, jobs, crew, problems))


def _each_file(paths: list[str], columns: list[str] | None,
               problems: dict[str, list[InputError]]) -> Iterator[Any]:
    """The rows of ``paths`` in one process, each file's input errors kept in
    ``problems`` as they are met."""
    for path in paths:
        met = problems.setdefault(path, [])

        def fatal(exc: InputError, met: list[InputError] = met) -> None:
            met[:] = [exc]  # as one process: the fatal error alone

        yield from record_batches([path], columns, on_error=met.append, on_fatal=fatal)


def _pooled(todo: list[_Part], columns: list[str] | None, jobs: int, crew: _Crew,
            problems: dict[str, list[InputError]] | None) -> Iterator[Any]:
    """The rows of the parts ``todo`` decoded by a pool of ``jobs`` workers, with the
    errors of one process (see :func:`batches`)."""
    pa = require("pyarrow")
    met: list[str] = []  # the problems of the file being read
    seen: set[str] = set()
    with _Pool(todo, columns, jobs, crew) as pool:
        for head in pool.in_order():
            report = head.report
            assert report is not None
            if report.signal:
                raise worker_signal(report.signal)
            if report.internal:
                raise PartialOutput(f"internal error in a decoding worker: {report.internal}")
            if report.error:
                raise OutputError(report.error)
            out = pool.output(head)
            with out or contextlib.nullcontext():
                rows = _Rows(pa.ipc.open_stream(out) if out is not None else iter(()))
                last = head.last or len(head.paths) > 1  # (a run's files are whole)
                for entry in (_FileReport(**f) for f in report.files):
                    yield from _file_rows(entry, rows, met, seen, problems)
                    if entry.fatal:
                        if problems is None:
                            raise InputError(entry.fatal)
                        if not last:
                            pool.skip_file()
                    elif last and met and problems is None:
                        raise combined([InputError(m) for m in met])
                    if entry.fatal or last:
                        met.clear()
                        seen.clear()


def _file_rows(entry: _FileReport, rows: _Rows, met: list[str], seen: set[str],
               problems: dict[str, list[InputError]] | None) -> Iterator[Any]:
    """The rows of one file of a part; its problems noted in ``met`` once each (``seen``)
    and, with ``problems``, kept there before the rows from where each was met (the
    consumer may stop before them: a LIMIT), the fatal error alone as one process."""
    done = 0  # rows handed on
    if problems is not None:
        problems.setdefault(entry.path, [])
    for message, row in [*entry.problems, (None, entry.fatal_row)]:
        if problems is not None:
            yield from rows.take(row - done)
            done = max(done, row)
        if message is None:
            break
        if message in seen:  # a later part of a file meets its open-time problems again
            continue
        seen.add(message)
        met.append(message)
        if problems is not None:
            problems[entry.path].append(InputError(message))
    if entry.fatal and problems is not None:
        problems[entry.path] = [InputError(entry.fatal)]
    yield from rows.take(entry.rows - done)


class _Rows:
    """Record batches, taken a number of rows at a time."""

    def __init__(self, batches: Iterator[Any]) -> None:
        self.batches = iter(batches)
        self.rest: Any = None

    def take(self, n: int) -> Iterator[Any]:
        while n > 0:
            batch = self.rest if self.rest is not None else next(self.batches, None)
            if batch is None:
                return
            self.rest = batch.slice(n) if batch.num_rows > n else None
            yield batch.slice(0, n) if batch.num_rows > n else batch
            n -= min(n, batch.num_rows)


def _coalesced(batches: Iterator[Any]) -> Iterator[Any]:
    """``batches`` with runs of small ones joined, up to BATCH_ROWS rows (the rows of
    small files come a few at a time, and each batch costs its consumer); those held
    are yielded before an input error is raised."""
    pa = require("pyarrow")
    held: list[Any] = []
    rows = 0
    try:
        for batch in batches:
            if not held and batch.num_rows >= BATCH_ROWS:
                yield batch
                continue
            held.append(batch)
            rows += batch.num_rows
            if rows >= BATCH_ROWS:
                yield _joined(pa, held)
                held, rows = [], 0
    except InputError:
        if held:
            yield _joined(pa, held)
        raise
    if held:
        yield _joined(pa, held)


def _joined(pa: Any, batches: list[Any]) -> Any:
    if len(batches) == 1:
        return batches[0]
    return pa.Table.from_batches(batches).combine_chunks().to_batches()[0]


def _preload() -> None:
    """Import what a worker needs before forking (each would import it again)."""
    import ehtool.eventheader.decoder
    import ehtool.events
    import ehtool.formats.values
    import ehtool.perfdata.reader  # noqa: F401
    from ehtool.speedups import load

    load()
    pa = require("pyarrow")
    pa.array([], type=pa.string())  # (what pyarrow builds at its first array, ~30 MB
    # here: once, shared by the workers, instead of once in each)


#: a task for a worker: the index of its part
_TASK = struct.Struct("<Q")


@dataclass
class _Member:
    """A worker of the pool, the file it reports in, and the part it decodes."""

    worker: Worker
    report_file: BinaryIO
    part: _Part | None = None


class _Pool:
    """Up to ``jobs`` forked workers that take the parts in turn, each writing a part's
    rows into a file of its own (an Arrow IPC stream, in a private directory) and
    taking the next part instead of exiting: forking a process per part cost ~15 ms of
    system time each once pyarrow (and DuckDB) were loaded, which made 1,000 small files
    2.4 times slower with ``-j 2`` than with ``-j 1``. At most ``workers.ahead(jobs)``
    parts are started and not yet handed on."""

    def __init__(self, todo: list[_Part], columns: list[str] | None, jobs: int,
                 crew: _Crew) -> None:
        self.todo = todo
        self.columns = columns
        self.jobs = jobs
        self.crew = crew
        self.queue = deque(todo)  # not started
        self.started: list[_Part] = []  # started and not handed on, in order
        self.members: list[_Member] = []
        self.directory = tempfile.mkdtemp(prefix="ehtool-parts-")

    def __enter__(self) -> _Pool:
        return self

    def __exit__(self, *exc: object) -> None:
        workers.stop(m.worker for m in self.members)
        for m in self.members:
            m.report_file.close()
        shutil.rmtree(self.directory, ignore_errors=True)

    def in_order(self) -> Iterator[_Part]:
        """The parts in order, each once its worker is done with it (its output is
        :meth:`output`); the next ones go to the workers meanwhile."""
        while self.queue or self.started:
            self._start()
            head = self.started[0]
            if head.report is None:
                workers.wait_any(m.worker for m in self.members if m.part is not None)
                self.crew.check()
                self._collect()
                continue
            self.started.pop(0)
            self._start()
            yield head

    def output(self, p: _Part) -> BinaryIO | None:
        """The file of ``p``'s rows (unlinked: closing it removes it), None if none."""
        try:
            f = open(self._path(p), "rb")  # noqa: SIM115 - the caller closes it
        except FileNotFoundError:
            return None
        os.unlink(self._path(p))
        if os.fstat(f.fileno()).st_size:
            return f
        f.close()  # (a part without rows)
        return None

    def skip_file(self) -> None:
        """Drop the rest of the parts of the file whose part ended in a fatal error (as
        one process, which stops reading the file there): not started, or their worker
        stopped, or their output removed."""
        while self.started:
            p = self.started.pop(0)
            for m in self.members:
                if m.part is p:
                    self._drop(m)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self._path(p))
            if p.last:
                return
        while self.queue and not self.queue.popleft().last:
            pass

    def _path(self, p: _Part) -> str:
        return os.path.join(self.directory, str(p.index))

    def _start(self) -> None:
        """Give the next parts to workers while fewer than ``jobs`` decode one."""
        while (self.queue and sum(m.part is not None for m in self.members) < self.jobs
               and len(self.started) < workers.ahead(self.jobs)):
            free = next((m for m in self.members if m.part is None), None)
            p = self.queue.popleft()
            if free is None:
                self._fork(p)
            else:
                self._give(free, p)
            self.started.append(p)

    def _fork(self, p: _Part) -> None:
        report_file = workers.report_file()
        with self.crew.lock, workers.held_signals():
            self.crew.check()
            worker = workers.fork(lambda: _worker(self.todo, p.index, self.columns,
                                                  self.directory, report_file), holds=True)
            self.crew.workers.append(worker)
            self.members.append(_Member(worker, report_file, p))

    def _give(self, m: _Member, p: _Part) -> None:
        try:
            workers.give(m.worker, _TASK.pack(p.index))
        except BrokenPipeError:  # it ended while it waited for a part
            self._drop(m)
            status = m.worker.status or 0
            if os.WIFSIGNALED(status):
                raise worker_signal(os.WTERMSIG(status)) from None
            raise PartialOutput("a decoding worker ended between two parts "
                              f"(wait status {status})") from None
        m.part = p

    def _collect(self) -> None:
        """Take the reports of the workers done with their parts, and of those gone."""
        for m in list(self.members):
            if m.part is None:
                continue
            if m.worker.done:
                m.part.report = _read_report(m)
                m.part = None
            elif not m.worker.running:
                m.part.report = _read_report(m)
                self._drop(m)

    def _drop(self, m: _Member) -> None:
        """Stop a worker and forget it (its part is not wanted, or it is gone)."""
        workers.stop([m.worker])
        m.report_file.close()
        self.members.remove(m)
        with self.crew.lock:
            self.crew.workers.remove(m.worker)


def _worker(todo: list[_Part], index: int | None, columns: list[str] | None,
            directory: str, report_file: BinaryIO) -> None:
    """Decode the parts given, each into its file as an Arrow IPC stream (the rows of a
    run of small files joined in batches of up to BATCH_ROWS), and report on each; exit
    when the owner is gone or stops it."""
    try:
        workers.default_signals()  # (a signal ends it as it ends a plain process: the
        workers.release(handlers=False)  # caller reports it; the parent's would raise here)
        pa = require("pyarrow")
    except BaseException as exc:  # noqa: BLE001 - the caller reports it
        _write_report(report_file, _Report(internal=f"{type(exc).__name__}: {exc}"))
        return
    while index is not None:
        p = todo[index]
        report = _Report()
        try:
            writer = None
            with open(os.path.join(directory, str(index)), "xb") as out:
                for batch in _coalesced(_decoded(p, columns, report)):
                    if writer is None:
                        writer = pa.ipc.new_stream(out, batch.schema)
                    writer.write_batch(batch)
                if writer is not None:
                    writer.close()
        except OSError as exc:  # ENOSPC, EFBIG on its part's file (Arrow's own text too)
            report.error = part_file_error(exc)
        except BaseException as exc:  # noqa: BLE001 - the caller reports it
            report.internal = f"{type(exc).__name__}: {exc}"
        _write_report(report_file, report)
        if report.error or report.internal:
            return  # (the caller ends the decode)
        task = workers.done()
        index = None if task is None else _TASK.unpack(task)[0]


def _decoded(p: _Part, columns: list[str] | None, report: _Report) -> Iterator[Any]:
    """The rows of ``p``'s files in turn, each file's rows and problems in ``report``
    (a fatal error ends its file; the next one follows)."""
    owner = os.getppid()
    for path in p.paths:
        entry = _FileReport(path)
        problems: list[InputError] = []
        try:
            for batch in record_batches([path], columns, p.part, problems.append):
                entry.problems += [(str(e), entry.rows) for e in problems]
                problems.clear()
                entry.fatal_row = entry.rows
                entry.rows += batch.num_rows
                if os.getppid() != owner:  # the owner is gone (SIGKILL): nobody reads it
                    os._exit(0)
                yield batch
        except InputError as exc:
            entry.fatal = str(exc)
        entry.problems += [(str(e), entry.rows) for e in problems]
        report.files.append(dataclasses.asdict(entry))


def _write_report(f: BinaryIO, report: _Report) -> None:
    with contextlib.suppress(BaseException):
        workers.put_report(f, report)


def _read_report(m: _Member) -> _Report:
    """The report of the worker of ``m`` on its part (emptied for the next), or what
    ended it."""
    status = m.worker.status
    if status is not None and os.WIFSIGNALED(status):
        return _Report(signal=os.WTERMSIG(status))
    try:
        return _Report(**workers.take_reports(m.report_file)[0])
    except (IndexError, TypeError):
        return _Report(internal=f"the worker died (wait status {status})")


class Source:
    """The record batches of :func:`batches` for a consumer that pulls them on its own
    threads and wraps exceptions (DuckDB reports a Python error inside its stream as its
    own): the one raised is kept in :attr:`error`, so the caller can raise it as it was
    (a signal, an internal error). :meth:`stop` ends it from any thread. Input errors do
    not end it: each path's are kept in :attr:`problems` as they are met (see
    :func:`batches`), for the caller to report once the consumer is done."""

    def __init__(self, paths: list[str], columns: list[str] | None, jobs: int,
                 spent: Collection[str] = ()) -> None:
        self.schema = schema(columns)
        self.crew = _Crew()
        self.problems: dict[str, list[InputError]] = {}
        self.batches = batches(paths, columns, jobs, self.crew, self.problems, spent)
        self.error: BaseException | None = None

    def __iter__(self) -> Iterator[Any]:
        try:
            self.crew.check()
            yield from self.batches
        except GeneratorExit:  # the consumer is done (a LIMIT): not an error
            raise
        except BaseException as exc:
            self.error = exc
            self.batches.close()  # its workers are reaped, its files closed
            raise

    def stop(self) -> None:
        """End the batches early, from any thread: no worker starts, those running are
        killed, and the consumer's next batch raises."""
        self.crew.stop()

    def close(self) -> None:
        """End the batches once the consumer is done with them (a LIMIT stops it with
        parts done and not read, and DuckDB keeps the reader past the statement): the
        workers are stopped and their files removed now, not when the reader is freed,
        which an exit through ``os._exit`` never does."""
        try:
            self.batches.close()
        except ValueError:  # (being pulled on another thread: stop its workers at least)
            self.crew.stop()

    def reader(self) -> Any:
        """A ``pyarrow.RecordBatchReader`` over the batches."""
        pa = require("pyarrow")
        return pa.RecordBatchReader.from_batches(self.schema, iter(self))


#: rows per Parquet row group (several record batches, held as Arrow data)
ROW_GROUP_ROWS = 16384


def write_parquet(paths: list[str], out: Any, jobs: int = 1,
                  problems: dict[str, list[InputError]] | None = None) -> int:
    """Write the events of ``paths`` to a Parquet file (path or binary file) with ``jobs``
    processes, in row groups of ROW_GROUP_ROWS; rows written. ``problems``: as
    :func:`batches` (each path's input errors kept there, the next paths written);
    without it the first input error raises, after the rows before it are written."""
    pa = require("pyarrow")
    pq = require("pyarrow.parquet")
    rows = grouped = 0
    group: list[Any] = []
    with pq.ParquetWriter(out, schema()) as writer, _flushing(writer, group):
        for batch in batches(paths, None, jobs, problems=problems):
            group.append(batch)
            rows += batch.num_rows
            grouped += batch.num_rows
            if grouped >= ROW_GROUP_ROWS:
                table = pa.Table.from_batches(group)
                writer.write_table(table.slice(0, ROW_GROUP_ROWS))
                group[:] = table.slice(ROW_GROUP_ROWS).to_batches()  # (a part's last
                # batch is short: groups stay exact)
                grouped -= ROW_GROUP_ROWS
    return rows


@contextlib.contextmanager
def _flushing(writer: Any, group: list[Any]) -> Iterator[None]:
    """Write the rows left in ``group`` at the end of the block, also when an input
    error ends it (the rows before the error are the file's)."""
    try:
        yield
    except InputError:
        _flush(writer, group)
        raise
    _flush(writer, group)


def _flush(writer: Any, group: list[Any]) -> None:
    if group:
        pa = require("pyarrow")
        writer.write_table(pa.Table.from_batches(group, schema=schema()))
        group.clear()
