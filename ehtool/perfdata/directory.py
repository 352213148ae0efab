"""Directory recordings (``perf record --threads``): a directory holding ``data``, a
perf.data file whose header has the DIR_FORMAT feature (its attrs, features and the
records perf synthesized at the start), and ``data.0``, ``data.1``... with the records
each of perf's threads wrote: no header, one record after another, and no
FINISHED_ROUND among them (perf orders them all by time).
"""

from __future__ import annotations

import contextlib
import os
import re
import stat

from ehtool.perfdata.grammar import FILE_HEADER_SIZE, MAGIC, MAGIC_BE, Feature, grammar_for

#: the file of a directory recording that has the header
HEADER_FILE = "data"
_DATA_N = re.compile(r"data\.(\d+)")


def has_dir_format(path: str) -> bool:
    """True when ``path`` is a regular perf.data file whose header says it is the
    ``data`` file of a directory recording (False when it cannot be read)."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):  # (a FIFO would block the open)
            return False
        with open(path, "rb") as f:
            head = f.read(FILE_HEADER_SIZE)
    except OSError:
        return False
    if len(head) < FILE_HEADER_SIZE or head[:8] not in (MAGIC, MAGIC_BE):
        return False
    header = grammar_for(head[:8] == MAGIC_BE).file_header.parse(head)
    return header.size == FILE_HEADER_SIZE and bool(
        header.features[Feature.DIR_FORMAT // 64] >> (Feature.DIR_FORMAT % 64) & 1)


def is_directory_recording(path: str) -> bool:
    """True when ``path`` is a directory recording (a directory with a ``data`` file that
    says so)."""
    return os.path.isdir(path) and has_dir_format(os.path.join(path, HEADER_FILE))


def file_to_open(path: str) -> str:
    """The file to open for the recording ``path``: its ``data`` file when it is a
    directory recording, else ``path`` itself."""
    return os.path.join(path, HEADER_FILE) if is_directory_recording(path) else path


def data_files(directory: str) -> list[str]:
    """The ``data.N`` files of a directory recording, in the order of N."""
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    found = sorted((int(m.group(1)), name) for name in names
                   if (m := _DATA_N.fullmatch(name)))
    return [os.path.join(directory, name) for _, name in found]


def recording_size(path: str) -> int:
    """Bytes in a directory recording's files (0 when it cannot be listed)."""
    total = 0
    for name in [os.path.join(path, HEADER_FILE), *data_files(path)]:
        with contextlib.suppress(OSError):
            total += os.stat(name).st_size
    return total
