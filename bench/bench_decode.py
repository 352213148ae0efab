"""Decode speed and memory: ehtool decode vs perf script on 1,000,000-event files.

    python3 bench/bench_decode.py [--events N] [--keep DIR] [--repeat N]

Builds with the project's own perf.data writer, by replaying samples with shifted
timestamps: ``eventheader`` (only the EventHeader samples of the reference
recording: every field type), ``mix`` (all its samples: EventHeader and
sched_switch) and ``sched_switch`` (examples/sched.data). Then times ``ehtool
decode`` to /dev/null (also in pure Python, ``EHTOOL_PURE=1``, when the C hot loops
are built) and ``perf script`` on each, and prints events/s and peak RSS.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
GOLDEN = REPO / ".." / "shared" / "golden" / "linuxtracepoints" / "perf.data"
SCHED = REPO / "examples" / "sched.data"


def run(argv: list[str]) -> tuple[float, int, int]:
    """(wall seconds, peak RSS in MB, exit status) of one command, output to /dev/null."""
    with open(os.devnull, "wb") as null:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=null, stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - start
    return elapsed, usage.ru_maxrss // 1024, os.waitstatus_to_exitcode(status)


_COUNT = """
import sys
from ehtool.perfdata import PerfDataFile
total = eh = 0
with PerfDataFile.open(sys.argv[1]) as f:
    for s in f.samples(order="file"):
        total += 1
        fmt = s.desc.format
        eh += fmt is not None and fmt.eventheader_offset is not None
print(total, eh)
"""
_BUILD = """
import sys
from ehtool.perfdata.writer import replay_samples
only_eh = sys.argv[4] == "eventheader"
replay_samples(sys.argv[1], sys.argv[2], int(sys.argv[3]), attr_size=128,
               select=(lambda s: s.desc.format is not None
                       and s.desc.format.eventheader_offset is not None)
               if only_eh else None)
"""


def in_subprocess(code: str, *args: object) -> str:
    """Run ``code`` in a fresh interpreter, so this process stays small: measured
    children must not inherit a big parent's pages (ru_maxrss counts them)."""
    done = subprocess.run([sys.executable, "-c", code, *map(str, args)], cwd=REPO,
                          capture_output=True, text=True, check=True)
    return done.stdout


def count_samples(path: Path) -> tuple[int, int]:
    """(samples, EventHeader samples) in a file."""
    total, eh = in_subprocess(_COUNT, path).split()
    return int(total), int(eh)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--keep", type=Path, help="keep the generated files in this directory")
    parser.add_argument("--repeat", type=int, default=3,
                        help="runs per tool; the median is printed (this machine is noisy)")
    args = parser.parse_args()
    work = Path(args.keep or tempfile.mkdtemp(prefix="ehtool-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    files = {}
    for label, src in (("eventheader", GOLDEN), ("mix", GOLDEN), ("sched_switch", SCHED)):
        if not src.exists():
            print(f"{label}: source {src} missing, skipped")
            continue
        dst = work / f"{label}.data"
        if not dst.exists():
            t = time.perf_counter()
            # attrs at 128 bytes: Debian's perf 6.1 refuses the newer 136-byte attrs
            in_subprocess(_BUILD, src, dst, args.events, label)
            print(f"built {dst} ({dst.stat().st_size / 1e6:.0f} MB) in "
                  f"{time.perf_counter() - t:.1f} s")
        files[label] = dst
    perf = shutil.which("perf")
    native = in_subprocess("from ehtool.speedups import load; print(load() is not None)")
    native = native.strip() == "True"
    print(f"C hot loops (ehtool._speedups): {'built' if native else 'not built'}")
    print(f"\n{'file':14} {'tool':22} {'events/s':>12} {'seconds':>8} {'peak RSS':>9}"
          f"  (median of {args.repeat}; best events/s)")
    for label, path in files.items():
        total, eh = count_samples(path)
        decode = [sys.executable, "-m", "ehtool", "decode", str(path)]
        tools = [("ehtool decode", decode)]
        if native:
            tools.append(("ehtool decode (pure)", ["env", "EHTOOL_PURE=1", *decode]))
        if perf:
            tools.append(("perf script", [perf, "script", "-i", str(path)]))
        for name, argv in tools:
            runs = sorted(run(argv) for _ in range(max(1, args.repeat)))
            seconds, rss, status = runs[len(runs) // 2]
            rss = max(r[1] for r in runs)
            note = "" if status == 0 else f"  (exit {status})"
            print(f"{label:14} {name:22} {total / seconds:12,.0f} {seconds:8.2f} "
                  f"{rss:7d} MB  ({total / runs[0][0]:,.0f}){note}")
        print(f"{'':14} ({total:,} samples, {eh:,} EventHeader)")
    if not args.keep:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
