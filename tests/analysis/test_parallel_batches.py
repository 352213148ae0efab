"""Parquet and query on N processes: the rows, their order and the errors of one."""

from __future__ import annotations

import random
import struct
from pathlib import Path

import pytest

from golden import golden_path

pytest.importorskip("pyarrow")
REPO = Path(__file__).resolve().parents[2]


def collect(paths: list[str], jobs: int, columns=None) -> tuple[list[dict], str | None]:
    from ehtool.analysis.parallel import batches
    from ehtool.errors import EhtoolError

    rows: list[dict] = []
    try:
        for batch in batches(paths, columns, jobs):
            rows += batch.to_pylist()
    except EhtoolError as exc:
        return rows, str(exc)
    return rows, None


@pytest.fixture(scope="module")
def big(tmp_path_factory) -> Path:
    from ehtool.perfdata.writer import replay_samples

    path = tmp_path_factory.mktemp("parallel") / "mix.data"
    replay_samples(str(golden_path("linuxtracepoints/perf.data")), str(path), 20000,
                   attr_size=128)
    return path


@pytest.fixture(autouse=True)
def small_parts(monkeypatch):
    monkeypatch.setattr("ehtool.analysis.parallel.PART_MIN_BYTES", 1 << 18)


@pytest.mark.parametrize("jobs", [2, 3, 4, 7])
def test_same_rows_in_the_same_order(big, jobs):
    from ehtool.analysis.parallel import parts

    paths = [str(REPO / "examples" / "sched.data"), str(big),
             str(REPO / "tests" / "data" / "sched-pipe.data"),
             str(REPO / "examples" / "eventheader.data")]
    assert any(p.part for p in parts(paths, jobs))  # the big file is cut
    assert collect(paths, jobs) == collect(paths, 1)
    assert collect(paths, jobs, ["provider", "cpu"]) == collect(paths, 1, ["provider", "cpu"])


def test_many_files_take_n_workers_not_one_each(monkeypatch):
    """A pool: N workers take the parts in turn (a fork per part cost ~15 ms of system
    time each once pyarrow was loaded: 1,000 small files took 2.4 times as long with
    -j 2 as with -j 1)."""
    from ehtool import workers
    from ehtool.analysis import parallel

    forks = []
    fork = workers.fork
    monkeypatch.setattr(workers, "fork", lambda *a, **k: forks.append(1) or fork(*a, **k))
    monkeypatch.setattr(workers, "RUN_FILES", 1)  # a part per file
    paths = [str(REPO / "examples" / name) for name in ("sched.data", "eventheader.data")] * 9
    assert len(parallel.parts(paths, 2)) == 18
    assert collect(paths, 2) == collect(paths, 1)
    assert len(forks) == 2
    assert collect(paths, 3, ["event"]) == collect(paths, 1, ["event"])
    assert len(forks) == 2 + 3


def test_small_files_go_to_a_worker_several_at_a_time(big, tmp_path):
    """Runs of small whole files: fewer parts (each costs ~1 ms of its own), the rows
    joined into batches, and the rows, their order and the errors of one process, also
    when a file of a run is missing, cut or damaged."""
    from ehtool.analysis.parallel import batches, parts

    cut = tmp_path / "cut.data"
    cut.write_bytes(golden_path("linuxtracepoints/perf.data").read_bytes()[:100000])
    damaged = _damaged(big, tmp_path, 2)  # (big: alone, in parts)
    small = [str(REPO / "examples" / name) for name in ("sched.data", "eventheader.data")]
    fine = small * 20 + [str(big)] + small * 20
    runs = parts(fine, 2)
    assert 4 < len(runs) < 20 and max(len(p.paths) for p in runs) > 4
    assert [path for p in runs for path in p.paths if p.part is None or p.part[0] == 0] == fine
    rows, error = collect(fine, 2)
    assert error is None and (rows, error) == collect(fine, 1)
    assert len(rows) == 40 * (35 + 3) + 20000
    assert sum(1 for b in batches(small * 40, ["cpu"], 2)) == 1  # (1,520 rows, joined)
    for bad in (str(cut), str(tmp_path / "missing.data"), str(damaged)):
        paths = small * 10 + [bad] + small * 10
        assert collect(paths, 2) == collect(paths, 1), bad
        assert collect(paths, 3)[1] is not None

        def run(j: int, paths=paths) -> tuple[list[dict], dict[str, list[str]]]:
            problems: dict = {}
            rows = [r for b in batches(paths, ["cpu", "event"], j, problems=problems)
                    for r in b.to_pylist()]
            return rows, {p: [str(e) for e in v] for p, v in problems.items() if v}

        assert run(2) == run(1), bad
        assert list(run(2)[1]) == [bad]


def _damaged(big: Path, tmp_path: Path, seed: int) -> Path:
    """A copy with a few sample ids changed past the first part (recoverable problems)."""
    data = bytearray(big.read_bytes())
    rng = random.Random(seed)
    pos, hits = len(data) // 3, 0
    while hits < 3:
        pos = data.find(b"\x09\x00\x00\x00", pos + 1)  # a SAMPLE header
        if rng.random() < 0.001:
            struct.pack_into("<Q", data, pos + 8, 0xDEAD0000 + hits)  # its IDENTIFIER
            hits += 1
    out = tmp_path / f"damaged-{seed}.data"
    out.write_bytes(bytes(data))
    return out


@pytest.mark.parametrize("jobs", [2, 3])
def test_problems_are_reported_as_one_process_does(big, tmp_path, jobs):
    damaged = _damaged(big, tmp_path, 1)
    paths = [str(REPO / "examples" / "sched.data"), str(damaged), str(big)]
    rows, error = collect(paths, jobs)
    assert error is not None and "matches no event" in error and "more problems" in error
    assert len(rows) == 35 + 20000 - 3  # every complete event, then the problems
    assert (rows, error) == collect(paths, 1)


@pytest.mark.parametrize("jobs", [2, 3])
def test_a_cut_or_missing_file_ends_where_one_process_ends(big, tmp_path, jobs):
    cut = tmp_path / "cut.data"
    cut.write_bytes(big.read_bytes()[:big.stat().st_size * 2 // 3])
    for paths in ([str(REPO / "examples" / "sched.data"), str(cut), str(big)],
                  [str(big), str(tmp_path / "missing.data"), str(big)]):
        rows, error = collect(paths, jobs)
        assert error is not None and rows
        assert (rows, error) == collect(paths, 1)


def test_query_and_parquet_take_jobs(big, tmp_path, monkeypatch):
    import subprocess
    import sys

    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    pytest.importorskip("duckdb")
    outs = []
    for jobs in ("1", "3"):
        out = tmp_path / f"j{jobs}.parquet"
        done = subprocess.run([sys.executable, "-m", "ehtool", "decode", "--format", "parquet",
                               "-j", jobs, "-o", str(out), str(big)], capture_output=True,
                              cwd=REPO)
        assert done.returncode == 0, done.stderr
        outs.append(pq.read_table(out))
        # row groups of 16,384 rows, whatever the batches (4,096 rows) and the parts
        groups = pq.ParquetFile(out).metadata
        assert [groups.row_group(i).num_rows for i in range(groups.num_row_groups)] == [
            16384, 20000 - 16384], jobs
    # parts whose last batches are short (parts of 1 MB): the groups stay exact
    monkeypatch.setattr("ehtool.analysis.parallel.PART_MIN_BYTES", 1 << 20)
    from ehtool.analysis.parallel import write_parquet

    out = tmp_path / "parts.parquet"
    assert write_parquet([str(big), str(big)], str(out), jobs=3) == 40000
    groups = pq.ParquetFile(out).metadata
    assert [groups.row_group(i).num_rows for i in range(groups.num_row_groups)] == [
        16384, 16384, 40000 - 2 * 16384]
    assert pq.read_table(out).equals(pa.concat_tables([outs[0], outs[0]]))
    assert outs[0].equals(outs[1])
    done = subprocess.run([sys.executable, "-m", "ehtool", "query", "-j", "3", "--format", "csv",
                           "select count(*), sum(cpu) from events", str(big)],
                          capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[1] == f"20000,{sum(outs[0].column('cpu').to_pylist())}"


def test_query_input_errors_are_one_line(tmp_path):
    """An input error inside DuckDB's stream is the input's error (exit 1, one line),
    not DuckDB's wrapping of it."""
    import subprocess
    import sys

    pytest.importorskip("duckdb")
    cut = tmp_path / "cut.data"
    cut.write_bytes((REPO / "examples" / "sched.data").read_bytes()[:30000])
    for path, words in ((cut, "truncated file"), (tmp_path / "nosuch.data", "cannot open")):
        done = subprocess.run([sys.executable, "-m", "ehtool", "query",
                               "select count(*) from events", str(path)],
                              capture_output=True, text=True, cwd=REPO)
        assert done.returncode == 1
        assert done.stderr.startswith(f"ehtool: error: {path}") and words in done.stderr
        assert done.stderr.count("\n") == 1


@pytest.mark.parametrize(("argv", "signum"), [
    (["query", "-j", "2", "--format", "csv", "select count(*) from events"], "TERM"),
    (["query", "-j", "2", "--format", "csv", "select count(*) from events"], "INT"),
    (["query", "-j", "1", "--format", "csv", "select count(*) from events"], "HUP"),
    # minutes inside DuckDB, no Python in between: only an interrupt stops it
    (["query", "-j", "1", "--format", "csv", "select sum(r.range % 7) from "
      "(select cpu from events limit 1) e, range(300000000000) r"], "TERM"),
    (["decode", "--format", "parquet", "-j", "2", "-o", "OUT"], "TERM"),
    (["decode", "--format", "parquet", "-j", "2", "-o", "OUT"], "INT"),
    # Ctrl-C in a terminal: SIGINT to the command and its workers together
    (["query", "-j", "2", "--format", "csv", "select count(*) from events"], "INT group"),
    (["decode", "--format", "parquet", "-j", "2", "-o", "OUT"], "INT group"),
    # one worker alone: its parent's handlers raised there, reported as an internal
    # error (exit 1) after a part of the rows had replaced FILE
    (["decode", "--format", "parquet", "-j", "2", "-o", "OUT"], "TERM worker"),
    (["decode", "--format", "parquet", "-j", "2", "-o", "OUT"], "INT worker"),
    (["decode", "--format", "parquet", "-j", "2", "-o", "OUT"], "HUP worker"),
    (["query", "-j", "2", "--format", "csv", "select count(*) from events"], "TERM worker"),
])
def test_a_signal_ends_the_workers_and_leaves_no_file(big, tmp_path, argv, signum):
    import os
    import signal
    import subprocess
    import sys
    import time

    pytest.importorskip("duckdb")
    out = tmp_path / "out.parquet"
    out.write_bytes(b"before")
    args = [a if a != "OUT" else str(out) for a in argv]
    copies = [str(big)] * 48  # many seconds: the signal must end it long before that
    proc = subprocess.Popen([sys.executable, "-m", "ehtool", *args, *copies], cwd=REPO,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, preexec_fn=_default_signals)
    if "1" in argv:  # one process: stopped while it decodes (a fifth of the way)
        time.sleep(1.0)
        assert proc.poll() is None, "finished before the signal"
    else:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not _children(proc.pid):
            time.sleep(0.05)
        assert _children(proc.pid), "no worker started"
    signum, _, whom = signum.partition(" ")
    sig = getattr(signal, f"SIG{signum}")
    if whom == "group":
        os.killpg(proc.pid, sig)
    elif whom == "worker":
        os.kill(_children(proc.pid)[0], sig)
    else:
        proc.send_signal(sig)
    sent = time.monotonic()
    try:
        _, err = proc.communicate(timeout=30)
        took = time.monotonic() - sent
    finally:  # a hung command must not outlive the test (nor its workers)
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
            for pid in _running_with(str(big)):
                os.kill(pid, signal.SIGKILL)
    assert proc.returncode == 128 + sig, err
    assert took < 5, f"the signal was acted on after {took:.1f} s"
    assert "Traceback" not in err and "internal error" not in err
    assert out.read_bytes() == b"before" and [p.name for p in tmp_path.iterdir()] == [
        "out.parquet"]
    time.sleep(0.2)
    assert not _running_with(str(big)), "a worker outlived the command"


def _default_signals() -> None:
    """In the command's process: SIGINT and SIGHUP as a terminal session has them (a
    test run under nohup, or in a background job, inherits them ignored)."""
    import signal

    for sig in (signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)


def _running_with(arg: str) -> list[int]:
    """Processes whose command line has ``arg`` (the workers are forks of the command)."""
    import os

    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if arg.encode() in f.read().split(b"\0"):
                    found.append(int(pid))
        except OSError:
            pass
    return found


def _children(pid: int) -> list[int]:
    """The children of every thread of ``pid`` (DuckDB's threads fork query's workers)."""
    import os

    found = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children") as f:
                found += [int(x) for x in f.read().split()]
        except OSError:
            pass
    return found


@pytest.mark.parametrize("fmt", ["json", "parquet"])
def test_a_worker_that_cannot_write_its_part_leaves_the_file_alone(big, tmp_path, fmt):
    """EFBIG (ulimit -f) on a worker's part file: one line naming it, exit 1, -o FILE
    as it was and no temporary file (not the 'internal error' it was)."""
    import resource
    import subprocess
    import sys

    pytest.importorskip("duckdb")
    out = tmp_path / "out"
    out.write_bytes(b"before")
    limit = 1 << 20

    def small_files() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    done = subprocess.run([sys.executable, "-m", "ehtool", "decode", "--format", fmt, "-j", "2",
                           "-o", str(out), str(big), str(big)], capture_output=True, text=True,
                          cwd=REPO, preexec_fn=small_files)
    assert done.returncode == 1, done.stderr
    assert done.stderr.startswith("ehtool: error: cannot write output: File too large")
    assert done.stderr.count("\n") == 1
    assert out.read_bytes() == b"before" and [p.name for p in tmp_path.iterdir()] == ["out"]


@pytest.mark.parametrize("when", ["before", "during"])
def test_source_stop_ends_the_batches_at_once_and_leaves_no_worker(big, when):
    """Source.stop() (from the signal watcher's thread in ``ehtool query``) starts no
    worker after it, kills those running, and the next batch raises."""
    import os
    import time

    from ehtool.analysis.parallel import Source
    from ehtool.errors import EhtoolError

    pytest.importorskip("pyarrow")
    source = Source([str(big)] * 48, ["cpu"], 2)
    batches = iter(source)
    if when == "during":
        next(batches)
        assert _children(os.getpid()), "no worker started"
    started = time.monotonic()
    source.stop()
    with pytest.raises(EhtoolError, match="stopped"):
        for _ in batches:
            pass
    assert time.monotonic() - started < 3
    assert not _children(os.getpid())


@pytest.mark.parametrize("jobs", [2, 3])
def test_with_problems_every_file_is_read_and_its_errors_kept(big, tmp_path, jobs):
    """ehtool query's mode: no input error ends the rows; each file's errors are kept
    (a fatal one alone, ending that file's rows), the same with N processes as one."""
    from ehtool.analysis.parallel import batches

    cut = tmp_path / "cut.data"
    cut.write_bytes(big.read_bytes()[:big.stat().st_size * 2 // 3])
    damaged, missing = str(_damaged(big, tmp_path, 1)), str(tmp_path / "missing.data")
    paths = [str(REPO / "examples" / "sched.data"), damaged, str(cut), missing, str(big)]

    def run(j: int) -> tuple[list[dict], dict[str, list[str]]]:
        problems: dict = {}
        rows = [r for b in batches(paths, ["cpu", "session_time"], j, problems=problems)
                for r in b.to_pylist()]
        return rows, {p: [str(e) for e in v] for p, v in problems.items() if v}

    rows, problems = run(1)
    assert (rows, problems) == run(jobs)
    assert list(problems) == [damaged, str(cut), missing]
    assert len(problems[damaged]) == 3 and len(problems[str(cut)]) == 1
    assert len(rows) >= 35 + 2 * 20000 - 3  # the files after the bad ones too


@pytest.mark.parametrize("argv", [["decode", "--format", "jsonl", "-j", "2"],
                                  ["query", "-j", "2", "select count(*) from events"]])
def test_a_worker_killed_by_sigkill_exits_137(big, argv):
    """A worker ended by SIGKILL (the OOM killer's signal) ends the command as 128+9,
    as any signal that reaches a worker does (decode said 'a decoding worker died',
    exit 1), and says so (no terminal sends SIGKILL: 137 alone told nothing)."""
    import os
    import signal
    import subprocess
    import sys
    import time

    pytest.importorskip("duckdb")
    proc = subprocess.Popen([sys.executable, "-m", "ehtool", *argv, *[str(big)] * 48],
                            cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not _children(proc.pid):
            time.sleep(0.05)
        os.kill(_children(proc.pid)[0], signal.SIGKILL)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
            for pid in _running_with(str(big)):
                os.kill(pid, signal.SIGKILL)
    assert proc.returncode == 128 + signal.SIGKILL, err
    assert err == "ehtool: error: a decoding worker was killed by SIGKILL (out of memory?)\n"


def test_query_leaves_no_part_files_when_it_exits_1(big, tmp_path):
    """A LIMIT stops the query with parts done and not read; an input error then exits 1
    (through os._exit, no teardown): the statement's workers and their directory must be
    gone all the same (the pool was left suspended in DuckDB's reader: its directory of
    part files stayed in $TMPDIR)."""
    import os
    import subprocess
    import sys

    pytest.importorskip("duckdb")
    temp = tmp_path / "tmp"
    temp.mkdir()
    paths = [str(tmp_path / "missing.data"), str(REPO / "examples" / "sched.data"),
             *[str(big)] * 4]
    done = subprocess.run([sys.executable, "-m", "ehtool", "query", "-j", "2", "--format",
                           "csv", "select cpu from events limit 3", *paths],
                          capture_output=True, text=True, cwd=REPO,
                          env=dict(os.environ, TMPDIR=str(temp)))
    assert done.returncode == 1, done.stderr
    assert len(done.stdout.splitlines()) == 4
    assert "missing.data" in done.stderr
    assert list(temp.iterdir()) == []


@pytest.mark.parametrize("jobs", [1, 2, 3])
def test_a_problem_past_where_the_consumer_stopped_is_not_kept(big, tmp_path, jobs):
    """A LIMIT that stops before the damaged records: no problem, as one process
    (a worker's problems were all kept before its part's first rows: query -j 2
    "... limit 5" exited 1 where -j 1 exited 0)."""
    from ehtool.analysis.parallel import batches

    damaged = str(_damaged(big, tmp_path, 3))  # (the damage is past a third of it)
    problems: dict = {}
    stream = batches([damaged, str(REPO / "examples" / "sched.data")], ["cpu"], jobs,
                     problems=problems)
    assert next(stream).num_rows == 4096
    stream.close()
    assert not any(problems.values())
    rows = sum(b.num_rows for b in batches([damaged], ["cpu"], jobs, problems=problems))
    assert rows == 20000 - 3 and len(problems[damaged]) == 3


def test_workers_stop_soon_after_their_owner_is_killed(tmp_path):
    """SIGKILL of the owner (the OOM killer's signal): its workers end at their next
    batch instead of decoding their parts to the end for nobody (~3 s here; a part
    may be 1/N of a big input)."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from ehtool.perfdata.writer import replay_samples

    big = tmp_path / "150k.data"  # (three parts of ~3 s: every column)
    replay_samples(str(golden_path("linuxtracepoints/perf.data")), str(big), 150000,
                   attr_size=128)
    script = ("import sys, time\n"
              "from ehtool.analysis.parallel import batches\n"
              "it = batches(sys.argv[1:], None, 2)\n"
              "next(it)\n"
              "print('ready', flush=True)\n"
              "time.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, "-c", script, *[str(big)] * 3], cwd=REPO,
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline() == "ready\n"
        workers = _children(proc.pid)
        assert workers
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline and any(map(_alive, workers)):
            time.sleep(0.02)
        assert not any(map(_alive, workers))
    finally:
        proc.kill()
        for pid in _running_with(str(big)):
            os.kill(pid, signal.SIGKILL)


def _alive(pid: int) -> bool:
    """Running (not gone, and not a zombie nobody reaps yet)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_an_input_whose_name_is_not_utf8_is_reported_as_by_one_process(tmp_path):
    """Its error message holds lone surrogates, which a worker's report carries."""
    from fleet import with_a_bad_name

    paths = with_a_bad_name(tmp_path, REPO / "examples" / "sched.data", 12, 5, 9000)
    one = collect(paths, 1)
    assert one[1] is not None and "r05\udcff.data" in one[1]
    assert collect(paths, 2) == one


def test_a_name_that_is_not_utf8_is_the_file_column_as_json_shows_it(tmp_path):
    """Its bytes as decode's JSON shows them (an invalid byte as its Latin-1 character),
    not Python's escape of them."""
    import io
    import json

    from ehtool.decode.pipeline import DecodeOptions, decode_to
    from fleet import with_a_bad_name

    (path,) = with_a_bad_name(tmp_path, REPO / "examples" / "sched.data", 1, 0, 10**9)
    out = io.BytesIO()
    assert decode_to(out, [path], DecodeOptions(jobs=1)) == []
    (key,) = json.loads(out.getvalue().decode("utf-8-sig"))
    assert key == f"{tmp_path}/r00\xff.data"
    assert {row["file"] for row in collect([path], 1)[0]} == {key}
