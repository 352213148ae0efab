"""--split-by-event: one Parquet dataset per event name with typed field columns."""

from __future__ import annotations

import datetime
import ipaddress
import subprocess
import sys
import uuid
from collections import Counter
from pathlib import Path

import pytest

from ehtool.eventheader.decoder import Fields
from golden import GOLDEN, required

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
duckdb = pytest.importorskip("duckdb")

REPO = Path(__file__).resolve().parents[2]
RECORDINGS = [REPO / "examples" / "eventheader.data", REPO / "examples" / "sched.data",
              REPO / "tests" / "data" / "sched-z.data", GOLDEN / "linuxtracepoints" / "perf.data"]


def ehtool(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ehtool", *args], capture_output=True,
                          text=True, cwd=REPO, check=False)


def _read(directory: Path) -> dict[str, list[dict]]:
    """Rows per event directory, all parts."""
    out: dict[str, list[dict]] = {}
    for part in sorted(directory.glob("*/part-*.parquet")):
        out.setdefault(part.parent.name, []).extend(pq.read_table(part).to_pylist())
    return out


@pytest.mark.parametrize("path", RECORDINGS, ids=lambda p: p.name)
def test_every_event_once_with_its_typed_fields(path, tmp_path):
    """Each event lands in its name's dataset, in order, with the common columns of the
    one-file Parquet output and each field as the typed layer decodes it."""
    path = required(path)
    from ehtool.analysis.arrow import record_batches
    from ehtool.analysis.by_event import arrow_value, event_dir_name
    from ehtool.events import open as open_events

    out = tmp_path / "by-event"
    done = ehtool("decode", "--format", "parquet", "--split-by-event", str(out), str(path))
    assert done.returncode == 0, done.stderr
    by_dir = _read(out)
    with open_events(str(path)) as events:
        typed = list(events)
    flat = [row for b in record_batches([str(path)]) for row in b.to_pylist()]
    assert Counter(event_dir_name(e.name) for e in typed) == Counter(
        {k: len(v) for k, v in by_dir.items()})
    assert done.stderr == f"ehtool: {len(typed)} events of {len(by_dir)} names in {out}/\n"
    again = ehtool("decode", "-q", "--format", "parquet", "--split-by-event",
                   str(tmp_path / "quiet"), str(path))
    assert (again.returncode, again.stderr) == (0, "")  # (-q: only errors)
    seen: Counter = Counter()
    for ev, row in zip(typed, flat, strict=True):
        name = event_dir_name(ev.name)
        got = by_dir[name][seen[name]]
        seen[name] += 1
        assert {k: got[k] for k in row if k != "fields"} == {
            k: v for k, v in row.items() if k != "fields"}
        for (field, value), column in zip(ev.fields, _columns(ev.fields), strict=True):
            want = arrow_value(value)
            if isinstance(got[column], str) and not isinstance(want, str):
                continue  # a column with mixed types in its row group is text
            assert _same(got[column], want), (ev.name, field)


def _columns(fields: Fields) -> list[str]:
    from ehtool.analysis.arrow import schema
    from ehtool.analysis.by_event import field_columns

    return [c for c, _ in field_columns(fields, set(schema().names) - {"fields"})]


def _same(got, want) -> bool:
    if isinstance(want, datetime.datetime):
        return got == want.replace(microsecond=want.microsecond)
    if isinstance(want, float) and want != want:
        return got != got
    return got == want


def test_field_names_never_collide():
    from ehtool.analysis.by_event import field_columns

    fields = Fields([("cpu", 1), ("a", 2), ("a", 3), ("a_2", 4)])
    assert [c for c, _ in field_columns(fields, {"cpu", "time"})] == [
        "cpu_2", "a", "a_2", "a_2_2"]


@pytest.mark.parametrize(("name", "expected"), [
    ("MyProvider:Started", "MyProvider:Started"),
    ("sched:sched_switch", "sched:sched_switch"),
    ("../x/y", "..%2Fx%2Fy"),
    ("..", "%2E%2E"),
    ("", "%00"),
    ("a b\n", "a%20b%0A"),
])
def test_event_dir_names_are_safe(name, expected):
    from ehtool.analysis.by_event import event_dir_name

    assert event_dir_name(name) == expected


def test_long_event_names_are_cut_with_a_hash():
    from ehtool.analysis.by_event import event_dir_name

    a, b = event_dir_name("P:" + "x" * 300), event_dir_name("P:" + "x" * 301)
    assert len(a) == len(b) == 200 and a != b and a.startswith("P:xxx")


class _Ev:
    def __init__(self, name: str, fields: list) -> None:
        self.name = name
        self.provider, _, self.event = name.partition(":")
        self.fields = Fields(fields)
        self.meta = {"cpu": 0, "pid": 1, "tid": 1}
        self.time = self.utc_ns = self.offset = 0
        self.error = None


def test_a_new_layout_starts_a_new_part(tmp_path, monkeypatch):
    """Another version of an event (other fields or types) goes to parts of its own, each
    value in its own type (no row group mixes them); DuckDB reads the parts together."""
    import ehtool.analysis.by_event as by_event

    monkeypatch.setattr(by_event, "GROUP_ROWS", 2)
    w = by_event.ByEventWriter(tmp_path)
    for i in range(4):
        w.add("f", _Ev("P:E", [("n", i), ("u", uuid.UUID(int=i))]))
    w.add("f", _Ev("P:E", [("n", "text"), ("ip", ipaddress.ip_address("10.0.0.1"))]))
    w.add("f", _Ev("P:E", [("n", 5)]))
    w.add("f", _Ev("P:E", [("n", 1 << 63), ("n", -1)]))  # uint64 range, a duplicate name
    w.add("f", _Ev("P:E", [("n", 1 << 62)]))
    w.add("f", _Ev("P:E", [("n", -1)]))  # the shape of (n, 5) again: its part
    assert w.close() == {"P:E": 9}
    parts = sorted((tmp_path / "P:E").glob("part-*.parquet"))
    assert [p.name for p in parts] == ["part-0.parquet", "part-1.parquet", "part-2.parquet",
                                       "part-3.parquet"]
    assert pq.read_schema(parts[0]).field("n").type == pa.int64()
    assert pq.read_table(parts[0]).column("u").to_pylist()[1] == str(uuid.UUID(int=1))
    assert pq.read_table(parts[1]).column("n").to_pylist() == [5, 1 << 62, -1]
    assert pq.read_table(parts[2]).select(["n", "ip"]).to_pylist() == [
        {"n": "text", "ip": "10.0.0.1"}]
    assert pq.read_schema(parts[3]).field("n").type == pa.uint64()
    assert pq.read_table(parts[3]).column("n_2").to_pylist() == [-1]
    rows = duckdb.sql(f"select count(*) from read_parquet('{tmp_path}/P:E/*.parquet', "
                      "union_by_name = true)").fetchall()[0]
    assert rows == (9,)


def test_writers_and_pending_rows_stay_bounded(tmp_path, monkeypatch):
    import ehtool.analysis.by_event as by_event

    monkeypatch.setattr(by_event, "OPEN_WRITERS", 3)
    monkeypatch.setattr(by_event, "PENDING_ROWS", 10)
    w = by_event.ByEventWriter(tmp_path)
    for i in range(200):
        w.add("f", _Ev(f"P:E{i % 7}", [("i", i)]))
        assert w.pending < 10 and len(w.open) <= 3
    assert w.close() == {f"P:E{k}": len(range(k, 200, 7)) for k in range(7)}
    for k in range(7):
        got = duckdb.sql(f"select list(i order by i) from read_parquet("
                         f"'{tmp_path}/P:E{k}/*.parquet')").fetchall()[0][0]
        assert got == list(range(k, 200, 7))


def test_directory_is_written_whole_or_not_at_all(tmp_path):
    example = str(REPO / "examples" / "eventheader.data")
    full = tmp_path / "full"
    full.mkdir()
    (full / "keep").write_text("x")
    done = ehtool("decode", "--format", "parquet", "--split-by-event", str(full), example)
    assert done.returncode == 1 and "not empty" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert [p.name for p in full.iterdir()] == ["keep"]
    empty = tmp_path / "empty"
    empty.mkdir()
    done = ehtool("decode", "--format", "parquet", "--split-by-event", str(empty), example)
    assert done.returncode == 0, done.stderr
    assert any(empty.glob("*/part-0.parquet"))
    missing = tmp_path / "new"
    done = ehtool("decode", "--format", "parquet", "--split-by-event", str(missing),
                  str(tmp_path / "nosuch.data"))
    assert done.returncode == 1 and not missing.exists()
    assert not list(tmp_path.glob(".ehtool-*"))
    done = ehtool("decode", "--split-by-event", str(missing), example)
    assert done.returncode == 2 and "--format parquet" in done.stderr


def test_a_cut_input_keeps_the_events_before_the_cut(tmp_path):
    data = (REPO / "tests" / "data" / "eh-612-pipe.data").read_bytes()
    cut = tmp_path / "cut.data"
    cut.write_bytes(data[:len(data) * 3 // 4])
    out = tmp_path / "out"
    done = ehtool("decode", "--format", "parquet", "--split-by-event", str(out), str(cut))
    assert done.returncode == 1, done.stderr
    whole = ehtool("decode", "--format", "jsonl", str(cut))
    assert sum(len(v) for v in _read(out).values()) == len(whole.stdout.splitlines()) > 0
