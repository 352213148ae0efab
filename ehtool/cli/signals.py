"""SIGTERM and SIGHUP as a clean exit: ``finally`` blocks and context managers run
(``ehtool decode -o FILE`` removes its temporary file), and the exit status is the
conventional 128 + the signal number, as if the signal had killed the process.
"""

from __future__ import annotations

import os
import select
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from types import FrameType
from typing import Any

from ehtool import cli
from ehtool.cli import importing as _importing
from ehtool.cli import release_stdout
from ehtool.errors import SignalExit

__all__ = ["SignalExit", "TERMINATING", "exit_on_signals", "interrupting"]

#: the signals that end a command cleanly (SIGINT already raises KeyboardInterrupt)
TERMINATING = (signal.SIGTERM, signal.SIGHUP)
#: seconds between checks whether an import that delays the exit has finished
_RETRY = 0.005
#: the signal :func:`exit_on_signals` holds until an import is done (at most one)
_held: list[int] = []


@contextmanager
def exit_on_signals(signals: tuple[int, ...] = TERMINATING) -> Iterator[None]:
    """Raise :class:`SignalExit` on ``signals`` inside the block, KeyboardInterrupt on
    SIGINT.

    A signal already ignored (``nohup``) stays ignored. A signal that arrives
    during an import is held until the import is done (SIGALRM polls): an
    exception inside an extension module's initialisation (orjson's) can crash
    the interpreter, and exiting there at once would leave what the command began (a
    document half opened, ``-o``'s temporary file). After the first signal the others
    are ignored, so a second one cannot cut the cleanup short; the previous handlers
    come back afterwards.
    """
    def handler(signum: int, frame: FrameType | None) -> None:
        if _output_done():  # (another thread, pyarrow's, may take it: it is dropped)
            return
        if signum == signal.SIGALRM:
            if not _held:
                return
            signum = _held[0]
        if closing or _importing(frame):
            if not _held:  # (the first signal decides)
                _held.append(signum)
            if not closing:
                signal.setitimer(signal.ITIMER_REAL, _RETRY)
            return
        _held.clear()
        for sig in old:
            signal.signal(sig, signal.SIG_IGN)
        _end(signum)

    def unraisable(info: Any) -> None:
        """Python discards an exception raised where nothing can catch it (a weakref
        callback the garbage collector runs, ``__del__``): the signal that ended there
        is held and raised again a few ms later, as during an import."""
        if isinstance(info.exc_value, SignalExit):
            _held[:] = [info.exc_value.signum]
            signal.signal(signal.SIGALRM, handler)
            signal.setitimer(signal.ITIMER_REAL, _RETRY)
            return
        hook(info)

    atomic = sys.modules.get("ehtool.decode.atomic")
    if atomic is not None:  # (a command before, in this process, replaced its output)
        atomic.replaced = False
    closing: list[bool] = []  # (all the handler reads is bound before it is installed)
    hook = sys.unraisablehook
    old = {sig: signal.getsignal(sig) for sig in (*signals, signal.SIGINT)
           if signal.getsignal(sig) is not signal.SIG_IGN}
    old[signal.SIGALRM] = signal.getsignal(signal.SIGALRM)
    try:
        for sig in old:  # (a signal meanwhile ends the block: the handlers come back)
            signal.signal(sig, handler)
        sys.unraisablehook = unraisable
        yield
    finally:
        # first of all: from here on the handler only notes a signal (raised in the
        # middle of this block, it left the signals ignored for the rest of the process)
        closing.append(True)
        sys.unraisablehook = hook
        signal.setitimer(signal.ITIMER_REAL, 0)
        # the output replaced, the command line ignores them to its exit (in-process
        # calls get their handlers back: an ignored signal would pass to their children)
        drop = _output_done() and cli.console
        for sig, previous in old.items():
            signal.signal(sig, signal.SIG_IGN if drop and sig != signal.SIGALRM
                          else previous if previous is not None else signal.SIG_DFL)
        held, _held[:] = _held[:], []
    # (reached unless the block raised: its exception ends the command then, and a signal
    # noted meanwhile is not acted on)
    if held and not _output_done():  # it came during an import, and every retry met
        _end(held[0])                  # another one: acted on here


def _output_done() -> bool:
    """Whether the command is replacing or has replaced its output file
    (``ehtool.decode.atomic.replaced``): a signal then is dropped, also one held since
    (128+N means the output was left as it was)."""
    atomic = sys.modules.get("ehtool.decode.atomic")
    return getattr(atomic, "replaced", False)  # (None or half imported: not yet)


def _end(signum: int) -> None:
    """End the command as signal ``signum`` does: KeyboardInterrupt for SIGINT, else
    :class:`SignalExit` (standard output let go first when it is a pipe)."""
    release_stdout()
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    raise SignalExit(signum)


@contextmanager
def interrupting(interrupt: Callable[[], None]) -> Iterator[None]:
    """Inside the block, SIGINT, SIGTERM or SIGHUP calls ``interrupt()`` from a thread
    (for C code that runs long without Python in between: DuckDB's query, which also
    pulls batches on its own threads), and the block ends with KeyboardInterrupt
    (SIGINT) or :class:`SignalExit`, whatever it raised meanwhile.

    The handlers only note the signal (through ``signal.set_wakeup_fd``), so no
    exception is raised at a random point of the main thread: inside DuckDB's own
    SIGINT check, an at-fork callback, an iterator another thread is running. A signal
    that :func:`exit_on_signals` holds (it came during an import just before) ends the
    block before it runs: left to its SIGALRM, it would be raised inside the block,
    where DuckDB turned it into its own error.
    """
    signals = (signal.SIGINT, *TERMINATING)
    got: list[int] = []
    wake_r, wake_w = os.pipe()
    stop_r, stop_w = os.pipe()
    os.set_blocking(wake_w, False)

    def note(data: bytes) -> None:
        for signum in data:
            if signum in signals and not got:
                got.append(signum)
                interrupt()

    def watch() -> None:
        while True:
            readable, _, _ = select.select([wake_r, stop_r], [], [])
            if wake_r in readable:
                note(os.read(wake_r, 64))
            if stop_r in readable:
                return

    # First the handlers become ones that only note (a Python handler may run in this
    # thread whatever its mask when another thread, DuckDB's, takes the signal): from
    # then on nothing raises here. Noted before the wakeup fd exists, a signal is in
    # ``early``; SIGALRM is taken too (exit_on_signals raises a held signal from it).
    early: list[int] = []

    def noting(signum: int, frame: FrameType | None) -> None:
        early.append(signum)

    held = {*signals, signal.SIGALRM}
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    old: dict[int, Any] = {}
    try:
        for sig in (*signals, signal.SIGALRM):
            handler = signal.getsignal(sig)
            if handler is not signal.SIG_IGN:
                old[sig] = handler
                signal.signal(sig, noting)
    except BaseException:  # raised by a handler before it was replaced
        _restore(old)
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        for fd in (wake_r, wake_w, stop_r, stop_w):
            os.close(fd)
        raise
    old_fd = signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
    watcher = threading.Thread(target=watch, name="ehtool-signals", daemon=True)
    watcher.start()  # (with the signals blocked: they go to the main thread)
    if _held:  # (came during an import just before)
        signal.setitimer(signal.ITIMER_REAL, 0)
        got.append(_held.pop())
    if not got:  # (the first of the signals noted early: a SIGALRM does not count)
        got.extend([sig for sig in early if sig in signals][:1])
    signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    error: BaseException | None = None
    try:
        if got:
            raise SignalExit(got[0])
        yield
    except BaseException as exc:  # noqa: BLE001 - raised below unless a signal came
        error = exc
    finally:  # (the noting handlers stay until the end: nothing raises in between)
        signal.pthread_sigmask(signal.SIG_BLOCK, held)
        os.write(stop_w, b"x")
        watcher.join()
        signal.set_wakeup_fd(old_fd)
        os.set_blocking(wake_r, False)
        with suppress(BlockingIOError):
            note(os.read(wake_r, 64))  # one that came after the watcher stopped
        note(bytes(sig for sig in early if sig in signals))  # (and any the fd missed)
        for fd in (wake_r, wake_w, stop_r, stop_w):
            os.close(fd)
        _restore(old)
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    if got:
        if got[0] == signal.SIGINT:
            raise KeyboardInterrupt from None
        raise SignalExit(got[0]) from None
    if error is not None:
        raise error


def _restore(old: dict[int, Any]) -> None:
    """Put back the handlers ``old`` had."""
    for sig, previous in old.items():
        signal.signal(sig, previous if previous is not None else signal.SIG_DFL)
