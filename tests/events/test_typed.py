"""The typed event layer (``ehtool.open``) gives the values the JSON shows, for every
event and field of the reference recording (which uses every EventHeader type) and of
the project's own recordings."""

from __future__ import annotations

import datetime as dt
import ipaddress
import json
import math
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

import ehtool
from ehtool.eventheader.decoder import Fields
from ehtool.values.times import format_utc_seconds
from golden import golden_path

ROOT = Path(__file__).resolve().parents[2]


def _json_events(path: Path) -> list[dict]:
    run = subprocess.run([sys.executable, "-m", "ehtool", "decode", "--format", "jsonl",
                          "--no-field-tags", "--sort", "file", "--meta", "all,-common", str(path)],
                         capture_output=True, check=True)
    return [json.loads(line, object_pairs_hook=list) for line in run.stdout.splitlines()]


def _same(typed: object, shown: object) -> bool:
    """Whether a typed value is the value the JSON text shows."""
    if isinstance(typed, Fields):
        return isinstance(shown, list) and len(typed) == len(shown) and all(
            n == m and _same(a, b) for (n, a), (m, b) in zip(typed, shown, strict=True))
    if isinstance(typed, list):
        return isinstance(shown, list) and len(typed) == len(shown) and all(
            _same(a, b) for a, b in zip(typed, shown, strict=True))
    if isinstance(typed, bool):
        return shown is typed
    if isinstance(typed, int):
        if isinstance(shown, str):  # hex ("0x1F"), errno ("ENOENT(2)"), bool beyond 0/1
            if shown.startswith("0x"):
                return int(shown, 16) == typed
            # errno "ENOENT(2)"; a time beyond datetime's years stays int seconds
            return shown.endswith(f"({typed})") or shown == format_utc_seconds(typed)
        return shown == typed
    if isinstance(typed, float):
        if math.isnan(typed):
            return shown in ("nan", "-nan") or shown != shown
        if isinstance(shown, str):  # inf
            return str(typed) in shown or shown.replace("inf", "inf") == repr(typed)
        return math.isclose(typed, shown, rel_tol=1e-6)
    if isinstance(typed, dt.datetime):
        return shown == typed.strftime("%Y-%m-%dT%H:%M:%S")
    if isinstance(typed, uuid.UUID | ipaddress.IPv4Address | ipaddress.IPv6Address):
        return str(typed) == shown
    if isinstance(typed, bytes):
        return shown == " ".join(f"{b:02x}" for b in typed)
    if isinstance(typed, str):
        return shown == typed or "\ufffd" in shown or "\\u" in json.dumps(shown)
    return typed is None and shown is None


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
                assert _same(value, text), (ev.name, name, value, text)
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
