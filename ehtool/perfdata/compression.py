"""zstd for ``perf record -z`` (PERF_RECORD_COMPRESSED and COMPRESSED2).

perf compresses the records of a whole recording as ONE zstd stream, cut into
COMPRESSED records wherever its buffers were flushed: a single streaming
decompressor per file, fed record after record, gives the records back, and a
record may continue in the next COMPRESSED record.

The binding is the standard library's ``compression.zstd`` where it exists
(Python 3.14+), else the ``zstandard`` package (maintained, wheels for every
platform CPython supports; a dependency for Python < 3.14).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from ehtool.errors import InputError
from ehtool.perfdata.grammar import RecordType, grammar_for
from ehtool.perfdata.hotpath import body_offset

_G = grammar_for(False)  # (the offsets are the same in both byte orders)
#: where a COMPRESSED record's data starts, and a COMPRESSED2 record's size and data
_DATA_AT = body_offset(_G, RecordType.COMPRESSED, "data")
_DATA_SIZE_AT = body_offset(_G, RecordType.COMPRESSED2, "data_size")
_DATA2_AT = body_offset(_G, RecordType.COMPRESSED2, "data")


class Decompressor(Protocol):
    def decompress(self, data: bytes) -> bytes: ...


@dataclass
class Compression:
    """What a file's compressed records held, and the decoding state."""

    records: int = 0
    compressed: int = 0  # bytes of zstd data
    decompressed: int = 0  # bytes of records it gave
    decompressor: Decompressor | None = field(default=None, repr=False)
    pending: bytes = field(default=b"", repr=False)  # a record cut at a COMPRESSED boundary

    @property
    def ratio(self) -> float | None:
        return self.decompressed / self.compressed if self.compressed else None


def compressed_data(compressed2: bool, buf: Any, pos: int, end: int,
                    u64: Any) -> bytes | None:
    """The zstd data of the COMPRESSED (``compressed2`` False) or COMPRESSED2 record at
    ``buf[pos:end]``; None when a COMPRESSED2 record's data size does not fit it.

    COMPRESSED: the 8-byte header, then data. COMPRESSED2: the header, a u64 data size,
    the data, padding to 8 bytes."""
    if not compressed2:
        return bytes(buf[pos + _DATA_AT:end])
    size = compressed_size(buf, pos, end, u64)
    if not 0 <= size <= end - pos - _DATA2_AT:
        return None
    return bytes(buf[pos + _DATA2_AT:pos + _DATA2_AT + size])


def compressed_size(buf: Any, pos: int, end: int, u64: Any) -> int:
    """The data size a COMPRESSED2 record at ``buf[pos:end]`` says (-1: too short)."""
    return u64(buf, pos + _DATA_SIZE_AT)[0] if end - pos >= _DATA2_AT else -1


def zstd_decompressor(path: str, offset: int) -> Decompressor:
    """A streaming zstd decompressor of consecutive frames (InputError naming the missing
    binding)."""
    try:
        from compression import zstd  # type: ignore[import-not-found]  # Python 3.14+

        return _Frames(zstd.ZstdDecompressor)
    except ImportError:
        pass
    try:
        import zstandard
    except ImportError:
        raise InputError("compressed records (perf record -z) need the 'zstandard' package: "
                         "pip install zstandard", path, offset) from None
    return _Frames(zstandard.ZstdDecompressor().decompressobj)


class _Frames:
    """Decompresses zstd frames one after another as one stream: perf writes one frame
    per recording, but a recording whose records were compressed again (another tool,
    or perf inject) may hold several, each ending where the next begins, even inside a
    COMPRESSED record. A binding's decompressor takes one frame: past its end, a new
    one takes the rest."""

    def __init__(self, make: Any) -> None:
        self._make = make
        self._frame = make()

    def decompress(self, data: bytes) -> bytes:
        out = []
        while data:
            if self._frame.eof:
                self._frame = self._make()
            out.append(self._frame.decompress(data))
            data = self._frame.unused_data if self._frame.eof else b""
        return b"".join(out)
