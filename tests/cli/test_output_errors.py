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
