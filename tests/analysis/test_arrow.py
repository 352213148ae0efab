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
