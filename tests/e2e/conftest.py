"""Shared fixtures of the kernel end-to-end tests.

They need a kernel with user_events and root. Where that is missing (as on
these development machines) every test here is skipped and
``tests/test_e2e_vm.py`` runs this whole directory inside one boot of the
QEMU guest (``tests/vm/run.sh``) instead.
"""

from __future__ import annotations

import itertools
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

TRACEFS = Path("/sys/kernel/tracing")
_COUNTER = itertools.count()


def kernel_problem() -> str | None:
    """Why the e2e tests cannot run natively here, or None when they can."""
    if not (TRACEFS / "user_events_data").exists():
        return "runs inside the VM via tests/test_e2e_vm.py (no user_events here)"
    if os.geteuid() != 0:
        return "needs root (runs inside the VM via tests/test_e2e_vm.py)"
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    problem = kernel_problem()
    for item in items:
        if "tests/e2e/" in str(item.fspath).replace(os.sep, "/"):
            item.add_marker(pytest.mark.kernel)
            if problem is not None:
                item.add_marker(pytest.mark.skip(reason=problem))


@pytest.fixture
def provider() -> str:
    """A provider name unique to this test run."""
    return f"EhE2e{os.getpid()}n{next(_COUNTER)}"


def event_dir(name: str) -> Path:
    return TRACEFS / "events" / "user_events" / name


def ehtool(*args: str, timeout: float = 300, **kw) -> subprocess.CompletedProcess:
    """Run the ehtool CLI as users do."""
    return subprocess.run([sys.executable, "-m", "ehtool", *args], capture_output=True,
                          text=True, timeout=timeout, check=False, **kw)


def decode(path: Path, *args: str) -> list[dict]:
    """``ehtool decode`` of a file; each event also keeps its ordered pairs in ``_pairs``."""
    done = ehtool("decode", *args, str(path))
    assert done.returncode == 0, done.stderr

    def pairs(items: list[tuple[str, object]]) -> dict:
        obj = dict(items)
        obj["_pairs"] = items
        return obj

    return json.loads(done.stdout, object_pairs_hook=pairs)[str(path)]


@contextmanager
def perf_session(events: list[str], out: Path) -> Iterator[object]:
    """``perf record`` of ``events`` that has really enabled them when the block starts."""
    from ehtool.record.perf import PerfConfig, PerfSession

    session = PerfSession(PerfConfig(events=events, output=str(out)))
    session.start()
    try:
        session.wait_ready(60)
        yield session
    finally:
        session.stop()
        session.close()


@contextmanager
def perf_record(events: list[str], out: Path, timeout: float = 60) -> Iterator[subprocess.Popen]:
    """Plain ``perf record -a -e EVENT...`` (not ehtool's supervisor), enabled when the
    block starts: started with ``-D -1 --control fifo:CTL,ACK``, then ``enable`` is
    sent and perf's ``ack`` awaited (the FIFOs live under /tmp: 9p shares have none).
    Stopped with SIGINT at the end; perf's exit status is in ``returncode``."""
    fifo_dir = Path(tempfile.mkdtemp(prefix="ehtool-e2e-perf-", dir="/tmp"))
    ctl, ack = fifo_dir / "ctl", fifo_dir / "ack"
    os.mkfifo(ctl, 0o600)
    os.mkfifo(ack, 0o600)
    ctl_fd = os.open(ctl, os.O_RDWR | os.O_NONBLOCK)
    ack_fd = os.open(ack, os.O_RDWR | os.O_NONBLOCK)
    argv = ["perf", "record", "-a", "-D", "-1", "--control", f"fifo:{ctl},{ack}",
            "-o", str(out)]
    for event in events:
        argv += ["-e", event]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        os.write(ctl_fd, b"enable\n")
        received, deadline = b"", time.monotonic() + timeout
        while b"ack" not in received and proc.poll() is None and time.monotonic() < deadline:
            if select.select([ack_fd], [], [], 0.1)[0]:
                received += os.read(ack_fd, 64)
        if b"ack" not in received:
            why = proc.stderr.read() if proc.poll() is not None else "no 'ack' in time"
            raise AssertionError(f"perf did not enable its events: {why}")
        yield proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        os.close(ctl_fd)
        os.close(ack_fd)
        shutil.rmtree(fifo_dir, ignore_errors=True)
