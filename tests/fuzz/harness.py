"""The decode fuzz check (tests/fuzz/test_decode_mutations.py, scripts/fuzz_decode.py):
mutations of real recordings and what must hold for each."""

from __future__ import annotations

import io
import json
import os
import random
from pathlib import Path

from ehtool.decode.pipeline import DecodeOptions, decode_to
from ehtool.errors import EhtoolError
from ehtool.render.eventheader import forget_decoders
from golden import GOLDEN


def seeds(repo: Path) -> list[bytes]:
    """The recordings mutations start from (the project's, and the golden ones if present)."""
    paths = sorted((repo / "examples").glob("*.data")) + sorted((repo / "tests" / "data")
                                                                  .glob("*.data"))
    golden = GOLDEN / "linuxtracepoints" / "perf.data"
    if golden.exists():
        paths.append(golden)
    return [p.read_bytes() for p in paths]


def mutate(rng: random.Random, data: bytes) -> bytes:
    """A few byte flips, random bytes, a cut or an insertion."""
    buf = bytearray(data)
    for _ in range(rng.randint(1, 6)):
        op = rng.randrange(5)
        if op == 0 and buf:
            buf[rng.randrange(len(buf))] ^= 1 << rng.randrange(8)
        elif op == 1 and buf:
            buf[rng.randrange(len(buf))] = rng.choice((0, 0xFF, 0x7F, 0x80, rng.randrange(256)))
        elif op == 2 and rng.random() < 0.3:
            del buf[rng.randrange(len(buf) + 1):]
        elif op == 3 and buf:
            at = rng.randrange(len(buf))
            buf[at:at + 8] = rng.randbytes(min(8, len(buf) - at))
        elif buf:
            at = rng.randrange(len(buf))
            buf[at:at] = rng.randbytes(rng.randint(1, 8))
    return bytes(buf)


#: what any input may cost above the resident memory the checking process had before
#: it: that process's peak, and its decode workers' (a fork starts with its parent's)
RSS_LIMIT_MB = 48


class _PeakRss:
    """The resident memory an input costs: this process's high-water mark (VmHWM, reset
    through /proc/self/clear_refs before the input, so an input is judged alone and one
    peak does not blind the checks after it) and the decode workers' (ru_maxrss of the
    children, when this input raised it), above this process's VmRSS before it."""

    def __init__(self) -> None:
        import resource

        try:
            with open("/proc/self/clear_refs", "w") as refs:
                refs.write("5")
        except OSError:
            pass  # (then VmHWM is the peak since the start: stricter)
        self.base = _status_kb("VmRSS")
        self.children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss

    def grown_mb(self) -> int:
        import resource

        peak = _status_kb("VmHWM")
        children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        if children > self.children:
            peak = max(peak, children)
        return (peak - self.base) // 1024


def _status_kb(key: str) -> int:
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith(key + ":"))


#: decode options compared between the C loop and pure Python besides the default
_SHAPES = {
    "jsonl": {"jsonl": True},
    "meta": {"meta": frozenset({"time", "cpu", "pid", "tid", "provider", "event", "flags",
                                "options", "level", "keyword"})},
    "pretty": {"pretty": True},
}


def _decode(path: str, **kw) -> tuple[bytes, list[str], list[str]]:
    out, warnings = io.BytesIO(), []
    errors = decode_to(out, [path], DecodeOptions(warn=warnings.append, **kw))
    return out.getvalue(), warnings, [str(e) for e in errors]


def check_input(path: str, rss_limit_mb: int | None = None) -> str | None:
    """What is wrong with decoding ``path`` (None: nothing). ``rss_limit_mb``: also what
    the input cost in resident memory (:class:`_PeakRss`; meaningful in a process that
    does nothing else meanwhile: the fuzz script).
    Each input starts with no EventHeader plans, as a fresh ``ehtool decode`` does: what
    is found does not depend on the inputs before it, and the memory is this input's."""
    forget_decoders()
    memory = _PeakRss() if rss_limit_mb is not None else None
    runs = {}
    for pure in ("", "1"):
        if pure:
            os.environ["EHTOOL_PURE"] = "1"
        else:
            os.environ.pop("EHTOOL_PURE", None)
        for jobs in (1, 2, 3):
            try:
                runs[pure, jobs] = _decode(path, jobs=jobs)
            except EhtoolError as exc:
                return f"an error escaped decode_to: {exc}"
            except Exception as exc:  # an internal error: the bug this looks for
                return f"internal error {type(exc).__name__}: {exc}"
        for shape, kw in _SHAPES.items():  # other ways through the C loop, C vs pure
            try:
                runs[pure, shape] = _decode(path, jobs=1, **kw)
            except Exception as exc:
                return f"{shape}: {type(exc).__name__}: {exc}"
    os.environ.pop("EHTOOL_PURE", None)
    if memory is not None and memory.grown_mb() > rss_limit_mb:
        return f"resident memory grew by {memory.grown_mb()} MB (limit {rss_limit_mb} MB)"
    first = runs["", 1]
    for key, run in runs.items():
        if key[1] in _SHAPES:
            if run != runs["", key[1]]:
                return f"output differs: {key[1]} pure vs C"
        elif run != first:
            return f"output differs: C/pure {key} vs C -j 1"
    try:
        json.loads(first[0])
    except ValueError as exc:
        return f"invalid JSON: {exc}"
    lines = runs["", "jsonl"][0]
    try:
        for line in lines.splitlines():
            json.loads(line)
    except ValueError as exc:
        return f"invalid JSON Lines: {exc}"
    try:
        shown = _text_lines(path)
    except Exception as exc:  # --format text's typed layer: the same kind of bug
        return f"internal error in --format text: {type(exc).__name__}: {exc}"
    events = lines.count(b"\n")
    if not first[2] and shown != events:  # (an input without errors: all of its events)
        return f"--format text shows {shown} events, JSON Lines {events}"
    return None


def _text_lines(path: str) -> int:
    """How many lines ``--format text`` writes for ``path`` (up to its input error)."""
    from ehtool.events import open as open_events
    from ehtool.render.text import event_line, time_texts

    count = 0
    try:
        with open_events(path) as events:
            when = time_texts("perf", events.perf.session.clock)
            for ev in events:
                event_line(ev, when).encode("utf-8", "surrogateescape")
                count += 1
    except EhtoolError:
        pass
    return count
