"""JSON Lines, Parquet, SQL (ehtool query) and Dask agree on the events of recordings."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from golden import GOLDEN, golden_path, required

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
pytest.importorskip("duckdb")
dd = pytest.importorskip("dask.dataframe")

REPO = Path(__file__).resolve().parents[2]
RECORDINGS = [REPO / "examples" / "eventheader.data", REPO / "examples" / "sched.data",
              REPO / "tests" / "data" / "sched-pipe.data", REPO / "tests" / "data" / "sched-z.data",
              GOLDEN / "linuxtracepoints" / "perf.data"]


def ehtool(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ehtool", *args], capture_output=True,
                          cwd=REPO, check=False)


def jsonl(path: Path) -> list[dict]:
    done = ehtool("decode", "--format", "jsonl", "--no-field-tags", "--meta", "all,-common",
                  str(path))
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


@pytest.fixture(scope="module", params=RECORDINGS, ids=lambda p: p.name)
def recording(request) -> Path:
    return required(request.param)


def test_counts_agree(recording, tmp_path):
    events = jsonl(recording)
    out = tmp_path / "out.parquet"
    done = ehtool("decode", "--format", "parquet", "-o", str(out), str(recording))
    assert done.returncode == 0, done.stderr
    table = pq.read_table(out)
    assert table.num_rows == len(events) > 0
    done = ehtool("query", "--format", "csv", "select count(*) as n from events",
                  str(recording))
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode().splitlines()[1] == str(len(events))
    from ehtool.dask import read_perfdata

    assert len(read_perfdata(str(recording))) == len(events)
    # names, cpus, pids and tids of every event (an exiting task's pid is 4294967295 in
    # both: it was -1 in an int32 column), and a sample of the EventHeader fields
    rows = table.to_pylist()
    for row, event in zip(rows, events, strict=True):
        assert f"{row['provider']}:{row['event']}" == event["n"]
        assert [row[k] for k in ("cpu", "pid", "tid")] == [event["meta"].get(k) for k in
                                                          ("cpu", "pid", "tid")]
    for row, event in zip(rows[::7], events[::7], strict=True):
        fields = json.loads(row["fields"])
        for key, value in event.items():
            if key in ("n", "meta") or key not in fields:
                continue
            # the same type on both sides: ints, and strings (hex/errno/time texts of
            # typed ints and times are compared by tests/events/test_typed.py)
            if type(value) is type(fields[key]) and isinstance(value, int | str):
                assert fields[key] == value, (key, fields[key], value)


def test_query_group_by_and_errors():
    done = ehtool("query", "--format", "jsonl",
                  "select provider, count(*) as n from events group by all order by n desc",
                  str(RECORDINGS[0]), str(RECORDINGS[1]))
    assert done.returncode == 0, done.stderr
    assert [json.loads(x) for x in done.stdout.splitlines()] == [
        {"provider": "sched", "n": 35}, {"provider": "MyProvider", "n": 3}]
    done = ehtool("query", "select nosuch from events", str(RECORDINGS[0]))
    assert done.returncode == 2 and done.stderr.startswith(b"ehtool: error: SQL:")
    assert done.stderr.count(b"\n") == 1


def test_dask_on_a_local_cluster():
    distributed = pytest.importorskip("distributed")
    from ehtool.dask import read_perfdata

    with distributed.LocalCluster(n_workers=2, processes=False, threads_per_worker=1,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster):
        df = read_perfdata([str(p) for p in RECORDINGS[:2]], columns=["provider", "event"])
        assert df.npartitions == 2
        counts = df.groupby("provider").size().compute().to_dict()
    assert counts == {"MyProvider": 3, "sched": 35}


def test_dask_splits_big_files_and_reads_fsspec_globs(tmp_path):
    """A file-mode file above partition_bytes is read as several partitions (split as -j N
    splits it: every event once, in order); an fsspec URL glob is expanded."""
    distributed = pytest.importorskip("distributed")
    from ehtool.analysis.arrow import record_batches
    from ehtool.dask import read_perfdata
    from ehtool.perfdata.writer import replay_samples

    golden = golden_path("linuxtracepoints/perf.data")
    big = tmp_path / "big.data"
    replay_samples(str(golden), str(big), 20000, attr_size=128)
    whole = pa.Table.from_batches(list(record_batches([str(big)], ["session_time", "event"])))
    with distributed.LocalCluster(n_workers=2, processes=False, threads_per_worker=1,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster):
        df = read_perfdata(str(big), columns=["session_time", "event"],
                           partition_bytes=1 << 20)
        assert df.npartitions == -(-big.stat().st_size // (1 << 20)) > 1
        got = df.compute()
        urls = read_perfdata(f"file://{REPO}/examples/*.data", columns=["file", "provider"])
        assert urls.npartitions == 2
        by_file = urls.groupby("file").size().compute().to_dict()
    assert got["session_time"].tolist() == whole.column("session_time").to_pylist()
    assert got["event"].tolist() == whole.column("event").to_pylist()
    assert by_file == {f"file://{REPO}/examples/eventheader.data": 3,
                       f"file://{REPO}/examples/sched.data": 35}


def test_dask_globs_that_match_nothing_fail_at_once(tmp_path):
    """A glob matching no recording is a FileNotFoundError when the frame is made, not
    an InputError about a file named 'nosuch*.data' at the computation; a name with
    glob characters that exists as written is read."""
    pytest.importorskip("dask")
    from ehtool.dask import read_perfdata

    for pattern in (str(tmp_path / "nosuch*.data"), f"file://{tmp_path}/nosuch*.data"):
        with pytest.raises(FileNotFoundError, match="no recordings match"):
            read_perfdata([str(REPO / "examples" / "sched.data"), pattern])
    odd = tmp_path / "run[1].data"
    odd.write_bytes((REPO / "examples" / "sched.data").read_bytes())
    assert len(read_perfdata(str(odd))) == 35


def test_the_command_line_does_not_import_the_analysis_libraries():
    done = subprocess.run([sys.executable, "-c", "import sys, ehtool.cli.app, ehtool; "
                           "print(sorted(m for m in ('pyarrow', 'duckdb', 'dask') "
                           "if m in sys.modules))"], capture_output=True, text=True)
    assert done.stdout.strip() == "[]"


def _cut(tmp_path: Path) -> Path:
    """The reference recording cut mid-record: 218 complete events, then an error."""
    cut = tmp_path / "cut.data"
    cut.write_bytes(golden_path("linuxtracepoints/perf.data").read_bytes()[:100000])
    return cut


def test_query_reports_every_input_it_cannot_read(tmp_path):
    """Each input that cannot be opened or is not perf.data is one error line and exit 1,
    even when the query stops early (LIMIT) or does not read 'events'."""
    good, missing = str(RECORDINGS[1]), str(tmp_path / "missing.data")
    junk = tmp_path / "junk.data"
    junk.write_bytes(bytes(range(256)) * 20)
    for args, out, errors in (
            (["select 1", missing], b"", [f"{missing}: cannot open"]),
            (["select provider from events limit 1", good, missing], b'"provider"\n"sched"\n',
             [f"{missing}: cannot open"]),
            (["--format", "jsonl", "select 1 as x", str(junk)], b"",
             [f"{junk}: offset 0x0: not a perf.data file"]),
            (["--format", "jsonl", "select 1 as x", str(junk), good, missing], b'{"x":1}\n',
             [f"{junk}: offset 0x0: not a perf.data", f"{missing}: cannot open"]),
            (["select 1 as x from events limit 1", str(_cut(tmp_path)), good], b'"x"\n1\n',
             [f"{tmp_path}/cut.data: offset 0x18680: truncated file"])):  # met, not drained
        done = ehtool("query", *args)
        assert done.returncode == 1, (args, done.stderr)
        assert done.stdout == out, args
        lines = done.stderr.decode().splitlines()
        assert len(lines) == len(errors), lines
        for line, error in zip(lines, errors, strict=True):
            assert line.startswith(f"ehtool: error: {error}"), (line, error)
    done = subprocess.run([sys.executable, "-m", "ehtool", "query", "select 1", "-"],
                          input=bytes(100), capture_output=True, cwd=REPO, check=False)
    assert done.returncode == 1 and done.stderr.startswith(b"ehtool: error: stdin: ")


def test_query_runs_over_the_events_before_a_corrupt_record(tmp_path):
    """As decode: the query's result over every event that decodes, then the input's
    error (one line, exit 1)."""
    cut = _cut(tmp_path)
    decoded = ehtool("decode", "--format", "jsonl", str(cut))
    assert decoded.returncode == 1 and len(decoded.stdout.splitlines()) == 218
    for inputs, count in (([cut], 218), ([cut, RECORDINGS[0]], 221),
                          ([RECORDINGS[0], cut, tmp_path / "missing.data"], 221)):
        done = ehtool("query", "select count(*) as n from events", *map(str, inputs))
        assert done.returncode == 1
        assert done.stdout.splitlines() == [b'"n"', str(count).encode()]
        lines = done.stderr.splitlines()
        assert lines[0] == decoded.stderr.strip() and len(lines) == len(inputs) - 1 + 1 - (
            RECORDINGS[0] in inputs)


def test_query_statements():
    """An empty SQL text is a usage error; several statements each print their result
    (as DuckDB's shell); '-' can be read by one of them only."""
    path = str(RECORDINGS[0])
    for sql in ("", " ; -- nothing"):
        done = ehtool("query", sql, path)
        assert done.returncode == 2 and done.stderr.count(b"\n") == 1
        assert done.stderr.startswith(b"ehtool: error: SQL: no statement") and not done.stdout
    done = ehtool("query", "--format", "jsonl", "create table t as select count(*) as n "
                  "from events; select n from t; select provider from events limit 1", path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [b'{"n":3}', b'{"provider":"MyProvider"}']
    done = ehtool("query", "select 1 as a; select 2 as b", path)
    assert done.stdout.splitlines() == [b'"a"', b"1", b'"b"', b"2"]
    done = ehtool("query", "select 1 from events; select 2 from events", "-")
    assert done.returncode == 2 and b"standard input" in done.stderr


def test_query_jsonl_and_csv_values():
    """jsonl writes JSON values: JSON nested, blobs as hex, times as decode writes them,
    NaN as decode's string, decimals as numbers; csv the same texts."""
    path = required(RECORDINGS[-1])
    sql = ("select time, 'x\\x00'::blob as b, fields, [time] as l, 'nan'::double as n, "
           "sum(cpu) over () as s, 1.25::decimal(5, 2) as d, interval 90 minute as i "
           "from events where provider = 'TestProviderC' and event = 'f64'")
    done = ehtool("query", "--format", "jsonl", sql, str(path))
    assert done.returncode == 0, done.stderr
    row = json.loads(done.stdout)
    event = next(e for e in jsonl(path) if e["n"] == "TestProviderC:f64")
    assert row == {"time": event["meta"]["time"], "b": "78 00",
                   "fields": {k: v for k, v in event.items() if k not in ("n", "meta")},
                   "l": [event["meta"]["time"]], "n": "nan", "s": event["meta"]["cpu"],
                   "d": 1.25, "i": "P0M0DT5400S"}
    assert row["time"].endswith("Z") and "T" in row["time"]
    done = ehtool("query", "--format", "csv", sql, str(path))
    assert done.returncode == 0, done.stderr
    import csv

    header, values = csv.reader(done.stdout.decode().splitlines())
    assert dict(zip(header, values, strict=True)) == {
        "time": row["time"], "b": "78 00", "fields": json.dumps(row["fields"],
                                                                separators=(",", ":")),
        "l": f'["{row["time"]}"]', "n": "nan", "s": str(row["s"]), "d": "1.25",
        "i": "P0M0DT5400S"}


def test_query_times_at_any_depth_keep_their_nanoseconds():
    """Times inside lists, structs and maps are written as at the top, to the
    nanosecond, in a process that never imports pandas (pyarrow needs it to give them
    as Python values: it said "Nanosecond resolution temporal type ... is not safely
    convertible")."""
    path = str(REPO / "examples" / "eventheader.data")
    first = "2026-11-22T12:18:31.730540216"
    sql = ("select min(time) as t, [min(time)] as l, {'a': min(time), 'b': [max(time)]} as s, "
           "map([min(time)], [1]) as m, [min(time)::timestamp] as naive, "
           "[min(time)::timestamp_ms] as ms from events")
    done = ehtool("query", "--format", "jsonl", sql, path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {
        "t": first + "Z", "l": [first + "Z"],
        "s": {"a": first + "Z", "b": ["2026-11-22T12:18:39.661435143Z"]},
        "m": {first + "Z": 1}, "naive": ["2026-11-22T12:18:31.730540000"],
        "ms": ["2026-11-22T12:18:31.731000000"]}


def test_query_times_of_nanoseconds_and_unions():
    """TIME_NS (at the top and in a list) and a union holding a TIMESTAMP_NS: written
    from integers, with their nanoseconds (without pandas, pyarrow cannot give them as
    Python values: it was an internal error); a union's value as its member's."""
    path = str(REPO / "examples" / "sched.data")
    sql = ("select [time_ns '01:02:03.123456789'] as tn, time_ns '12:34:56' as t0, "
           "union_value(t := time::timestamp_ns) as u, "
           "union_value(n := 5)::union(n int, s varchar) as v from events limit 1")
    done = ehtool("query", "--format", "jsonl", sql, path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"tn": ["01:02:03.123456789"], "t0": "12:34:56",
                                       "u": "2026-11-22T11:10:03.057260000", "v": 5}
    done = ehtool("query", "--format", "csv", sql, path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[1] == (b'"[""01:02:03.123456789""]","12:34:56",'
                                           b'"""2026-11-22T11:10:03.057260000""","5"')


@pytest.mark.parametrize("args", [
    ("query", "select provider, min(time), count(*) from events group by all"),
    ("query", "--format", "jsonl", "select [time] as l, fields from events"),
    ("decode", "--format", "parquet", "-o", "{out}"),
])
def test_query_and_parquet_do_not_import_pandas(args, tmp_path):
    """pyarrow's first array of a Python list imports pandas, 0.3-0.5 s and ~40 MB, to
    ask whether the list is a pandas object; query and Parquet output never need it."""
    pytest.importorskip("pandas", reason="pandas is not installed: nothing to keep out")
    args = tuple(a.replace("{out}", str(tmp_path / "out.parquet")) for a in args)
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "ehtool", *args,
                           str(REPO / "examples" / "eventheader.data")],
                          capture_output=True, cwd=tmp_path, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    imported = [line.rsplit(b"|", 1)[-1].strip() for line in done.stderr.splitlines()
                if line.startswith(b"import time:")]
    assert b"pyarrow.lib" in imported  # (the run did reach pyarrow)
    assert not [m for m in imported if m.startswith(b"pandas.")]


def test_read_perfdata_errors_warn_keeps_what_decodes(tmp_path):
    """A cut file failed the whole Dask computation; errors="warn" keeps its events (as
    decode and query do) and warns; the default still raises."""
    import warnings

    from ehtool.dask import read_perfdata
    from ehtool.errors import InputError

    cut = tmp_path / "cut.data"
    cut.write_bytes(required(GOLDEN / "linuxtracepoints" / "perf.data").read_bytes()[:100_000])
    sched = str(REPO / "examples" / "sched.data")
    decoded = ehtool("decode", "--format", "jsonl", str(cut)).stdout.count(b"\n")
    assert decoded == 218
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        frame = read_perfdata([str(cut), sched], errors="warn")
        assert len(frame) == decoded + len(jsonl(Path(sched)))
    assert any("truncated file" in str(w.message) for w in caught)
    with pytest.raises(InputError, match="truncated file"):
        len(read_perfdata([str(cut)]))
    with pytest.raises(ValueError, match="errors='skip'"):
        read_perfdata([sched], errors="skip")


def test_query_reads_each_input_once_and_still_reports_those_it_did_not_reach(
        tmp_path, monkeypatch):
    """Before the query an input is only probed (can it be opened, does it start as
    perf.data?): its header, attributes and features were read there too, serially in
    the caller, ~5 ms a file of a fleet's. An input the query did not reach (LIMIT, no
    'events') is opened after it for the problems of its header and features."""
    import shutil
    import struct

    from ehtool.perfdata import PerfDataFile
    from tests.cli.conftest import _run

    files = []
    for k in range(4):
        files.append(str(tmp_path / f"{k}.data"))
        shutil.copy(RECORDINGS[1], files[-1])
    h = PerfDataFile.open(files[3]).header
    with open(files[3], "r+b") as f:  # its first feature's section past the end
        f.seek(h.data.offset + h.data.size)
        f.write(struct.pack("<QQ", 1 << 30, 16))
    opened: list[str] = []
    real = PerfDataFile.open.__func__
    monkeypatch.setattr(PerfDataFile, "open", classmethod(
        lambda cls, path, **kw: opened.append(str(path)) or real(cls, path, **kw)))
    for sql, out in (("select count(*) as n from events", '"n"\n140\n'),
                     ("select cpu from events limit 1", '"cpu"\n0\n'),
                     ("select 1 as n", '"n"\n1\n')):
        opened.clear()
        done = _run("query", "-j", "1", "--format", "csv", sql, *files)
        assert (done.status, done.out) == (1, out), sql
        assert opened == files, sql
        assert done.err == (f"ehtool: error: {files[3]}: offset 0x{h.data.offset + h.data.size:x}"
                            ": feature 1 runs past the end of the file\n"), sql
