"""ehtool.workers: forks with signals held, the end of a worker seen through its pipe."""

from __future__ import annotations

import os
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
