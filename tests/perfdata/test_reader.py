"""PerfDataFile on real recordings: golden file, own perf recordings, pipe mode, big-endian."""

from __future__ import annotations

import re
import struct
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from ehtool.perfdata.grammar import RecordType
from ehtool.perfdata.reader import PerfDataFile
from ehtool.perfdata.writer import swap_raw

from .conftest import DATA, EXAMPLE
from .helpers import transcode_file

R = RecordType

_SCRIPT_RE = re.compile(r"^\s*(-?\d+)/(-?\d+)\s+\[(\d+)\]\s+(\d+)\.(\d{9}):\s+(\S+):(?:\s.*)?$")


def _script_rows(text: str) -> list[tuple]:
    """(time, cpu, pid, tid, name) from ``perf script -F event,pid,tid,cpu,time[,trace] --ns``."""
    rows = []
    for line in text.splitlines():
        m = _SCRIPT_RE.match(line)
        assert m, line
        pid, tid, cpu, sec, ns, name = m.groups()
        # the kernel writes pid/tid -1 for a task already exiting; perf script prints the
        # u32 with %d, the reader (like perf-decode) keeps it unsigned
        rows.append((int(sec) * 10**9 + int(ns), int(cpu), int(pid) & 0xFFFFFFFF,
                     int(tid) & 0xFFFFFFFF, name))
    return rows


def _rows(f: PerfDataFile, order: str = "time") -> list[tuple]:
    return [(s.time, s.cpu, s.pid, s.tid, s.desc.name) for s in f.samples(order=order)]


# -- the golden file ---------------------------------------------------------------------

def test_golden_record_counts_and_events(golden_perf):
    with PerfDataFile.open(golden_perf) as f:
        assert not f.big_endian and not f.pipe_mode and f.long_size == 8
        names = [d.name for d in f.descs]
        assert names[2] == "user_events:TestProviderC_L4K85"
        assert names[-2:] == ["sched:sched_switch", "dummy:HG"]
        assert len(names) == 11
        samples = list(f.samples(order="file"))
        assert len(samples) == 539
        assert f.counts == {R.SAMPLE: 539, R.MMAP2: 371, R.FORK: 37, R.COMM: 36, R.EXIT: 1,
                            R.MMAP: 1, R.ID_INDEX: 1, R.THREAD_MAP: 1, R.CPU_MAP: 1,
                            R.FINISHED_INIT: 1, R.FINISHED_ROUND: 2, 17: 6, 18: 6}
        per_event = Counter(s.desc.name for s in samples)
        assert per_event["sched:sched_switch"] == 285
        assert per_event["user_events:TestProviderCpp_L5K0"] == 136
        assert per_event["user_events:TestProviderC_L5K0"] == 109
        assert per_event["user_events:TestProviderC_L4K85"] == 1


def test_golden_attr_id_mapping(golden_perf):
    with PerfDataFile.open(golden_perf) as f:
        for i, desc in enumerate(f.descs):
            assert desc.ids == list(range(6928 + 24 * i, 6952 + 24 * i))
            assert all(f.desc_for_id(x) is desc for x in desc.ids)
        sched = f.descs[9]
        assert (sched.attr.type, sched.attr.config) == (2, 391)
        assert sched.format is not None and sched.format.name == "sched_switch"
        assert sched.format_text[0] == "sched"
        assert f.descs[10].format is None  # the software dummy event has no format
        assert f.desc_for_id(1) is None


def test_golden_info_and_clock(golden_perf):
    with PerfDataFile.open(golden_perf) as f:
        i = f.info
        assert (i.hostname, i.arch, i.perf_version) == ("dcook2", "x86_64", "6.6.13")
        assert i.osrelease == "6.3.0-rc7-microsoft-standard-WSL2+"
        assert (i.nrcpus_available, i.nrcpus_online) == (24, 24)
        assert i.cmdline[:2] == ["/usr/bin/perf", "record"]
        assert i.clock_resolution_ns == 1
        assert i.clock_data == (1, 1711586712588060000, 12782502283276)
        assert i.sample_time == (12782555136396, 12786184517299)
        assert f.session.time_json(12782555136396) == b'"2024-03-28T00:45:12.640913120Z"'


def test_golden_meta_matches_perf_decode_json(golden_perf):
    """time/cpu/pid/tid and names of every sample equal perf-decode's (file-order) output."""
    from golden import golden_path

    text = golden_path("linuxtracepoints/perf.data.linux.json").read_bytes()
    lines = [ln for ln in text.split(b"\n") if ln.startswith(b" {")]
    meta = re.compile(rb'"meta":\{"time":"([^"]+)","cpu":(\d+),"pid":(\d+),"tid":(\d+)')
    with PerfDataFile.open(golden_perf) as f:
        samples = list(f.samples(order="file"))
        assert len(samples) == len(lines) == 539
        for line, s in zip(lines, samples, strict=True):
            m = meta.search(line)
            assert f.session.time_json(s.time) == b'"' + m.group(1) + b'"'
            assert (s.cpu, s.pid, s.tid) == tuple(int(x) for x in m.groups()[1:])
            if s.desc.name.startswith("sched:"):
                assert line.startswith(b' {"n":"sched:sched_switch"')


def test_golden_time_order_is_stable_sort_within_rounds(golden_perf):
    with PerfDataFile.open(golden_perf) as f:
        file_order = list(f.records(order="file"))
    expected, pending = [], []
    for r in file_order:
        if r.is_sample:
            pending.append(r)
        elif r.type == R.FINISHED_ROUND:  # not FINISHED_INIT: see the test below
            expected += sorted(pending, key=lambda s: s.time)
            pending = []
    expected += sorted(pending, key=lambda s: s.time)
    with PerfDataFile.open(golden_perf) as f:
        got = list(f.samples(order="time"))
    assert [s.offset for s in got] == [s.offset for s in expected]
    assert [s.offset for s in got] != [s.offset for s in file_order if s.is_sample]


def test_finished_init_does_not_end_a_sort_group(tmp_path):
    """perf-decode flushes its time-sorted map only at FINISHED_ROUND and at the end
    (microsoft/LinuxTracepoints libeventheader-decode-cpp/tools/perf-decode.cpp, the
    ``PERF_RECORD_FINISHED_ROUND`` branch of its read loop; PerfDataFile.cpp handles
    FINISHED_INIT by re-reading EVENT_DESC only), so samples on both sides of a
    FINISHED_INIT are sorted together."""
    from ehtool.perfdata.writer import PerfDataWriter, make_attr

    p = tmp_path / "init.data"
    w = PerfDataWriter(p)
    ev = w.add_event(make_attr(w.g, type=1, config=9, sample_type=0x10587,
                               sample_id_all=True), [5], "dummy:x")
    for rtype, t in [(None, 50), (R.FINISHED_INIT, 0), (None, 30), (None, 40),
                     (R.FINISHED_ROUND, 0), (None, 20), (R.FINISHED_INIT, 0), (None, 10)]:
        if rtype is None:
            w.add_sample(ev, id=5, pid=1, tid=1, time=t, cpu=0)
        else:
            w.add_record(rtype)
    w.close()
    with PerfDataFile.open(p) as f:
        assert [s.time for s in f.samples(order="time")] == [30, 40, 50, 10, 20]
        assert f.counts[R.FINISHED_INIT] == 2 and f.counts[R.FINISHED_ROUND] == 1


def test_golden_nonsample_records_and_comm(golden_perf):
    with PerfDataFile.open(golden_perf) as f:
        recs = [r for r in f.records(order="file") if not r.is_sample]
        exit_rec = next(r for r in recs if r.type == R.EXIT)
        assert (exit_rec.pid, exit_rec.tid, exit_rec.time) == (2004, 2004, 12784705607900)
        assert exit_rec.body.ppid == 1220 and exit_rec.desc is not None
        comms = [r for r in recs if r.type == R.COMM]
        assert len(comms) == 36 and all(isinstance(r.body.comm, str) for r in comms)
        assert f.session.comm(2002) == "perf"
        assert f.session.comm(999999) is None


def test_golden_big_endian_copy_reads_the_same(golden_perf, tmp_path):
    be = tmp_path / "be.data"
    transcode_file(golden_perf, be)
    with PerfDataFile.open(golden_perf) as le_f, PerfDataFile.open(be) as be_f:
        assert be_f.big_endian and not le_f.big_endian
        assert [d.name for d in be_f.descs] == [d.name for d in le_f.descs]
        assert [d.ids for d in be_f.descs] == [d.ids for d in le_f.descs]
        assert be_f.descs[9].attr.flags.sample_id_all and be_f.descs[9].attr.flags.use_clockid
        assert be_f.info.clock_data == le_f.info.clock_data
        assert be_f.info.hostname == "dcook2"
        assert be_f.tracing.big_endian and not le_f.tracing.big_endian
        assert be_f.tracing.formats == le_f.tracing.formats
        le, be = list(le_f.samples()), list(be_f.samples())
        assert [(s.time, s.cpu, s.pid, s.tid, s.desc.name) for s in be] == [
            (s.time, s.cpu, s.pid, s.tid, s.desc.name) for s in le]
        assert len(be) == 539
        assert be_f.session.comm(2002) == "perf"
    for x, y in zip(le, be, strict=True):  # RAW fields in the file's byte order ...
        fmt = x.desc.format
        assert int.from_bytes(y.raw[:2], "big") == int.from_bytes(x.raw[:2], "little") == fmt.id
        eh = fmt.eventheader_offset
        if eh is None:
            assert y.raw != x.raw and swap_raw(fmt, y.raw, True) == x.raw
        else:  # ... but an EventHeader keeps its own (little-endian here)
            assert y.raw[eh:] == x.raw[eh:] and y.raw[eh] & 0x4  # FLAG_LITTLE_ENDIAN


# -- own recordings (perf 6.1 on this host) ---------------------------------------------

@pytest.mark.parametrize("path", [EXAMPLE, DATA / "sched-ids.data",
                                  DATA / "sched-task-noid.data", DATA / "sched-pipe.data"],
                         ids=lambda p: p.name)
def test_recordings_match_perf_script(path: Path):
    expected = _script_rows((DATA / (path.name + ".script")).read_text())
    with PerfDataFile.open(path) as f:
        got = _rows(f)
    assert len(got) == len(expected) > 0
    assert sorted(got) == sorted(expected)
    times = [t for t, *_ in got]
    assert times == sorted(times)  # few rounds: perf script's global order == ours


def test_single_event_without_ids_uses_the_lone_attr():
    with PerfDataFile.open(DATA / "sched-task-noid.data") as f:
        assert len(f.descs) == 1 and f.descs[0].attr.sample_type == 0x587
        samples = list(f.samples())
        assert len(samples) == 33 and {s.desc.name for s in samples} == {"sched:sched_switch"}
        # no -k: no CLOCK_DATA, times print as bare seconds like perf script
        assert f.info.clock_data is None
        assert f.session.time_json(samples[0].time) == b"1510.160168781"


_ID_NO_IDENTIFIER = 0x5C6  # TID|TIME|ID|CPU|PERIOD|RAW: the id is the 3rd u64, not the 1st


def _two_event_id_file(path: Path) -> None:
    """Two tracepoints recorded with PERF_SAMPLE_ID (no IDENTIFIER), sample_id_all set."""
    from ehtool.perfdata.tracing_data import TracingData, build_tracing_data
    from ehtool.perfdata.writer import PerfDataWriter, make_attr

    fmt = ("name: {0}\nID: {1}\nformat:\n\tfield:unsigned short common_type;\toffset:0;\t"
           "size:2;\tsigned:0;\n\n\tfield:int {2};\toffset:8;\tsize:4;\tsigned:1;\n\n"
           'print fmt: "{2}=%d", REC->{2}\n')
    w = PerfDataWriter(path)
    a = w.add_event(make_attr(w.g, type=2, config=501, sample_type=_ID_NO_IDENTIFIER,
                              sample_period=1, sample_id_all=True), [10, 11])
    b = w.add_event(make_attr(w.g, type=2, config=502, sample_type=_ID_NO_IDENTIFIER,
                              sample_period=1, sample_id_all=True), [20])
    w.set_tracing_data(build_tracing_data(TracingData(
        version="0.6", big_endian=False, long_size=8, page_size=4096, header_page=b"",
        header_event=b"", formats=[("demo", fmt.format("alpha", 501, "x")),
                                   ("demo", fmt.format("beta", 502, "y"))])))
    trailer = dict(pid=7, tid=8, time=15, id=20, cpu=3, cpu_reserved=0)
    w.add_record(R.COMM, dict(pid=7, tid=8, comm="worker"), sample_id=trailer,
                 sample_type=_ID_NO_IDENTIFIER)
    for ev, ident, t, x in [(a, 10, 10, 1), (b, 20, 20, 2), (a, 11, 30, 3), (b, 20, 40, 4)]:
        raw = struct.pack("<HxxxxxxI", 500 + 1 + ev, x)
        w.add_sample(ev, id=ident, pid=7, tid=8, time=t, cpu=ev, period=1, raw=raw)
    w.add_record(R.FINISHED_ROUND)
    w.close()


@pytest.mark.parametrize("path", ["run-scanner", "general"])
def test_sample_id_without_identifier(tmp_path, monkeypatch, path):
    """Samples are tied to their event by PERF_SAMPLE_ID at its place after TID and
    TIME; the COMM record's sample_id_all trailer (id 20 before CPU) is parsed."""
    import ehtool.perfdata.walk as walk_mod

    if path == "general":  # no generated run scanner: the per-record reader in _scan
        monkeypatch.setattr(walk_mod, "make_run_scanner", lambda *a: None)
    p = tmp_path / "ids.data"
    _two_event_id_file(p)
    with PerfDataFile.open(p) as f:
        assert [d.name for d in f.descs] == ["demo:alpha", "demo:beta"]
        alpha, beta = f.descs
        assert f.desc_for_id(11) is alpha and f.desc_for_id(20) is beta
        recs = list(f.records(order="file"))
    comm, *samples, _round = recs
    assert [(s.desc, s.time, s.cpu, struct.unpack_from("<i", s.raw, 8)[0]) for s in samples] == [
        (alpha, 10, 0, 1), (beta, 20, 1, 2), (alpha, 30, 0, 3), (beta, 40, 1, 4)]
    assert all((s.pid, s.tid) == (7, 8) for s in samples)
    assert comm.type == R.COMM and comm.desc is beta
    assert (comm.pid, comm.tid, comm.time, comm.cpu) == (7, 8, 15, 3)
    assert comm.body.comm == "worker" and f.session.comm(8) == "worker"


def test_example_uses_sample_identifier():
    with PerfDataFile.open(EXAMPLE) as f:
        assert [d.name for d in f.descs] == ["sched:sched_switch", "sched:sched_wakeup",
                                            "dummy:HG"]
        assert all(d.attr.sample_type & 0x10000 for d in f.descs)
        assert f.info.clock_data is not None and f.info.clock_data[0] == 1  # CLOCK_MONOTONIC
        s = next(iter(f.samples()))
        assert re.fullmatch(rb'"20\d\d-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z"',
                            f.session.time_json(s.time))


def test_pipe_mode_from_a_real_pipe():
    path = DATA / "sched-pipe.data"
    expected = _script_rows((DATA / (path.name + ".script")).read_text())
    with subprocess.Popen(["cat", str(path)], stdout=subprocess.PIPE) as proc:
        f = PerfDataFile.open(proc.stdout)
        assert f.pipe_mode
        got = _rows(f)
        assert f.counts[R.HEADER_ATTR] == 3 and f.counts[R.HEADER_TRACING_DATA] == 1
        assert f.counts[R.FINISHED_INIT] == 1 and f.counts[R.HEADER_FEATURE] >= 10
    assert sorted(got) == sorted(expected)
    assert [d.name for d in f.descs] == ["sched:sched_switch", "sched:sched_wakeup", "dummy:HG"]
    assert f.tracing is not None and f.descs[0].format.name == "sched_switch"
    assert f.info.hostname and f.info.clock_data is not None


def test_pipe_mode_in_small_reads(monkeypatch):
    """Records split across reads (and the tracing blob after its record) still parse."""
    import ehtool.perfdata.reader as reader_mod

    monkeypatch.setattr(reader_mod, "_PIPE_READ", 37)
    path = DATA / "sched-pipe.data"
    with path.open("rb") as stream:
        f = PerfDataFile.open_stream(stream, "pipe")
        got = _rows(f, order="file")
    with PerfDataFile.open(path) as f2:
        assert got == _rows(f2, order="file") and len(got) == 23
    with PerfDataFile.open(path) as f2:
        offsets = [s.offset for s in f2.samples(order="file")]
    with path.open("rb") as stream:
        f3 = PerfDataFile.open_stream(stream)
        assert [s.offset for s in f3.samples(order="file")] == offsets


def _perf_usable() -> bool:
    import os
    import shutil

    return (shutil.which("perf") is not None and os.geteuid() == 0
            and Path("/sys/kernel/tracing/events/sched/sched_switch/id").exists())


@pytest.mark.skipif(not _perf_usable(), reason="needs root, perf and tracefs sched events")
@pytest.mark.parametrize("extra", [["--sample-identifier"], [], ["-o", "-"]],
                         ids=["sample-identifier", "plain", "pipe"])
def test_live_recording_matches_perf_script(tmp_path, extra):
    out = tmp_path / "live.data"
    cmd = ["perf", "record", "-q", "-k", "monotonic", "-a", "-e", "sched:sched_switch",
           "-e", "sched:sched_wakeup"]
    if extra == ["-o", "-"]:
        with out.open("wb") as sink:
            subprocess.run(cmd + ["-o", "-", "--", "sleep", "0.1"], stdout=sink,
                           stderr=subprocess.DEVNULL, check=True)
    else:
        subprocess.run(cmd + extra + ["-o", str(out), "--", "sleep", "0.1"],
                       stderr=subprocess.DEVNULL, stdout=subprocess.DEVNULL, check=True)
    script = subprocess.run(["perf", "script", "-F", "event,pid,tid,cpu,time", "--ns", "-i",
                             str(out)], capture_output=True, text=True, check=True).stdout
    expected = _script_rows(script)
    with PerfDataFile.open(out) as f:
        got = _rows(f)
    assert len(got) == len(expected) > 0
    assert sorted(got) == sorted(expected)


def test_time_sort_is_stable_and_puts_missing_times_first():
    from ehtool.perfdata.rounds import sort_by_time as _sort_by_time

    class Item:
        def __init__(self, time, index):
            self.time, self.index = time, index

    timed = [Item(t, i) for i, t in enumerate([5, 3, 5, 0, 3])]
    assert [x.index for x in _sort_by_time(list(timed))] == [3, 1, 4, 0, 2]
    mixed = [Item(t, i) for i, t in enumerate([5, None, 3, None, 5, 0])]
    assert [x.index for x in _sort_by_time(mixed)] == [1, 3, 5, 2, 0, 4]
