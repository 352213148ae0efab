"""Shared helpers: re-encode recordings in the other byte order, read raw records."""

from __future__ import annotations

import struct
from pathlib import Path

from ehtool.perfdata.grammar import grammar_for
from ehtool.perfdata.reader import PerfDataFile
from ehtool.perfdata.writer import PerfDataWriter, copy_metadata, transcode_record


def record_at(data: bytes, offset: int, big_endian: bool = False) -> bytes:
    """The bytes of the record at ``offset`` (header.size long)."""
    size = struct.unpack_from(">H" if big_endian else "<H", data, offset + 6)[0]
    return data[offset:offset + size]


def transcode_file(src: Path, dst: Path, big_endian: bool = True) -> int:
    """Copy a file-mode recording into ``dst`` in the given byte order; records copied."""
    data = src.read_bytes()
    n = 0
    with PerfDataFile.open(src) as f:
        gs, gd = f.grammar, grammar_for(big_endian)
        w = PerfDataWriter(dst, big_endian=big_endian)
        copy_metadata(w, f)
        for rec in f.records(order="file"):
            layout = rec.desc if rec.desc is not None else f.descs[0]
            out = transcode_record(gs, gd, record_at(data, rec.offset, f.big_endian), layout)
            if out is not None:
                w.add_raw(out)
                n += 1
        w.close()
    return n
