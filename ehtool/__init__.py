"""ehtool: Linux user_events tracepoints in the EventHeader format.

Register and write tracepoints, supervise ``perf record`` and decode perf.data
into JSON that matches Microsoft's ``perf-decode``.
"""

import sys

__version__ = "0.1.0"


def _starting_as_main() -> bool:
    """``python3 -m ehtool`` is starting (not another module run with ``-m`` that
    imports ehtool: its Ctrl-C is its own)."""
    if sys.argv[:1] != ["-m"]:
        return False
    argv = getattr(sys, "orig_argv", [])
    for i, arg in enumerate(argv[1:], 1):
        if arg.startswith("-m"):  # -m NAME or -mNAME
            return (arg[2:] or "".join(argv[i + 1:i + 2])) == "ehtool"
        if arg[:1] == "-" and arg[1:2] != "-" and arg.endswith("m"):  # -Im NAME
            return argv[i + 1:i + 2] == ["ehtool"]
    return False


if _starting_as_main():  # Ctrl-C exits 130 quietly
    import _signal  # built in: nothing to import that a Ctrl-C could interrupt
    import os

    _signal.signal(_signal.SIGINT, lambda signum, frame: os._exit(130))

__all__ = ["EhtoolError", "EncodeError", "InputError", "KernelError", "Provider", "open"]

#: the lazy names: ``import ehtool`` stays cheap (the CLI imports it on every TAB completion)
_LAZY = {"open": "ehtool.events", "Provider": "ehtool.provider.api",
         "EncodeError": "ehtool.eventheader.encoder", "EhtoolError": "ehtool.errors",
         "InputError": "ehtool.errors", "KernelError": "ehtool.errors"}


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'ehtool' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])
