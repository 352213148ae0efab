"""Decode 1,000,000 events to Parquet and run a group-by with ehtool query, beside the JSON
decode of the same file: wall time and peak RSS of each.

    python3 bench/bench_analysis.py [--events N] [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
GOLDEN = REPO / ".." / "shared" / "golden" / "linuxtracepoints" / "perf.data"


def run(argv: list[str]) -> tuple[float, int]:
    """(wall seconds, peak RSS MB) of a command, measured by a fresh child."""
    code = ("import resource, subprocess, sys, time\n"
            "t = time.perf_counter()\n"
            "subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, check=True)\n"
            "print(time.perf_counter() - t, "
            "resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n")
    out = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True,
                         check=True, cwd=REPO).stdout.split()
    return float(out[0]), int(out[1]) // 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--keep", type=Path, help="keep the generated files here")
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="ehtool-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    data = work / f"mix-{args.events}.data"
    if not data.exists():
        subprocess.run([sys.executable, "-c",
                        "import sys; from ehtool.perfdata.writer import replay_samples; "
                        "replay_samples(sys.argv[1], sys.argv[2], int(sys.argv[3]), "
                        "attr_size=128)", str(GOLDEN), str(data), str(args.events)],
                       check=True, cwd=REPO)
    ehtool = [sys.executable, "-m", "ehtool"]
    print(f"{args.events:,} events ({data.stat().st_size / 1e6:.0f} MB, the reference "
          "recording's samples replayed)")
    jobs = str(len(os.sched_getaffinity(0)))
    sql = "select provider, event, count(*) from events group by all order by 3 desc"
    for label, argv in (
        ("decode --format jsonl", [*ehtool, "decode", "--format", "jsonl", str(data)]),
        *((f"decode --format parquet -j {j}",
           [*ehtool, "decode", "--format", "parquet", "-j", j, "-o",
            str(work / "out.parquet"), str(data)]) for j in ("1", jobs)),
        *((f"query group-by -j {j}", [*ehtool, "query", "-j", j, "--format", "csv", sql,
                                      str(data)]) for j in ("1", jobs)),
    ):
        wall, rss = run(argv)
        print(f"{label:26} {wall:7.2f} s  {args.events / wall:10,.0f} events/s  "
              f"peak RSS {rss} MB")


if __name__ == "__main__":
    main()
