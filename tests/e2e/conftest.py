"""Shared fixtures of the kernel end-to-end tests.

They need a kernel with user_events and root. Where that is missing (as on
these development machines) every test here is skipped and
``tests/test_e2e_vm.py`` runs this whole directory inside one boot of the
QEMU guest (``../shared/vm/run-in-vm.sh``) instead.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
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
