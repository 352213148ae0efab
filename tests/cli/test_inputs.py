"""A directory given to decode, query or info stands for the perf.data files under it."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from tests.cli.conftest import REPO

SCHED = REPO / "examples" / "sched.data"
EVENTHEADER = REPO / "examples" / "eventheader.data"


@pytest.fixture
def traces(tmp_path):
    """host-b/ (a recording and its decode's JSON), host-a/deep/ (two recordings, one
    without the .data suffix), a FIFO and an empty directory."""
    top = tmp_path / "traces"
    (top / "host-a" / "deep").mkdir(parents=True)
    (top / "host-b").mkdir()
    (top / "empty").mkdir()
    shutil.copy(SCHED, top / "host-b" / "perf.data")
    (top / "host-b" / "perf.json").write_text("{}\n")
    shutil.copy(EVENTHEADER, top / "host-a" / "deep" / "x.data")
    shutil.copy(SCHED, top / "host-a" / "deep" / "perf.data.2026112700")
    os.mkfifo(top / "host-a" / "fifo")  # never opened: it would block
    return top


def test_a_directory_is_its_recordings_at_any_depth_in_path_order(ehtool, traces):
    expected = [str(traces / "host-a" / "deep" / "perf.data.2026112700"),
                str(traces / "host-a" / "deep" / "x.data"),
                str(traces / "host-b" / "perf.data")]
    done = ehtool("decode", "--compact", str(traces), str(traces / "empty"), str(SCHED))
    assert done.status == 0, done.err
    assert list(json.loads(done.out)) == [*expected, str(SCHED)]
    assert done.err == (f"ehtool: warning: {traces}/empty: no perf.data file under this "
                        "directory\n")
    done = ehtool("info", "--json", str(traces / "host-a"))
    assert done.status == 0, done.err
    assert [json.loads(line)["file"] for line in done.out.splitlines()] == expected[:2]


def test_query_over_a_directory(ehtool, traces):
    pytest.importorskip("duckdb")
    done = ehtool("query", "--format", "csv",
                  "select file, count(*) as n from events group by all order by file",
                  str(traces / "host-a"), str(traces / "host-b"))
    assert done.status == 0, done.err
    assert done.out.splitlines()[1:] == [
        f'"{traces}/host-a/deep/perf.data.2026112700",35',
        f'"{traces}/host-a/deep/x.data",3', f'"{traces}/host-b/perf.data",35']


@pytest.mark.parametrize("command", [["decode"], ["info"], ["query", "select 1"]])
def test_a_directory_without_recordings_alone_is_an_input_error(ehtool, traces, command):
    done = ehtool(*command, str(traces / "empty"))
    assert done.status == 1
    assert done.err == (f"ehtool: error: {traces}/empty: no perf.data file under this "
                        "directory\n")
    assert done.out == ""


def test_a_directory_that_cannot_be_read_is_an_input_error(traces, monkeypatch):
    """Its recordings would be left out in silence (os.walk skips it by default)."""
    from ehtool.cli.inputs import expand
    from ehtool.errors import InputError

    walk = os.walk

    def denied(top, onerror=None, **kwargs):
        yield from walk(top, onerror=onerror, **kwargs)
        onerror(PermissionError(13, "Permission denied", f"{top}/host-c"))

    monkeypatch.setattr(os, "walk", denied)
    with pytest.raises(InputError, match="host-c: cannot read this directory: Permission"):
        expand([str(traces)])


def test_an_input_cut_short_while_mapped_is_an_error_not_a_bus_error(tmp_path):
    """A file truncated while ehtool reads it (mapped) killed it with SIGBUS: exit 135,
    no word, -o's temporary file left behind (found by an outside robustness run). With
    the C module: one line naming the file, exit 1, FILE as it was, no temporary file."""
    import subprocess
    import sys

    from impl import require_speedups

    require_speedups()
    src = tmp_path / "in.data"
    shutil.copy(REPO / "tests" / "data" / "sched-612.data", src)
    target = tmp_path / "out.json"
    target.write_bytes(b"old")
    script = (
        "import os, sys\n"
        "from ehtool.cli.inputs import guard_mapped_inputs\n"
        "from ehtool.decode.atomic import atomic_output\n"
        "from ehtool.perfdata import PerfDataFile\n"
        "guard_mapped_inputs()\n"
        "f = PerfDataFile.open(sys.argv[1])\n"
        "os.truncate(sys.argv[1], 4096)\n"
        "with atomic_output(sys.argv[2]) as out:\n"
        "    out.write(b'new')\n"
        "    print(sum(1 for _ in f.records()))\n")
    done = subprocess.run([sys.executable, "-c", script, str(src), str(target)],
                          capture_output=True, text=True, env={**os.environ})
    assert done.returncode == 1, done
    assert done.stderr == (f"ehtool: error: {src}: the file was cut short while it was "
                           "read (did something truncate or replace it?)\n")
    assert target.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.data", "out.json"]
