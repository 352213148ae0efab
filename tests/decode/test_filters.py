"""Filters select exactly what a reference script selects from the full JSON output."""

from __future__ import annotations

import fnmatch
import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest

import golden
from ehtool.decode.expression import FilterSyntaxError, compile_filter
from golden import golden_path

SCHED = Path(__file__).resolve().parents[2] / "examples" / "sched.data"


def decode(*args: str) -> list[list[tuple[str, object]]]:
    path = str(golden_path("linuxtracepoints/perf.data"))
    done = subprocess.run([sys.executable, "-m", "ehtool", "decode", "--sort", "file", *args,
                           path], capture_output=True, check=True)
    return json.loads(done.stdout, object_pairs_hook=lambda p: p)[0][1]


@pytest.fixture(scope="module")
def everything():
    return decode()


def name(event) -> str:
    return event[0][1]


def meta(event) -> dict:
    return dict(event[-1][1])


def field(event, key):
    for k, v in event[1:-1]:
        if k.split(";")[0] == key:
            return v
    return None


@pytest.mark.parametrize(("args", "reference"), [
    (["--provider", "sched"], lambda e: name(e).startswith("sched:")),
    (["--event", "CScalars*"], lambda e: fnmatch.fnmatch(name(e).split(":")[1], "CScalars*")),
    (["--level", "3"], lambda e: meta(e).get("level", 99) <= 3),
    (["--keyword", "0x80"], lambda e: int(meta(e).get("keyword", "0x0"), 16) & 0x80),
    (["--cpu", "16"], lambda e: meta(e)["cpu"] == 16),
    (["--pid", "2004", "--provider", "TestProviderC"],
     lambda e: meta(e)["pid"] == 2004 and name(e).startswith("TestProviderC:")),
    (["--filter", 'prev_prio == 120 && next_pid != "0x0"'],
     lambda e: field(e, "prev_prio") == 120 and field(e, "next_pid") not in (None, "0x0")),
    (["--filter", "!(cpu < 20) || id == 1000"],
     lambda e: meta(e)["cpu"] >= 20 or meta(e).get("id") == 1000),
    (["--filter", 'n ~ "TestProviderCpp:*" && opcode & 3'],
     lambda e: name(e).startswith("TestProviderCpp:") and meta(e).get("opcode", 0) & 3),
])
def test_filter_matches_reference(everything, args, reference):
    expected = [e for e in everything if reference(e)]
    assert expected, "the reference filter should select something"
    assert decode(*args) == expected


def test_since_until_relative(everything):
    got = decode("--since", "1", "--until", "2.5")
    assert got and len(got) < len(everything)
    stamps = sorted(meta(e)["time"] for e in got)
    assert stamps[0] >= "2024-03-28T00:45:13.64" and stamps[-1] <= "2024-03-28T00:45:15.15"


def test_since_absolute(everything):
    got = decode("--since", "2024-03-28T00:45:14Z")
    assert got == [e for e in everything if meta(e)["time"] >= "2024-03-28T00:45:14"]


@pytest.mark.parametrize(("text", "column"), [
    ("level <= 3 && > 40", 14), ("(a == 1", 7), ("a == ", 5), ("a === 1", 4), ("a == b", 5),
    ("", 0), ("a @ 1", 2),
])
def test_syntax_errors_point_at_the_column(text, column):
    with pytest.raises(FilterSyntaxError) as info:
        compile_filter(text)
    lines = str(info.value).splitlines()
    assert f"column {column + 1}" in lines[0]
    assert lines[2].index("^") - 2 == column


def test_precedence_and_missing_names():
    f = compile_filter("a == 1 || b == 2 && c == 3")
    assert f({"a": 1}) and not f({"b": 2}) and f({"b": 2, "c": 3})
    assert not compile_filter("missing > 1")({})
    assert compile_filter('s.inner;tag=0x1 ~ "x*"')({"s": {"inner": "xyz"}})


def _count(*args: str) -> int:
    return len(decode(*args))


def test_operators_need_no_spaces(everything):
    """Issue 15: 'cpu==3' matched nothing (the tokenizer let '=' into names)."""
    expected = sum(meta(e)["cpu"] == 16 for e in everything)
    assert expected
    assert _count("--filter", "cpu==16") == _count("--filter", "cpu == 16") == expected
    assert _count("--filter", "meta.cpu==16") == expected


def test_every_meta_key_is_visible_whatever_meta_prints(everything):
    """Issue 15: 'comm ~ ...' matched nothing unless --meta +comm was given."""
    with_comm = decode("--meta", "+comm")
    comms = {meta(e).get("comm") for e in with_comm} - {None}
    assert comms
    some = sorted(comms)[0]
    expected = [e for e in everything
                if meta(with_comm[everything.index(e)]).get("comm") == some]
    assert decode("--filter", f'comm == "{some}"') == expected


def test_names_no_event_has_are_reported():
    path = str(golden_path("linuxtracepoints/perf.data"))
    done = subprocess.run([sys.executable, "-m", "ehtool", "decode", "--filter",
                           "nosuchfield > 3 || cpu == 1", path], capture_output=True)
    assert done.returncode == 0
    assert done.stderr == (b"ehtool: warning: --filter: no event of the input has "
                           b"'nosuchfield' (comparisons with it are false)\n")
    done = subprocess.run([sys.executable, "-m", "ehtool", "decode", "--strict-filter",
                           "--filter", "nosuchfield > 3", path], capture_output=True)
    assert done.returncode == 2 and b"'nosuchfield'" in done.stderr



@pytest.mark.parametrize("out_format", ["json", "jsonl", "text"])
def test_a_strict_filter_error_leaves_the_output_file_as_it_was(tmp_path, out_format):
    """--strict-filter's usage error came after ``-o`` FILE was replaced by an empty
    document (exit 2, the file a script kept lost): FILE is left as it was."""
    out = tmp_path / "out.json"
    out.write_text("keep")
    done = subprocess.run([sys.executable, "-m", "ehtool", "decode", "--format", out_format,
                           "--strict-filter", "--filter", "nosuchfield > 3", "-o", str(out),
                           str(Path(__file__).parents[2] / "examples" / "eventheader.data")],
                          capture_output=True, text=True)
    assert done.returncode == 2 and "'nosuchfield'" in done.stderr, done.stderr
    assert out.read_text() == "keep"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]
    # a --since/--until warning still says why no event was kept
    done = subprocess.run([sys.executable, "-m", "ehtool", "decode", "--format", out_format,
                           "--since", "2099-01-01T00:00:00Z", "--strict-filter", "--filter",
                           "nosuchfield > 3", "-o", str(out),
                           str(Path(__file__).parents[2] / "examples" / "eventheader.data")],
                          capture_output=True, text=True)
    assert done.returncode == 2 and "no event in the --since/--until window" in done.stderr

# -- --since/--until that select nothing say why ---------------------------------------

def _warnings(*args: str, path: str = "examples/sched.data") -> tuple[int, list[str]]:
    import subprocess
    import sys

    run = subprocess.run([sys.executable, "-m", "ehtool", "decode", "--format", "jsonl",
                          *args, path], capture_output=True, text=True,
                         cwd=Path(__file__).resolve().parents[2])
    return len(run.stdout.splitlines()), run.stderr.splitlines()


@pytest.mark.parametrize("args", [["--since", "100"], ["--since", "2030-01-01T00:00:00Z"],
                                  ["--until", "2000-01-01T00:00:00Z"]])
def test_a_window_beyond_the_file_is_a_warning(args):
    count, warnings = _warnings(*args)
    assert count == 0
    assert len(warnings) == 1 and "no event in the --since/--until window" in warnings[0]
    assert "span 0.202 s from 2026-11-22T11:10:03.057260000Z" in warnings[0]


def test_a_reversed_window_is_a_warning():
    count, warnings = _warnings("--since", "1", "--until", "0.5")
    assert count == 0
    assert warnings == ["ehtool: warning: --since 1 is after --until 0.5: no event can be "
                        "in between"]


def test_a_utc_bound_on_a_file_without_clock_data_is_a_warning():
    count, warnings = _warnings("--since", "2026-01-01T00:00:00Z",
                                path="tests/data/sched-task-noid.data")
    assert count == 0
    assert len(warnings) == 1 and "no clock data" in warnings[0]


def test_a_window_with_events_says_nothing():
    count, warnings = _warnings("--since", "0.1", "--until", "0.5")
    assert count == 14 and warnings == []


# -- the fast views give the whole view's answers ----------------------------------------

EXPRESSIONS = ["prev_pid > 100", "level <= 3", "meta.level <= 3", "n ~ \"*Cpp*\"",
               "provider == \"sched\" || event ~ \"*switch*\"", "comm ~ \"k*\"",
               "meta.comm ~ \"k*\" && cpu == 1", "Field2 == 0x1", "pid == 2002",
               "time > 0 && meta.time > 0", "activity", "relatedActivity ~ \"*\"",
               "prev_comm ~ \"s*\" || next_prio >= 120", "keyword & 0x1", "opcode",
               "a.b == 1", "meta.provider == \"TestProviderC\"", "raw",
               "options", "flags & 0x1", "tag", "id || version", "meta.activity",
               "meta.relatedActivity ~ \"*\"", "n == \"TestProviderC:Default\"",
               "meta.keyword == 0x1 && event ~ \"*Value*\""]


@pytest.fixture(scope="module")
def mutated_golden(tmp_path_factory) -> str:
    return golden.mutated_golden(tmp_path_factory.mktemp("mut") / "mutated.data", 7)


def _recording(name: str, request) -> str:
    """The path of a recording the fast-path tests read ("golden", "mutated" or a
    path inside the checkout)."""
    if name == "golden":
        return str(golden_path("linuxtracepoints/perf.data"))
    if name == "mutated":
        return request.getfixturevalue("mutated_golden")
    return str(Path(__file__).resolve().parents[2] / name)


@pytest.mark.parametrize("path", ["golden", "mutated", "examples/sched.data",
                                  "examples/eventheader.data"])
def test_fast_views_answer_as_the_whole_view(path, request):
    from ehtool.decode.expression import event_view
    from ehtool.decode.filters import Selection
    from ehtool.events import SampleConverter
    from ehtool.perfdata import PerfDataFile

    path = _recording(path, request)
    for text in EXPRESSIONS:
        sel = Selection(expr=text)
        with PerfDataFile.open(path) as f:
            sel.bind(f)
            whole = SampleConverter(big_endian=f.big_endian, comm_of=f.session.comm,
                                    clock=f.session.clock)
            checked = 0
            for batch in f.batches("file", nonsample=False):
                for sample in batch:
                    fast = (not sel.needs_prefilter() or sel.prefilter(sample)) and (
                        not sel.needs_event() or sel.select(sample))
                    assert fast == sel.expr(event_view(whole.convert(sample))), \
                        (text, sample.offset)
                    checked += 1
        assert checked > 2


@pytest.mark.parametrize("path", ["golden", "mutated", "examples/eventheader.data"])
def test_fast_identity_is_the_typed_one(path, request):
    """--provider/--event/--level/--keyword read an EventHeader event's identity from the
    JSON renderer's cache: the same as the typed layer's identify, malformed events too."""
    from ehtool.decode.filters import Selection
    from ehtool.perfdata import PerfDataFile

    path = _recording(path, request)
    sel = Selection(providers=("*",))
    with PerfDataFile.open(path, on_error=lambda err: None) as f:
        sel.bind(f)
        samples = [s for batch in f.batches("file", nonsample=False) for s in batch]
        assert [sel._identity(s) for s in samples] == [sel._identify(s) for s in samples]
    assert any(level is not None for *_, level, _ in map(sel._identify, samples))


@pytest.mark.parametrize("path", ["golden", "mutated", "examples/eventheader.data"])
def test_fast_views_of_eventheader_fields_are_the_typed_views(path, request):
    """An expression naming fields EventHeader events have: the view of every event (its
    values, read by the field extractor after the C walk) is the view of the typed event,
    for each field name one at a time, all at once, and beside meta names."""
    import re

    from ehtool.decode.expression import event_view
    from ehtool.decode.filters import Selection
    from ehtool.events import SampleConverter
    from ehtool.perfdata import PerfDataFile

    path = _recording(path, request)
    with PerfDataFile.open(path) as f:
        whole = SampleConverter(big_endian=f.big_endian, comm_of=f.session.comm,
                                clock=f.session.clock)
        samples = [s for batch in f.batches("file", nonsample=False) for s in batch]
        names = sorted({n for s in samples for n, _ in whole.convert(s).fields
                        if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", n)})
        assert len(names) > 5
        texts = [*names, " || ".join(names),
                 " || ".join([*names[::3], "n", "level", "activity", "meta.cpu", "time"])]
        for text in texts:
            sel = Selection(expr=text)
            sel.bind(f)
            makers: dict = {}
            for sample in samples:
                make = makers.get(sample.desc) or makers.setdefault(
                    sample.desc, sel._view_maker(sample.desc))
                want = event_view(whole.convert(sample, sel._fields), sel._fields,
                                  sel._meta_keys)
                assert repr(make(sample)) == repr(want), (text, sample.offset)  # NaN


# -- .dat captures: the same Selection, no sample meta ----------------------------------

SAMPLE_META = ("time", "cpu", "pid", "tid", "comm", "file")


def _jsonl(*args: str, dat: bool = False, path: str | None = None) -> list[str]:
    """The events ``decode --format jsonl`` prints, without sample meta, as sorted-key
    JSON texts (comparable between perf.data and .dat)."""
    name = "EventHeaderInterceptorLE64.dat" if dat else "perf.data"
    path = path or str(golden_path(f"linuxtracepoints/{name}"))
    fmt = ["--input-format", "dat"] if dat else []
    done = subprocess.run([sys.executable, "-m", "ehtool", "decode", "--format", "jsonl",
                           *fmt, *args, path], capture_output=True, text=True, check=True)
    out = []
    for line in done.stdout.splitlines():
        event = json.loads(line)
        for key in SAMPLE_META:
            event["meta"].pop(key, None)
        out.append(json.dumps(event, sort_keys=True))
    return out


@pytest.fixture(scope="module")
def both_files() -> set[str]:
    """The events the .dat capture and perf.data both have (250 of them)."""
    both = set(_jsonl(dat=True)) & set(_jsonl())
    assert len(both) > 200
    return both


@pytest.mark.parametrize("args", [
    ["--level", "1"], ["--provider", "TestProviderCpp"], ["--provider", "nomatch"],
    ["--event", "u8"], ["--event", "TestProviderC:*Scalars*"], ["--keyword", "0x80"],
    ["--filter", "level<=1"], ["--filter", 'n ~ "*Cpp*" && opcode & 3'],
    ["--filter", "i32 > 1000 || u16 >= 3"], ["--filter", "i64 != 0 && !(keyword & 0x1)"],
    ["--level", "4", "--filter", "id == 1000 && meta.level >= 4"],
])
def test_dat_filters_keep_what_perf_data_keeps(both_files, args):
    """Issue: --input-format dat ignored every filter (--level 1 printed all 374
    events). The events both files have are kept alike."""
    dat, perf = _jsonl(*args, dat=True), _jsonl(*args)
    assert len(dat) < 374
    assert sorted(e for e in dat if e in both_files) == sorted(
        e for e in perf if e in both_files)
    if args != ["--provider", "nomatch"]:
        assert any(e in both_files for e in dat)


def _dat_run(*args: str, path: str | None = None) -> subprocess.CompletedProcess:
    path = path or str(golden_path("linuxtracepoints/EventHeaderInterceptorLE64.dat"))
    return subprocess.run([sys.executable, "-m", "ehtool", "decode", "--input-format", "dat",
                           *args, path], capture_output=True, text=True)


@pytest.mark.parametrize(("args", "named"), [
    (["--pid", "5"], "--pid"), (["--tid", "5"], "--tid"), (["--cpu", "0"], "--cpu"),
    (["--comm", "x*"], "--comm"), (["--since", "1"], "--since"), (["--until", "1"], "--until"),
    (["--filter", "meta.pid == 5"], "'meta.pid'"), (["--filter", "level < 3 || meta.time"],
                                                    "'meta.time'"),
    (["--format", "text"], "json or jsonl"), (["--format", "parquet", "-o", "{tmp}/x.parquet"],
                                              "json or jsonl"),
])
def test_dat_refuses_what_it_has_no_value_for(args, named, tmp_path):
    """Issue: --pid/--since... were ignored on .dat input, and --format text/parquet read
    it as perf.data ('no PERFILE2 magic')."""
    done = _dat_run(*(a.format(tmp=tmp_path) for a in args))
    assert done.returncode == 2, done.stderr
    assert not (tmp_path / "x.parquet").exists()
    assert done.stdout == "" and done.stderr.count("\n") == 1 and named in done.stderr
    assert "Traceback" not in done.stderr


def test_dat_filter_names_no_event_has_are_reported():
    """Issue: --strict-filter --filter 'nosuch>1' exited 0 on .dat input, without a word."""
    done = _dat_run("--filter", "nosuch > 1 || level == 1")
    assert done.returncode == 0
    assert done.stderr == ("ehtool: warning: --filter: no event of the input has 'nosuch' "
                           "(comparisons with it are false)\n")
    assert len(json.loads(done.stdout)) == 1
    done = _dat_run("--strict-filter", "--filter", "nosuch > 1")
    assert done.returncode == 2 and "'nosuch'" in done.stderr


def test_dat_names_of_sample_meta_are_fields(tmp_path):
    """.dat events have no sample meta, so 'pid' and 'cpu' in --filter are their fields
    (on perf.data an expression of sample meta alone is checked on the sample)."""
    import struct

    from ehtool.eventheader.encoder import Event, Field, encode

    path = tmp_path / "pids.dat"
    with path.open("wb") as out:
        for pid in (5, 7, 5):
            data = encode(Event("E", [Field("pid", "u32", pid), Field("cpu", "u8", 1)],
                                level=4))
            record = b"P_L4K1\0" + data
            out.write(struct.pack("<I", 4 + len(record)) + record)
    assert len(json.loads(_dat_run(path=str(path)).stdout)[str(path)]) == 3
    done = _dat_run("--filter", "pid == 5", path=str(path))
    assert done.returncode == 0 and done.stderr == ""
    assert [e["pid"] for e in json.loads(done.stdout)[str(path)]] == [5, 5]
    done = _dat_run("--filter", "cpu != 1 || time > 0", path=str(path))
    assert json.loads(done.stdout)[str(path)] == []
    assert "'time'" in done.stderr and "'cpu'" not in done.stderr


@pytest.mark.parametrize("pure", ["", "1"])
def test_a_bare_meta_name_is_the_events_field_where_it_has_one(pure):
    """``pid == 18`` was checked on the sample's pid for every event (an expression on
    sample meta names only took a shortcut), so a sched_wakeup whose field ``pid`` is 18
    was missed and one woken by pid 18 was kept: fields come first, ``meta.pid`` is the
    sample's."""
    sched = str(Path(__file__).resolve().parents[2] / "examples" / "sched.data")

    def events(*expr: str) -> list[dict]:
        done = subprocess.run([sys.executable, "-m", "ehtool", "decode", "--format", "jsonl",
                               *expr, sched], capture_output=True, text=True, check=True,
                              env={**os.environ, "EHTOOL_PURE": pure})
        return [json.loads(line) for line in done.stdout.splitlines()]

    everything = events()
    by_field = [e for e in everything if int(e.get("pid", "-1"), 16) == 18]
    by_meta = [e for e in everything if "pid" not in e and e["meta"]["pid"] == 18]
    assert by_field and by_meta
    assert events("--filter", "pid == 18") == [e for e in everything if e in by_field + by_meta]
    assert events("--filter", "meta.pid == 18") == [e for e in everything if e["meta"]["pid"] == 18]
    woken = [e for e in everything if "pid" in e and e["meta"]["pid"] == 18]
    assert not any(e in events("--filter", "pid == 18") for e in woken if int(e["pid"], 16) != 18)


@pytest.mark.parametrize("pure", ["", "1"])
def test_nonsample_records_are_filtered_as_the_events_they_are_shown_as(pure):
    """--nonsample records (perf:comm, perf:fork...) passed --provider, --event, --level,
    --keyword and expressions unchecked: 105 of them came out of --provider MyProvider."""
    example = str(Path(__file__).resolve().parents[2] / "examples" / "eventheader.data")

    def names(*args: str) -> list[str]:
        done = subprocess.run([sys.executable, "-m", "ehtool", "decode", "--format", "jsonl",
                               "--nonsample", *args, example], capture_output=True,
                              text=True, check=True, env={**os.environ, "EHTOOL_PURE": pure})
        return [json.loads(line)["n"] for line in done.stdout.splitlines()]

    every = names()
    records = [n for n in every if n.startswith("perf:")]
    assert len(records) == 105 and len(every) > len(records)
    assert names("--provider", "MyProvider") == [n for n in every if n.startswith("MyProvider:")]
    assert names("--provider", "perf") == records
    assert names("--event", "comm") == names("--filter", 'n == "perf:comm"') == [
        n for n in records if n == "perf:comm"]
    assert names("--level", "5") == [n for n in every if not n.startswith("perf:")]
    assert names("--filter", 'comm ~ "guest*" && n == "perf:comm"') == ["perf:comm"]
    # meta.X of a record is its sample meta, also beside other names (it was never true)
    assert names("--filter", 'meta.pid == 0 && n ~ "perf:*"') == names(
        "--provider", "perf", "--pid", "0") != []


def test_nonsample_records_do_not_move_where_relative_times_start():
    """--since 7 counts from the first sample: with --nonsample the first COMM record,
    53 s earlier, became the start, and all three MyProvider events were kept."""
    example = str(Path(__file__).resolve().parents[2] / "examples" / "eventheader.data")

    def events(*args: str) -> list[dict]:
        done = subprocess.run([sys.executable, "-m", "ehtool", "decode", "--format", "jsonl",
                               *args, example], capture_output=True, text=True, check=True)
        return [json.loads(line) for line in done.stdout.splitlines()]

    for window in (["--since", "7"], ["--until", "1"], ["--since", "1", "--until", "30"]):
        for order in ("time", "file"):
            samples = events("--sort", order, *window)
            with_records = events("--sort", order, "--nonsample", *window)
            assert [e for e in with_records if not e["n"].startswith("perf:")] == samples, \
                (window, order)
            # records before the first sample are before any relative bound
            if window[0] == "--since":
                assert not any(e["n"].startswith("perf:") for e in with_records
                               if e["meta"]["time"] < samples[0]["meta"]["time"])
    everything = events("--nonsample")
    first_sample = next(e for e in everything if not e["n"].startswith("perf:"))
    assert everything[0]["n"].startswith("perf:") and everything[0] != first_sample
    assert len(events("--since", "7")) == 1


@pytest.mark.parametrize("pure", ["", "1"])
def test_malformed_eventheader_events_are_selected_as_the_plain_tracepoints_shown(
        pure, tmp_path):
    """An EventHeader event whose data is malformed is shown as the plain tracepoint
    ``user_events:MyProvider_L5K1``: --provider, --event and --level took it by the
    header and metadata (``--provider MyProvider`` kept it, ``--filter 'provider ==
    "MyProvider"'`` did not), and ``info`` counted it as an EventHeader event."""
    from ehtool.decode.info import summarize
    from ehtool.eventheader.enums import FieldEncoding as E
    from tests.eventheader.helpers import event, fd, recording

    path = tmp_path / "malformed.data"
    recording(path, [event([fd(b"a", E.VALUE8)], b"\1", name=b"Ok"),
                     event([fd(b"a", E.VALUE8, count=5000)], bytes(5000), name=b"Steps"),
                     event([fd(b"s", E.STRING_LENGTH16_CHAR8)], b"\xe8\x03cut", name=b"Cut")])

    def names(*args: str) -> list[str]:
        done = subprocess.run([sys.executable, "-m", "ehtool", "decode", "--format", "jsonl",
                               *args, str(path)], capture_output=True, text=True, check=True,
                              env={**os.environ, "EHTOOL_PURE": pure})
        return [json.loads(line)["n"] for line in done.stdout.splitlines()]

    plain = ["user_events:MyProvider_L5K1"] * 2
    assert names() == ["MyProvider:Ok", *plain]
    assert names("--provider", "MyProvider") == names("--level", "5") == ["MyProvider:Ok"]
    assert names("--filter", 'provider == "MyProvider"') == ["MyProvider:Ok"]
    assert names("--provider", "user_events") == names("--event", "MyProvider_L5K1") == plain
    assert names("--filter", 'provider == "user_events"') == plain
    assert names("--event", "Steps") == names("--event", "Cut") == []
    assert summarize(str(path))["eventheader_events"] == {"MyProvider:Ok": 1}


@pytest.mark.parametrize("pure", ["", "1"])
def test_a_malformed_event_of_a_capture_is_its_tracepoint_name(pure, tmp_path):
    """In a .dat capture a malformed EventHeader event is shown as ``MyProvider_L5K1``
    (no system): ``--event MyProvider_L5K1`` missed it, as the name was taken for a
    provider; the name is the event's, and its provider is empty."""
    from ehtool.eventheader.enums import FieldEncoding as E
    from tests.eventheader.helpers import event, fd

    def record(data: bytes) -> bytes:
        body = b"MyProvider_L5K1\0" + data
        return struct.pack("<I", 4 + len(body)) + body

    path = tmp_path / "malformed.dat"
    path.write_bytes(record(event([fd(b"a", E.VALUE8)], b"\1", name=b"Ok"))
                     + record(event([fd(b"s", E.STRING_LENGTH16_CHAR8)], b"\xe8\x03cut",
                                    name=b"Cut")))

    def names(*args: str) -> list[str]:
        done = subprocess.run([sys.executable, "-m", "ehtool", "decode", "--input-format",
                               "dat", "--format", "jsonl", *args, str(path)],
                              capture_output=True, text=True, check=True,
                              env={**os.environ, "EHTOOL_PURE": pure})
        return [json.loads(line)["n"] for line in done.stdout.splitlines()]

    assert names() == ["MyProvider:Ok", "MyProvider_L5K1"]
    assert names("--event", "MyProvider_L5K1") == ["MyProvider_L5K1"]
    assert names("--filter", 'event == "MyProvider_L5K1"') == ["MyProvider_L5K1"]
    assert names("--filter", 'n == "MyProvider_L5K1" && provider == ""') == ["MyProvider_L5K1"]
    assert names("--provider", "MyProvider") == ["MyProvider:Ok"]
    assert names("--provider", "MyProvider_L5K1") == []
    assert names("--event", "*:*") == ["MyProvider:Ok"]  # (no provider: no "provider:")


@pytest.mark.parametrize("pure", ["", "1"])
def test_another_perf_event_is_named_as_decode_shows_it(pure, tmp_path):
    """A perf event that is not a tracepoint (``cpu-clock``) is shown as ``cpu-clock:``, as
    perf-decode splits its name (a provider, no event): ``n == "cpu-clock:"`` matched
    nothing, the typed name being ``cpu-clock``; text output showed that too."""
    from ehtool.perfdata.writer import PerfDataWriter, make_attr

    path = tmp_path / "clock.data"
    with PerfDataWriter(path) as w:
        ev = w.add_event(make_attr(w.g, type=1, config=0, sample_type=0x2 | 0x4 | 0x10000),
                         [7], "cpu-clock")
        w.event_desc_feature()
        for t in (1, 2):
            w.add_sample(ev, id=7, time=t, pid=5, tid=5)

    def names(*args: str, fmt: str = "jsonl") -> list[str]:
        done = subprocess.run([sys.executable, "-m", "ehtool", "decode", "--format", fmt,
                               *args, str(path)], capture_output=True, text=True, check=True,
                              env={**os.environ, "EHTOOL_PURE": pure})
        lines = done.stdout.splitlines()
        return [json.loads(line)["n"] for line in lines] if fmt == "jsonl" else lines

    assert names() == ["cpu-clock:"] * 2
    assert names("--filter", 'n == "cpu-clock:"') == names("--provider", "cpu-clock") \
        == names("--event", "cpu-clock:") == ["cpu-clock:"] * 2
    assert names("--filter", 'event == ""') == ["cpu-clock:"] * 2
    assert names("--event", "cpu-clock") == ["cpu-clock:"] * 2  # (as info names it)
    assert all(" cpu-clock:: " in line for line in names(fmt="text"))


@pytest.mark.parametrize("pure", ["", "1"])
def test_what_decode_shows_as_text_filters_as_text(pure):
    """A tracefs field decode shows in hex (``"next_pid": "0x12"``) matched no glob (the
    typed value was the int 18); a common field (``common_type``, shown with ``--meta
    +common``) was an unknown name; ``meta.time`` against seconds or a time string
    matched nothing in silence (it is session nanoseconds): now a usage error."""
    def count(*args: str) -> int:
        done = subprocess.run([sys.executable, "-m", "ehtool", "decode", "--format", "jsonl",
                               *args, str(SCHED)], capture_output=True, text=True,
                              env={**os.environ, "EHTOOL_PURE": pure})
        assert done.returncode == 0, done.stderr
        return len(done.stdout.splitlines())

    switches = count("--event", "sched_switch")
    assert count("--filter", 'next_pid ~ "0x?2"') == count("--filter", 'next_pid == "0x12"') \
        == count("--filter", "next_pid == 18") == 1
    assert count("--filter", 'next_pid ~ "18"') == count("--filter", 'next_pid == "18"') == 0
    assert count("--filter", 'prev_pid ~ "0x*"') == switches
    assert count("--decimal-pids", "--filter", 'next_pid ~ "0x?2"') == 0  # (shown 18)
    assert count("--decimal-pids", "--filter", "next_pid == 18") == 1
    assert count("--filter", "common_type == 374") == count("--event", "sched_wakeup") > 0
    assert count("--filter", "common_pid == 30907 && pid == 18") == 1
    done = subprocess.run([sys.executable, "-m", "ehtool", "decode", "--filter",
                           "meta.time <= 1275.0212", str(SCHED)], capture_output=True,
                          text=True)
    assert done.returncode == 2 and "session clock in nanoseconds" in done.stderr
    assert done.stdout == ""
    assert count("--filter", "meta.time > 1.2e12") == count("--filter", "meta.time > 0x10") \
        == count()  # (whole nanoseconds, however written)


def test_text_shows_pid_without_cpu_and_quotes_thread_names(tmp_path):
    """Without a recorded CPU, text dropped pid/tid; a thread name with a line break
    split an event over two lines (names are quoted as field values are)."""
    from ehtool.perfdata.grammar import RecordType
    from ehtool.perfdata.writer import PerfDataWriter, make_attr

    tid_time_id = 0x2 | 0x4 | 0x10000
    path = tmp_path / "nocpu.data"
    with PerfDataWriter(path) as w:
        ev = w.add_event(make_attr(w.g, type=1, config=0, sample_type=tid_time_id,
                                   sample_id_all=True), [7], "cpu-clock")
        w.event_desc_feature()
        w.add_raw(w.record_bytes(RecordType.COMM, dict(pid=5, tid=5, comm="tab\tnl\n"),
                                 sample_id=dict(pid=5, tid=5, time=1, identifier=7),
                                 sample_type=tid_time_id))
        w.add_sample(ev, id=7, time=2, pid=5, tid=5)
    done = subprocess.run([sys.executable, "-m", "ehtool", "decode", "--format", "text",
                           str(path)], capture_output=True, text=True, check=True)
    assert done.stdout.splitlines() == [
        '"tab\\tnl\\n" 5/5 0.000000002 cpu-clock:: raw=""']


def test_names_between_backquotes(impl, tmp_path):
    """EventHeader field names need not be identifiers (the reference recording has
    ``1/3`` and ``-Inf``): between backquotes any name is a field's, a top-level one of
    that name (dots and all) before a struct's member; a backslash escapes. They were a
    syntax error, found by a new-user trial."""
    from tests.eventheader.helpers import recording

    events = [{"provider": "MyProvider", "event": "Odd", "fields": [
        ["1/3", "u32", v], ["a b", "str", s], ["x.y", "u8", v], ["x", "struct", [["y", "u8", 9]]],
        ["q`\\", "i32", -v]]} for v, s in ((1, "one"), (2, "two"), (3, "three"))]
    done = subprocess.run([sys.executable, "-m", "ehtool", "write", "--dry-run", "--batch"],
                          input="".join(json.dumps(e) + "\n" for e in events).encode(),
                          capture_output=True, check=True)
    data = tmp_path / "odd.data"
    recording(data, [bytes.fromhex(line.split()[1].decode())
                     for line in done.stdout.splitlines()], 1)

    def kept(expr: str) -> list[int]:
        done = subprocess.run([sys.executable, "-m", "ehtool", "decode", "--format", "jsonl",
                               "--strict-filter", "--filter", expr, str(data)],
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        return [json.loads(line)["1/3"] for line in done.stdout.splitlines()]
    assert kept("`1/3` >= 2") == [2, 3]
    assert kept('`a b` ~ "t*" && `1/3` != 3') == [2]
    assert kept("`x.y` == 1 || x.y == 3") == [1, 3]  # (the top-level x.y either way)
    assert kept(r"`q\`\\` < -1") == [2, 3]
    with pytest.raises(FilterSyntaxError, match="an empty name"):
        compile_filter("`` == 1")
    with pytest.raises(FilterSyntaxError, match="unexpected '`'"):
        compile_filter("`1/3 == 1")


def test_pid_minus_one_is_the_exiting_tasks(tmp_path):
    """perf script shows a task that was exiting as pid/tid -1; the samples hold
    4294967295 (as perf-decode shows it). --pid -1 and --tid -1 kept nothing in silence;
    a pid past u32 was accepted and kept nothing."""
    from ehtool.perfdata import PerfDataFile
    from ehtool.perfdata.writer import PerfDataWriter, copy_metadata

    src = Path(__file__).resolve().parents[1] / "data" / "sched-612.data"
    dst = tmp_path / "exiting.data"
    with PerfDataFile.open(src) as f:
        w = PerfDataWriter(dst, big_endian=f.big_endian)
        copy_metadata(w, f)
        descs = {d.name: i for i, d in enumerate(f.descs)}
        for k, s in enumerate(f.samples(order="file")):
            who = 0xFFFFFFFF if k % 3 == 0 else s.pid
            w.add_sample(descs[s.desc.name], id=s.desc.id, time=s.time, pid=who, tid=who,
                         cpu=s.cpu, raw=s.raw)
        w.close()

    def pids(*args: str) -> list[int]:
        done = subprocess.run([sys.executable, "-m", "ehtool", "decode", "--format", "jsonl",
                               *args, str(dst)], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        return [json.loads(line)["meta"]["pid"] for line in done.stdout.splitlines()]
    exiting = pids("--pid", "-1")
    assert len(exiting) > 3 and set(exiting) == {0xFFFFFFFF}
    assert pids("--tid", "-1") == pids("--pid", "4294967295") == exiting
    for bad in ("--pid=-2", "--tid=4294967296", "--cpu=-1"):
        done = subprocess.run([sys.executable, "-m", "ehtool", "decode", bad, str(dst)],
                              capture_output=True, text=True)
        assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr


def test_a_long_chain_of_alternatives_compiles_and_answers(impl):
    """1,000 alternatives (a script's list of pids) made an internal RecursionError: the
    chain is a balanced tree now; parentheses hundreds deep are a syntax error."""
    chain = " || ".join(f"pid == {i}" for i in range(3000, 3000 + 1000))
    done = subprocess.run([sys.executable, "-m", "ehtool", "decode", "--format", "jsonl",
                           "--filter", f"({chain}) && cpu >= 0 || meta.pid == 18",
                           str(Path(__file__).resolve().parents[2] / "examples" / "sched.data")],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    pids = {json.loads(line)["meta"]["pid"] for line in done.stdout.splitlines()}
    assert pids == {18}
    f = compile_filter(chain)
    assert f({"pid": 3999}) and f({"pid": 3000}) and not f({"pid": 4000})
    with pytest.raises(FilterSyntaxError, match="nests too deep"):
        compile_filter("(" * 2000 + "pid == 1" + ")" * 2000)
    with pytest.raises(FilterSyntaxError, match="nests too deep"):
        compile_filter("!" * 5000 + "pid == 1")
