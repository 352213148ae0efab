"""tracefs ``format`` files: the parser and field model.

Shared by the kernel layer (live events) and the perf.data layer (recorded tracing data).
"""
