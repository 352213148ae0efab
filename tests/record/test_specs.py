"""Spec parsing for ``ehtool record`` (reference collector's rules)."""

from __future__ import annotations

import pytest

from ehtool.errors import InputError
from ehtool.eventheader.names import EVENTHEADER_COMMAND_TYPES
from ehtool.record.specs import (
    SpecError,
    SpecKind,
    TracepointSpec,
    expand_provider,
    merge_specs,
    parse_int_list,
    parse_spec,
    read_spec_file,
)


@pytest.mark.parametrize("text, kind, system, name, command", [
    ("MyProv_L5K1", SpecKind.EVENTHEADER, "user_events", "MyProv_L5K1",
     f"MyProv_L5K1 {EVENTHEADER_COMMAND_TYPES}"),
    ("  user_events:MyProv_L5K3ffGgrp \n", SpecKind.EVENTHEADER, "user_events", "MyProv_L5K3ffGgrp",
     f"MyProv_L5K3ffGgrp {EVENTHEADER_COMMAND_TYPES}"),
    ("user_events:MyProv_L1K1:persist", SpecKind.EVENTHEADER, "user_events", "MyProv_L1K1",
     f"MyProv_L1K1:persist {EVENTHEADER_COMMAND_TYPES}"),
    ("MyEvent u32 a; char[16] b;", SpecKind.DEFINITION, "user_events", "MyEvent",
     "MyEvent u32 a; char[16] b"),
    ("user_events:MyEvent\tu64 x", SpecKind.DEFINITION, "user_events", "MyEvent", "MyEvent u64 x"),
    ("MyEvent ;", SpecKind.DEFINITION, "user_events", "MyEvent", "MyEvent"),
    (":sched:sched_switch", SpecKind.IDENTIFIER, "sched", "sched_switch", None),
    (": sched:sched_switch", SpecKind.IDENTIFIER, "sched", "sched_switch", None),
    (":Existing", SpecKind.IDENTIFIER, "user_events", "Existing", None),
])
def test_parse_kinds(text, kind, system, name, command):
    spec = parse_spec(text, "argument 1")
    assert spec == TracepointSpec(kind, system, name, spec.flags, spec.fields, "argument 1")
    assert spec.command == command
    assert spec.tracepoint == f"{system}:{name}"


@pytest.mark.parametrize("text", ["", "   ", "# a comment", "  #MyProv_L5K1"])
def test_empty_and_comments(text):
    assert parse_spec(text) is None


@pytest.mark.parametrize("text, message", [
    (":sched:sched_switch u32 a", "cannot have fields"),
    (":a:b:c", "cannot have flags"),
    (":sched:", "event name is empty"),
    ("::x", "system name is empty"),
    ("a:b:c:d u32 x", "':' after its flags"),
    ("sched:MyProv_L5K1", "only 'user_events' can"),
    ("MyProv", "':MyProv'"),  # not an EventHeader name: hints at ':' and at fields
    ("MyProv_L5", "'K<keyword>'"),
    ("MyProv_L0K1", "level must be 1..255"),
    ("user/x u32 a", "must not contain '/'"),
    ("x" * 256 + " u32 a", "limit is 255"),
])
def test_parse_errors(text, message):
    with pytest.raises(SpecError) as info:
        parse_spec(text, "argument 3")
    text_out = str(info.value)
    assert message in text_out
    assert text_out.startswith("argument 3: ")
    assert info.value.exit_code == 2


def test_read_spec_file(tmp_path):
    path = tmp_path / "specs.txt"
    path.write_text("# header\n\nMyProv_L5K1\n  :sched:sched_switch  \r\nMyEvent u32 a;\n")
    specs = read_spec_file(path)
    assert [s.tracepoint for s in specs] == [
        "user_events:MyProv_L5K1", "sched:sched_switch", "user_events:MyEvent"]
    assert specs[1].source == f"{path}:4"


def test_read_spec_file_errors(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("MyProv_L5K1\nNotEventHeader\n")
    with pytest.raises(SpecError, match=r"bad\.txt:2: "):
        read_spec_file(bad)
    # an input that cannot be read is bad input (exit 1), not a usage error
    with pytest.raises(InputError, match="cannot read spec file") as missing:
        read_spec_file(tmp_path / "missing.txt")
    assert missing.value.exit_code == 1
    with pytest.raises(InputError, match="cannot read spec file"):
        read_spec_file(tmp_path)


def test_read_spec_file_dash_reads_stdin(monkeypatch):
    import io
    import sys

    stdin = io.TextIOWrapper(io.BytesIO(b"MyProv_L5K1\n# c\nMyEvent u32 a\nBad_L5\n"))
    monkeypatch.setattr(sys, "stdin", stdin)
    with pytest.raises(SpecError, match=r"^<stdin>:4: "):
        read_spec_file("-")
    stdin = io.TextIOWrapper(io.BytesIO(b"MyProv_L5K1\n\nMyEvent u32 a\n"))
    monkeypatch.setattr(sys, "stdin", stdin)
    specs = read_spec_file("-")
    assert [(s.tracepoint, s.source) for s in specs] == [
        ("user_events:MyProv_L5K1", "<stdin>:1"), ("user_events:MyEvent", "<stdin>:3")]


def test_expand_provider():
    names = [s.name for s in expand_provider("MyProv", "1-3,5", "0x1,0x10")]
    assert names == ["MyProv_L1K1", "MyProv_L1K10", "MyProv_L2K1", "MyProv_L2K10",
                     "MyProv_L3K1", "MyProv_L3K10", "MyProv_L5K1", "MyProv_L5K10"]
    grouped = expand_provider("P", "0xa", "255", group="grp")
    assert [s.name for s in grouped] == ["P_LaKffGgrp"]
    assert all(s.kind is SpecKind.EVENTHEADER for s in grouped)


@pytest.mark.parametrize("provider, levels, keywords, message", [
    ("P", "x", "1", "--level 'x'"),
    ("P", "5-1", "1", "bad range"),
    ("P", "0", "1", "level must be 1..255"),
    ("P", "1", "-1", "is negative"),
    ("P", "1", "0x", "not a number"),
    ("P:x", "1", "1", "must not contain"),
])
def test_expand_provider_errors(provider, levels, keywords, message):
    with pytest.raises(SpecError, match=message):
        expand_provider(provider, levels, keywords)


def test_parse_int_list_dedups():
    assert parse_int_list("3,1-3", "--level", allow_ranges=True) == [3, 1, 2]


def test_merge_specs():
    a = parse_spec("MyProv_L5K1", "argument 1")
    b = parse_spec("user_events:MyProv_L5K1", "f:1")
    ident = parse_spec(":MyProv_L5K1")
    assert merge_specs([ident, a, b]) == [a]
    assert merge_specs([a, ident]) == [a]
    with pytest.raises(SpecError, match="different definitions"):
        merge_specs([parse_spec("Ev u32 a"), parse_spec("Ev u64 a")])


def test_record_refuses_to_register_a_name_no_producer_writes_to():
    """P_L05K1 is EventHeader for decoders, but producers write P_L5K1: record registers
    only canonical names (as register does), and uses an existing one as it is."""
    from ehtool.record.tracepoints import TracepointHolder

    spec = parse_spec("P_L05K1", "argument 1")
    with pytest.raises(SpecError, match=r"argument 1: .*'P_L5K1'"):
        TracepointHolder([spec], exists=lambda system, name: False).plan()
    assert TracepointHolder([spec], exists=lambda system, name: True).plan() == []
    ok = parse_spec("P_L5K1", "argument 1")
    assert TracepointHolder([ok], exists=lambda system, name: False).plan() == [ok]
