"""ehtool: Linux user_events tracepoints in the EventHeader format.

Register and write tracepoints, supervise ``perf record`` and decode perf.data
into JSON that matches Microsoft's ``perf-decode``.
"""

import sys

__version__ = "0.1.0"

if sys.argv[:1] == ["-m"]:  # ``python3 -m ehtool`` is starting: Ctrl-C exits 130 quietly
    import _signal  # built in: nothing to import that a Ctrl-C could interrupt
    import os

    _signal.signal(_signal.SIGINT, lambda signum, frame: os._exit(130))

__all__ = ["Provider", "open"]


def __getattr__(name: str):
    # lazy: ``import ehtool`` stays cheap (the CLI imports it on every TAB completion)
    if name == "open":
        from ehtool.events import open

        return open
    if name == "Provider":
        from ehtool.provider.api import Provider

        return Provider
    raise AttributeError(f"module 'ehtool' has no attribute {name!r}")
