"""What the reader shares across the inputs of one process (a fleet of small files):
attrs parsed once per distinct bytes, generated readers compiled once per layout. The
shared parse gives what construct gives, a fresh copy each time, and never another
byte order's or another attr's value."""

from __future__ import annotations

import construct as c
import pytest

from ehtool.caches import Bounded
from ehtool.perfdata import hotpath
from ehtool.perfdata.grammar import Feature, RecordType, grammar_for
from ehtool.perfdata.hotpath import memo_attrs, memo_grammar
from ehtool.perfdata.reader import PerfDataFile
from ehtool.perfdata.writer import make_attr

from .conftest import DATA, EXAMPLE
from .helpers import transcode_file


def _plain(value):
    """A parsed value as nested lists of (key, value), member order kept, ``_io`` left out."""
    if isinstance(value, dict):
        return [(k, _plain(v)) for k, v in value.items() if not k.startswith("_")]
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _inputs(golden_perf, tmp_path):
    paths = [EXAMPLE, EXAMPLE.parent / "eventheader.data", golden_perf,
             *sorted(DATA.glob("*.data"))]
    for src in (EXAMPLE, golden_perf):
        be = tmp_path / f"be-{src.name}"
        transcode_file(src, be)
        paths.append(be)
    return paths


def test_memo_parses_agree_with_construct(golden_perf, tmp_path):
    """Every attrs-section entry, EVENT_DESC section and HEADER_ATTR record of the test
    recordings (both byte orders), parsed twice: the same values in the same member order
    as the grammar's own parse."""
    seen = {"attrs": 0, "event_desc": 0, "header_attr": 0}
    for path in _inputs(golden_perf, tmp_path):
        with PerfDataFile.open(path) as f:
            g, mm = f.grammar, f._mm
            if not f.pipe_mode:
                h = f.header
                for i in range(h.attrs.size // h.attr_size):
                    raw = mm[h.attrs.offset + i * h.attr_size:][:h.attr_size]
                    want = _plain(g.file_attr.parse(raw, attr_size=h.attr_size))
                    for _ in range(2):
                        assert _plain(memo_grammar(g, "file_attr").parse(
                            raw, attr_size=h.attr_size)) == want
                    seen["attrs"] += 1
            data = f.info.features.get(Feature.EVENT_DESC)
            if data is not None:
                want = _plain(g.event_desc.parse(data))
                for _ in range(2):
                    got = memo_grammar(g, "features", Feature.EVENT_DESC).parse(data)
                    assert _plain(got) == want
                seen["event_desc"] += 1
            for rec in f.records(order="file"):
                if not rec.is_sample and rec.type == RecordType.HEADER_ATTR:
                    body = rec.data[8:]
                    want = _plain(g.records[rec.type].parse(body))
                    assert _plain(memo_grammar(g, "records", rec.type).parse(body)) == want
                    seen["header_attr"] += 1
    assert all(n >= 3 for n in seen.values()), seen


def test_each_parse_is_a_fresh_copy():
    """A caller may change what it got (the writer sets ``attr.size``): the next parse of
    the same bytes is not affected."""
    g = grammar_for(False)
    raw = g.attr.build(make_attr(g, type=2, config=7, sample_type=0x10587, disabled=True))
    sized = memo_attrs(g.attr_self_sized)
    first = sized.parse(raw)
    first.size = 1
    first.flags.disabled = False
    second = sized.parse(raw)
    assert second is not first and second.flags is not first.flags
    assert second.size == len(raw) and second.flags.disabled is True
    assert _plain(second) == _plain(g.attr_self_sized.parse(raw))


def test_keyed_by_the_bytes_and_the_byte_order():
    """Attrs that differ in one flag bit, or the same bytes read in the other byte order,
    each get their own value."""
    little, big = grammar_for(False), grammar_for(True)
    a = little.attr.build(make_attr(little, type=2, config=7, sample_type=0x10587))
    b = little.attr.build(make_attr(little, type=2, config=7, sample_type=0x10587,
                                    sample_id_all=True))
    assert len(a) == len(b) and a != b
    memo = memo_grammar(little, "attr_self_sized")
    assert memo.parse(a).flags.sample_id_all is False
    assert memo.parse(b).flags.sample_id_all is True
    assert memo.parse(a).flags.sample_id_all is False
    entry = a + bytes(16)  # an attrs-section entry: the attr, then its ids section
    for g in (little, big, little):
        want = g.file_attr.parse(entry, attr_size=len(entry))
        got = memo_grammar(g, "file_attr").parse(entry, attr_size=len(entry))
        assert _plain(got) == _plain(want)
        assert got.attr.config == (7 << 56 if g is big else 7)


def test_the_shared_parses_stay_bounded(monkeypatch):
    g = grammar_for(False)
    memo = memo_attrs(g.attr_self_sized)
    inner = memo.attr
    monkeypatch.setattr(inner.cache, "maxsize", 4)
    for config in range(10):
        raw = g.attr.build(make_attr(g, type=2, config=config))
        assert memo.parse(raw).config == config
        assert len(inner.cache) <= 4


def test_a_second_input_compiles_no_reader_and_keeps_its_own_events(golden_perf):
    """Generated readers are compiled once per layout; each input's readers still make
    samples of that input's events."""
    with PerfDataFile.open(golden_perf) as f:
        first = [s.desc.name for s in f.samples(order="file")]
    compiled = dict(hotpath._code_cache)
    with PerfDataFile.open(golden_perf) as f:
        samples = list(f.samples(order="file"))
        assert all(any(s.desc is d for d in f.descs) for s in samples)
        assert [s.desc.name for s in samples] == first
    assert hotpath._code_cache == compiled


@pytest.mark.parametrize("big", [False, True])
def test_the_memo_only_wraps_attrs(big):
    """Constructs without a SizedAttr come back as they are (the grammar's own)."""
    g = grammar_for(big)
    assert memo_attrs(g.ids) is g.ids
    assert memo_attrs(g.features[Feature.HOSTNAME]) is g.features[Feature.HOSTNAME]
    assert isinstance(memo_grammar(g, "file_attr"), c.Struct)


def test_tracing_data_is_shared_by_its_bytes(tmp_path, monkeypatch):
    """Inputs whose tracing data is the same blob share its parse; a copy whose formats
    differ under the same event names and ids (a field renamed and moved) gets its own,
    whatever the order; the cache stays bounded."""
    from ehtool.perfdata import metadata

    monkeypatch.setattr(metadata, "_TRACING_CACHE", Bounded(16, 4 << 20))
    mutant = tmp_path / "mutant.data"
    mutant.write_bytes(EXAMPLE.read_bytes().replace(b"prev_comm", b"prev_cmdx")
                       .replace(b"offset:24;", b"offset:25;"))

    def switch_fields(path):
        with PerfDataFile.open(path) as f:
            (desc,) = [d for d in f.descs if d.name == "sched:sched_switch"]
            return f.tracing, [(x.name, x.offset) for x in desc.format.fields][:2]

    first, fields = switch_fields(EXAMPLE)
    assert fields == [("prev_comm", 8), ("prev_pid", 24)]
    other, mutated = switch_fields(mutant)
    assert mutated == [("prev_cmdx", 8), ("prev_pid", 25)] and other is not first
    again, fields_again = switch_fields(EXAMPLE)
    assert again is first and fields_again == fields
    assert len(metadata._TRACING_CACHE) == 2
    metadata._TRACING_CACHE.maxsize = 1
    third = tmp_path / "third.data"
    third.write_bytes(EXAMPLE.read_bytes().replace(b"prev_comm", b"prev_cxmm"))
    assert switch_fields(third)[1][0] == ("prev_cxmm", 8)
    assert len(metadata._TRACING_CACHE) == 1


@pytest.mark.parametrize("name", ["sched-ids.data", "sched-task-noid.data", "sched-pipe.data",
                                  "sched-612-z.data", "eh-612.data"])
def test_thread_names_learned_the_same_with_or_without_records(name):
    """A samples-only walk reads COMM and FORK without making their records: the thread
    names it learns (and the record counts) are those of the walk that makes them."""
    def walk(nonsample: bool):
        with PerfDataFile.open(DATA / name) as f:
            n = sum(1 for _ in f.records(order="file", nonsample=nonsample))
            return n, dict(f.session.comms), f.counts

    samples, comms, counts = walk(False)
    everything, all_comms, all_counts = walk(True)
    assert comms == all_comms and len(comms) > 5
    assert counts == all_counts and everything > samples > 0


def test_tracing_data_cache_is_bounded_by_bytes(monkeypatch):
    """Blobs bigger than the byte bound are parsed, not kept; the kept ones stay under it."""
    from ehtool.perfdata import metadata

    with PerfDataFile.open(EXAMPLE) as f:
        blob = f.info.features[Feature.TRACING_DATA]
    monkeypatch.setattr(metadata, "_TRACING_CACHE", Bounded(16, len(blob) - 1))
    assert metadata._parsed_tracing(blob)[0].formats
    assert metadata._TRACING_CACHE == {}
    monkeypatch.setattr(metadata, "_TRACING_CACHE", Bounded(16, len(blob) + 100))
    metadata._parsed_tracing(blob)
    other = blob.replace(b"prev_comm", b"prev_cxmm")
    assert metadata._parsed_tracing(other)[0] is not metadata._parsed_tracing(blob)[0]
    assert sum(map(len, metadata._TRACING_CACHE)) <= len(blob) + 100
