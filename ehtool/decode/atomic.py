"""Write an output file atomically: a temporary file beside it, renamed on success."""

from __future__ import annotations

import contextlib
import os
import signal
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import BinaryIO

from ehtool.errors import EhtoolError

#: signals whose Python handlers may raise (SIGINT, and SIGTERM/SIGHUP in ehtool decode)
_HELD = frozenset((signal.SIGINT, signal.SIGTERM, signal.SIGHUP))


@contextmanager
def atomic_output(path: str) -> Iterator[BinaryIO]:
    """Yield a binary file that replaces ``path`` only if the block succeeds.

    On an exception the temporary file is removed and ``path`` is untouched,
    so readers never see a half-written document. An ``EhtoolError`` raised
    after all output was written (e.g. a truncated input whose complete records
    were decoded) still commits the file: the document is complete and valid.
    An exception raised while committing (e.g. ``SystemExit`` from a signal
    handler) removes the temporary file too.
    """
    directory = os.path.dirname(os.path.abspath(path))
    # signals wait until the try below, so no handler can leave the file behind
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, _HELD)
    try:
        fd, tmp = tempfile.mkstemp(prefix=".ehtool-", suffix=".tmp", dir=directory)
    except OSError as exc:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        raise EhtoolError(f"{path}: cannot create output file: {exc.strerror}") from None
    f = os.fdopen(fd, "wb", buffering=1 << 20)
    done = False
    try:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        try:
            yield f
        except EhtoolError:
            _commit(f, tmp, path)
            done = True
            raise
        _commit(f, tmp, path)
        done = True
    finally:
        if not done:
            _discard(f, tmp)


def _discard(f: BinaryIO, tmp: str) -> None:
    """Close and remove the temporary file (already gone when the rename happened)."""
    with contextlib.suppress(OSError):
        f.close()
    with contextlib.suppress(FileNotFoundError):
        os.unlink(tmp)


def _commit(f: BinaryIO, tmp: str, path: str) -> None:
    f.flush()
    os.fchmod(f.fileno(), 0o666 & ~_umask())
    f.close()
    os.replace(tmp, path)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
