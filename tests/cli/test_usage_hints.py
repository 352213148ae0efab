"""A usage error that a command finds past click's own checks ends, as click's do, with
where to find help; an input that cannot be read is bad input (exit 1), not usage."""

from __future__ import annotations

import subprocess
import sys

import pytest


def ehtool(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ehtool", *args], capture_output=True,
                          text=True, stdin=subprocess.DEVNULL, timeout=60)


@pytest.mark.parametrize(("args", "command"), [
    (["register"], "register"),
    (["write", "--dry-run", "P", "E", "xs:u8[3]=1,2"], "write"),  # (the click-free path)
    (["write", "--dry-run", "--activity", "nope", "P", "E"], "write"),
    (["write", "--dry-run", "-v", "--", "P", "E", "n:u99=1"], "write"),
    (["record", "-o", "/nonexistent/dir/f.data", "MyProv_L5K1"], "record"),
    # options that would be ignored
    (["record", "--level", "3", ":sched:sched_switch"], "record"),
    (["record", "--decode-arg=--format=jsonl", ":sched:sched_switch"], "record"),
    (["register", "--keyword", "0x2", "MyProv_L5K1"], "register"),
])
def test_a_commands_usage_error_says_where_help_is(args, command):
    done = ehtool(*args)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("ehtool: error: ")
    assert done.stderr.endswith(f" (see 'ehtool {command} --help')\n"), done.stderr
    assert done.stderr.count("--help") == 1


@pytest.mark.parametrize("command", ["register", "record"])
def test_a_spec_file_that_cannot_be_read_is_bad_input(tmp_path, command):
    for path in (tmp_path / "missing.txt", tmp_path):
        done = ehtool(command, "-i", str(path))
        assert done.returncode == 1, done.stderr
        assert f"{path}: cannot read spec file" in done.stderr and "--help" not in done.stderr
