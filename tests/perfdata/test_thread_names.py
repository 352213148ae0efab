"""Thread names (``session.comm``) as of each sample's time, as perf shows them: perf
writes each CPU's buffer as one block, so a COMM or FORK record can come after, in the
file, samples that it precedes in time (and before samples that precede it)."""

from __future__ import annotations

import pytest

from ehtool.perfdata.grammar import RecordType
from ehtool.perfdata.reader import PerfDataFile
from ehtool.perfdata.writer import PerfDataWriter, make_attr

_TIME_TID_CPU_ID = 0x2 | 0x4 | 0x80 | 0x10000  # TID | TIME | CPU | IDENTIFIER
_TRAILER = ("pid", "tid", "time", "cpu", "cpu_reserved", "identifier")


def _recording(path, order: str) -> None:
    """One round: parent 100 named at t=10, child 200 forked at t=20, exec'd as
    'café' (UTF-8 bytes) at t=30; child samples at t=25 and t=40, an idle one at t=50.
    ``order`` "cpu": records as perf writes two CPUs' blocks (the fork last); "time"."""
    w = PerfDataWriter(path)
    ev = w.add_event(make_attr(w.g, type=1, config=9, sample_type=_TIME_TID_CPU_ID,
                               sample_id_all=True), [7], "cpu-clock")

    def trailer(time: int, tid: int) -> dict:
        return dict(zip(_TRAILER, (tid, tid, time, 0, 0, 7), strict=True))

    def comm(time: int, tid: int, name: str) -> bytes:
        return w.record_bytes(RecordType.COMM, dict(pid=tid, tid=tid, comm=name),
                              sample_id=trailer(time, tid), sample_type=_TIME_TID_CPU_ID)

    def sample(time: int, tid: int) -> bytes:
        return w.sample_bytes(ev, time=time, pid=tid, tid=tid, cpu=0, id=7)

    fork = w.record_bytes(RecordType.FORK, dict(pid=200, ppid=100, tid=200, ptid=100, time=20),
                          sample_id=trailer(20, 100), sample_type=_TIME_TID_CPU_ID)
    exec_ = comm(30, 200, "caf\xc3\xa9")  # (the grammar's text is Latin-1: these bytes)
    records = {"cpu": [comm(10, 100, "parent"), sample(40, 200), exec_, sample(50, 0),
                       sample(25, 200), fork],
               "time": [comm(10, 100, "parent"), fork, sample(25, 200), exec_,
                        sample(40, 200), sample(50, 0)]}[order]
    for data in records:
        w.add_raw(data)
    w.add_record(RecordType.FINISHED_ROUND)
    w.close()


@pytest.mark.parametrize("order", ["cpu", "time"])
@pytest.mark.parametrize("nonsample", [False, True])
def test_names_as_of_each_samples_time(tmp_path, order, nonsample):
    path = tmp_path / "threads.data"
    _recording(path, order)
    with PerfDataFile.open(path) as f:
        seen = [(r.time, f.session.comm(r.tid)) for r in f.records("time", nonsample)
                if r.is_sample]
    assert seen == [(25, "parent"), (40, "café"), (50, "swapper")]


def test_no_names_when_not_wanted(tmp_path):
    path = tmp_path / "threads.data"
    _recording(path, "cpu")
    with PerfDataFile.open(path) as f:
        f.threads = False
        assert [f.session.comm(s.tid) for s in f.samples()] == [None, None, "swapper"]


def test_a_part_after_a_split_starts_with_one_processs_names(tmp_path):
    """``-j N`` in query, Parquet and Dask: the walk to a split point applies each round's
    names in time order at the round's end, as one process does (in file order, the
    FORK written after the exec reset the child to its parent's name in the part
    after the split)."""
    import ehtool

    path = tmp_path / "rounds.data"
    w = PerfDataWriter(path)
    ev = w.add_event(make_attr(w.g, type=1, config=9, sample_type=_TIME_TID_CPU_ID,
                               sample_id_all=True), [7], "cpu-clock")

    def trailer(time: int, tid: int) -> dict:
        return dict(zip(_TRAILER, (tid, tid, time, 0, 0, 7), strict=True))

    w.add_record(RecordType.COMM, dict(pid=100, tid=100, comm="parent"),
                 sample_id=trailer(10, 100), sample_type=_TIME_TID_CPU_ID)
    for t in range(11, 4000):  # (the split point: past the middle, at this round's end)
        w.add_sample(ev, time=t, pid=300, tid=300, cpu=0, id=7)
    w.add_record(RecordType.COMM, dict(pid=200, tid=200, comm="child"),
                 sample_id=trailer(30, 200), sample_type=_TIME_TID_CPU_ID)
    w.add_record(RecordType.FORK, dict(pid=200, ppid=100, tid=200, ptid=100, time=20),
                 sample_id=trailer(20, 100), sample_type=_TIME_TID_CPU_ID)
    w.add_record(RecordType.FINISHED_ROUND)
    w.add_sample(ev, time=5000, pid=200, tid=200, cpu=0, id=7)
    w.add_record(RecordType.FINISHED_ROUND)
    w.close()
    with ehtool.open(path) as events:
        whole = [(e.time, e.meta["comm"]) for e in events]
    with ehtool.open(path, part=(1, 2)) as events:
        second = [(e.time, e.meta["comm"]) for e in events]
    assert second == whole[-len(second):] == [(5000, "child")]
