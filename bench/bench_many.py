"""A fleet of small recordings: the per-file cost of ``ehtool decode -j 1``.

    python3 bench/bench_many.py [--files 1000] [--source examples/eventheader.data ...]
                                [--repeat 3] [--copy]

Links (``--copy``: copies) ``--files`` names to each source recording in a temporary
directory (several sources: mixed in turn) and times ``ehtool decode -j 1`` on all of
them and on one of them, output to /dev/null. Prints the best wall and CPU seconds of
``--repeat`` runs and the milliseconds per file: (all - one) / (files - 1), so the
interpreter's start and the imports are left out.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_decode import REPO, run  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--source", type=Path, nargs="+",
                        default=[REPO / "examples" / "eventheader.data"])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--copy", action="store_true", help="copies instead of symlinks")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="ehtool-bench-many-"))
    try:
        paths = []
        for i in range(args.files):
            src = args.source[i % len(args.source)].resolve()
            path = work / f"f{i:05d}.data"
            if args.copy:
                shutil.copyfile(src, path)
            else:
                os.symlink(src, path)
            paths.append(str(path))
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(REPO / "ehtool")],
                       stdout=subprocess.DEVNULL, check=False)
        base = [sys.executable, "-P", "-m", "ehtool", "decode", "-j", "1"]
        best = {}
        for name, inputs in (("one", paths[:1]), ("all", paths)):
            runs = [run([*base, *inputs]) for _ in range(args.repeat)]
            if any(r.status for r in runs):
                raise SystemExit(f"ehtool decode failed on {name} (exit {runs[0].status})")
            best[name] = (min(r.wall for r in runs), min(r.cpu for r in runs))
        sources = ", ".join(p.name for p in args.source)
        print(f"{args.files} files ({sources}), best of {args.repeat}:")
        for name, (wall, cpu) in best.items():
            print(f"  {name:4} {wall:7.3f} s wall  {cpu:7.3f} s CPU")
        per = [(best["all"][k] - best["one"][k]) / max(1, args.files - 1) * 1e3 for k in (0, 1)]
        print(f"  per file: {per[0]:.2f} ms wall, {per[1]:.2f} ms CPU")
    finally:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
