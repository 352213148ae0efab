"""Write file-mode perf.data (little- or big-endian) from the same construct grammar.

Records stream to disk as they are added (constant memory); attrs, ids and
feature sections are written after the data section on close, then the header
is patched. Used by the tests (big-endian and damaged files) and the benchmarks.

::

    with PerfDataWriter("out.data", big_endian=True) as w:
        d = w.add_event(attr, ids=[10, 11], name="sched:sched_switch")
        w.set_tracing_data(blob)
        w.set_feature(Feature.HOSTNAME, "host")
        w.set_clock_data(1, wall_clock_ns, clockid_time_ns)
        w.add_sample(d, id=10, time=..., pid=1, tid=1, cpu=0, raw=b"...")
        w.add_record(RecordType.FINISHED_ROUND)
"""

from __future__ import annotations

import dataclasses
import os
import struct
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, BinaryIO

import construct as c

if TYPE_CHECKING:
    from ehtool.perfdata.records import Sample

from ehtool.formats.tracefs_format import DATA_LOC, REL_LOC, EventFormat, FieldFormat
from ehtool.perfdata.grammar import (
    ATTR_FLAG_BITS,
    ATTR_SIZE_KNOWN,
    FILE_HEADER_SIZE,
    MAGIC,
    Feature,
    PerfGrammar,
    RecordType,
    SampleType,
    grammar_for,
)
from ehtool.perfdata.tracing_data import build_tracing_data


def make_attr(g: PerfGrammar, *, size: int = ATTR_SIZE_KNOWN, **fields: Any) -> c.Container:
    """A ``perf_event_attr`` container with every field zero except ``fields``.

    Flag bits go in by name (``sample_id_all=True``); ``size`` is the stored size.
    """
    flag_names = {name for name, _ in ATTR_FLAG_BITS}
    flags = c.Container({name: (0 if width > 1 else False) for name, width in ATTR_FLAG_BITS})
    attr = c.Container()
    for sub in g.attr.subcons:
        attr[sub.name] = flags if sub.name == "flags" else 0
    for key, value in fields.items():
        if key in flag_names:
            flags[key] = value
        elif key in attr:
            attr[key] = value
        else:
            raise KeyError(f"unknown perf_event_attr field {key!r}")
    attr.size = size
    attr.stored_size = size
    return attr


class PerfDataWriter:
    """Streams a file-mode perf.data file."""

    def __init__(self, path: str | os.PathLike, *, big_endian: bool = False,
                 attr_size: int = ATTR_SIZE_KNOWN) -> None:
        self.g = grammar_for(big_endian)
        self.big_endian = big_endian
        self.attr_size = attr_size
        self.events: list[tuple[Any, list[int], str]] = []
        self.features: dict[int, bytes] = {}
        self._f: BinaryIO = open(path, "wb")  # noqa: SIM115 - closed by close()
        self._f.write(b"\0" * FILE_HEADER_SIZE)
        self._data_size = 0
        self.data_size_override: int | None = None  # e.g. 0 to mimic a SIGKILLed perf

    # -- metadata ---------------------------------------------------------------------

    def add_event(self, attr: Any, ids: list[int], name: str = "") -> int:
        """Add an attr (a container from :func:`make_attr` or a parsed one); its index."""
        self.events.append((attr, list(ids), name))
        return len(self.events) - 1

    def set_feature(self, bit: int, value: Any) -> None:
        """A feature section: raw bytes, or a value for the feature's grammar."""
        if isinstance(value, (bytes, bytearray)):
            self.features[bit] = bytes(value)
        else:
            self.features[bit] = self.g.features[bit].build(value)

    def set_tracing_data(self, blob: bytes) -> None:
        self.features[Feature.TRACING_DATA] = bytes(blob)

    def set_clock_data(self, clockid: int, wall_clock_ns: int, clockid_time_ns: int) -> None:
        self.set_feature(Feature.CLOCK_DATA, dict(version=1, clockid=clockid,
                                                  wall_clock_ns=wall_clock_ns,
                                                  clockid_time_ns=clockid_time_ns))

    # -- records ----------------------------------------------------------------------

    def add_raw(self, data: bytes) -> None:
        """Append one record's bytes (already in the file's byte order)."""
        self._f.write(data)
        self._data_size += len(data)

    def record_bytes(self, rtype: int, body: Mapping | bytes | None = None, *, misc: int = 0,
                     sample_id: Mapping | None = None, sample_type: int = 0) -> bytes:
        """A non-sample record built from the grammar (``body`` per its record grammar)."""
        g = self.g
        if rtype in g.records:
            body_bytes = g.records[rtype].build(body or {})
        else:
            body_bytes = bytes(body or b"")
        trailer = g.sample_id(sample_type).build(sample_id) if sample_id is not None else b""
        size = 8 + len(body_bytes) + len(trailer)
        return g.record_header.build(dict(type=rtype, misc=misc, size=size)) + body_bytes + \
            trailer

    def add_record(self, rtype: int, body: Mapping | bytes | None = None, **kw: Any) -> None:
        self.add_raw(self.record_bytes(rtype, body, **kw))

    def sample_bytes(self, event: int, *, raw: bytes = b"", misc: int = 1, **fields: Any) -> bytes:
        """A PERF_RECORD_SAMPLE for event index ``event``; missing fields are 0.

        ``raw`` is padded so that the record stays 8-byte aligned, as perf does.
        """
        attr = self.events[event][0]
        st, rf = attr.sample_type, attr.read_format
        values: dict[str, Any] = {}
        for sub in self.g.sample_fields(st, rf):
            values[sub.name] = fields.get(sub.name, 0)
        if st & SampleType.IDENTIFIER and "identifier" not in fields:
            values["identifier"] = fields.get("id", 0)
        if st & SampleType.CALLCHAIN:
            values["callchain"] = fields.get("callchain", [])
            values["callchain_nr"] = len(values["callchain"])
        if st & SampleType.READ and "read_values" in values:
            values["read_values"] = fields.get("read_values", [])
            values["read_nr"] = len(values["read_values"])
        if st & SampleType.RAW:
            body_len = len(self.g.sample(st, rf).build(dict(
                header=dict(type=0, misc=0, size=0), **{**values, "raw": b"", "raw_size": 0},
                rest=b"")))
            pad = -(body_len + len(raw)) % 8
            values["raw"] = raw + b"\0" * pad
            values["raw_size"] = len(values["raw"])
        rec = dict(header=dict(type=RecordType.SAMPLE, misc=misc, size=0), rest=b"", **values)
        data = self.g.sample(st, rf).build(rec)
        rec["header"]["size"] = len(data)
        return self.g.sample(st, rf).build(rec)

    def add_sample(self, event: int, **kw: Any) -> None:
        self.add_raw(self.sample_bytes(event, **kw))

    # -- finishing ----------------------------------------------------------------------

    def close(self) -> None:
        if self._f.closed:
            return
        g, f = self.g, self._f
        data_offset = FILE_HEADER_SIZE
        data_end = data_offset + self._data_size
        bits = sorted(self.features)
        # feature table right after the data, then the payloads
        pos = data_end + 16 * len(bits)
        table = b""
        payloads = b""
        for bit in bits:
            payload = self.features[bit]
            table += g.section.build(dict(offset=pos, size=len(payload)))
            payloads += payload
            pos += len(payload)
        # id arrays, then the attrs section
        ids_blob = b""
        id_sections = []
        for _attr, ids, _name in self.events:
            id_sections.append(dict(offset=pos + len(ids_blob), size=8 * len(ids)))
            ids_blob += b"".join(g.u64.build(i) for i in ids)
        attrs_offset = pos + len(ids_blob)
        entry_size = self.attr_size + 16
        attrs_blob = b""
        for (attr, _ids, _name), sec in zip(self.events, id_sections, strict=True):
            attrs_blob += g.file_attr.build(dict(attr=attr, ids=sec), attr_size=entry_size)
        f.write(table + payloads + ids_blob + attrs_blob)
        words = [0, 0, 0, 0]
        for bit in bits:
            words[bit // 64] |= 1 << (bit % 64)
        header = g.file_header.build(dict(
            magic=MAGIC[::-1] if self.big_endian else MAGIC,
            size=FILE_HEADER_SIZE,
            attr_size=entry_size,
            attrs=dict(offset=attrs_offset, size=len(attrs_blob)),
            data=dict(offset=data_offset, size=self._data_size if self.data_size_override is None
                      else self.data_size_override),
            event_types=dict(offset=0, size=0),
            features=words,
        ))
        f.seek(0)
        f.write(header)
        f.close()

    def event_desc_feature(self) -> None:
        """Fill EVENT_DESC from the events added so far (names and ids)."""
        self.set_feature(Feature.EVENT_DESC, dict(
            nr=len(self.events),
            attr_size=self.attr_size,
            events=[dict(attr=attr, nr_ids=len(ids), name=name, ids=ids)
                    for attr, ids, name in self.events],
        ))

    def __enter__(self) -> PerfDataWriter:
        return self

    def __exit__(self, exc_type, *exc: object) -> None:
        if exc_type is None:
            self.close()
        else:
            self._f.close()


# -- copying recordings (tests, benchmarks) ---------------------------------------------

#: features whose payload is byte-order independent or rebuilt from the grammar
_COPY_FEATURES = (Feature.HOSTNAME, Feature.OSRELEASE, Feature.VERSION, Feature.ARCH,
                  Feature.NRCPUS, Feature.CMDLINE, Feature.CLOCKID, Feature.CLOCK_DATA,
                  Feature.SAMPLE_TIME, Feature.CPUDESC, Feature.CPUID, Feature.TOTAL_MEM)


def copy_metadata(w: PerfDataWriter, src: Any) -> None:
    """Copy the events (attrs, ids, names), tracing data and known features of ``src``.

    ``src`` is an open :class:`~ehtool.perfdata.reader.PerfDataFile`; features are
    re-encoded in ``w``'s byte order, and so is the tracing blob when ``w``'s byte
    order differs (perf writes both in the recording machine's order).
    """
    for desc in src.descs:
        w.add_event(desc.attr, desc.ids, desc.name)
    w.event_desc_feature()
    if src.tracing is not None:
        blob = src.info.features[Feature.TRACING_DATA]
        if src.tracing.big_endian != w.big_endian:
            blob = build_tracing_data(dataclasses.replace(src.tracing, big_endian=w.big_endian))
        w.set_tracing_data(blob)
    for bit in _COPY_FEATURES:
        if bit in src.info.features:
            value = src.grammar.features[bit].parse(src.info.features[bit])
            w.set_feature(bit, value)


def transcode_record(src: PerfGrammar, dst: PerfGrammar, data: bytes, desc: Any) -> bytes | None:
    """One record's bytes re-encoded from ``src`` to ``dst`` byte order.

    Samples need their event's ``desc``; between byte orders their RAW fields are
    swapped per ``desc.format`` (see :func:`swap_raw`). Other records are converted
    when they have a grammar (their ``sample_id_all`` trailer per ``desc``), else None.
    """
    rtype = src.record_header.parse(data).type
    if rtype == RecordType.SAMPLE:
        st, rf = desc.attr.sample_type, desc.attr.read_format
        obj = src.sample(st, rf).parse(data)
        if st & SampleType.RAW and desc.format is not None and src.big_endian != dst.big_endian:
            obj.raw = swap_raw(desc.format, obj.raw, src.big_endian)
        return dst.sample(st, rf).build(obj)
    if rtype not in src.records or rtype >= 64 and rtype not in (
            RecordType.FINISHED_ROUND, RecordType.FINISHED_INIT):
        return None
    trailer = None
    trailer_size = 0
    if desc is not None and desc.attr.flags.sample_id_all and rtype < 64:
        trailer = desc.sample_type
        trailer_size = src.sample_id(trailer).sizeof()
    body_size = len(data) - 8 - trailer_size
    obj = src.record(rtype, body_size, src.sample_id(trailer) if trailer is not None else None
                     ).parse(data)
    out = dst.record(rtype, body_size, dst.sample_id(trailer) if trailer is not None else None
                     ).build(obj)
    return out if len(out) == len(data) else None


def swap_raw(fmt: EventFormat, raw: bytes, big_endian: bool) -> bytes:
    """``raw`` (in ``big_endian`` order) with every field of ``fmt`` in the other order.

    Numbers and the elements of numeric arrays are swapped, ``__data_loc`` and
    ``__rel_loc`` words and the arrays they point to too; bytes (strings, blobs)
    stay. An EventHeader (from ``fmt.eventheader_offset`` on) stays as it is: it
    carries its own byte-order flag.
    """
    out = bytearray(raw)
    stop = fmt.eventheader_offset
    for f in fmt.all_fields:
        if f.size == 0 or f.offset + f.size > len(out) or (stop is not None and f.offset >= stop):
            continue
        if f.array in (DATA_LOC, REL_LOC):
            _swap_dynamic(out, f, big_endian)
        else:
            _swap_units(out, f.offset, f.size, f.element_size)
    return bytes(out)


def _swap_units(buf: bytearray, start: int, size: int, unit: int) -> None:
    """Reverse each ``unit``-byte element of ``buf[start:start + size]`` in place."""
    if unit < 2 or size % unit:
        return
    for at in range(start, start + size, unit):
        buf[at:at + unit] = buf[at:at + unit][::-1]


def _swap_dynamic(buf: bytearray, f: FieldFormat, big_endian: bool) -> None:
    """Swap a ``__data_loc``/``__rel_loc`` word (u32 ``size << 16 | offset``, or an old
    u16 string offset) and, for the u32 form, the elements it points to."""
    at = f.offset
    if f.size == 4:
        loc = int.from_bytes(buf[at:at + 4], "big" if big_endian else "little")
        dyn_size, dyn_off = loc >> 16, loc & 0xFFFF
        if f.array == REL_LOC:
            dyn_off += at + 4
        if dyn_off + dyn_size <= len(buf):
            _swap_units(buf, dyn_off, dyn_size - dyn_size % f.element_size, f.element_size)
    _swap_units(buf, at, f.size, f.size)


def transcode_file(src_path: str | os.PathLike, dst_path: str | os.PathLike, *,
                   big_endian: bool = True) -> int:
    """Copy a file-mode recording into ``dst_path`` in the given byte order, as perf on
    a machine of that order would have written it (see :func:`copy_metadata` and
    :func:`transcode_record`); records without a grammar are left out. Returns the
    number of records written."""
    from ehtool.perfdata.reader import PerfDataFile

    n = 0
    with PerfDataFile.open(src_path) as f:
        gs, gd = f.grammar, grammar_for(big_endian)
        size_of = struct.Struct(gs.endian + "H").unpack_from
        w = PerfDataWriter(dst_path, big_endian=big_endian)
        copy_metadata(w, f)
        assert f._mm is not None
        for rec in f.records(order="file"):
            data = f._mm[rec.offset:rec.offset + size_of(f._mm, rec.offset + 6)[0]]
            layout = rec.desc if rec.desc is not None else f.descs[0]
            out = transcode_record(gs, gd, data, layout)
            if out is not None:
                w.add_raw(out)
                n += 1
        w.close()
    return n


def replay_samples(src_path: str | os.PathLike, dst_path: str | os.PathLike, count: int, *,
                   round_every: int = 4096, attr_size: int | None = None,
                   select: Callable[[Sample], bool] | None = None) -> int:
    """Write ``count`` samples by repeating the samples of ``src_path`` with shifted times.

    Metadata (events, names, tracing data, clock) is copied; a FINISHED_ROUND
    follows every ``round_every`` samples. ``attr_size`` writes the attrs at that
    size (e.g. 128 for perf 6.1, which refuses newer, bigger attrs); ``select``
    keeps only the source samples it returns True for. Returns the number of
    samples written.
    """
    from ehtool.perfdata.hotpath import sample_prefix
    from ehtool.perfdata.reader import PerfDataFile

    with PerfDataFile.open(src_path) as f:
        g = f.grammar
        size_of = struct.Struct(g.endian + "H").unpack_from
        protos: list[tuple[bytearray, int | None, int]] = []
        assert f._mm is not None
        for s in f.samples(order="file"):
            if select is not None and not select(s):
                continue
            size = size_of(f._mm, s.offset + 6)[0]
            layout = sample_prefix(g, s.desc.attr.sample_type, s.desc.attr.read_format)
            protos.append((bytearray(f._mm[s.offset:s.offset + size]),
                           layout.offsets.get("time"), s.time or 0))
        if not protos:
            raise ValueError(f"{src_path}: no samples to replay")
        # keep the source's attr size: perf reads the attr table with it
        size = attr_size or max(d.attr.size for d in f.descs)
        w = PerfDataWriter(dst_path, big_endian=f.big_endian, attr_size=size)
        copy_metadata(w, f)
        for attr, _ids, _name in w.events:
            attr.size = min(attr.size, size)
    first = min(t for _, _, t in protos)
    span = max(t for _, _, t in protos) - first + 1
    put_time = struct.Struct(g.endian + "Q").pack_into
    round_rec = w.record_bytes(RecordType.FINISHED_ROUND)
    chunk: list[bytes] = []
    n = 0
    rep = 0
    while n < count:
        shift = rep * span
        for data, time_at, t in protos:
            if time_at is not None:
                put_time(data, time_at, t + shift)
            chunk.append(bytes(data))
            n += 1
            if n % round_every == 0:
                chunk.append(round_rec)
            if n >= count:
                break
        if len(chunk) > 8192 or n >= count:
            w.add_raw(b"".join(chunk))
            chunk = []
        rep += 1
    w.add_raw(b"".join(chunk) + round_rec)
    w.close()
    return n
