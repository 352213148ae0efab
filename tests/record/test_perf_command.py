"""perf's command line, feature detection and permission checks (no perf needed)."""

from __future__ import annotations

import os
import stat

import pytest

from ehtool.errors import ExternalError, UsageError
from ehtool.record.checks import (
    CAP_PERFMON,
    CAP_SYS_ADMIN,
    effective_caps,
    permission_problem,
)
from ehtool.record.perf import (
    PerfConfig,
    PerfFeatures,
    build_command,
    find_perf,
    parse_features,
    probe_features,
    quote_stderr,
)

HELP_61 = """
 Usage: perf record [<options>] [<command>]
    -D, --delay <ms>      ms to wait before starting measurement after program start
        --control <fd:ctl-fd[,ack-fd] or fifo:ctl-fifo[,ack-fifo]>
                          Listen on ctl-fd descriptor for command to control measurement
        --no-buffering    collect data without buffering
        --sample-identifier
                          Record the sample identifier
"""
HELP_58 = """
 Usage: perf record [<options>] [<command>]
    -D, --delay <n>       ms to wait before starting measurement after program start
        --sample-identifier
"""
HELP_FD_ONLY = """
        --control <fd:ctl-fd[:ack-fd]>
                          Listen on ctl-fd descriptor for command to control measurement
"""
FULL = PerfFeatures((6, 1, 0), control_fifo=True, sample_identifier=True, no_buffering=True)


def test_parse_features():
    assert parse_features("perf version 6.1.192\n", HELP_61) == PerfFeatures(
        (6, 1, 192), control_fifo=True, sample_identifier=True, no_buffering=True)
    assert parse_features("perf version 5.8.g1234", HELP_58) == PerfFeatures(
        (5, 8, 0), control_fifo=False, sample_identifier=True)
    assert parse_features("", HELP_FD_ONLY) == PerfFeatures(None, False, False)


def test_build_command_defaults():
    config = PerfConfig(events=["user_events:P_L5K1", "sched:sched_switch"], output="x.data")
    argv = build_command("/usr/bin/perf", config, FULL, ("/tmp/d/ctl", "/tmp/d/ack"))
    assert argv == [
        "/usr/bin/perf", "record", "-a", "-k", "monotonic", "--sample-identifier",
        "-D", "-1", "--control", "fifo:/tmp/d/ctl,/tmp/d/ack",
        "-e", "user_events:P_L5K1", "-e", "sched:sched_switch", "-o", "x.data",
    ]


@pytest.mark.parametrize("output, live", [("-", True), ("x.data", False),
                                          ("/tmp/-", False)])
def test_streaming_to_a_reader_is_unbuffered(output, live):
    """perf -o - passes each event on at once (--decode uses -o - too)."""
    argv = build_command("perf", PerfConfig(events=["a:b"], output=output), FULL)
    assert ("--no-buffering" in argv) == live
    assert argv[argv.index("-o") + 1] == output
    old = PerfFeatures((3, 0, 0), no_buffering=False)
    assert "--no-buffering" not in build_command("perf", PerfConfig(events=["a:b"], output="-"),
                                                 old)


def test_build_command_options_and_old_perf():
    config = PerfConfig(events=["sched:sched_switch"], output="-", buffer_size="16M",
                        extra_args=["--mmap-flush=1", "-c", "1"])
    old = PerfFeatures((5, 4, 0), control_fifo=False, sample_identifier=False)
    argv = build_command("perf", config, old)
    assert argv == ["perf", "record", "-a", "-k", "monotonic", "-m", "16M",
                    "-e", "sched:sched_switch", "-o", "-", "--mmap-flush=1", "-c", "1"]
    assert "--control" not in argv and "-D" not in argv
    assert isinstance(argv, list) and all(isinstance(a, str) for a in argv)


@pytest.mark.parametrize("size", ["0", "16Q", "-4", "1.5M", ""])
def test_bad_buffer_size(size):
    with pytest.raises(UsageError, match="--buffer-size"):
        PerfConfig(events=["a:b"], buffer_size=size)


def test_no_events():
    with pytest.raises(UsageError, match="nothing to record"):
        PerfConfig(events=[])


def test_find_perf(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ExternalError, match="apt-get install linux-perf") as info:
        find_perf()
    assert info.value.exit_code == 5
    exe = tmp_path / "perf"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    assert find_perf() == str(exe)
    assert find_perf(str(exe)) == str(exe)
    with pytest.raises(ExternalError, match="not an executable"):
        find_perf(str(tmp_path / "nope"))


def test_probe_rejects_a_perf_that_does_not_work(tmp_path):
    # Debian's /usr/bin/perf wrapper prints this when the versioned binary is missing.
    exe = tmp_path / "perf"
    exe.write_text("#!/bin/sh\necho 'E: linux-perf-6.9 is not installed.' >&2\nexit 1\n")
    exe.chmod(0o755)
    with pytest.raises(ExternalError, match="linux-perf-6.9 is not installed"):
        probe_features(str(exe))


def test_probe_real_output(fake_perf):
    assert probe_features(fake_perf.path) == PerfFeatures((6, 1, 99), True, True, True)


PERF_USAGE = "\n Usage: perf record [<options>] [<command>]\n" + "".join(
    f"    -{chr(97 + i % 26)}, --option-{i:03} <n>   what option {i} does\n" for i in range(120))
EVENT_ERROR = """event syntax error: 'user_events:Nope'
                     \\___ unknown tracepoint

Error:\tFile /sys/kernel/tracing/events/user_events/Nope not found.
Hint:\tPerhaps this kernel misses some CONFIG_ setting to enable this feature?.

Run 'perf list' for a list of valid events
"""


def test_quote_stderr_keeps_the_error_before_perfs_usage_text():
    assert quote_stderr("  Error: unknown option `bogus'\n" + PERF_USAGE) == \
        "Error: unknown option `bogus'"
    quoted = quote_stderr(EVENT_ERROR + PERF_USAGE[:200])
    assert quoted == EVENT_ERROR.strip()
    assert "Usage:" not in quoted


def test_quote_stderr_of_long_output_keeps_error_lines_and_the_tail():
    noise = "".join(f"info line {i}\n" for i in range(200))
    text = "Warning: something odd\nError: mmap failed: Cannot allocate memory\n" + noise
    quoted = quote_stderr(text)
    lines = quoted.splitlines()
    assert lines[:2] == ["Error: mmap failed: Cannot allocate memory", "..."]
    assert lines[-1] == "info line 199" and len(quoted) < 1300
    short = "perf: something\n" + PERF_USAGE[:300]
    assert quote_stderr(short) == "perf: something"
    assert quote_stderr(PERF_USAGE).startswith("...")  # only usage text: its tail, as before
    assert quote_stderr("  \n") == ""


def test_effective_caps():
    status = "Name:\tx\nCapInh:\t0000000000000000\nCapEff:\t000001ffffffffff\n"
    assert effective_caps(status) == 0x1FFFFFFFFFF
    assert effective_caps("Name: x\n") is None


@pytest.mark.parametrize("caps, paranoid, file_caps, ok", [
    (1 << CAP_PERFMON, 2, False, True),
    (1 << CAP_SYS_ADMIN, 2, False, True),
    (0, -1, False, True),
    (0, 2, True, True),  # perf has file capabilities: let it try
    (0, 0, False, False),  # 0 is not enough for raw tracepoint data
    (0, 2, False, False),
    (None, 1, False, False),
])
def test_permission_problem(caps, paranoid, file_caps, ok):
    problem = permission_problem(caps, paranoid, file_caps)
    assert (problem is None) == ok
    if not ok:
        assert "CAP_PERFMON" in problem and f"(it is {paranoid})" in problem
        assert "perf_event_paranoid=-1" in problem


def test_root_passes_permission_check():
    from ehtool.record.checks import check_permissions

    if os.geteuid() != 0:
        pytest.skip("needs root")
    check_permissions("/bin/true", None)


def test_a_refused_permission_is_a_kernel_error(tmp_path, monkeypatch):
    """perf would be refused (no CAP_PERFMON, paranoid 2; tracefs events not readable):
    exit 4, a kernel interface's permission, as the exit table says (was 5, perf's)."""
    from ehtool.errors import EXIT_KERNEL, KernelError
    from ehtool.record import checks

    monkeypatch.setattr(checks, "STATUS_PATH", str(tmp_path / "none"))
    monkeypatch.setattr(checks, "read_paranoid", lambda: 2)
    with pytest.raises(KernelError, match="CAP_PERFMON") as info:
        checks.check_permissions("/bin/true", None)
    assert info.value.exit_code == EXIT_KERNEL == 4
    monkeypatch.setattr(checks, "read_paranoid", lambda: -1)
    tracefs = tmp_path / "tracefs"
    tracefs.mkdir()  # (no events/ in it)
    with pytest.raises(KernelError, match="events is not readable"):
        checks.check_permissions("/bin/true", tracefs)
