"""``ehtool record`` against a kernel with user_events (in the guest VM or natively as root).

These tests start ``ehtool`` as a subprocess, as users do: registration by
ehtool, perf readiness before COMMAND, clean stop, release afterwards.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .conftest import TRACEFS, decode, ehtool, event_dir


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


#: The burst writer as a C program: it starts in about a millisecond, even in the
#: emulated guest where a bare ``python3 -S`` takes up to two seconds, so a session that
#: started COMMAND before perf had really enabled its events (e.g. when the tracepoint's
#: enable bit flips, while perf still synthesizes its thread list) would lose events.
#: (Measured in the QEMU/TCG guest with COMMAND started at the flip: this writer got 0
#: of its 1000 events recorded; the python3 -S writer and a Python+ehtool one all 1000.)
#: It registers the EventHeader tracepoint itself (DIAG_IOCSREG, struct user_reg as
#: in ehtool/kernel/user_events.py), writes COUNT events at once with writev, and
#: reports its pid, how many writes the kernel took and the enable bit it saw first.
_WRITER_C = r"""
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/uio.h>
#include <unistd.h>

struct user_reg {
    uint32_t size;
    uint8_t enable_bit, enable_size;
    uint16_t flags;
    uint64_t enable_addr, name_args;
    uint32_t write_index;
} __attribute__((packed));

int main(int argc, char **argv) {  /* DATA NAME COUNT OUT */
    static uint32_t word;
    char command[512];
    if (argc != 5)
        return 2;
    snprintf(command, sizeof command, "%s u8 eventheader_flags; u8 version; u16 id; "
             "u16 tag; u8 opcode; u8 level", argv[2]);
    int fd = open(argv[1], O_RDWR);
    struct user_reg reg = {.size = sizeof reg, .enable_size = 4,
                           .enable_addr = (uintptr_t)&word, .name_args = (uintptr_t)command};
    if (fd < 0 || ioctl(fd, _IOWR('*', 0, struct user_reg *), &reg) < 0) {
        perror(argv[1]);
        return 2;
    }
    uint32_t enabled = word & 1, count = atoi(argv[3]), written = 0;
    uint8_t header[8] = {0x03, 0, 0, 0, 0, 0, 0, 5};  /* pointer64 | little-endian, level 5 */
    for (uint32_t i = 0; i < count; i++) {
        struct iovec iov[3] = {{&reg.write_index, 4}, {header, 8}, {&i, 4}};
        written += writev(fd, iov, 3) >= 0;
    }
    FILE *out = fopen(argv[4], "w");
    fprintf(out, "%d %u %u", (int)getpid(), written, enabled);
    return fclose(out) != 0;
}
"""

#: The same writer for a machine without a C compiler: python3 -S with the standard
#: library only (no site, no ehtool import), the fastest-starting Python COMMAND.
_WRITER_PY = """
import array, fcntl, os, struct, sys
data, name, count, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
fd = os.open(data, os.O_RDWR)
command = array.array("b", (name + " u8 eventheader_flags; u8 version; u16 id; u16 tag;"
                            " u8 opcode; u8 level").encode() + b"\\0")
word = array.array("I", [0])  # the enable word the kernel updates
reg = bytearray(struct.pack("=IBBHQQI", 28, 0, 4, 0, word.buffer_info()[0],
                            command.buffer_info()[0], 0))
fcntl.ioctl(fd, (3 << 30) | (struct.calcsize("P") << 16) | (ord("*") << 8), reg, True)
enabled = word[0] & 1
index = bytes(reg[24:28])
header = struct.pack("<BBHHBB", 0x03, 0, 0, 0, 0, 5)  # pointer64 | little-endian, level 5
written = 0
for i in range(count):
    try:
        os.writev(fd, [index, header, struct.pack("<I", i)])
        written += 1
    except OSError:
        pass
with open(out, "w") as f:
    f.write(f"{os.getpid()} {written} {enabled}")
"""


@pytest.fixture(scope="module")
def burst_writer(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """The argv of the fastest-starting burst writer here (then DATA NAME COUNT OUT)."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is not None:
        where = tmp_path_factory.mktemp("writer")
        (where / "writer.c").write_text(_WRITER_C)
        for static in (["-static"], []):  # static: no dynamic loader at start
            done = subprocess.run([cc, "-O2", *static, "-o", str(where / "writer"),
                                   str(where / "writer.c")], capture_output=True, check=False)
            if done.returncode == 0:
                return [str(where / "writer")]
    return [sys.executable, "-S", "-c", _WRITER_PY]


def _burst(writer: list[str], name: str, count: int, tmp_path: Path) -> tuple[str, int, int]:
    """Record ``name`` while ``writer`` writes ``count`` events at its start: ehtool's
    stderr, how many writes the kernel took, and how many of them perf recorded."""
    out, report = tmp_path / "burst.data", tmp_path / "writer.txt"
    done = ehtool("record", "-o", str(out), name, "--", *writer,
                  str(TRACEFS / "user_events_data"), name, str(count), str(report))
    assert done.returncode == 0, done.stderr
    pid, written, enabled = map(int, report.read_text().split())
    assert enabled == 1, "the tracepoint was not enabled when COMMAND started"
    from ehtool.perfdata.reader import PerfDataFile

    with PerfDataFile.open(str(out)) as data:
        recorded = sum(1 for s in data.samples(order="file")
                       if s.pid == pid and s.desc is not None and s.desc.name.endswith(name))
    assert not event_dir(name).exists()
    return done.stderr, written, recorded


def test_1000_events_written_at_command_start_are_all_recorded(provider, tmp_path,
                                                                burst_writer):
    stderr, written, recorded = _burst(burst_writer, f"{provider}_L5K1", 1000, tmp_path)
    assert written == 1000, "the writer saw the event disabled (EBADF)"
    assert recorded == 1000
    assert "0 lost" in stderr


def test_the_python_burst_writer_works_too(provider, tmp_path):
    """The writer used where no C compiler is found."""
    writer = [sys.executable, "-S", "-c", _WRITER_PY]
    assert _burst(writer, f"{provider}_L5K1", 10, tmp_path)[1:] == (10, 10)
