"""A perf.data input opened for decoding, and its formatted events a list at a time:
filters first, then the kept samples formatted together (the C loop's fast path)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, NamedTuple

from ehtool.decode.options import DecodeOptions
from ehtool.errors import InputError, input_name
from ehtool.render.meta_keys import FILE_KEY

if TYPE_CHECKING:
    from ehtool.perfdata import PerfDataFile
    from ehtool.render.events import SampleFormatter


@contextlib.contextmanager
def open_perf(path: str, options: DecodeOptions, *, announce: bool = True,
              ) -> Iterator[tuple[PerfDataFile, SampleFormatter, list[InputError]]]:
    """``path`` open, bound to the selection, with its formatter, and the list its
    recoverable problems go to (an unknown sample id...: reported after the last
    record). ``announce``: warn when formats come from the running kernel."""
    from ehtool.perfdata import PerfDataFile
    from ehtool.render.events import SampleFormatter

    problems: list[InputError] = []
    with PerfDataFile.open(path, on_error=problems.append) as f:
        if options.formats_from_host and f.missing_formats():
            from ehtool.decode.host_formats import attach_host_formats

            names = attach_host_formats(f)
            if names and announce and options.warn is not None:
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
            time_mode=options.time,
            fields_key=options.fields_key,
        )
        yield f, fmt, problems


class Joined(NamedTuple):
    """``count`` formatted events already joined by the writer's separator."""

    data: bytes
    count: int


#: what the pipeline writes
Batch = list[bytes] | Joined


def format_batches(f: PerfDataFile, fmt: SampleFormatter, options: DecodeOptions,
                   sep: bytes | None = None) -> Iterator[list[bytes] | Joined]:
    """The formatted (and filtered) events of an open perf.data file, a list at a time;
    with ``sep`` (the writer's :attr:`~ehtool.render.document.EventsWriter.separator`),
    batches of samples come joined (:class:`Joined`: no bytes object per event)."""
    selection = options.selection
    filtered = selection is not None and (selection.needs_prefilter()
                                          or selection.needs_event())
    if not filtered and not options.nonsample:
        if sep is not None:
            format_joined = fmt.format_joined
            for batch in f.batches(options.order, nonsample=False):
                if batch:
                    yield Joined(format_joined(batch, sep), len(batch))
            return
        format_many = fmt.format_many
        for batch in f.batches(options.order, nonsample=False):
            yield format_many(batch)
        return
    format_many = fmt.format_many
    format_record = fmt.format_record
    for batch in f.batches(options.order, nonsample=options.nonsample):
        # filter first (no formatting for events not printed), then format the rest
        # together: the C loop's fast path, and rel/delta times see only printed events
        kept = selection.filter_batch(batch) if filtered else batch
        if not options.nonsample:
            if sep is None:
                yield format_many(kept)
            else:  # (an empty batch too: a worker of -j N listens for its turn between)
                yield Joined(fmt.format_joined(kept, sep), len(kept)) if kept else []
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
