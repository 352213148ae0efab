"""Decode perf.data (or ``.dat``) inputs into a JSON document: the library side of
``ehtool decode``.

::

    from ehtool.decode.pipeline import DecodeOptions, decode_to
    with open("out.json", "wb") as out:
        errors = decode_to(out, ["perf.data"], DecodeOptions())

Every complete record is written before an input error is reported, and the
document is always closed, so the output stays valid JSON (but a pipe or a socket,
which a signal that stops the decode leaves cut).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, BinaryIO

from ehtool import workers
from ehtool.allocator import fewer_collections
from ehtool.decode.formatting import Batch, Joined, Spliced, format_batches
from ehtool.decode.options import DecodeOptions, EventSelection
from ehtool.decode.parallel import (
    WorkerReport,
    concurrent_files,
    input_size,
    parts_for,
    split_batches,
)
from ehtool.errors import EhtoolError, InputError, SignalExit, combined, input_name
from ehtool.render.meta_keys import FILE_KEY
from ehtool.render.times import no_clock_warning

if TYPE_CHECKING:
    from ehtool.perfdata import PerfDataFile
    from ehtool.render.document import EventsWriter

__all__ = ["DecodeOptions", "EventSelection", "decode_to"]

#: events formatted between two writes to the output
_BATCH = 512


def decode_to(out: BinaryIO, inputs: Iterable[str], options: DecodeOptions) -> list[EhtoolError]:
    """Write the JSON document for ``inputs`` to ``out``; return the input errors met.

    An input that cannot be opened contributes an empty array, as in perf-decode.
    ``options.progress(done, total)`` is called after each batch of events with
    the input bytes read so far and their total (0 when unknown: a pipe).
    """
    from ehtool.render.document import DocumentWriter, JsonLinesWriter

    if isinstance(inputs, (str, bytes, os.PathLike)):
        raise TypeError(f"inputs: a list of paths, not one path ({inputs!r})")
    inputs = [os.fsdecode(path) for path in inputs]  # (path-like ones too)
    progress = _Progress(options.progress, inputs)
    writer_cls = JsonLinesWriter if options.jsonl else DocumentWriter
    writer = writer_cls(out, style=options.style, bom=options.bom, pretty=options.pretty)
    errors: list[EhtoolError] = []
    restore_collections = fewer_collections()  # (batches: fewer scans)
    close = True
    try:
        if _side_by_side(inputs, options, out):
            _preload(options)
            results = concurrent_files(inputs, options, writer, _one_process_batches)
            with contextlib.closing(results):  # (an error or signal: its workers are stopped)
                for _path, report in results:
                    _replay(report, options)
                    if report.fatal:
                        errors.append(InputError.from_record(report.fatal))
                    progress.input_done()
            return errors
        for path in inputs:
            _write_input(path, options, progress, writer, errors)
    except (KeyboardInterrupt, SignalExit):
        close = not _is_stream(out)
        raise
    finally:
        restore_collections()
        if close:
            writer.close()
    return errors


def _is_stream(out: BinaryIO) -> bool:
    """Whether ``out`` is a pipe or a socket. Stopped by a signal (its own or a
    worker's), the decode leaves such an output cut where it is: the closing of the
    document would wait for ever on a reader that stopped reading (a file gets it, and
    stays valid JSON)."""
    import stat

    try:
        mode = os.fstat(out.fileno()).st_mode
    except (OSError, AttributeError, ValueError):  # io.BytesIO and the like
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def _side_by_side(inputs: list[str], options: DecodeOptions, out: BinaryIO) -> bool:
    """True to decode the inputs in worker processes, one each (several perf.data files
    and -j > 1; not stdin, not with filters that need the records before, and only
    into an output with a file descriptor, which the workers write to)."""
    selection = options.selection
    try:
        out.fileno()
    except (OSError, AttributeError, ValueError):  # io.BytesIO and the like
        return False
    return (options.jobs > 1 and len(inputs) > 1 and "-" not in inputs
            and options.input_format == "perf"
            and (selection is None or selection.parallel_safe))


def _one_process_batches(path: str, options: DecodeOptions,
                         writer: EventsWriter) -> Iterator[Batch]:
    return _perf_batches(path, options, _Progress(None, []), writer)


def _replay(report: WorkerReport, options: DecodeOptions) -> None:
    """A file worker's warnings and the filter names it found."""
    if options.selection is not None:
        options.selection.absorb(report.selection)
    if options.warn is not None:
        for message in report.warnings:
            options.warn(message)


class _Progress:
    """Input bytes read so far, reported to ``DecodeOptions.progress``."""

    def __init__(self, report: Callable[[int, int], None] | None, inputs: list[str]) -> None:
        self.report = report
        self.sizes = [input_size(path) for path in inputs] if report is not None else []
        self.total = 0 if 0 in self.sizes else sum(self.sizes)
        self.done = 0
        #: the PerfDataFile being read (its ``position``), or None
        self.reading: PerfDataFile | None = None

    def batch_done(self) -> None:
        if self.report is not None and self.reading is not None:
            self.report(self.done + self.reading.position, self.total)

    def input_done(self) -> None:
        self.reading = None
        if self.report is not None:
            self.done += self.sizes.pop(0)
            self.report(self.done, self.total)


def _write_input(path: str, options: DecodeOptions, progress: _Progress,
                 writer: EventsWriter, errors: list[EhtoolError]) -> None:
    """One input's events to ``writer``, its error (if any) to ``errors``."""
    writer.begin_file(input_name(path))
    try:
        for batch in _batches(path, options, progress, writer):
            if type(batch) is Joined:
                writer.joined(batch.data, batch.count)
            elif type(batch) is Spliced:  # a worker's part, framed
                # (whole: a signal cuts a long sendfile short, in the middle of an event)
                with workers.held_signals():
                    writer.splice(batch.file, batch.count)
                continue
            else:
                writer.events(batch)
            progress.batch_done()
    except EhtoolError as exc:
        errors.append(exc)
    writer.end_file()
    progress.input_done()


def _preload(options: DecodeOptions) -> None:
    """Import what decoding an input needs before forking a worker per input, so that
    no worker imports it again (construct alone costs each one ~50 ms)."""
    if options.input_format == "dat":
        import ehtool.decode.dat_input
        import ehtool.render.dat  # noqa: F401
        return
    import ehtool.formats.tracefs_format
    import ehtool.perfdata.reader
    import ehtool.render.document
    import ehtool.render.eventheader
    import ehtool.render.events
    import ehtool.render.tracefs_fields  # noqa: F401
    from ehtool.speedups import load

    load()


def _batches(path: str, options: DecodeOptions, progress: _Progress,
             writer: EventsWriter) -> Iterator[Batch]:
    """The formatted events of one input, a list at a time."""
    if options.input_format == "dat":
        return _dat_batches(path, options)
    return _perf_batches(path, options, progress, writer)


def _perf_batches(path: str, options: DecodeOptions, progress: _Progress,
                  writer: EventsWriter) -> Iterator[Batch]:
    from ehtool.perfdata import PerfDataFile
    from ehtool.render.events import SampleFormatter

    # recoverable problems (an unknown sample id...) are collected here and reported
    # after the last record; a fatal one (a corrupt record) ends the walk and is raised
    problems: list[InputError] = []
    with PerfDataFile.open(path, on_error=problems.append) as f:
        progress.reading = f
        # thread names only when shown or selected on (COMM and FORK records are skipped)
        # (a selection written before names_threads existed may look them up: it gets them)
        f.threads = "comm" in options.meta or (options.selection is not None and getattr(
            options.selection, "names_threads", True))
        if options.formats_from_host and f.missing_formats():
            from ehtool.decode.host_formats import attach_host_formats

            names = attach_host_formats(f)
            if names and options.warn is not None:
                options.warn(f"{path}: formats of {', '.join(names)} taken from the running "
                             "kernel (--formats-from-host): right only on the machine and "
                             "boot that recorded the file")
        if options.selection is not None:
            options.selection.bind(f)
        fmt = SampleFormatter(
            options.style,
            big_endian=f.big_endian,
            long_size=f.long_size,
            time_json=f.session.time_json,
            clock=f.session.clock,
            comm_of=f.session.comm,
            meta=options.meta,
            warn=options.warn,
            file=input_name(path) if FILE_KEY in options.meta else None,
            source=input_name(path),
            time_mode=options.time,
            fields_key=options.fields_key,
        )
        parts = parts_for(f, options)
        if parts > 1:
            yield from split_batches(f, fmt, options, writer, problems, parts)
        else:
            yield from format_batches(f, fmt, options, writer.joining)
        if options.time == "iso" and not f.session.clock.utc_known and options.warn:
            options.warn(no_clock_warning(path))
        if problems:
            raise combined(problems)


def _dat_batches(path: str, options: DecodeOptions) -> Iterator[list[bytes]]:
    """A ``.dat`` capture's EventHeader events that ``options.selection`` keeps (as it
    keeps them in perf.data); a malformed one is a warning and is shown as its raw
    bytes (``"raw"``, as a tracepoint without a format)."""
    from ehtool.decode.dat_input import dat_batches
    from ehtool.render.dat import EventObjects

    selection = options.selection
    if selection is not None:
        selection.bind(None)
    objects = EventObjects(options.style, options.fields_key,
                           input_name(path) if FILE_KEY in options.meta else None)
    for batch in dat_batches(path, _BATCH):
        if selection is not None:
            batch = selection.filter_batch(batch)
        out: list[bytes] = []
        for sample in batch:
            name, data = sample.desc.name, sample.raw
            try:
                obj = objects.event(name, data)
            except ValueError as exc:
                if options.warn is not None:
                    options.warn(f"{path}: offset {sample.offset:#x}: {name}: {exc}; "
                                 "shown as raw bytes")
                out.append(objects.raw(name, data))
                continue
            if obj is not None:
                out.append(obj)
        yield out
