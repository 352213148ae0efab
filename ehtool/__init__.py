"""ehtool: Linux user_events tracepoints in the EventHeader format.

Register and write tracepoints, supervise ``perf record`` and decode perf.data
into JSON that matches Microsoft's ``perf-decode``.
"""

__version__ = "0.1.0"
