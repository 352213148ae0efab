"""A stand-in for ``perf`` that misbehaves on request (tests only).

Answers ``perf version`` and ``perf record -h``; ``perf record`` speaks the
``--control fifo:CTL,ACK`` protocol and writes ``-o FILE`` when stopped.
Environment:

* ``FAKE_PERF_MODE``: ``good`` (default), ``die`` (exits 255 at once with a
  message), ``noack`` (never answers ``enable``), ``ignore-int`` (ignores
  SIGINT, stops on SIGTERM), ``ignore-all`` (only SIGKILL ends it),
  ``exit-early`` (acks, then exits 1 after 0.3 s), ``usage`` (an unknown
  option: perf's error line, then its usage text, exit 129), ``stream`` (with
  ``-o -``, a FINISHED_ROUND record every 10 ms after the header; SIGPIPE kills it,
  as it kills perf), ``burst`` (with ``-o -``, 64 KB of FINISHED_ROUND records as it
  stops: perf's last bytes)
* ``FAKE_PERF_OLD=1``: ``perf record -h`` shows no ``fifo:`` control
* ``FAKE_PERF_LOG``: file that gets one line per thing that happened
* ``FAKE_PERF_MARKER``: file created just before the ack is sent
* ``FAKE_PERF_STREAM``: with ``-o -``, the bytes written to stdout at start
  (default: a bare pipe-mode header)
"""

import contextlib
import os
import select
import signal
import sys
import time

MODE = os.environ.get("FAKE_PERF_MODE", "good")
LOG = os.environ.get("FAKE_PERF_LOG")
HELP = """
 Usage: perf record [<options>] [<command>]
    -a, --all-cpus        system-wide collection from all CPUs
    -D, --delay <ms>      ms to wait before starting measurement
    -k, --clockid <clockid>
    -m, --mmap-pages <pages[,pages]>
        --no-buffering    collect data without buffering
        --sample-identifier
                          Record the sample identifier
"""
USAGE = "\n Usage: perf record [<options>] [<command>]\n" + "".join(
    f"    -{chr(97 + i % 26)}, --option-{i:03} <n>   what option {i} does\n" for i in range(120))
PIPE_HEADER = b"PERFILE2" + (16).to_bytes(8, "little")
FINISHED_ROUND = (68).to_bytes(4, "little") + (0).to_bytes(2, "little") + (8).to_bytes(2, "little")
CONTROL = """        --control <fd:ctl-fd[,ack-fd] or fifo:ctl-fifo[,ack-fifo]>
                          Listen on ctl-fd descriptor for command to control measurement
"""


def log(line: str) -> None:
    if LOG:
        with open(LOG, "a") as f:
            f.write(line + "\n")


def main() -> None:
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # (as in perf: a write to a pipe
    args = sys.argv[1:]                           # nobody reads kills it)
    if args[:1] == ["version"]:
        print("perf version 6.1.99")
        return
    if args[:2] == ["record", "-h"]:
        sys.stderr.write(HELP + ("" if os.environ.get("FAKE_PERF_OLD") else CONTROL))
        sys.exit(129)
    log("argv " + " ".join(args))
    if MODE == "die":
        sys.stderr.write("event syntax error: 'user_events:Nope'\n")
        sys.exit(255)
    if MODE == "noisy":  # perf on a full disk: one line many times
        sys.stderr.write("failed to write perf data, error: No space left on device\n" * 40)
        sys.exit(255)
    if MODE == "usage":
        sys.stderr.write("  Error: unknown option `bogus'\n" + USAGE)
        sys.exit(129)
    output = args[args.index("-o") + 1] if "-o" in args else "perf.data"
    if output == "-":
        stream = os.environ.get("FAKE_PERF_STREAM")
        with open(stream, "rb") if stream else contextlib.nullcontext() as f:
            sys.stdout.buffer.write(f.read() if f else PIPE_HEADER)
        sys.stdout.buffer.flush()
    control = None
    if "--control" in args:
        ctl, ack = args[args.index("--control") + 1].removeprefix("fifo:").split(",")
        control = (os.open(ctl, os.O_RDONLY | os.O_NONBLOCK), os.open(ack, os.O_WRONLY))

    def finish(signum: int, _frame: object) -> None:
        log(f"signal {signal.Signals(signum).name}")
        if output != "-":
            with open(output, "w") as f:
                f.write(f"fake perf data, stopped by {signal.Signals(signum).name}\n")
        if MODE == "burst" and output == "-":
            sys.stdout.buffer.write(FINISHED_ROUND * 8192)
            sys.stdout.buffer.flush()
        sys.stderr.write("[ perf record: Captured and wrote 0.001 MB x (42 samples) ]\n")
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)

    handlers = {signal.SIGINT: finish, signal.SIGTERM: finish}
    if MODE == "ignore-int":
        handlers[signal.SIGINT] = signal.SIG_IGN
    if MODE == "ignore-all":
        handlers = {signal.SIGINT: signal.SIG_IGN, signal.SIGTERM: signal.SIG_IGN}
    for sig, handler in handlers.items():
        signal.signal(sig, handler)
    sys.stderr.write("Events disabled\n")
    log("started")
    acked_at = None
    while True:
        if control is not None:
            readable, _, _ = select.select([control[0]], [], [], 0.05)
            data = os.read(control[0], 100) if readable else b""
            if b"enable" in data and MODE != "noack":
                log("enable")
                if os.environ.get("FAKE_PERF_MARKER"):
                    open(os.environ["FAKE_PERF_MARKER"], "w").close()
                os.write(control[1], b"ack\n\0")
                acked_at = time.monotonic()
        else:
            time.sleep(0.05)
            acked_at = acked_at or time.monotonic()
        if MODE == "stream" and output == "-":
            sys.stdout.buffer.write(FINISHED_ROUND)
            sys.stdout.buffer.flush()
            time.sleep(0.01)
        if MODE == "exit-early" and acked_at and time.monotonic() - acked_at > 0.3:
            sys.stderr.write("perf: mmap failed\n")
            log("exit-early")
            sys.exit(1)


if __name__ == "__main__":
    main()
