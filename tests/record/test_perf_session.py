"""PerfSession against a fake perf: handshake, early death, timeouts, escalation."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ehtool.errors import ExternalError
from ehtool.record.perf import PerfConfig, PerfSession


def _session(fake, **kw) -> PerfSession:
    config = PerfConfig(events=["user_events:P_L5K1"], output="out.data")
    return PerfSession(config, perf=fake.path, **kw)


def _control_dir(fake) -> str:
    """The private directory of the control FIFOs on fake perf's command line."""
    argv = fake.events()[0].split()
    control = argv[argv.index("--control") + 1]
    assert control.startswith("fifo:/tmp/ehtool-record-")
    return os.path.dirname(control.removeprefix("fifo:").split(",")[0])


def test_handshake_then_graceful_stop(fake_perf):
    with _session(fake_perf) as perf:
        perf.start()
        assert not fake_perf.marker.exists() or "enable" not in fake_perf.events()
        perf.wait_ready(timeout=20)
        # the ack arrives only after perf processed "enable"
        assert fake_perf.marker.exists()
        assert "enable" in fake_perf.events()
        # perf has the FIFOs open: their directory is gone already, so nothing is left
        # behind even if ehtool is killed now
        assert not os.path.exists(_control_dir(fake_perf))
        assert perf.poll() is None
        rc = perf.stop()
    assert rc == -signal.SIGINT
    assert perf.succeeded and perf.stop_signal == signal.SIGINT
    assert Path("out.data").read_text() == "fake perf data, stopped by SIGINT\n"
    assert perf.samples_reported == 42


def test_perf_dies_early_reports_stderr(fake_perf):
    fake_perf.mode("die")
    with _session(fake_perf) as perf:
        perf.start()
        with pytest.raises(ExternalError) as info:
            perf.wait_ready(timeout=20)
    message = str(info.value)
    assert "exited with status 255 while starting" in message
    assert "event syntax error: 'user_events:Nope'" in message
    assert info.value.exit_code == 5


@pytest.mark.parametrize(("mode", "message"), [
    # perf's error line, not the usage text after it
    ("usage", "perf exited with status 129 while starting: Error: unknown option `bogus'"),
    # errors are one line: perf's stderr was quoted on lines of its own, a line it
    # repeated (40 times on a full disk) as often as it said it
    ("noisy", "perf exited with status 255 while starting: failed to write perf data, "
              "error: No space left on device"),
])
def test_perfs_words_are_quoted_on_the_errors_one_line(fake_perf, mode, message):
    fake_perf.mode(mode)
    with _session(fake_perf) as perf:
        perf.start()
        with pytest.raises(ExternalError) as info:
            perf.wait_ready(timeout=20)
    assert str(info.value) == message


def test_never_acks_times_out_and_stops_perf(fake_perf):
    fake_perf.mode("noack")
    with _session(fake_perf) as perf:
        perf.start()
        started = time.monotonic()
        with pytest.raises(ExternalError, match="did not enable its events within 1 s"):
            perf.wait_ready(timeout=1)
        assert 0.9 < time.monotonic() - started < 10
        assert perf.poll() == -signal.SIGINT  # stopped, not left running
    assert "signal SIGINT" in fake_perf.events()
    assert not os.path.exists(_control_dir(fake_perf)), "close() removes the FIFOs"


def test_wait_ready_can_be_cancelled(fake_perf):
    fake_perf.mode("noack")
    with _session(fake_perf) as perf:
        perf.start()
        deadline = time.monotonic() + 0.3
        with pytest.raises(InterruptedError):
            perf.wait_ready(timeout=20, cancelled=lambda: time.monotonic() > deadline)
        assert perf.poll() is None
    assert perf.returncode == -signal.SIGINT  # close() stopped it


def test_escalates_to_sigterm_when_sigint_is_ignored(fake_perf):
    fake_perf.mode("ignore-int")
    with _session(fake_perf) as perf:
        perf.start()
        perf.wait_ready(timeout=20)
        started = time.monotonic()
        rc = perf.stop(int_timeout=0.5, term_timeout=5)
        assert 0.4 < time.monotonic() - started < 5
    assert rc == -signal.SIGTERM
    assert perf.stop_signal == signal.SIGTERM and perf.succeeded
    assert Path("out.data").read_text() == "fake perf data, stopped by SIGTERM\n"


def test_escalates_to_sigkill(fake_perf):
    fake_perf.mode("ignore-all")
    with _session(fake_perf) as perf:
        perf.start()
        perf.wait_ready(timeout=20)
        rc = perf.stop(int_timeout=0.3, term_timeout=0.3)
    assert rc == -signal.SIGKILL
    assert perf.stop_signal == signal.SIGKILL
    assert not perf.succeeded
    assert "killed by SIGKILL" in perf.failure_message()


def test_old_perf_falls_back_with_warning(fake_perf):
    fake_perf.mode("good", old=True)
    warnings = []
    with _session(fake_perf, warn=warnings.append) as perf:
        assert not perf.use_control
        perf.start()
        started = time.monotonic()
        perf.wait_ready(timeout=20)
        assert time.monotonic() - started >= 0.9
        perf.stop()
    assert "--control" not in fake_perf.events()[0]
    assert len(warnings) == 1 and "--control fifo:" in warnings[0]


def test_perf_exits_mid_session(fake_perf):
    fake_perf.mode("exit-early")
    with _session(fake_perf) as perf:
        perf.start()
        perf.wait_ready(timeout=20)
        perf.process.wait(10)
        assert perf.stop() == 1
        assert not perf.succeeded
        assert "exited with status 1" in perf.failure_message()
        assert "perf: mmap failed" in perf.failure_message()


def test_perf_runs_in_its_own_session(fake_perf):
    with _session(fake_perf) as perf:
        perf.start()
        perf.wait_ready(timeout=20)
        assert os.getsid(perf.pid) == perf.pid  # a terminal's Ctrl-C does not reach it
        perf.stop()


def test_perf_is_stopped_gracefully_when_its_supervisor_is_killed(fake_perf, tmp_path):
    script = tmp_path / "supervise.py"
    script.write_text(
        "import sys, time\n"
        "from ehtool.record.perf import PerfConfig, PerfSession\n"
        "p = PerfSession(PerfConfig(events=['a:b'], output='orphan.data'), perf=sys.argv[1])\n"
        "p.start(); p.wait_ready(20); print(p.pid, flush=True); time.sleep(60)\n"
    )
    proc = subprocess.Popen([sys.executable, str(script), fake_perf.path],
                            stdout=subprocess.PIPE, text=True)
    perf_pid = int(proc.stdout.readline())
    proc.kill()
    proc.wait()
    proc.stdout.close()
    assert not os.path.exists(_control_dir(fake_perf)), "a killed supervisor leaves no FIFOs"
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not Path("orphan.data").exists():
        time.sleep(0.05)
    assert Path("orphan.data").read_text() == "fake perf data, stopped by SIGINT\n"
    with pytest.raises(ProcessLookupError):
        for _ in range(100):
            os.kill(perf_pid, 0)
            time.sleep(0.05)
