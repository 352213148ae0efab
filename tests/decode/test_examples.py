"""The recordings the project ships decode to what was recorded."""

from __future__ import annotations

import datetime
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
DATA = EXAMPLES.parent / "tests" / "data"


def decode(name: str) -> list[list[tuple[str, object]]]:
    done = subprocess.run([sys.executable, "-m", "ehtool", "decode", str(EXAMPLES / name)],
                          capture_output=True, check=True)
    assert done.stderr == b""
    return json.loads(done.stdout, object_pairs_hook=lambda p: p)[0][1]


def test_eventheader_example():
    events = decode("eventheader.data")
    assert [e[0][1] for e in events] == ["MyProvider:Started", "MyProvider:Failed",
                                         "MyProvider:Request"]
    started, failed, request = events
    assert started[1] == ("version", "1.2") and started[3] == ("ports", [80, 443])
    assert failed[1:3] == [("errno", "ENOENT(2)"), ("path", "/etc/x.conf")]
    assert request[1:5] == [("url", "/index.html"), ("status", 200),
                            ("client", [("ip", "10.0.0.7"), ("port", 51234)]),
                            ("elapsed", 0.0125)]
    meta = dict(request[-1][1])
    assert meta["level"] == 4 and meta["keyword"] == "0x2" and meta["opcode"] == 1
    assert meta["activity"] == "6f1c1f5e-5b9e-4a1e-9a43-1d9f2b7c0a11"
    assert meta["time"].startswith("20") and meta["time"].endswith("Z")


def test_sched_example_matches_perf_script_count():
    events = decode("sched.data")
    script = (DATA / "sched.data.script").read_text().splitlines()
    assert len(events) == len(script) == 35
    assert [e[0][1] for e in events].count("sched:sched_wakeup") == 12


# -- every event of the project's recordings against perf script -------------------------

#: ``# reference time`` of ``perf report --header-only`` (CLOCK_DATA): TOD in whole
#: microseconds and the monotonic time of the same instant, in ns
_REFERENCE_TIME = {"sched.data": (1795345802_972211, 1507_487801979),
                   "sched-ids.data": (1795345804_235897, 1508_751487988),
                   "sched-pipe.data": (1795345806_804846, 1511_320437195),
                   "sched-z.data": (1795478825_969865, 4065_198137705),
                   "sched-zpipe.data": (1795478827_152343, 4066_380615643),
                   # perf 6.12 (built from linux-source-6.12: tests/data/README.md)
                   "sched-612.data": (1795528226_051833, 2255_291035227),
                   "sched-612-pipe.data": (1795528226_526830, 2255_766031639),
                   "sched-612-z.data": (1795528226_931789, 2256_170990228),
                   "sched-612-zpipe.data": (1795528227_349664, 2256_588866890)}
_RECORDINGS = [EXAMPLES / "sched.data", DATA / "sched-ids.data", DATA / "sched-pipe.data",
               DATA / "sched-task-noid.data", DATA / "sched-z.data", DATA / "sched-zpipe.data",
               DATA / "sched-612.data", DATA / "sched-612-pipe.data", DATA / "sched-612-z.data",
               DATA / "sched-612-zpipe.data"]
_HEAD = re.compile(r"^\s*(\d+)/(\d+)\s+\[(\d+)\]\s+(\d+)\.(\d{9}): (\S+): (.*)$")
# the print fmts of sched_switch and sched_wakeup in these recordings' tracing data
_TRACE = {
    "sched:sched_switch": re.compile(
        r"prev_comm=(.*) prev_pid=(-?\d+) prev_prio=(-?\d+) prev_state=(\S+) ==> "
        r"next_comm=(.*) next_pid=(-?\d+) next_prio=(-?\d+)$"),
    "sched:sched_wakeup": re.compile(r"comm=(.*) pid=(-?\d+) prio=(-?\d+) target_cpu=(\d+)$"),
}
_FIELDS = {"sched:sched_switch": ("prev_comm", "prev_pid", "prev_prio", "prev_state",
                                  "next_comm", "next_pid", "next_prio"),
           "sched:sched_wakeup": ("comm", "pid", "prio", "target_cpu")}
# prev_state's __print_flags table (mask 0xff; 0 prints "R", bit 0x100 appends "+")
_STATE_FLAGS = ((0x01, "S"), (0x02, "D"), (0x04, "T"), (0x08, "t"), (0x10, "X"),
                (0x20, "Z"), (0x40, "P"), (0x80, "I"))


def _script_events(path: Path) -> list[tuple]:
    """(time ns, cpu, pid, tid, name, fields) of each line of ``path``'s .script file."""
    rows = []
    for line in (DATA / f"{path.name}.script").read_text().splitlines():
        pid, tid, cpu, sec, ns, name, trace = _HEAD.match(line).groups()
        values = _TRACE[name].match(trace).groups()
        rows.append((int(sec) * 10**9 + int(ns), int(cpu), int(pid), int(tid), name,
                     dict(zip(_FIELDS[name], values, strict=True))))
    return rows


def _as_script(name: str, value: object) -> str:
    """A JSON field value as perf script prints it (perf-decode prints pid_t as hex)."""
    if name.endswith("pid"):
        assert isinstance(value, str) and value.startswith("0x")
        return str(int(value, 16))
    if name == "prev_state":
        flags = "|".join(c for bit, c in _STATE_FLAGS if value & bit) or "R"
        return flags + ("+" if value & 0x100 else "")
    if name == "target_cpu":
        return f"{value:03d}"
    return str(value)


def _utc_ns(text: str) -> int:
    day, _, ns = text.rstrip("Z").partition(".")
    stamp = datetime.datetime.fromisoformat(day).replace(tzinfo=datetime.UTC)
    return int(stamp.timestamp()) * 10**9 + int(ns)


def _json_events(path: Path) -> list[tuple]:
    """(time, cpu, pid, tid, name, fields as perf script prints them) from ehtool decode."""
    done = subprocess.run([sys.executable, "-m", "ehtool", "decode", str(path)],
                          capture_output=True, check=True)
    assert done.stderr == b""
    rows = []
    for event in json.loads(done.stdout, object_pairs_hook=lambda p: p)[0][1]:
        (_, name), *fields, (_, meta) = event
        meta = dict(meta)
        rows.append((meta["time"], meta["cpu"], meta["pid"], meta["tid"], name,
                     {k: _as_script(k, v) for k, v in fields}))
    return rows


@pytest.mark.parametrize("path", _RECORDINGS, ids=lambda p: p.name)
def test_recording_fields_match_perf_script(path: Path):
    expected = _script_events(path)
    got = _json_events(path)
    assert len(got) == len(expected) > 0
    reference = _REFERENCE_TIME.get(path.name)
    if reference is None:  # no CLOCK_DATA: seconds of the session clock, as perf prints
        assert all(isinstance(t, float) for t, *_ in got)
        got = [(round(t * 10**9), *rest) for t, *rest in got]
    else:  # UTC: the script time plus one offset, that of perf's reference time (to 1 us)
        offsets = {_utc_ns(t) - e[0] for (t, *_), e in zip(got, expected, strict=True)}
        assert len(offsets) == 1
        tod_us, mono_ns = reference
        assert abs(offsets.pop() - (tod_us * 1000 - mono_ns)) < 1000
        got = [(e[0], *rest) for (_, *rest), e in zip(got, expected, strict=True)]
    assert got == expected
    if path.name != "sched-task-noid.data":
        assert {name for *_, name, _ in got} == set(_TRACE)


# -- perf 6.12 recordings, and the EventHeader session in every form ---------------------

@pytest.mark.parametrize("name", ["sched-612.data", "eh-612.data"])
def test_perf_612_file_equals_perf_decode(name):
    """Byte for byte what Microsoft's perf-decode printed for the same file."""
    done = subprocess.run([sys.executable, "-m", "ehtool", "decode", "--bom", name],
                          capture_output=True, cwd=DATA)
    assert done.returncode == 0, done.stderr
    assert done.stdout == (DATA / f"{name}.perf-decode.json").read_bytes()


@pytest.mark.parametrize(("name", "base"), [
    ("eh-612-pipe.data", "eh-612.data"), ("eh-612-z.data", "eh-612.data"),
    ("eh-612-zpipe.data", "eh-612.data"), ("eh-61-pipe.data", "../../examples/eventheader.data"),
    ("eh-61-z.data", "../../examples/eventheader.data"),
    ("eh-61-zpipe.data", "../../examples/eventheader.data")])
def test_eventheader_recordings_agree(name, base):
    """The same session (examples/record-eventheader.sh) in pipe mode and compressed, with
    perf 6.1 and perf 6.12: the events of the file-mode one (names, fields, levels; times
    and pids differ)."""
    def events(path: Path) -> list:
        done = subprocess.run([sys.executable, "-m", "ehtool", "decode", "--format", "jsonl",
                               "--meta", "none,+level,+keyword,+opcode,+activity", str(path)],
                              capture_output=True, check=True, text=True)
        out = [json.loads(line, object_pairs_hook=lambda p: p) for line in done.stdout.splitlines()]
        return [[kv for kv in ev if kv[0] != "pid"] for ev in out]

    def strip_file(evs: list) -> list:
        return [[kv if kv[0] != "meta" else ("meta", [m for m in kv[1] if m[0] != "file"])
                 for kv in ev] for ev in evs]

    want = strip_file(events(DATA / base))
    assert len(want) == 3
    assert strip_file(events(DATA / name)) == want


@pytest.mark.parametrize("name", sorted(p.name for p in DATA.glob("*.data")))
def test_info_on_every_fixture(name):
    """ehtool info reads every recording (perf version, compression, counts)."""
    done = subprocess.run([sys.executable, "-m", "ehtool", "info", "--json", name],
                          capture_output=True, cwd=DATA, text=True)
    assert done.returncode == 0, done.stderr
    info = json.loads(done.stdout)
    assert sum(info["events"].values()) > 0
    assert ("-z" in name) == (info["compression"] is not None)
