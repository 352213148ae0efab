"""Inputs that are not plain paths to regular files: standard input redirected from a
file (``- < perf.data``) is read as that file, file mode included (it was refused as
"cannot be read from a pipe"); a FIFO or ``<(...)`` path is read as a stream, opened
once (pipe mode was "empty file", or "no PERFILE2 magic" once a first look had taken
its header)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FILE_MODE = REPO / "examples" / "sched.data"
PIPE_MODE = REPO / "tests" / "data" / "sched-pipe.data"


def _events(stdout: bytes) -> int:
    return len(stdout.splitlines())


def _expected(path: Path) -> bytes:
    done = subprocess.run([sys.executable, "-m", "ehtool", "decode", "--format", "jsonl",
                           "--meta", "-file", str(path)], capture_output=True, check=True)
    return done.stdout


def test_standard_input_from_a_file_mode_file():
    with open(FILE_MODE, "rb") as stdin:
        done = subprocess.run([sys.executable, "-m", "ehtool", "decode", "--format", "jsonl",
                               "--meta", "-file", "-"], stdin=stdin, capture_output=True,
                              check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout == _expected(FILE_MODE)


def _through_a_fifo(tmp_path: Path, source: Path, args: list[str]) -> subprocess.CompletedProcess:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    writer = subprocess.Popen(["sh", "-c", f"cat '{source}' > '{fifo}'"])
    try:
        return subprocess.run([sys.executable, "-m", "ehtool",
                               *[str(fifo) if a == "FIFO" else a for a in args]],
                              capture_output=True, check=False, timeout=60, cwd=tmp_path)
    finally:
        writer.kill()
        writer.wait()


def test_a_fifo_of_pipe_mode_data(tmp_path):
    done = _through_a_fifo(tmp_path, PIPE_MODE, ["decode", "--format", "jsonl", "--meta",
                                                 "-file", "FIFO"])
    assert done.returncode == 0, done.stderr
    assert done.stdout == _expected(PIPE_MODE)


@pytest.mark.parametrize("split", [False, True])
def test_a_fifo_to_parquet(tmp_path, split):
    pq = pytest.importorskip("pyarrow.parquet")
    out = ["--split-by-event", "by"] if split else ["-o", "out.parquet"]
    done = _through_a_fifo(tmp_path, PIPE_MODE, ["decode", "--format", "parquet", *out,
                                                 "FIFO"])
    assert done.returncode == 0, done.stderr
    paths = sorted(tmp_path.glob("by/*/*.parquet")) if split else [tmp_path / "out.parquet"]
    rows = sum(pq.read_table(p).num_rows for p in paths)
    assert rows == _events(_expected(PIPE_MODE))


def test_a_fifo_of_file_mode_data_says_to_pass_the_file(tmp_path):
    done = _through_a_fifo(tmp_path, FILE_MODE, ["decode", "FIFO"])
    assert done.returncode == 1
    assert b"file-mode perf.data (header size 104) cannot be read from a pipe; pass the " \
           b"file path instead" in done.stderr
    json.loads(done.stdout)  # (still a document)


@pytest.mark.parametrize("jobs", ["1", "4"])
def test_a_closed_standard_input_is_an_input_error(jobs):
    """``- <&-``: 'internal error: AttributeError', and the inputs after it were lost."""
    done = subprocess.run([sys.executable, "-m", "ehtool", "decode", "-j", jobs, "--format",
                           "jsonl", str(FILE_MODE), "-", str(REPO / "examples" /
                                                             "eventheader.data")],
                          capture_output=True, check=False, stdin=subprocess.DEVNULL,
                          preexec_fn=lambda: os.close(0))
    assert done.returncode == 1
    assert done.stderr == b"ehtool: error: stdin: cannot open: standard input is closed\n"
    assert _events(done.stdout) == _events(_expected(FILE_MODE)) + 3


def test_standard_input_twice_is_a_usage_error():
    """As in query: the second '-' found standard input read ('no PERFILE2 magic')."""
    with open(PIPE_MODE, "rb") as stdin:
        done = subprocess.run([sys.executable, "-m", "ehtool", "decode", "-", "-"],
                              stdin=stdin, capture_output=True, check=False)
    assert (done.returncode, done.stdout) == (2, b"")
    assert b"standard input ('-') can be read once" in done.stderr
