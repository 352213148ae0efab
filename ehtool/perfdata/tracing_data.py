"""The HEADER_TRACING_DATA blob (perf's ``trace-event-info.c`` output) as a construct grammar.

The blob has its own endian byte, independent of the perf.data byte order; it
gives ``long_size``, ``page_size`` and the tracefs ``format`` texts of the
recorded events. Formats are parsed lazily (only those an attr refers to).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field

import construct as c
from construct import this

SIGNATURE = b"\x17\x08\x44tracing"

_ID_RE = re.compile(rb"^ID:\s*(\d+)", re.MULTILINE)


@functools.cache
def _body(big_endian: bool) -> c.Struct:
    """Everything after the endian byte, in the blob's own byte order."""
    u32, u64 = (c.Int32ub, c.Int64ub) if big_endian else (c.Int32ul, c.Int64ul)
    text64 = c.Prefixed(u64, c.GreedyBytes)
    # a format text and its blob offset (error messages name the text)
    format64 = c.Struct("size" / c.Rebuild(u64, c.len_(this.text)), "at" / c.Tell,
                        "text" / c.Bytes(this.size))
    return c.Struct(
        "long_size" / c.Int8ub,
        "page_size" / u32,
        c.Const(b"header_page\0"),
        "header_page" / text64,
        c.Const(b"header_event\0"),
        "header_event" / text64,
        "ftraces" / c.PrefixedArray(u32, format64),
        "systems" / c.PrefixedArray(u32, c.Struct(
            "name" / c.NullTerminated(c.GreedyBytes),
            "formats" / c.PrefixedArray(u32, format64),
        )),
        # the tail is informative only; tolerate blobs cut after the formats
        "kallsyms" / c.Optional(c.Prefixed(u32, c.GreedyBytes)),
        "printk" / c.Optional(c.Prefixed(u32, c.GreedyBytes)),
        "saved_cmdlines" / c.If(
            lambda ctx: _version_number(ctx._.version) >= 0.6,
            c.Optional(c.Prefixed(u64, c.GreedyBytes)),
        ),
    )


def _version_number(text: bytes) -> float:
    try:
        return float(text.decode("ascii"))
    except ValueError:
        return 0.0


#: the whole blob; ``body`` is parsed in the byte order its ``endian`` byte names
TRACING_DATA = c.Struct(
    "signature" / c.Const(SIGNATURE),
    "version" / c.NullTerminated(c.GreedyBytes),
    "endian" / c.Int8ub,
    "body" / c.Switch(this.endian, {0: _body(False), 1: _body(True)}),
)


@dataclass
class TracingData:
    """The parts of a tracing-data blob a decoder needs."""

    version: str
    big_endian: bool
    long_size: int
    page_size: int
    header_page: bytes
    header_event: bytes
    #: ``(system, format text)`` for every event format, ftrace formats first
    formats: list[tuple[str, str]] = field(default_factory=list)
    #: blob offset of each format's text, parallel to ``formats``
    format_offsets: list[int] = field(default_factory=list)
    kallsyms: bytes | None = None
    printk: bytes | None = None
    saved_cmdlines: bytes | None = None

    def format_index(self) -> dict[int, int]:
        """``ID:`` -> index into ``formats`` (and ``format_offsets``); first one wins."""
        out: dict[int, int] = {}
        for i, (_system, text) in enumerate(self.formats):
            m = _ID_RE.search(text.encode("latin-1", "replace"))
            if m:
                out.setdefault(int(m.group(1)), i)
        return out

    def format_offset(self, index: int) -> int | None:
        """Blob offset of format ``index``, None when unknown (a hand-made TracingData)."""
        return self.format_offsets[index] if index < len(self.format_offsets) else None


def parse_tracing_data(blob: bytes) -> TracingData:
    """Parse a tracing-data blob; raises ``construct.ConstructError`` on bad data."""
    obj = TRACING_DATA.parse(blob)
    body = obj.body
    if body is None:
        raise c.ConstructError(f"unknown tracing-data endian byte {obj.endian}")
    formats = [("ftrace", t.text.decode("latin-1")) for t in body.ftraces]
    offsets = [t.at for t in body.ftraces]
    for system in body.systems:
        name = system.name.decode("latin-1")
        formats += [(name, t.text.decode("latin-1")) for t in system.formats]
        offsets += [t.at for t in system.formats]
    return TracingData(
        version=obj.version.decode("latin-1"),
        big_endian=obj.endian == 1,
        long_size=body.long_size,
        page_size=body.page_size,
        header_page=body.header_page,
        header_event=body.header_event,
        formats=formats,
        format_offsets=offsets,
        kallsyms=body.kallsyms,
        printk=body.printk,
        saved_cmdlines=body.saved_cmdlines,
    )


def build_tracing_data(data: TracingData) -> bytes:
    """The blob for ``data`` (used by the writer and the tests)."""
    systems: dict[str, list[bytes]] = {}
    ftraces = []
    for system, text in data.formats:
        if system == "ftrace":
            ftraces.append(dict(text=text.encode("latin-1")))
        else:
            systems.setdefault(system, []).append(dict(text=text.encode("latin-1")))
    return TRACING_DATA.build(dict(
        version=data.version.encode("latin-1"),
        endian=1 if data.big_endian else 0,
        body=dict(
            long_size=data.long_size,
            page_size=data.page_size,
            header_page=data.header_page,
            header_event=data.header_event,
            ftraces=ftraces,
            systems=[dict(name=k.encode("latin-1"), formats=v) for k, v in systems.items()],
            kallsyms=data.kallsyms or b"",
            printk=data.printk or b"",
            saved_cmdlines=data.saved_cmdlines or b"",
        ),
    ))
