"""ehtool: Linux user_events tracepoints in the EventHeader format.

Register and write tracepoints, supervise ``perf record`` and decode perf.data
into JSON that matches Microsoft's ``perf-decode``.
"""

import _signal  # built in and loaded: a Ctrl-C cannot interrupt these imports
import sys


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


#: whether this is ``python3 -m ehtool`` (decided at the end of this module; runpy
#: changes ``sys.argv[0]`` once it has imported the package)
_as_main: bool | None = None


def _quiet_while_starting(signum: int, frame: object) -> None:
    """SIGINT while ``python3 -m ehtool`` starts: exit 130 at once, without a
    traceback (nothing has been written); in any other program, what it asked for;
    ignored, if it was when ehtool started (``nohup``, a shell's background job)."""
    if _previous == _signal.SIG_IGN:
        return
    if _as_main or (_as_main is None and _starting_as_main()):
        import os

        os._exit(130)
    if callable(_previous):
        _previous(signum, frame)
    else:
        raise KeyboardInterrupt


# installed before any line that Python may interrupt (the lines above make no call;
# ``_previous`` is known before, for a signal that comes as the call returns), so none
# runs unguarded; whether it applies is decided when a signal comes, or below
_previous = _signal.getsignal(_signal.SIGINT)
try:
    _signal.signal(_signal.SIGINT, _quiet_while_starting)
except ValueError:  # imported in another thread: not ``python3 -m ehtool``
    _previous = _quiet_while_starting

__version__ = "0.1.0"
_as_main = _starting_as_main()

if _previous == _signal.SIG_IGN or (
        not _as_main and _previous not in (None, _quiet_while_starting)):
    # ignored when ehtool started: it stays so; another program imports ehtool: its
    # Ctrl-C is its own again (None: a handler set outside Python, which cannot be put
    # back; ours acts as Python's then)
    _signal.signal(_signal.SIGINT, _previous)

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
