"""Forked worker processes, as ``decode -j N``, Parquet and ``query`` use them.

A worker is forked with the terminating signals held (:func:`held_signals`): a Python
handler that raised inside ``os.fork``'s at-fork callbacks would be lost there, and
could leave logging's module lock held for the next fork; the parent raises it once the
worker is recorded. The child starts with them still held and calls :func:`release`
inside its own ``try``, so whatever a signal raises there is its to report. A pipe
tells the parent when a worker is gone: its read end reaches EOF when the worker exits,
however it exits. A worker never collects the objects it inherits (``gc.freeze``):
a collection writes to each object it scans, and so would copy every page the worker
shares with its owner (measured: ~20 MB per analysis worker).

A worker may say, with :func:`idle`, that it has nothing left to compute (a byte on the
same pipe): its owner can then give its core to another. A worker forked with
``holds=True`` may also keep its result until its owner lets it go: :func:`hold` waits
for the owner's :func:`let_go` (a byte on a second pipe) or its exit (EOF there). Such
a worker may then take more tasks instead of exiting: it says it is :func:`done`, and
waits for the owner to :func:`give` it another one (or to be stopped). A worker
that stays costs nothing more to start, and what it mapped and cached is warm for the
next task (a freshly forked one pays a page fault for each page it writes to).
"""

from __future__ import annotations

import contextlib
import gc
import os
import select
import signal
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, BinaryIO

#: the signals held while a process forks (SIGINT from a terminal reaches the workers too)
HELD = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
#: and SIGALRM: the CLI raises a terminating signal that came during an import from its
#: handler (``ehtool.cli.signals``), which would otherwise cut a fork short the same way
_HELD_HERE = (*HELD, signal.SIGALRM)

#: per held_signals() block, innermost last: the signal mask and the Python handlers
#: before it (a worker forked inside restores them with release())
_before: list[tuple[set[int], dict[int, Any]]] = []
#: the owner of the workers reaps them while another thread may kill them (Source.stop)
_reaping = threading.Lock()
#: in the owner: the write ends of the holding workers' go pipes (a worker forked later
#: closes them, so that each one's read end reaches EOF when the owner is gone)
_go_ends: set[int] = set()
#: in a worker: the write end of its ``ended`` pipe, and the read end of its go pipe
_alive = -1
_go = -1
#: in a worker: what its owner said (True: let go, False: gone), once it said it
_answer: bool | None = None


def report_file() -> BinaryIO:
    """A file in memory for a worker's reports to its owner (the owner closes it)."""
    return open(os.memfd_create("ehtool-report", os.MFD_CLOEXEC), "w+b")  # noqa: SIM115


def put_report(f: BinaryIO, report: object) -> None:
    """Add ``report`` (a dataclass) to a worker's report file, as a line of JSON. Its
    text may hold lone surrogates (a path that is not UTF-8, in an error message): the
    standard library's json escapes them, where orjson refuses them."""
    import dataclasses
    import json

    f.write(json.dumps(dataclasses.asdict(report)).encode() + b"\n")  # type: ignore[call-overload]
    f.flush()


def take_reports(f: BinaryIO) -> list[dict[str, Any]]:
    """The reports put into ``f`` since the last take, and ``f`` emptied for the
    worker's next task; none past one that was cut short (its worker killed while it
    wrote it)."""
    import json

    f.seek(0)
    reports = []
    try:
        for line in f.read().splitlines():
            reports.append(json.loads(line))
    except ValueError:
        pass
    finally:
        f.seek(0)
        f.truncate()
    return reports


def ahead(jobs: int) -> int:
    """How many parts may be started or done but not yet handed on, behind the one being
    written: enough to keep ``jobs`` processes busy past a slow part, few enough that
    their temporary files (and descriptors) stay bounded."""
    return 4 * jobs


#: whole inputs go to a worker several at a time while they add up to no more than
#: RUN_BYTES (and an eighth of all the inputs per process) and RUN_FILES: a task has a
#: cost of its own (handed over, reported on, ~1 ms), as much as decoding a small file
RUN_BYTES = 8 << 20
RUN_FILES = 64


def runs(sizes: Sequence[int | None], jobs: int, total: int | None = None) -> list[range]:
    """Consecutive entries grouped into one task each, for ``jobs`` processes: whole
    inputs (their size in bytes) while a run stays within RUN_BYTES, ``total // (8 *
    jobs)`` bytes (``total``: all the inputs' bytes, by default the sum of ``sizes``)
    and RUN_FILES; an entry whose size is None (a part of a split input) runs alone."""
    if total is None:
        total = sum(size for size in sizes if size is not None)
    limit = min(RUN_BYTES, total // max(1, 8 * jobs))
    out: list[range] = []
    run_size = 0
    for k, size in enumerate(sizes):
        last = out[-1] if out else None
        if (size is not None and last is not None and sizes[last.start] is not None
                and len(last) < RUN_FILES and run_size + size <= limit):
            out[-1] = range(last.start, k + 1)
            run_size += size
            continue
        out.append(range(k, k + 1))
        run_size = size or 0
    return out


@dataclass
class Worker:
    """A forked worker: its pid, the read end of a pipe that reaches EOF when it is
    gone, and its wait status once reaped."""

    pid: int
    ended: int
    status: int | None = None
    #: the write end of its go pipe (a worker forked with ``holds=True``), else -1
    go: int = -1
    #: it said it has nothing left to compute (:func:`idle`)
    idle: bool = False
    #: it said its task is done and waits for another (:func:`done`)
    done: bool = False
    #: when it last said it was idle or done (``time.monotonic()``)
    idle_since: float = 0.0

    @property
    def running(self) -> bool:
        return self.status is None

    @property
    def busy(self) -> bool:
        """Running and not idle: it needs a core."""
        return self.status is None and not self.idle


@contextlib.contextmanager
def held_signals() -> Iterator[None]:
    """Hold :data:`HELD` inside the block, and raise one that came meanwhile at its end.

    The signals are blocked in this thread, and (in the main thread) their Python
    handlers only note them: a signal may reach another thread (pyarrow and DuckDB
    start some), and Python then runs the handler in the main thread wherever it is,
    at-fork callbacks included. At the end the handlers are restored, and a noted
    signal is handed to its handler there, raising what it raises.
    """
    noted: list[int] = []
    handlers: dict[int, Any] = {}
    if threading.current_thread() is threading.main_thread():
        for sig in _HELD_HERE:
            handler = signal.getsignal(sig)
            if callable(handler):
                handlers[sig] = handler
                signal.signal(sig, lambda signum, frame: noted.append(signum))
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, _HELD_HERE)
    _before.append((mask, handlers))
    try:
        yield
    finally:
        _before.pop()
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)  # a pending one is noted here
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
        if noted:
            handlers[noted[0]](noted[0], None)


def release(*, handlers: bool = True) -> None:
    """In a worker: the signal mask and handlers its parent had before
    :func:`held_signals` (call it inside a ``try``: a pending signal acts here); with
    ``handlers=False``, the mask only (after :func:`default_signals`)."""
    mask, before = _before[-1] if _before else (set(), {})
    for sig, handler in before.items() if handlers else ():
        signal.signal(sig, handler)
    signal.pthread_sigmask(signal.SIG_SETMASK, mask)


def default_signals() -> None:
    """In a worker: let the terminating signals (and SIGPIPE) end it as they would end a
    plain process; its parent reports them. A signal that was ignored when ehtool
    started (``nohup``, a shell's background job) stays ignored."""
    for sig in HELD:
        if signal.getsignal(sig) is not signal.SIG_IGN:
            signal.signal(sig, signal.SIG_DFL)
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)


def fork(run: Callable[[], object], *, holds: bool = False) -> Worker:
    """Fork a worker that runs ``run()`` and exits with status 0 (``run`` reports its
    own results and errors; it should call :func:`release`). Call it inside
    :func:`held_signals`, and record the worker before the block ends. With ``holds``,
    the worker may :func:`hold` its result until :func:`let_go`."""
    global _alive, _go, _answer
    ended, alive = os.pipe()
    go_read, go_write = os.pipe() if holds else (-1, -1)
    pid = os.fork()
    if pid == 0:  # never returns
        try:
            gc.freeze()  # (see the module's docstring)
            os.close(ended)
            for fd in (go_write, *_go_ends):
                if fd >= 0:
                    os.close(fd)
            _go_ends.clear()
            _alive, _go, _answer = alive, go_read, None
            if go_read >= 0:
                os.set_blocking(go_read, False)  # (released() must not wait)
            run()
        finally:
            os._exit(0)
    os.close(alive)
    if holds:
        os.close(go_read)
        _go_ends.add(go_write)
    return Worker(pid, ended, go=go_write)


def idle() -> None:
    """In a worker: tell the owner it has nothing left to compute (once per task)."""
    os.write(_alive, b"i")


def done() -> bytes | None:
    """In a worker forked with ``holds=True``: tell the owner its task is done, and wait
    for the next one (what the owner gave); None when the owner is gone."""
    global _answer
    try:
        os.write(_alive, b"d")
    except BrokenPipeError:  # the owner is gone
        return None
    _answer = None
    size = _read_go(4)
    return None if size is None else _read_go(int.from_bytes(size, "little"))


def _read_go(size: int) -> bytes | None:
    """``size`` bytes from the go pipe, waiting for them; None at its end."""
    data = b""
    poll = select.poll()
    poll.register(_go, select.POLLIN)
    while len(data) < size:
        try:
            more = os.read(_go, size - len(data))
        except BlockingIOError:
            poll.poll()
            continue
        if not more:
            return None
        data += more
    return data


def hold() -> bool:
    """In a worker forked with ``holds=True``: wait until it is let go (True) or the
    owner is gone (False)."""
    state = released()
    if state is None:
        poll = select.poll()
        poll.register(_go, select.POLLIN)
        while state is None:
            poll.poll()
            state = released()
    return state


def released() -> bool | None:
    """In a worker forked with ``holds=True``: True once let go, False if the owner is
    gone, None while it has said neither (it does not wait)."""
    global _answer
    if _answer is None:
        try:
            _answer = os.read(_go, 1) == b"g"
        except BlockingIOError:
            return None
    return _answer


def let_go(w: Worker) -> None:
    """End a holding worker's wait (or tell it in advance: it need not hold at all)."""
    if w.go >= 0:
        with contextlib.suppress(BrokenPipeError):
            os.write(w.go, b"g")


def ask_to_stop(w: Worker) -> None:
    """Ask a worker that was let go to stop writing where its output may be cut (it
    ends; see :func:`asked_to_stop`)."""
    if w.go >= 0:
        with contextlib.suppress(BrokenPipeError):
            os.write(w.go, b"s")


def asked_to_stop() -> bool:
    """In a worker that was let go: whether its owner asked it to stop (it does not
    wait)."""
    try:
        return os.read(_go, 1) == b"s"
    except BlockingIOError:
        return False


def give(w: Worker, task: bytes) -> None:
    """Give a worker that is :func:`done` its next task (at most PIPE_BUF - 4 bytes:
    written at once, so the worker never sees part of it)."""
    if len(task) > select.PIPE_BUF - 4:
        raise ValueError(f"a task of {len(task)} bytes")
    w.idle = w.done = False
    os.write(w.go, len(task).to_bytes(4, "little") + task)


def _close_go(w: Worker) -> None:
    if w.go >= 0:
        os.close(w.go)
        _go_ends.discard(w.go)
        w.go = -1


def wait_any(workers: Iterable[Worker], seconds: float | None = None) -> None:
    """Sleep until a running worker of ``workers`` ends, becomes idle or is done (with
    none busy: until one ends or is done), or ``seconds`` pass; reap those that ended."""
    waiting = {w.ended: w for w in workers if w.running}
    if not waiting:
        return
    poll = select.poll()
    for fd in waiting:
        poll.register(fd, select.POLLIN)
    for fd, _ in poll.poll(None if seconds is None else max(0, int(seconds * 1000))):
        w = waiting[fd]
        said = os.read(fd, 1)
        if said in (b"i", b"d"):
            if not w.idle:
                w.idle_since = time.monotonic()
            w.idle = True
            w.done = said == b"d"
        else:
            _reap(w)


def stop(workers: Iterable[Worker]) -> None:
    """Kill the running workers of ``workers`` and reap them, with the terminating
    signals held (a second Ctrl-C must not leave some of them running)."""
    with held_signals():
        running = [w for w in workers if w.running]
        for w in running:
            with contextlib.suppress(ProcessLookupError):
                os.kill(w.pid, signal.SIGKILL)
        for w in running:
            _reap(w)


def _reap(w: Worker) -> None:
    with _reaping:  # no kill() between the wait and the status (the pid may be reused)
        try:
            w.status = os.waitpid(w.pid, 0)[1]
        except ChildProcessError:  # reaped elsewhere: it is gone all the same
            w.status = -1
    os.close(w.ended)
    _close_go(w)


def kill(workers: Iterable[Worker]) -> None:
    """Kill the running workers of ``workers`` without reaping them (from another
    thread than their owner's, which reaps them)."""
    with _reaping:
        for w in list(workers):
            if w.running:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(w.pid, signal.SIGKILL)
