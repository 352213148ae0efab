"""Locate the read-only golden files in ../shared/golden.

A missing file skips the test, or fails it when ``EHTOOL_REQUIRE_GOLDEN=1``
(tests/run.sh and CI set it, so a run that should compare never passes silently).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

GOLDEN = Path(__file__).resolve().parents[1] / ".." / "shared" / "golden"


def golden_path(name: str) -> Path:
    """``../shared/golden/<name>`` relative to the repo root; skip or fail when missing."""
    path = GOLDEN / name
    if not path.exists():
        why = f"golden file {name} not found under {GOLDEN.resolve()}"
        if os.environ.get("EHTOOL_REQUIRE_GOLDEN") == "1":
            pytest.fail(f"{why} (EHTOOL_REQUIRE_GOLDEN=1)", pytrace=False)
        pytest.skip(why)
    return path


def optional(name: str) -> list[Path]:
    """``[../shared/golden/<name>]``, or ``[]`` when it is missing (for a test that also
    runs on the project's own files); a failure under EHTOOL_REQUIRE_GOLDEN=1."""
    return [golden_path(name)] if (GOLDEN / name).exists() or os.environ.get(
        "EHTOOL_REQUIRE_GOLDEN") == "1" else []


def required(path: Path) -> Path:
    """``path`` itself; a golden file through :func:`golden_path` (a skip, or a failure
    under EHTOOL_REQUIRE_GOLDEN=1, when it is missing)."""
    try:
        return golden_path(str(path.relative_to(GOLDEN)))
    except ValueError:  # not under GOLDEN: the project's own file
        return path


def mutated_golden(dst: Path, seed: int) -> str:
    """Write to ``dst`` the reference recording with a byte changed in 200 EventHeader
    samples, chosen by ``seed`` (some become malformed, some change values, names or
    levels); its path."""
    import random

    from ehtool.perfdata import PerfDataFile

    src = golden_path("linuxtracepoints/perf.data")
    data = bytearray(src.read_bytes())
    with PerfDataFile.open(str(src)) as f:
        spots = [(s.offset, len(s.raw), s.desc.format.eventheader_offset)
                 for s in f.samples("file")
                 if getattr(s.desc.format, "eventheader_offset", None) is not None]
    rng = random.Random(seed)
    for offset, raw_len, eh_offset in rng.sample(spots, 200):
        end = offset + int.from_bytes(data[offset + 6:offset + 8], "little")
        at = rng.randrange(end - raw_len + eh_offset, end)  # in the EventHeader event
        data[at] = rng.randrange(256)
    dst.write_bytes(bytes(data))
    return str(dst)
