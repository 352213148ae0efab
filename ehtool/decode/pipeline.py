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
from typing import Any, BinaryIO, NamedTuple

from ehtool.errors import EhtoolError, InputError, SignalExit, combined
from ehtool.render.events import META_DEFAULT
from ehtool.render.style import SPACED, JsonStyle

#: events formatted between two writes to the output
_BATCH = 512
#: data sections smaller than this are decoded by one process
_PARALLEL_MIN_BYTES = 8 << 20


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
    #: keeps a formatted event when it returns True (filters); None keeps all
    select: Callable[[Any, bytes], bool] | None = None
    #: samples are checked cheaply before formatting (pid, cpu, name...)
    prefilter: Callable[[Any], bool] | None = None
    nonsample: bool = False
    #: processes to decode with (file mode, big inputs); 1 disables the second core
    jobs: int = 2
    #: False when a filter needs state from earlier records (--comm, relative --since)
    parallel_safe: bool = True
    #: the running kernel's formats for events a (cut) file has none for
    formats_from_host: bool = False
    #: called with each opened PerfDataFile before decoding (filters need its session)
    bind: Callable[[Any], None] | None = None
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
    report = options.progress
    sizes = [_input_size(path) for path in inputs] if report is not None else []
    total = 0 if 0 in sizes else sum(sizes)
    done = 0
    reading: list[Any] = [None]  # the PerfDataFile being read, for progress
    writer_cls = JsonLinesWriter if options.jsonl else DocumentWriter
    writer = writer_cls(out, style=options.style, bom=options.bom, pretty=options.pretty)
    errors: list[EhtoolError] = []
    threshold = gc.get_threshold()
    gc.set_threshold(50_000, *threshold[1:])  # samples come and go in batches: fewer scans
    try:
        for i, path in enumerate(inputs):
            name = "stdin" if path == "-" else path
            writer.begin_file(name)
            try:
                for batch in _batches(path, options, reading, writer):
                    if type(batch) is _Spliced:  # the second core's half, framed
                        writer.splice(batch.file, batch.count)
                        continue
                    writer.events(batch)
                    if report is not None and reading[0] is not None:
                        report(done + reading[0].position, total)
            except EhtoolError as exc:
                errors.append(exc)
            writer.end_file()
            reading[0] = None
            if report is not None:
                done += sizes[i]
                report(done, total)
    finally:
        gc.set_threshold(*threshold)
        writer.close()
    return errors


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


def _batches(path: str, options: DecodeOptions, reading: list[Any],
             writer: Any) -> Iterator[list[bytes] | _Spliced]:
    """The formatted events of one input, a list at a time."""
    if options.input_format == "dat":
        return _dat_batches(path, options)
    return _perf_batches(path, options, reading, writer)


def _perf_batches(path: str, options: DecodeOptions, reading: list[Any],
                  writer: Any) -> Iterator[list[bytes] | _Spliced]:
    from ehtool.perfdata import PerfDataFile
    from ehtool.render.events import SampleFormatter

    # recoverable problems (an unknown sample id...) are collected here and reported
    # after the last record; a fatal one (a corrupt record) ends the walk and is raised
    problems: list[InputError] = []
    with PerfDataFile.open(path, on_error=problems.append) as f:
        reading[0] = f
        if options.formats_from_host and f.missing_formats():
            from ehtool.decode.host_formats import attach_host_formats

            names = attach_host_formats(f)
            if names and options.warn is not None:
                options.warn(f"{path}: formats of {', '.join(names)} taken from the running "
                             "kernel (--formats-from-host): right only on the machine and "
                             "boot that recorded the file")
        if options.bind is not None:
            options.bind(f)
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
        )
        if _parallel(f, options):
            yield from _two_cores(f, fmt, options, writer, problems)
        else:
            yield from _format_batches(f, fmt, options)
        if problems:
            raise combined(problems)


def _parallel(f: Any, options: DecodeOptions) -> bool:
    """True to decode a file-mode input with two processes."""
    if options.jobs < 2 or not options.parallel_safe or "comm" in options.meta:
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
                              "signal": 0, "internal": None}
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
    prefilter = options.prefilter
    select = options.select
    if prefilter is None and select is None and not options.nonsample:
        format_many = fmt.format_many
        for batch in f.batches(options.order, nonsample=False):
            yield format_many(batch)
        return
    format_sample = fmt.format
    for batch in f.batches(options.order, nonsample=options.nonsample):
        out = []
        for sample in batch:
            if prefilter is not None and not prefilter(sample):
                continue
            if sample.is_sample:
                event = format_sample(sample)
            else:
                event = fmt.format_record(sample)
                if event is None:
                    continue
            if select is None or select(sample, event):
                out.append(event)
        yield out


def _dat_batches(path: str, options: DecodeOptions) -> Iterator[list[bytes]]:
    """A ``.dat`` capture's EventHeader events; a malformed one is a warning and is
    shown as its raw bytes (``"raw"``, as a tracepoint without a format)."""
    from ehtool.eventheader.dat import iter_dat
    from ehtool.render.eventheader import EventHeaderDecoder
    from ehtool.values.text import hex_bytes, utf8_json

    s = options.style
    decoder = EventHeaderDecoder(s)
    head = b"{" + s.first + b'"n"' + s.colon
    meta_key = s.sep + b'"meta"' + s.colon
    raw_key = s.sep + b'"raw"' + s.colon
    out: list[bytes] = []
    for index, (name, data) in enumerate(iter_dat(path)):
        try:
            ev = decoder.decode(name, data, 0)
        except ValueError as exc:
            if options.warn is not None:
                options.warn(f"{path}: event {index}: {name}: {exc}; shown as raw bytes")
            name_json = utf8_json(name.encode("utf-8", "surrogateescape"))
            out.append(head + name_json + raw_key + hex_bytes(data) + meta_key + s.empty_obj
                       + s.close_obj)
            continue
        if ev is None:
            continue
        meta = ev.meta[len(s.sep):]
        meta_obj = meta_key + (b"{" + s.first + meta + s.close_obj if meta else s.empty_obj)
        out.append(head + ev.name_json + ev.fields + meta_obj + s.close_obj)
        if len(out) >= _BATCH:
            yield out
            out = []
    yield out
