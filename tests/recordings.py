"""The recordings the tests have, and copies of a recording with its samples' data changed."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from golden import optional

ROOT = Path(__file__).resolve().parents[1]


def every_recording() -> list[Path]:
    """The project's recordings (``examples/``, ``tests/data/``) and the reference one
    (:func:`golden.optional`)."""
    return (sorted((ROOT / "examples").glob("*.data"))
            + sorted((ROOT / "tests" / "data").glob("*.data"))
            + optional("linuxtracepoints/perf.data"))


def rewrite_samples(src: Path, dst: Path, raws: Callable[[Any], list[bytes]]) -> Path:
    """``dst``: ``src``'s metadata and, for each of its samples in file order, a sample of
    each data ``raws(sample)`` gives (``[sample.raw]``: the sample as it was)."""
    from ehtool.perfdata import PerfDataFile
    from ehtool.perfdata.writer import PerfDataWriter, copy_metadata

    with PerfDataFile.open(src) as f:
        w = PerfDataWriter(dst, big_endian=f.big_endian)
        copy_metadata(w, f)
        descs = {d.name: i for i, d in enumerate(f.descs)}
        for s in f.samples(order="file"):
            for raw in raws(s):
                w.add_sample(descs[s.desc.name], id=s.desc.id, time=s.time, pid=s.pid,
                             tid=s.tid, cpu=s.cpu, raw=raw)
        w.close()
    return dst
