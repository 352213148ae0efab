"""How the commands that decode ask glibc's malloc to keep the memory they free.

With its default, dynamic thresholds glibc gives the free memory at the top of its heap
back to the kernel once a little more than the largest buffer freed so far is free
there. Decoding allocates and frees output buffers of about 1 MB all the time, so the
same pages went back and forth, each one a page fault when touched again: 34,000 faults
for 1,000,000 events, 12,000 with fixed thresholds, and 8% less CPU time (``-j 1``);
``-j 2`` workers, which fork from a heap full of free chunks, faulted twice as much.
"""

from __future__ import annotations

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
    except (ImportError, OSError, AttributeError):
        return
    mallopt(M_MMAP_THRESHOLD, MMAP_BYTES)
    mallopt(M_TRIM_THRESHOLD, KEEP_BYTES)
