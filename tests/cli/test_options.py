"""Option combinations of every command, run in process: what is refused (exit 2, one
line naming the option), what is accepted, and options shared between commands."""

from __future__ import annotations

import json

import click
import pytest

SCHED = "examples/sched.data"
EH = "examples/eventheader.data"


@pytest.mark.parametrize(("args", "says"), [
    (["decode", "--pretty", "--format", "jsonl", SCHED], "--pretty"),
    (["decode", "--time", "ns", "--format", "parquet", "-o", "/dev/null", SCHED], "--time"),
    (["decode", "--fields-key", "f", "--format", "text", SCHED], "--fields-key"),
    (["decode", "--fields-key", "f", "--format", "parquet", "-o", "/dev/null", SCHED],
     "--fields-key"),
    (["decode", "--fields-key", "meta", SCHED], "--fields-key"),
    # options a format does not read were ignored in silence
    (["decode", "--format", "text", "--compact", SCHED], "'--compact' does not apply to"),
    (["decode", "--format", "text", "--no-field-tags", SCHED], "'--no-field-tags' does not"),
    (["decode", "--format", "text", "--meta", "none", SCHED], "'--meta' does not apply"),
    (["decode", "--format", "text", "--nonsample", SCHED], "'--nonsample' does not apply"),
    (["decode", "--format", "parquet", "-o", "/dev/null", "--pretty", SCHED], "'--pretty'"),
    (["decode", "--format", "parquet", "-o", "/dev/null", "--nonsample", SCHED],
     "'--nonsample' does not apply to --format parquet"),
    (["decode", "--format", "parquet", "-o", "/dev/null", "--sort", "file", SCHED], "--sort"),
    (["decode", "--input-format", "dat", "--time", "ns", SCHED],
     "'--time' does not apply to --input-format dat"),
    (["decode", "--format", "parquet", "-o", "/dev/null", "--pid", "1", SCHED],
     "filters apply to json, jsonl and text"),
    (["decode", "--format", "text", "-j", "2", SCHED], "'-j' / '--jobs' does not apply"),
    (["decode", "--format", "parquet", "-o", "/dev/null", "--strict-filter", SCHED],
     "'--strict-filter' does not apply to --format parquet"),
    (["decode", "--strict-filter", SCHED], "--strict-filter checks the names of --filter"),
    (["decode", "-j", "5000", SCHED], "5000 is not in the range 1<=x<=1024"),
    (["query", "-j", "99999999999999999999", "select 1", SCHED], "1<=x<=1024"),
    (["decode", "--strict-filter", "--pid", "1", SCHED], "add --filter"),
    (["decode", "--meta", "+bogus", SCHED], "bogus"),
    (["decode", "--filter", "cpu == ", SCHED], "column"),
    (["decode", "--filter", "cpu = 3", SCHED], "column"),
    (["decode", "--since", "yesterday", SCHED], "yesterday"),
    (["decode", "--keyword", "zz", SCHED], "zz"),
    (["decode", "--keyword", "0x10000000000000001", SCHED], "0..0xffffffffffffffff"),
    (["decode", "--level", "loud", SCHED], "'loud': give a number or one of"),
    (["decode", "--level", "256", SCHED], "level must be 0..255"),
    (["decode", "--time", "iso8601", SCHED], "--time"),
    (["decode", "--strict-filter", "--filter", "nosuchfield > 3", SCHED], "nosuchfield"),
    (["decode", "--strict-filter", "--filter", "nosuchfield > 3", "--format", "text", SCHED],
     "nosuchfield"),
    (["write", "--decode", "P", "E"], "--dry-run"),
    (["write", "--batch", "P", "E"], "--batch"),
    (["write", "--dry-run", "--level", "loud", "P", "E"], "loud"),
    (["write", "--dry-run", "P", "E", "x:u8=256"], "x"),
    (["write", "--dry-run", "P", "E", "ip:ipv4=1.2.3"], "ip"),
    (["record"], "nothing to record"),
    (["record", "--duration", "nan", ":sched:sched_switch"], "--duration"),
    (["record", "--decode-arg=--bogus", "--decode", ":sched:sched_switch"], "--bogus"),
    (["register", "--level", "9-1", "--provider", "P"], "level"),
    (["query", "select 1"], "FILE"),
    (["decod", SCHED], "did you mean"),
])
def test_refused_with_one_line_naming_the_problem(ehtool, args, says):
    run = ehtool(*args)
    assert run.status == 2, (run.out, run.err)
    lines = run.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ehtool: error: "), run.err
    assert says in lines[0]
    if "--strict-filter" not in args:  # known only after decoding: the (valid) JSON is out
        assert run.out == ""


@pytest.mark.parametrize("args", [
    ["--format", "jsonl", "--compact", "--time", "rel"],
    ["--format", "jsonl", "--fields-key", "f", "--meta", "none,+cpu"],
    ["--format", "json", "--pretty", "--time", "delta", "--sort", "file"],
    ["--format", "jsonl", "--nonsample", "--filter", "meta.cpu == 1", "--decimal-pids"],
    ["--format", "json", "--bom", "--no-field-tags", "--provider", "sched", "-j", "1"],
    ["--format", "jsonl", "--since", "0.05", "--until", "150ms", "--cpu", "0", "--cpu", "1"],
])
def test_accepted_combinations_give_valid_output(ehtool, args):
    run = ehtool("decode", *args, SCHED)
    assert run.status == 0, run.err
    text = run.out.removeprefix("\ufeff")
    if "jsonl" in args:
        events = [json.loads(line) for line in text.splitlines()]
    else:
        events = json.loads(text)[SCHED]
    assert events
    if "--fields-key" in args:
        assert all(list(ev) == ["n", "f", "meta"] and list(ev["meta"]) == ["cpu"]
                   for ev in events)  # (none: JSON Lines' "file" too, since it is a key)
    if "--compact" in args:
        assert text.startswith('{"n":') and '", "' not in text
    if "--time" in args:
        assert isinstance(events[0]["meta"]["time"], float)


def test_register_and_record_share_the_provider_options():
    """--provider/--level/--keyword/--group: one definition (cli/options.py), the same
    help in both commands but for the verb."""
    from ehtool.cli import cli

    ctx = click.Context(cli)
    helps = {}
    for name in ("register", "record"):
        cmd = cli.get_command(ctx, name)
        sub = click.Context(cmd, info_name=name, parent=ctx)
        helps[name] = {p.name: p.get_help_record(sub) for p in cmd.params
                       if p.name in ("provider", "levels", "keywords", "group")}
    assert len(helps["register"]) == 4
    for key, record in helps["register"].items():
        other = helps["record"][key]
        assert record[0] == other[0]
        assert record[1].replace("Register", "Record") == other[1]


def test_info_on_several_files(ehtool):
    run = ehtool("info", "--json", SCHED, EH)
    assert run.status == 0, run.err
    objs = [json.loads(line) for line in run.out.splitlines()]
    assert [o["file"] for o in objs] == [SCHED, EH]


def test_decode_without_file_reads_perf_data(ehtool, tmp_path, monkeypatch):
    import shutil

    shutil.copy(f"{EH}", tmp_path / "perf.data")
    monkeypatch.chdir(tmp_path)
    run = ehtool("decode", "--format", "jsonl")
    assert run.status == 0 and len(run.out.splitlines()) == 3


def test_bare_ehtool_shows_its_help(ehtool):
    """Alone, ``ehtool`` printed its whole help squashed into one "error:" line (exit 2)."""
    run = ehtool()
    assert run.status == 0 and run.err == ""
    assert run.out == ehtool("--help").out and "Commands:" in run.out
    assert "128+N stopped by signal N" in " ".join(run.out.split())


def test_jsonl_file_meta_is_a_meta_key(ehtool):
    """JSON Lines' "file" could not be left out (--meta none kept it, -file was refused)."""
    def meta(spec: str, fmt: str = "jsonl") -> list[str]:
        run = ehtool("decode", "--format", fmt, "--meta", spec, EH)
        assert run.status == 0, run.err
        first = run.out.splitlines()[0] if fmt == "jsonl" else json.loads(run.out)[EH][0]
        return list((json.loads(first) if fmt == "jsonl" else first)["meta"])

    assert meta("default")[-1] == "file" and "file" not in meta("-file")
    assert meta("none") == [] and meta("none,+file") == ["file"]
    assert meta("all")[-1] == "file" and "file" not in meta("all", "json")
    refused = ehtool("decode", "--meta", "+file", EH)
    assert refused.status == 2 and "'file' is a key of --format jsonl" in refused.err


def test_decode_level_takes_the_names_write_takes(ehtool):
    """write --level took names (warning...) but decode --level only numbers."""
    by_name, by_number = ehtool("decode", "--level", "warning", EH), ehtool("decode", "--level",
                                                                          "3", EH)
    assert by_name.status == by_number.status == 0 and by_name.out == by_number.out
    assert ehtool("decode", "--level", "03", EH).out == by_number.out  # (as IntRange took it)


def test_an_option_given_as_what_the_format_does_is_accepted(ehtool):
    """_UNREAD refuses what a format would ignore, not a value it has anyway."""
    run = ehtool("decode", "--format", "text", "-j", "1", "--field-tags", "--meta", "default",
                 SCHED)
    assert run.status == 0 and run.out.count("\n") == 35, run.err


@pytest.mark.parametrize("args", [("decode", EH), ("decode", "--format", "jsonl", EH),
                                  ("query", "select count(*) from events", EH)])
def test_the_decoding_commands_keep_freed_memory(ehtool, monkeypatch, args):
    """ehtool.allocator's thresholds are set before the decode (8% less CPU)."""
    if args[0] == "query":
        pytest.importorskip("duckdb")
    calls: list[int] = []
    monkeypatch.setattr("ehtool.allocator.keep_freed_memory", lambda: calls.append(1))
    run = ehtool(*args)
    assert run.status == 0, run.err
    assert calls == [1]
