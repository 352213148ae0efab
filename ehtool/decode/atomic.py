"""``-o FILE``: where decode's output goes, and how it replaces what was there.

* ``-``: standard output.
* a regular file (also through symlinks, which are followed) or a new path: a
  temporary file beside the target, renamed over it when the document is complete;
  the target keeps its permission bits and, where the caller may, its owner. A
  reader never sees half a document, and an interrupted decode leaves FILE as it was.
* anything else (a FIFO, a terminal or other device, ``/dev/stdout``, a process
  substitution ``>(cmd)``): written through directly, as a shell redirection would.
* a directory that refuses a new file (read-only, no permission) while FILE itself
  is writable: FILE is overwritten in place (not atomic; the only way to write it; a
  signal leaves it with the events written so far).

For ``ehtool decode``: once FILE (or DIR) is replaced, ``ehtool.cli.signals`` drops
SIGINT, SIGTERM and SIGHUP: exit status 128+N always means FILE was left as it was.
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import stat
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import BinaryIO

from ehtool.errors import EhtoolError, OutputError, PartialOutput, output_error

#: signals whose Python handlers may raise (SIGINT, and SIGTERM/SIGHUP in ehtool decode)
_HELD = frozenset((signal.SIGINT, signal.SIGTERM, signal.SIGHUP))
_BUFFER = 1 << 20


@contextmanager
def atomic_output(path: str) -> Iterator[BinaryIO]:
    """Yield a binary file for ``path`` (see the module docstring for what happens).

    On an exception a temporary file is removed and ``path`` is untouched. An
    ``EhtoolError`` raised after all output was written (e.g. a truncated input
    whose complete records were decoded) still commits the file: the document is
    complete and valid. An exception while committing (``SystemExit`` from a signal
    handler) removes the temporary file too.
    """
    if path == "-":
        yield sys.stdout.buffer
        sys.stdout.buffer.flush()
        return
    try:
        st = os.stat(path)  # follows symlinks
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise output_error(exc, path) from None
    if st is not None and not stat.S_ISREG(st.st_mode):
        if stat.S_ISDIR(st.st_mode):
            raise OutputError(f"{path}: cannot write output: Is a directory")
        with _open_direct(path, "wb") as f:
            yield f
        return
    target = os.path.realpath(path)
    directory = os.path.dirname(target)
    # signals wait until the try below, so no handler can leave the file behind
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, _HELD)
    try:
        import tempfile

        fd, tmp = tempfile.mkstemp(prefix=".ehtool-", suffix=".tmp", dir=directory)
    except OSError as exc:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        if st is not None and exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS,
                                            errno.ENOENT) \
                and os.access(target, os.W_OK):
            with _open_direct(target, "wb") as f:  # the directory is closed to new files
                yield f
            return
        raise EhtoolError(f"{path}: cannot create output file: {exc.strerror}") from None
    f = os.fdopen(fd, "wb", buffering=_BUFFER)
    _removed_on_sigbus(tmp)
    done = False
    try:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        try:
            yield f
        except (OutputError, PartialOutput):
            raise
        except EhtoolError:
            _commit(f, tmp, target, st)
            done = True
            raise
        _commit(f, tmp, target, st)
        done = True
    finally:
        if not done:
            _discard(f, tmp)


@contextmanager
def _open_direct(path: str, mode: str) -> Iterator[BinaryIO]:
    try:
        f = open(path, mode, buffering=_BUFFER)  # noqa: SIM115 (closed below)
    except OSError as exc:
        raise output_error(exc, path) from None
    with f:
        yield f


def _removed_on_sigbus(tmp: str | None) -> None:
    """The temporary file a SIGBUS removes (an input cut short while mapped:
    ``ehtool.cli.inputs.guard_mapped_inputs``); None: none."""
    from ehtool.speedups import load

    native = load()
    if native is not None:
        with contextlib.suppress(ValueError):  # (a path too long for it: left behind)
            native.sigbus_cleanup(None if tmp is None else os.fsencode(tmp))


def _discard(f: BinaryIO, tmp: str) -> None:
    """Close and remove the temporary file (already gone when the rename happened)."""
    _removed_on_sigbus(None)
    with contextlib.suppress(OSError):
        f.close()
    with contextlib.suppress(FileNotFoundError):
        os.unlink(tmp)


def _commit(f: BinaryIO, tmp: str, target: str, old: os.stat_result | None) -> None:
    f.flush()
    if old is None:
        os.fchmod(f.fileno(), 0o666 & ~_umask())
    else:
        os.fchmod(f.fileno(), stat.S_IMODE(old.st_mode))
        if (old.st_uid, old.st_gid) != (os.geteuid(), os.getegid()):
            with contextlib.suppress(OSError):  # only root (or the group's member) may
                os.fchown(f.fileno(), old.st_uid, old.st_gid)
    f.close()
    _removed_on_sigbus(None)
    _replace(tmp, target)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextmanager
def atomic_directory(path: str) -> Iterator[str]:
    """Yield a temporary directory beside ``path`` that becomes ``path`` when complete
    (``--split-by-event``). ``path`` must not exist or be an empty directory. On an
    exception the temporary directory is removed and ``path`` is untouched; an
    ``EhtoolError`` (an input error after the complete records) still commits it, as
    :func:`atomic_output` does for files."""
    import shutil

    try:
        if os.listdir(path):
            raise OutputError(f"{path}: cannot write output: the directory is not empty")
    except FileNotFoundError:
        pass
    except NotADirectoryError:
        raise OutputError(f"{path}: cannot write output: not a directory") from None
    except OSError as exc:
        raise output_error(exc, path) from None
    target = os.path.realpath(path)
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, _HELD)
    try:
        import tempfile

        tmp = tempfile.mkdtemp(prefix=".ehtool-", suffix=".tmp",
                               dir=os.path.dirname(target))
    except OSError as exc:
        raise EhtoolError(f"{path}: cannot create output directory: {exc.strerror}") from None
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    done = False
    try:
        try:
            yield tmp
        except (OutputError, PartialOutput):
            raise
        except EhtoolError:
            _commit_directory(tmp, target)
            done = True
            raise
        _commit_directory(tmp, target)
        done = True
    finally:
        if not done:
            shutil.rmtree(tmp, ignore_errors=True)


#: the output is being replaced or has been: ``ehtool.cli.signals`` drops a signal from
#: then on (it would say 128+N, FILE left as it was, with FILE replaced); set before the
#: rename, so that a handler that runs after it sees it
replaced = False


def _replace(tmp: str, target: str) -> None:
    global replaced
    replaced = True
    try:
        os.replace(tmp, target)
    except BaseException:
        replaced = False
        raise


def _commit_directory(tmp: str, target: str) -> None:
    os.chmod(tmp, 0o777 & ~_umask())
    try:
        _replace(tmp, target)  # over an empty directory too
    except OSError as exc:
        raise output_error(exc, target) from None
