"""``perf record -z``: PERF_RECORD_COMPRESSED (zstd), file and pipe mode."""

from __future__ import annotations

import io
import struct
import subprocess
import sys
from pathlib import Path

import pytest
import zstandard

from ehtool.decode.pipeline import DecodeOptions, decode_to
from ehtool.perfdata import PerfDataFile

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data"
_COMPRESSED, _TRACING_DATA = 81, 66


def decode(path: Path | str, *args: str, data: bytes | None = None):
    return subprocess.run([sys.executable, "-m", "ehtool", "decode", *args, str(path)],
                          input=data, capture_output=True, cwd=REPO)


def _body(document: bytes) -> bytes:
    return document.split(b"\n", 2)[2]  # without the file name line


def test_compressed_file_equals_perf_injects_copy():
    """perf inject writes the same events with its own framing (it passes COMPRESSED
    records through); the events themselves are checked against perf script in
    tests/decode/test_examples.py."""
    z, plain = decode(DATA / "sched-z.data"), decode(DATA / "sched-z.inject.data")
    assert z.returncode == plain.returncode == 0, z.stderr
    assert _body(z.stdout) == _body(plain.stdout) and z.stdout.count(b'"n":') == 29


def _pipe_records(data: bytes):
    pos = 16
    while pos < len(data):
        rtype, _misc, size = struct.unpack_from("<IHH", data, pos)
        extra = struct.unpack_from("<I", data, pos + 8)[0] if rtype == _TRACING_DATA else 0
        yield rtype, data[pos:pos + size + extra]
        pos += size + extra


@pytest.mark.parametrize("piece", [7, 64, 1000])
def test_records_cut_across_compressed_records(piece):
    """One zstd stream, cut anywhere: records continue in the next COMPRESSED record."""
    data = (DATA / "sched-zpipe.data").read_bytes()
    records = list(_pipe_records(data))
    inner = zstandard.ZstdDecompressor().decompressobj()
    plain = b"".join(inner.decompress(r[8:]) for t, r in records if t == _COMPRESSED)
    stream = zstandard.ZstdCompressor().compress(plain)
    chunks = [stream[i:i + piece] for i in range(0, len(stream), piece)]
    compressed = b"".join(struct.pack("<IHH", _COMPRESSED, 0, 8 + len(c)) + c for c in chunks)
    first = next(i for i, (t, _) in enumerate(records) if t == _COMPRESSED)
    rebuilt = data[:16] + b"".join(
        (compressed if i == first else b"" if t == _COMPRESSED else r)
        for i, (t, r) in enumerate(records))
    want, got = decode("-", "--sort", "file", data=data), decode("-", "--sort", "file",
                                                                 data=rebuilt)
    assert got.returncode == 0, got.stderr
    assert got.stdout == want.stdout and want.stdout.count(b'"n":') == 29


def _rebuilt(data: bytes, stream: bytes, piece: int) -> bytes:
    """The pipe-mode ``data`` with its COMPRESSED records replaced by ``stream`` cut into
    records of ``piece`` bytes, where the first one was."""
    records = list(_pipe_records(data))
    chunks = [stream[i:i + piece] for i in range(0, len(stream), piece)]
    compressed = b"".join(struct.pack("<IHH", _COMPRESSED, 0, 8 + len(c)) + c for c in chunks)
    first = next(i for i, (t, _) in enumerate(records) if t == _COMPRESSED)
    return data[:16] + b"".join((compressed if i == first else b"" if t == _COMPRESSED else r)
                                for i, (t, r) in enumerate(records))


@pytest.mark.parametrize("piece", [7, 1000, 100_000])
def test_several_zstd_frames_are_one_stream(piece):
    """Records compressed again as several zstd frames (perf writes one), a frame ending
    anywhere, also inside a COMPRESSED record: the same events, as perf script reads
    them (it said 'compressed data does not decompress: cannot use a decompressobj
    multiple times')."""
    data = (DATA / "sched-zpipe.data").read_bytes()
    inner = zstandard.ZstdDecompressor().decompressobj()
    plain = b"".join(inner.decompress(r[8:]) for t, r in _pipe_records(data)
                     if t == _COMPRESSED)
    cuts = [0, 1000, 1001, len(plain) // 2, len(plain)]
    stream = b"".join(zstandard.ZstdCompressor().compress(plain[a:b])
                      for a, b in zip(cuts, cuts[1:], strict=False))
    want = decode("-", "--sort", "file", data=data)
    got = decode("-", "--sort", "file", data=_rebuilt(data, stream, piece))
    assert got.returncode == 0, got.stderr
    assert got.stdout == want.stdout and want.stdout.count(b'"n":') == 29


def test_an_empty_compressed_record_is_summarized():
    """info on a COMPRESSED record of no data: no ratio (it failed: 'type NoneType
    doesn't define __round__')."""
    data = (DATA / "sched-zpipe.data").read_bytes() + struct.pack("<IHH", _COMPRESSED, 0, 8)
    done = subprocess.run([sys.executable, "-m", "ehtool", "info", "--json", "-"], input=data,
                          capture_output=True, cwd=REPO, check=False)
    assert done.returncode == 0, done.stderr
    import json

    summary = json.loads(done.stdout)
    assert summary["compression"]["ratio"] is not None  # (the file's other records)
    empty = (DATA / "sched-pipe.data").read_bytes() + struct.pack("<IHH", _COMPRESSED, 0, 8)
    done = subprocess.run([sys.executable, "-m", "ehtool", "info", "-"], input=empty,
                          capture_output=True, cwd=REPO, check=False)
    assert done.returncode == 0, done.stderr
    assert b"zstd, 1 records, 0 bytes -> 0 bytes\n" in done.stdout


@pytest.mark.parametrize("where", ["in-record", "in-stream"])
def test_a_cut_inside_compressed_data_is_reported(where):
    """A stream cut inside a COMPRESSED record (its header runs past the end), or one
    whose zstd data ends inside a record that continues in the next COMPRESSED record."""
    data = (DATA / "sched-zpipe.data").read_bytes()
    records = list(_pipe_records(data))
    last = max(i for i, (t, _) in enumerate(records) if t == _COMPRESSED)
    if where == "in-record":
        cut = data[:16] + b"".join(r for _, r in records[:last]) + records[last][1][:40]
    else:  # as perf writes it: one stream, flushed at the end of each COMPRESSED record;
        # here every 300 bytes of records, so records continue across them; the last
        # COMPRESSED record is missing
        inner = zstandard.ZstdDecompressor().decompressobj()
        plain = b"".join(inner.decompress(r[8:]) for t, r in records if t == _COMPRESSED)
        cobj = zstandard.ZstdCompressor().compressobj()
        pieces = [cobj.compress(plain[i:i + 300]) + cobj.flush(zstandard.COMPRESSOBJ_FLUSH_BLOCK)
                  for i in range(0, len(plain), 300)]
        head = [r for t, r in records if t != _COMPRESSED]
        cut = data[:16] + b"".join(head) + b"".join(
            struct.pack("<IHH", _COMPRESSED, 0, 8 + len(c)) + c for c in pieces[:-1])
    done = decode("-", data=cut)
    assert done.returncode == 1 and done.stderr.count(b"\n") == 1, done.stderr
    assert done.stdout.count(b'"n":') > 0


def test_info_reports_compression():
    with PerfDataFile.open(str(DATA / "sched-z.data")) as f:
        assert sum(1 for _ in f.samples()) == 29
        z = f.compression
    assert z.records >= 1 and z.decompressed > z.compressed > 0
    done = subprocess.run([sys.executable, "-m", "ehtool", "info", str(DATA / "sched-z.data")],
                          capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0 and "compressed" in done.stdout


def test_compressed_files_decode_on_one_process(monkeypatch):
    """The zstd stream starts at the first compressed record: no split point after it."""
    monkeypatch.setattr("ehtool.decode.parallel.PARALLEL_MIN_BYTES", 1)
    monkeypatch.setattr("ehtool.decode.parallel.PART_MIN_BYTES", 1)
    with PerfDataFile.open(str(DATA / "sched-z.data")) as f:
        assert f.split_point() is None
    outs = []
    for jobs in (1, 2):
        out = io.BytesIO()
        assert decode_to(out, [str(DATA / "sched-z.data")], DecodeOptions(jobs=jobs)) == []
        outs.append(out.getvalue())
    assert outs[0] == outs[1]


def test_compressed2_records():
    """COMPRESSED2 (newer perf): header, u64 data_size, the data, padding to 8 bytes."""
    data = (DATA / "sched-zpipe.data").read_bytes()
    rebuilt = [data[:16]]
    for rtype, rec in _pipe_records(data):
        if rtype == _COMPRESSED:
            payload = rec[8:]
            pad = -(16 + len(payload)) % 8
            rec = (struct.pack("<IHHQ", 83, 0, 16 + len(payload) + pad, len(payload))
                   + payload + b"\0" * pad)
        rebuilt.append(rec)
    want = decode("-", data=data)
    got = decode("-", data=b"".join(rebuilt))
    assert got.returncode == 0, got.stderr
    assert got.stdout == want.stdout and got.stdout.count(b'"n":') == 29
