"""``decode --format parquet`` (to one file, and ``--split-by-event``) with inputs that
fail: the rows of every event that decodes are written, as JSON Lines writes them, and
each input's error is one line at the end (exit 1). They were lost: the row group under
way when an input error came (every row of a small input), and every input after it."""

from __future__ import annotations

import collections
import json
import subprocess
import sys
from pathlib import Path

import pytest

from golden import golden_path

pq = pytest.importorskip("pyarrow.parquet")
duckdb = pytest.importorskip("duckdb")

REPO = Path(__file__).resolve().parents[2]


def ehtool(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ehtool", *args], capture_output=True,
                          cwd=REPO, check=False)


@pytest.fixture
def inputs(tmp_path: Path) -> list[str]:
    """A good input, one cut mid-record (218 events decode), a missing one, an empty
    one, another good one."""
    golden = golden_path("linuxtracepoints/perf.data").read_bytes()
    (tmp_path / "cut.data").write_bytes(golden[:100000])
    (tmp_path / "empty.data").write_bytes(b"")
    return [str(REPO / "examples" / "sched.data"), str(tmp_path / "cut.data"),
            str(tmp_path / "missing.data"), str(tmp_path / "empty.data"),
            str(REPO / "examples" / "eventheader.data")]


def _counts_in_jsonl(inputs: list[str]) -> tuple[collections.Counter, list[bytes]]:
    done = ehtool("decode", "--format", "jsonl", *inputs)
    assert done.returncode == 1
    counts = collections.Counter(json.loads(line)["meta"]["file"]
                                 for line in done.stdout.splitlines())
    return counts, done.stderr.splitlines()


@pytest.mark.parametrize("jobs", ["1", "2", "4"])
def test_parquet_keeps_the_rows_of_every_input_that_decodes(inputs, tmp_path, jobs):
    expected, errors = _counts_in_jsonl(inputs)
    assert set(expected) == {inputs[0], inputs[1], inputs[4]}
    out = tmp_path / "out.parquet"
    done = ehtool("decode", "--format", "parquet", "-j", jobs, "-o", str(out), *inputs)
    assert done.returncode == 1
    assert done.stderr.splitlines() == errors  # one line per input, in their order
    table = pq.read_table(out)
    assert collections.Counter(table.column("file").to_pylist()) == expected
    assert table.column("file").to_pylist() == sorted(
        table.column("file").to_pylist(), key=inputs.index)  # in argument order
    piped = ehtool("decode", "--format", "parquet", "-j", jobs, "-o", "-", *inputs)
    assert piped.returncode == 1
    assert piped.stdout == out.read_bytes()


def test_split_by_event_goes_on_after_an_input_that_fails(inputs, tmp_path):
    expected, errors = _counts_in_jsonl(inputs)
    done = ehtool("decode", "--format", "parquet", "--split-by-event", str(tmp_path / "by"),
                  *inputs)
    assert done.returncode == 1
    assert done.stderr.splitlines()[1:] == errors  # (after the summary line)
    rows = duckdb.sql(f"select file, count(*) from read_parquet('{tmp_path}/by/*/*.parquet',"
                      " union_by_name = true) group by all").fetchall()
    assert dict(rows) == expected
