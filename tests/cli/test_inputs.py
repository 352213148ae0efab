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
