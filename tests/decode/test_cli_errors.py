"""ehtool decode on bad input: one-line errors, documented exit codes, valid JSON."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "examples" / "sched.data"


def run(*args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ehtool", "decode", *args],
                          capture_output=True, **kw)


def test_missing_file_is_exit_1_with_valid_json(tmp_path):
    done = run(str(tmp_path / "nope.data"))
    assert done.returncode == 1
    assert json.loads(done.stdout) == {str(tmp_path / "nope.data"): []}
    err = done.stderr.decode()
    assert err.count("\n") == 1 and "nope.data" in err and "Traceback" not in err


def test_not_a_perf_file(tmp_path):
    bad = tmp_path / "bad.data"
    bad.write_bytes(b"hello world, not perf data" * 10)
    done = run(str(bad))
    assert done.returncode == 1 and b"bad.data" in done.stderr
    json.loads(done.stdout)


def test_truncated_file_keeps_complete_records(tmp_path):
    data = SAMPLE.read_bytes()
    full = json.loads(run(str(SAMPLE)).stdout)[str(SAMPLE)]
    cut = tmp_path / "cut.data"
    cut.write_bytes(data[: len(data) * 2 // 3])
    done = run("--sort", "file", str(cut))
    events = json.loads(done.stdout)[str(cut)]
    assert done.returncode == 1 and b"offset" in done.stderr
    assert 0 < len(events) < len(full)


def test_output_file_is_atomic(tmp_path):
    out = tmp_path / "out.json"
    out.write_text("previous")
    done = run("-o", str(out), str(SAMPLE))
    assert done.returncode == 0 and done.stdout == b""
    assert json.loads(out.read_text())[str(SAMPLE)]
    # an input that fails entirely: the document is still complete and valid
    done = run("-o", str(out), str(tmp_path / "missing.data"))
    assert done.returncode == 1
    assert json.loads(out.read_text()) == {str(tmp_path / "missing.data"): []}
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".ehtool-")] == []


def test_usage_errors_exit_2():
    assert run().returncode == 2
    assert run("--sort", "bogus", str(SAMPLE)).returncode == 2
    done = run("--meta", "nonsense", str(SAMPLE))
    assert done.returncode == 2 and b"unknown meta key" in done.stderr


def test_pipe_mode_from_stdin():
    pipe = REPO / "tests" / "data" / "sched-pipe.data"
    if not pipe.exists():
        pytest.skip("no pipe-mode fixture")
    done = run("-", stdin=pipe.open("rb"))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["stdin"]


def test_several_inputs_and_jsonl(tmp_path):
    doc = json.loads(run(str(SAMPLE), str(SAMPLE)).stdout)
    assert list(doc) == [str(SAMPLE)]  # same key twice: the last wins in Python
    lines = run("--format", "jsonl", str(SAMPLE)).stdout.splitlines()
    events = [json.loads(line) for line in lines]
    assert events and all(e["n"].startswith("sched:") for e in events)
    assert all(e["meta"]["file"] == str(SAMPLE) and "time" in e["meta"] for e in events)


def test_bom_and_compact_framing():
    spaced = run("--bom", str(SAMPLE)).stdout
    assert spaced.startswith(b"\xef\xbb\xbf{\n\"") and b'\n  { "n": "sched:' in spaced
    compact = run("--compact", str(SAMPLE)).stdout
    assert b'\n {"n":"sched:' in compact
