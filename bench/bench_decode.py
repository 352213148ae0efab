"""Decode speed, CPU time and memory: ehtool decode vs perf-decode and perf script on
1,000,000-event files.

    python3 bench/bench_decode.py [--events N] [--keep DIR] [--repeat N]
                                  [--perf-decode PATH] [--jobs N]

Builds with the project's own perf.data writer, by replaying samples with shifted
timestamps: ``eventheader`` (only the EventHeader samples of the reference
recording: every field type), ``mix`` (all its samples: EventHeader and
sched_switch) and ``sched_switch`` (examples/sched.data). Then times ``ehtool
decode -j 1`` to /dev/null (also ``-j N`` with ``--jobs``, and in pure Python,
``EHTOOL_PURE=1``, when the C hot loops are built), Microsoft's ``perf-decode``
when ``--perf-decode PATH`` or ``$PERF_DECODE`` names its binary, and ``perf
script``, and prints events/s, wall and CPU seconds (user + sys of the process and
its children, from ``os.wait4``) and peak RSS. Runs of the tools alternate, and the
best CPU time of ``--repeat`` runs is printed beside the median wall time (this machine
is shared and noisy). ehtool's bytecode is compiled first (``compileall``), as an
installed package has it.
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
from typing import NamedTuple

REPO = Path(__file__).resolve().parents[1]
GOLDEN = REPO / ".." / "shared" / "golden" / "linuxtracepoints" / "perf.data"
SCHED = REPO / "examples" / "sched.data"
#: measured commands run from here, and with ``python -P``: ``python -m ehtool`` run
#: from the checkout would import the checkout's code (the current directory comes
#: first on sys.path), whatever Python the bench runs with
OUTSIDE = tempfile.gettempdir()


class Run(NamedTuple):
    wall: float  # seconds
    cpu: float  # user + sys seconds
    rss: int  # peak RSS, MB
    status: int


def run(argv: list[str]) -> Run:
    """One command, output to /dev/null. ``os.wait4`` gives the resources of the process;
    those of its own children (ehtool -j N workers) are not in them, so the command
    runs under a small Python parent that reports RUSAGE_CHILDREN instead."""
    code = ("import os, resource, subprocess, sys, time\n"
            "t = time.perf_counter()\n"
            "with open(os.devnull, 'wb') as null:\n"
            "    status = subprocess.call(sys.argv[1:], stdout=null, stderr=subprocess.DEVNULL)\n"
            "w = time.perf_counter() - t\n"
            "u = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
            "print(w, u.ru_utime + u.ru_stime, u.ru_maxrss, status)\n")
    if len(argv) > 5 and "-j" in argv and argv[argv.index("-j") + 1] != "1":
        out = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True,
                             text=True, check=True, cwd=OUTSIDE).stdout.split()
        return Run(float(out[0]), float(out[1]), int(out[2]) // 1024, int(out[3]))
    with open(os.devnull, "wb") as null:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=null, stderr=subprocess.DEVNULL, cwd=OUTSIDE)
        _, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - start
    return Run(elapsed, usage.ru_utime + usage.ru_stime, usage.ru_maxrss // 1024,
               os.waitstatus_to_exitcode(status))


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
                        help="runs per tool; the median wall and the best CPU time are "
                        "printed (this machine is noisy)")
    parser.add_argument("--perf-decode", default=os.environ.get("PERF_DECODE"),
                        help="Microsoft's perf-decode binary to time too (default: "
                        "$PERF_DECODE)")
    parser.add_argument("--jobs", type=int, default=0,
                        help="also time ehtool decode -j N (0: only -j 1)")
    parser.add_argument("--no-pure", action="store_true", help="skip the pure-Python runs")
    args = parser.parse_args()
    work = Path(args.keep or tempfile.mkdtemp(prefix="ehtool-bench-")).resolve()
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
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(REPO / "ehtool")],
                   stdout=subprocess.DEVNULL, check=False)
    print(f"C hot loops (ehtool._speedups): {'built' if native else 'not built'}")
    print(f"\n{'file':14} {'tool':24} {'events/s':>10} {'wall s':>7} {'CPU s':>6} "
          f"{'peak RSS':>9}  (median wall, best CPU of {args.repeat}; CPU vs perf-decode)")
    for label, path in files.items():
        total, eh = count_samples(path)
        decode = [sys.executable, "-P", "-m", "ehtool", "decode", str(path)]
        tools = [("ehtool decode -j 1", [*decode, "-j", "1"])]
        if args.jobs > 1:
            tools.append((f"ehtool decode -j {args.jobs}", [*decode, "-j", str(args.jobs)]))
        if native and not args.no_pure:
            tools.append(("ehtool decode (pure)", ["env", "EHTOOL_PURE=1", *decode, "-j", "1"]))
        if args.perf_decode:
            tools.append(("perf-decode", [args.perf_decode, str(path)]))
        if perf:
            tools.append(("perf script", [perf, "script", "-i", str(path)]))
        runs: dict[str, list[Run]] = {name: [] for name, _ in tools}
        for _ in range(max(1, args.repeat)):  # alternate: the machine's speed drifts
            for name, argv in tools:
                runs[name].append(run(argv))
        reference = min(r.cpu for r in runs["perf-decode"]) if args.perf_decode else None
        for name, _ in tools:
            rs = runs[name]
            wall = sorted(r.wall for r in rs)[len(rs) // 2]
            cpu = min(r.cpu for r in rs)
            rss = max(r.rss for r in rs)
            note = "" if all(r.status == 0 for r in rs) else \
                f"  (exit {sorted({r.status for r in rs})})"
            ratio = f"  {cpu / reference:.2f}x" if reference else ""
            print(f"{label:14} {name:24} {total / wall:10,.0f} {wall:7.2f} {cpu:6.2f} "
                  f"{rss:6d} MB{ratio}{note}")
        print(f"{'':14} ({total:,} samples, {eh:,} EventHeader)")
    if not args.keep:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
