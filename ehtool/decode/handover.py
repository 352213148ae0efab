"""A file worker's output: held until its turn comes, then written to the output itself.

Decoding inputs side by side, a worker's events must follow those of the inputs before
it. Instead of writing them into a part file that the calling process copies later
(one more write and copy of every byte), the worker keeps them, in memory up to a
limit and in a temporary file beyond it, and when its turn comes (the caller has
written everything before, flushed its buffer and let it go) writes them to the output
descriptor it shares with the caller, then the rest of its events as they come.
"""

from __future__ import annotations

import os
from typing import BinaryIO

from ehtool import workers
from ehtool.errors import OutputError, part_file_error
from ehtool.render.document import copy_rest

#: what the file workers waiting for their turn together keep in memory, at most
HELD_BYTES = 256 << 20
#: what one worker keeps in memory before it uses a temporary file: at most, and at
#: least (when the others already keep the rest of HELD_BYTES)
HELD_MAX = 64 << 20
HELD_MIN = 1 << 20
#: buffers per writev call (Linux's IOV_MAX is 1024)
_IOV = 1024


def held_limit(others: int) -> int:
    """Bytes a new worker may keep in memory when the running ones may keep ``others``
    (so all of them keep at most HELD_BYTES, plus HELD_MIN for each one started past
    it)."""
    return max(HELD_MIN, min(HELD_MAX, HELD_BYTES - others))


class HeldOutput:
    """A binary sink (``write``) for a worker forked with ``holds=True``: what it is
    given is held until the worker is let go, then written to ``fd``."""

    def __init__(self, fd: int, limit: int) -> None:
        self.fd = fd
        self.limit = limit
        self._kept: list[bytes] = []
        self._size = 0
        self._spill: BinaryIO | None = None
        self._direct: BinaryIO | None = None

    def write(self, data: bytes) -> int:
        if self._direct is None:
            turn = workers.released()
            if turn is False:  # the caller is gone: nobody will read these events
                raise SystemExit(0)
            if turn:
                self._open()
        if self._direct is not None:
            return self._direct.write(data)
        if self._spill is None and self._size + len(data) <= self.limit:
            self._kept.append(bytes(data))  # (bytes are kept as they are, not copied)
            self._size += len(data)
            return len(data)
        try:
            if self._spill is None:
                import tempfile

                self._spill = tempfile.TemporaryFile(buffering=1 << 20)  # noqa: SIM115
            return self._spill.write(data)
        except OSError as exc:
            raise OutputError(part_file_error(exc)) from None

    def finish(self) -> bool:
        """Wait for the turn and write what is held; False if the caller is gone."""
        if self._direct is None:
            if not workers.hold():
                return False
            self._open()
        assert self._direct is not None
        self._direct.flush()
        return True

    def _open(self) -> None:
        """The turn came: write what is held, then write straight through."""
        kept, self._kept = self._kept, []
        for start in range(0, len(kept), _IOV):
            _writev_all(self.fd, kept[start:start + _IOV])
        self._direct = open(os.dup(self.fd), "wb", buffering=1 << 20)  # noqa: SIM115
        if self._spill is not None:
            spill, self._spill = self._spill, None
            try:
                spill.flush()
                spill.seek(0)
            except OSError as exc:
                raise OutputError(part_file_error(exc)) from None
            with spill:
                copy_rest(spill, self._direct)


def _writev_all(fd: int, buffers: list[bytes]) -> None:
    views = [memoryview(b) for b in buffers if b]
    while views:
        done = os.writev(fd, views)
        while views and done >= len(views[0]):
            done -= len(views[0])
            views.pop(0)
        if done:
            views[0] = views[0][done:]
