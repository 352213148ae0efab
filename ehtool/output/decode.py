"""Decode perf.data (or ``.dat``) inputs into a JSON document: the library side of
``ehtool decode``.

::

    from ehtool.output.decode import DecodeOptions, decode_to
    with open("out.json", "wb") as out:
        errors = decode_to(out, ["perf.data"], DecodeOptions())

Every complete record is written before an input error is reported, and the
document is always closed, so the output stays valid JSON.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, BinaryIO

from ehtool.errors import EhtoolError
from ehtool.output.events import META_DEFAULT
from ehtool.output.style import SPACED, JsonStyle

#: events formatted between two writes to the output
_BATCH = 512


@dataclass
class DecodeOptions:
    """What ``ehtool decode`` prints and how."""

    style: JsonStyle = SPACED
    order: str = "time"  # "time" (perf-decode's order within each round) or "file"
    meta: frozenset[str] = META_DEFAULT
    jsonl: bool = False
    bom: bool = False
    input_format: str = "perf"  # "perf" or "dat"
    #: keeps a formatted event when it returns True (filters); None keeps all
    select: Callable[[Any, bytes], bool] | None = None
    #: samples are checked cheaply before formatting (pid, cpu, name...)
    prefilter: Callable[[Any], bool] | None = None
    nonsample: bool = False
    #: called with each opened PerfDataFile before decoding (filters need its session)
    bind: Callable[[Any], None] | None = None
    warn: Callable[[str], None] | None = None
    progress: Callable[[int], None] | None = field(default=None, repr=False)


def decode_to(out: BinaryIO, inputs: Iterable[str], options: DecodeOptions) -> list[EhtoolError]:
    """Write the JSON document for ``inputs`` to ``out``; return the input errors met.

    An input that cannot be opened contributes an empty array, as in perf-decode.
    """
    from ehtool.output.document import DocumentWriter, JsonLinesWriter

    writer_cls = JsonLinesWriter if options.jsonl else DocumentWriter
    writer = writer_cls(out, style=options.style, bom=options.bom)
    errors: list[EhtoolError] = []
    try:
        for path in inputs:
            name = "stdin" if path == "-" else path
            writer.begin_file(name)
            batch: list[bytes] = []
            try:
                for event in _events(path, options):
                    batch.append(event)
                    if len(batch) >= _BATCH:
                        writer.events(batch)
                        batch = []
            except EhtoolError as exc:
                errors.append(exc)
            writer.events(batch)
            writer.end_file()
    finally:
        writer.close()
    return errors


def _events(path: str, options: DecodeOptions) -> Iterator[bytes]:
    if options.input_format == "dat":
        yield from _dat_events(path, options)
    else:
        yield from _perf_events(path, options)


def _perf_events(path: str, options: DecodeOptions) -> Iterator[bytes]:
    from ehtool.output.events import SampleFormatter
    from ehtool.perfdata import PerfDataFile

    with PerfDataFile.open(path) as f:
        if options.bind is not None:
            options.bind(f)
        fmt = SampleFormatter(
            options.style,
            big_endian=f.big_endian,
            long_size=f.long_size,
            time_json=f.session.time_json,
            comm_of=f.session.comm,
            meta=options.meta,
            warn=options.warn,
        )
        format_sample = fmt.format
        prefilter = options.prefilter
        select = options.select
        if options.nonsample:
            stream = f.records(order=options.order, nonsample=True)
        else:
            stream = f.samples(order=options.order)
        for sample in stream:
            if prefilter is not None and not prefilter(sample):
                continue
            if sample.is_sample:
                event = format_sample(sample)
            else:
                event = fmt.format_record(sample)
                if event is None:
                    continue
            if select is None or select(sample, event):
                yield event


def _dat_events(path: str, options: DecodeOptions) -> Iterator[bytes]:
    from ehtool.eventheader.dat import iter_dat
    from ehtool.eventheader.decoder import EventHeaderDecoder

    s = options.style
    decoder = EventHeaderDecoder(s)
    head = b"{" + s.first + b'"n"' + s.colon
    meta_key = s.sep + b'"meta"' + s.colon
    for name, data in iter_dat(path):
        ev = decoder.decode(name, data, 0)
        if ev is None:
            continue
        meta = ev.meta[len(s.sep):]
        meta_obj = meta_key + (b"{" + s.first + meta + s.close_obj if meta else s.empty_obj)
        yield head + ev.name_json + ev.fields + meta_obj + s.close_obj
