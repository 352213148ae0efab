"""Write an output file atomically: a temporary file beside it, renamed on success."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import BinaryIO

from ehtool.errors import EhtoolError


@contextmanager
def atomic_output(path: str) -> Iterator[BinaryIO]:
    """Yield a binary file that replaces ``path`` only if the block succeeds.

    On an exception the temporary file is removed and ``path`` is untouched,
    so readers never see a half-written document. An ``EhtoolError`` raised
    after all output was written (e.g. a truncated input whose complete records
    were decoded) still commits the file: the document is complete and valid.
    """
    directory = os.path.dirname(os.path.abspath(path))
    try:
        fd, tmp = tempfile.mkstemp(prefix=".ehtool-", suffix=".tmp", dir=directory)
    except OSError as exc:
        raise EhtoolError(f"{path}: cannot create output file: {exc.strerror}") from None
    f = os.fdopen(fd, "wb", buffering=1 << 20)
    try:
        yield f
    except EhtoolError:
        _commit(f, tmp, path)
        raise
    except BaseException:
        f.close()
        os.unlink(tmp)
        raise
    else:
        _commit(f, tmp, path)


def _commit(f: BinaryIO, tmp: str, path: str) -> None:
    f.flush()
    os.fchmod(f.fileno(), 0o666 & ~_umask())
    f.close()
    os.replace(tmp, path)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
