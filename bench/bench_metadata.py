"""Many distinct EventHeader metadata (issue 13, item 6): time and peak RSS of
``ehtool decode`` on files whose every event has its own metadata.

    python3 bench/bench_metadata.py [--counts 5000,20000,60000] [--jobs 1]

Each file repeats the "Started" event of examples/eventheader.data with the event
name changed to a unique 7-character one (so every event carries new metadata).
"""

from __future__ import annotations

import argparse
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def build(path: Path, count: int) -> None:
    from ehtool.perfdata.grammar import RecordType
    from ehtool.perfdata.hotpath import sample_prefix
    from ehtool.perfdata.reader import PerfDataFile
    from ehtool.perfdata.writer import PerfDataWriter, copy_metadata

    src = REPO / "examples" / "eventheader.data"
    with PerfDataFile.open(src) as f:
        g = f.grammar
        sample = next(s for s in f.samples("file") if b"Started\0" in s.raw)
        size = struct.unpack_from(g.endian + "H", f._mm, sample.offset + 6)[0]
        proto = bytearray(f._mm[sample.offset:sample.offset + size])
        time_at = sample_prefix(g, sample.desc.attr.sample_type,
                                sample.desc.attr.read_format).offsets["time"]
        w = PerfDataWriter(path, big_endian=f.big_endian,
                           attr_size=max(d.attr.size for d in f.descs))
        copy_metadata(w, f)
    name_at = proto.index(b"Started\0")
    put_time = struct.Struct(g.endian + "Q").pack_into
    round_rec = w.record_bytes(RecordType.FINISHED_ROUND)
    chunk = []
    for i in range(count):
        proto[name_at:name_at + 7] = b"E%06d" % i
        put_time(proto, time_at, sample.time + i * 1000)
        chunk.append(bytes(proto))
        if i % 4096 == 4095:
            chunk.append(round_rec)
    w.add_raw(b"".join(chunk) + round_rec)
    w.close()


def run(path: Path, jobs: int) -> tuple[float, float, int]:
    """(wall s, peak RSS MB, events) of one decode."""
    code = ("import resource, subprocess, sys, time; t = time.perf_counter(); "
            "p = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE); "
            "w = time.perf_counter() - t; "
            "print(w, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, "
            "p.stdout.count(b'\"n\":'))")
    out = subprocess.run([sys.executable, "-c", code, sys.executable, "-m", "ehtool",
                          "decode", "-j", str(jobs), "--format", "jsonl", str(path)],
                         capture_output=True, text=True, check=True).stdout.split()
    return float(out[0]), int(out[1]) / 1024, int(out[2])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--counts", default="5000,20000,60000")
    ap.add_argument("--jobs", type=int, default=1)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for count in (int(c) for c in args.counts.split(",")):
            path = Path(tmp) / f"distinct{count}.data"
            build(path, count)
            wall, rss, events = run(path, args.jobs)
            mb = path.stat().st_size / 1e6
            print(f"{count:>7} distinct metadata ({mb:5.1f} MB): {wall:6.2f} s, "
                  f"peak RSS {rss:5.0f} MB, {events} events, "
                  f"{wall / count * 1e6:6.1f} us/event")


if __name__ == "__main__":
    main()
