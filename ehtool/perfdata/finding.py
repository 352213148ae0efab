"""The perf.data files under a directory, told by their magic, not their names (perf's
``--switch-output`` writes ``perf.data.<timestamp>``; a decode's ``out.json`` may sit
beside them), and the directory recordings (``perf record --threads``) among them."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable

from ehtool.perfdata.directory import is_directory_recording
from ehtool.perfdata.grammar import MAGIC, MAGIC_BE


def read_once(path: str) -> bool:
    """Standard input (``-``), or a path that is neither a regular file nor a directory
    (a FIFO, ``<(...)``): a stream, read once (a FIFO opened twice would lose its
    writer)."""
    if path == "-":
        return True
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


def recordings_under(top: str, unreadable: Callable[[OSError], None]) -> list[str]:
    """The regular files under ``top``, at any depth, that start with the perf.data
    magic, and the directory recordings (each one input: ``top`` itself when it is
    one), in path order; a file that cannot be read is kept (its error is reported
    where it is read). ``unreadable(exc)`` is called for a directory that cannot be
    listed (raise there: its recordings would be left out in silence). FIFOs are not
    opened, symbolic links to directories not followed."""
    found: list[str] = []
    for folder, dirs, names in os.walk(top, onerror=unreadable):
        if is_directory_recording(folder):
            found.append(folder)
            dirs.clear()
            continue
        for name in names:
            path = os.path.join(folder, name)
            try:
                if not stat.S_ISREG(os.stat(path).st_mode):  # (a FIFO would block)
                    continue
                with open(path, "rb") as f:
                    if f.read(len(MAGIC)) not in (MAGIC, MAGIC_BE):
                        continue
            except OSError:
                pass
            found.append(path)
    return sorted(found)
