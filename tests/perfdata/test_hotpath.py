"""The struct-based sample readers agree with the full construct parse, record by record."""

from __future__ import annotations

import struct

import pytest

from ehtool.perfdata.grammar import SampleType, grammar_for
from ehtool.perfdata.hotpath import CorruptSample, make_sample_reader, sample_prefix
from ehtool.perfdata.reader import PerfDataFile
from ehtool.perfdata.writer import PerfDataWriter, make_attr
from impl import is_native

from .conftest import DATA, EXAMPLE
from .helpers import record_at, transcode_file


def test_typical_tracepoint_layout_offsets():
    p = sample_prefix(grammar_for(False), 0x10587, 0)
    assert p.struct.format == "<LHHQQLLQLLQL"  # construct spells u32 "L"
    assert p.offsets == {"type": 0, "misc": 4, "size": 6, "identifier": 8, "ip": 16, "pid": 24,
                         "tid": 28, "time": 32, "cpu": 40, "cpu_reserved": 44, "period": 48,
                         "raw_size": 56}
    assert p.size == 60 and [s.name for s in p.rest] == ["raw"]
    be = sample_prefix(grammar_for(True), 0x10587, 0)
    assert be.struct.format.startswith(">") and be.offsets == p.offsets


def test_variable_parts_stop_the_prefix():
    g = grammar_for(False)
    st = SampleType.TID | SampleType.TIME | SampleType.CALLCHAIN | SampleType.RAW
    p = sample_prefix(g, st, 0)
    assert p.names == ("type", "misc", "size", "pid", "tid", "time", "callchain_nr")
    assert [s.name for s in p.rest] == ["callchain", "raw_size", "raw"]


def _agree(path, expect_min: int) -> int:
    """Compare hot-path samples with construct for every sample record of ``path``."""
    data = path.read_bytes()
    n = 0
    with PerfDataFile.open(path) as f:
        for s in f.samples(order="file"):
            rec = record_at(data, s.offset, f.big_endian)
            attr = s.desc.attr
            full = f.grammar.sample(attr.sample_type, attr.read_format).parse(rec)
            st = attr.sample_type
            assert s.time == (full.time if st & SampleType.TIME else None)
            assert s.cpu == (full.cpu if st & SampleType.CPU else None)
            assert (s.pid, s.tid) == ((full.pid, full.tid) if st & SampleType.TID else (None, None))
            assert s.raw == full.raw and len(s.raw) == full.raw_size
            sample_id = full.get("identifier", full.get("id"))
            if sample_id is not None:
                assert sample_id in s.desc.ids
            n += 1
    assert n >= expect_min
    return n


def test_agree_on_golden(golden_perf):
    assert _agree(golden_perf, 539) == 539


@pytest.mark.parametrize("name", ["sched-ids.data", "sched-task-noid.data", "sched-pipe.data"])
def test_agree_on_own_recordings(name):
    _agree(DATA / name, 20)


def test_agree_on_example():
    _agree(EXAMPLE, 30)


def test_agree_on_big_endian_copy(golden_perf, tmp_path):
    be = tmp_path / "be.data"
    transcode_file(golden_perf, be)
    assert be.read_bytes()[:8] == b"2ELIFREP"
    assert _agree(be, 539) == 539


@pytest.mark.parametrize("big", [False, True])
def test_stepwise_reader_with_callchain_and_group_read(tmp_path, big):
    st = (SampleType.IDENTIFIER | SampleType.TID | SampleType.TIME | SampleType.READ
          | SampleType.CALLCHAIN | SampleType.CPU | SampleType.RAW)
    path = tmp_path / "cc.data"
    w = PerfDataWriter(path, big_endian=big)
    g = w.g
    ev = w.add_event(make_attr(g, type=2, config=1, sample_type=st, read_format=8 | 4 | 1,
                               sample_id_all=True), [42])
    expected = []
    for i in range(5):
        chain = list(range(i))
        values = [dict(value=j, id=42) for j in range(i % 3 + 1)]
        raw = bytes(range(i * 3 + 1))
        w.add_sample(ev, id=42, pid=10 + i, tid=20 + i, time=1000 * i, cpu=i,
                     callchain=chain, read_values=values, read_time_enabled=7, raw=raw)
        expected.append((1000 * i, i, 10 + i, 20 + i, raw))
    w.close()
    with PerfDataFile.open(path) as f:
        assert f.descs[0].reader.__name__ == "read_sample"
        assert not hasattr(f.descs[0].reader, "source")  # the stepwise reader, not generated
        got = [(s.time, s.cpu, s.pid, s.tid, s.raw[:len(e[4])]) for s, e in
               zip(f.samples(order="file"), expected, strict=True)]
    assert got == expected
    assert _agree(path, 5) == 5


def test_generated_reader_rejects_raw_past_record():
    g = grammar_for(False)
    from ehtool.perfdata.records import EventDesc

    desc = EventDesc(make_attr(g, type=2, sample_type=0x10587), [1])
    read = make_sample_reader(g, desc)
    rec = bytearray(struct.pack("<IHHQQIIQIIQI", 9, 1, 64, 1, 0, 1, 1, 5, 0, 0, 1, 4) + b"abcd")
    assert read(bytes(rec), 0, 64).raw == b"abcd"
    struct.pack_into("<I", rec, 56, 12)
    with pytest.raises(CorruptSample):
        read(bytes(rec), 0, 64)


def _all_samples(path, run: bool):
    with PerfDataFile.open(path) as f:
        if not run:
            f._run_scanner = lambda: None  # the general per-record reader only
        return [(s.time, s.cpu, s.pid, s.tid, s.raw, s.desc.name, s.offset)
                for s in f.samples(order="file")], f.counts


@pytest.mark.parametrize("name", ["golden", "sched-ids.data", "sched-task-noid.data",
                                  "sched-pipe.data", "example"])
def test_run_scanner_agrees_with_per_record_reader(name, impl, golden_perf):
    """The C scanner and the generated Python one each give what the per-record
    reader (itself checked against construct above) gives."""
    path = {"golden": golden_perf, "example": EXAMPLE}.get(name, DATA / name)
    with PerfDataFile.open(path) as f:
        list(f.samples(order="file"))
        scanner = f._run_scanner()
    assert scanner is not None
    assert is_native(scanner) == (impl == "c")
    if impl == "python":
        assert "unpack_from(buf, pos)" in scanner.source
    fast, fast_counts = _all_samples(path, run=True)
    slow, slow_counts = _all_samples(path, run=False)
    assert fast == slow and len(fast) > 20
    assert fast_counts == slow_counts


def test_run_scanner_stops_at_other_layouts(tmp_path, impl):
    """Samples of an event with a different layout interleave: both paths still agree."""
    path = tmp_path / "mixed.data"
    w = PerfDataWriter(path)
    a = w.add_event(make_attr(w.g, type=2, config=1, sample_type=0x10587,
                              sample_id_all=True), [1])
    b = w.add_event(make_attr(w.g, type=2, config=2, sample_type=0x10587 | SampleType.ADDR,
                              sample_id_all=True), [2])
    for i in range(6):
        w.add_sample(a, id=1, time=i, pid=i, tid=i, cpu=0, raw=b"A" * i)
        w.add_sample(a if i % 2 else b, id=1 if i % 2 else 2, time=i, pid=9, tid=9, cpu=1,
                     addr=7, raw=b"B")
    w.close()
    fast, _ = _all_samples(path, run=True)
    slow, _ = _all_samples(path, run=False)
    assert fast == slow and len(fast) == 12
    assert [s[5] for s in fast].count("") == 12  # no names: no EVENT_DESC written


def _bodies_agree(g, rtype: int, body: bytes) -> bool:
    """The BodyReader and the construct parse give the same body (or both none)."""
    import construct as c

    from ehtool.perfdata.hotpath import make_body_reader

    reader = make_body_reader(g, rtype)
    try:
        full = g.records[rtype].parse(body)
    except c.ConstructError:
        full = None
    fast = reader.read(body, 0, len(body))
    assert fast == full, (rtype, body)
    return fast is not None


@pytest.mark.parametrize("name", ["sched-ids.data", "sched-task-noid.data", "sched-pipe.data",
                                  "sched-612.data", "eh-612.data"])
def test_body_readers_agree_with_construct(name):
    """COMM, FORK, EXIT, MMAP, LOST... bodies read without construct equal the grammar's
    parse, record by record, with the trailer the walk strips and with none."""
    from ehtool.perfdata.grammar import RecordType
    from ehtool.perfdata.hotpath import make_body_reader

    read = 0
    with PerfDataFile.open(DATA / name) as f:
        g = f.grammar
        for rec in f.records():
            if rec.is_sample or make_body_reader(g, rec.type) is None:
                continue
            for end in range(8, len(rec.data) + 1):
                read += _bodies_agree(g, rec.type, rec.data[8:end])
    assert read > 100
    assert make_body_reader(g, RecordType.ID_INDEX) is None  # arrays keep construct


@pytest.mark.parametrize("big", [False, True])
def test_body_readers_agree_on_random_bytes(big):
    import random

    from ehtool.perfdata.hotpath import make_body_reader

    g = grammar_for(big)
    rng = random.Random(7)
    types = [t for t in g.records if make_body_reader(g, t) is not None]
    assert {3, 7, 1, 4}.issubset(types)  # COMM, FORK, MMAP, EXIT
    for _ in range(3000):
        body = rng.randbytes(rng.randrange(48)) + bytes(rng.randrange(3))
        _bodies_agree(g, rng.choice(types), body)
