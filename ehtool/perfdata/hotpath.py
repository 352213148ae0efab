"""Fast per-record readers derived from the construct grammar.

For each attr layout (sample_type, read_format, byte order) the leading
fixed-size fields of the construct definition of PERF_RECORD_SAMPLE (header
included) are turned into one ``struct.Struct``; a small reader function is
generated around it that returns a :class:`~ehtool.perfdata.records.Sample`
with a single ``unpack_from`` and one slice. Layouts with variable-size parts
before RAW (group READ, CALLCHAIN) continue field by field, still from the
grammar. ``tests/perfdata/test_hotpath.py`` proves both agree with construct.
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import construct as c

from ehtool.caches import Bounded
from ehtool.perfdata.grammar import (
    PERF_TYPE_TRACEPOINT,
    NulPadded,
    PerfGrammar,
    SampleType,
    SizedAttr,
    grammar_for,
)
from ehtool.perfdata.records import EventDesc, Sample

#: a record header's size (the same in both byte orders)
HEADER_SIZE = grammar_for(False).record_header.sizeof()
#: the Sample attributes a reader fills from grammar fields of the same name
_SAMPLE_FIELDS = ("time", "cpu", "pid", "tid")


class CorruptSample(ValueError):
    """A sample whose fields run past its record (the reader adds file and offset)."""


@dataclass(frozen=True)
class FixedPrefix:
    """The fixed-size head of a construct Struct as one ``struct.Struct``."""

    struct: struct.Struct
    names: tuple[str, ...]  # one per unpacked value
    offsets: dict[str, int]  # byte offset of each named field
    codes: dict[str, str]  # struct code of each named field (``I``, ``q``...)
    rest: tuple[c.Construct, ...]  # the fields after the prefix, still to read

    @property
    def size(self) -> int:
        return self.struct.size


def _format_field(sub: c.Construct) -> tuple[str, c.FormatField] | None:
    """(name, FormatField) for a ``"name" / FormatField`` subcon, else None."""
    if isinstance(sub, c.Renamed) and isinstance(sub.subcon, c.FormatField):
        return sub.name, sub.subcon
    return None


def fixed_prefix(endian: str, fields: tuple[c.Construct, ...]) -> FixedPrefix:
    """The longest run of leading fixed-size fields of ``fields`` as one struct."""
    fmt = [endian]
    names: list[str] = []
    offsets: dict[str, int] = {}
    codes: dict[str, str] = {}
    offset = 0
    i = 0
    for i, sub in enumerate(fields):  # noqa: B007
        ff = _format_field(sub)
        if ff is None:
            break
        name, field = ff
        fmt.append(field.fmtstr[1:])
        names.append(name)
        offsets[name] = offset
        codes[name] = field.fmtstr[1:]
        offset += field.length
    else:
        i = len(fields)
    st = struct.Struct("".join(fmt))
    assert st.size == offset, "construct and struct sizes disagree"
    return FixedPrefix(st, tuple(names), offsets, codes, tuple(fields[i:]))


def _header_fields(g: PerfGrammar) -> tuple[c.Construct, ...]:
    return tuple(g.record_header.subcons)


@functools.lru_cache(maxsize=4)
def section_struct(g: PerfGrammar) -> struct.Struct:
    """A file section (offset, size): the feature table's entries."""
    prefix = fixed_prefix(g.endian, tuple(g.section.subcons))
    assert prefix.names == ("offset", "size") and not prefix.rest
    return prefix.struct


def header_struct(g: PerfGrammar) -> struct.Struct:
    """The record header (type, misc, size) as one struct."""
    return fixed_prefix(g.endian, _header_fields(g)).struct


def identified_header_struct(g: PerfGrammar) -> struct.Struct:
    """The record header and the u64 after it: a sample's id with PERF_SAMPLE_IDENTIFIER."""
    return sample_prefix(g, SampleType.IDENTIFIER, 0).struct


def id_offsets(g: PerfGrammar, sample_type: int) -> tuple[int, int]:
    """Where a sample's id is (from the record's start) and where a non-sample record's
    is (back from its end, in the ``sample_id_all`` trailer); -1 without an id. The
    IDENTIFIER field when recorded, else ID."""
    name = ("identifier" if sample_type & SampleType.IDENTIFIER
            else "id" if sample_type & SampleType.ID else None)
    if name is None:
        return -1, -1
    trailer = trailer_prefix(g, sample_type)
    return (sample_prefix(g, sample_type, 0).offsets[name],
            trailer.size - trailer.offsets[name])


def body_offset(g: PerfGrammar, rtype: int, name: str) -> int:
    """Where field ``name`` of a record of ``rtype`` starts (its fixed-size fields before
    it, after the header), from the grammar."""
    return g.record_header.sizeof() + field_offset(g.records[rtype], name)


def field_offset(st: c.Struct, name: str) -> int:
    """Where field ``name`` of the construct Struct ``st`` starts (the sizes of the
    fixed-size fields before it)."""
    pos = 0
    for sub in st.subcons:
        if sub.name == name:
            return pos
        pos += sub.sizeof()
    raise KeyError(name)


@functools.lru_cache(maxsize=256)
def sample_prefix(g: PerfGrammar, sample_type: int, read_format: int) -> FixedPrefix:
    """The fixed prefix of a whole sample record (8-byte header included); one per
    layout and byte order, shared by every input (treat it as read-only)."""
    return fixed_prefix(g.endian, _header_fields(g) + g.sample_fields(sample_type, read_format))


@functools.lru_cache(maxsize=256)
def trailer_prefix(g: PerfGrammar, sample_type: int) -> FixedPrefix:
    """The ``sample_id_all`` trailer (always fixed size) as one struct (shared, as
    :func:`sample_prefix`)."""
    return fixed_prefix(g.endian, tuple(g.sample_id(sample_type).subcons))


#: generated source -> its code object: a layout's reader is compiled once per process
#: and executed in a new namespace (its event) for each input
_code_cache: Bounded[str, Any] = Bounded(512)


def compiled(src: str, filename: str) -> Any:
    """The code object of ``src``, compiled once per process; its ``filename`` is the
    first compile's."""
    return _code_cache.made(src, lambda: compile(src, filename, "exec"))


def make_sample_reader(g: PerfGrammar, desc: EventDesc) -> Callable[[Any, int, int], Sample]:
    """``reader(buf, pos, size, base=0) -> Sample`` for the record of ``desc`` at ``pos``.

    ``base`` is added to ``pos`` for the sample's ``offset`` (pipe-mode buffers).

    Raises :class:`CorruptSample` when a field runs past the record's ``size``.
    """
    attr = desc.attr
    prefix = sample_prefix(g, attr.sample_type, attr.read_format)
    rest_names = [getattr(sub, "name", None) for sub in prefix.rest]
    if rest_names == ["raw"]:
        return _generated_reader(prefix, desc)
    if not prefix.rest:
        return _generated_reader(prefix, desc, has_raw=False)
    return _stepwise_reader(g, prefix, desc)


def _generated_reader(prefix: FixedPrefix, desc: EventDesc, has_raw: bool = True):
    """The common case: one unpack_from, then the RAW slice."""
    names = [n if n in _SAMPLE_FIELDS or n == "raw_size" else "_" for n in prefix.names]
    args = {n: (n if n in names else "None") for n in _SAMPLE_FIELDS}
    size = prefix.size
    if has_raw:
        body = (
            f"    end = pos + {size} + raw_size\n"
            f"    if end > pos + size:\n"
            f"        raise CorruptSample('RAW size ' + str(raw_size) + ' runs past the record')\n"
            f"    raw = buf[pos + {size}:end]\n"
        )
    else:
        body = (
            f"    if {size} > size:\n"
            f"        raise CorruptSample('sample fields run past the record')\n"
            f"    raw = b''\n"
        )
    src = (
        "def read_sample(buf, pos, size, base=0):\n"
        f"    ({', '.join(names)},) = unpack_from(buf, pos)\n"
        + body
        + "    return new(Sample, ("
        + "".join(f"{args[n]}, " for n in _SAMPLE_FIELDS)
        + "raw, desc, pos + base))\n"
    )
    namespace = {"unpack_from": prefix.struct.unpack_from, "Sample": Sample, "desc": desc,
                 "CorruptSample": CorruptSample, "new": tuple.__new__}
    exec(compiled(src, "<sample reader>"), namespace)  # noqa: S102
    fn = namespace["read_sample"]
    fn.source = src  # type: ignore[attr-defined]
    return fn


def _stepwise_reader(g: PerfGrammar, prefix: FixedPrefix, desc: EventDesc):
    """Layouts with variable parts (group READ, CALLCHAIN) before RAW."""
    steps: list[tuple[str, Any, int]] = []  # (kind, name or count field, size)
    for sub in prefix.rest:
        ff = _format_field(sub)
        if ff is not None:
            steps.append(("field", ff[0], ff[1]))
        elif sub.name == "raw":
            steps.append(("raw", "raw_size", 0))
        elif isinstance(sub.subcon, c.Array):
            count_name = _count_name(sub.subcon.count)
            steps.append(("array", count_name, sub.subcon.subcon.sizeof()))
        else:
            raise TypeError(f"no fast reader for sample field {sub.name!r}")
    unpack_from = prefix.struct.unpack_from
    names = prefix.names
    fixed = prefix.size

    def read_sample(buf: Any, pos: int, size: int, base: int = 0) -> Sample:
        values = dict(zip(names, unpack_from(buf, pos), strict=True))
        at = pos + fixed
        end = pos + size
        raw = b""
        for kind, name, item in steps:
            if kind == "field":
                if at + item.length > end:
                    raise CorruptSample(f"sample field {name} runs past the record")
                values[name] = item.parse(buf[at:at + item.length])
                at += item.length
            elif kind == "array":
                at += values[name] * item
            else:
                n = values[name]
                if at + n > end:
                    raise CorruptSample(f"RAW size {n} runs past the record")
                raw = buf[at:at + n]
                at += n
        if at > end:
            raise CorruptSample("sample fields run past the record")
        return Sample(values.get("time"), values.get("cpu"), values.get("pid"),
                      values.get("tid"), raw, desc, pos + base)

    return read_sample


def _count_name(expr: Any) -> str:
    """The field name in a ``this.<name>`` construct expression (``this['name']``)."""
    text = repr(expr)
    if not (text.startswith("this['") and text.endswith("']")):
        raise TypeError(f"unsupported array count {text}")
    return text[6:-2]


@dataclass(frozen=True)
class TrailerReader:
    """Reads a non-sample record's ``sample_id_all`` trailer (pid, tid, time, cpu, id)."""

    prefix: FixedPrefix

    @functools.cached_property
    def size(self) -> int:
        return self.prefix.size

    def read(self, buf: Any, end: int) -> dict[str, int]:
        """The trailer fields of the record ending at ``end``."""
        p = self.prefix
        return dict(zip(p.names, p.struct.unpack_from(buf, end - p.size), strict=True))


@functools.lru_cache(maxsize=256)
def make_trailer_reader(g: PerfGrammar, sample_type: int) -> TrailerReader:
    return TrailerReader(trailer_prefix(g, sample_type))


@dataclass(frozen=True)
class BodyReader:
    """Reads a non-sample record body (COMM, FORK, MMAP...) as the grammar does:
    its fixed-size head with one unpack, then at most one NUL-padded string."""

    prefix: FixedPrefix
    tail: str | None  # the name of the trailing NUL-padded string field

    @functools.cached_property
    def names(self) -> tuple[str, ...]:
        """The body's field names, in the grammar's order (the string last)."""
        return self.prefix.names + ((self.tail,) if self.tail is not None else ())

    def values(self, buf: Any, start: int, end: int) -> tuple | None:
        """The values of :attr:`names` in ``buf[start:end]`` (None where the grammar's
        parse fails)."""
        st = self.prefix.struct
        size = st.size
        if end - start < size:
            return None
        values = st.unpack_from(buf, start)
        if self.tail is not None:
            values += (NulPadded.text(bytes(buf[start + size:end])),)
        return values

    def read(self, buf: Any, start: int, end: int) -> c.Container | None:
        """The body in ``buf[start:end]`` (None where the grammar's parse fails)."""
        values = self.values(buf, start, end)
        return None if values is None else c.Container(zip(self.names, values, strict=True))


@functools.lru_cache(maxsize=128)
def make_body_reader(g: PerfGrammar, rtype: int) -> BodyReader | None:
    """The :class:`BodyReader` of record type ``rtype``, or None when its grammar has
    other variable parts (those records keep the construct parse)."""
    record = g.records.get(rtype)
    if not isinstance(record, c.Struct):
        return None
    prefix = fixed_prefix(g.endian, tuple(record.subcons))
    if not prefix.rest:
        return BodyReader(prefix, None)
    (last,) = prefix.rest if len(prefix.rest) == 1 else (None,)
    if (isinstance(last, c.Renamed) and isinstance(last.subcon, NulPadded)
            and last.subcon.subcon is c.GreedyBytes):
        return BodyReader(prefix, last.name)
    return None


def make_run_scanner(g: PerfGrammar, descs: list[EventDesc], id_at: int):
    """A loop over consecutive samples that share one fixed layout, or None.

    ``scan(buf, pos, limit, base, append) -> (pos, count)`` reads samples of the
    events in ``descs`` whose layout is the most common fixed one, one
    ``unpack_from`` each, and returns at the first record it does not handle
    (another record type, another layout, a short or corrupt record), leaving
    that record to the general reader. ``id_at`` is the offset of the sample id
    (8 for IDENTIFIER), or -1 when the lone event has no ids. The C version of the
    same loop (``_speedups.Scanner``) when it is built.
    """
    layouts: dict[tuple[int, int], list[EventDesc]] = {}
    for d in descs:
        layouts.setdefault((d.attr.sample_type, d.attr.read_format), []).append(d)
    if not layouts:
        return None
    (st, rf), members = max(layouts.items(), key=lambda kv: (
        sum(d.attr.type == PERF_TYPE_TRACEPOINT for d in kv[1]), len(kv[1])))
    prefix = sample_prefix(g, st, rf)
    if [getattr(sub, "name", None) for sub in prefix.rest] != ["raw"]:
        return None
    id_name = next((n for n, off in prefix.offsets.items()
                    if off == id_at and n in ("identifier", "id")), None)
    if id_name is None and not (id_at < 0 and len(descs) == 1):
        return None
    fixed = prefix.size
    by_id = {i: d for d in members for i in d.ids}
    scan = _native_scanner(prefix, id_name, by_id, descs[0], g.endian == "<")
    if scan is not None:
        return scan
    names = [n if n in _SAMPLE_FIELDS or n in ("type", "size", "raw_size", id_name) else "_"
             for n in prefix.names]
    args = {n: (n if n in names else "None") for n in _SAMPLE_FIELDS}
    pick = (f"        desc = by_id.get({id_name})\n        if desc is None:\n            break\n"
            if id_name else "        desc = lone\n")
    src = (
        "def scan(buf, pos, limit, base, append):\n"
        "    count = 0\n"
        "    while pos < limit:\n"
        f"        if pos + {fixed} > limit:\n"
        "            break\n"
        f"        ({', '.join(names)},) = unpack_from(buf, pos)\n"
        f"        if type != 9 or size < {fixed} or pos + size > limit:\n"
        "            break\n"
        + pick
        + f"        end = pos + {fixed} + raw_size\n"
        "        if end > pos + size:\n"
        "            break\n"
        "        append(new(Sample, ("
        + "".join(f"{args[n]}, " for n in _SAMPLE_FIELDS)
        + f"buf[pos + {fixed}:end], desc, pos + base)))\n"
        "        count += 1\n"
        "        pos += size\n"
        "    return pos, count\n"
    )
    namespace = {"unpack_from": prefix.struct.unpack_from, "Sample": Sample, "by_id": by_id,
                 "lone": descs[0], "new": tuple.__new__}
    exec(compiled(src, f"<sample run scanner {st:#x}>"), namespace)  # noqa: S102
    fn = namespace["scan"]
    fn.source = src
    fn.by_id = by_id
    return fn


def _native_scanner(prefix: FixedPrefix, id_name: str | None, by_id: dict[int, EventDesc],
                    lone: EventDesc, little: bool):
    """``_speedups.Scanner(...).scan`` for this layout, or None without the C module."""
    from ehtool.speedups import load

    speedups = load()
    if speedups is None:
        return None
    wanted = {"type": "type", "size": "size", "raw_size": "raw_size", **{
        n: n for n in _SAMPLE_FIELDS}}
    if id_name is not None:
        wanted["id"] = id_name
    fields = {key: (prefix.offsets[name], struct.calcsize("<" + prefix.codes[name]),
                    prefix.codes[name].islower())
              for key, name in wanted.items() if name in prefix.offsets}
    return speedups.Scanner(fields, prefix.size, little, by_id if id_name else None, lone,
                            Sample).scan


class _MemoParse(c.Subconstruct):
    """``subcon`` parsed once per distinct bytes of its (whole, fixed-size) stream; each
    parse returns a fresh copy (callers may change it)."""

    def __init__(self, subcon: c.Construct, maxsize: int = 256) -> None:
        super().__init__(subcon)
        self.subcons = subcon.subcons  # (SizedAttr reads the attr's size field through them)
        self.cache: Bounded[bytes, Any] = Bounded(maxsize)

    def _parse(self, stream, context, path):
        data = c.stream_read_entire(stream, path)
        return _fresh(self.cache.made(data, lambda: self.subcon._parsereport(
            c.io.BytesIO(data), context, path)))


def _fresh(obj: Any) -> Any:
    """A copy of a parsed Container whose nested Containers are copies too."""
    return c.Container({k: _fresh(v) if type(v) is c.Container else v
                        for k, v in obj.items()})


@functools.cache
def _memo(attr: c.Construct) -> _MemoParse:
    return _MemoParse(attr)


def memo_attrs(con: c.Construct) -> c.Construct:
    """``con`` with the ``perf_event_attr`` in each :class:`SizedAttr` parsed once per
    distinct bytes (through Struct, Array and named fields): attrs repeat across the
    inputs of a fleet (the attrs section, EVENT_DESC, HEADER_ATTR), and the flag
    bitfield alone is slow to parse. The same grammar: only the parse is shared."""
    if isinstance(con, SizedAttr):
        return SizedAttr(_memo(con.attr), con.length)
    if isinstance(con, c.Renamed):
        return c.Renamed(memo_attrs(con.subcon), newname=con.name)
    if isinstance(con, c.Struct):
        return c.Struct(*(memo_attrs(sub) for sub in con.subcons))
    if isinstance(con, c.Array):
        return c.Array(con.count, memo_attrs(con.subcon), con.discard)
    return con


@functools.lru_cache(maxsize=64)
def memo_grammar(g: PerfGrammar, name: str, key: int | None = None) -> c.Construct:
    """:func:`memo_attrs` of ``g.<name>`` (``g.<name>[key]`` for a dict: ``features``,
    ``records``), built once per byte order."""
    con = getattr(g, name)
    return memo_attrs(con if key is None else con[key])


class _Short(Exception):
    """The data ends before a field: :func:`feature_reader` lets construct parse (and
    raise its own error)."""


def _value_step(con: c.Construct):
    """``step(data, at) -> (value, next at)`` reading ``con`` as its parse does, for the
    shapes of the feature grammars (a number, a Struct of numbers, a length-prefixed
    NUL-padded string, a count-prefixed array of those); None for other shapes. Raises
    :class:`_Short` where the parse would run out of data."""
    if isinstance(con, c.FormatField):
        one = struct.Struct(con.fmtstr)

        def number(data: Any, at: int) -> tuple[Any, int]:
            end = at + one.size
            if end > len(data):
                raise _Short
            return one.unpack_from(data, at)[0], end
        return number
    if isinstance(con, c.Struct):
        fields = [_format_field(sub) for sub in con.subcons]
        if not fields or None in fields or len({f.fmtstr[0] for _, f in fields}) != 1:
            return None
        prefix = fixed_prefix(fields[0][1].fmtstr[0], tuple(con.subcons))

        def record(data: Any, at: int) -> tuple[Any, int]:
            end = at + prefix.size
            if end > len(data):
                raise _Short
            return c.Container(zip(prefix.names, prefix.struct.unpack_from(data, at),
                                   strict=True)), end
        return record
    if (isinstance(con, c.Prefixed) and not con.includelength
            and isinstance(con.subcon, NulPadded) and con.subcon.subcon is c.GreedyBytes):
        length = _value_step(con.lengthfield)
        if length is None:
            return None

        def text(data: Any, at: int) -> tuple[Any, int]:
            n, at = length(data, at)
            end = at + n
            if end > len(data):
                raise _Short
            return NulPadded.text(data[at:end]), end
        return text
    if (isinstance(con, c.FocusedSeq) and con.parsebuildfrom == "items"
            and [sub.name for sub in con.subcons] == ["count", "items"]):
        count_con, items = (sub.subcon for sub in con.subcons)
        if not (isinstance(count_con, c.Rebuild) and isinstance(items, c.Array)
                and repr(items.count) == "this['count']"):
            return None
        count, item = _value_step(count_con.subcon), _value_step(items.subcon)
        if count is None or item is None:
            return None

        def array(data: Any, at: int) -> tuple[Any, int]:
            n, at = count(data, at)
            out = c.ListContainer()
            for _ in range(n):
                value, at = item(data, at)
                out.append(value)
            return out, at
        return array
    return None


@functools.lru_cache(maxsize=64)
def feature_reader(g: PerfGrammar, bit: int) -> Callable[[bytes], Any] | None:
    """``read(data)``: the value ``g.features[bit].parse(data)`` gives (its errors too),
    read with struct where the grammar's shape allows (every feature but EVENT_DESC);
    None when there is no grammar or no such reader."""
    con = g.features.get(bit)
    step = _value_step(con) if con is not None else None
    if step is None:
        return None
    parse = con.parse

    def read(data: bytes) -> Any:
        try:
            return step(data, 0)[0]
        except _Short:
            return parse(data)  # (raises as the grammar does)
    return read
