"""Directory recordings (``perf record --threads``, tests/data/threads/): the records of
``data`` and of each ``data.N``, in perf script's order; one input wherever directories
are searched; a cut ``data.N`` loses only its own rest; never split."""

from __future__ import annotations

import csv
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import ehtool
from ehtool.perfdata.directory import has_dir_format, is_directory_recording
from ehtool.perfdata.finding import recordings_under
from ehtool.perfdata.grammar import RecordType
from ehtool.perfdata.reader import PerfDataFile

from .conftest import DATA, EXAMPLE
from .test_reader import _rows, _script_rows

THREADS = DATA / "threads"
RECORDINGS = [THREADS / "sched-threads.data", THREADS / "sched-threads-z.data"]


def _decode(*args: object) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ehtool", "decode", *map(str, args)],
                          capture_output=True)


@pytest.mark.parametrize("path", RECORDINGS, ids=lambda p: p.name)
def test_directory_recordings_match_perf_script(path: Path):
    expected = _script_rows((THREADS / (path.name + ".script")).read_text())
    with PerfDataFile.open(path) as f:
        assert [Path(p).name for p in f.more_files] == ["data.0", "data.1"]
        assert f.info.dir_format == 1 and not f.splittable
        got = _rows(f)
        per_file = f.counts
    assert got == expected  # (perf sorts the files' records as one: so does the reader)
    assert per_file[RecordType.SAMPLE] == len(expected) > 20
    with PerfDataFile.open(path / "data") as f:  # its data file alone reads the others
        assert _rows(f) == expected


def test_each_data_file_is_a_zstd_stream_of_its_own():
    with PerfDataFile.open(RECORDINGS[1]) as f:
        list(f.records())
        assert f.compression.records >= 2 and f.counts.get(RecordType.COMPRESSED, 0) \
            + f.counts.get(RecordType.COMPRESSED2, 0) >= 2


def test_a_directory_recording_is_one_input(tmp_path: Path):
    nested = tmp_path / "a" / "b"
    nested.mkdir(parents=True)
    shutil.copytree(RECORDINGS[0], nested / "x.data")
    shutil.copy(EXAMPLE, tmp_path / "a" / "plain.data")
    plain_dir = tmp_path / "c"
    plain_dir.mkdir()
    shutil.copy(EXAMPLE, plain_dir / "data")  # a recording named data: not a directory one

    found = recordings_under(str(tmp_path), lambda exc: None)
    assert found == [str(nested / "x.data"), str(tmp_path / "a" / "plain.data"),
                     str(plain_dir / "data")]
    assert recordings_under(str(nested / "x.data"), lambda exc: None) == [str(nested / "x.data")]
    assert not is_directory_recording(str(plain_dir)) and not has_dir_format(str(EXAMPLE))
    assert not is_directory_recording(str(nested / "x.data" / "data"))

    pytest.importorskip("duckdb")
    done = subprocess.run([sys.executable, "-m", "ehtool", "query", "--format", "csv",
                           "select file, count(*) from events group by all order by 1",
                           str(tmp_path / "a")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    with PerfDataFile.open(EXAMPLE) as f:
        plain = len(_rows(f))
    assert list(csv.reader(done.stdout.splitlines()))[1:] == [
        [str(nested / "x.data"), "26"], [str(tmp_path / "a" / "plain.data"), str(plain)]]


def test_a_cut_data_file_loses_only_its_rest(tmp_path: Path):
    cut = tmp_path / "cut.data"
    shutil.copytree(RECORDINGS[0], cut)
    data0 = cut / "data.0"
    whole = data0.read_bytes()
    data0.write_bytes(whole[:-20])
    with PerfDataFile.open(RECORDINGS[0]) as f:
        all_rows = _rows(f)
    problems: list = []
    with PerfDataFile.open(cut, on_error=problems.append) as f:
        rows = _rows(f)
    assert len(problems) == 1 and problems[0].path == str(data0)
    assert "record runs past the end of the file" in str(problems[0])
    assert 0 < problems[0].offset < len(whole)
    assert set(rows) < set(all_rows) and len(rows) == len(all_rows) - 1

    done = _decode("--format", "jsonl", cut)
    assert done.returncode == 1
    assert done.stderr.decode().splitlines() == [
        f"ehtool: error: {data0}: offset {problems[0].offset:#x}: record runs past the end "
        "of the file (truncated input?)"]
    assert len(done.stdout.splitlines()) == len(rows)


@pytest.mark.parametrize("fmt", ["json", "jsonl"])
def test_several_processes_give_the_same_bytes(fmt: str, tmp_path: Path):
    cut = tmp_path / "cut.data"
    shutil.copytree(RECORDINGS[1], cut)
    (cut / "data.1").write_bytes((cut / "data.1").read_bytes()[:-7])
    inputs = [*RECORDINGS, EXAMPLE, RECORDINGS[0] / "data", cut, RECORDINGS[0]]
    outputs = {jobs: _decode("--format", fmt, "-j", jobs, *inputs) for jobs in (1, 2, 4)}
    first = outputs[1]
    assert first.returncode == 1 and first.stdout.count(b'"sched:sched_switch"') > 50
    for done in outputs.values():
        assert (done.returncode, done.stdout, done.stderr) == \
            (first.returncode, first.stdout, first.stderr)


def test_never_split():
    with ehtool.open(RECORDINGS[0], part=(0, 2)) as events:
        first = [e.time for e in events]
    with ehtool.open(RECORDINGS[0], part=(1, 2)) as events:
        assert list(events) == []
    with ehtool.open(RECORDINGS[0]) as events:
        assert [e.time for e in events] == first and len(first) == 26


def test_info_names_the_files():
    done = subprocess.run([sys.executable, "-m", "ehtool", "info", str(RECORDINGS[1])],
                          capture_output=True, text=True, check=True)
    assert "perf record --threads: data, data.0, data.1" in done.stdout
    assert "compressed     zstd" in done.stdout


def test_output_file_of_directory_recordings_alone(tmp_path: Path):
    """-o FILE with only directory recordings as inputs wrote nothing, exit 0 (they were
    not 'openable', so the output went nowhere: found by an outside review)."""
    out = tmp_path / "out.json"
    done = _decode("--format", "jsonl", "-o", out, *RECORDINGS)
    assert done.returncode == 0, done.stderr
    assert len(out.read_bytes().splitlines()) == 26 + 85


def test_fifos_where_the_files_are_do_not_block(tmp_path: Path):
    """A FIFO named data (a directory searched) or data.N hung the command (opened to be
    checked); now it is not a recording, or a data.N that cannot be read."""
    import os

    lone = tmp_path / "e" / "x"
    lone.mkdir(parents=True)
    os.mkfifo(lone / "data")
    done = subprocess.run([sys.executable, "-m", "ehtool", "info", str(tmp_path / "e")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and "no perf.data file under this directory" in done.stderr
    fifo = tmp_path / "f.data"
    shutil.copytree(RECORDINGS[0], fifo)
    os.mkfifo(fifo / "data.2")
    done = subprocess.run([sys.executable, "-m", "ehtool", "decode", "--format", "jsonl",
                           str(fifo)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and len(done.stdout.splitlines()) == 26
    assert done.stderr == f"ehtool: error: {fifo / 'data.2'}: cannot open: not a regular file\n"


def test_the_data_file_without_its_data_files_says_so(tmp_path: Path):
    """The data file alone (copied elsewhere, from stdin, the Dask reader's local copy)
    gave 0 events in silence, or read data.N files of another directory."""
    lone = tmp_path / "copy.data"
    shutil.copy(RECORDINGS[0] / "data", lone)
    (tmp_path / "data.0").write_bytes((RECORDINGS[0] / "data.0").read_bytes())  # (not its)
    for args, name in (((lone,), str(lone)), (("-",), "stdin")):
        done = subprocess.run([sys.executable, "-m", "ehtool", "decode", "--format", "jsonl",
                               *map(str, args)], capture_output=True, text=True,
                              stdin=open(RECORDINGS[0] / "data", "rb"))  # noqa: SIM115
        assert done.returncode == 1 and done.stdout == ""
        assert done.stderr == (f"ehtool: error: {name}: the data file of a directory "
                               "recording (perf record --threads) without its data.N files "
                               "beside it: their events are missing (give the directory)\n")
