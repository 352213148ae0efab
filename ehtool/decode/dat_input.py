"""``.dat`` captures (EventHeaderInterceptor) as perf samples, so that the filters and
the typed layer read them as they read perf.data: no time, cpu, pid or tid, one
:class:`DatDesc` (and :class:`DatFormat`, in place of a tracefs format) per tracepoint
name."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from ehtool.errors import InputError
from ehtool.eventheader.dat import records
from ehtool.formats.tracefs_format import NONE, SCALAR, FieldFormat
from ehtool.perfdata.records import Sample

#: the typed view of an event that is not decoded (malformed): its bytes as ``"raw"``,
#: as the JSON shows it
_RAW = FieldFormat("raw", "raw", 0, 0, None, NONE, 1, SCALAR, 0)


@dataclass(eq=False)
class DatFormat:
    """What the typed layer and the filters need of a tracefs format, for the events of
    one tracepoint name of a .dat capture: the EventHeader starts the data."""

    name: str
    system: str = ""
    fields: list[FieldFormat] = field(default_factory=lambda: [_RAW])
    eventheader_offset: int = 0
    #: shown by its name alone (``MyProvider_L5K1``): a capture has no system
    bare: bool = True


@dataclass(eq=False)
class DatDesc:
    """The ``EventDesc`` of a .dat capture's events of one tracepoint name (compared
    and hashed by identity, as EventDesc)."""

    name: str
    format: DatFormat


def dat_batches(path: str, size: int) -> Iterator[list[Sample]]:
    """The records of an EventHeader tracepoint name as perf samples (lists of up to
    ``size``) for the filters (``Selection.bind(None)``) and the typed layer: no time,
    cpu, pid or tid, a :class:`DatDesc` per name. Records of other names, which the
    decoder does not show, are left out."""
    from ehtool.eventheader.decoder import parse_name

    descs: dict[str, DatDesc | None] = {}
    out: list[Sample] = []
    try:
        for offset, name, data in records(path):
            desc = descs.get(name, False)
            if desc is False:
                desc = descs[name] = (DatDesc(name, DatFormat(name))
                                      if parse_name(name) is not None else None)
            if desc is None:
                continue
            out.append(Sample(None, None, None, None, data, desc, offset))
            if len(out) >= size:
                yield out
                out = []
    except InputError:  # (a cut or corrupt record: the complete ones before it first)
        if out:
            yield out
        raise
    if out:
        yield out
