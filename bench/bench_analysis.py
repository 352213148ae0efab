"""Parquet and a query group-by beside the JSON decode of the same recording: wall, memory.

    python3 bench/bench_analysis.py [--events N] [--keep DIR]

Decodes --events events (default 1,000,000) to JSON Lines (with every CPU) and to
Parquet, and runs a group-by with ``ehtool query``, each with -j 1 and with every CPU.
Memory is shown two ways: the peak RSS of the largest process, and the peak of the PSS
summed over the command and its workers (sampled every 20 ms in a second, untimed run;
pages shared with other processes are split with them).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_decode import GOLDEN, OUTSIDE, REPO  # noqa: E402

_TIMED = """
import resource, subprocess, sys, time
t = time.perf_counter()
subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, check=True)
print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""

#: a second run, not timed: the peak of the PSS summed over the command and its workers
_SAMPLED = """
import os, subprocess, sys, time

def tree(root):
    kids = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        kids.setdefault(ppid, []).append(int(pid))
    todo, found = [root], []
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo += kids.get(pid, [])
    return found

def pss(pids):
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/smaps_rollup") as f:
                total += next(int(line.split()[1]) for line in f if line.startswith("Pss:"))
        except (OSError, StopIteration):
            pass
    return total

proc = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL)
peak = 0
while proc.poll() is None:
    peak = max(peak, pss(tree(proc.pid)))
    time.sleep(0.02)
assert proc.returncode == 0, proc.returncode
print(peak)
"""


def run(argv: list[str]) -> tuple[float, int, int]:
    """(wall seconds, peak RSS MB of the largest process, peak PSS MB of them all) of a
    command: timed in one run, its memory sampled in a second (the sampling costs CPU)."""
    timed = subprocess.run([sys.executable, "-c", _TIMED, *argv], capture_output=True,
                           text=True, check=True, cwd=OUTSIDE).stdout.split()
    sampled = subprocess.run([sys.executable, "-c", _SAMPLED, *argv], capture_output=True,
                             text=True, check=True, cwd=OUTSIDE).stdout.split()
    return float(timed[0]), int(timed[1]) // 1024, int(sampled[0]) // 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--keep", type=Path, help="keep the generated files here")
    args = parser.parse_args()
    work = (args.keep or Path(tempfile.mkdtemp(prefix="ehtool-bench-"))).resolve()
    work.mkdir(parents=True, exist_ok=True)
    data = work / f"mix-{args.events}.data"
    if not data.exists():
        subprocess.run([sys.executable, "-c",
                        "import sys; from ehtool.perfdata.writer import replay_samples; "
                        "replay_samples(sys.argv[1], sys.argv[2], int(sys.argv[3]), "
                        "attr_size=128)", str(GOLDEN), str(data), str(args.events)],
                       check=True, cwd=REPO)
    ehtool = [sys.executable, "-P", "-m", "ehtool"]
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
        wall, rss, pss = run(argv)
        print(f"{label:26} {wall:7.2f} s  {args.events / wall:10,.0f} events/s  "
              f"peak RSS {rss:4} MB (largest process)  {pss:4} MB PSS (all of them)")


if __name__ == "__main__":
    main()
