"""A big-endian recording decodes to the same JSON as its little-endian original.

The big-endian copies are what perf on a big-endian machine writes: header,
records, tracing data (endian byte 1) and every tracefs field of the RAW
payloads in big-endian order (``ehtool.perfdata.writer.transcode_file``).
EventHeader payloads keep their own byte order (their header flags name it).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ehtool.perfdata.reader import PerfDataFile
from ehtool.perfdata.writer import transcode_file
from golden import golden_path

REPO = Path(__file__).resolve().parents[2]
SCHED = [REPO / "examples" / "sched.data", REPO / "tests" / "data" / "sched-ids.data",
         REPO / "tests" / "data" / "sched-task-noid.data"]


def _events(path: Path) -> list:
    done = subprocess.run([sys.executable, "-m", "ehtool", "decode", str(path)],
                          capture_output=True, check=True)
    assert done.stderr == b""
    [(name, events)] = json.loads(done.stdout, object_pairs_hook=lambda p: p)
    assert name == str(path)
    return events


def _big_endian_copy(src: Path, tmp_path: Path) -> Path:
    dst = tmp_path / f"be-{src.name}"
    transcode_file(src, dst, big_endian=True)
    with PerfDataFile.open(dst) as f:
        assert f.big_endian and f.tracing is not None and f.tracing.big_endian
    return dst


@pytest.mark.parametrize("src", SCHED, ids=lambda p: p.name)
def test_big_endian_sched_recording_decodes_the_same(src, tmp_path):
    events = _events(src)
    assert _events(_big_endian_copy(src, tmp_path)) == events
    # the comparison covers real field values, not only names and meta
    fields = {k for e in events for k, _ in e}
    assert {"prev_comm", "prev_pid", "prev_prio", "prev_state", "next_pid"} <= fields
    assert src.name == "sched-task-noid.data" or {"pid", "target_cpu"} <= fields


def test_big_endian_copy_has_big_endian_fields(tmp_path):
    """The copy's RAW bytes differ from the original (the fields really are big-endian)."""
    src = SCHED[0]
    be = _big_endian_copy(src, tmp_path)
    with PerfDataFile.open(src) as le_f, PerfDataFile.open(be) as be_f:
        pairs = list(zip(le_f.samples(), be_f.samples(), strict=True))
    for le_s, be_s in pairs:
        fmt = le_s.desc.format
        pid = next(f for f in fmt.fields if f.name in ("prev_pid", "pid"))
        at = slice(pid.offset, pid.offset + 4)
        assert int.from_bytes(be_s.raw[at], "big") == int.from_bytes(le_s.raw[at], "little")
        assert be_s.raw[:2] == le_s.raw[1::-1]  # common_type


def test_big_endian_golden_recording_decodes_the_same(tmp_path):
    """Microsoft's reference recording: sched_switch and EventHeader user_events."""
    src = golden_path("linuxtracepoints/perf.data")
    events = _events(src)
    assert len(events) == 539
    assert _events(_big_endian_copy(src, tmp_path)) == events
