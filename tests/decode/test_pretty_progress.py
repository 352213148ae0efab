"""``--pretty`` keeps every key, value and duplicate; the progress bar shows on a
terminal only, with the bytes read of the total."""

from __future__ import annotations

import io
import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

from ehtool.cli.progress import ProgressBar
from ehtool.decode import pipeline as decode_module
from ehtool.decode.pipeline import DecodeOptions, decode_to
from ehtool.render.pretty import indent_json
from golden import golden_path

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def pairs(data: bytes):
    return json.loads(data, object_pairs_hook=lambda p: p)


def run(*args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ehtool", *args], capture_output=True, **kw)


@pytest.mark.parametrize("path", [EXAMPLES / "eventheader.data", EXAMPLES / "sched.data",
                                  "golden"])
def test_pretty_is_the_same_document(path):
    path = str(golden_path("linuxtracepoints/perf.data") if path == "golden" else path)
    plain, pretty = run("decode", path), run("decode", "--pretty", path)
    assert plain.returncode == pretty.returncode == 0
    assert pairs(pretty.stdout) == pairs(plain.stdout)  # duplicate keys and order too
    lines = pretty.stdout.decode().splitlines()
    assert lines[0] == "{" and lines[1].startswith('  "') and lines[-1] == "}"
    assert lines[2] == "    {" and lines[3].startswith('      "n": ')
    # one member per line: no line holds two keys
    assert all(line.count('": ') <= 1 for line in lines if '"n"' not in line)


def test_indent_keeps_string_contents_and_empty_containers():
    text = rb'{"a{,": "x:[\",]\\", "e": {}, "l": [ ], "n": [1, -2.5e3, true, null]}'
    out = indent_json(text)
    assert pairs(out) == pairs(text)
    assert b'"a{,": "x:[\\",]\\\\"' in out and b'"e": {}' in out and b'"l": []' in out
    assert out.splitlines()[-2:] == [b"  ]", b"}"]


def test_pretty_with_jsonl_is_a_usage_error():
    done = run("decode", "--pretty", "--format", "jsonl", str(EXAMPLES / "sched.data"))
    assert done.returncode == 2 and b"--pretty" in done.stderr and done.stdout == b""


def test_pretty_with_compact_is_a_usage_error():
    """--pretty won in silence."""
    done = run("decode", "--pretty", "--compact", str(EXAMPLES / "sched.data"))
    assert done.returncode == 2 and done.stdout == b""
    assert b"--compact and --pretty" in done.stderr


def test_progress_reports_bytes_read_of_total(monkeypatch):
    monkeypatch.setattr(decode_module, "_BATCH", 8)
    path = EXAMPLES / "sched.data"
    size = path.stat().st_size
    calls: list[tuple[int, int]] = []
    out = io.BytesIO()
    assert decode_to(out, [str(path), str(path)],
                     DecodeOptions(jobs=1, progress=lambda d, t: calls.append((d, t)))) == []
    assert len(calls) > 4
    assert all(t == 2 * size for _, t in calls)
    done = [d for d, _ in calls]
    assert done == sorted(done) and done[-1] == 2 * size
    assert size in done  # the first file's end
    calls.clear()  # side by side: the first file as this process decodes it (batch by
    # batch, as with -j 1), the second as the worker's part is written
    decode_to(io.BytesIO(), [str(path), str(path)],
              DecodeOptions(jobs=2, progress=lambda d, t: calls.append((d, t))))
    done = [d for d, _ in calls]
    assert done == sorted(done) and size in done and calls[-2:] == [(size, 2 * size),
                                                                     (2 * size, 2 * size)]
    assert all(t == 2 * size for _, t in calls)


def test_progress_total_unknown_on_a_pipe():
    calls: list[tuple[int, int]] = []
    with open(EXAMPLES / "sched.data", "rb") as f:
        stdin = sys.stdin
        sys.stdin = io.TextIOWrapper(io.BufferedReader(io.BytesIO(f.read())))
        try:
            decode_to(io.BytesIO(), ["-"],
                      DecodeOptions(progress=lambda d, t: calls.append((d, t))))
        finally:
            sys.stdin = stdin
    assert calls and all(t == 0 for _, t in calls)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_bar_waits_a_second_then_draws_and_erases():
    clock, err = Clock(), io.StringIO()
    bar = ProgressBar(err, "decoding", clock=clock)
    clock.now += 0.5
    bar(10, 100)
    assert err.getvalue() == ""  # a quick run stays silent
    clock.now += 0.6
    bar(50 << 20, 100 << 20)
    drawn = err.getvalue()
    assert drawn.startswith("\rdecoding [" + "#" * 12 + "-" * 12 + "]  50%")
    assert "50.0 MB of 100.0 MB" in drawn and "MB/s" in drawn
    bar(60 << 20, 100 << 20)  # within 0.1 s: not redrawn
    assert err.getvalue() == drawn
    clock.now += 0.2
    bar(3 << 10, 0)
    assert err.getvalue()[len(drawn):].startswith("\rdecoding 3.0 KB read")
    bar.close()
    assert err.getvalue().endswith("\r\x1b[K")


def test_bar_never_drawn_is_not_erased():
    err = io.StringIO()
    ProgressBar(err, clock=Clock()).close()
    assert err.getvalue() == ""


def _decode_on_a_terminal(*args: str) -> tuple[bytes, bytes]:
    """Run ``ehtool decode ARGS`` with stderr on a pseudo-terminal and no delay
    before the bar; return (stdout, what the terminal received)."""
    code = ("import sys, ehtool.cli.progress as p; p._DELAY = p._INTERVAL = 0; "
            "import ehtool.decode.pipeline as d; d._BATCH = 4; "
            "from ehtool.cli import main; main(sys.argv[1:])")
    master, slave = pty.openpty()
    try:
        proc = subprocess.Popen([sys.executable, "-c", code, "decode", *args],
                                stdout=subprocess.PIPE, stderr=slave)
        os.close(slave)
        terminal = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            terminal += chunk
        stdout = proc.stdout.read()
        assert proc.wait(60) == 0
    finally:
        os.close(master)
    return stdout, terminal


def test_cli_draws_the_bar_on_a_terminal_only():
    path = str(EXAMPLES / "sched.data")
    stdout, terminal = _decode_on_a_terminal(path)
    assert pairs(stdout)[0][0] == path  # stdout is untouched JSON
    assert b"\rdecoding [" in terminal and b"%" in terminal
    assert terminal.endswith(b"\r\x1b[K")
    _, quiet = _decode_on_a_terminal("--quiet", path)
    assert quiet == b""
    piped = run("decode", path)  # stderr is a pipe
    assert piped.stderr == b""
