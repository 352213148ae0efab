"""``import ehtool`` leaves the importer's Ctrl-C alone; only ``python3 -m ehtool`` makes
it quiet while the command line starts."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

_SHOW = "import signal; print(signal.getsignal(signal.SIGINT) is signal.default_int_handler)"


@pytest.mark.parametrize("run_as", [["-m", "mypkg.tool"], ["-mmypkg.tool"], ["-Bm", "mypkg.tool"]])
def test_another_module_run_with_m_keeps_its_ctrl_c(tmp_path, run_as):
    pkg = tmp_path / "mypkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("import ehtool\n")  # imported while argv[0] is "-m"
    (pkg / "tool.py").write_text(_SHOW + "\n")
    env_path = f"{tmp_path}:{REPO}"
    done = subprocess.run([sys.executable, *run_as], capture_output=True, text=True,
                          cwd=tmp_path, env={"PYTHONPATH": env_path}, check=True)
    assert done.stdout == "True\n", done.stderr


@pytest.mark.parametrize(("orig_argv", "quiet"), [
    (["python3", "-m", "ehtool", "decode"], True),
    (["python3", "-mehtool"], True),
    (["python3", "-X", "importtime", "-Bm", "ehtool"], True),
    (["python3", "-m", "mypkg.tool"], False),
    (["python3", "-m", "ehtoolkit"], False),
    (["python3", "-c", "import ehtool"], False),
])
def test_only_python_m_ehtool_is_quiet_while_it_starts(monkeypatch, orig_argv, quiet):
    import ehtool

    monkeypatch.setattr(sys, "argv", ["-m"])
    monkeypatch.setattr(sys, "orig_argv", orig_argv)
    assert ehtool._starting_as_main() is quiet


_AT_LINE = """
import signal, sys
sys.argv[:] = ["-m"]
sys.orig_argv = [sys.executable, "-m", "ehtool"]
target, seen = int(sys.stdin.read()), 0

def trace(frame, event, arg):
    global seen
    installed = frame.f_globals.get("_quiet_while_starting")
    if event == "line" and installed and signal.getsignal(signal.SIGINT) is installed:
        seen += 1
        if seen == target:
            signal.raise_signal(signal.SIGINT)
    return trace

def start(frame, event, arg):
    return trace if frame.f_code.co_filename.endswith("ehtool/__init__.py") else None

sys.settrace(start)
import ehtool
sys.settrace(None)
print(seen)
"""


def test_a_ctrl_c_at_any_line_of_the_package_start_exits_quietly():
    """CI saw a KeyboardInterrupt traceback from ``ehtool/__init__.py`` itself: the SIGINT
    came while the package decided whether it was ``python3 -m ehtool``, before its quiet
    handler was installed. The handler is now installed first; from there on, a SIGINT
    at every line (raised by a tracer) exits 130 with nothing on stderr."""
    def run(target: int) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-c", _AT_LINE], input=str(target),
                              capture_output=True, text=True, cwd=REPO,
                              env={"PYTHONPATH": str(REPO)}, timeout=60)

    lines = int(run(0).stdout)
    assert lines > 10, lines
    for target in range(1, lines + 1):
        done = run(target)
        assert (done.returncode, done.stderr) == (130, ""), target


_KEEP = """
import signal, sys, threading
sys.argv[:] = ["-m"]
mine = lambda signum, frame: None
for handler in (signal.SIG_IGN, mine, signal.default_int_handler):
    signal.signal(signal.SIGINT, handler)
    sys.modules.pop("ehtool", None)
    import ehtool
    assert signal.getsignal(signal.SIGINT) is handler, handler
sys.modules.pop("ehtool", None)
errors = []
thread = threading.Thread(target=lambda: __import__("ehtool"))
threading.excepthook = errors.append
thread.start(); thread.join()
assert not errors and "ehtool" in sys.modules, errors
print("ok")
"""


def test_import_keeps_the_importers_handler_and_works_in_a_thread():
    """Another program's SIGINT handler (ignored, its own, Python's) is its own again
    after ``import ehtool``; a thread may import ehtool (signals are the main thread's)."""
    done = subprocess.run([sys.executable, "-c", _KEEP], capture_output=True, text=True,
                          cwd=REPO, env={"PYTHONPATH": str(REPO)}, timeout=60)
    assert done.stdout == "ok\n", done.stderr


def _ignoring(*signals: int):
    import signal

    def start() -> None:
        for sig in signals:
            signal.signal(sig, signal.SIG_IGN)
    return start


@pytest.mark.parametrize("entry", ["module", "console-script"])
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_ctrl_c_ignored_when_ehtool_starts_stays_ignored(tmp_path, entry, jobs):
    """A shell's background job (or ``nohup``) starts with SIGINT ignored; ehtool installed
    its own handlers anyway, and a Ctrl-C meant for the foreground ended it (130)."""
    import os
    import signal
    import time

    sched = REPO / "examples" / "sched.data"
    inputs = [str(tmp_path / f"in{k}.data") for k in range(40)]
    for path in inputs:
        os.symlink(sched, path)
    if entry == "module":
        argv = [sys.executable, "-m", "ehtool"]
    else:  # the console script's name, as pip writes it
        script = tmp_path / "ehtool"
        script.write_text(f"#!{sys.executable}\nfrom ehtool.cli import main\nmain()\n")
        script.chmod(0o755)
        argv = [str(script)]
    proc = subprocess.Popen([*argv, "decode", "-j", jobs, "--format", "jsonl", *inputs],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path,
                            env={**os.environ, "PYTHONPATH": str(REPO)},
                            preexec_fn=_ignoring(signal.SIGINT), start_new_session=True)
    signals = 0
    while proc.poll() is None and signals < 20:
        time.sleep(0.01)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGINT)  # (the workers too, as a terminal does)
            signals += 1
    out, err = proc.communicate(timeout=60)
    assert (proc.returncode, err) == (0, b""), signals
    one = subprocess.run([*argv, "decode", "--format", "jsonl", str(sched)], cwd=tmp_path,
                         capture_output=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert len(out.splitlines()) == 40 * len(one.stdout.splitlines())


_AS_INSTALLED = """
import _signal, signal, sys
sys.argv[:] = ["-m"]
sys.orig_argv = [sys.executable, "-m", "ehtool"]

def profile(frame, event, arg):
    if (event == "c_return" and arg is _signal.signal
            and frame.f_code.co_filename.endswith("ehtool/__init__.py")):
        sys.setprofile(None)
        signal.raise_signal(signal.SIGINT)  # (its handler runs here: the one just set)

sys.setprofile(profile)
import ehtool
"""


def test_a_ctrl_c_as_the_handler_is_installed_exits_quietly():
    """A SIGINT handled as the install returns (before its result was stored) ran the
    handler before ``_previous`` existed: NameError, a traceback from the package."""
    done = subprocess.run([sys.executable, "-c", _AS_INSTALLED], capture_output=True,
                          text=True, cwd=REPO, env={"PYTHONPATH": str(REPO)}, timeout=60)
    assert (done.returncode, done.stderr) == (130, "")
