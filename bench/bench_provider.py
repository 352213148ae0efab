"""Provider API speed: the enabled check, a disabled write, enabled writes/s (plain and
prepared) and ``ehtool write --batch`` for comparison.

    python3 bench/bench_provider.py            # anywhere: writes go to /dev/null
    tests/vm/run.sh 'python3 bench/bench_provider.py --kernel'   # real user_events + perf

Without ``--kernel`` the registration is simulated (an enable word this script sets, a
``/dev/null`` descriptor): the figures are ehtool's own cost (encoding, the writev call).
With ``--kernel`` the tracepoint is registered in the running kernel and enabled by a
``perf record`` session, so writes go through the kernel into perf's buffers.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from ehtool.provider.api import EventSet, Provider  # noqa: E402

FIELDS = [("count", "u32", 7), ("name", "str", "hello"), ("ports", "port[]", [80, 443])]


def per_call(fn, n: int) -> float:
    """Seconds per call, best of 3 runs of ``n`` calls."""
    best = float("inf")
    for _ in range(3):
        t = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, (time.perf_counter() - t) / n)
    return best


class _NullRegistration:
    """A registration whose enable word this script sets, writing to /dev/null."""

    def __init__(self) -> None:
        self._word = ctypes.c_uint32(0)
        self._fd = os.open(os.devnull, os.O_WRONLY)
        self._index = b"\0\0\0\0"

    def write(self, *buffers: bytes) -> bool:
        os.writev(self._fd, [self._index, *buffers])
        return True

    def unregister(self) -> None:
        os.close(self._fd)


def simulated() -> tuple[EventSet, ctypes.c_uint32]:
    reg = _NullRegistration()
    return EventSet(Provider("BenchProvider"), "BenchProvider_L5K1", 5, 1, reg), reg._word


def measure(events: EventSet, enable) -> None:
    prepared = events.prepare("Ev", [(n, t) for n, t, _ in FIELDS])
    values = [v for _, _, v in FIELDS]
    enable(False)
    check = per_call(lambda: events.enabled, 1_000_000)
    disabled = per_call(lambda: events.write("Ev", FIELDS), 200_000)
    disabled_prepared = per_call(lambda: prepared.write(*values), 200_000)
    enable(True)
    plain = per_call(lambda: events.write("Ev", FIELDS), 50_000)
    fast = per_call(lambda: prepared.write(*values), 200_000)
    print(f"enabled check            {check * 1e9:8.0f} ns")
    print(f"disabled write           {disabled * 1e9:8.0f} ns (plain), "
          f"{disabled_prepared * 1e9:.0f} ns (prepared)")
    print(f"enabled writes/s         {1 / plain:10,.0f} plain, {1 / fast:10,.0f} prepared")


def batch_rate() -> None:
    line = ('{"provider":"BenchProvider","event":"Ev","fields":[["count","u32",7],'
            '["name","str","hello"],["ports","port[]",[80,443]]]}\n')
    n = 200_000
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl") as f:
        f.write(line * n)
        f.flush()
        t = time.perf_counter()
        subprocess.run([sys.executable, "-m", "ehtool", "write", "--dry-run", "--batch",
                        "-i", f.name], stdout=subprocess.DEVNULL, check=True, cwd=REPO)
        took = time.perf_counter() - t
    print(f"ehtool write --batch     {n / took:10,.0f} events/s (--dry-run: encoding + "
          "printing hex, incl. start-up)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernel", action="store_true",
                        help="register in the running kernel and enable with perf")
    args = parser.parse_args()
    if not args.kernel:
        events, word = simulated()
        print("simulated registration (writes to /dev/null):")
        measure(events, lambda on: setattr(word, "value", int(on)))
        batch_rate()
        return
    provider = Provider(f"BenchProvider{os.getpid()}")
    events = provider.register(5, 1)
    perf = None

    def enable(on: bool) -> None:
        nonlocal perf
        if on and perf is None:
            perf = subprocess.Popen(["perf", "record", "-a", "-m", "1024", "-o", "/tmp/b.data",
                                     "-e", f"user_events:{events.tracepoint}"],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            deadline = time.monotonic() + 60
            while not events.enabled and time.monotonic() < deadline:
                time.sleep(0.05)
    print(f"kernel registration {events.tracepoint}, enabled by perf record:")
    try:
        measure(events, enable)
    finally:
        if perf is not None:
            perf.send_signal(2)
            perf.wait()
        provider.unregister()


if __name__ == "__main__":
    main()
