"""Shared helpers: re-encode recordings in the other byte order, read raw records."""

from __future__ import annotations

import struct
from pathlib import Path

from ehtool.perfdata import writer


def record_at(data: bytes, offset: int, big_endian: bool = False) -> bytes:
    """The bytes of the record at ``offset`` (header.size long)."""
    size = struct.unpack_from(">H" if big_endian else "<H", data, offset + 6)[0]
    return data[offset:offset + size]


def transcode_file(src: Path, dst: Path, big_endian: bool = True) -> int:
    """Copy a file-mode recording into ``dst`` in the given byte order; records copied."""
    return writer.transcode_file(src, dst, big_endian=big_endian)
