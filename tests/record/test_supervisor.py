"""Recorder (the whole session) with a fake perf and a fake tracepoint holder."""

from __future__ import annotations

import json
import signal
import threading
import time
from pathlib import Path

import pytest

from ehtool.errors import ExternalError, UsageError
from ehtool.record import supervisor
from ehtool.record.specs import parse_spec
from ehtool.record.supervisor import Recorder, RecordOptions

from .test_stream import LOST, LOST_RECORDS, lossy_stream


class FakeHolder:
    """Stands in for TracepointHolder: remembers what happened."""

    instances: list[FakeHolder] = []

    def __init__(self, specs):
        self.specs = list(specs)
        self.calls: list[str] = []
        FakeHolder.instances.append(self)

    def plan(self):
        self.calls.append("plan")
        return []

    def acquire(self):
        self.calls.append("acquire")
        return [s.tracepoint for s in self.specs]

    def release(self):
        self.calls.append("release")
        return []


@pytest.fixture
def env(fake_perf, monkeypatch, tmp_path):
    FakeHolder.instances = []
    monkeypatch.setattr(supervisor, "TracepointHolder", FakeHolder)
    monkeypatch.setattr("ehtool.record.checks.check_permissions", lambda perf, tracefs: None)
    monkeypatch.setattr("ehtool.record.tracepoints.locate_tracefs", lambda: tmp_path)
    return fake_perf


def _options(fake, **kw) -> RecordOptions:
    messages: list[str] = []
    kw.setdefault("specs", [parse_spec("MyProv_L5K1")])
    kw.setdefault("perf", fake.path)
    kw.setdefault("output", "out.data")
    opts = RecordOptions(scan=False, handle_signals=False, grace=1.0, announce=messages.append,
                         warn=lambda m: messages.append("warning: " + m), **kw)
    opts.messages = messages  # type: ignore[attr-defined]
    return opts


def test_command_starts_after_perf_enabled_and_its_status_is_returned(env):
    # The command fails unless perf had already processed 'enable' when it started.
    opts = _options(env, command=["sh", "-c", f'test -e "{env.marker}" && exit 7'])
    result = Recorder(opts).run()
    assert result.exit_status == 7 and result.command_status == 7
    assert result.stop_reason == "command exited"
    assert result.perf_returncode == -signal.SIGINT
    assert env.events()[-1] == "signal SIGINT"
    assert Path("out.data").read_text().endswith("stopped by SIGINT\n")
    assert FakeHolder.instances[0].calls == ["plan", "acquire", "release"]
    assert result.registered == ["user_events:MyProv_L5K1"]
    assert opts.messages == []  # no "recording, Ctrl-C" line when COMMAND runs
    assert "--no-buffering" not in env.events()[0].split()  # a file needs no live stream


def test_command_killed_by_signal(env):
    result = Recorder(_options(env, command=["sh", "-c", "kill -9 $$"])).run()
    assert result.exit_status == 128 + 9


def test_duration_without_command(env):
    opts = _options(env, duration=0.6)
    started = time.monotonic()
    result = Recorder(opts).run()
    elapsed = time.monotonic() - started
    assert result.stop_reason == "duration" and result.exit_status == 0
    assert 0.6 <= elapsed < 8
    assert opts.messages == ["recording (for 0.6 s), Ctrl-C to stop"]


def test_duration_stops_a_running_command_with_sigterm(env):
    opts = _options(env, duration=0.5, command=["sleep", "30"])
    result = Recorder(opts).run()
    assert result.stop_reason == "duration"
    assert result.command_status == -signal.SIGTERM
    assert result.exit_status == 128 + signal.SIGTERM


def test_stop_request_from_another_thread(env):
    recorder = Recorder(_options(env))
    threading.Timer(0.8, recorder.request_stop, args=("signal SIGTERM",)).start()
    result = recorder.run()
    assert result.stop_reason == "signal SIGTERM" and result.exit_status == 0
    assert env.events()[-1] == "signal SIGINT"


def test_command_that_ignores_sigterm_is_killed_after_grace(env):
    opts = _options(env, command=["sh", "-c", "trap '' TERM; sleep 30 & wait; sleep 30"])
    recorder = Recorder(opts)
    threading.Timer(0.8, recorder.request_stop, args=("signal SIGTERM",)).start()
    started = time.monotonic()
    result = recorder.run()
    assert time.monotonic() - started < 10
    assert result.command_status == -signal.SIGKILL
    assert any("did not exit; killing it" in m for m in opts.messages)


def test_perf_dying_early_fails_before_command_and_releases(env, tmp_path):
    env.mode("die")
    ran = tmp_path / "command-ran"
    opts = _options(env, command=["touch", str(ran)])
    with pytest.raises(ExternalError, match="event syntax error"):
        Recorder(opts).run()
    assert not ran.exists()
    assert FakeHolder.instances[0].calls == ["plan", "acquire", "release"]


def test_perf_exiting_mid_session_is_an_error_and_stops_command(env):
    env.mode("exit-early")
    opts = _options(env, command=["sleep", "30"])
    started = time.monotonic()
    with pytest.raises(ExternalError, match="exited with status 1"):
        Recorder(opts).run()
    assert time.monotonic() - started < 10
    assert FakeHolder.instances[0].calls[-1] == "release"


def test_checks_happen_before_anything_is_registered(env, tmp_path):
    with pytest.raises(UsageError, match="'no-such-command-xyz': not found"):
        Recorder(_options(env, command=["no-such-command-xyz"])).run()
    with pytest.raises(ExternalError, match="not an executable"):
        Recorder(_options(env, perf=str(tmp_path / "missing-perf"))).run()
    with pytest.raises(UsageError, match="cannot be combined with -o FILE"):
        Recorder(_options(env, decode=True, output="x.data")).run()
    with pytest.raises(UsageError, match="does not exist"):
        Recorder(_options(env, output=str(tmp_path / "no" / "dir" / "x.data"))).run()
    with pytest.raises(UsageError, match="--buffer-size"):
        Recorder(_options(env, buffer_size="lots")).run()
    assert all("acquire" not in h.calls for h in FakeHolder.instances)
    assert env.events() == []  # perf never started


def test_cancel_while_perf_starts(env):
    env.mode("noack")
    recorder = Recorder(_options(env, command=["true"]))
    threading.Timer(0.5, recorder.request_stop, args=("signal SIGINT",)).start()
    result = recorder.run()
    assert result.exit_status == 130 and result.command_status is None
    assert FakeHolder.instances[0].calls[-1] == "release"


def test_old_perf_fallback_warns_and_records(env):
    env.mode("good", old=True)
    opts = _options(env, command=["true"])
    result = Recorder(opts).run()
    assert result.exit_status == 0
    assert any("no '--control fifo:'" in m for m in opts.messages)


LOST_WARNING = (f"warning: perf lost {LOST} events ({LOST_RECORDS} LOST records): "
                "use a larger --buffer-size")


@pytest.fixture
def lossy_perf(env, tmp_path):
    """The fake perf, streaming a recording with lost events for ``-o -``."""
    stream = tmp_path / "lossy.data"
    stream.write_bytes(lossy_stream(tmp_path))
    env.monkeypatch.setenv("FAKE_PERF_STREAM", str(stream))
    return env, stream.read_bytes()


def test_pipe_output_is_live_counts_lost_events_and_gets_no_command_output(lossy_perf,
                                                                            capfdbinary):
    env, stream = lossy_perf
    opts = _options(env, output="-", command=["sh", "-c", "echo hello from COMMAND"])
    result = Recorder(opts).run()
    out, err = capfdbinary.readouterr()
    assert out == stream  # perf's bytes, unchanged, and nothing else
    assert b"hello from COMMAND" in err
    assert "--no-buffering" in env.events()[0].split()
    assert result.stats is not None and result.stats.errors == []
    assert (result.stats.samples, result.stats.lost) == (23, LOST)
    assert LOST_WARNING in opts.messages


def test_decode_is_live_and_counts_lost_events(lossy_perf, capfdbinary):
    env, _ = lossy_perf
    opts = _options(env, output="-", decode=True, command=["sh", "-c", "echo hello"])
    result = Recorder(opts).run()
    out, err = capfdbinary.readouterr()
    assert result.exit_status == 0 and result.decoder_status == 0, err
    events = json.loads(out)["stdin"]
    assert len(events) == 23 and events[0]["n"].startswith("sched:")
    assert b"hello" in err
    assert "--no-buffering" in env.events()[0].split()
    assert LOST_WARNING in opts.messages


_READER_GONE = """
import sys
from ehtool.record import supervisor
from ehtool.cli import main

class Holder:
    def __init__(self, specs): self.specs = list(specs)
    def plan(self): return []
    def acquire(self): return [s.tracepoint for s in self.specs]
    def release(self): return []

supervisor.TracepointHolder = Holder
import ehtool.record.checks, ehtool.record.tracepoints
ehtool.record.checks.check_permissions = lambda perf, tracefs: None
ehtool.record.tracepoints.locate_tracefs = lambda: "/nonexistent"
main(["record", "--perf", sys.argv[1], "-o", "-", "--duration", "30", "MyProv_L5K1"])
"""


def test_a_stream_that_cannot_be_written_is_an_output_error(env, tmp_path):
    """``record -o - > /dev/full``: the relay's ENOSPC closed perf's pipe, perf died of
    SIGPIPE, and that was taken for a reader going away (exit 0, nothing said): it is
    an output that cannot be written, exit 1 with its reason."""
    import subprocess
    import sys

    env.mode("stream")
    script = tmp_path / "full.py"
    script.write_text(_READER_GONE)
    with open("/dev/full", "wb") as full:
        done = subprocess.run([sys.executable, str(script), env.path], stdout=full,
                              stderr=subprocess.PIPE, text=True, timeout=60, check=False)
    assert (done.returncode, done.stderr.splitlines()[-1:]) == (
        1, ["ehtool: error: cannot write output: No space left on device"]), done.stderr


def test_perfs_last_bytes_that_cannot_be_written_are_an_output_error(env, tmp_path):
    """perf's last bytes, passed on after it exited, failed to be written (a file size
    limit here): the check had been made before, so it was exit 0, the stream cut."""
    import resource
    import subprocess
    import sys

    env.mode("burst")
    script = tmp_path / "late.py"
    script.write_text(_READER_GONE.replace('"--duration", "30"', '"--duration", "0.5"'))

    def limit() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # (EFBIG instead of the signal)
        resource.setrlimit(resource.RLIMIT_FSIZE, (8192, 8192))

    with open(tmp_path / "out.data", "wb") as out:
        done = subprocess.run([sys.executable, str(script), env.path], stdout=out,
                              stderr=subprocess.PIPE, text=True, timeout=60, check=False,
                              preexec_fn=limit)
    assert (done.returncode, done.stderr.splitlines()[-1:]) == (
        1, ["ehtool: error: cannot write output: File too large"]), (
        done.stderr, (tmp_path / "out.data").stat().st_size, env.log.read_text())


def test_a_reader_that_goes_away_ends_a_pipe_recording_quietly(env, tmp_path):
    """perf (the fake, which SIGPIPE kills as it kills perf) writes into a pipe whose
    reader, ``head -c 100``, has gone: exit 0 at once, nothing said."""
    import subprocess
    import sys

    env.mode("stream")
    script = tmp_path / "reader_gone.py"
    script.write_text(_READER_GONE)
    started = time.monotonic()
    done = subprocess.run(["bash", "-c", f"{sys.executable} {script} {env.path} | head -c 100"
                           " > /dev/null; exit ${PIPESTATUS[0]}"],
                          stderr=subprocess.PIPE, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert time.monotonic() - started < 20
    assert "error" not in done.stderr and "warning" not in done.stderr, done.stderr
