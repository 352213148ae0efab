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
    assert done.stdout == ""
    as_json = info("--json", str(tmp_path / "none.data"))
    assert as_json.returncode == 1 and as_json.stderr == done.stderr
    assert json.loads(as_json.stdout) == {
        "file": str(tmp_path / "none.data"),
        "problems": [f"{tmp_path / 'none.data'}: cannot open: No such file or directory"]}


def test_a_cut_file_is_summarized_up_to_the_cut(tmp_path):
    """info showed nothing for a file perf left cut short (and --json wrote nothing)."""
    path = tmp_path / "cut.data"
    path.write_bytes(golden_path("linuxtracepoints/perf.data").read_bytes()[:100_000])
    done = info("--json", str(path))
    assert done.returncode == 1 and done.stderr.count("\n") == 1
    summary = json.loads(done.stdout)
    events = subprocess.run(
        [sys.executable, "-m", "ehtool", "decode", "--format", "jsonl", str(path)],
        capture_output=True, text=True).stdout.count("\n")
    assert sum(summary["events"].values()) == events == 218
    assert len(summary["problems"]) == 1 and "truncated file" in summary["problems"][0]
    assert done.stderr == f"ehtool: error: {summary['problems'][0]}\n"
    text = info(str(path))
    assert text.returncode == 1 and "       218  total" in text.stdout


def test_standard_input_is_named_stdin_as_decode_names_it():
    """info called it '-'; decode, Parquet and query 'stdin'."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    pipe = Path(__file__).resolve().parents[1] / "data" / "sched-pipe.data"
    for args, read in ((["--json"], lambda out: json.loads(out)["file"]),
                       ([], lambda out: out.split(b"\n")[0].split()[1].decode())):
        done = subprocess.run([sys.executable, "-m", "ehtool", "info", *args, "-"],
                              input=pipe.read_bytes(), capture_output=True, check=True)
        assert read(done.stdout) == "stdin"
