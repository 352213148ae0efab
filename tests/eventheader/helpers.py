"""Hand-built EventHeader events for the decoder tests (metadata built with the grammar)."""

from __future__ import annotations

import re
import struct

from ehtool.eventheader.enums import (
    ENCODING_CARRAY_FLAG,
    ENCODING_CHAIN_FLAG,
    ENCODING_VARRAY_FLAG,
    FORMAT_CHAIN_FLAG,
)
from ehtool.eventheader.grammar import build_metadata

# perf-decode writes code points above U+10FFFF as legacy 5- and 6-byte UTF-8
# forms; ehtool writes U+FFFD there (ehtool/values/text.py documents it)
LEGACY_UTF8 = re.compile(
    rb"[\xf8-\xfb][\x80-\xbf]{4}|[\xfc-\xfd][\x80-\xbf]{5}|\xfe[\x80-\xbf]{6}")


def fd(name: bytes, encoding: int, fmt: int | None = None, tag: int = 0,
       count: int | None = None, varray: bool = False) -> dict:
    """One field definition for :func:`build_metadata` (flags set from the arguments;
    ``fmt`` is the format value, or the member count of a struct)."""
    enc = encoding
    if fmt is not None or tag:
        enc |= ENCODING_CHAIN_FLAG
    if count is not None:
        enc |= ENCODING_CARRAY_FLAG
    if varray:
        enc |= ENCODING_VARRAY_FLAG
    form = None
    if enc & ENCODING_CHAIN_FLAG:
        form = (fmt or 0) | (FORMAT_CHAIN_FLAG if tag else 0)
    return {"name": name, "encoding": enc, "format": form, "tag": tag or None,
            "array_count": count}


def event(fields: list[dict], payload: bytes, *, name: bytes = b"Ev", little: bool = True,
          level: int = 5, flags: int | None = None, version: int = 0, ident: int = 0,
          tag: int = 0, opcode: int = 0, activity: bytes | None = None,
          activity_after: bool = False, extra_ext: bytes | None = None) -> bytes:
    """Header + [activity id] + metadata extension (+ optional unknown extension) + payload."""
    order = "<" if little else ">"
    if flags is None:
        flags = 0x05 | (0x02 if little else 0)
    meta = build_metadata(name, fields, little)
    exts = [(1, meta)]
    if activity is not None:
        exts.insert(len(exts) if activity_after else 0, (2, activity))
    if extra_ext is not None:
        exts.insert(0, (0x55, extra_ext))
    out = struct.pack(order + "BBHHBB", flags, version, ident, tag, opcode, level)
    for i, (kind, data) in enumerate(exts):
        chain = 0x8000 if i + 1 < len(exts) else 0
        out += struct.pack(order + "HH", len(data), kind | chain) + data
    return out + payload


def reference_events() -> list[tuple[str, bytes, int]]:
    """Every EventHeader event (tracepoint, data, offset) of the reference .dat capture,
    of the reference recording and of examples/eventheader.data."""
    from pathlib import Path

    from ehtool.eventheader.dat import iter_dat
    from ehtool.perfdata import PerfDataFile
    from golden import golden_path

    def recorded(path: Path) -> list[tuple[str, bytes, int]]:
        with PerfDataFile.open(str(path)) as f:
            return [(s.desc.format.name, bytes(s.raw), s.desc.format.eventheader_offset)
                    for s in f.samples("file")
                    if getattr(s.desc.format, "eventheader_offset", None) is not None]

    example = Path(__file__).resolve().parents[2] / "examples" / "eventheader.data"
    dat = golden_path("linuxtracepoints/EventHeaderInterceptorLE64.dat")
    return ([(name, data, 0) for name, data in iter_dat(dat)]
            + recorded(golden_path("linuxtracepoints/perf.data")) + recorded(example))


def mutated_event(rng, events: list[tuple[str, bytes, int]]) -> tuple[str, bytes, int]:
    """One of ``events`` mutated: anywhere (header, extensions) 30% of the time, else in
    its field data (bytes changed, the data cut)."""
    from fuzz.harness import mutate

    from ehtool.eventheader.decoder import parse_name, read_event

    name, data, offset = rng.choice(events)
    if rng.random() < 0.3:
        return name, mutate(rng, data[offset:]), 0
    start = read_event(parse_name(name), data, offset).payload
    buf = bytearray(data)
    for _ in range(rng.randint(1, 3)):
        if rng.random() < 0.3 and len(buf) > start + 1:
            del buf[rng.randrange(start, len(buf)):]
        elif len(buf) > start:
            buf[rng.randrange(start, len(buf))] = rng.randrange(256)
    return name, bytes(buf), offset


def recording(path, payloads: list[bytes], rounds: int = 1) -> None:
    """A perf.data at ``path`` of one sample of ``user_events:MyProvider_L5K1`` per
    EventHeader event in ``payloads`` (its metadata and first sample from
    examples/eventheader.data), a microsecond apart; ``rounds`` times over, each time
    ended by a FINISHED_ROUND record."""
    from pathlib import Path

    from ehtool.perfdata.grammar import RecordType
    from ehtool.perfdata.reader import PerfDataFile
    from ehtool.perfdata.writer import PerfDataWriter, copy_metadata

    example = Path(__file__).resolve().parents[2] / "examples" / "eventheader.data"
    with PerfDataFile.open(example) as f:
        s0 = next(s for s in f.samples("file") if b"Started\0" in s.raw)
        prefix = bytes(s0.raw[:s0.desc.format.eventheader_offset])
        w = PerfDataWriter(path, big_endian=f.big_endian,
                           attr_size=max(d.attr.size for d in f.descs))
        copy_metadata(w, f)
    index = next(i for i, (_, _, name) in enumerate(w.events) if name.endswith("_L5K1"))
    t = s0.time
    for _ in range(rounds):
        for payload in payloads:
            w.add_sample(index, id=w.events[index][1][0], time=t, pid=s0.pid, tid=s0.tid,
                         cpu=s0.cpu, raw=prefix + payload)
            t += 1000
        if rounds > 1:
            w.add_record(RecordType.FINISHED_ROUND)
    w.close()
