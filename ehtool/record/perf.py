"""Run ``perf record`` under supervision: command line, readiness handshake, stop.

::

    from ehtool.record.perf import PerfConfig, PerfSession
    config = PerfConfig(events=["sched:sched_switch"], output="x.data")
    with PerfSession(config) as perf:
        perf.start()
        perf.wait_ready(timeout=30)   # events are enabled in the kernel now
        ...                           # run the workload
        perf.stop()                   # SIGINT, then SIGTERM, then SIGKILL
    print(perf.returncode, perf.samples_reported)

Readiness uses perf's control FIFOs: perf starts with its events disabled
(``-D -1 --control fifo:CTL,ACK``); ehtool writes ``enable`` and waits for
``ack``, which perf sends only after it has enabled every event. The enable bit
of a user_events tracepoint flips earlier (when perf opens the event), so it is
no readiness signal. The FIFOs live in a private /tmp directory that is removed
as soon as perf has answered (its open descriptors stay valid), so a
supervisor killed mid-session leaves nothing behind. With a perf too old for
``--control fifo:`` the session falls back to waiting a fixed time after
start, with a warning.

The command line is a list (never a shell string). perf runs in its own
session, so a terminal's Ctrl-C reaches only ehtool, which then stops perf with
SIGINT; perf is also told to get SIGINT if ehtool dies (``PR_SET_PDEATHSIG``),
so an orphaned system-wide recording still finalizes its file and ends.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import select
import shutil
import signal
import stat
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from ehtool.errors import ExternalError, UsageError
from ehtool.perfdata.counts import RecordCounts

INSTALL_HINT = ("install it with 'apt-get install linux-perf' (Debian/Ubuntu: linux-perf or "
                "linux-tools-$(uname -r); Fedora: dnf install perf) or pass --perf PATH")
#: seconds waited after start when perf has no control FIFO (fallback readiness)
FALLBACK_SETTLE = 1.0
#: how much of perf's stderr an error message quotes
_STDERR_TAIL = 1200
#: perf's usage text, which follows its argument errors
_USAGE_RE = re.compile(r"^\s*Usage: perf\b")
#: lines of a long stderr quoted besides its tail
_ERROR_LINE_RE = re.compile(r"error|unknown|invalid|not supported|permission|denied|fail",
                            re.IGNORECASE)
_ERROR_LINES = 5
_BUFFER_SIZE_RE = re.compile(r"^[1-9][0-9]*[BKMGbkmg]?$")
_VERSION_RE = re.compile(r"perf version (\d+)\.(\d+)(?:\.(\d+))?")
_SAMPLES_RE = re.compile(r"Captured and wrote [0-9.]+ \S+ .*\((\d+) samples\)")


@dataclass(frozen=True)
class PerfFeatures:
    """What a perf binary supports (from ``perf version`` and ``perf record -h``)."""

    version: tuple[int, int, int] | None = None
    control_fifo: bool = False
    sample_identifier: bool = False
    no_buffering: bool = False


@dataclass
class PerfConfig:
    """What to record and how; ``build_command`` turns it into perf's arguments."""

    events: Sequence[str]
    output: str = "perf.data"  # "-" streams pipe-mode data to perf's stdout
    buffer_size: str | None = None  # perf -m: pages, or a size with B/K/M/G
    extra_args: Sequence[str] = ()
    clockid: str = "monotonic"
    system_wide: bool = True
    sample_identifier: bool = True

    @property
    def live(self) -> bool:
        """Streaming to a reader (``-o -``): perf should write each event as it comes
        (``--no-buffering``) instead of when its ring buffer's wakeup mark is reached."""
        return self.output == "-"

    def __post_init__(self) -> None:
        if not self.events:
            raise UsageError("nothing to record: give at least one tracepoint")
        if self.buffer_size is not None and not _BUFFER_SIZE_RE.match(self.buffer_size):
            raise UsageError(f"--buffer-size {self.buffer_size!r}: give pages (a power of two) "
                             "or a size such as 512K, 16M")


def find_perf(path: str | None = None) -> str:
    """The perf executable to run; ExternalError with install advice when missing."""
    if path:
        if os.sep in path:
            if os.path.isfile(path) and os.access(path, os.X_OK):
                return path
            raise ExternalError(f"perf: {path} is not an executable file")
        found = shutil.which(path)
        if found is None:
            raise ExternalError(f"perf: {path!r} is not on PATH; {INSTALL_HINT}")
        return found
    found = shutil.which("perf")
    if found is None:
        raise ExternalError(f"perf is not installed (not on PATH); {INSTALL_HINT}")
    return found


def probe_features(perf: str) -> PerfFeatures:
    """Ask ``perf`` what it supports (cached per executable and modification time)."""
    try:
        stat = os.stat(perf)
    except OSError as exc:
        raise ExternalError(f"perf: cannot run {perf}: {exc.strerror}") from None
    return _probe(perf, stat.st_mtime_ns, stat.st_ino)


@functools.lru_cache(maxsize=8)
def _probe(perf: str, _mtime: int, _ino: int) -> PerfFeatures:
    version_text = _run_quiet([perf, "version"])
    help_text = _run_quiet([perf, "record", "-h"])
    if not version_text and not help_text:
        raise ExternalError(f"perf: {perf} does not run (no output from 'perf version'); "
                            f"{INSTALL_HINT}")
    if "perf version" not in version_text and "Usage: perf record" not in help_text:
        # Debian's /usr/bin/perf is a wrapper that says which package is missing.
        detail = (version_text or help_text).strip().splitlines()
        raise ExternalError(f"perf does not work: {detail[0] if detail else 'no output'}; "
                            f"{INSTALL_HINT}")
    return parse_features(version_text, help_text)


def parse_features(version_text: str, record_help: str) -> PerfFeatures:
    """Features from the output of ``perf version`` and ``perf record -h``."""
    version = None
    m = _VERSION_RE.search(version_text)
    if m:
        version = (int(m.group(1)), int(m.group(2)), int(m.group(3) or 0))
    control_fifo = bool(re.search(r"--control\b[^\n]*fifo:", record_help))
    sample_identifier = "--sample-identifier" in record_help
    no_buffering = "--no-buffering" in record_help
    return PerfFeatures(version, control_fifo, sample_identifier, no_buffering)


def build_command(perf: str, config: PerfConfig, features: PerfFeatures,
                  control: tuple[str, str] | None = None) -> list[str]:
    """perf's argument list; ``control`` is (ctl FIFO, ack FIFO) for the handshake."""
    argv = [perf, "record"]
    if config.system_wide:
        argv.append("-a")
    if config.clockid:
        argv += ["-k", config.clockid]
    if config.sample_identifier and features.sample_identifier:
        argv.append("--sample-identifier")
    if config.live and features.no_buffering:
        argv.append("--no-buffering")
    if config.buffer_size:
        argv += ["-m", config.buffer_size]
    if control is not None:
        argv += ["-D", "-1", "--control", f"fifo:{control[0]},{control[1]}"]
    for event in config.events:
        argv += ["-e", event]
    argv += ["-o", config.output]
    argv += list(config.extra_args)
    return argv


class PerfSession:
    """One supervised ``perf record`` process.

    ``stdout`` is where perf's stdout goes (pipe-mode data for ``output="-"``;
    a file object, a file descriptor or ``subprocess.PIPE``); perf's stderr is
    kept in a private unnamed file and available as :attr:`stderr_text`.
    """

    def __init__(self, config: PerfConfig, *, perf: str | None = None,
                 features: PerfFeatures | None = None, stdout: IO | int | None = None,
                 use_control: bool | None = None,
                 warn: Callable[[str], None] | None = None,
                 die_with_parent: bool = True) -> None:
        self.config = config
        self.perf = find_perf(perf)
        self.features = features if features is not None else probe_features(self.perf)
        self.use_control = self.features.control_fifo if use_control is None else use_control
        self._stdout = stdout
        self._warn = warn or (lambda message: None)
        self._dir: str | None = None
        self._ctl_fd = -1
        self._ack_fd = -1
        self._stderr: IO[bytes] | None = None
        self.process: subprocess.Popen | None = None
        self.argv: list[str] = []
        self.ready = False
        #: the last signal stop() had to send (SIGINT normally), None if perf ended alone
        self.stop_signal: int | None = None
        self.started_at: float | None = None
        self.die_with_parent = die_with_parent
        self._stopped_by_us = False
        self._stderr_cache = ""

    # -- lifecycle -----------------------------------------------------------------

    def start(self) -> None:
        """Start perf (events disabled until wait_ready when the control FIFO is used)."""
        if self.process is not None:
            raise RuntimeError("PerfSession.start() called twice")
        try:
            control = self._make_fifos() if self.use_control else None
            self._stderr = tempfile.TemporaryFile(prefix="ehtool-perf-stderr-")  # noqa: SIM115
        except OSError as exc:
            self.close()
            raise ExternalError(f"perf: cannot prepare its session files in /tmp: "
                                f"{exc.strerror or exc}") from None
        self.argv = build_command(self.perf, self.config, self.features, control)
        try:
            self.process = subprocess.Popen(
                self.argv, stdin=subprocess.DEVNULL, stdout=self._stdout, stderr=self._stderr,
                start_new_session=True,
                preexec_fn=_pdeathsig_hook() if self.die_with_parent else None,
            )
        except OSError as exc:
            self.close()
            raise ExternalError(f"perf: cannot start {self.perf}: {exc.strerror}") from None
        self.started_at = time.monotonic()

    def wait_ready(self, timeout: float = 30.0,
                   cancelled: Callable[[], bool] | None = None) -> None:
        """Return once perf has enabled its events.

        Raises ExternalError (quoting perf's stderr) when perf exits first or
        does not answer within ``timeout`` seconds (perf is then stopped), and
        InterruptedError when ``cancelled()`` turns true.
        """
        proc = self._require_process()
        deadline = time.monotonic() + timeout
        if not self.use_control:
            self._warn(f"{self.perf} has no '--control fifo:' (perf 5.10 or later has it): "
                       f"waiting {FALLBACK_SETTLE:g} s for it to start; events written "
                       "before it enables its events are lost")
            settle = min(deadline, time.monotonic() + FALLBACK_SETTLE)
            while time.monotonic() < settle:
                self._check_alive(proc, "starting")
                if cancelled is not None and cancelled():
                    raise InterruptedError("cancelled while perf was starting")
                time.sleep(0.02)
            self._check_alive(proc, "starting")
            self.ready = True
            return
        os.write(self._ctl_fd, b"enable\n")
        received = b""
        pidfd = _pidfd_open(proc.pid)
        try:
            watch = [self._ack_fd] + ([pidfd] if pidfd >= 0 else [])
            while b"ack" not in received:
                left = deadline - time.monotonic()
                if left <= 0:
                    self.stop()
                    raise ExternalError(
                        f"perf did not enable its events within {timeout:g} s"
                        f"{self._stderr_suffix()}")
                readable, _, _ = select.select(watch, [], [], min(left, 0.1))
                if self._ack_fd in readable:
                    with contextlib.suppress(BlockingIOError):
                        received += os.read(self._ack_fd, 64)
                    continue
                self._check_alive(proc, "starting")
                if cancelled is not None and cancelled():
                    raise InterruptedError("cancelled while perf was starting")
        finally:
            if pidfd >= 0:
                os.close(pidfd)
        self.ready = True
        self._remove_dir()  # perf has the FIFOs open: their names are no longer needed

    def stop(self, int_timeout: float = 15.0, term_timeout: float = 5.0,
             kill_timeout: float = 5.0) -> int:
        """Stop perf gracefully: SIGINT, then SIGTERM, then SIGKILL after the timeouts.

        Returns perf's return code (negative: the signal that ended it).
        """
        proc = self._require_process()
        for sig, wait in ((signal.SIGINT, int_timeout), (signal.SIGTERM, term_timeout),
                          (signal.SIGKILL, kill_timeout)):
            if proc.poll() is not None:
                break
            self._stopped_by_us = True
            self.stop_signal = sig
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(sig)
            try:
                proc.wait(wait)
            except subprocess.TimeoutExpired:
                continue
        if proc.poll() is None:  # pragma: no cover - SIGKILL did not work
            raise ExternalError(f"perf (pid {proc.pid}) does not exit even after SIGKILL")
        return proc.returncode

    def poll(self) -> int | None:
        """perf's return code, or None while it runs."""
        return self._require_process().poll()

    def close(self) -> None:
        """Stop perf if it still runs and remove the private FIFOs and files."""
        if self.process is not None and self.process.poll() is None:
            self.stop()
        for fd in (self._ctl_fd, self._ack_fd):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._ctl_fd = self._ack_fd = -1
        if self._stderr is not None:
            self._stderr_cache = self._read_stderr()
            self._stderr.close()
            self._stderr = None
        self._remove_dir()

    def __enter__(self) -> PerfSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- results -------------------------------------------------------------------

    @property
    def pid(self) -> int | None:
        return None if self.process is None else self.process.pid

    @property
    def returncode(self) -> int | None:
        return None if self.process is None else self.process.returncode

    @property
    def succeeded(self) -> bool:
        """perf ended normally: exit 0, or the SIGINT/SIGTERM we sent it (perf re-raises it)."""
        rc = self.returncode
        if rc == 0:
            return True
        return (self._stopped_by_us and rc in (-signal.SIGINT, -signal.SIGTERM)
                and self.stop_signal in (signal.SIGINT, signal.SIGTERM))

    @property
    def stderr_text(self) -> str:
        if self._stderr is None:
            return self._stderr_cache
        return self._read_stderr()

    @property
    def samples_reported(self) -> int | None:
        """The sample count from perf's "Captured and wrote" line, if it printed one."""
        m = _SAMPLES_RE.search(self.stderr_text)
        return int(m.group(1)) if m else None

    def failure_message(self) -> str:
        """A one-paragraph description of how perf failed, quoting its stderr."""
        return f"perf {_describe_rc(self.returncode)}{self._stderr_suffix()}"

    # -- helpers -------------------------------------------------------------------

    def _require_process(self) -> subprocess.Popen:
        if self.process is None:
            raise RuntimeError("PerfSession is not started")
        return self.process

    def _check_alive(self, proc: subprocess.Popen, when: str) -> None:
        if proc.poll() is not None:
            said = self._stderr_suffix()
            raise ExternalError(f"perf {_describe_rc(proc.returncode)} while {when}"
                                f"{said or _unwritable(self.config.output)}")

    def _make_fifos(self) -> tuple[str, str]:
        """Create the private control and ack FIFOs and open our ends of both."""
        self._dir = tempfile.mkdtemp(prefix="ehtool-record-", dir="/tmp")
        control = (os.path.join(self._dir, "ctl"), os.path.join(self._dir, "ack"))
        for fifo in control:
            os.mkfifo(fifo, 0o600)
        # O_RDWR never blocks on a FIFO, and holding both ends means perf's own
        # blocking open of the ack FIFO cannot hang.
        self._ctl_fd = os.open(control[0], os.O_RDWR | os.O_NONBLOCK | os.O_CLOEXEC)
        self._ack_fd = os.open(control[1], os.O_RDWR | os.O_NONBLOCK | os.O_CLOEXEC)
        return control

    def _remove_dir(self) -> None:
        """Remove the private FIFO directory (open descriptors stay usable)."""
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    def _read_stderr(self) -> str:
        assert self._stderr is not None
        self._stderr.flush()
        self._stderr.seek(0)
        text = self._stderr.read().decode("utf-8", "replace")
        self._stderr.seek(0, os.SEEK_END)
        return text

    def _stderr_suffix(self) -> str:
        """``: `` and perf's words, on the error's one line (its lines joined by ``; ``,
        a line repeated said once)."""
        said = "\n".join(dict.fromkeys(self.stderr_text.splitlines()))
        lines = [line.strip() for line in quote_stderr(said).splitlines() if line.strip()]
        return ": " + "; ".join(lines) if lines else ""


def _unwritable(output: str) -> str:
    """Why perf, which exits without a word when it cannot write its header, may not
    have written ``output`` (``: ...``), or ""."""
    if output == "-":
        return ""
    try:
        st = os.stat(output)
        space = os.statvfs(os.path.dirname(os.path.abspath(output)) or "/")
    except OSError:
        return ""
    if stat.S_ISCHR(st.st_mode) and output != os.devnull:
        return (f": -o {output} is a character device, which perf may not write its "
                "header to (give a file, a FIFO, or '-o -' for a pipe)")
    if stat.S_ISREG(st.st_mode) and space.f_bavail * space.f_frsize < 1 << 20:
        return f": the file system of -o {output} has no space left"
    return ""


def quote_stderr(text: str, limit: int = _STDERR_TAIL) -> str:
    """The part of perf's stderr worth quoting in an error message.

    perf follows an argument error ("Error: unknown option `bogus'", "event
    syntax error: ...") with its usage text: that is cut off. What remains is
    kept whole when short; otherwise its error-looking lines and its tail.
    """
    lines = [line.rstrip() for line in text.strip().splitlines()]
    usage = next((i for i, line in enumerate(lines) if _USAGE_RE.match(line)), None)
    if usage is not None and any(lines[:usage]):
        lines = lines[:usage]
    text = "\n".join(lines).strip()
    if len(text) <= limit:
        return text
    tail = text[-limit:].partition("\n")[2] or text[-limit:]
    head = text[:len(text) - len(tail)].splitlines()
    errors = [line for line in head if _ERROR_LINE_RE.search(line)][:_ERROR_LINES]
    return "\n".join([*errors, "...", tail])


def _describe_rc(rc: int | None) -> str:
    if rc is None:
        return "is still running"
    if rc < 0:
        try:
            return f"was killed by {signal.Signals(-rc).name}"
        except ValueError:
            return f"was killed by signal {-rc}"
    return f"exited with status {rc}"


def _run_quiet(argv: list[str]) -> str:
    """stdout + stderr of a short command ('' when it cannot run)."""
    try:
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=30,
                              check=False)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return (done.stdout + done.stderr).decode("utf-8", "replace")


def _pidfd_open(pid: int) -> int:
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return -1


_PR_SET_PDEATHSIG = 1


@functools.cache
def _pdeathsig_hook() -> Callable[[], None] | None:
    """A preexec function that makes the child get SIGINT (perf's graceful stop) when
    the thread that started it dies; None where prctl is unavailable.

    Everything is looked up in the parent: the child only makes one call.
    """
    try:
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    sigint = int(signal.SIGINT)

    def hook() -> None:
        prctl(_PR_SET_PDEATHSIG, sigint, 0, 0, 0)

    return hook


#: what a finished recording holds: samples and lost events (one counting rule)
RecordingStats = RecordCounts


def scan_recording(path: str | Path) -> RecordingStats:
    """Count samples and lost events in a perf.data file (errors are collected, not raised)."""
    import dataclasses

    from ehtool.errors import EhtoolError
    from ehtool.perfdata.reader import PerfDataFile

    errors: list[str] = []
    samples = 0
    lost = RecordingStats()
    try:
        with PerfDataFile.open(str(path), on_error=lambda e: errors.append(str(e))) as data:
            try:
                for batch in data.batches("file", nonsample=False):
                    samples += len(batch)
            finally:
                lost = data.lost  # (the reader counts the lost events as it walks)
    except EhtoolError as exc:
        errors.append(str(exc))
    return dataclasses.replace(lost, samples=samples, errors=errors)
