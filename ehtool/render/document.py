"""The JSON document around the events, framed exactly as perf-decode frames it.

::

    {
    "perf.data": [
      { ... },
      { ... } ],
    "other.data": [ ]
    }

With ``bom=True`` the document starts with a UTF-8 BOM, as perf-decode writes
when its output is not a terminal; ``pretty=True`` indents every member on its
own line instead (``--pretty``). ``JsonLinesWriter`` writes one event per
line instead, for ``jq -c`` and very large files.
"""

from __future__ import annotations

import errno
import os
from typing import BinaryIO, Protocol

from ehtool.render.pretty import indenter
from ehtool.render.style import SPACED, JsonStyle
from ehtool.values.text import text_json

BOM = b"\xef\xbb\xbf"


class EventsWriter(Protocol):
    """What the decode pipeline writes through: :class:`DocumentWriter` or
    :class:`JsonLinesWriter`."""

    out: BinaryIO

    def begin_file(self, name: str) -> None: ...

    def events(self, events: list[bytes]) -> None: ...

    #: how a batch of events is framed to be written in one call: a lead, the separator
    #: between two events, a tail (None: events are framed one by one)
    joining: tuple[bytes, bytes, bytes] | None

    def joined(self, data: bytes, count: int) -> None:
        """Write ``count`` events framed as :attr:`joining` says."""
        ...

    def continuation(self, out: BinaryIO, *, first: bool = False) -> EventsWriter:
        """A writer framing events as followers of this one's (``first``: as the first
        of the array :meth:`begin_file` opened), into ``out``."""
        ...

    def splice(self, src: BinaryIO, count: int) -> None: ...

    def next_file(self, name: str) -> None:
        """Close the array open here and open the next input's, in one write (in a
        continuation that a process writes several inputs through)."""
        ...

    def written(self, counts: list[int]) -> None:
        """Count the events another process wrote to the output through a
        ``continuation(first=True)``: ``counts[0]`` in the array open here, then each
        next one in the array of a further input it opened (:meth:`next_file`)."""
        ...

    def end_file(self) -> None: ...

    def close(self) -> None: ...


class DocumentWriter:
    """``{ "file": [ event, ... ], ... }`` written incrementally to a binary stream."""

    def __init__(self, out: BinaryIO, *, style: JsonStyle = SPACED, bom: bool = False,
                 pretty: bool = False) -> None:
        self.out = out
        self._pretty = pretty
        # perf-decode puts each event on its own line after one space; the spaced
        # style's value separator adds a second one
        self._first = b"\n " + style.first
        self._next = b",\n " + style.first
        self._files = 0
        self._events = 0
        self._open = False
        if pretty:
            self._first, self._next = b"\n    ", b",\n    "
            self._indent = indenter()
        # (each batch leads with its separator: a signal between two writes cannot
        # leave a dangling comma before the closing)
        self.joining = None if pretty else (self._next, self._next, b"")
        out.write((BOM if bom else b"") + b"{\n")

    def begin_file(self, name: str) -> None:
        """Start the array of one input file."""
        self.out.write(self._opening(name, after=self._files > 0))
        self._files += 1
        self._events = 0
        self._open = True

    def _opening(self, name: str, *, after: bool) -> bytes:
        key = text_json(name)
        return (b",\n" if after else b"") + (b"  " if self._pretty else b"") + key + b": ["

    def _closing(self) -> bytes:
        if self._pretty:
            return b"\n  ]" if self._events else b"]"
        return b" ]"

    def next_file(self, name: str) -> None:
        self.out.write(self._closing() + self._opening(name, after=True))
        self._files += 1
        self._events = 0

    def events(self, events: list[bytes]) -> None:
        """Write a batch of already-formatted events."""
        if not events:
            return
        if self._pretty:
            indent = self._indent
            events = [indent(e, 2) for e in events]
        lead = self._next if self._events else self._first
        self.out.write(lead + self._next.join(events))
        self._events += len(events)

    def joined(self, data: bytes, count: int) -> None:
        if not count:
            return
        if self._events:
            self.out.write(data)  # (one call: its lead and its events)
        else:  # the array's first: its own lead (cut after it, the array stays JSON)
            self.out.writelines((self._first, memoryview(data)[len(self._next):]))
        self._events += count

    def event(self, event: bytes) -> None:
        self.events([event])

    def continuation(self, out: BinaryIO, *, first: bool = False) -> DocumentWriter:
        """A writer that frames events for ``out`` as if they followed this one's, or
        (``first``) began the array :meth:`begin_file` opened; no document header. A
        second process formats its half into a file that :meth:`splice` then copies,
        or a whole input that it writes to the same output (:meth:`written`)."""
        other = object.__new__(DocumentWriter)
        other.__dict__.update(self.__dict__, out=out, _events=0 if first else 1, _open=False)
        return other

    def splice(self, src: BinaryIO, count: int) -> None:
        """Copy ``count`` events framed by a :meth:`continuation` from ``src``."""
        if not count:
            return
        if not self._events:  # they were framed as followers: the first lead differs
            lead = src.read(len(self._next))
            assert lead == self._next, lead
            self.out.write(self._first)
        copy_rest(src, self.out)
        self._events += count

    def written(self, counts: list[int]) -> None:
        self._events += counts[0]
        if len(counts) > 1:
            self._files += len(counts) - 1
            self._events = counts[-1]

    def end_file(self) -> None:
        if self._open:
            self.out.write(self._closing())
            self._open = False

    def close(self) -> None:
        """Close any open array and the document (always leaves valid JSON)."""
        self.end_file()
        self.out.write(b"\n}\n")


class JsonLinesWriter:
    """One JSON event object per line; the input file goes into each event's meta."""

    def __init__(self, out: BinaryIO, *, style: JsonStyle = SPACED, bom: bool = False,
                 pretty: bool = False) -> None:
        if pretty:
            raise ValueError("JSON Lines cannot be pretty-printed (one event per line)")
        self.out = out
        self.joining = (b"", b"\n", b"\n")
        if bom:
            out.write(BOM)

    def begin_file(self, name: str) -> None:
        pass

    def events(self, events: list[bytes]) -> None:
        if events:
            self.out.write(b"\n".join(events) + b"\n")

    def joined(self, data: bytes, count: int) -> None:
        if count:
            self.out.write(data)  # (one call: the events and their newlines)

    def event(self, event: bytes) -> None:
        self.out.write(event + b"\n")

    def continuation(self, out: BinaryIO, *, first: bool = False) -> JsonLinesWriter:
        return JsonLinesWriter(out)

    def splice(self, src: BinaryIO, count: int) -> None:
        copy_rest(src, self.out)

    def next_file(self, name: str) -> None:
        pass

    def written(self, counts: list[int]) -> None:
        pass

    def end_file(self) -> None:
        pass

    def close(self) -> None:
        pass


def copy_rest(src: BinaryIO, dst: BinaryIO) -> None:
    """The rest of ``src`` (a worker's part, in a file) to ``dst``: by the kernel
    (sendfile) when both are files, else through a buffer."""
    try:
        src_fd, dst_fd = src.fileno(), dst.fileno()
        start = src.tell()
        end = os.fstat(src_fd).st_size
    except (OSError, AttributeError, ValueError):  # io.BytesIO and the like
        src_fd = -1
    if src_fd >= 0:
        dst.flush()
        try:
            while start < end:
                sent = os.sendfile(dst_fd, src_fd, start, min(end - start, 1 << 30))
                if sent == 0:
                    break
                start += sent
            src.seek(start)
            return
        except OSError as exc:
            if exc.errno not in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
                raise
            src.seek(start)  # (nothing of this part written yet, or up to start)
    while chunk := src.read(1 << 20):
        dst.write(chunk)
