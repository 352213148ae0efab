"""The Arrow rows: queries read only the columns they name."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("pyarrow")
REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(("sql", "columns"), [
    ("select count(*) from events", ["cpu"]),
    ("select * from events", None),
    ("select e.* from events e", None),
    ("select provider, event, count(*) from events group by all", ["provider", "event"]),
    ("select fields->>'url' from events where level <= 2", ["level", "fields"]),
])
def test_queries_read_only_the_columns_they_name(sql, columns):
    from ehtool.analysis.arrow import columns_for

    assert columns_for(sql) == columns


def test_projected_reader_agrees_with_the_full_one():
    """Without the fields column no field is decoded, and nothing else changes."""
    from ehtool.analysis.arrow import record_batches

    path = str(REPO / "examples" / "eventheader.data")
    full = [b.to_pydict() for b in record_batches([path])]
    some = [b.to_pydict() for b in record_batches([path], ["provider", "event", "level"])]
    assert some == [{k: d[k] for k in ("provider", "event", "level")} for d in full]


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
