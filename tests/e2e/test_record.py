"""``ehtool record`` against a kernel with user_events (in the guest VM or natively as root).

These tests start ``ehtool`` as a subprocess, as users do: registration by
ehtool, perf readiness before COMMAND, clean stop, release afterwards.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time

from .conftest import decode, ehtool, event_dir


def test_record_command_event_is_decoded_and_registration_released(provider, tmp_path):
    name = f"{provider}_L5K1"
    out = tmp_path / "x.data"
    done = ehtool("record", "-o", str(out), name, "--",
                  sys.executable, "-m", "ehtool", "write", provider, "Ev", "n:u32=7")
    assert done.returncode == 0, done.stderr
    events = [e for e in decode(out) if e["_pairs"][0] == ("n", f"{provider}:Ev")]
    assert len(events) == 1, events
    fields = [(k.split(";")[0], v) for k, v in events[0]["_pairs"][1:] if k != "meta"]
    assert fields == [("n", 7)]
    stamp = events[0]["meta"]["time"]
    assert stamp.endswith("Z") and stamp[:2] == "20" and "T" in stamp  # UTC wall clock
    assert not event_dir(name).exists(), "registration must be released"


def test_duration_records_kernel_tracepoint(tmp_path):
    out = tmp_path / "sched.data"
    started = time.monotonic()
    done = ehtool("record", "--duration", "2", ":sched:sched_switch", "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert time.monotonic() - started >= 2
    assert "recording (for 2 s), Ctrl-C to stop" in done.stderr
    events = decode(out)
    assert events and all(e["n"] == "sched:sched_switch" for e in events)


def test_sigterm_mid_session_leaves_decodable_file_and_releases(provider, tmp_path):
    name = f"{provider}_L4K2"
    out = tmp_path / "term.data"
    proc = subprocess.Popen([sys.executable, "-m", "ehtool", "record", "-o", str(out), name,
                             ":sched:sched_switch"], stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stderr.readline()
        assert "recording, Ctrl-C to stop" in line, line + proc.stderr.read()
        assert event_dir(name).exists(), "held for the whole session"
        time.sleep(0.5)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(120) == 0, proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
    events = decode(out)
    assert any(e["n"] == "sched:sched_switch" for e in events)
    assert not event_dir(name).exists()


_WRITER = """
import os, struct, sys
from ehtool.kernel.user_events import UserEvents
name, count, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
ue = UserEvents.open()
reg = ue.register(name + " u8 eventheader_flags; u8 version; u16 id; u16 tag; u8 opcode; u8 level")
header = struct.pack("<BBHHBB", 0x03, 0, 0, 0, 0, 5)  # pointer64 | little-endian, level 5
written = sum(1 for i in range(count) if reg.write(header, struct.pack("<I", i)))
reg.unregister()
ue.close()
with open(out, "w") as f:
    f.write(f"{os.getpid()} {written}")
"""


def test_1000_events_written_at_command_start_are_all_recorded(provider, tmp_path):
    name = f"{provider}_L5K1"
    out, report = tmp_path / "burst.data", tmp_path / "writer.txt"
    done = ehtool("record", "-o", str(out), name, "--",
                  sys.executable, "-c", _WRITER, name, "1000", str(report))
    assert done.returncode == 0, done.stderr
    pid, written = map(int, report.read_text().split())
    assert written == 1000, "the writer saw the event disabled (EBADF)"
    from ehtool.perfdata.reader import PerfDataFile

    with PerfDataFile.open(str(out)) as data:
        samples = [s for s in data.samples(order="file")
                   if s.pid == pid and s.desc is not None and s.desc.name.endswith(name)]
    assert len(samples) == 1000
    assert "0 lost" in done.stderr
    assert not event_dir(name).exists()
