"""``ehtool decode --time``: how meta time is shown, checked against the typed layer's
times of the same events."""

from __future__ import annotations

import json
import subprocess
import sys
from itertools import pairwise
from pathlib import Path

import pytest

import ehtool

REPO = Path(__file__).resolve().parents[2]
SCHED = REPO / "examples/sched.data"  # recorded with -k CLOCK_MONOTONIC: clock data
NO_CLOCK = REPO / "tests/data/sched-task-noid.data"  # recorded without -k: none


def decode(path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ehtool", "decode", "--format", "jsonl",
                           *args, str(path)], capture_output=True, cwd=REPO, text=True)


def times(path: Path, *args: str) -> list:
    run = decode(path, *args)
    assert run.returncode == 0, run.stderr
    return [json.loads(line)["meta"]["time"] for line in run.stdout.splitlines()]


def typed(path: Path, keep=lambda ev: True) -> list:
    with ehtool.open(path) as events:
        return [ev for ev in events if keep(ev)]


def test_ns_is_utc_nanoseconds_with_clock_data():
    events = typed(SCHED)
    assert times(SCHED, "--time", "ns") == [ev.utc_ns for ev in events]
    assert all(ev.utc_ns is not None for ev in events)


def test_ns_is_session_nanoseconds_without_clock_data():
    events = typed(NO_CLOCK)
    assert events[0].utc_ns is None
    assert times(NO_CLOCK, "--time", "ns") == [ev.time for ev in events]


def test_rel_and_delta_are_seconds_from_the_first_and_the_previous_event():
    ns = [ev.time for ev in typed(SCHED)]
    rel = times(SCHED, "--time", "rel")
    delta = times(SCHED, "--time", "delta")
    assert rel[0] == delta[0] == 0
    assert rel == pytest.approx([(t - ns[0]) / 1e9 for t in ns], abs=1e-9)
    assert delta == pytest.approx([0] + [(b - a) / 1e9 for a, b in pairwise(ns)], abs=1e-9)


def test_rel_and_delta_count_only_the_events_printed():
    """As perf script's --reltime/--deltatime: filters first, then times."""
    pid = typed(SCHED)[5].meta["pid"]
    ns = [ev.time for ev in typed(SCHED, lambda ev: ev.meta["pid"] == pid)]
    assert len(ns) > 3
    assert times(SCHED, "--time", "rel", "--pid", str(pid)) == pytest.approx(
        [(t - ns[0]) / 1e9 for t in ns], abs=1e-9)
    assert times(SCHED, "--time", "delta", "--pid", str(pid)) == pytest.approx(
        [0] + [(b - a) / 1e9 for a, b in pairwise(ns)], abs=1e-9)


def test_negative_intervals_keep_their_sign_in_file_order():
    """--sort file: an event earlier than the one before it (another CPU's buffer)."""
    delta = decode(SCHED, "--time", "delta", "--sort", "file").stdout
    assert '"time": -0.' in delta
    json.loads("[" + ",".join(delta.splitlines()) + "]")  # each one a JSON number


def test_iso_warns_for_a_file_without_clock_data():
    run = decode(NO_CLOCK, "--time", "iso")
    assert run.returncode == 0
    assert "no clock data" in run.stderr
    assert run.stdout == decode(NO_CLOCK).stdout
    assert decode(SCHED, "--time", "iso").stderr == ""


def test_time_is_refused_where_it_has_no_meaning():
    run = decode(SCHED, "--time", "ns", "--format", "parquet", "-o", "/dev/null")
    assert run.returncode == 2 and "--time" in run.stderr


def test_text_lines_take_the_time_modes_too():
    assert "no clock data" in decode(NO_CLOCK, "--time", "iso", "--format", "text").stderr
    first = [decode(SCHED, "--time", mode, "--format", "text").stdout.splitlines()[0].split()[3]
             for mode in ("perf", "ns", "rel", "delta")]
    assert first[0].startswith("2026-11-22T") and first[0].endswith("Z")
    assert first[1].isdigit() and len(first[1]) == 19
    assert first[2] == first[3] == "0.000000000"


@pytest.mark.parametrize("offset", [10, -(1 << 63), 1 << 70, -(1 << 70)])
@pytest.mark.parametrize("time", [0, 5, (1 << 64) - 1])
def test_ns_past_64_bits_is_written_as_python_writes_it(monkeypatch, offset, time):
    """A corrupt sample time or CLOCK_DATA offset puts ``--time ns`` past 64 bits: the C
    loop stopped with "internal error: OverflowError" where pure Python wrote the
    number (and C and Python share Formatter.time_json, the fallback of the C loop)."""
    from ehtool.render.events import SampleFormatter
    from ehtool.render.style import SPACED
    from impl import require_speedups

    class Clock:
        offset_ns = offset
        last_second = None

        def prefix_for(self, sec: int) -> bytes:
            raise AssertionError("not a UTC time")

    def formatter(pure: bool) -> SampleFormatter:
        if pure:
            monkeypatch.setenv("EHTOOL_PURE", "1")
        else:
            monkeypatch.delenv("EHTOOL_PURE", raising=False)
        return SampleFormatter(SPACED, big_endian=False, long_size=8,
                               time_json=lambda t: b"", clock=Clock(), time_mode="ns")

    require_speedups()
    native = formatter(False)
    assert native._native is not None
    assert native.time_json(time) == formatter(True).time_json(time) == b"%d" % (time + offset)
