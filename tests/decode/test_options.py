"""Decode options not covered elsewhere, on the reference recording: each selects or
shapes exactly what a reference computation over the full output says."""

from __future__ import annotations

import fnmatch
import json
import re
import subprocess
import sys

import pytest

from golden import golden_path


def run(*args: str) -> bytes:
    path = str(golden_path("linuxtracepoints/perf.data"))
    done = subprocess.run([sys.executable, "-m", "ehtool", *args, path], capture_output=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


def events(*args: str) -> list[list[tuple[str, object]]]:
    return json.loads(run("decode", "--sort", "file", *args),
                      object_pairs_hook=lambda p: p)[0][1]


def meta(event) -> dict:
    return dict(event[-1][1])


@pytest.fixture(scope="module")
def with_comm():
    return events("--meta", "+comm")


def test_tid_selects_the_threads_events(with_comm):
    tids = sorted({meta(e)["tid"] for e in with_comm})
    tid = tids[len(tids) // 2]
    want = [e[:-1] for e in with_comm if meta(e)["tid"] == tid]
    got = events("--tid", str(tid))
    assert want and [e[:-1] for e in got] == want


@pytest.mark.parametrize("glob", ["eventheader-tra", "Relay*", "s?do"])
def test_comm_selects_by_thread_name(with_comm, glob):
    want = [e for e in with_comm if fnmatch.fnmatchcase(meta(e).get("comm", ""), glob)]
    assert want
    assert events("--comm", glob, "--meta", "+comm") == want


def test_nonsample_adds_exactly_the_records_info_counts():
    records = json.loads(run("info", "--json"))["records"]
    got = events("--nonsample")
    names = [e[0][1] for e in got]
    assert sum(n.startswith("perf:") for n in names) == sum(
        records.get(k, 0) for k in ("comm", "fork", "exit", "lost", "lost_samples"))
    assert names.count("perf:comm") == records["comm"]
    assert [e for e in got if not e[0][1].startswith("perf:")] == events()
    comm = next(e for e in got if e[0][1] == "perf:comm")
    assert [k for k, _ in comm[:4]] == ["n", "pid", "tid", "comm"]


@pytest.mark.parametrize(("spec", "keys"), [
    ("none", set()),
    ("time,cpu", {"time", "cpu"}),
    ("-time,-cpu", {"pid", "tid", "level", "keyword", "id", "version", "opcode", "tag",
                    "activity", "relatedActivity"}),
    ("+provider,+event", None),
])
def test_meta_keys(spec, keys):
    default = events()
    got = events("--meta", spec)
    assert len(got) == len(default)
    for g, d in zip(got, default, strict=True):
        assert g[:-1] == d[:-1]  # fields untouched
        if keys is not None:
            assert set(meta(g)) == set(meta(d)) & keys
        else:  # provider and event added after the default keys
            provider, event = d[0][1].split(":", 1)
            assert meta(g) == {**meta(d), "provider": provider, "event": event}


def test_field_tags_are_on_by_default_and_only_thing_dropped():
    tagged, plain = run("decode"), run("decode", "--no-field-tags")
    assert tagged.count(b";tag=0x") > 0
    assert run("decode", "--field-tags") == tagged
    assert re.sub(rb';tag=0x[0-9A-F]+"', b'"', tagged) == plain


def test_decimal_pids_show_pid_t_fields_as_numbers(impl):
    """Issue 15: perf-decode's "prev_pid": "0xB6C"; --decimal-pids gives 2924."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    sample = Path(__file__).resolve().parents[2] / "examples" / "sched.data"

    def events(*args: str) -> list[dict]:
        done = subprocess.run([sys.executable, "-m", "ehtool", "decode", "--format", "jsonl",
                               *args, str(sample)], capture_output=True, check=True)
        return [json.loads(line) for line in done.stdout.splitlines()]

    hexed, decimal = events(), events("--decimal-pids")
    checked = 0
    for a, b in zip(hexed, decimal, strict=True):
        for key in ("pid", "prev_pid", "next_pid"):
            if key in a:
                assert isinstance(a[key], str) and b[key] == int(a[key], 16)
                checked += 1
        assert {k: v for k, v in a.items() if not k.endswith("pid")} == \
            {k: v for k, v in b.items() if not k.endswith("pid")}
    assert checked == 35 + 23  # every pid_t field of every event


def test_text_format_is_one_line_per_event():
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    paths = [str(repo / "examples" / "eventheader.data"), str(repo / "examples" / "sched.data")]
    done = subprocess.run([sys.executable, "-m", "ehtool", "decode", "--format", "text", *paths],
                          capture_output=True, text=True, check=True)
    lines = done.stdout.splitlines()
    assert len(lines) == 3 + 35
    assert lines[2].startswith("ehtool 106/106 [001] 2026-11-22T12:18:39.661435143Z "
                               "MyProvider:Request: level=4 keyword=0x2 opcode=1 activity=")
    assert lines[2].endswith("url=/index.html status=200 client={ip=10.0.0.7 port=51234} "
                             "elapsed=0.0125")
    # (pid_t fields as decode shows them: hex, as perf-decode does, or with --decimal-pids)
    assert lines[4].endswith("sched:sched_switch: prev_comm=perf prev_pid=0x78BB prev_prio=120 "
                             "prev_state=2 next_comm=migration/0 next_pid=0x12 next_prio=0")
    done = subprocess.run([sys.executable, "-m", "ehtool", "decode", "--format", "text",
                           "--decimal-pids", *paths], capture_output=True, text=True, check=True)
    assert done.stdout.splitlines()[4].endswith(
        "prev_pid=30907 prev_prio=120 prev_state=2 next_comm=migration/0 next_pid=18 next_prio=0")


def test_text_shows_lone_surrogates_as_the_json_does(tmp_path):
    """Issue: a lone UTF-16 surrogate in a string field crashed --format text ('internal
    error: UnicodeEncodeError'); JSON writes it as a \\udxxx escape, and so does text."""
    import subprocess
    import sys

    from golden import golden_path

    data = golden_path("linuxtracepoints/perf.data").read_bytes()
    hjkl = "hjkl".encode("utf-16-le")
    assert data.count(hjkl) > 10
    path = tmp_path / "surrogate.data"
    path.write_bytes(data.replace(hjkl, b"\x00\xd8" + hjkl[2:]))

    def run(fmt: str) -> str:
        done = subprocess.run([sys.executable, "-m", "ehtool", "decode", "--format", fmt,
                               str(path)], capture_output=True, check=True)
        assert done.stderr == b""
        return done.stdout.decode("utf-8")  # (valid UTF-8)

    json_text, text = run("jsonl"), run("text")
    members = re.findall(r'"(\w+)": ("\\ud800jkl")', json_text)
    assert len(members) > 10
    assert re.findall(r'(\w+)=("\\ud800jkl")', text) == members


@pytest.mark.parametrize("value", ["\ud800jkl", "x\udc80", "\udfff", "a b", "", 'q"', "k=v",
                                   "plain", "\u00e9t\u00e9"])
def test_text_strings_are_plain_or_the_json_string(value):
    from ehtool.render.text import _value
    from ehtool.values.strings import str_json

    plain = value in ("plain", "\u00e9t\u00e9")
    assert _value(value) == (value if plain else str_json(value).decode("utf-8"))


@pytest.mark.parametrize("args", [
    ["--filter", "prev_pid > 0 && next_comm ~ \"mig*\""],
    ["--cpu", "1", "--time", "rel"],
    ["--since", "0.1", "--until", "0.2", "--time", "delta"],
    ["--provider", "MyProvider", "--time", "ns"],
    ["--filter", "level <= 4 || prev_state == 1", "--sort", "file"],
])
def test_text_lines_are_the_json_events_with_the_same_filters_and_times(args):
    """--format text keeps the events JSON Lines keeps, in its order, with its times."""
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    paths = [str(repo / "examples" / "eventheader.data"), str(repo / "examples" / "sched.data")]

    def run(*extra: str) -> list[str]:
        done = subprocess.run([sys.executable, "-m", "ehtool", "decode", *extra, *args, *paths],
                              capture_output=True, text=True, check=True)
        return done.stdout.splitlines()

    events = [json.loads(line) for line in run("--format", "jsonl")]
    lines = run("--format", "text")
    assert events and len(lines) == len(events) < 38
    for line, ev in zip(lines, events, strict=True):
        match = re.match(rf"\S+ \S+ \[\d+\] (\S+) {re.escape(ev['n'])}:( |$)", line)
        assert match, (line, ev)
        when = ev["meta"]["time"]
        assert (match[1] if isinstance(when, str) else json.loads(match[1])) == when
