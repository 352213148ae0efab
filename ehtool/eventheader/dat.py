"""Reader for ``.dat`` captures of raw EventHeader events (EventHeaderInterceptor):
records of ``u32 size`` (including itself), the NUL-terminated tracepoint name,
then the EventHeader bytes."""

from __future__ import annotations

import struct
import sys
from collections.abc import Iterator

from ehtool.errors import STDIN_NAME, InputError


def records(path: str) -> Iterator[tuple[int, str, bytes]]:
    """(offset, tracepoint name, event bytes) of each record (``-``: standard input)."""
    if path == "-":
        data, path = sys.stdin.buffer.read(), STDIN_NAME
    else:
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError as exc:
            raise InputError(f"cannot open: {exc.strerror or exc}", path) from None
    if data.startswith((b"PERFILE2", b"2ELIFREP")):
        raise InputError("a perf.data file, not a .dat capture: leave out --input-format dat",
                         path, 0)
    pos = 0
    while pos < len(data):
        if pos + 4 > len(data):
            raise InputError("truncated record size", path, pos)
        (size,) = struct.unpack_from("<I", data, pos)
        if size < 5:
            raise InputError(f"bad record size {size}", path, pos)
        if pos + size > len(data):
            what = "truncated record" if size <= 0x10000 else "bad record size"
            raise InputError(f"{what}: {size} bytes, {len(data) - pos} left", path, pos)
        record = data[pos + 4:pos + size]
        nul = record.find(b"\0")
        if nul < 0:
            raise InputError("tracepoint name without terminator", path, pos)
        yield pos, record[:nul].decode("utf-8", "surrogateescape"), record[nul + 1:]
        pos += size


def iter_dat(path: str) -> Iterator[tuple[str, bytes]]:
    """Yield (tracepoint name, event bytes) for each record of a little-endian .dat file
    (``-``: standard input)."""
    for _, name, data in records(path):
        yield name, data


def looks_like_capture(head: bytes) -> bool:
    """True when ``head`` (a file's first bytes) starts as a capture does: a record size,
    then a tracepoint name (``Provider_L5K1``...)."""
    name = head[4:].split(b"\0", 1)[0]
    return (5 <= int.from_bytes(head[:4], "little") <= 0x10000 and len(name) >= 2
            and name.replace(b"_", b"").replace(b":", b"").isalnum())
