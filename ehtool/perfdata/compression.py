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


def zstd_decompressor(path: str, offset: int) -> Decompressor:
    """A streaming zstd decompressor (InputError naming the missing binding)."""
    try:
        from compression import zstd  # type: ignore[import-not-found]  # Python 3.14+

        return zstd.ZstdDecompressor()
    except ImportError:
        pass
    try:
        import zstandard
    except ImportError:
        raise InputError("compressed records (perf record -z) need the 'zstandard' package: "
                         "pip install zstandard", path, offset) from None
    obj: Any = zstandard.ZstdDecompressor().decompressobj()
    return obj
