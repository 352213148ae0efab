"""``ehtool decode --fields-key KEY``: each event's fields nested under KEY, so that a
field named like an event key (``n``, ``meta``) cannot collide with it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from golden import golden_path

REPO = Path(__file__).resolve().parents[2]


def pairs(text: str):
    return json.loads(text, object_pairs_hook=lambda items: [list(i) for i in items])


def lines(*args: str) -> list:
    run = subprocess.run([sys.executable, "-m", "ehtool", "decode", "--format", "jsonl", *args],
                         capture_output=True, text=True, cwd=REPO)
    assert run.returncode == 0, run.stderr
    return [pairs(line) for line in run.stdout.splitlines()]


@pytest.mark.parametrize("args", [
    ["examples/eventheader.data"], ["examples/sched.data", "--nonsample"],
    ["--meta", "all", "golden"], ["--compact", "golden"],
    ["--input-format", "dat", "golden-dat"]])
def test_fields_nested_and_unchanged(args):
    args = [str(golden_path("linuxtracepoints/perf.data")) if a == "golden" else
            str(golden_path("linuxtracepoints/EventHeaderInterceptorLE64.dat"))
            if a == "golden-dat" else a for a in args]
    flat, nested = lines(*args), lines("--fields-key", "fields", *args)
    assert len(flat) == len(nested) >= 3
    for a, b in zip(flat, nested, strict=True):
        assert [k for k, _ in b] == ["n", "fields", "meta"]
        assert b[0] == a[0] and b[2] == a[-1]
        assert b[1][1] == a[1:-1]  # every field, duplicates and order kept


def test_a_field_named_n_no_longer_collides(tmp_path):
    dat = subprocess.run([sys.executable, "-m", "ehtool", "write", "--dry-run", "--decode",
                          "P", "E", "n:u32=7", "meta=x"], capture_output=True, text=True)
    flat = pairs(dat.stdout)
    assert [k for k, _ in flat] == ["n", "n", "meta", "meta"]  # what perf-decode prints
    from ehtool.render.dat import EventObjects
    from ehtool.render.style import SPACED

    tracepoint, data = subprocess.run(
        [sys.executable, "-m", "ehtool", "write", "--dry-run", "P", "E", "n:u32=7", "meta=x"],
        capture_output=True, text=True).stdout.split()
    nested = json.loads(EventObjects(SPACED, "fields").event(tracepoint, bytes.fromhex(data)))
    assert nested == {"n": "P:E", "fields": {"n": 7, "meta": "x"},
                      "meta": {"level": 5, "keyword": "0x1"}}


@pytest.mark.parametrize("key", ["n", "meta"])
def test_keys_of_every_event_are_refused(key):
    run = subprocess.run([sys.executable, "-m", "ehtool", "decode", "--fields-key", key,
                          "examples/sched.data"], capture_output=True, text=True, cwd=REPO)
    assert run.returncode == 2 and "--fields-key" in run.stderr
