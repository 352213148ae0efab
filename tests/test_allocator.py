"""ehtool.allocator: freed memory stays for the next allocations (no page faults)."""

from __future__ import annotations

import subprocess
import sys

import pytest

# 8 blocks of 1 MB allocated, freed, allocated again: the page faults of the second round
_ROUND_TRIP = """
import resource, sys
if sys.argv[1] == "keep":
    from ehtool.allocator import keep_freed_memory
    keep_freed_memory()
def blocks():
    return [b"x" * (1 << 20) for _ in range(8)]
held = blocks()
del held
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
held = blocks()
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def _second_round_faults(mode: str) -> int:
    done = subprocess.run([sys.executable, "-c", _ROUND_TRIP, mode], capture_output=True,
                          text=True, check=True)
    return int(done.stdout)


def test_freed_buffers_are_reused_without_page_faults():
    if _second_round_faults("default") < 1000:  # 8 MB: 2,048 pages
        pytest.skip("this malloc keeps freed memory by itself (not glibc's defaults)")
    assert _second_round_faults("keep") < 200
