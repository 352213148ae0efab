"""register / unregister / list against a real kernel."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

from ehtool.eventheader.names import EVENTHEADER_COMMAND_TYPES
from ehtool.kernel.user_events import UserEvents

from .conftest import TRACEFS, decode, ehtool, event_dir, perf_record, perf_session


def _wait_gone(name: str, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not event_dir(name).exists():
            return True
        time.sleep(0.05)
    return False


def _listed() -> dict[str, dict]:
    """``ehtool list --json`` by event name."""
    done = ehtool("list", "--json")
    assert done.returncode == 0, done.stderr
    return {e["name"]: e for e in json.loads(done.stdout)}


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

        listed = _listed()
        assert listed[eh]["eventheader"] is True and listed[eh]["enabled"] is False
        assert listed[full]["definition"] == f"{full} u32 count; char[16] name"
        done = ehtool("list")
        assert done.returncode == 0 and eh in done.stdout, done.stderr
        done = ehtool("list", "--enabled")
        assert done.returncode == 0 and eh not in done.stdout, done.stderr
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
    name, control = f"{provider}_L3K1", f"{provider}_L3K2"
    done = ehtool("register", "--persist", name)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [name]
    done = ehtool("register", "--no-wait", control)
    assert done.returncode == 0 and done.stdout.split() == [control], done.stderr
    assert _wait_gone(control), "the control (not persisted) must go once released"
    assert event_dir(name).exists()  # still there after the control went
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
        assert proc.wait(30) == 0, proc.stderr.read()


def test_invalid_names_and_definitions_are_refused_before_the_kernel(provider):
    for bad in (f"{provider}_L0K1", f"{provider}_LK1", f"{provider}_L5K1g", f"{provider}:x:y:z",
                f"{provider} long a", f"{provider} char a[4]"):
        done = ehtool("register", "--no-wait", bad)
        assert done.returncode == 2, (bad, done.stderr)
        assert done.stderr.startswith("ehtool: error:"), done.stderr
    # nothing half-registered: the valid first one is not left behind (persisted) either
    done = ehtool("register", "--persist", f"{provider}_L5K1", f"{provider}_L0K1")
    assert done.returncode == 2, done.stderr
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


def test_done_means_perf_records_events_a_background_register_holds(provider, tmp_path):
    """The issue's scenario: ``ehtool register P_L5K1 'Ev u32 a' &``, then plain
    ``perf record -e user_events:P_L5K1 -e user_events:Ev``; list shows both used
    by perf; killing the register process removes them."""
    eh, full = f"{provider}_L5K1", f"{provider}Ev"
    out = tmp_path / "perf.data"
    proc, names = _start_register(eh, f"{full} u32 a")
    try:
        assert names == [eh, full]
        with perf_record([f"user_events:{eh}", f"user_events:{full}"], out) as perf:
            listed = _listed()
            assert "perf" in listed[eh]["used_by"] and "perf" in listed[full]["used_by"]
            written = ehtool("write", "--require-enabled", provider, "Hello", "v:u32=7")
            assert written.returncode == 0, written.stderr
            with UserEvents.open() as ue:  # the same definition: the held event is reused
                reg = ue.register(f"{full} u32 a")
                assert reg.enabled and reg.write((42).to_bytes(4, "little"))
        assert perf.returncode in (0, -signal.SIGINT, 130), perf.stderr.read()
        assert event_dir(eh).exists() and event_dir(full).exists()  # still held by register
    finally:
        proc.kill()
        proc.wait(30)
    assert _wait_gone(eh) and _wait_gone(full)
    events = decode(out)
    assert [(e["n"], e.get("v"), e.get("a")) for e in events] == [
        (f"{provider}:Hello", 7, None), (f"user_events:{full}", None, 42)], events


def test_persist_with_a_conflicting_definition_registers_nothing(provider):
    first, taken, last = f"{provider}_L1K1", f"{provider}B", f"{provider}_L2K1"
    proc, _ = _start_register(f"{taken} u64 y")
    try:
        done = ehtool("register", "--persist", first, f"{taken} u32 x", last)
        assert done.returncode == 4 and done.stdout == "", done.stderr
        assert f"existing: {taken} u64 y" in done.stderr, done.stderr
        assert not event_dir(first).exists() and not event_dir(last).exists()
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0, proc.stderr.read()
        ehtool("unregister", first, last)


def test_persist_failing_part_way_deletes_the_events_it_created(provider):
    """user_events_max lets the first registration through and stops the second
    (EMFILE): the first, already persisted, must be deleted again."""
    first, second = f"{provider}_L1K1", f"{provider}_L2K1"
    limit = Path("/proc/sys/kernel/user_events_max")
    saved = limit.read_text()
    active = next(int(line.split()[1]) for line in
                  (TRACEFS / "user_events_status").read_text().splitlines()
                  if line.startswith("Active:"))
    try:
        limit.write_text(f"{active + 1}\n")
        done = ehtool("register", "--persist", first, second)
    finally:
        limit.write_text(saved)
    try:
        assert done.returncode == 4, done.stderr
        assert f"cannot register {second}: the kernel's user_events limit" in done.stderr
        assert "could not undo" not in done.stderr, done.stderr
        assert _wait_gone(first), f"{first} was left persisted"
    finally:
        ehtool("unregister", first)


def test_list_definitions_and_stdin_round_trip(provider):
    """'Name ;' registers (6.12), list gives it back as 'Name ;', and list's
    definitions fed to 'register -i -' match the kernel's events; G option too."""
    empty, grouped = f"{provider}Empty", f"{provider}_L5K3ffGmygroup"
    done = ehtool("register", "--persist", f"{empty} ;", grouped)
    assert done.returncode == 0 and done.stdout.split() == [empty, grouped], done.stderr
    try:
        listed = _listed()
        assert listed[empty]["definition"] == f"{empty} ;"
        assert listed[grouped]["eventheader"] is True
        text = f"{listed[empty]['definition']}\n{listed[grouped]['definition']}\n"
        again = ehtool("register", "--no-wait", "-i", "-", input=text)
        assert again.returncode == 0, again.stderr
        assert again.stdout.split() == [empty, grouped]
    finally:
        done = ehtool("unregister", empty, grouped)
        assert done.returncode == 0, done.stderr
