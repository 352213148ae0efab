"""A whole ``ehtool record`` session: tracepoints, perf, COMMAND, stop, cleanup.

::

    from ehtool.record.specs import parse_spec
    from ehtool.record.supervisor import RecordOptions, Recorder
    result = Recorder(RecordOptions(specs=[parse_spec("MyProv_L5K1")], output="x.data",
                                    command=["./my-app"])).run()
    result.exit_status   # COMMAND's status (128+N when killed by signal N), else 0

Order of events: every check (perf present and usable, permissions, specs,
COMMAND found) happens before anything starts; then missing tracepoints are
registered and held, perf starts with its events disabled and is told to
enable them, and only after perf's ack does COMMAND start (or the "recording,
Ctrl-C to stop" line appear). The session ends on COMMAND's exit, a stop
request (SIGINT, SIGTERM, SIGHUP, or :meth:`Recorder.request_stop`), the
``duration`` expiring, or perf exiting by itself. Then COMMAND is stopped if
it still runs, perf gets SIGINT (escalating to SIGTERM, SIGKILL), the decoder
drains, and the registrations are released.

Signals and COMMAND: COMMAND stays in ehtool's process group (it keeps the
terminal). A stop signal is forwarded to it unless the terminal already
delivered it (Ctrl-C while ehtool is the foreground job); after ``grace``
seconds it gets SIGKILL. A second stop request skips the remaining waits.
``duration`` expiry sends COMMAND SIGTERM, like timeout(1).

Streaming (``-o -`` and ``--decode``): perf runs with ``--no-buffering`` (each
event is passed on as it happens, not when a ring buffer's wakeup mark is
reached) and writes pipe-mode data into a pipe that a relay thread copies to
our stdout, or for ``--decode`` into a ``python -m ehtool decode -`` subprocess
whose stdout is ours, counting samples and lost events on the way
(:mod:`ehtool.record.stream`). COMMAND's stdout then goes to our stderr, so that
stdout holds only perf's data or the JSON.
"""

from __future__ import annotations

import contextlib
import os
import select
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ehtool.errors import ExternalError, UsageError, output_error
from ehtool.record.perf import (
    PerfConfig,
    PerfSession,
    RecordingStats,
    find_perf,
    probe_features,
    scan_recording,
)
from ehtool.record.specs import TracepointSpec
from ehtool.record.stream import StreamRelay
from ehtool.record.tracepoints import TracepointHolder

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
#: the stop reason when the reader of the live stream went away (the command exits 0)
READER_GONE = "the reader went away"
#: signals a terminal sends to its whole foreground process group
_TTY_SIGNALS = (signal.SIGINT, signal.SIGQUIT, signal.SIGHUP)


@dataclass
class RecordOptions:
    """Everything a session needs; the CLI fills it from its options."""

    specs: Sequence[TracepointSpec]
    output: str = "perf.data"
    command: Sequence[str] = ()
    duration: float | None = None
    perf: str | None = None
    perf_args: Sequence[str] = ()
    buffer_size: str | None = None
    decode: bool = False
    decode_args: Sequence[str] = ()
    ready_timeout: float = 60.0
    perf_stop_timeout: float = 15.0  # SIGINT -> SIGTERM escalation
    grace: float = 5.0  # a stopped COMMAND's time to exit before SIGKILL
    scan: bool = True  # count samples and lost events in the file afterwards (file mode)
    handle_signals: bool = True  # install SIGINT/SIGTERM/SIGHUP handlers (main thread only)
    #: status lines ("recording, Ctrl-C to stop"); warnings go to ``warn``
    announce: Callable[[str], None] = field(default=lambda message: None)
    warn: Callable[[str], None] = field(default=lambda message: None)
    #: verbose details (perf's command line)
    info: Callable[[str], None] = field(default=lambda message: None)


@dataclass
class RecordResult:
    exit_status: int
    stop_reason: str
    command_status: int | None = None
    perf_returncode: int | None = None
    decoder_status: int | None = None
    registered: list[str] = field(default_factory=list)
    stats: RecordingStats | None = None
    perf_stderr: str = ""
    ready_seconds: float | None = None


class Recorder:
    """Runs one recording session; ``request_stop`` may be called from any thread."""

    def __init__(self, options: RecordOptions) -> None:
        self.options = options
        self._stop_reasons: list[str] = []
        self._signals: list[int] = []  # (those that asked to stop)
        self._wake_r, self._wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self._lock = threading.Lock()
        self.perf_session: PerfSession | None = None
        self._relay: StreamRelay | None = None

    def request_stop(self, reason: str = "stop requested") -> None:
        with self._lock:
            self._stop_reasons.append(reason)
        with contextlib.suppress(OSError):
            os.write(self._wake_w, b"x")

    @property
    def stop_requests(self) -> int:
        return len(self._stop_reasons)

    # -- the session ---------------------------------------------------------------

    def run(self) -> RecordResult:
        o = self.options
        saved = self._install_signals() if o.handle_signals else {}
        try:
            return self._run()
        finally:
            for sig, handler in saved.items():
                signal.signal(sig, handler)
            os.close(self._wake_r)
            os.close(self._wake_w)

    def _run(self) -> RecordResult:
        o = self.options
        perf_path, features, config, command = self._prepare()
        holder = TracepointHolder(o.specs)
        holder.plan()  # missing identifiers fail here, before anything starts
        if self._stop_reasons:
            raise KeyboardInterrupt
        registered = holder.acquire()
        decoder = None
        result = RecordResult(exit_status=0, stop_reason="", registered=registered)
        try:
            if o.decode:
                decoder = self._start_decoder()
            perf = PerfSession(config, perf=perf_path, features=features, warn=o.warn,
                               stdout=subprocess.PIPE if config.live else None)
            self.perf_session = perf
            try:
                self._record(perf, command, decoder, result)
            finally:
                perf.close()
                result.perf_stderr = perf.stderr_text
                result.perf_returncode = perf.returncode
                if self._relay is not None:
                    result.stats = self._join_relay(self._relay)
        finally:
            if decoder is not None:
                result.decoder_status = self._finish_decoder(decoder)
            for problem in holder.release():
                o.warn(f"could not unregister {problem}")
        self._check_output()  # (perf's last bytes, passed on after it exited, too)
        self._summarize(result)
        return result

    def _prepare(self) -> tuple[str, object, PerfConfig, list[str]]:
        """Every check that can fail before something is started."""
        from ehtool.record.checks import check_permissions
        from ehtool.record.tracepoints import locate_tracefs

        o = self.options
        if not o.specs:
            raise UsageError("nothing to record: give at least one tracepoint spec")
        if o.decode and o.output not in ("-", "perf.data"):
            raise UsageError("--decode streams JSON to stdout; it cannot be combined with -o FILE")
        if o.duration is not None and o.duration <= 0:
            raise UsageError(f"--duration must be positive, not {o.duration:g}")
        output = "-" if o.decode else o.output
        if output != "-":
            parent = os.path.dirname(os.path.abspath(output))
            if not os.path.isdir(parent):
                raise UsageError(f"-o {output}: directory {parent} does not exist")
        if output == "-":
            _check_stdout(o.decode)
        command = list(o.command)
        if command and shutil.which(command[0]) is None:
            raise UsageError(f"COMMAND {command[0]!r}: not found or not executable")
        config = PerfConfig(events=[spec.tracepoint for spec in o.specs], output=output,
                            buffer_size=o.buffer_size, extra_args=list(o.perf_args))
        perf_path = find_perf(o.perf)
        features = probe_features(perf_path)
        check_permissions(perf_path, locate_tracefs())
        return perf_path, features, config, command

    def _record(self, perf: PerfSession, command: list[str], decoder: subprocess.Popen | None,
                result: RecordResult) -> None:
        o = self.options
        perf.start()
        o.info("running: " + shlex.join(perf.argv))
        if perf.config.live:
            self._relay = self._start_relay(perf, decoder)
        started = time.monotonic()
        try:
            perf.wait_ready(o.ready_timeout, cancelled=lambda: bool(self._stop_reasons))
        except InterruptedError:
            result.stop_reason = self._stop_reasons[0]
            perf.stop(o.perf_stop_timeout)
            # stopped before it recorded: as the signal ends any command (a stop asked
            # for otherwise counts as Ctrl-C)
            result.exit_status = 128 + (self._signals[0] if self._signals else signal.SIGINT)
            return
        except ExternalError:
            self._check_output()
            if not self._reader_gone(perf):
                raise
            result.stop_reason = READER_GONE
            return
        result.ready_seconds = time.monotonic() - started
        child = None
        if command:
            try:
                # stdout carries perf's data or the decoder's JSON: COMMAND's goes to stderr
                child = subprocess.Popen(command, stdout=2 if perf.config.live else None)
            except OSError as exc:
                perf.stop(o.perf_stop_timeout)
                raise UsageError(f"COMMAND {command[0]!r}: {exc.strerror or exc}") from None
        else:
            until = f" (for {o.duration:g} s)" if o.duration else ""
            o.announce(f"recording{until}, Ctrl-C to stop")
        result.stop_reason = self._wait_for_end(perf, child)
        if child is not None:
            result.command_status = self._stop_command(child, result.stop_reason)
        if perf.poll() is None:
            perf.stop(o.perf_stop_timeout if self.stop_requests < 2 else 2.0)
        self._check_output()
        if self._reader_gone(perf):
            result.stop_reason = READER_GONE
            return  # (exit 0, as any command whose reader went away: COMMAND was stopped)
        if not perf.succeeded:
            raise ExternalError(perf.failure_message())
        if perf.stop_signal == signal.SIGKILL:
            o.warn("perf had to be killed: the recording is probably incomplete")
        if result.command_status is not None:
            rc = result.command_status
            result.exit_status = 128 - rc if rc < 0 else rc

    def _check_output(self) -> None:
        """OutputError when the live stream could not be written to stdout (ENOSPC: perf,
        cut off, died of SIGPIPE, which is no reader going away). The relay has ended
        then (its thread stops once it has closed perf's pipe): joining it is brief."""
        if self._relay is not None and self._relay.error is not None:
            self._relay.join()
            raise output_error(self._relay.error)

    def _reader_gone(self, perf: PerfSession) -> bool:
        """Whether perf died of SIGPIPE because the reader of the live stream (standard
        output's, or the decoder, whose own reader went away) stopped reading."""
        return (self._relay is not None and self._relay.broken_pipe
                and perf.returncode == -signal.SIGPIPE)

    def _wait_for_end(self, perf: PerfSession, child: subprocess.Popen | None) -> str:
        """Block until something ends the session; return why."""
        deadline = None if self.options.duration is None else (
            time.monotonic() + self.options.duration)
        fds = {}
        for name, pid in (("perf", perf.pid), ("command", child.pid if child else None)):
            if pid is not None:
                with contextlib.suppress(AttributeError, OSError):
                    fds[os.pidfd_open(pid)] = name
        try:
            watch = [self._wake_r, *fds]
            poll_step = 0.1 if len(fds) < (2 if child else 1) else None
            while True:
                if self._stop_reasons:
                    return self._stop_reasons[0]
                if child is not None and child.poll() is not None:
                    return "command exited"
                if perf.poll() is not None:
                    return "perf exited"
                timeout = None
                if deadline is not None:
                    timeout = deadline - time.monotonic()
                    if timeout <= 0:
                        return "duration"
                if poll_step is not None:
                    timeout = poll_step if timeout is None else min(timeout, poll_step)
                select.select(watch, [], [], timeout)
                self._drain_wake()
        finally:
            for fd in fds:
                os.close(fd)

    def _stop_command(self, child: subprocess.Popen, reason: str) -> int:
        """Make COMMAND end (if it still runs) and return its status."""
        if child.poll() is not None:
            return child.returncode
        sig = signal.SIGTERM
        if reason.startswith("signal "):
            sig = signal.Signals[reason.split()[1]]
        if not (sig in _TTY_SIGNALS and _terminal_delivered()):
            with contextlib.suppress(ProcessLookupError):
                child.send_signal(sig)
        requests = self.stop_requests
        deadline = time.monotonic() + self.options.grace
        while child.poll() is None and time.monotonic() < deadline:
            if self.stop_requests > max(requests, 1):
                break  # asked again: do not wait any longer
            with contextlib.suppress(subprocess.TimeoutExpired):
                child.wait(0.05)
        if child.poll() is None:
            self.options.warn(f"COMMAND (pid {child.pid}) did not exit; killing it")
            with contextlib.suppress(ProcessLookupError):
                child.kill()
            child.wait()
        return child.returncode

    # -- streaming -----------------------------------------------------------------

    def _start_relay(self, perf: PerfSession, decoder: subprocess.Popen | None) -> StreamRelay:
        """Copy perf's pipe-mode output to the decoder, or else to our stdout."""
        assert perf.process is not None and perf.process.stdout is not None
        if decoder is not None and decoder.stdin is not None:
            relay = StreamRelay(perf.process.stdout, decoder.stdin, close_sink=True)
        else:
            with contextlib.suppress(AttributeError, OSError, ValueError):
                sys.stdout.flush()
            relay = StreamRelay(perf.process.stdout, 1)
        relay.start()
        return relay

    def _join_relay(self, relay: StreamRelay) -> RecordingStats | None:
        """Wait until perf's last bytes are passed on; the stream's counts."""
        while True:
            stats = relay.join(0.2)
            if stats is not None:
                return stats
            if self.stop_requests >= 2:
                self.options.warn("the reader of perf's output does not read: "
                                  "not waiting for it")
                return None

    def _start_decoder(self) -> subprocess.Popen:
        argv = [sys.executable, "-m", "ehtool", "decode", *self.options.decode_args, "-"]
        try:
            return subprocess.Popen(argv, stdin=subprocess.PIPE, start_new_session=True)
        except OSError as exc:
            raise ExternalError(f"cannot start the decoder: {exc.strerror or exc}") from None

    def _finish_decoder(self, decoder: subprocess.Popen) -> int:
        if decoder.stdin is not None and not decoder.stdin.closed:
            decoder.stdin.close()
        while True:
            try:
                return decoder.wait(0.2)
            except subprocess.TimeoutExpired:
                if self.stop_requests >= 2:
                    decoder.terminate()
                    return decoder.wait()

    # -- helpers -------------------------------------------------------------------

    def _summarize(self, result: RecordResult) -> None:
        o = self.options
        status = result.decoder_status
        if status is not None and status < 0:  # killed: as a shell says it
            o.warn(f"the decoder was killed by {signal.Signals(-status).name}")
            status = 128 - status
        elif status and result.stop_reason != READER_GONE:
            o.warn(f"the decoder exited with status {status}")
        if status and (result.exit_status == 0 or result.stop_reason == READER_GONE):
            result.exit_status = status  # (its own error, if that was it, was shown)
        if result.stop_reason == READER_GONE:
            return  # (quietly: the stream was cut where its reader left)
        if result.stats is None and self._relay is None and o.scan \
                and os.path.exists(o.output):
            result.stats = scan_recording(o.output)
        stats = result.stats
        if stats is None:
            return
        for err in stats.errors:
            o.warn(f"the recording has a problem: {err}")
        if stats.lost:
            o.warn(f"perf lost {stats.lost} events ({stats.lost_records} LOST records): "
                   "use a larger --buffer-size")

    def _install_signals(self) -> dict[int, object]:
        if threading.current_thread() is not threading.main_thread():
            return {}
        saved = {}

        def handler(signum: int, _frame: object) -> None:
            self._signals.append(signum)
            self.request_stop(f"signal {signal.Signals(signum).name}")

        for sig in STOP_SIGNALS:
            if signal.getsignal(sig) is not signal.SIG_IGN:  # (nohup: stays ignored)
                saved[sig] = signal.signal(sig, handler)
        return saved

    def _drain_wake(self) -> None:
        with contextlib.suppress(BlockingIOError, OSError):
            while os.read(self._wake_r, 64):
                pass


def _check_stdout(decode: bool) -> None:
    """``-o -`` and ``--decode`` write to file descriptor 1: it must be open and, for
    binary pipe-mode data, not a terminal."""
    what = "--decode" if decode else "-o -"
    try:
        if sys.stdout is None:  # closed when Python started: 1 may be another file now
            raise OSError
        os.fstat(1)
    except OSError:
        raise UsageError(f"{what} writes to stdout, which is closed") from None
    if not decode and os.isatty(1):
        raise UsageError("-o - writes binary pipe-mode data to stdout, which is a terminal; "
                         "pipe it (| ehtool decode -) or use --decode")


def _terminal_delivered() -> bool:
    """True when ehtool is the foreground job of its terminal (so the terminal sent
    Ctrl-C / hangup to COMMAND as well)."""
    for stream in (sys.stdin, sys.stderr, sys.stdout):
        try:
            fd = stream.fileno()
            if os.isatty(fd):
                return os.tcgetpgrp(fd) == os.getpgrp()
        except (AttributeError, OSError, ValueError):
            continue
    return False
