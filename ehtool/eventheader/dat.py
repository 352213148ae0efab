"""Reader for ``.dat`` captures of raw EventHeader events (EventHeaderInterceptor):
records of ``u32 size`` (including itself), the NUL-terminated tracepoint name,
then the EventHeader bytes."""

from __future__ import annotations

import struct
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field

from ehtool.errors import InputError
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


@dataclass(eq=False)
class DatDesc:
    """The ``EventDesc`` of a .dat capture's events of one tracepoint name (compared
    and hashed by identity, as EventDesc)."""

    name: str
    format: DatFormat


def _records(path: str) -> Iterator[tuple[int, str, bytes]]:
    """(offset, tracepoint name, event bytes) of each record (``-``: standard input)."""
    if path == "-":
        data, path = sys.stdin.buffer.read(), "stdin"
    else:
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError as exc:
            raise InputError(f"cannot open: {exc.strerror or exc}", path) from None
    pos = 0
    while pos < len(data):
        if pos + 4 > len(data):
            raise InputError("truncated record size", path, pos)
        (size,) = struct.unpack_from("<I", data, pos)
        if size < 5 or pos + size > len(data):
            raise InputError(f"bad record size {size}", path, pos)
        record = data[pos + 4:pos + size]
        nul = record.find(b"\0")
        if nul < 0:
            raise InputError("tracepoint name without terminator", path, pos)
        yield pos, record[:nul].decode("utf-8", "surrogateescape"), record[nul + 1:]
        pos += size


def iter_dat(path: str) -> Iterator[tuple[str, bytes]]:
    """Yield (tracepoint name, event bytes) for each record of a little-endian .dat file
    (``-``: standard input)."""
    for _, name, data in _records(path):
        yield name, data


def dat_batches(path: str, size: int) -> Iterator[list[Sample]]:
    """The records of an EventHeader tracepoint name as perf samples (lists of up to
    ``size``) for the filters (``Selection.bind(None)``) and the typed layer: no time,
    cpu, pid or tid, a :class:`DatDesc` per name. Records of other names, which the
    decoder does not show, are left out."""
    from ehtool.eventheader.decoder import parse_name

    descs: dict[str, DatDesc | None] = {}
    out: list[Sample] = []
    for offset, name, data in _records(path):
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
    if out:
        yield out
