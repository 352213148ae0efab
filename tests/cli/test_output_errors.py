"""A full output (``> /dev/full``) is one line, "cannot write output: ...", and exit 1 in
every command, however the command writes (click.echo, print, its own buffer, the
buffer left at exit)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCHED = str(REPO / "examples" / "sched.data")

COMMANDS = [
    ["--help"],
    ["decode", "--help"],
    ["info", SCHED],
    ["decode", SCHED],
    ["decode", "--format", "jsonl", SCHED],
    ["decode", "--format", "text", SCHED],
    ["decode", "-o", "/dev/full", SCHED],
    ["write", "--dry-run", "MyProvider", "MyEvent", "n:u32=7"],
    ["write", "--dry-run", "--decode", "MyProvider", "MyEvent", "n:u32=7"],
]


@pytest.mark.parametrize("args", COMMANDS, ids=" ".join)
def test_a_full_output_is_one_line_and_exit_1(args):
    with open("/dev/full", "wb") as full:
        done = subprocess.run([sys.executable, "-m", "ehtool", *args], stdout=full,
                              stderr=subprocess.PIPE, text=True, cwd=REPO)
    assert done.returncode == 1, done.stderr
    assert done.stderr == "ehtool: error: cannot write output: No space left on device\n"


@pytest.mark.parametrize("args", [["query", "select count(*) from events", SCHED],
                                  ["query", "--format", "csv", "select 1", SCHED]], ids=" ".join)
def test_a_full_output_of_query_is_one_line_and_exit_1(args):
    pytest.importorskip("duckdb")
    test_a_full_output_is_one_line_and_exit_1(args)


@pytest.mark.parametrize("args", [
    ["decode", "/nonexistent.data"],
    ["decode", "-j", "2", "/nonexistent.data", SCHED],
    ["info", "/nonexistent.data"],
    ["decode", "--format", "jsonl", SCHED],
], ids=" ".join)
def test_a_standard_error_nobody_reads_changes_no_exit_status(args):
    """stderr a pipe whose reader is gone (a dead logger, ``2> >(cmd)`` that exited):
    its BrokenPipeError passed for stdout's reader going away, and a failed command
    exited 0."""
    import os

    want = subprocess.run([sys.executable, "-m", "ehtool", *args], capture_output=True)
    r, w = os.pipe()
    os.close(r)
    try:
        got = subprocess.run([sys.executable, "-m", "ehtool", *args], stdout=subprocess.PIPE,
                             stderr=w)
    finally:
        os.close(w)
    assert (got.returncode, got.stdout) == (want.returncode, want.stdout)
    assert want.returncode == (0 if args[-1] == SCHED and "-j" not in args else 1)
