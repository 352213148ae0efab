"""The formatted events of an open perf.data file, a list at a time: filters first,
then the kept samples formatted together (the C loop's fast path)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, BinaryIO, NamedTuple

from ehtool.decode.options import DecodeOptions

if TYPE_CHECKING:
    from ehtool.perfdata import PerfDataFile
    from ehtool.render.events import SampleFormatter


class Spliced(NamedTuple):
    """Events another process formatted and framed into ``file`` (at its start)."""

    file: BinaryIO
    count: int


class Joined(NamedTuple):
    """``count`` formatted events framed as the writer joins them (its
    :attr:`~ehtool.render.document.EventsWriter.joining`: a lead, the events with a
    separator between them, a tail), so that it writes them in one call."""

    data: bytes
    count: int


#: what the pipeline writes: formatted events, or another process's framed ones
Batch = list[bytes] | Spliced | Joined


def format_batches(f: PerfDataFile, fmt: SampleFormatter, options: DecodeOptions,
                   joining: tuple[bytes, bytes, bytes] | None = None,
                   ) -> Iterator[list[bytes] | Joined]:
    """The formatted (and filtered) events of an open perf.data file, a list at a time;
    with ``joining`` (the writer's :attr:`~ehtool.render.document.EventsWriter.joining`),
    batches of samples come joined (:class:`Joined`: no bytes object per event)."""
    selection = options.selection
    filtered = selection is not None and (selection.needs_prefilter()
                                          or selection.needs_event())
    if not filtered and not options.nonsample:
        if joining is not None:
            lead, sep, tail = joining
            format_joined = fmt.format_joined
            for batch in f.batches(options.order, nonsample=False):
                if batch:
                    yield Joined(format_joined(batch, sep, lead, tail), len(batch))
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
            if joining is None:
                yield format_many(kept)
            elif kept:
                lead, sep, tail = joining
                yield Joined(fmt.format_joined(kept, sep, lead, tail), len(kept))
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
