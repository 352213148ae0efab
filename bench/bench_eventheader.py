"""EventHeader decoder speed: events/s and µs/event per event kind.

    python3 bench/bench_eventheader.py [--rounds N] [--top K] [--style spaced|compact]

Decodes every event of the golden ``EventHeaderInterceptorLE64.dat`` (and the
EventHeader samples of the golden ``perf.data``, when the perf.data reader is
available) ``N`` times in a loop with one warm decoder (plans compiled), and
prints the overall rate, the median, and the slowest and fastest kinds. The
first decode of each metadata (parse + code generation) is timed separately.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
GOLDEN = REPO / ".." / "shared" / "golden" / "linuxtracepoints"
sys.path.insert(0, str(REPO))


def dat_events() -> list[tuple[str, bytes, int]]:
    from ehtool.eventheader.dat import iter_dat

    path = GOLDEN / "EventHeaderInterceptorLE64.dat"
    if not path.exists():
        print(f"{path} missing: no .dat events")
        return []
    return [(name, data, 0) for name, data in iter_dat(str(path))]


def perf_events() -> list[tuple[str, bytes, int]]:
    try:
        from ehtool.perfdata import PerfDataFile
    except ImportError:
        return []
    path = GOLDEN / "perf.data"
    if not path.exists():
        return []
    out = []
    with PerfDataFile.open(str(path)) as f:
        for s in f.samples(order="file"):
            fmt = s.desc.format
            if fmt is not None and fmt.eventheader_offset is not None:
                out.append((fmt.name, bytes(s.raw), fmt.eventheader_offset))
    return out


def measure(decoder, events: list[tuple[str, bytes, int]], rounds: int) -> float:
    """Seconds for ``rounds`` passes over ``events`` (the best of three)."""
    return min(_loop(decoder.decode_parts, events, rounds) for _ in range(3))


def _loop(decode, events: list[tuple[str, bytes, int]], rounds: int) -> float:
    """Seconds for ``rounds`` passes (the events are known not to raise)."""
    start = time.perf_counter()
    for _ in range(rounds):
        for name, data, offset in events:
            decode(name, data, offset)
    return time.perf_counter() - start


def report(label: str, events: list[tuple[str, bytes, int]], style, rounds: int,
           top: int) -> None:
    from ehtool.render.eventheader import EventHeaderDecoder

    if not events:
        return
    decoder = EventHeaderDecoder(style)
    start = time.perf_counter()
    events = [e for e in events if _decodes(decoder, *e)]
    first = time.perf_counter() - start
    seconds = measure(decoder, events, rounds)
    n = len(events) * rounds
    print(f"\n{label}: {len(events)} events, first pass (compiles plans) "
          f"{first * 1e3:.1f} ms")
    print(f"  warm: {n / seconds:,.0f} events/s, {seconds / n * 1e6:.2f} µs/event "
          f"(decode_parts)")
    objects = EventHeaderDecoder(style)
    _loop(objects.decode, events, 1)
    seconds = _loop(objects.decode, events, rounds)
    print(f"  warm: {n / seconds:,.0f} events/s, {seconds / n * 1e6:.2f} µs/event "
          f"(decode, with DecodedEvent objects)")
    kinds: dict[bytes, list[tuple[str, bytes, int]]] = {}
    for name, data, offset in events:
        parts = decoder.decode_parts(name, data, offset)
        key = parts[0] if parts else f"{name} (not EventHeader)".encode()
        kinds.setdefault(key, []).append((name, data, offset))
    per_kind = []
    for key, evs in kinds.items():
        reps = max(1, 2000 // len(evs))
        per_kind.append((measure(decoder, evs, reps) / (reps * len(evs)) * 1e6, key))
    per_kind.sort()
    print(f"  per kind ({len(per_kind)} kinds): median "
          f"{statistics.median(t for t, _ in per_kind):.2f} µs/event")
    print("  fastest:")
    for t, key in per_kind[:top]:
        print(f"    {t:7.2f} µs  {key.decode('utf-8', 'replace')[:70]}")
    print("  slowest:")
    for t, key in per_kind[-top:]:
        print(f"    {t:7.2f} µs  {key.decode('utf-8', 'replace')[:70]}")


def _decodes(decoder, name: str, data: bytes, offset: int) -> bool:
    """Warm the decoder with one event; False for a malformed one (left out of timing)."""
    try:
        decoder.decode_parts(name, data, offset)
    except ValueError:
        return False
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--top", type=int, default=5)
    parser.add_argument("--style", choices=("spaced", "compact"), default="spaced")
    args = parser.parse_args()
    from ehtool.render.style import COMPACT, SPACED

    style = SPACED if args.style == "spaced" else COMPACT
    report("EventHeaderInterceptorLE64.dat", dat_events(), style, args.rounds, args.top)
    report("perf.data (EventHeader samples)", perf_events(), style, args.rounds * 2,
           args.top)


if __name__ == "__main__":
    main()
