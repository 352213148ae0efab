"""The recordings the project ships decode to what was recorded."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def decode(name: str) -> list[list[tuple[str, object]]]:
    done = subprocess.run([sys.executable, "-m", "ehtool", "decode", str(EXAMPLES / name)],
                          capture_output=True, check=True)
    assert done.stderr == b""
    return json.loads(done.stdout, object_pairs_hook=lambda p: p)[0][1]


def test_eventheader_example():
    events = decode("eventheader.data")
    assert [e[0][1] for e in events] == ["MyProvider:Started", "MyProvider:Failed",
                                         "MyProvider:Request"]
    started, failed, request = events
    assert started[1] == ("version", "1.2") and started[3] == ("ports", [80, 443])
    assert failed[1:3] == [("errno", "ENOENT(2)"), ("path", "/etc/x.conf")]
    assert request[1:5] == [("url", "/index.html"), ("status", 200),
                            ("client", [("ip", "10.0.0.7"), ("port", 51234)]),
                            ("elapsed", 0.0125)]
    meta = dict(request[-1][1])
    assert meta["level"] == 4 and meta["keyword"] == "0x2" and meta["opcode"] == 1
    assert meta["activity"] == "6f1c1f5e-5b9e-4a1e-9a43-1d9f2b7c0a11"
    assert meta["time"].startswith("20") and meta["time"].endswith("Z")


def test_sched_example_matches_perf_script_count():
    events = decode("sched.data")
    assert events and {e[0][1] for e in events} <= {"sched:sched_switch", "sched:sched_wakeup"}
