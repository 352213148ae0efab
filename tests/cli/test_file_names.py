"""A file name that is not UTF-8 is named the same way by every output."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def test_a_file_name_that_is_not_utf8_is_shown_alike_everywhere(tmp_path):
    """decode's JSON and query's column wrote 'okÿname.data' (its byte 0xff as Latin-1,
    as invalid UTF-8 is shown everywhere), ``info --json`` wrote a lone surrogate
    ('ok\\udcffname.data') and --split-by-event's column its escape: one name now."""
    pytest.importorskip("pyarrow")
    pytest.importorskip("duckdb")
    import pyarrow.parquet as pq

    name = os.fsdecode(b"ok\xffname.data")
    (tmp_path / name).write_bytes((REPO / "examples" / "eventheader.data").read_bytes())

    def ehtool(*args: str) -> bytes:
        done = subprocess.run([sys.executable, "-m", "ehtool", *args], cwd=tmp_path,
                              capture_output=True, check=False,
                              env={**os.environ, "PYTHONPATH": str(REPO)})
        assert done.returncode == 0, done.stderr
        return done.stdout

    shown = "ok\u00ffname.data"
    assert list(json.loads(ehtool("decode", name))) == [shown]
    lines = ehtool("decode", "--format", "jsonl", "--meta", "+file", name).splitlines()
    assert {json.loads(line)["meta"]["file"] for line in lines} == {shown}
    assert json.loads(ehtool("info", "--json", name))["file"] == shown
    ehtool("decode", "--format", "parquet", "-o", "out.parquet", name)
    assert set(pq.read_table(tmp_path / "out.parquet").column("file").to_pylist()) == {shown}
    ehtool("decode", "--format", "parquet", "--split-by-event", "by", name)
    for part in (tmp_path / "by").glob("*/*.parquet"):
        assert set(pq.read_table(part).column("file").to_pylist()) == {shown}
    got = ehtool("query", "--format", "jsonl", "select distinct file from events", name)
    assert [json.loads(line)["file"] for line in got.splitlines()] == [shown]


def test_a_line_break_in_a_file_name_keeps_the_error_one_line(tmp_path):
    """The JSON key escapes the name (``"bad\\nname.data"``); the error printed it raw,
    on two lines (found by an outside robustness run)."""
    import subprocess
    import sys

    bad = tmp_path / "bad\nname.data"
    bad.write_bytes(b"x")
    missing = tmp_path / "no\x1bsuch.data"
    done = subprocess.run([sys.executable, "-m", "ehtool", "decode", str(bad), str(missing)],
                          capture_output=True, text=True)
    assert done.returncode == 1
    lines = done.stderr.splitlines()
    assert len(lines) == 2, lines
    assert lines[0].startswith(f"ehtool: error: {tmp_path}/bad\\nname.data: offset 0x0: ")
    assert lines[1].startswith(f"ehtool: error: {tmp_path}/no\\x1bsuch.data: cannot open")
