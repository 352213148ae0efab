"""Several files with ``-j 2`` against ``-j 1``, and what this machine's cores allow.

    python3 bench/bench_jobs.py [--files 4] [--events 250000] [--repeat 5] [--keep DIR]

Builds ``--files`` copies of an EventHeader-only recording (as bench_decode.py does) and
times ``ehtool decode -j 1`` and ``-j 2`` on all of them, alternating. Beside it, the
same CPU-bound Python loop alone and two side by side: their ratio is the most that two
processes can gain here (on a shared VM the second vCPU is often not a whole core), so
``-j 2``'s ratio is printed next to the bound that ratio implies.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_decode import _BUILD, GOLDEN, REPO, in_subprocess, run  # noqa: E402

_LOOP = "x = 0\nfor i in range(15_000_000):\n    x += i\n"


def loop_scaling() -> tuple[float, float]:
    """Wall seconds of the loop alone, and of two copies side by side."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", _LOOP], check=True)
    alone = time.perf_counter() - start
    start = time.perf_counter()
    procs = [subprocess.Popen([sys.executable, "-c", _LOOP]) for _ in range(2)]
    for p in procs:
        p.wait()
    return alone, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=4)
    parser.add_argument("--events", type=int, default=250_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--keep", type=Path, help="keep the generated files in this directory")
    args = parser.parse_args()
    work = Path(args.keep or tempfile.mkdtemp(prefix="ehtool-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    first = work / "eventheader-0.data"
    if not first.exists():
        in_subprocess(_BUILD, GOLDEN, first, args.events, "eventheader")
    paths = [first]
    for k in range(1, args.files):
        path = work / f"eventheader-{k}.data"
        if not path.exists():
            shutil.copyfile(first, path)
        paths.append(path)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(REPO / "ehtool")],
                   stdout=subprocess.DEVNULL, check=False)
    base = [sys.executable, "-m", "ehtool", "decode", *map(str, paths)]
    walls: dict[str, list[float]] = {"1": [], "2": []}
    loops: list[float] = []
    for _ in range(args.repeat):
        for jobs in walls:
            done = run([*base, "-j", jobs])
            if done.status:
                raise SystemExit(f"ehtool decode -j {jobs} failed (exit {done.status})")
            walls[jobs].append(done.wall)
        alone, pair = loop_scaling()
        loops.append(pair / alone)
    one, two = (statistics.median(walls[j]) for j in ("1", "2"))
    best = min(walls["2"]) / min(walls["1"])
    pair = statistics.median(loops)
    print(f"{args.files} files of {args.events:,} events ({first.stat().st_size / 1e6:.0f} MB "
          f"each), median of {args.repeat} alternating runs:")
    print(f"  -j 1 {one:.2f} s   -j 2 {two:.2f} s   ratio {two / one:.2f} "
          f"(best runs {best:.2f})")
    print(f"  a CPU-bound loop: two side by side take {pair:.2f}x the time of one, so two "
          f"processes can at best reach {pair / 2:.2f}x of one here")
    if args.keep is None:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
