"""Several files with ``-j 2`` against ``-j 1``, and what this machine's cores allow.

    python3 bench/bench_jobs.py [--files 4] [--events 250000] [--repeat 7] [--keep DIR]

Builds ``--files`` copies of an EventHeader-only recording (as bench_decode.py does) and
times ``ehtool decode -j 1`` and ``-j 2`` on all of them, alternating, output to
/dev/null. Beside them, the floor for any way of sharing the work between two
processes: two independent ``-j 1`` commands, each on half of the files, side by side
(each pays the interpreter's start; nothing is handed over). Prints the median and the
best run of each, and the median of each round's ratio to that round's ``-j 1`` (the
runs of a round are seconds apart: on a machine whose speed drifts, as a shared VM's
does, this ratio moves less than the ratio of the medians). Run it with the Python of
the installation you measure (a venv's start is shorter than one with an editable
install's finder).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_decode import _BUILD, GOLDEN, OUTSIDE, REPO, in_subprocess, run  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=4)
    parser.add_argument("--events", type=int, default=250_000)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--keep", type=Path, help="keep the generated files in this directory")
    args = parser.parse_args()
    work = Path(args.keep or tempfile.mkdtemp(prefix="ehtool-bench-")).resolve()
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
    base = [sys.executable, "-P", "-m", "ehtool", "decode"]
    half = len(paths) // 2
    walls: dict[str, list[float]] = {"-j 1": [], "-j 2": [], "two -j 1 side by side": []}
    for _ in range(args.repeat):
        for jobs in ("1", "2"):
            done = run([*base, "-j", jobs, *map(str, paths)])
            if done.status:
                raise SystemExit(f"ehtool decode -j {jobs} failed (exit {done.status})")
            walls[f"-j {jobs}"].append(done.wall)
        start = time.perf_counter()
        with open(os.devnull, "wb") as null:
            procs = [subprocess.Popen([*base, "-j", "1", *map(str, part)], stdout=null,
                                      cwd=OUTSIDE)
                     for part in (paths[:half], paths[half:])]
            if any(p.wait() for p in procs):
                raise SystemExit("ehtool decode -j 1 failed")
        walls["two -j 1 side by side"].append(time.perf_counter() - start)
    one = statistics.median(walls["-j 1"])
    print(f"{args.files} files of {args.events:,} events ({first.stat().st_size / 1e6:.0f} MB "
          f"each), {args.repeat} alternating runs (median, best; their ratios to -j 1's; "
          "median of each round's ratio):")
    for name, times in walls.items():
        rounds = statistics.median(t / j1 for t, j1 in zip(times, walls["-j 1"], strict=True))
        print(f"  {name:22} {statistics.median(times):.3f} s  {min(times):.3f} s  "
              f"{statistics.median(times) / one:.2f}x  {min(times) / min(walls['-j 1']):.2f}x  "
              f"{rounds:.2f}x")
    if args.keep is None:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
