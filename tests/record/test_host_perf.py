"""``ehtool record`` with the real perf on this host's kernel tracepoints (no VM).

Skipped when perf is missing, when we may not record system-wide, or when the
kernel lacks the tracepoints used.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ehtool.record.perf import scan_recording

TRACEFS = Path("/sys/kernel/tracing")


def _perf_problem() -> str | None:
    perf = shutil.which("perf")
    if perf is None:
        return "perf is not installed"
    if not (TRACEFS / "events" / "sched" / "sched_switch" / "id").exists():
        return "no tracefs with sched:sched_switch"
    from ehtool.errors import EhtoolError
    from ehtool.record.checks import check_permissions

    try:
        check_permissions(perf, TRACEFS)
    except EhtoolError as exc:
        return str(exc)
    done = subprocess.run([perf, "version"], capture_output=True, check=False)
    if done.returncode != 0:
        return "perf does not run"
    return None


_PROBLEM = _perf_problem()
pytestmark = pytest.mark.skipif(_PROBLEM is not None, reason=f"real perf unusable: {_PROBLEM}")


def _decoder_problem() -> str | None:
    try:
        import ehtool.decode.pipeline  # noqa: F401
    except ImportError as exc:
        return f"ehtool decode is not importable: {exc}"
    return None


def ehtool(*args: str, **kw) -> subprocess.CompletedProcess:
    if "stdout" not in kw and "stderr" not in kw:
        kw["capture_output"] = True
    kw.setdefault("timeout", 120)
    return subprocess.run([sys.executable, "-m", "ehtool", *args], check=False, **kw)


def perf_script(path: Path) -> str:
    done = subprocess.run(["perf", "script", "-i", str(path)], capture_output=True, text=True,
                          check=False, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_duration_records_a_file_perf_script_reads(tmp_path):
    out = tmp_path / "x.data"
    started = time.monotonic()
    done = ehtool("record", "--duration", "1", ":sched:sched_switch", "-o", str(out), text=True)
    elapsed = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    assert "recording (for 1 s), Ctrl-C to stop" in done.stderr
    assert 1.0 <= elapsed < 30
    script = perf_script(out)
    assert "sched:sched_switch:" in script and "prev_comm=" in script
    stats = scan_recording(out)
    assert stats.errors == [] and stats.samples > 0
    assert f"wrote {out}: {stats.samples} samples, 0 lost" in done.stderr


def test_sigterm_mid_session_leaves_a_complete_file(tmp_path):
    out = tmp_path / "term.data"
    proc = subprocess.Popen([sys.executable, "-m", "ehtool", "record", ":sched:sched_switch",
                             "-o", str(out)], stderr=subprocess.PIPE, text=True)
    line = proc.stderr.readline()
    assert "recording, Ctrl-C to stop" in line
    time.sleep(0.5)
    proc.send_signal(signal.SIGTERM)
    rest = proc.stderr.read()
    assert proc.wait(60) == 0, rest
    stats = scan_recording(out)
    assert stats.errors == [] and stats.samples > 0
    assert "sched:sched_switch:" in perf_script(out)
    if _decoder_problem() is None:
        decoded = ehtool("decode", str(out))
        assert decoded.returncode == 0, decoded.stderr
        events = json.loads(decoded.stdout.decode("utf-8-sig"))[str(out)]
        assert len(events) == stats.samples
        assert events[0]["n"] == "sched:sched_switch"


def test_command_exec_is_recorded(tmp_path):
    """COMMAND starts only after perf enabled its events: its own exec is in the file."""
    out = tmp_path / "exec.data"
    done = ehtool("record", "-o", str(out), ":sched:sched_process_exec",
                  "--", "/bin/true", text=True)
    assert done.returncode == 0, done.stderr
    assert "recording, Ctrl-C" not in done.stderr
    assert "filename=/bin/true" in perf_script(out)


def test_all_1000_syscalls_at_command_start_are_recorded(tmp_path):
    if not (TRACEFS / "events" / "syscalls" / "sys_enter_getppid").exists():
        pytest.skip("kernel has no syscalls:sys_enter_getppid tracepoint")
    out, pid_file = tmp_path / "sys.data", tmp_path / "pid"
    code = (f"import os\nfor _ in range(1000): os.getppid()\n"
            f"open({str(pid_file)!r}, 'w').write(str(os.getpid()))\n")
    done = ehtool("record", "-o", str(out), ":syscalls:sys_enter_getppid", "--",
                  sys.executable, "-S", "-c", code, text=True)
    assert done.returncode == 0, done.stderr
    pid = int(pid_file.read_text())
    from ehtool.perfdata.reader import PerfDataFile

    with PerfDataFile.open(str(out)) as data:
        count = sum(1 for s in data.samples(order="file") if s.pid == pid)
    assert count == 1000


def test_exit_status_is_the_commands(tmp_path):
    done = ehtool("record", "-o", str(tmp_path / "s.data"), ":sched:sched_switch", "--",
                  "sh", "-c", "exit 42")
    assert done.returncode == 42


def test_sigint_is_forwarded_to_command_when_not_from_a_terminal(tmp_path):
    flag = tmp_path / "got-int"
    script = f"trap 'touch {flag}; exit 3' INT; echo started; while :; do sleep 0.05; done"
    proc = subprocess.Popen([sys.executable, "-m", "ehtool", "record", "-o",
                             str(tmp_path / "i.data"), ":sched:sched_switch", "--",
                             "sh", "-c", script], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                            start_new_session=True, text=True)
    assert proc.stdout.readline() == "started\n"
    proc.send_signal(signal.SIGINT)
    assert proc.wait(60) == 3, proc.stderr.read()
    assert flag.exists()
    assert scan_recording(tmp_path / "i.data").errors == []


def test_pipe_mode_to_stdout(tmp_path):
    out = tmp_path / "pipe.data"
    with open(out, "wb") as f:
        done = ehtool("record", "-o", "-", "--duration", "1", ":sched:sched_switch",
                      stdout=f, stderr=subprocess.PIPE)
    assert done.returncode == 0, done.stderr
    assert out.read_bytes()[:8] == b"PERFILE2"
    assert "sched:sched_switch:" in perf_script(out)


def test_live_decode(tmp_path):
    problem = _decoder_problem()
    if problem:
        pytest.skip(problem)
    done = ehtool("record", "--decode", "--duration", "1", ":sched:sched_switch",
                  cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    events = json.loads(done.stdout.decode("utf-8-sig"))["stdin"]
    assert events and all(e["n"] == "sched:sched_switch" for e in events)
    assert os.listdir(tmp_path) == []  # no perf.data: the data went through the pipe


@pytest.mark.parametrize("args", [["-o", "-"], ["--decode"]])
def test_a_reader_that_goes_away_ends_the_recording_quietly(tmp_path, args):
    """``ehtool record -o - ... | head -c 100`` (or ``--decode ... | head -1``): perf dies
    of SIGPIPE once the reader has gone, and ehtool exits 0 without a word, as any
    command whose reader went away (it said 'perf was killed by SIGPIPE', exit 5)."""
    if "--decode" in args and _decoder_problem():
        pytest.skip(_decoder_problem())
    cut = "head -1" if "--decode" in args else "head -c 100"
    script = (f"{sys.executable} -m ehtool record {' '.join(args)} --duration 30 "
              f":sched:sched_switch -- sh -c 'while :; do sleep 0.01; done' | {cut} > /dev/null;"
              " exit ${PIPESTATUS[0]}")
    started = time.monotonic()
    done = subprocess.run(["bash", "-c", script], cwd=tmp_path, stderr=subprocess.PIPE,
                          text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert time.monotonic() - started < 20  # (not --duration's end)
    assert "error" not in done.stderr and "warning" not in done.stderr, done.stderr


@pytest.mark.parametrize("args", [["-o", "-"], ["--decode"], ["-o", "-", "--duration", "30"]])
def test_a_full_stdout_is_an_output_error(tmp_path, args):
    """``ehtool record -o - ... > /dev/full`` (or ``--decode``) exited 0 without a word
    (ENOSPC was taken for a reader going away): exit 1, as the exit table says, with
    one line (the decoder's, with ``--decode``)."""
    if "--decode" in args and _decoder_problem():
        pytest.skip(_decoder_problem())
    command = [] if "--duration" in args else ["--", "sh", "-c", "sleep 1; exit 3"]
    with open("/dev/full", "wb") as full:
        done = subprocess.run([sys.executable, "-m", "ehtool", "record", *args,
                               ":sched:sched_switch", *command], cwd=tmp_path, stdout=full,
                              stderr=subprocess.PIPE, text=True, timeout=60, check=False)
    assert done.returncode == 1, done.stderr
    assert done.stderr.splitlines()[-1] == (
        "ehtool: error: cannot write output: No space left on device"), done.stderr


def test_pipe_mode_with_command_keeps_the_commands_output_out_of_the_stream(tmp_path):
    """With -o -, stdout is perf's data: COMMAND's stdout goes to stderr."""
    problem = _decoder_problem()
    if problem:
        pytest.skip(problem)
    out = tmp_path / "mix.data"
    with open(out, "wb") as f:
        done = ehtool("record", "-o", "-", ":sched:sched_process_exec", "--",
                      "sh", "-c", "echo hello-from-command", stdout=f, stderr=subprocess.PIPE)
    assert done.returncode == 0, done.stderr
    assert b"hello-from-command\n" in done.stderr
    assert b"hello-from-command" not in out.read_bytes()
    with open(out, "rb") as f:
        decoded = ehtool("decode", "-", stdin=f)
    assert decoded.returncode == 0, decoded.stderr
    events = json.loads(decoded.stdout.decode("utf-8-sig"))["stdin"]
    assert any(e["n"] == "sched:sched_process_exec" for e in events)


def test_live_decode_prints_an_early_event_while_recording(tmp_path):
    """perf passes a lone event on at once (--no-buffering), not when it stops."""
    problem = _decoder_problem()
    if problem:
        pytest.skip(problem)
    probe = tmp_path / "ehtool-live-probe"
    probe.symlink_to("/bin/true")  # its exec event names this unique path
    proc = subprocess.Popen([sys.executable, "-m", "ehtool", "record", "--decode",
                             "--duration", "8", ":sched:sched_process_exec"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path)
    try:
        line = proc.stderr.readline()
        assert b"recording (for 8 s)" in line, line + proc.stderr.read()
        subprocess.run([str(probe)], check=True)
        seen, got = None, b""
        # bytes as they arrive: the document's last event line ends only with the next one
        while chunk := os.read(proc.stdout.fileno(), 1 << 16):
            got += chunk
            if str(probe).encode() in got:
                seen = time.monotonic()
                break
        assert seen is not None, "the event was never printed"
        # keep reading: on a busy host more exec events follow and would fill the pipe
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        ended = time.monotonic()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert ended - seen > 4, f"printed only {ended - seen:.1f} s before the end"


def test_perf_arg_error_names_perfs_complaint(tmp_path):
    done = ehtool("record", "-o", str(tmp_path / "x.data"), "--perf-arg=--bogus",
                  ":sched:sched_switch", text=True)
    assert done.returncode == 5
    assert "Error: unknown option `bogus'" in done.stderr
    assert "Usage:" not in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "x.data").exists()


def test_an_output_perf_cannot_write_is_named(tmp_path):
    """perf exits 255 without a word when ``-o`` is /dev/full: the error says why."""
    done = ehtool("record", "-o", "/dev/full", ":sched:sched_switch", "--", "true", text=True)
    assert done.returncode == 5, done.stderr
    assert done.stderr.splitlines() == [
        "ehtool: error: perf exited with status 255 while starting: -o /dev/full is a "
        "character device, which perf may not write its header to (give a file, a FIFO, "
        "or '-o -' for a pipe)"]
    done = ehtool("record", "-o", os.devnull, ":sched:sched_switch", "--", "true", text=True)
    assert done.returncode == 0, done.stderr


def test_a_hangup_ignored_when_record_starts_stays_ignored(tmp_path):
    """``nohup ehtool record --duration 2 ...``: a SIGHUP stopped the recording (its
    handler replaced the ignore nohup set); it runs its two seconds now."""
    import os
    import signal

    def ignore_hup() -> None:
        signal.signal(signal.SIGHUP, signal.SIG_IGN)

    started = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "ehtool", "record", "--duration", "2", "-o",
                             "x.data", ":sched:sched_switch"], cwd=tmp_path,
                            stderr=subprocess.PIPE, text=True, preexec_fn=ignore_hup)
    time.sleep(0.5)
    os.kill(proc.pid, signal.SIGHUP)
    err = proc.communicate(timeout=60)[1]
    assert proc.returncode == 0, err
    assert time.monotonic() - started >= 2, err


def _decoder_of(pid: int) -> int | None:
    """The pid of ``ehtool record --decode``'s decoder (``python -m ehtool decode ... -``),
    or None. A child between its fork and its exec (``perf version``, ``perf record -h``,
    perf itself) still shows the recorder's own command line, whose ``--decode`` holds
    ``decode`` too: only an argument that is ``decode`` itself names the decoder. A child
    may also end while it is looked at."""
    import os

    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children") as f:
                children = f.read().split()
        except OSError:
            continue
        for child in children:
            try:
                with open(f"/proc/{child}/cmdline", "rb") as cmd:
                    if b"decode" in cmd.read().split(b"\0"):
                        return int(child)
            except OSError:
                continue
    return None


def test_a_decoder_killed_by_a_signal_is_said_and_its_status_is_the_shells(tmp_path):
    """``record --decode`` whose decoder was killed (SIGKILL): exit 247 without a word
    (its negative status given to sys.exit); now 137 and a warning naming the signal."""
    import os
    import signal

    if _decoder_problem():
        pytest.skip(_decoder_problem())
    proc = subprocess.Popen([sys.executable, "-m", "ehtool", "record", "--decode",
                             "--duration", "20", ":sched:sched_switch"], cwd=tmp_path,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    decoder = None
    while decoder is None and time.monotonic() < deadline:
        time.sleep(0.1)
        decoder = _decoder_of(proc.pid)
    assert decoder is not None, "no decoder started"
    time.sleep(1.0)  # (perf is recording)
    os.kill(decoder, signal.SIGKILL)
    err = proc.communicate(timeout=60)[1]
    assert proc.returncode == 128 + signal.SIGKILL, err
    assert "ehtool: warning: the decoder was killed by SIGKILL" in err
