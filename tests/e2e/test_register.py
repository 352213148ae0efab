"""register / unregister / list against a real kernel."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

from ehtool.eventheader.names import EVENTHEADER_COMMAND_TYPES
from ehtool.kernel.user_events import UserEvents

from .conftest import ehtool, event_dir, perf_session


def _wait_gone(name: str, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not event_dir(name).exists():
            return True
        time.sleep(0.05)
    return False


def _start_register(*args: str) -> tuple[subprocess.Popen, list[str]]:
    proc = subprocess.Popen([sys.executable, "-m", "ehtool", "register", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    names = []
    expected = len([a for a in args if not a.startswith("-")])
    while len(names) < expected:
        line = proc.stdout.readline()
        assert line, proc.stderr.read()
        names.append(line.strip())
    return proc, names


def test_register_holds_until_sigterm_then_cleans_up(provider):
    eh, full = f"{provider}_L5K1", f"{provider}Ev"
    proc, names = _start_register(eh, f"{full} u32 count; char[16] name")
    try:
        assert names == [eh, full]
        assert (event_dir(eh) / "format").exists()
        fmt = (event_dir(full) / "format").read_text()
        assert "field:u32 count;" in fmt
        assert "name[" in fmt and "offset:12;\tsize:16;" in fmt
        eh_fmt = (event_dir(eh) / "format").read_text()
        assert "field:u8 eventheader_flags;" in eh_fmt and "field:u8 level;" in eh_fmt

        listed = {e["name"]: e for e in json.loads(ehtool("list", "--json").stdout)}
        assert listed[eh]["eventheader"] is True and listed[eh]["enabled"] is False
        assert listed[full]["definition"].startswith(f"{full} u32 count")
        assert eh in ehtool("list").stdout
        assert eh not in ehtool("list", "--enabled").stdout
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0, proc.stderr.read()
    assert _wait_gone(eh) and _wait_gone(full)


def test_enable_state_flips_when_perf_enables_the_event(provider, tmp_path):
    name = f"{provider}_L4K2"
    with UserEvents.open() as ue:
        reg = ue.register(f"{name} {EVENTHEADER_COMMAND_TYPES}")
        assert not reg.enabled
        assert reg.write(b"\x03\x00\x00\x00\x00\x00\x00\x04") is False  # EBADF: disabled
        with perf_session([f"user_events:{name}"], tmp_path / "p.data"):
            assert reg.enabled
            listed = {e["name"]: e for e in json.loads(ehtool("list", "--json").stdout)}
            assert listed[name]["enabled"] and "perf" in listed[name]["used_by"]
            assert name in ehtool("list", "--enabled").stdout
            assert reg.write(b"\x03\x00\x00\x00\x00\x00\x00\x04") is True
        assert not reg.enabled
        reg.unregister()


def test_persist_survives_the_process_until_unregister(provider):
    name = f"{provider}_L3K1"
    done = ehtool("register", "--persist", name)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [name]
    time.sleep(0.2)
    assert event_dir(name).exists()
    done = ehtool("unregister", f"user_events:{name}")
    assert done.returncode == 0, done.stderr
    assert _wait_gone(name)
    again = ehtool("unregister", name)
    assert again.returncode == 4 and "no such user_event" in again.stderr


def test_unregister_refuses_an_event_in_use(provider):
    name = f"{provider}_L5K1"
    proc, _ = _start_register(name)
    try:
        done = ehtool("unregister", name)
        assert done.returncode == 4
        assert "still in use" in done.stderr
        assert event_dir(name).exists()
    finally:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(30) == 0


def test_conflicting_definition_shows_both(provider):
    name = f"{provider}X"
    proc, _ = _start_register(f"{name} u32 a")
    try:
        done = ehtool("register", "--no-wait", f"{name} u64 b")
        assert done.returncode == 4
        assert "already registered with a different definition" in done.stderr
        assert f"existing: {name} u32 a" in done.stderr
        assert f"yours:    {name} u64 b" in done.stderr
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)


def test_invalid_names_and_definitions_are_refused_before_the_kernel(provider):
    for bad in (f"{provider}_L0K1", f"{provider}_LK1", f"{provider}_L5K1g", f"{provider}:x:y:z",
                f"{provider} long a", f"{provider} char a[4]"):
        done = ehtool("register", "--no-wait", bad)
        assert done.returncode == 2, (bad, done.stderr)
        assert done.stderr.startswith("ehtool: error:"), done.stderr
    # nothing half-registered: the valid first one is not left behind either
    done = ehtool("register", "--no-wait", f"{provider}_L5K1", f"{provider}_L0K1")
    assert done.returncode == 2
    assert not event_dir(f"{provider}_L5K1").exists()


def test_provider_expansion(provider):
    proc = subprocess.Popen([sys.executable, "-m", "ehtool", "register", "--provider", provider,
                             "--level", "1-2", "--keyword", "0x1,0xf0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        names = [proc.stdout.readline().strip() for _ in range(4)]
        assert names == [f"{provider}_L1K1", f"{provider}_L1Kf0", f"{provider}_L2K1",
                         f"{provider}_L2Kf0"]
        assert all(event_dir(n).exists() for n in names)
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
