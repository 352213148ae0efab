"""How the commands that decode ask glibc's malloc to keep the memory they free.

With its default, dynamic thresholds glibc gives the free memory at the top of its heap
back to the kernel once a little more than the largest buffer freed so far is free
there. Decoding allocates and frees output buffers of about 1 MB all the time, so the
same pages could go back and forth, each one a page fault when touched again. Measured
on 2026-11-26 (a venv install, EventHeader events, ``-j 1``): one 1,000,000-event file
27,000 -> 9,000 page faults, four of them 43,000 -> 16,000 in JSON and 109,000 ->
17,000 in JSON Lines, 3-8% less CPU time. How much churn there is depends on the
allocations before (another install of the same code faulted 21,000 times without).
"""

from __future__ import annotations

from collections.abc import Callable

#: mallopt parameters (glibc's malloc.h)
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
#: blocks from this size up get their own mapping (below: the heap, reused)
MMAP_BYTES = 4 << 20
#: free memory at the top of the heap kept for the next allocations, at most
KEEP_BYTES = 32 << 20


def keep_freed_memory() -> None:
    """Fixed malloc thresholds for this process (nothing where malloc is not glibc's)."""
    try:
        import ctypes

        mallopt = ctypes.CDLL(None).mallopt
    except (ImportError, OSError, AttributeError, TypeError):  # (TypeError: Windows)
        return
    mallopt(M_MMAP_THRESHOLD, MMAP_BYTES)
    mallopt(M_TRIM_THRESHOLD, KEEP_BYTES)


#: allocations (net of frees) between two collections of the youngest generation while
#: decoding: the default, 700, had the collector walk the batch in hand over and over
#: (a batch of events is thousands of objects made and dropped together). Measured on
#: 2026-11-26, ``--format parquet`` of 250,000 EventHeader events: 2,386 collections ->
#: 26, 15% less time.
YOUNG_COLLECTION_ALLOCATIONS = 50_000


def fewer_collections() -> Callable[[], None]:
    """Collect the youngest generation every YOUNG_COLLECTION_ALLOCATIONS (for the
    commands that decode); returns what sets the thresholds back."""
    import gc

    before = gc.get_threshold()
    gc.set_threshold(YOUNG_COLLECTION_ALLOCATIONS, *before[1:])
    return lambda: gc.set_threshold(*before)
