"""ehtool.workers: forks with signals held, the end of a worker seen through its pipe."""

from __future__ import annotations

import gc
import os
import resource
import signal
import time

import pytest

from ehtool import workers


def test_a_signal_waits_for_the_end_of_held_signals():
    seen: list[str] = []
    previous = signal.signal(signal.SIGTERM, lambda s, f: seen.append("handler"))
    try:
        with workers.held_signals():
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.05)
            seen.append("block")
        assert seen == ["block", "handler"]
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_the_clis_deferred_signal_timer_waits_too():
    """The CLI raises a signal that came during an import from a SIGALRM handler
    (ehtool.cli.signals): held too, or it would cut a fork short with the child
    forked and not yet recorded (a worker then outlived the decode)."""
    seen: list[str] = []
    previous = signal.signal(signal.SIGALRM, lambda s, f: seen.append("alarm"))
    try:
        with workers.held_signals():
            signal.setitimer(signal.ITIMER_REAL, 0.001)
            time.sleep(0.05)
            seen.append("block")
        assert seen == ["block", "alarm"]
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def test_a_worker_starts_with_signals_held_and_its_end_is_seen():
    r, w = os.pipe()

    def run() -> None:
        held = signal.pthread_sigmask(signal.SIG_BLOCK, [])
        os.write(w, b"held" if set(workers.HELD) <= held else b"open")
        workers.release()
        os.write(w, b"held" if set(workers.HELD) & signal.pthread_sigmask(
            signal.SIG_BLOCK, []) else b"open")

    with workers.held_signals():
        worker = workers.fork(run)
    os.close(w)
    workers.wait_any([worker])
    assert not worker.running and os.WIFEXITED(worker.status)
    assert os.WEXITSTATUS(worker.status) == 0
    assert os.read(r, 100) == b"heldopen"
    os.close(r)


def test_stop_kills_and_reaps_the_running():
    done = workers.fork(lambda: None)
    slow = workers.fork(lambda: time.sleep(60))
    workers.wait_any([done])
    while done.running:  # (both may not end together: wait for the quick one)
        workers.wait_any([done])
    started = time.monotonic()
    workers.stop([done, slow])
    assert time.monotonic() - started < 10
    assert os.WIFSIGNALED(slow.status) and os.WTERMSIG(slow.status) == signal.SIGKILL
    with pytest.raises(ChildProcessError):
        os.waitpid(slow.pid, os.WNOHANG)


def test_a_holding_worker_says_it_is_idle_and_waits_to_be_let_go():
    r, w = os.pipe()

    def run() -> None:
        workers.idle()
        os.write(w, b"released" if workers.hold() else b"gone")

    worker = workers.fork(run, holds=True)
    os.close(w)
    workers.wait_any([worker])
    assert worker.running and worker.idle and not worker.busy
    time.sleep(0.2)
    assert worker.running  # it holds until let go
    workers.let_go(worker)
    while worker.running:
        workers.wait_any([worker])
    assert os.read(r, 100) == b"released"
    os.close(r)


def test_let_go_in_advance_means_no_wait():
    r, w = os.pipe()
    ready_r, ready_w = os.pipe()

    def run() -> None:
        os.read(ready_r, 1)  # (after the owner let it go)
        os.write(w, repr((workers.released(), workers.hold())).encode())

    worker = workers.fork(run, holds=True)
    workers.let_go(worker)
    os.write(ready_w, b"x")
    os.close(w)
    while worker.running:
        workers.wait_any([worker])
    assert os.read(r, 100) == b"(True, True)"
    for fd in (r, ready_r, ready_w):
        os.close(fd)


def test_a_holding_worker_ends_when_its_owner_is_gone(tmp_path):
    """The owner exits (or is killed) without letting a worker go: the worker's wait
    ends (EOF on its go pipe), even though a later worker of the same owner lives on."""
    import subprocess
    import sys

    code = ("import os, time\n"
            "from ehtool import workers\n"
            "a = workers.fork(workers.hold, holds=True)\n"
            "b = workers.fork(lambda: time.sleep(30), holds=True)\n"
            "print(a.pid, b.pid, flush=True)\n"
            "os._exit(0)\n")
    pids = tmp_path / "pids"
    with open(pids, "w") as out:
        subprocess.run([sys.executable, "-c", code], stdout=out, timeout=60, check=True)
    first, second = map(int, pids.read_text().split())
    try:
        deadline = time.monotonic() + 10
        while _alive(first) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(first)
        assert _alive(second)  # (the later worker did not keep the first one waiting)
    finally:
        os.kill(second, signal.SIGKILL)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1][0] != "Z"
    except FileNotFoundError:
        return False


def _page_faults() -> int:
    """This process's minor page faults so far: a page copied on write after a fork is
    one (unlike its Private_Dirty memory, which also grows when the owner writes to the
    pages they share)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def test_a_collection_in_a_worker_leaves_the_owners_objects_shared():
    # a collection writes to every object it scans: without gc.freeze() a worker would
    # copy each page of the owner's objects (~20 MB here) into memory of its own
    owned = [[i, str(i)] for i in range(200_000)]
    r, w = os.pipe()

    def run() -> None:
        before = _page_faults()
        gc.collect()
        os.write(w, str(_page_faults() - before).encode())

    with workers.held_signals():
        worker = workers.fork(run)
    os.close(w)
    workers.wait_any([worker])
    faults = int(os.read(r, 100))
    os.close(r)
    assert faults < 1024, f"the worker copied {faults} pages of its owner's objects"
    assert len(owned) == 200_000
