"""The ``ehtool`` command line.

:func:`main` is the console script. It imports no third-party module itself:
plain ``ehtool write`` runs through :mod:`ehtool.cli.fast_write` without click
(shell loops pay for the interpreter only); everything else goes to the click
group in :mod:`ehtool.cli.app`, whose subcommands load lazily.
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import sys
from typing import Any, NoReturn


def importing(frame: Any) -> bool:
    """True when ``frame`` runs inside the import machinery."""
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib"):
            return True
        frame = frame.f_back
    return False


#: True while :func:`main` runs the command (its handlers turn KeyboardInterrupt into 130)
_running = False
#: main() runs the command line of this process (it exits at the end), not a call of
#: the tests or of another program
console = False


def interrupt(signum: int, frame: Any) -> None:
    """SIGINT: KeyboardInterrupt while the command runs; while a module is being
    imported, where an exception can crash the interpreter (it did inside orjson's
    initialisation), exit 130 at once (nothing has been written yet); anywhere else
    (before or after the command) exit 130 without a traceback."""
    if importing(frame):
        os._exit(130)
    if not _running:
        raise SystemExit(130)
    release_stdout()
    raise KeyboardInterrupt


def see_help(message: str, command: str) -> str:
    """A usage error's message with where to find help (``command``: ``ehtool decode``)."""
    return f"{message} (see '{command} --help')"


def release_stdout() -> None:
    """Stopped by a signal: when standard output is a pipe or a socket, point it at
    /dev/null, so that what is still written on the way out (the closing of the
    document) cannot block on a reader that stopped reading; the output is cut anyway.
    A file keeps getting it (the document stays valid JSON)."""
    import stat

    try:
        mode = os.fstat(1).st_mode
        if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, 1)
            os.close(null)
    except OSError:
        pass


if (os.path.basename(sys.argv[0]) == "ehtool"  # the console script, while it starts
        and signal.getsignal(signal.SIGINT) is not signal.SIG_IGN):  # (else it stays so)
    signal.signal(signal.SIGINT, interrupt)


def main(argv: list[str] | None = None, *, fast: bool = True) -> None:
    """Console-script entry point: runs a command and maps errors to exit codes."""
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, interrupt)
    from ehtool.errors import EhtoolError

    global _running
    args = sys.argv[1:] if argv is None else list(argv)
    if argv is None:
        global console
        console = True
        if sys.stderr is not None and not isinstance(sys.stderr, _Stderr):
            sys.stderr = _Stderr(sys.stderr)
    leave = _leave if argv is None else sys.exit  # (called in-process: the caller goes on)
    _running = True
    try:
        if fast and args[:1] == ["write"] and "_EHTOOL_COMPLETE" not in os.environ:
            from ehtool.cli.fast_write import run as run_fast
            from ehtool.errors import UsageError

            try:
                status = run_fast(args[1:])
            except UsageError as exc:  # (as the click command says it)
                exc.args = (see_help(str(exc), "ehtool write"),)
                raise
            if status is not None:
                sys.exit(status)
        from ehtool.cli.app import run

        run(args)
    except EhtoolError as exc:
        _error(f"ehtool: error: {exc}")
        sys.exit(exc.exit_code)
    except BrokenPipeError:
        # The reader went away (``ehtool decode x | head``): not an error.
        _silence_stdout()
        sys.exit(0)
    except OSError as exc:
        if exc.errno not in _OUTPUT_ERRNOS:
            _internal(exc)
        _output_failed(exc)
        sys.exit(1)
    except KeyboardInterrupt:
        _running = False
        leave(130)
    except SystemExit as exc:
        if getattr(exc, "message", None):  # (SignalExit: a worker's signal)
            _error(f"ehtool: error: {exc.message}")  # type: ignore[attr-defined]
        if isinstance(exc.code, int):
            _running = False
            leave(exc.code)
        raise
    except Exception as exc:  # a bug: one line, the traceback only on request
        _internal(exc)
    finally:
        _running = False
    leave(0)


def _leave(status: int) -> NoReturn:
    """Exit with ``status`` once the standard streams are flushed and the atexit
    handlers have run, skipping the interpreter's teardown (freeing every object
    took ~20 ms after a big decode). Stopped by a signal (128+N), what standard output
    still buffers is dropped: a reader that stopped reading must not keep ehtool from
    exiting. A normal exit while other threads run, or when a stream cannot be flushed
    (Python reports that)."""
    threading = sys.modules.get("threading")
    if threading is not None and threading.active_count() > 1:
        sys.exit(status)
    try:
        if status <= 128 and sys.stdout is not None:
            sys.stdout.flush()
    except BrokenPipeError:  # the reader went away: not an error
        _silence_stdout()
    except OSError as exc:  # what was left to write did not fit (ENOSPC, EFBIG...)
        _output_failed(exc)
        status = status or 1
    except ValueError:
        sys.exit(status)
    with contextlib.suppress(OSError, ValueError, AttributeError):
        sys.stderr.flush()
    import atexit

    atexit._run_exitfuncs()
    os._exit(status)


#: errors only a write meets, not bugs: "cannot write output: ..." (exit 1); EIO, which
#: a read meets too, is left to the code that reads or writes (it says which)
_OUTPUT_ERRNOS = frozenset((errno.ENOSPC, errno.EFBIG, errno.EDQUOT, errno.EROFS))


def _output_failed(exc: OSError) -> None:
    """The output could not be written: say so, and drop what standard output still
    buffers (it cannot be written either, and Python would report it again at exit)."""
    from ehtool.errors import output_error

    _silence_stdout()
    _error(f"ehtool: error: {output_error(exc)}")


def _internal(exc: Exception) -> NoReturn:
    """A bug: one line, the traceback only on request (EHTOOL_DEBUG=1)."""
    if os.environ.get("EHTOOL_DEBUG"):
        raise exc
    _error(f"ehtool: internal error: {type(exc).__name__}: {exc} "
           "(set EHTOOL_DEBUG=1 for the traceback)")
    sys.exit(1)


class _Stderr:
    """Standard error that a reader who went away (a dead logger, ``2> >(cmd)`` that
    exited) does not break: what is written then is lost, and the exit status stays
    the command's (a BrokenPipeError from it passed for standard output's reader going
    away, and a failed command exited 0)."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        with contextlib.suppress(BrokenPipeError):
            return self._stream.write(text)
        return len(text)

    def flush(self) -> None:
        with contextlib.suppress(BrokenPipeError):
            self._stream.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _error(message: str) -> None:
    with contextlib.suppress(OSError, ValueError, AttributeError):
        sys.stdout.flush()
    print(message, file=sys.stderr, flush=True)


def _silence_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except OSError:
        pass


def __getattr__(name: str) -> Any:
    """``ehtool.cli.cli`` and ``COMMANDS`` (the click group) load on first use."""
    if name in ("cli", "COMMANDS", "LazyGroup"):
        from ehtool.cli import app

        return getattr(app, name)
    raise AttributeError(f"module 'ehtool.cli' has no attribute {name!r}")
