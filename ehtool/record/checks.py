"""Checks made before a recording starts: may this user record tracepoints system-wide?

Sampling tracepoints with their raw data on every CPU needs CAP_PERFMON (or
CAP_SYS_ADMIN, or root) or ``kernel.perf_event_paranoid = -1``; perf also reads
each event's ``id`` and ``format`` under tracefs. Catching this here gives one
clear message instead of perf's own, and nothing is registered or started.
"""

from __future__ import annotations

import os
from pathlib import Path

from ehtool.errors import KernelError

CAP_SYS_ADMIN = 21
CAP_PERFMON = 38
PARANOID_PATH = "/proc/sys/kernel/perf_event_paranoid"
STATUS_PATH = "/proc/self/status"


def effective_caps(status_text: str) -> int | None:
    """The CapEff mask from /proc/self/status text (None when absent)."""
    for line in status_text.splitlines():
        if line.startswith("CapEff:"):
            try:
                return int(line.split(":", 1)[1].strip(), 16)
            except ValueError:
                return None
    return None


def read_paranoid(path: str = PARANOID_PATH) -> int | None:
    try:
        return int(Path(path).read_text().strip())
    except (OSError, ValueError):
        return None


def perf_has_file_caps(perf: str) -> bool:
    """True when the perf binary carries file capabilities (then it may be allowed anyway)."""
    try:
        os.getxattr(perf, "security.capability")
    except OSError:
        return False
    return True


def permission_problem(caps: int | None, paranoid: int | None, perf_file_caps: bool) -> str | None:
    """Why a system-wide tracepoint recording would be refused, or None if it looks allowed."""
    if caps is not None and caps & ((1 << CAP_PERFMON) | (1 << CAP_SYS_ADMIN)):
        return None
    if perf_file_caps or paranoid is None or paranoid <= -1:
        return None
    return (
        "recording tracepoints system-wide needs CAP_PERFMON (or root), or "
        f"kernel.perf_event_paranoid = -1 (it is {paranoid}): run ehtool as root, "
        "or 'sudo sysctl kernel.perf_event_paranoid=-1', or give perf the capability "
        "('sudo setcap cap_perfmon,cap_sys_ptrace,cap_syslog=ep $(command -v perf)')"
    )


def check_permissions(perf: str, tracefs: Path | None) -> None:
    """Raise KernelError (before anything starts) when the kernel would refuse perf
    (exit 4, as any permission the kernel interface refuses)."""
    try:
        status = Path(STATUS_PATH).read_text()
    except OSError:
        status = ""
    problem = permission_problem(effective_caps(status), read_paranoid(), perf_has_file_caps(perf))
    if problem:
        raise KernelError(problem)
    if tracefs is not None:
        events = tracefs / "events"
        if not os.access(events, os.R_OK | os.X_OK):
            raise KernelError(
                f"{events} is not readable, and perf needs it to find tracepoints: run as root, "
                f"or join the group that owns tracefs ('mount -o remount,gid=tracing {tracefs}' "
                "and 'chmod -R g+rx' on it)"
            )
