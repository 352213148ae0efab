"""Run the decode fuzz check (tests/fuzz) offline for many inputs.

    python3 scripts/fuzz_decode.py 100000 [--seed S] [--seconds T] [--work DIR]

Prints the inputs checked, the problems found (each saved under DIR, default
/tmp/ehtool-fuzz/) and the peak RSS. Stops at N inputs or after T seconds.
"""

from __future__ import annotations

import argparse
import random
import resource
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests")]  # (the harness lives with the tests)

from fuzz.harness import RSS_LIMIT_MB, check_input, mutate, seeds  # noqa: E402

import ehtool.decode.parallel as parallel  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("count", type=int)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--seconds", type=float, default=float("inf"))
    parser.add_argument("--work", default="/tmp/ehtool-fuzz",
                        help="where the current input and the problem inputs are written")
    args = parser.parse_args()
    parallel.PARALLEL_MIN_BYTES = parallel.PART_MIN_BYTES = 1 << 12  # small inputs split too
    originals = seeds(REPO)
    rng = random.Random(args.seed)
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    path = work / "input.data"
    started, problems, done = time.monotonic(), 0, 0
    while done < args.count and time.monotonic() - started < args.seconds:
        data = mutate(rng, rng.choice(originals))
        path.write_bytes(data)
        problem = check_input(str(path), RSS_LIMIT_MB)
        done += 1
        if done % 1000 == 0:
            print(f"... {done} inputs, {problems} problems, {time.monotonic() - started:.0f} s",
                  flush=True)
        if problem is not None:
            problems += 1
            (work / f"problem-{done}.data").write_bytes(data)
            print(f"input {done}: {problem}", flush=True)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    print(f"{done} inputs, {problems} problems, {time.monotonic() - started:.0f} s, "
          f"peak RSS {rss} MB (this process; forked workers are separate)")
    if problems:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
