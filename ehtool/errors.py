"""Errors that the command line turns into one-line messages and exit codes.

Exit codes (documented in README.md and the man pages):

* 0 success
* 1 unreadable or invalid input (a file, a perf.data record, a batch line)
* 2 usage error (bad option or argument; click's own code)
* 3 the event was not written because no session has it enabled
  (``ehtool write --require-enabled``)
* 4 the kernel interface failed (no tracefs, no user_events, permission, conflict)
* 5 an external program failed (``perf`` missing or exited abnormally)
* 128+N stopped by signal N (SIGINT 130; SIGTERM 143 and SIGHUP 129 end
  ``ehtool decode`` cleanly, see :mod:`ehtool.cli.signals`)
"""

from __future__ import annotations

import os

EXIT_INPUT = 1
EXIT_USAGE = 2
EXIT_DISABLED = 3
EXIT_KERNEL = 4
EXIT_EXTERNAL = 5


class EhtoolError(Exception):
    """An error with a user-facing one-line message and an exit code."""

    exit_code = EXIT_INPUT

    def __init__(self, message: str, exit_code: int | None = None) -> None:
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code


def one_line(name: str) -> str:
    """A file name as an error shows it: its control characters (a line break) as
    escapes (``\\n``, ``\\x1b``), so that the error stays one line."""
    if not any(c < " " or c == "\x7f" for c in name):
        return name
    return "".join(c.encode("unicode_escape").decode() if c < " " or c == "\x7f" else c
                   for c in name)


class InputError(EhtoolError):
    """Bad input: names the file and, when known, the byte offset."""

    exit_code = EXIT_INPUT

    def __init__(self, message: str, path: str | None = None, offset: int | None = None) -> None:
        where = []
        if path is not None:
            where.append(one_line(str(path)))
        if offset is not None:
            where.append(f"offset {offset:#x}")
        super().__init__(f"{': '.join(where)}: {message}" if where else message)
        self.path = path
        self.offset = offset

    @classmethod
    def located(cls, text: str, path: str | None, offset: int | None) -> InputError:
        """An error whose message ``text`` names ``path`` and ``offset`` already (another
        one's ``str()``: passed on from a worker process, or combined)."""
        err = cls(text)
        err.path, err.offset = path, offset
        return err

    def record(self) -> list:
        """``[message, path, offset]``, JSON for another process (:meth:`from_record`)."""
        path = self.path if self.path is None else os.fspath(self.path)
        return [str(self), path, self.offset]

    @classmethod
    def from_record(cls, record: list) -> InputError:
        return cls.located(*record)


class PartialOutput(EhtoolError):
    """A worker process ended without its part (it died, or failed inside): the output
    lacks it, so ``-o FILE`` is left as it was (not committed as after an input error)."""


class OutputError(EhtoolError):
    """The output cannot be written (no space, file too large): ``-o FILE`` is left as
    it was, unlike after an input error, when the complete records are kept."""

    exit_code = EXIT_INPUT


class UsageError(EhtoolError):
    """A bad argument that click's own validation cannot see."""

    exit_code = EXIT_USAGE


class KernelError(EhtoolError):
    """The kernel's user_events or tracefs interface refused or is missing."""

    exit_code = EXIT_KERNEL


class ExternalError(EhtoolError):
    """An external program (perf) is missing or failed."""

    exit_code = EXIT_EXTERNAL


class SignalExit(SystemExit):
    """A terminating signal (SIGTERM, SIGHUP...) ends the command: exit status 128+N;
    ``message``, when the user should be told why (the command line writes it)."""

    def __init__(self, signum: int, message: str | None = None) -> None:
        super().__init__(128 + signum)
        self.signum = signum
        self.message = message


def worker_signal(signum: int) -> SignalExit:
    """A signal that ended a worker process ends the command as that signal would; one
    that only the worker got (SIGKILL: the kernel's out-of-memory killer sends it, a
    terminal never does) is said, or the exit status would be all there is of it."""
    import signal

    message = None
    if signum == signal.SIGKILL:
        message = "a decoding worker was killed by SIGKILL (out of memory?)"
    return SignalExit(signum, message)


#: how messages and outputs name standard input (given as ``-``)
STDIN_NAME = "stdin"


def input_name(path: str) -> str:
    """An input as messages and outputs name it: ``-`` is standard input."""
    return STDIN_NAME if path == "-" else path


def output_error(exc: OSError, path: object = None) -> OutputError:
    """``[PATH: ]cannot write output: WHY`` for an OSError on the output (ENOSPC, EFBIG,
    EIO, a directory given as ``-o``...)."""
    why = exc.strerror or " ".join(str(exc).split())  # (pyarrow's errors have no strerror)
    return OutputError(f"{one_line(str(path))}: cannot write output: {why}" if path is not None
                       else f"cannot write output: {why}")


def part_file_error(exc: OSError) -> str:
    """The message for a worker that could not write its part (a temporary file)."""
    import tempfile

    return (f"{output_error(exc)} (a worker's part, in {tempfile.gettempdir()}; "
            "TMPDIR chooses where, -j 1 needs none)")


def combined(problems: list[InputError]) -> InputError:
    """One error for the problems met in an input: the first, and how many more."""
    first = problems[0]
    if len(problems) == 1:
        return first
    return InputError.located(f"{first.args[0]} (and {len(problems) - 1} more problems)",
                              first.path, first.offset)


def brief(exc: Exception) -> str:
    """A construct error in a line: where in the grammar (``entries.id``) and what went
    wrong (``cut short``)."""
    lines = str(exc).splitlines()
    if not lines:
        return type(exc).__name__
    if not lines[0].startswith("Error in path (parsing)"):
        return lines[0]
    where = ".".join(part.strip() for part in lines[0].split("->")[1:])
    what = " ".join(lines[1:]) or type(exc).__name__
    if what.startswith("stream read less than specified amount"):
        what = "cut short"
    return f"{where}: {what}" if where else what
