"""completions/ehtool.bash in a real interactive bash (readline splits words at ':' and
'=', which click's own script does not survive): type a line, press TAB, read the line."""

from __future__ import annotations

import os
import pty
import select
import shutil
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def env(tmp_path_factory) -> dict[str, str]:
    if shutil.which("bash") is None:
        pytest.skip("bash is not installed")
    tmp = tmp_path_factory.mktemp("bash")
    exe = tmp / "ehtool"
    exe.write_text(f'#!/bin/sh\nexec {sys.executable} -m ehtool "$@"\n')
    exe.chmod(0o755)
    tracefs = tmp / "tracefs"  # a tracefs with known tracepoints (EHTOOL_TRACEFS)
    for path in ("sched/sched_switch", "sched/sched_wakeup", "syscalls/sys_enter_read",
                 "user_events/MyProvider_L5K1"):
        (tracefs / "events" / path).mkdir(parents=True)
    return {"PATH": f"{tmp}:{os.environ['PATH']}", "PYTHONPATH": str(REPO),
            "EHTOOL_TRACEFS": str(tracefs), "HOME": str(tmp), "PS1": "$ ", "TERM": "dumb",
            "INPUTRC": "/dev/null"}


def _read_until(fd: int, marker: bytes | None, timeout: float) -> bytes:
    """Output until ``marker`` (None: until nothing more came for half a second)."""
    out = b""
    end = time.monotonic() + timeout
    quiet_since = time.monotonic()
    while time.monotonic() < end:
        if marker is not None and marker in out:
            break
        if select.select([fd], [], [], 0.1)[0]:
            try:
                out += os.read(fd, 4096)
            except OSError:
                break
            quiet_since = time.monotonic()
        elif marker is None and time.monotonic() - quiet_since > 0.5 and len(out) > 0:
            break
    return out


def complete(env: dict[str, str], typed: str) -> str:
    """The command line after typing ``typed`` and one TAB."""
    pid, fd = pty.fork()
    if pid == 0:
        os.chdir(REPO)
        os.execve("/bin/bash", ["bash", "--norc", "--noprofile", "-i"], env)
    try:
        os.write(fd, f"source {REPO}/completions/ehtool.bash; echo READY\n".encode())
        _read_until(fd, b"READY\r\n", 20)
        os.write(fd, typed.encode())
        shown = _read_until(fd, None, 5)  # the echo
        os.write(fd, b"\t")
        shown += _read_until(fd, None, 10)  # what the completion added
    finally:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
    line = shown.decode().split("$ ")[-1]
    return line.replace("\x07", "")


@pytest.mark.parametrize(("typed", "line"), [
    ("ehtool record :sch", "ehtool record :sched:"),
    ("ehtool record :sched:sched_s", "ehtool record :sched:sched_switch "),
    ("ehtool record :sys", "ehtool record :syscalls:"),
    ("ehtool record MyProv", "ehtool record MyProvider_L5K1 "),
    ("ehtool decode --format=jsonl --meta +co", "ehtool decode --format=jsonl --meta +comm"),
    ("ehtool decode --meta none,+pi", "ehtool decode --meta none,+pid "),
    ("ehtool decode --format=jsonl --meta +fi", "ehtool decode --format=jsonl --meta +file "),
    ("ehtool decode --level war", "ehtool decode --level warning "),
    ("ehtool decode --format=jso", "ehtool decode --format=json"),
    ("ehtool decode --time=de", "ehtool decode --time=delta "),
    ("ehtool write --level w", "ehtool write --level warning "),
    ("ehtool write --opcode=rec", "ehtool write --opcode=receive "),
    ("ehtool record -- ehto", "ehtool record -- ehtool "),
    ("ehtool decode examples/sch", "ehtool decode examples/sched.data "),
    ("ehtool dec", "ehtool decode "),
])
def test_tab_completes_the_word(env, typed, line):
    assert complete(env, typed) == line
