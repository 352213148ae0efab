"""SIGTERM and SIGHUP as a clean exit: ``finally`` blocks and context managers run
(``ehtool decode -o FILE`` removes its temporary file), and the exit status is the
conventional 128 + the signal number, as if the signal had killed the process.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

from ehtool.cli import importing as _importing
from ehtool.errors import SignalExit

__all__ = ["SignalExit", "TERMINATING", "exit_on_signals"]

#: the signals that end a command cleanly (SIGINT already raises KeyboardInterrupt)
TERMINATING = (signal.SIGTERM, signal.SIGHUP)
#: seconds between checks whether an import that delays the exit has finished
_RETRY = 0.005


@contextmanager
def exit_on_signals(signals: tuple[int, ...] = TERMINATING) -> Iterator[None]:
    """Raise :class:`SignalExit` on ``signals`` inside the block.

    A signal already ignored (``nohup``) stays ignored. A signal that arrives
    during an import is held until the import is done (SIGALRM polls): an
    exception inside an extension module's initialisation (orjson's) can crash
    the interpreter. After the first signal the others are ignored, so a second
    one cannot cut the cleanup short; the previous handlers come back afterwards.
    """
    pending: list[int] = []

    def handler(signum: int, frame: FrameType | None) -> None:
        if signum == signal.SIGALRM:
            if not pending:
                return
            signum = pending[0]
        if _importing(frame):
            pending[:] = [signum]
            signal.setitimer(signal.ITIMER_REAL, _RETRY)
            return
        for sig in old:
            signal.signal(sig, signal.SIG_IGN)
        raise SignalExit(signum)

    old = {sig: signal.getsignal(sig) for sig in signals
           if signal.getsignal(sig) is not signal.SIG_IGN}
    old[signal.SIGALRM] = signal.getsignal(signal.SIGALRM)
    for sig in old:
        signal.signal(sig, handler)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        for sig, previous in old.items():
            signal.signal(sig, previous if previous is not None else signal.SIG_DFL)
