"""The record walk: reads the records of a buffer (the mapped data section, a pipe
read, a decompressed chunk): samples through the generated readers, the other
records through the grammar, applying the metadata ones as they come."""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import Any, NamedTuple

import construct as c

from ehtool.errors import InputError, brief
from ehtool.perfdata.compression import compressed_data, compressed_size, zstd_decompressor
from ehtool.perfdata.counts import LOST_TYPES, payload_size
from ehtool.perfdata.grammar import EVENT_UPDATE_NAME, Feature, RecordType, grammar_for
from ehtool.perfdata.hotpath import (
    HEADER_SIZE,
    BodyReader,
    CorruptSample,
    TrailerReader,
    body_offset,
    make_body_reader,
    make_run_scanner,
    make_trailer_reader,
    memo_grammar,
)
from ehtool.perfdata.records import EventDesc, Record
from ehtool.perfdata.split import split_here
from ehtool.perfdata.tracing_data import SIGNATURE as TRACING_SIGNATURE

_R = RecordType
_SAMPLE = int(_R.SAMPLE)
_COMM, _FORK = int(_R.COMM), int(_R.FORK)
#: the body fields a COMM or FORK record gives the session (see RecordWalk._thread)
_THREAD_FIELDS = {_COMM: ("tid", "comm"), _FORK: ("ptid", "tid")}
# Only FINISHED_ROUND ends a time-sort group: perf-decode (LinuxTracepoints,
# tools/perf-decode.cpp) flushes its sorted map at FINISHED_ROUND and at the end of
# the input; at FINISHED_INIT PerfDataFile.cpp only re-reads EVENT_DESC.
FLUSH_TYPES = frozenset((int(_R.FINISHED_ROUND),))
_UNSET = object()
# where things are in a record, from the grammar (the same in both byte orders)
_G = grammar_for(False)
_BODY_AT = HEADER_SIZE
_FEATURE_AT = body_offset(_G, _R.HEADER_FEATURE, "feature")
_FEATURE_DATA_AT = body_offset(_G, _R.HEADER_FEATURE, "data")
_UPDATE_TYPE_AT = body_offset(_G, _R.EVENT_UPDATE, "type")
_UPDATE_ID_AT = body_offset(_G, _R.EVENT_UPDATE, "id")
_UPDATE_DATA_AT = body_offset(_G, _R.EVENT_UPDATE, "data")


class ThreadUpdate(NamedTuple):
    """A thread's name from a COMM record (``a`` named ``b``) or a FORK (``b`` takes
    ``a``'s), at the record's time; sorted with the samples, applied in their order."""

    time: int | None
    rtype: int
    a: Any
    b: Any


class RecordWalk:
    """The walking half of :class:`ehtool.perfdata.PerfDataFile` (its state lives there)."""

    def _scan(self, buf: Any, pos: int, end: int, limit: int, base: int,
              out: list, flushes: list[int]) -> int:
        """Read the complete records in ``buf[pos:end]`` that start before ``limit``.

        Appends samples (and other records when wanted) to ``out`` and the
        ``len(out)`` of each flush point to ``flushes``; returns the position of
        the first unread record. Sets ``self._fatal`` on corrupt sizes.
        """
        hdr, hdr_size = self._hdr, _BODY_AT
        hdr_id, hdr_id_size = self._hdr_id, self._hdr_id_size  # header + IDENTIFIER at once
        u64 = self._u64
        readers = self._readers
        append = out.append
        id_at = self._id_at
        lone = self.descs[0].reader if len(self.descs) == 1 else None
        sample_type = _SAMPLE
        nsamples = 0
        counts, want = self.counts, self._want_records
        run = self._run_scanner()
        while pos < limit:
            if run is not None:  # consecutive samples of the common layout, one unpack each
                pos, n = run(buf, pos, end, base, append)
                nsamples += n
                if pos >= limit:
                    break
            if pos + hdr_id_size <= end:
                rtype, _misc, size, ident = hdr_id(buf, pos)
            elif pos + hdr_size <= end:
                rtype, _misc, size = hdr(buf, pos)
                ident = None
            else:
                break
            if rtype == sample_type and size >= hdr_id_size and pos + size <= end:
                if id_at == 8:
                    reader = readers.get(ident)
                elif id_at > 0:
                    reader = readers.get(u64(buf, pos + id_at)[0]) if id_at + 8 <= size else None
                else:
                    reader = lone
                if reader is None:
                    self._unknown_sample(buf, pos, size, base)
                else:
                    try:
                        append(reader(buf, pos, size, base))
                    except CorruptSample as exc:
                        self._defer(InputError(f"corrupt sample: {exc}", self.where, base + pos))
                    except struct.error:
                        self._defer(InputError("corrupt sample: fields run past the record",
                                               self.where, base + pos))
                nsamples += 1
                pos += size
                continue
            if size < _BODY_AT:
                self._fatal = InputError(f"corrupt record: size {size} < {_BODY_AT}", self.where,
                                         base + pos)
                break
            if pos + size > end:
                break
            if rtype < 64 and not want and rtype != sample_type:
                # a kernel record (MMAP, COMM, ...) when only samples are wanted: counted,
                # thread names taken; it changes no event and is no split point
                counts[rtype] = counts.get(rtype, 0) + 1
                if rtype in _THREAD_FIELDS:
                    if self.threads:
                        self._learn_thread(rtype, buf, pos, size, out)
                elif rtype in LOST_TYPES:
                    self.lost.add_bytes(rtype, buf, pos, size, u64)
                pos += size
                continue
            nxt = self._other(rtype, buf, pos, size, end, base, out, flushes)
            if nxt < 0:
                break  # incomplete (needs bytes beyond ``end``) or fatal
            pos = nxt
            if self._stop_middle is not None:  # split_point()'s rule (see stop_at_split)
                verdict = split_here(rtype, pos, self._stop_middle, self._data_end)
                if verdict is None:  # no split can follow: read to the end
                    self._stop_middle = None
                elif verdict:
                    self._stop_middle = None
                    self._data_end = pos
                    break
            if rtype >= 64:  # (a kernel record changes no event nor its ids)
                id_at = self._id_at
                lone = self.descs[0].reader if len(self.descs) == 1 else None
                run = self._run_scanner()
        if nsamples:
            self.counts[_SAMPLE] = self.counts.get(_SAMPLE, 0) + nsamples
        return pos

    def _run_scanner(self):
        """The generated scanner for runs of common-layout samples (rebuilt when ids change)."""
        key = (len(self.descs), len(self._readers), self._id_at)
        if self._run_key != key:
            self._run_key = key
            self._run = make_run_scanner(self.grammar, self.descs, self._id_at) \
                if self.descs else None
        return self._run

    def _unknown_sample(self, buf: Any, pos: int, size: int, base: int) -> None:
        if self._id_at < 0:
            msg = (f"sample has no id and the file has {len(self.descs)} events "
                   "(record with --sample-identifier)")
        elif self._id_at + 8 > size:
            msg = f"sample of {size} bytes is too short for its id"
        else:
            msg = f"sample id {self._u64(buf, pos + self._id_at)[0]} matches no event"
        self._defer(InputError(msg, self.where, base + pos))

    def _other(self, rtype: int, buf: Any, pos: int, size: int, end: int, base: int,
               out: list, flushes: list[int]) -> int:
        """Handle a non-sample record; return the next position, or -1 to stop."""
        self.counts[rtype] = self.counts.get(rtype, 0) + 1
        if rtype in LOST_TYPES:
            self.lost.add_bytes(rtype, buf, pos, size, self._u64)
        nxt = pos + size
        g = self.grammar
        offset = base + pos
        if rtype in FLUSH_TYPES:
            flushes.append(len(out))
        elif rtype == _SAMPLE:
            self._defer(InputError(f"corrupt sample: size {size} is too short", self.where,
                                   offset))
        elif rtype == _R.HEADER_TRACING_DATA:
            # perf 6.x writes header + u32 size + u32 pad (16 bytes), older perf header +
            # u32 size (12): the record size says which, the data's signature confirms it
            extra = payload_size(rtype, buf, pos, size, self._u32, self._u64)
            if size not in (12, 16) or extra is None:
                self._fatal = InputError(f"corrupt HEADER_TRACING_DATA record (size {size})",
                                         self.where, offset)
                return -1
            if extra > 0x80000000:
                self._fatal = InputError(f"corrupt HEADER_TRACING_DATA size {extra}",
                                         self.where, offset)
                return -1
            if nxt + min(extra, len(TRACING_SIGNATURE)) > end:
                self.counts[rtype] -= 1
                return -1  # the caller reads more (pipe) or reports truncation
            if bytes(buf[nxt:nxt + len(TRACING_SIGNATURE)]) != TRACING_SIGNATURE:
                self._fatal = InputError("HEADER_TRACING_DATA without the tracing data "
                                         "signature", self.where, offset + size)
                return -1
            if nxt + extra > end:
                self.counts[rtype] -= 1
                return -1
            if self.tracing is None:
                blob = bytes(buf[nxt:nxt + extra])
                self.info.features[Feature.TRACING_DATA] = blob
                self._set_tracing_data(blob, base + nxt)
            nxt += extra
        elif rtype == _R.AUXTRACE:
            extra = payload_size(rtype, buf, pos, size, self._u32, self._u64)
            if extra is None:
                self._fatal = InputError(f"corrupt AUXTRACE record (size {size})",
                                         self.where, offset)
                return -1
            if extra & 7 or extra > 0x80000000:
                self._fatal = InputError(f"corrupt AUXTRACE size {extra}", self.where, offset)
                return -1
            if nxt + extra > end:
                self.counts[rtype] -= 1
                return -1  # the caller reads more (pipe) or reports truncation
            nxt += extra
        elif rtype == _R.HEADER_ATTR:
            try:
                body = memo_grammar(g, "records", rtype).parse(bytes(buf[pos + _BODY_AT:nxt]))
            except c.ConstructError as exc:
                self._defer(InputError(f"bad HEADER_ATTR: {brief(exc)}", self.where, offset))
            else:
                self._add_desc(body.attr, list(body.ids), offset)
        elif rtype == _R.HEADER_FEATURE:
            if size >= _FEATURE_DATA_AT:
                bit = self._u64(buf, pos + _FEATURE_AT)[0]
                self._apply_feature(bit, bytes(buf[pos + _FEATURE_DATA_AT:nxt]),
                                    offset + _FEATURE_DATA_AT)
        elif rtype == _R.EVENT_UPDATE:
            self._event_update(buf, pos, nxt, offset)
        elif rtype == _R.ID_INDEX:
            self._id_index(buf, pos, nxt, offset)
        elif (rtype == _R.COMPRESSED or rtype == _R.COMPRESSED2) and not self._decompress(
                rtype, buf, pos, nxt, offset, out, flushes):
            return -1
        if self._want_records:
            rec = self._record(rtype, buf, pos, size, base)
            if rtype in _THREAD_FIELDS and self.threads:
                self._named_out += 1  # (applied where it comes in time order: _named)
            out.append(rec)
        elif rtype in _THREAD_FIELDS and self.threads:
            self._learn_thread(rtype, buf, pos, size, out)
        return nxt

    def _learn_thread(self, rtype: int, buf: Any, pos: int, size: int, out: list) -> None:
        """The thread name a COMM or FORK record gives (its body without its trailer) as a
        :class:`ThreadUpdate` in ``out``, at the record's time: it applies to the samples
        after it in time order (:meth:`_named`), not to those after it in the file."""
        _, tr = self._trailer_layout(rtype, buf, pos, size)
        end = pos + size - (tr.size if tr is not None else 0)
        reader = self._body_reader(rtype)
        if reader is None:
            body = self._body(rtype, buf, pos + _BODY_AT, end)
            if body is None:
                return
            a, b = (body[name] for name in _THREAD_FIELDS[rtype])
        else:
            values = reader.values(buf, pos + _BODY_AT, end)  # (no Container: two fields)
            if values is None:
                return
            at = self._thread_at.get(rtype)
            if at is None:
                at = self._thread_at[rtype] = tuple(map(reader.names.index,
                                                        _THREAD_FIELDS[rtype]))
            a, b = values[at[0]], values[at[1]]
        time = tr.read(buf, pos + size).get("time") if tr is not None else None
        out.append(ThreadUpdate(time, rtype, a, b))
        self._named_out += 1

    @staticmethod
    def _carries_name(item: Any) -> bool:
        """Whether ``item`` names a thread: a :class:`ThreadUpdate`, a COMM or FORK Record."""
        kind = type(item)
        return kind is ThreadUpdate or (kind is Record and item.type in _THREAD_FIELDS)

    def _apply_name(self, item: Any) -> None:
        """Apply the thread name an item that :meth:`_carries_name` gives."""
        if type(item) is ThreadUpdate:
            self._thread(item.rtype, item.a, item.b)
        else:
            self._learn(item.type, item.body)

    def _name_now(self, items: list) -> None:
        """Apply the thread names ``items`` carry, in their order, now."""
        for item in items:
            if self._carries_name(item):
                self._apply_name(item)

    def _named(self, items: list) -> Iterator[list]:
        """``items`` (in the order they are handed on) with the thread names they carry
        applied where they come: the runs between them, so that a consumer looking up
        ``session.comm`` while it reads a run sees each thread's name at that time, as
        perf does. A :class:`ThreadUpdate` is not handed on; a COMM or FORK Record is,
        after its name is applied."""
        if self._named_done == self._named_out:  # (none of them in these items)
            yield items
            return
        start = 0
        for k, item in enumerate(items):
            if not self._carries_name(item):
                continue
            if k > start:
                yield items[start:k]
            self._apply_name(item)
            self._named_done += 1
            start = k + 1 if type(item) is ThreadUpdate else k
        if start < len(items):
            yield items[start:]

    def _decompress(self, rtype: int, buf: Any, pos: int, nxt: int, offset: int, out: list,
                    flushes: list[int]) -> bool:
        """Read the records inside a COMPRESSED/COMPRESSED2 record (``perf record -z``).

        perf compresses the whole recording as one zstd stream cut into these records, so
        one decompressor serves the file and a record may continue in the next one.
        Records found inside carry the COMPRESSED record's offset in messages. False
        (and ``_fatal``) when the data does not decompress.
        """
        data = compressed_data(rtype == _R.COMPRESSED2, buf, pos, nxt, self._u64)
        if data is None:
            size = compressed_size(buf, pos, nxt, self._u64)
            self._fatal = InputError(f"corrupt COMPRESSED2 record (data size {size})",
                                     self.where, offset)
            return False
        z = self.compression
        if z.decompressor is None:
            z.decompressor = zstd_decompressor(self.where, offset)
        try:
            chunk = z.decompressor.decompress(data)
        except Exception as exc:  # the binding's own error type
            self._fatal = InputError(f"compressed data does not decompress: {exc}", self.where,
                                     offset)
            return False
        z.records += 1
        z.compressed += len(data)
        z.decompressed += len(chunk)
        inner = z.pending + chunk if z.pending else chunk
        # a split is at a FINISHED_ROUND of the file's own records, never one inside (whose
        # position is in ``inner``): after a COMPRESSED record there is none (split_here)
        stop, self._stop_middle = self._stop_middle, None
        try:
            used = self._scan(inner, 0, len(inner), len(inner), offset, out, flushes)
        finally:
            self._stop_middle = stop
        z.pending = inner[used:]
        return self._fatal is None

    def _event_update(self, buf: Any, pos: int, nxt: int, offset: int) -> None:
        if nxt - pos < _UPDATE_DATA_AT:
            return
        kind = self._u64(buf, pos + _UPDATE_TYPE_AT)[0]
        if kind != EVENT_UPDATE_NAME:
            return
        desc = self._desc_by_id.get(self._u64(buf, pos + _UPDATE_ID_AT)[0])
        if desc is None:
            return
        body = self.grammar.records[_R.EVENT_UPDATE].parse(bytes(buf[pos + _BODY_AT:nxt]))
        desc.name = body.data

    def _id_index(self, buf: Any, pos: int, nxt: int, offset: int) -> None:
        try:
            body = self.grammar.records[_R.ID_INDEX].parse(bytes(buf[pos + _BODY_AT:nxt]))
        except c.ConstructError as exc:
            self._defer(InputError(f"bad ID_INDEX: {brief(exc)}", self.where, offset))
            return
        for e in body.entries:
            if e.id not in self._desc_by_id and e.idx < len(self.descs):
                desc = self.descs[e.idx]
                self._desc_by_id[e.id] = desc
                self._readers[e.id] = desc.reader

    def _learn(self, rtype: int, body: Any) -> None:
        """Session state from a COMM or FORK body (thread names)."""
        if body is not None and rtype in _THREAD_FIELDS:
            self._thread(rtype, *(body[name] for name in _THREAD_FIELDS[rtype]))

    def _thread(self, rtype: int, a: Any, b: Any) -> None:
        """COMM: thread ``a`` is named ``b``; FORK: thread ``b`` inherits ``a``'s name."""
        if rtype == _COMM:
            self.session.set_comm(a, b)
        else:
            self.session.fork(a, b)

    def _body(self, rtype: int, buf: Any, start: int, end: int) -> Any:
        """A non-sample record's body per its grammar (None: no grammar, or too short);
        bodies of fixed fields and a string are read without construct (hotpath.py)."""
        if rtype >= 64:
            return None
        reader = self._body_reader(rtype)
        if reader is not None:
            return reader.read(buf, start, end)
        grammar = self.grammar.records.get(rtype)
        if grammar is None:
            return None
        try:
            return grammar.parse(bytes(buf[start:end]))
        except c.ConstructError:
            return None

    def _body_reader(self, rtype: int) -> BodyReader | None:
        reader = self._bodies.get(rtype, _UNSET)
        if reader is _UNSET:
            reader = self._bodies[rtype] = make_body_reader(self.grammar, rtype)
        return reader

    def _trailer_layout(self, rtype: int, buf: Any, pos: int, size: int
                        ) -> tuple[EventDesc | None, TrailerReader | None]:
        """(the record's event, the reader of its ``sample_id_all`` trailer; None when
        the record has none or is too short for it)."""
        desc = None
        nid = self._nonsample_id_at
        if nid >= 0 and rtype < 64 and size >= 8 + nid:
            desc = self._desc_by_id.get(self._u64(buf, pos + size - nid)[0])
        elif nid < 0 and rtype < 64 and len(self.descs) == 1:
            only = self.descs[0]
            desc = only if only.attr.flags.sample_id_all else None
        # records perf synthesizes carry a zeroed trailer (id 0): lay it out as the first event's
        layout = desc if desc is not None or nid < 0 or rtype >= 64 or not self.descs \
            else self.descs[0]
        if layout is None:
            return desc, None
        tr = self._trailer_reader(layout.sample_type)
        return desc, (tr if tr.size <= size - 8 else None)

    def _trailer_reader(self, sample_type: int) -> TrailerReader:
        tr = self._trailers.get(sample_type)
        if tr is None:
            tr = self._trailers[sample_type] = make_trailer_reader(self.grammar, sample_type)
        return tr

    def _record(self, rtype: int, buf: Any, pos: int, size: int, base: int) -> Record:
        """A non-sample record with its sample_id trailer and (known types) body."""
        nxt = pos + size
        desc, tr = self._trailer_layout(rtype, buf, pos, size)
        trailer = tr.read(buf, nxt) if tr is not None else {}
        body = self._body(rtype, buf, pos + _BODY_AT, nxt - (tr.size if tr is not None else 0))
        return Record(rtype, self._hdr(buf, pos)[1], base + pos, bytes(buf[pos:nxt]), body,
                      trailer.get("pid"), trailer.get("tid"), trailer.get("time"),
                      trailer.get("cpu"), desc)
