"""``ehtool write --dry-run --decode``: the event as ``ehtool decode`` would show it."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys

import pytest


def ehtool(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ehtool", *args], input=stdin,
                          capture_output=True, text=True)


def pairs(line: str) -> list:
    return json.loads(line, object_pairs_hook=lambda items: [list(i) for i in items])


def test_fields_and_header_as_decode_shows_them():
    run = ehtool("write", "--dry-run", "--decode", "--level", "error", "--opcode", "start",
                 "MyProvider", "Ev", "n:u32=7", "xs:u8[]=1,2,3", "s=hello", "ip:ipv4=10.0.0.1")
    assert run.returncode == 0, run.stderr
    assert pairs(run.stdout) == [
        ["n", "MyProvider:Ev"], ["n", 7], ["xs", [1, 2, 3]], ["s", "hello"],
        ["ip", "10.0.0.1"], ["meta", [["level", 2], ["keyword", "0x1"], ["opcode", 1]]]]


def test_the_same_bytes_as_the_hex_dry_run():
    """--decode shows exactly the event --dry-run prints as hex (decoded by decode's
    own .dat path)."""
    from ehtool.render.dat import EventObjects
    from ehtool.render.style import SPACED

    args = ("MyProvider", "Ev", "a:i64=-5", "g:guid=6f1c1f5e-5b9e-4a1e-9a43-1d9f2b7c0a11",
            "t:bool=1", "pt:u16[2]=1,2")
    tracepoint, hexdata = ehtool("write", "--dry-run", *args).stdout.split()
    shown = ehtool("write", "--dry-run", "--decode", *args).stdout
    assert shown == EventObjects(SPACED).event(tracepoint, bytes.fromhex(hexdata)).decode() + "\n"


def test_batch_lines():
    lines = "".join(json.dumps({"provider": "P", "event": f"E{i}", "fields": [["v", "u8", i]]})
                    + "\n" for i in range(3))
    run = ehtool("write", "--batch", "--dry-run", "--decode", stdin=lines)
    assert run.returncode == 0, run.stderr
    assert [pairs(line)[:2] for line in run.stdout.splitlines()] == [
        [["n", f"P:E{i}"], ["v", i]] for i in range(3)]


def test_decode_needs_dry_run():
    run = ehtool("write", "--decode", "P", "E")
    assert run.returncode == 2 and "--dry-run" in run.stderr


@pytest.mark.parametrize("args", [["--dry-run", "P", "E", "n:u32=7"],
                                  ["--dry-run", "--decode", "P", "E"],
                                  ["--dry-run", "--batch"]])
def test_dry_run_with_stdout_closed_is_a_usage_error(args):
    """``ehtool write --dry-run ... >&-``: what it would write has nowhere to go (both the
    click-free path and the click command say so, exit 2, no internal error)."""
    done = subprocess.run(f"{sys.executable} -m ehtool write {shlex.join(args)} >&- <<< ''",
                          shell=True, executable="/bin/bash", stderr=subprocess.PIPE, text=True)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("ehtool: error: standard output is closed; --dry-run's")
