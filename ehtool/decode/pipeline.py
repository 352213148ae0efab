"""Decode perf.data (or ``.dat``) inputs into a JSON document: the library side of
``ehtool decode``.

::

    from ehtool.decode.pipeline import DecodeOptions, decode_to
    with open("out.json", "wb") as out:
        errors = decode_to(out, ["perf.data"], DecodeOptions())

Every complete record is written before an input error is reported, and the
document is always closed, so the output stays valid JSON.
"""

from __future__ import annotations

import contextlib
import gc
import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, BinaryIO, NamedTuple, Protocol

from ehtool.errors import EhtoolError, InputError, SignalExit, combined
from ehtool.render.meta_keys import META_DEFAULT
from ehtool.render.style import SPACED, JsonStyle

#: events formatted between two writes to the output
_BATCH = 512
#: data sections smaller than this are decoded by one process
_PARALLEL_MIN_BYTES = 8 << 20


class EventSelection(Protocol):
    """What ``--filter`` and the other selections give the pipeline
    (``ehtool.decode.filters.Selection``)."""

    @property
    def parallel_safe(self) -> bool:
        """False when selecting an event needs the records before it."""

    def bind(self, perf_file: Any) -> None:
        """Called with each opened PerfDataFile before its records are read."""

    def needs_prefilter(self) -> bool:
        """True when :meth:`prefilter` must run."""

    def needs_event(self) -> bool:
        """True when :meth:`select` must run (checks beyond :meth:`prefilter`)."""

    def prefilter(self, sample: Any) -> bool:
        """Cheap checks on the sample's own values (pid, cpu, time...)."""

    def select(self, sample: Any) -> bool:
        """Checks on the typed event (provider, level, fields...)."""

    def report(self) -> list[str]:
        """State the second process hands back (JSON-able), for :meth:`absorb`."""

    def absorb(self, report: list[str]) -> None:
        """Take in the second process's :meth:`report`."""


@dataclass
class DecodeOptions:
    """What ``ehtool decode`` prints and how."""

    style: JsonStyle = SPACED
    order: str = "time"  # "time" (perf-decode's order within each round) or "file"
    meta: frozenset[str] = META_DEFAULT
    jsonl: bool = False
    #: indented multi-line JSON (the json format only)
    pretty: bool = False
    bom: bool = False
    input_format: str = "perf"  # "perf" or "dat"
    #: how meta time is shown: perf, iso, ns, rel, delta (ehtool/render/times.py)
    time: str = "perf"
    #: nest each event's fields under this key (``--fields-key``); None: perf-decode's
    #: flat members beside "n" and "meta"
    fields_key: str | None = None
    #: which events are printed (filters); None prints all
    selection: EventSelection | None = None
    nonsample: bool = False
    #: processes to decode with (file mode, big inputs); 1 disables the second core
    jobs: int = 2
    #: the running kernel's formats for events a (cut) file has none for
    formats_from_host: bool = False
    warn: Callable[[str], None] | None = None
    #: ``progress(bytes_done, bytes_total)`` after each batch (total 0: unknown)
    progress: Callable[[int, int], None] | None = field(default=None, repr=False)


def decode_to(out: BinaryIO, inputs: Iterable[str], options: DecodeOptions) -> list[EhtoolError]:
    """Write the JSON document for ``inputs`` to ``out``; return the input errors met.

    An input that cannot be opened contributes an empty array, as in perf-decode.
    ``options.progress(done, total)`` is called after each batch of events with
    the input bytes read so far and their total (0 when unknown: a pipe).
    """
    from ehtool.render.document import DocumentWriter, JsonLinesWriter

    inputs = list(inputs)
    progress = _Progress(options.progress, inputs)
    writer_cls = JsonLinesWriter if options.jsonl else DocumentWriter
    writer = writer_cls(out, style=options.style, bom=options.bom, pretty=options.pretty)
    errors: list[EhtoolError] = []
    threshold = gc.get_threshold()
    gc.set_threshold(50_000, *threshold[1:])  # samples come and go in batches: fewer scans
    try:
        for path in inputs:
            writer.begin_file("stdin" if path == "-" else path)
            try:
                for batch in _batches(path, options, progress, writer):
                    if type(batch) is _Spliced:  # the second core's half, framed
                        writer.splice(batch.file, batch.count)
                        continue
                    writer.events(batch)
                    progress.batch_done()
            except EhtoolError as exc:
                errors.append(exc)
            writer.end_file()
            progress.input_done()
    finally:
        gc.set_threshold(*threshold)
        writer.close()
    return errors


class _Progress:
    """Input bytes read so far, reported to ``DecodeOptions.progress``."""

    def __init__(self, report: Callable[[int, int], None] | None, inputs: list[str]) -> None:
        self.report = report
        self.sizes = [_input_size(path) for path in inputs] if report is not None else []
        self.total = 0 if 0 in self.sizes else sum(self.sizes)
        self.done = 0
        #: the PerfDataFile being read (its ``position``), or None
        self.reading: Any = None

    def batch_done(self) -> None:
        if self.report is not None and self.reading is not None:
            self.report(self.done + self.reading.position, self.total)

    def input_done(self) -> None:
        self.reading = None
        if self.report is not None:
            self.done += self.sizes.pop(0)
            self.report(self.done, self.total)


def _input_size(path: str) -> int:
    """Bytes in a regular input file; 0 for stdin, pipes and missing files."""
    import os
    import stat

    if path == "-":
        return 0
    try:
        st = os.stat(path)
    except OSError:
        return 0
    return st.st_size if stat.S_ISREG(st.st_mode) else 0


class _Spliced(NamedTuple):
    """Events another process formatted and framed into ``file`` (at its start)."""

    file: BinaryIO
    count: int


def _batches(path: str, options: DecodeOptions, progress: _Progress,
             writer: Any) -> Iterator[list[bytes] | _Spliced]:
    """The formatted events of one input, a list at a time."""
    if options.input_format == "dat":
        return _dat_batches(path, options)
    return _perf_batches(path, options, progress, writer)


def _perf_batches(path: str, options: DecodeOptions, progress: _Progress,
                  writer: Any) -> Iterator[list[bytes] | _Spliced]:
    from ehtool.perfdata import PerfDataFile
    from ehtool.render.events import SampleFormatter

    # recoverable problems (an unknown sample id...) are collected here and reported
    # after the last record; a fatal one (a corrupt record) ends the walk and is raised
    problems: list[InputError] = []
    with PerfDataFile.open(path, on_error=problems.append) as f:
        progress.reading = f
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
            file=("stdin" if path == "-" else path) if options.jsonl else None,
            time_mode=options.time,
            fields_key=options.fields_key,
        )
        if _parallel(f, options):
            yield from _two_cores(f, fmt, options, writer, problems)
        else:
            yield from _format_batches(f, fmt, options)
        if options.time == "iso" and not f.session.clock.utc_known and options.warn:
            options.warn(f"{path}: no clock data (record with perf record -k CLOCK_REALTIME "
                         "or -k monotonic): times are seconds of the session clock")
        if problems:
            raise combined(problems)


def _parallel(f: Any, options: DecodeOptions) -> bool:
    """True to decode a file-mode input with two processes."""
    selection = options.selection
    if options.jobs < 2 or "comm" in options.meta or (
            selection is not None and not selection.parallel_safe):
        return False
    if options.time in ("rel", "delta"):  # each time depends on the events before it
        return False
    return not f.pipe_mode and f.data_range[1] - f.data_range[0] >= _PARALLEL_MIN_BYTES


def _two_cores(f: Any, fmt: Any, options: DecodeOptions, writer: Any,
               problems: list[InputError]) -> Iterator[list[bytes] | _Spliced]:
    """Decode the input with a forked child: this process decodes and yields the
    records up to ``f.split_point()`` (a FINISHED_ROUND near the middle, so the
    output order is the one-process order) while the child finds that point
    itself and formats the rest, framed by ``writer.continuation``, into a
    temporary file that is then spliced in. Without such a point the child
    contributes nothing and this process reads to the end.

    The result equals one process's on every input: the child's warnings follow
    this half's, its recoverable problems are added to ``problems``, and a fatal
    error in this half (where one process would stop reading) drops the child's half.
    A signal that ends the child ends this process the same way.
    """
    import os
    import tempfile

    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as report:
        pid = os.fork()
        if pid == 0:  # child: never returns
            _child_half(f, fmt, options, writer, out, report)
        try:
            f.stop_at_split()
            yield from _format_batches(f, fmt, options)
        except BaseException:  # a fatal input error, a signal: the other half is not wanted
            _stop_child(pid)
            raise
        finally:
            _, status = os.waitpid(pid, 0)
        report.seek(0)
        try:
            child = json.loads(report.read())
        except ValueError:
            raise EhtoolError(f"the decoding worker died (wait status {status})") from None
        if child["signal"]:
            raise SignalExit(child["signal"])
        if child["internal"]:
            raise EhtoolError(child["internal"])
        out.seek(0)
        yield _Spliced(out, child["count"])
        if options.selection is not None:
            options.selection.absorb(child["selection"])
        if options.warn is not None:
            for message in child["warnings"]:
                options.warn(message)
        problems += [InputError(message) for message in child["problems"]]
        if child["fatal"]:
            raise InputError(child["fatal"])


def _stop_child(pid: int) -> None:
    """Kill the forked worker (it may already have exited: waitpid reaps it)."""
    import os
    import signal

    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def _child_half(f: Any, fmt: Any, options: DecodeOptions, writer: Any, out: Any,
                report: Any) -> None:
    """The forked worker: format the records after the split into ``out``; write what
    the parent must know (event count, warnings, problems, a fatal error, a signal) as
    JSON into ``report``; exit without returning."""
    import os

    result: dict[str, Any] = {"count": 0, "warnings": [], "problems": [], "fatal": None,
                              "signal": 0, "internal": None, "selection": []}
    f.on_error = lambda err: result["problems"].append(str(err))
    fmt.warn = result["warnings"].append  # no handler exists yet: this is the one they take
    try:
        gc.freeze()  # the parent's objects: never collected here
        split = f.split_point()
        if split is not None:
            f.restrict(split, f.data_range[1])
            with open(os.dup(out.fileno()), "wb", buffering=1 << 20) as sink:
                sub = writer.continuation(sink)
                try:
                    for batch in _format_batches(f, fmt, options):
                        sub.events(batch)
                        result["count"] += len(batch)
                except EhtoolError as exc:
                    result["fatal"] = str(exc)
                if options.selection is not None:
                    result["selection"] = options.selection.report()
    except KeyboardInterrupt:
        result["signal"] = 2
    except SystemExit as exc:  # SignalExit: a terminating signal reached this process
        result["signal"] = exc.code - 128 if isinstance(exc.code, int) and exc.code > 128 else 15
    except BaseException as exc:  # reported by the parent, which owns stderr's story
        result["internal"] = f"internal error in the decoding worker: {exc!r}"
    finally:
        report.write(json.dumps(result).encode())
        report.flush()
        os._exit(0)


def _format_batches(f: Any, fmt: Any, options: DecodeOptions) -> Iterator[list[bytes]]:
    """The formatted (and filtered) events of an open perf.data file, a list at a time."""
    selection = options.selection
    prefilter = (selection.prefilter if selection is not None and selection.needs_prefilter()
                 else None)
    select = selection.select if selection is not None and selection.needs_event() else None
    if prefilter is None and select is None and not options.nonsample:
        format_many = fmt.format_many
        for batch in f.batches(options.order, nonsample=False):
            yield format_many(batch)
        return
    format_many = fmt.format_many
    format_record = fmt.format_record
    for batch in f.batches(options.order, nonsample=options.nonsample):
        # filter first (no formatting for events not printed), then format the rest
        # together: the C loop's fast path, and rel/delta times see only printed events
        kept = []
        for sample in batch:
            if prefilter is not None and not prefilter(sample):
                continue
            if select is not None and not select(sample):
                continue
            kept.append(sample)
        if not options.nonsample:
            yield format_many(kept)
            continue
        out: list[bytes] = []
        run: list = []
        for sample in kept:
            if sample.is_sample:
                run.append(sample)
                continue
            if run:
                out += format_many(run)
                run = []
            event = format_record(sample)
            if event is not None:
                out.append(event)
        if run:
            out += format_many(run)
        yield out


def _dat_batches(path: str, options: DecodeOptions) -> Iterator[list[bytes]]:
    """A ``.dat`` capture's EventHeader events; a malformed one is a warning and is
    shown as its raw bytes (``"raw"``, as a tracepoint without a format)."""
    from ehtool.eventheader.dat import iter_dat
    from ehtool.render.dat import EventObjects

    objects = EventObjects(options.style, options.fields_key)
    out: list[bytes] = []
    for index, (name, data) in enumerate(iter_dat(path)):
        try:
            obj = objects.event(name, data)
        except ValueError as exc:
            if options.warn is not None:
                options.warn(f"{path}: event {index}: {name}: {exc}; shown as raw bytes")
            out.append(objects.raw(name, data))
            continue
        if obj is None:
            continue
        out.append(obj)
        if len(out) >= _BATCH:
            yield out
            out = []
    yield out
