"""A value that its Arrow column cannot hold (a corrupt sample time past 2262, beyond
int64 nanoseconds) is null, with an input problem naming the input and the sample's
offset, the same with one process and several; it was an internal error
(OverflowError) that lost every row."""

from __future__ import annotations

import re
import struct
import subprocess
import sys
from pathlib import Path

import pytest

pq = pytest.importorskip("pyarrow.parquet")

REPO = Path(__file__).resolve().parents[2]
HUGE = 18374732996475334163  # (from a recording with flipped bytes)


def _with_a_huge_time(path: Path) -> int:
    """examples/eventheader.data with its second sample's time set to HUGE; the offset."""
    from ehtool.perfdata.reader import PerfDataFile

    data = bytearray((REPO / "examples" / "eventheader.data").read_bytes())
    with PerfDataFile.open(REPO / "examples" / "eventheader.data") as f:
        sample = list(f.samples("file"))[1]
        endian = f.grammar.endian
    at = data.index(struct.pack(endian + "Q", sample.time), sample.offset)
    data[at:at + 8] = struct.pack(endian + "Q", HUGE)
    path.write_bytes(bytes(data))
    return sample.offset


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_time_past_int64_is_null_and_a_problem(tmp_path, jobs):
    bad = tmp_path / "huge.data"
    offset = _with_a_huge_time(bad)
    out = tmp_path / "out.parquet"
    done = subprocess.run([sys.executable, "-m", "ehtool", "decode", "--format", "parquet",
                           "-j", jobs, "-o", str(out), str(bad), str(bad)],
                          capture_output=True, cwd=REPO, check=False)
    assert done.returncode == 1, done.stderr
    [line] = done.stderr.decode().splitlines()  # the same problem of both copies once
    assert re.fullmatch(
        rf"ehtool: error: {re.escape(str(bad))}: offset {offset:#x}: time \d+ does not fit "
        r"its column \(timestamp\[ns, tz=UTC\]\): null \(and 1 more problems\)", line)
    # (the one more: session_time's)
    table = pq.read_table(out)
    assert table.num_rows == 2 * 3
    assert table.column("session_time").to_pylist()[2::3] == [None, None]  # (time order)
    assert table.column("time").null_count == 2
    assert table.column("session_time").null_count == 2
    query = subprocess.run([sys.executable, "-m", "ehtool", "query", "-j", jobs,
                            "select count(*), count(session_time) from events", str(bad)],
                           capture_output=True, cwd=REPO, check=False)
    assert (query.returncode, query.stdout) == (1, b'"count_star()","count(session_time)"\n3,2\n')


def test_split_by_event_too(tmp_path):
    duckdb = pytest.importorskip("duckdb")
    bad = tmp_path / "huge.data"
    offset = _with_a_huge_time(bad)
    done = subprocess.run([sys.executable, "-m", "ehtool", "decode", "--format", "parquet",
                           "--split-by-event", str(tmp_path / "by"), str(bad),
                           str(REPO / "examples" / "sched.data")],
                          capture_output=True, cwd=REPO, check=False)
    assert done.returncode == 1, done.stderr
    assert f"{bad}: offset {offset:#x}: time " in done.stderr.decode()
    rows = duckdb.sql(f"select count(*), count(session_time), count(time) from read_parquet("
                      f"'{tmp_path}/by/*/*.parquet', union_by_name = true) where file = "
                      f"'{bad}'").fetchall()
    assert rows == [(3, 2, 2)]
