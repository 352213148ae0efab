"""An empty path (``-o ''``, a variable that was never set) is a usage error (exit 2)
naming the option: ``decode -o ''`` wrote to standard output, ``--format parquet -o ''``
ended in an internal error, ``--split-by-event ''`` tried the current directory."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCHED = str(REPO / "examples" / "sched.data")


@pytest.mark.parametrize(("args", "named"), [
    (["decode", "-o", "", SCHED], "'-o' / '--output'"),
    (["decode", "--format", "parquet", "-o", "", SCHED], "'-o' / '--output'"),
    (["decode", "--format", "parquet", "--split-by-event", "", SCHED], "'--split-by-event'"),
    (["decode", ""], "'[FILE]...'"),
    (["info", ""], "'[FILE]...'"),
    (["record", "-o", "", "MyProvider_L5K1"], "'-o' / '--output'"),
    (["register", "-i", "", "MyProvider_L5K1"], "'-i' / '--input'"),
])
def test_an_empty_path_is_a_usage_error(args, named, tmp_path):
    done = subprocess.run([sys.executable, "-m", "ehtool", *args], capture_output=True,
                          text=True, cwd=tmp_path, check=False)
    assert (done.returncode, done.stdout) == (2, "")
    assert f"Invalid value for {named}: an empty path" in done.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("out_format", ["json", "jsonl", "text", "parquet"])
@pytest.mark.parametrize("output", [[], ["-o", "-"]])
def test_a_closed_standard_output_is_a_usage_error(out_format, output):
    """``>&-``: --format parquet (and -o - in every format) ended in an internal error."""
    done = subprocess.run([sys.executable, "-m", "ehtool", "decode", "--format", out_format,
                           *output, SCHED], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True, cwd=REPO, check=False,
                          preexec_fn=lambda: __import__("os").close(1))
    assert done.returncode == 2, done.stderr
    assert "standard output is closed; write to a file with -o FILE" in done.stderr
