"""The Arrow rows: a projection decodes only what it needs."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("pyarrow")
REPO = Path(__file__).resolve().parents[2]


def test_projected_reader_agrees_with_the_full_one():
    """Without the fields column no field is decoded, and nothing else changes."""
    from ehtool.analysis.arrow import record_batches

    path = str(REPO / "examples" / "eventheader.data")
    full = [b.to_pydict() for b in record_batches([path])]
    some = [b.to_pydict() for b in record_batches([path], ["provider", "event", "level"])]
    assert some == [{k: d[k] for k in ("provider", "event", "level")} for d in full]


def test_the_fields_column_is_the_typed_fields_json():
    """The fields column, rendered in C from the records (EventHeader and tracefs
    events), is ``ehtool.values.typed_json`` of each event's typed fields, on every
    recording here and the reference one (its malformed events too)."""
    import ehtool
    from ehtool.analysis.arrow import record_batches
    from ehtool.values.typed_json import json_value
    from recordings import every_recording

    paths = [str(p) for p in every_recording()]
    rows = 0
    for path in paths:
        try:
            with ehtool.open(path, on_error=lambda err: None) as events:
                want = [json_value(ev.fields.to_dict()) for ev in events]
        except ehtool.InputError:
            continue  # (cut on purpose: its rows are those before the cut, compared below)
        got = [v for b in record_batches([path], ["fields"], on_error=lambda err: None)
               for v in b.column("fields").to_pylist()]
        assert got == want, path
        rows += len(got)
    assert rows > 300


@pytest.mark.parametrize("name", ["examples/sched.data", "tests/data/sched-612.data",
                                  "examples/eventheader.data", "tests/data/sched-pipe.data",
                                  "tests/data/sched-z.data"])
def test_parts_are_the_file_in_order(name):
    """part=(k, n) for k in 0..n-1 gives every row once, in order, thread names included
    (the walk to a part applies the COMM/FORK records before it)."""
    from ehtool.analysis.arrow import record_batches

    path = str(REPO / name)
    whole = [r for b in record_batches([path]) for r in b.to_pylist()]
    assert whole
    for n in (1, 2, 3, 5):
        parts = [[r for b in record_batches([path], None, (k, n)) for r in b.to_pylist()]
                 for k in range(n)]
        assert sum(parts, []) == whole, n


def test_a_big_file_is_split_into_partitions(tmp_path):
    from ehtool.analysis.arrow import record_batches
    from ehtool.analysis.parallel import partitions
    from ehtool.perfdata.writer import replay_samples
    from golden import golden_path

    path = tmp_path / "mix.data"
    replay_samples(str(golden_path("linuxtracepoints/perf.data")), str(path), 20000,
                   attr_size=128)
    specs = partitions([str(path), str(REPO / "tests" / "data" / "sched-pipe.data")], 1 << 20)
    n = len(specs) - 1
    assert n == -(-path.stat().st_size // (1 << 20)) and n > 1
    assert specs[-1] == (str(REPO / "tests" / "data" / "sched-pipe.data"), None)
    sizes = [sum(b.num_rows for b in record_batches([p], ["cpu"], part)) for p, part in specs]
    assert sum(sizes[:-1]) == 20000 and min(sizes[:-1]) > 0


def _decoded(path: Path, name: str) -> dict:
    """The first event ``name`` of ``path`` as ``ehtool decode --format jsonl`` shows it."""
    import json
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "ehtool", "decode", "--format", "jsonl",
                           "--no-field-tags", str(path)], capture_output=True, cwd=REPO)
    return next(e for e in map(json.loads, done.stdout.splitlines()) if e["n"] == name)


def test_nan_and_infinities_in_fields_are_decodes_strings_not_null():
    import json

    from ehtool.analysis.arrow import record_batches
    from ehtool.values.typed_json import json_value
    from golden import golden_path

    path = golden_path("linuxtracepoints/perf.data")
    rows = [r for b in record_batches([str(path)], ["provider", "event", "fields"])
            for r in b.to_pylist() if (r["provider"], r["event"]) == ("TestProviderC", "f64")]
    event = _decoded(path, "TestProviderC:f64")
    assert json.loads(rows[0]["fields"]) == {k: v for k, v in event.items()
                                             if k not in ("n", "meta")}
    assert event["NaN"] == "-nan" and event["-Inf"] == "-inf"
    assert json.loads(json_value({"a": [float("nan"), float("inf"), 1.5, None]})) == {
        "a": ["nan", "inf", 1.5, None]}


@pytest.fixture
def lone_surrogate(tmp_path) -> Path:
    """The reference recording with the first UTF-16 'hjkl' as a lone U+D800, then 'jkl'."""
    from golden import golden_path

    data = bytearray(golden_path("linuxtracepoints/perf.data").read_bytes())
    at = data.find("hjkl".encode("utf-16-le"))
    data[at:at + 2] = b"\x00\xd8"
    path = tmp_path / "surrogate.data"
    path.write_bytes(bytes(data))
    return path


def test_a_lone_surrogate_is_stored_as_decodes_json_escape(lone_surrogate, tmp_path):
    """Arrow strings are UTF-8: a lone surrogate becomes the text decode's JSON writes
    (``\\ud800``), in the fields JSON, the query and the typed columns; no crash."""
    import subprocess
    import sys

    pq = pytest.importorskip("pyarrow.parquet")
    pytest.importorskip("duckdb")
    from ehtool.values.typed_json import json_value

    assert json_value({"s\ud800": "\udfffx"}) == '{"s\\\\ud800":"\\\\udfffx"}'
    name = next(k for k, v in _decoded(lone_surrogate, "TestProviderC:Default").items()
                if v == "\ud800jkl")  # (json.loads reads decode's escape back)

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "ehtool", *args], capture_output=True,
                              text=True, cwd=REPO)

    out = tmp_path / "out.parquet"
    done = run("decode", "--format", "parquet", "-o", str(out), str(lone_surrogate))
    assert done.returncode == 0, done.stderr
    assert pq.read_table(out).num_rows == 539
    done = run("query", "--format", "csv", f"select fields->>'{name}' from events where "
               "event = 'Default' and provider = 'TestProviderC'", str(lone_surrogate))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[1] == '"\\ud800jkl"'
    done = run("decode", "--format", "parquet", "--split-by-event", str(tmp_path / "d"),
               str(lone_surrogate))
    assert done.returncode == 0, done.stderr
    table = pq.read_table(tmp_path / "d" / "TestProviderC:Default" / "part-0.parquet")
    assert table.column(name).to_pylist() == ["\\ud800jkl"]
