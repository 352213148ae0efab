"""ehtool write: start-up time against the bare interpreter, and batch encode rate.

    python3 bench/bench_write.py [--runs N] [--events N]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def median_seconds(argv: list[str], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, check=True, cwd=REPO)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--events", type=int, default=100_000)
    args = parser.parse_args()
    py = sys.executable
    bare = median_seconds([py, "-c", "pass"], args.runs)
    write = median_seconds([py, "-m", "ehtool", "write", "--dry-run", "MyProvider", "Ev",
                            "n:u32=7", "s=hello"], args.runs)
    print(f"python3 -c pass            {bare * 1000:7.1f} ms")
    print(f"ehtool write --dry-run     {write * 1000:7.1f} ms   ({write / bare:.2f}x; goal 1.5x)")
    imports = subprocess.run([py, "-X", "importtime", "-m", "ehtool", "write", "--dry-run",
                              "P", "E"], capture_output=True, text=True, cwd=REPO).stderr
    heavy = [m for m in ("construct", "orjson") if f" {m}\n" in imports or f"| {m}" in imports]
    print(f"heavy modules imported     {', '.join(heavy) or 'none'}")

    line = json.dumps({"provider": "MyProvider", "event": "Ev",
                       "fields": [["n", "u32", 7], ["s", "str", "hello"], ["a", "u8[]", [1, 2]]]})
    data = (line + "\n") * args.events
    start = time.perf_counter()
    subprocess.run([py, "-m", "ehtool", "write", "--batch", "--dry-run"], input=data.encode(),
                   stdout=subprocess.DEVNULL, check=True, cwd=REPO)
    seconds = time.perf_counter() - start
    print(f"batch encode (--dry-run)   {args.events / seconds:10,.0f} events/s (goal 200,000)")


if __name__ == "__main__":
    main()
