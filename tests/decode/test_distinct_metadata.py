"""Many distinct EventHeader metadata (issue 13, item 6): bounded LRU plan caches, the
Python renderer compiled only when the C renderer needs it, output unchanged."""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path

import pytest

from ehtool.decode.pipeline import DecodeOptions, decode_to
from impl import require_speedups

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))
from bench_metadata import build  # noqa: E402  (the benchmark's file, smaller)


@pytest.fixture(scope="module")
def distinct(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("meta") / "distinct.data"
    build(path, 3000)
    return path


def _decode(path: Path, **kw) -> bytes:
    out = io.BytesIO()
    assert decode_to(out, [str(path)], DecodeOptions(jobs=1, jsonl=True, **kw)) == []
    return out.getvalue()


def test_every_event_decodes_with_its_own_name(distinct, monkeypatch):
    monkeypatch.setattr("ehtool.render.eventheader.PLAN_CACHE_MAX", 64)
    lines = _decode(distinct).splitlines()
    assert len(lines) == 3000
    assert all(b'"n": "MyProvider:E%06d"' % i in line for i, line in enumerate(lines))


def test_same_bytes_in_c_and_pure_python_with_small_caches(distinct, monkeypatch):
    require_speedups()
    monkeypatch.setattr("ehtool.render.eventheader.PLAN_CACHE_MAX", 64)
    c = _decode(distinct)
    monkeypatch.setenv("EHTOOL_PURE", "1")
    assert _decode(distinct) == c


def test_caches_are_bounded_lru_and_python_renderers_lazy(distinct, monkeypatch):
    require_speedups()
    monkeypatch.delenv("EHTOOL_PURE", raising=False)
    monkeypatch.setattr("ehtool.render.eventheader.PLAN_CACHE_MAX", 64)
    from ehtool.perfdata import PerfDataFile
    from ehtool.render.eventheader import EventHeaderDecoder
    from ehtool.render.style import SPACED

    decoder = EventHeaderDecoder(SPACED)
    with PerfDataFile.open(str(distinct)) as f:
        samples = list(f.samples("file"))
    fmt = samples[0].desc.format
    hot = samples[0]
    for sample in samples:
        decoder.decode(fmt.name, sample.raw, fmt.eventheader_offset)
        decoder.decode(fmt.name, hot.raw, fmt.eventheader_offset)  # used all along
    plans = decoder._plans
    assert len(plans) <= 64 and len(decoder._infos) <= 64
    hot_event = bytes(hot.raw[fmt.eventheader_offset:])
    assert any(key[1] in hot_event for key in plans)  # the hot one was never evicted
    compiled = [p for p in plans.values() if p.py_render._render is not None]
    assert compiled == []  # the C renderer finished every event: no Python compiled


def test_peak_memory_stays_flat(distinct, tmp_path):
    """A subprocess decoding 30,000 distinct metadata stays under 80 MB."""
    import subprocess

    big = tmp_path / "big.data"
    build(big, 30_000)
    code = ("import resource, subprocess, sys; subprocess.run(sys.argv[1:], "
            "stdout=subprocess.DEVNULL, check=True); "
            "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    rss_kb = int(subprocess.run([sys.executable, "-c", code, sys.executable, "-m", "ehtool",
                                 "decode", "-j", "1", str(big)], capture_output=True, text=True,
                                check=True, env={**os.environ}).stdout)
    assert rss_kb < 80 * 1024, rss_kb


def _recurring(path: Path, count: int) -> None:
    """A few metadata (same first 12 event bytes) in a shuffled order, some events with
    a byte of their metadata or payload flipped, or cut."""
    import random
    import struct

    from ehtool.perfdata.grammar import RecordType
    from ehtool.perfdata.reader import PerfDataFile
    from ehtool.perfdata.writer import PerfDataWriter, copy_metadata

    with PerfDataFile.open(REPO / "examples" / "eventheader.data") as f:
        g = f.grammar
        sample = next(s for s in f.samples("file") if b"Started\0" in s.raw)
        size = struct.unpack_from(g.endian + "H", f._mm, sample.offset + 6)[0]
        proto = bytes(f._mm[sample.offset:sample.offset + size])
        w = PerfDataWriter(path, big_endian=f.big_endian,
                           attr_size=max(d.attr.size for d in f.descs))
        copy_metadata(w, f)
    name_at = proto.index(b"Started\0")
    raw_at = proto.index(sample.raw)
    rng = random.Random(13)
    chunk = []
    for i in range(count):
        rec = bytearray(proto)
        rec[name_at:name_at + 7] = b"E%06d" % rng.randrange(5)
        how = rng.randrange(8)
        if how == 0:  # a metadata byte (the hit's ``expect`` no longer matches)
            k = rng.randrange(raw_at + 20, name_at + 7)
            rec[k] ^= 0x41
        elif how == 1:  # a payload byte after the name
            k = rng.randrange(name_at + 8, len(rec))
            rec[k] ^= 0xFF
        chunk.append(bytes(rec))
        if i % 97 == 96:
            chunk.append(w.record_bytes(RecordType.FINISHED_ROUND))
    w.add_raw(b"".join(chunk) + w.record_bytes(RecordType.FINISHED_ROUND))
    w.close()


def test_recurring_metadata_sharing_their_first_bytes(tmp_path, monkeypatch):
    """The C loop's table of recent fast-path hits (keyed by spec and first 12 bytes,
    checked against the metadata that follows): same bytes as pure Python when several
    metadata share those bytes and some events' metadata or payload is damaged."""
    require_speedups()
    path = tmp_path / "recurring.data"
    _recurring(path, 4000)
    warnings: list[str] = []
    c = _decode(path, warn=warnings.append)
    monkeypatch.setenv("EHTOOL_PURE", "1")
    pure_warnings: list[str] = []
    assert _decode(path, warn=pure_warnings.append) == c
    assert warnings == pure_warnings
    assert c.count(b"\n") == 4000 and c.count(b'"n": "MyProvider:E00000') > 2000
