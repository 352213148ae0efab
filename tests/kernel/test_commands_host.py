"""register / unregister / list without a kernel: validation before the kernel is
touched, listing from a fake tracefs, signal handling, light imports."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from ehtool.cli import main
from ehtool.kernel import tracefs
from ehtool.kernel.registry import stop_signals

COMMON = ("\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
          "\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
          "\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
          "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n")


PLAIN = "Plain u32 count; char[16] name; __rel_loc char[] msg; struct foo bar 12"


def _format(name: str, fields: list[tuple[str, int, int]]) -> str:
    lines = "".join(f"\tfield:{decl};\toffset:{off};\tsize:{size};\tsigned:0;\n"
                    for decl, off, size in fields)
    return f"name: {name}\nID: 1234\nformat:\n{COMMON}{lines}\nprint fmt: \"\"\n"


@pytest.fixture
def fake_tracefs(tmp_path, monkeypatch) -> Path:
    """A tracefs with three user_events: an EventHeader one enabled by perf, a plain
    one with a char array, a __rel_loc string and a struct, and one without fields.
    Array counts are garbage, as a 6.12 kernel prints them."""
    root = tmp_path / "tracing"
    events = {
        "Prov_L5K1": _format("Prov_L5K1", [
            ("u8 eventheader_flags", 8, 1), ("u8 version", 9, 1), ("u16 id", 10, 2),
            ("u16 tag", 12, 2), ("u8 opcode", 14, 1), ("u8 level", 15, 1)]),
        "Plain": _format("Plain", [("u32 count", 8, 4), ("char name[8239168]", 12, 16),
                                   ("__rel_loc char msg[8239232]", 28, 4),
                                   ("struct foo bar", 32, 12)]),
        "Bare": _format("Bare", []),
    }
    for name, text in events.items():
        (root / "events" / "user_events" / name).mkdir(parents=True)
        (root / "events" / "user_events" / name / "format").write_text(text)
    (root / "user_events_status").write_text(
        "Prov_L5K1 # Used by perf\nPlain\nBare\n\nActive: 3\nBusy: 1\nMax: 32768\n")
    monkeypatch.setattr(tracefs, "find_tracefs", lambda: root)
    return root


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exit_info:
        main(list(argv))
    out, err = capsys.readouterr()
    return exit_info.value.code, out, err


def test_list_json_gives_definitions_in_register_syntax(fake_tracefs, capsys):
    rc, out, _ = _run(capsys, "list", "--json")
    assert rc == 0
    events = {e["name"]: e for e in json.loads(out)}
    assert events["Prov_L5K1"] == {
        "name": "Prov_L5K1", "tracepoint": "user_events:Prov_L5K1",
        "definition": "Prov_L5K1 u8 eventheader_flags; u8 version; u16 id; u16 tag; "
                      "u8 opcode; u8 level",
        "eventheader": True, "enabled": True, "used_by": ["perf"]}
    assert events["Plain"]["definition"] == PLAIN
    assert events["Plain"]["eventheader"] is False and events["Plain"]["enabled"] is False
    assert events["Bare"]["definition"] == "Bare ;"  # not bare 'Bare': register -i takes it


def test_list_text_and_enabled_filter(fake_tracefs, capsys):
    rc, out, _ = _run(capsys, "list")
    assert rc == 0
    assert out.splitlines()[0].split("\t")[:2] == ["Prov_L5K1", "enabled by perf"]
    assert "Plain\tdisabled\tPlain u32 count; char[16] name;" in out
    rc, out, _ = _run(capsys, "list", "--enabled", "--json")
    assert [e["name"] for e in json.loads(out)] == ["Prov_L5K1"]


def test_existing_definition_is_rebuilt_for_the_eaddrinuse_message(fake_tracefs):
    from ehtool.kernel.user_events import _existing_definition

    assert _existing_definition("Plain") == PLAIN
    assert _existing_definition("Missing") is None


@pytest.mark.parametrize(("argv", "message"), [
    (["MyProv_L0K1"], "argument 1: 'MyProv_L0K1': level must be 1..255"),
    (["Ok_L5K1", "Bad_L5K"], "argument 2:"),
    (["Ev long a"], "long is ambiguous"),
    (["Ev char a[4]"], "write arrays as 'char[N] a'"),
    (["user_events:MyProv_L5K1:persist"], "no ':flags' after the name (to keep an event "
                                          "after exit, use --persist)"),
    ([":sched:sched_switch"], "names an existing tracepoint"),
    (["sched:Ev u32 a"], "only 'user_events' can"),
    (["Ev u32 a", "Ev u64 a"], "given twice with different definitions"),
    ([], "nothing to register"),
    (["--provider", "P", "--level", "0"], "level must be 1..255"),
    (["--provider", "P", "--keyword", "x"], "'x' is not a number"),
    (["--group", "g", "Ev ;"], "--group needs --provider"),
])
def test_register_refuses_bad_input_before_touching_the_kernel(capsys, monkeypatch, argv,
                                                                message):
    def no_kernel(*args, **kwargs):
        raise AssertionError("the kernel was reached")

    monkeypatch.setattr("ehtool.kernel.user_events.UserEvents.open", no_kernel)
    rc, out, err = _run(capsys, "register", "--no-wait", *argv)
    assert rc == 2, err
    assert out == ""
    assert err.startswith("ehtool: error: ") and message in err, err
    assert "Traceback" not in err


def test_register_file_errors_name_the_line(tmp_path, capsys):
    defs = tmp_path / "defs.txt"
    defs.write_text("# header\nGood_L5K1\n\nBad_L5\n")
    rc, _, err = _run(capsys, "register", "--no-wait", "-i", str(defs))
    assert rc == 2 and f"{defs}:4:" in err
    assert err.endswith("(see 'ehtool register --help')\n")  # (a usage error's hint)
    rc, _, err = _run(capsys, "register", "-i", str(tmp_path / "missing.txt"))
    assert rc == 1 and "missing.txt: cannot read spec file" in err  # (bad input)


def test_a_tracefs_out_of_reach_gives_the_permission_hint(tmp_path, monkeypatch, capsys):
    """Non-root, tracefs root mode 0700: every stat and open inside it is EACCES
    (Path.exists raises that, it does not return False)."""
    root = tmp_path / "tracing"

    def denied(real):
        def call(path, *args, **kwargs):
            if str(path).startswith(f"{root}/"):
                raise PermissionError(errno.EACCES, "Permission denied", str(path))
            return real(path, *args, **kwargs)
        return call

    monkeypatch.setattr(tracefs, "DEFAULT_TRACEFS", root)
    monkeypatch.setattr(os, "stat", denied(os.stat))
    monkeypatch.setattr(os, "open", denied(os.open))
    tracefs.find_tracefs.cache_clear()
    try:
        for argv in (["register", "--no-wait", "P_L1K1"], ["list"], ["unregister", "P_L1K1"]):
            rc, _, err = _run(capsys, *argv)
            assert rc == 4, err
            assert "permission denied; run as root, or let a 'tracing' group" in err, err
            assert f"remount,gid=tracing,mode=750 {root};" in err and err.count("\n") == 1
    finally:
        tracefs.find_tracefs.cache_clear()


@pytest.mark.skipif(Path("/sys/kernel/tracing/user_events_data").exists(),
                    reason="this kernel has user_events")
@pytest.mark.parametrize("argv", [["register", "--no-wait", "MyProv_L5K1"],
                                  ["unregister", "MyProv_L5K1"], ["list"]])
def test_a_kernel_without_user_events_is_explained(argv):
    done = subprocess.run([sys.executable, "-m", "ehtool", *argv], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 4, done.stderr
    assert "CONFIG_USER_EVENTS" in done.stderr and "6.4" in done.stderr
    assert done.stderr.count("\n") == 1  # one line, no traceback


def test_register_path_imports_neither_construct_nor_orjson():
    code = ("import sys\nfrom ehtool.cli import main\n"
            "try:\n    main(['register', '--no-wait', 'MyProv_L5K1', 'Ev u32 a'])\n"
            "except SystemExit:\n    pass\n"
            "assert 'ehtool.record.specs' in sys.modules\n"
            "print(sorted(m for m in ('construct', 'orjson') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60)
    assert done.stdout.strip() == "[]", done.stderr


def test_a_signal_before_wait_is_not_lost():
    with stop_signals() as wait:
        os.kill(os.getpid(), signal.SIGTERM)
        start = time.monotonic()
        wait()
        assert time.monotonic() - start < 1
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


def test_wait_returns_on_a_later_signal_and_restores_handlers():
    before = signal.getsignal(signal.SIGINT)
    with stop_signals() as wait:
        timer = threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT))
        timer.start()
        start = time.monotonic()
        wait()
        assert 0.1 < time.monotonic() - start < 5
        timer.join()
    assert signal.getsignal(signal.SIGINT) is before
    assert signal.pthread_sigmask(signal.SIG_BLOCK, []) == set()
