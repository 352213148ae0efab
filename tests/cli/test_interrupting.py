"""``interrupting``: a signal during C code that runs long (DuckDB's query) reaches a
callback on another thread and ends the block as the signal, at a point of our choosing."""

from __future__ import annotations

import os
import signal
import threading

import pytest

from ehtool.cli.signals import interrupting
from ehtool.errors import SignalExit


@pytest.mark.parametrize(("signum", "raised"), [
    (signal.SIGTERM, SignalExit), (signal.SIGHUP, SignalExit), (signal.SIGINT, KeyboardInterrupt)])
def test_a_signal_calls_back_from_a_thread_and_ends_the_block(signum, raised):
    called: list[str] = []
    done = threading.Event()

    def interrupt() -> None:
        called.append(threading.current_thread().name)
        done.set()

    # (a run under nohup, or in a background job, inherits SIGHUP or SIGINT ignored)
    before = signal.signal(signum, signal.default_int_handler)
    before, original = signal.getsignal(signum), before
    with pytest.raises(raised) as caught, interrupting(interrupt):
        os.kill(os.getpid(), signum)
        assert done.wait(10)
        # the block goes on until it ends by itself: the signal raised nothing meanwhile
        called.append("after")
        raise RuntimeError("what the interrupted code raised")
    assert called == ["ehtool-signals", "after"]
    if raised is SignalExit:
        assert caught.value.code == 128 + signum
    assert signal.getsignal(signum) is before
    assert signal.set_wakeup_fd(-1) == -1  # none left behind
    signal.signal(signum, original)


def test_without_a_signal_the_block_is_untouched():
    with pytest.raises(ValueError, match="mine"), interrupting(lambda: None):
        raise ValueError("mine")
    with interrupting(pytest.fail):
        pass
    assert threading.active_count() == 1 or all(
        t.name != "ehtool-signals" for t in threading.enumerate())


def test_a_signal_already_ignored_stays_ignored():
    previous = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        with interrupting(pytest.fail):
            os.kill(os.getpid(), signal.SIGHUP)
            assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGHUP, previous)


def test_a_signal_held_during_an_import_before_the_block_ends_it_before_it_runs(
        tmp_path, monkeypatch):
    """``exit_on_signals`` holds a signal that comes during an import and raises it from
    a SIGALRM a few ms later: inside ``interrupting``'s block, DuckDB caught it and
    raised its own error ('Query interrupted', exit 1 instead of 129)."""
    import sys
    import time

    from ehtool.cli.signals import exit_on_signals

    (tmp_path / "ehtool_test_held_import.py").write_text(
        "import os, signal, time\n"
        "os.kill(os.getpid(), signal.SIGHUP)\n"
        "time.sleep(0.02)  # the handler runs here, inside the import: it holds the signal\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    ran: list[str] = []

    def query() -> None:  # as DuckDB does with an exception its callback raises
        try:
            ran.append("block")
            time.sleep(5)
        except SignalExit:
            raise RuntimeError("Query interrupted") from None

    # (a run under nohup, as CI's may be, inherits SIGHUP ignored: exit_on_signals keeps it so)
    before = signal.signal(signal.SIGHUP, signal.SIG_DFL)
    try:
        with pytest.raises(SignalExit) as caught, exit_on_signals():
            import ehtool_test_held_import  # noqa: F401
            with interrupting(pytest.fail):
                query()
    finally:
        signal.signal(signal.SIGHUP, before)
    assert caught.value.code == 128 + signal.SIGHUP
    assert ran == []
    assert signal.set_wakeup_fd(-1) == -1
    del sys.modules["ehtool_test_held_import"]


def test_a_signal_raised_where_python_discards_it_ends_the_block_a_little_later():
    """A signal whose exception Python discards (raised in a weakref callback the garbage
    collector runs: 'Exception ignored in ... _remove', seen once in a full test run)
    is raised again a few ms later, at a point that can catch it."""
    import os
    import time
    import weakref

    from ehtool.cli.signals import exit_on_signals

    class Thing:
        pass

    def callback(ref) -> None:  # the handler runs in here, as in a GC-run callback
        os.kill(os.getpid(), signal.SIGHUP)
        time.sleep(0.01)

    before = signal.signal(signal.SIGHUP, signal.SIG_DFL)
    try:
        with pytest.raises(SignalExit) as caught, exit_on_signals():
            thing = Thing()
            ref = weakref.ref(thing, callback)
            del thing  # (the callback runs now; its exception is discarded)
            time.sleep(1)
            pytest.fail(f"the signal was lost ({ref})")
    finally:
        signal.signal(signal.SIGHUP, before)
    assert caught.value.code == 128 + signal.SIGHUP


def test_a_signal_after_the_output_is_replaced_changes_nothing(tmp_path):
    """128+N says -o FILE was left as it was: a SIGTERM or SIGINT that came once FILE was
    replaced (tens of ms before the exit) ended the command 143/130 all the same (found
    by an outside robustness run), also when another thread (pyarrow's) took it. From
    the replace on they are dropped (and nothing is left blocked for the processes it
    starts: a blocked mask made them deaf to SIGTERM); one before it still ends the
    command and keeps FILE."""
    import subprocess
    import sys

    script = (
        "import os, signal, sys\n"
        "from ehtool.cli.signals import exit_on_signals\n"
        "from ehtool.decode.atomic import atomic_output\n"
        "import threading, time\n"
        "other = threading.Thread(target=time.sleep, args=(1,), daemon=True)\n"
        "other.start()  # (signals reach it: it blocks none)\n"
        "with exit_on_signals():\n"
        "    with atomic_output(sys.argv[1]) as f:\n"
        "        f.write(b'new')\n"
        "        if sys.argv[2] == 'before':\n"
        "            os.kill(os.getpid(), signal.SIGTERM)\n"
        "    os.kill(os.getpid(), signal.SIGTERM)\n"
        "    signal.pthread_kill(other.ident, signal.SIGTERM)\n"
        "    signal.pthread_kill(other.ident, signal.SIGINT)\n"
        "    time.sleep(0.05)\n"
        "print('finished')\n")
    for when, status, content in (("after", 0, b"new"), ("before", 143, b"old")):
        out = tmp_path / f"{when}.json"
        out.write_bytes(b"old")
        done = subprocess.run([sys.executable, "-c", script, str(out), when],
                              capture_output=True, text=True)
        assert done.returncode == status, done.stderr
        assert out.read_bytes() == content
        assert (done.stdout == "finished\n") == (status == 0)
        assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".ehtool")] == []


def test_replacing_an_output_leaves_the_signal_mask_as_it_was(tmp_path):
    """The first fix blocked SIGINT, SIGTERM and SIGHUP for good once -o FILE was
    replaced: called in-process, every process started afterwards inherited the mask
    and ignored SIGTERM (``ehtool record`` then never stopped)."""
    from ehtool.decode.atomic import atomic_output

    before = signal.pthread_sigmask(signal.SIG_BLOCK, [])
    with atomic_output(str(tmp_path / "out.json")) as f:
        f.write(b"new")
    assert signal.pthread_sigmask(signal.SIG_BLOCK, []) == before
    assert (tmp_path / "out.json").read_bytes() == b"new"
