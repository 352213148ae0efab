"""The typed event layer (``ehtool.open``) gives the values the JSON shows, for every
event and field of the reference recording (which uses every EventHeader type) and of
the project's own recordings."""

from __future__ import annotations

import ipaddress
import json
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

import ehtool
from ehtool.eventheader.decoder import Fields
from golden import golden_path
from shown import same

ROOT = Path(__file__).resolve().parents[2]


def _json_events(path: Path) -> list[dict]:
    run = subprocess.run([sys.executable, "-m", "ehtool", "decode", "--format", "jsonl",
                          "--no-field-tags", "--sort", "file", "--meta", "all,-common", str(path)],
                         capture_output=True, check=True)
    return [json.loads(line, object_pairs_hook=list) for line in run.stdout.splitlines()]


def _check(path: Path) -> int:
    shown_events = _json_events(path)
    with ehtool.open(path, order="file") as events:
        typed_events = list(events)
    assert len(typed_events) == len(shown_events)
    checked = 0
    for ev, shown in zip(typed_events, shown_events, strict=True):
        members = dict(shown)
        assert members["n"] == ev.name
        shown_fields = [(k, v) for k, v in shown if k not in ("n", "meta")]
        meta = dict(members["meta"])
        assert meta["cpu"] == ev.meta["cpu"] and meta["tid"] == ev.meta["tid"]
        if ev.eventheader:
            assert meta.get("level", 0) == ev.meta["level"]
            assert int(meta.get("keyword", "0x0"), 16) == ev.meta["keyword"]
            assert meta.get("opcode", 0) == ev.meta["opcode"]
            assert meta.get("activity") == (str(ev.meta["activity"])
                                            if ev.meta["activity"] else None)
            assert len(ev.fields) == len(shown_fields), ev
            for (name, value), (key, text) in zip(ev.fields, shown_fields, strict=True):
                assert name == key
                assert same(value, text), (ev.name, name, value, text)
                checked += 1
        else:
            assert ev.fields.names() == [k for k, _ in shown_fields]
    return checked


def test_reference_recording_every_field() -> None:
    # every field of every EventHeader event
    assert _check(golden_path("linuxtracepoints/perf.data")) >= 644


@pytest.mark.parametrize("name", ["examples/eventheader.data", "examples/sched.data"])
def test_project_recordings(name: str) -> None:
    _check(ROOT / name)


def test_readme_example() -> None:
    with ehtool.open(ROOT / "examples/eventheader.data") as events:
        request = [ev for ev in events if ev.event == "Request"][0]
    assert request.provider == "MyProvider" and request.meta["opcode"] == 1
    assert request.fields["status"] == 200
    assert request.fields["client"]["ip"] == ipaddress.IPv4Address("10.0.0.7")
    assert request.meta["activity"] == uuid.UUID("6f1c1f5e-5b9e-4a1e-9a43-1d9f2b7c0a11")
    assert request.fields.to_dict()["client"] == {"ip": ipaddress.IPv4Address("10.0.0.7"),
                                                  "port": 51234}


def test_fields_keep_duplicate_names() -> None:
    f = Fields([("a", 1), ("b", 2), ("a", 3)])
    assert f["a"] == 1 and f.getall("a") == [1, 3] and f[2] == ("a", 3)
    assert f.get("z") is None and f.names() == ["a", "b", "a"]
    with pytest.raises(KeyError):
        f["z"]
    # 'in' looks for a name, as a dict's (a pair among the pairs, as a tuple's)
    assert "a" in f and "z" not in f and ("b", 2) in f and ("b", 3) not in f
