"""Forked worker processes, as ``decode -j N``, Parquet and ``query`` use them.

A worker is forked with the terminating signals held (:func:`held_signals`): a Python
handler that raised inside ``os.fork``'s at-fork callbacks would be lost there, and
could leave logging's module lock held for the next fork. The child starts with them
still held and calls :func:`release` inside its own ``try``, so whatever a signal
raises there is its to report. A pipe tells the parent when a worker is gone: its
read end reaches EOF when the worker exits, however it exits.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

#: the signals held while a process forks (SIGINT from a terminal reaches the workers too)
HELD = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@dataclass
class Worker:
    """A forked worker: its pid, the read end of a pipe that reaches EOF when it is
    gone, and its wait status once reaped."""

    pid: int
    ended: int
    status: int | None = None

    @property
    def running(self) -> bool:
        return self.status is None


@contextlib.contextmanager
def held_signals() -> Iterator[None]:
    """Hold :data:`HELD` in this thread inside the block; one that arrives meanwhile is
    delivered (its handler runs) when the block ends."""
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, HELD)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)


def release() -> None:
    """In a worker: let the signals held since the fork in (call it inside a ``try``)."""
    signal.pthread_sigmask(signal.SIG_UNBLOCK, HELD)


def default_signals() -> None:
    """In a worker: let the terminating signals (and SIGPIPE) end it as they would end a
    plain process; its parent reports them."""
    for sig in (*HELD, signal.SIGPIPE):
        signal.signal(sig, signal.SIG_DFL)


def fork(run: Callable[[], object]) -> Worker:
    """Fork a worker that runs ``run()`` and exits with status 0 (``run`` reports its
    own results and errors; it should call :func:`release`). Call it inside
    :func:`held_signals`, and record the worker before the block ends."""
    ended, alive = os.pipe()
    pid = os.fork()
    if pid == 0:  # never returns
        try:
            os.close(ended)
            run()
        finally:
            os._exit(0)
    os.close(alive)
    return Worker(pid, ended)


def wait_any(workers: Iterable[Worker]) -> None:
    """Sleep until at least one running worker of ``workers`` ends; reap those that did."""
    waiting = {w.ended: w for w in workers if w.running}
    if not waiting:
        return
    readable, _, _ = select.select(list(waiting), [], [])
    for fd in readable:
        _reap(waiting[fd])


def stop(workers: Iterable[Worker]) -> None:
    """Kill the running workers of ``workers`` and reap them."""
    for w in workers:
        if w.running:
            with contextlib.suppress(ProcessLookupError):
                os.kill(w.pid, signal.SIGKILL)
            _reap(w)


def _reap(w: Worker) -> None:
    try:
        w.status = os.waitpid(w.pid, 0)[1]
    except ChildProcessError:  # reaped elsewhere: it is gone all the same
        w.status = -1
    os.close(w.ended)


def kill(workers: Iterable[Worker]) -> None:
    """Kill the running workers of ``workers`` without reaping them (from another
    thread than their owner's, which reaps them)."""
    for w in list(workers):
        if w.running:
            with contextlib.suppress(ProcessLookupError):
                os.kill(w.pid, signal.SIGKILL)
