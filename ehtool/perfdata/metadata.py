"""perf.data metadata: the attrs and their ids (event descriptions), the feature
sections (host, clock, event names), and the tracing data with each tracepoint's
format. Read at open in file mode; in pipe mode (and from the data section) the
same methods apply the records as they arrive."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import construct as c

from ehtool.caches import Bounded
from ehtool.errors import InputError, brief
from ehtool.perfdata.grammar import PERF_TYPE_TRACEPOINT, Feature, ReadFormat
from ehtool.perfdata.hotpath import (
    feature_reader,
    id_offsets,
    make_sample_reader,
    memo_grammar,
    section_struct,
)
from ehtool.perfdata.records import EventDesc
from ehtool.perfdata.tracing_data import TracingData, parse_tracing_data

_NAME_RE = re.compile(r"^name:\s*(\S+)", re.MULTILINE)


@dataclass
class PerfInfo:
    """Header and feature metadata of a recording (None when perf did not write it)."""

    hostname: str | None = None
    osrelease: str | None = None
    perf_version: str | None = None
    arch: str | None = None
    nrcpus_available: int | None = None
    nrcpus_online: int | None = None
    cpudesc: str | None = None
    cpuid: str | None = None
    total_mem_kb: int | None = None
    cmdline: list[str] | None = None
    clock_resolution_ns: int | None = None
    #: CLOCK_DATA: (clockid, wall_clock_ns, clockid_time_ns)
    clock_data: tuple[int, int, int] | None = None
    #: SAMPLE_TIME: (first, last) sample time
    sample_time: tuple[int, int] | None = None
    #: DIR_FORMAT: the version of a directory recording (``perf record --threads``), whose
    #: records are in this file and in the ``data.N`` files beside it
    dir_format: int | None = None
    #: every feature's raw payload by feature id (unknown ones included)
    features: dict[int, bytes] = field(default_factory=dict)


class Metadata:
    """The metadata half of :class:`ehtool.perfdata.PerfDataFile` (its state lives there)."""

    def _load_attrs(self, file_len: int) -> None:
        g, h, mm = self.grammar, self.header, self._mm
        attr_size = h.attr_size
        if attr_size < 64 + 16 or attr_size > 0x10000:
            raise InputError(f"bad attr_size {attr_size}", self.path, 16)
        if h.attrs.offset + h.attrs.size > file_len:
            raise InputError("attrs section runs past the end of the file", self.path, 24)
        file_attr = memo_grammar(g, "file_attr")
        for i in range(h.attrs.size // attr_size):
            at = h.attrs.offset + i * attr_size
            try:
                entry = file_attr.parse(mm[at:at + attr_size], attr_size=attr_size)
            except c.ConstructError as exc:
                raise InputError(f"bad perf_event_attr: {brief(exc)}", self.path, at) from None
            ids_sec = entry.ids
            if ids_sec.offset + ids_sec.size > file_len:
                raise InputError("attr ids run past the end of the file", self.path, at)
            ids = list(g.ids.parse(mm[ids_sec.offset:ids_sec.offset + ids_sec.size]))
            self._add_desc(entry.attr, ids, at)

    def _load_features(self, file_len: int) -> None:
        h, mm, g = self.header, self._mm, self.grammar
        section = section_struct(g).unpack_from
        table = h.data.offset + h.data.size
        for i, bit in enumerate(feature_bits(h.features)):
            at = table + 16 * i
            if at + 16 > file_len:
                self._defer(InputError(
                    "truncated file: the feature sections (event names, tracepoint formats) "
                    "are missing; tracepoints show as raw bytes (on the recording machine, "
                    "try --formats-from-host)", self.path, at))
                return
            sec_offset, sec_size = section(mm, at)
            if sec_offset + sec_size > file_len:
                self._defer(InputError(f"feature {bit} runs past the end of the file",
                                       self.path, at))
                continue
            self._apply_feature(bit, mm[sec_offset:sec_offset + sec_size], sec_offset)

    def _add_desc(self, attr: Any, ids: list[int], offset: int, name: str = "") -> EventDesc:
        desc = EventDesc(attr, ids, name, len(self.descs))
        if attr.read_format & ReadFormat.LOST:  # (see RecordCounts)
            self.lost.counters = True
        id_at, nid_at = id_offsets(self.grammar, attr.sample_type)
        if not attr.flags.sample_id_all:
            nid_at = -1
        if self.descs and (id_at, nid_at) != (self._id_at, self._nonsample_id_at):
            raise InputError("attrs disagree on where sample ids are", self.path, offset)
        self._id_at, self._nonsample_id_at = id_at, nid_at
        try:
            desc.reader = make_sample_reader(self.grammar, desc)
        except TypeError as exc:
            raise InputError(f"unsupported sample layout: {exc}", self.path, offset) from None
        self.descs.append(desc)
        for i in ids:
            self._desc_by_id[i] = desc
            self._readers[i] = desc.reader
        if self._format_ids:
            self._attach_format(desc)
        return desc

    def _apply_feature(self, bit: int, data: bytes, offset: int) -> None:
        info, g = self.info, self.grammar
        info.features[bit] = bytes(data)
        if bit == Feature.TRACING_DATA:
            self._set_tracing_data(data, offset)
            return
        parse = feature_reader(g, bit)
        if parse is None:
            grammar = memo_grammar(g, "features", bit) if bit == Feature.EVENT_DESC \
                else g.features.get(bit)
            if grammar is None:
                return
            parse = grammar.parse
        try:
            value = parse(data)
        except c.ConstructError as exc:
            self._defer(InputError(f"bad feature {bit} section: {brief(exc)}", self.path,
                                   offset))
            return
        if bit in (Feature.HOSTNAME, Feature.OSRELEASE, Feature.VERSION, Feature.ARCH,
                   Feature.CPUDESC, Feature.CPUID):
            attr = {Feature.HOSTNAME: "hostname", Feature.OSRELEASE: "osrelease",
                    Feature.VERSION: "perf_version", Feature.ARCH: "arch",
                    Feature.CPUDESC: "cpudesc", Feature.CPUID: "cpuid"}[bit]
            setattr(info, attr, value)
        elif bit == Feature.NRCPUS:
            info.nrcpus_available, info.nrcpus_online = value.available, value.online
        elif bit == Feature.TOTAL_MEM:
            info.total_mem_kb = value
        elif bit == Feature.CMDLINE:
            info.cmdline = list(value)
        elif bit == Feature.SAMPLE_TIME:
            info.sample_time = (value.first, value.last)
        elif bit == Feature.CLOCKID:
            info.clock_resolution_ns = value
            self.session.clock.resolution_ns = value
        elif bit == Feature.DIR_FORMAT:
            info.dir_format = value
        elif bit == Feature.CLOCK_DATA:
            if value.version >= 1:
                info.clock_data = (value.clockid, value.wall_clock_ns, value.clockid_time_ns)
                self.session.clock.set_clock_data(*info.clock_data)
        elif bit == Feature.EVENT_DESC:
            self._apply_event_desc(value, offset)

    def _apply_event_desc(self, value: Any, offset: int) -> None:
        """Names from EVENT_DESC; events it lists that no attr had become new descs."""
        for i, ev in enumerate(value.events):
            desc = next((self._desc_by_id[x] for x in ev.ids if x in self._desc_by_id), None)
            if desc is None and not ev.ids and i < len(self.descs) and not self.descs[i].ids:
                desc = self.descs[i]
            if desc is None:
                desc = self._add_desc(ev.attr, list(ev.ids), offset, ev.name)
            if ev.name:
                desc.name = ev.name
        self._event_desc_applied = True

    def _set_tracing_data(self, blob: bytes, offset: int) -> None:
        """Parse the tracing data found at absolute ``offset``; attach the descs' formats."""
        try:
            self.tracing, index = _parsed_tracing(bytes(blob))
        except c.ConstructError as exc:
            self._defer(InputError(f"bad tracing data: {brief(exc)}", self.path, offset))
            return
        tracing = self.tracing
        self._format_ids = {ident: tracing.formats[i] for ident, i in index.items()}
        self._format_at = {ident: plus(offset, tracing.format_offset(i))
                           for ident, i in index.items()}
        for desc in self.descs:
            self._attach_format(desc)

    def _attach_format(self, desc: EventDesc) -> None:
        """Parse ``desc``'s format once: a format that failed is reported once, not retried."""
        if desc.format_text is not None or desc.attr.type != PERF_TYPE_TRACEPOINT:
            return
        ident = desc.attr.config & 0xFFFFFFFF
        entry = self._format_ids.get(ident)
        if entry is None:
            return
        desc.format_text = entry
        system, text = entry
        from ehtool.formats.tracefs_format import shared_format

        try:
            desc.format = shared_format(text, system, self.long_size)
        except ValueError as exc:
            self._defer(InputError(
                f"format of {system}:{format_name(text)} (id {desc.attr.config}) "
                f"does not parse: {brief(exc)}", self.path, self._format_at.get(ident)))
        if not desc.name:
            fmt = desc.format
            desc.name = (f"{fmt.system}:{fmt.name}" if fmt is not None
                         else f"{system}:{format_name(text)}")

    def missing_formats(self) -> list[int]:
        """Tracepoint ids of recorded events whose format this file does not have (a
        file cut before its feature sections)."""
        return sorted({d.attr.config & 0xFFFFFFFF for d in self.descs
                       if d.attr.type == PERF_TYPE_TRACEPOINT and d.format_text is None})

    def add_formats(self, formats: dict[int, tuple[str, str]]) -> None:
        """Formats found elsewhere (``{id: (system, format text)}``, e.g. the running
        kernel's tracefs) for events this file has none for."""
        for ident, entry in formats.items():
            self._format_ids.setdefault(ident, entry)
        self._finish_metadata()

    def _finish_metadata(self) -> None:
        """Attach the formats of descs added after the tracing data (each desc once)."""
        for desc in self.descs:
            self._attach_format(desc)

    @property
    def long_size(self) -> int:
        """``sizeof(long)`` of the traced machine (from the tracing data; default 8)."""
        return self.tracing.long_size if self.tracing is not None and self.tracing.long_size else 8

    def desc_for_id(self, sample_id: int) -> EventDesc | None:
        return self._desc_by_id.get(sample_id)


#: tracing-data blob -> (its TracingData, its format index), shared by the inputs of a
#: process (a fleet's recordings repeat the same blob); bounded: at most
#: 16 blobs of 4 MiB in all (a bigger blob is not kept). Shared values: read, never
#: changed.
_TRACING_CACHE: Bounded[bytes, tuple[TracingData, dict[int, int]]] = Bounded(16, 4 << 20)


def _parsed_tracing(blob: bytes) -> tuple[TracingData, dict[int, int]]:
    """``parse_tracing_data(blob)`` and its ``format_index()``, once per distinct blob."""
    def parsed() -> tuple[TracingData, dict[int, int]]:
        tracing = parse_tracing_data(blob)
        return tracing, tracing.format_index()

    return _TRACING_CACHE.made(blob, parsed)


def feature_bits(words: list[int]) -> list[int]:
    """The set bits of the header's feature bitmap (64-bit words, bit 0 first), in order."""
    bits = []
    for w, word in enumerate(words):
        while word:
            low = word & -word
            bits.append(64 * w + low.bit_length() - 1)
            word ^= low
    return bits


def plus(base: int, offset: int | None) -> int:
    """``base + offset``, or ``base`` when the offset inside it is unknown."""
    return base if offset is None else base + offset


def format_name(text: str) -> str:
    m = _NAME_RE.search(text)
    return m.group(1) if m else "?"
