"""ehtool write: start-up time against the bare interpreter, and batch encode rate.

    python3 bench/bench_write.py [--runs N] [--events N]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def startup(argvs: list[list[str]], runs: int, env: dict[str, str]) -> list[float]:
    """Median wall time of each argv, runs interleaved so drift hits all alike."""
    times: list[list[float]] = [[] for _ in argvs]
    for argv in argvs:  # warm-up (writes bytecode where the environment allows it)
        subprocess.run(argv, stdout=subprocess.DEVNULL, check=True, cwd=REPO, env=env)
    for _ in range(runs):
        for k, argv in enumerate(argvs):
            start = time.perf_counter()
            subprocess.run(argv, stdout=subprocess.DEVNULL, check=True, cwd=REPO, env=env)
            times[k].append(time.perf_counter() - start)
    return [statistics.median(t) for t in times]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=31)
    parser.add_argument("--events", type=int, default=100_000)
    args = parser.parse_args()
    py = sys.executable
    argvs = [[py, "-c", "pass"],
             [py, "-m", "ehtool", "write", "--dry-run", "MyProvider", "Ev", "n:u32=7", "s=hello"]]
    with tempfile.TemporaryDirectory() as pyc:
        # as installed: pip byte-compiles packages, so modules load from cached bytecode
        installed = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        installed["PYTHONPYCACHEPREFIX"] = pyc
        # as some CI images run: PYTHONDONTWRITEBYTECODE=1 and a source checkout, so
        # every ehtool module is compiled from source on every run
        source = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
        for label, env in (("bytecode cached (installed)", installed),
                           ("no bytecode (source checkout)", source)):
            bare, write = startup(argvs, args.runs, env)
            print(f"{label}:")
            print(f"  python3 -c pass          {bare * 1000:7.1f} ms")
            print(f"  ehtool write --dry-run   {write * 1000:7.1f} ms   ({write / bare:.2f}x; "
                  "goal 1.5x)")
    imports = subprocess.run([py, "-X", "importtime", "-m", "ehtool", "write", "--dry-run",
                              "P", "E"], capture_output=True, text=True, cwd=REPO).stderr
    heavy = [m for m in ("click", "construct", "orjson") if f" {m}\n" in imports
             or f"| {m}" in imports]
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
