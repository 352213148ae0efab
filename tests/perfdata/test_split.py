"""The walk to a split point: the C record hop equals the Python one, and split points
are the same with either."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from ehtool.perfdata import PerfDataFile
from ehtool.perfdata.split import _STOPS, _hop
from ehtool.perfdata.writer import replay_samples
from golden import golden_path
from impl import require_speedups

REPO = Path(__file__).resolve().parents[2]


def stops(hop, data: bytes, big: bool, table: bytes) -> list[tuple[int, int, int]]:
    out, pos = [], 16 if data[:8] in (b"PERFILE2", b"2ELIFREP") else 0
    while True:
        pos, rtype, size = hop(data, pos, len(data), big, table)
        out.append((pos, rtype, size))
        if rtype < 0 or size < 8:
            return out
        pos += size


@pytest.mark.parametrize("name", ["tests/data/sched-pipe.data", "tests/data/eh-612-pipe.data",
                                  "tests/data/sched-612-zpipe.data"])
def test_c_hop_equals_python_hop(name):
    require_speedups()
    from ehtool.speedups import load

    speedups = load()
    data = (REPO / name).read_bytes()
    rng = random.Random(name)
    tables = [_STOPS, bytes(256), bytes([1]) * 256,
              bytes(rng.random() < 0.1 for _ in range(256))]
    for table in tables:
        assert stops(speedups.hop, data, False, table) == stops(_hop, data, False, table)
    for _ in range(300):  # corrupt bytes: sizes below 8, huge types, the other byte order
        buf = bytearray(data)
        for _ in range(3):
            buf[rng.randrange(16, len(buf))] = rng.randrange(256)
        big = rng.random() < 0.2
        table = rng.choice(tables)
        assert stops(speedups.hop, bytes(buf), big, table) == stops(_hop, bytes(buf), big,
                                                                     table)


def test_split_points_are_the_same_without_the_c_hop(tmp_path, monkeypatch):
    require_speedups()
    path = tmp_path / "big.data"
    replay_samples(golden_path("linuxtracepoints/perf.data"), path, 20_000, round_every=300)

    def points() -> list:
        with PerfDataFile.open(str(path)) as f:
            return [f.split_point(t) for t in f.split_targets(7)]

    with_c = points()
    monkeypatch.setattr("ehtool.perfdata.split.load_speedups", lambda: None)
    assert points() == with_c and None not in with_c
