"""ehtool info on the golden recording and the shipped sample."""

from __future__ import annotations

import json
import subprocess
import sys

from golden import golden_path


def info(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ehtool", "info", *args],
                          capture_output=True, text=True)


def test_golden_counts_and_header():
    path = str(golden_path("linuxtracepoints/perf.data"))
    summary = json.loads(info("--json", path).stdout)
    assert summary["events"]["sched:sched_switch"] == 285
    assert sum(summary["events"].values()) == 539
    assert summary["events"]["user_events:TestProviderC_L5K0"] == 109
    assert summary["hostname"] == "dcook2" and summary["perf_version"] == "6.6.13"
    assert summary["cpus_online"] == 24 and summary["clock"]["utc"] is True
    assert summary["time_range"]["first"] == "2024-03-28T00:45:12.640913120Z"
    assert summary["lost_events"] == 0 and summary["records"]["sample"] == 539
    text = info(path).stdout
    assert "       539  total" in text and "       285  sched:sched_switch" in text


def test_missing_file_is_a_one_line_error(tmp_path):
    done = info(str(tmp_path / "none.data"))
    assert done.returncode == 1 and done.stderr.count("\n") == 1
