"""Arrow record batches from several processes (``--format parquet -j N``, ``ehtool
query -j N``): the same rows, in the same order, as :func:`record_batches` in one.

The inputs are cut into parts: a file per part, and a big file-mode file into
several, split where ``ehtool decode -j N`` splits it (``ehtool.open(part=(k, n))``).
Up to N forked workers decode a part each into an Arrow IPC file; this process
yields the parts in order as they complete. Errors come out as they would from one
process: a file's recoverable problems raise at its end (after its rows), a fatal one
after the rows before it, and nothing after the first file that raised. With a
``problems`` dict (``ehtool query``) nothing raises for the input: each file's problems
are kept there as they are met, and the rows go on with the next file.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO, Any

from ehtool import workers
from ehtool.analysis.arrow import record_batches, require, schema
from ehtool.errors import (
    EhtoolError,
    InputError,
    OutputError,
    SignalExit,
    combined,
    part_file_error,
)
from ehtool.workers import Worker

#: the smallest part a file is split into (smaller files are one part)
PART_MIN_BYTES = 32 << 20


@dataclass
class _Part:
    path: str
    part: tuple[int, int] | None
    last: bool  # the last part of its file
    worker: Worker | None = None
    out: IO[bytes] | None = None
    report: IO[bytes] | None = None


@dataclass
class _Report:
    problems: list[str] = field(default_factory=list)
    fatal: str | None = None
    error: str | None = None  # not the input's: the worker's own (its part's file)
    internal: str | None = None
    signal: int = 0


def partitions(files: list[str], partition_bytes: int
               ) -> list[tuple[str, tuple[int, int] | None]]:
    """``(path, part)`` per partition: local file-mode files above ``partition_bytes`` of
    data in ``ceil(size / partition_bytes)`` parts, everything else whole (None)."""
    from ehtool.errors import InputError
    from ehtool.perfdata import PerfDataFile

    out: list[tuple[str, tuple[int, int] | None]] = []
    for path in files:
        n = 1
        if "://" not in path and os.path.isfile(path):  # (a FIFO is read once, by its part)
            try:
                with PerfDataFile.open(path, on_error=lambda err: None) as f:
                    start, end = f.data_range
                    if not f.pipe_mode:
                        n = max(1, -(-(end - start) // partition_bytes))
            except (InputError, OSError):
                pass  # the partition reports it where it runs
        out.extend((path, (k, n) if n > 1 else None) for k in range(n))
    return out


def parts(paths: list[str], jobs: int) -> list[_Part]:
    """The parts of ``paths`` for ``jobs`` processes."""
    total = sum(_size(p) for p in paths)
    per_part = max(PART_MIN_BYTES, total // max(1, jobs))
    specs = partitions(paths, per_part)
    return [_Part(path, part, part is None or part[0] == part[1] - 1) for path, part in specs]


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


class _Crew:
    """The parts being decoded by workers, which another thread may stop (:meth:`stop`):
    no worker starts after it, and those started are killed."""

    def __init__(self) -> None:
        self.running: list[_Part] = []
        self.stopped = False
        self.lock = threading.Lock()

    def check(self) -> None:
        if self.stopped:
            raise EhtoolError("stopped")

    def stop(self) -> None:
        with self.lock:
            self.stopped = True
            workers.kill(p.worker for p in self.running if p.worker is not None)


def batches(paths: list[str], columns: list[str] | None = None, jobs: int = 1,
            crew: _Crew | None = None,
            problems: dict[str, list[InputError]] | None = None) -> Iterator[Any]:
    """:func:`ehtool.analysis.arrow.record_batches` of ``paths`` on up to ``jobs``
    processes (one when ``jobs`` is 1, a path is ``-``, or there is one part).
    ``crew``: how another thread stops them (:class:`Source`). ``problems``: instead of
    raising, keep each path's input errors there as they are met (a fatal one replaces
    the problems before it and ends that file's rows) and go on with the next file."""
    crew = crew or _Crew()
    todo = parts(paths, jobs) if jobs > 1 and "-" not in paths else []
    if len(todo) < 2:
        if problems is None:
            for batch in record_batches(paths, columns):
                crew.check()
                yield batch
            return
        for path in paths:
            met = problems.setdefault(path, [])

            def fatal(exc: InputError, met: list[InputError] = met) -> None:
                met[:] = [exc]  # as one process: the fatal error alone

            for batch in record_batches([path], columns, on_error=met.append,
                                        on_fatal=fatal):
                crew.check()
                yield batch
        return
    pa = require("pyarrow")
    _preload()
    running = crew.running
    met: list[str] = []  # the problems of the file being read
    seen: set[str] = set()
    try:
        while todo or running:
            while (todo and sum(p.worker.running for p in running) < jobs
                   and len(running) < workers.ahead(jobs)):
                _start(todo.pop(0), columns, crew)
            head = running[0]
            if head.worker.running:
                workers.wait_any(p.worker for p in running)
                crew.check()
                continue
            running.pop(0)
            report = _read_report(head)
            if report.signal:
                raise SignalExit(report.signal)
            if report.internal:
                raise EhtoolError(f"internal error in a decoding worker: {report.internal}")
            if report.error:
                raise OutputError(report.error)
            # a later part of a file meets the file's open-time problems again: once each
            fresh = [m for m in report.problems if m not in seen]
            seen.update(fresh)
            met += fresh
            if problems is not None:  # kept before the rows: the consumer may stop there
                problems.setdefault(head.path, []).extend(InputError(m) for m in fresh)
                if report.fatal:  # as one process: the fatal error, not the problems before
                    problems[head.path] = [InputError(report.fatal)]
            head.out.seek(0)
            if head.out.read(1):
                head.out.seek(0)
                yield from pa.ipc.open_stream(head.out)
            head.out.close()
            if report.fatal:
                if problems is None:
                    raise InputError(report.fatal)
                if not head.last:
                    _skip_file(running, todo)
            elif head.last and met and problems is None:
                raise combined([InputError(m) for m in met])
            if report.fatal or head.last:
                met.clear()
                seen.clear()
    finally:
        workers.stop(p.worker for p in running if p.worker is not None)
        for p in running:
            for f in (p.out, p.report):
                if f is not None:
                    f.close()


def _skip_file(running: list[_Part], todo: list[_Part]) -> None:
    """Drop the rest of the parts of the file whose part ended in a fatal error (as one
    process, which stops reading the file there): killed if started, else not started."""
    while running:
        p = running.pop(0)
        workers.stop([p.worker])
        for f in (p.out, p.report):
            f.close()
        if p.last:
            return
    while todo and not todo.pop(0).last:
        pass


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


def _start(p: _Part, columns: list[str] | None, crew: _Crew) -> None:
    """Fork the worker of ``p`` and add it to the crew's running parts."""
    p.out = tempfile.TemporaryFile()  # noqa: SIM115 - closed by batches()
    p.report = workers.report_file()
    with crew.lock, workers.held_signals():
        crew.check()
        p.worker = workers.fork(lambda: _worker(p, columns))
        crew.running.append(p)


def _worker(p: _Part, columns: list[str] | None) -> None:
    """Decode one part into ``p.out`` as an Arrow IPC stream, report, exit."""
    report = _Report()
    try:
        workers.default_signals()
        workers.release()
        pa = require("pyarrow")
        problems: list[InputError] = []
        writer = None
        try:
            for batch in record_batches([p.path], columns, p.part, problems.append):
                if writer is None:
                    writer = pa.ipc.new_stream(p.out, batch.schema)
                writer.write_batch(batch)
        except InputError as exc:
            report.fatal = str(exc)
        if writer is not None:
            writer.close()
        p.out.flush()
        report.problems = [str(e) for e in problems]
    except OSError as exc:  # ENOSPC, EFBIG on its part's file (Arrow's own text too)
        report.error = part_file_error(exc)
    except BaseException as exc:  # noqa: BLE001 - the caller reports it
        report.internal = f"{type(exc).__name__}: {exc}"
    finally:
        with contextlib.suppress(BaseException):
            p.report.write(json.dumps(report.__dict__).encode())
            p.report.flush()
        os._exit(0)


def _read_report(p: _Part) -> _Report:
    status = p.worker.status
    if os.WIFSIGNALED(status):
        return _Report(signal=os.WTERMSIG(status))
    p.report.seek(0)
    try:
        return _Report(**json.loads(p.report.read()))
    except (ValueError, TypeError):
        return _Report(internal=f"the worker died (wait status {status})")


class Source:
    """The record batches of :func:`batches` for a consumer that pulls them on its own
    threads and wraps exceptions (DuckDB reports a Python error inside its stream as its
    own): the one raised is kept in :attr:`error`, so the caller can raise it as it was
    (a signal, an internal error). :meth:`stop` ends it from any thread. Input errors do
    not end it: each path's are kept in :attr:`problems` as they are met (see
    :func:`batches`), for the caller to report once the consumer is done."""

    def __init__(self, paths: list[str], columns: list[str] | None, jobs: int) -> None:
        self.schema = schema(columns)
        self.crew = _Crew()
        self.problems: dict[str, list[InputError]] = {}
        self.batches = batches(paths, columns, jobs, self.crew, self.problems)
        self.error: BaseException | None = None

    def __iter__(self) -> Iterator[Any]:
        try:
            self.crew.check()
            yield from self.batches
        except BaseException as exc:
            self.error = exc
            self.batches.close()  # its workers are reaped, its files closed
            raise

    def stop(self) -> None:
        """End the batches early, from any thread: no worker starts, those running are
        killed, and the consumer's next batch raises."""
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
    rows = 0
    group: list[Any] = []
    with pq.ParquetWriter(out, schema()) as writer, _flushing(writer, group):
        for batch in batches(paths, None, jobs, problems=problems):
            group.append(batch)
            rows += batch.num_rows
            if sum(b.num_rows for b in group) >= ROW_GROUP_ROWS:
                table = pa.Table.from_batches(group)
                writer.write_table(table.slice(0, ROW_GROUP_ROWS))
                group[:] = table.slice(ROW_GROUP_ROWS).to_batches()  # (a part's last
                # batch is short: groups stay exact)
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
