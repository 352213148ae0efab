"""ehtool: Linux user_events tracepoints in the EventHeader format.

Register and write tracepoints, supervise ``perf record`` and decode perf.data
into JSON that matches Microsoft's ``perf-decode``.
"""

__version__ = "0.1.0"

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
