"""Compiled EventPlans (the batch hot path) against ``encode``, which defines the bytes."""

from __future__ import annotations

import io
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ehtool.eventheader import encoder
from ehtool.eventheader.encode_plans import EventPlan, compile_event
from ehtool.eventheader.encoder import EncodeError, Event, Field, encode
from ehtool.provider.batch import write_batch
from ehtool.provider.writer import EventWriter, WriteDefaults

# (type, plain input the fast packers take, other input only the general code takes)
CASES = [
    ("i8", -5, "-5"), ("i16", -300, "0x10"), ("i32", -70000, 3.0), ("i64", -(2**63), "-1"),
    ("u8", 200, "200"), ("u16", 60000, "60000"), ("u32", 7, "7"), ("u64", 2**64 - 1, 2.0),
    ("x8", 0x10, "0x10"), ("x16", 0x1234, "0x1234"), ("x32", 0xBEEF, "0xbeef"),
    ("x64", 1, "1"), ("iptr", -1, "-1"), ("uptr", 5, "5"), ("xptr", 0xFF, "0xff"),
    ("bool", True, "true"), ("bool32", False, "false"), ("f32", 1.5, "1.5"), ("f64", 2, "-2"),
    ("char", 65, "A"), ("char16", 0xE9, "é"), ("str", "hé", 12), ("str16", "hi", 5),
    ("str32", "h", 5), ("lstr", "counted", 7), ("lstr16", "hi", 3), ("lstr32", "h", 3),
    ("bin", "dead", "de:ad"), ("guid", "01020304-0506-0708-090a-0b0c0d0e0f10",
                               "{01020304-0506-0708-090a-0b0c0d0e0f10}"),
    ("time", 60, "1970-01-01T00:01:00Z"), ("time32", 60, "60"), ("errno", 2, "ENOENT"),
    ("pid", 1234, "1234"), ("port", 8080, "8080"), ("ipv4", "10.0.0.1", " 10.0.0.1"),
    ("ipv6", "::1", "0::1"),
    ("u8[]", [1, 2], ("1", "2")), ("port[]", [80, 443], ["80", 443]), ("i16[2]", [-1, 1], (-1, 1)),
    ("str[]", ["a", "b"], ["a", 5]), ("f64[3]", [0.5, 1, 2], ["0.5", 1, 2]),
    ("guid[]", ["01020304-0506-0708-090a-0b0c0d0e0f10"], [bytes(16)]),
]


def both(type_: str, value: object) -> tuple[bytes, bytes]:
    event = Event("Ev", [Field("a", "u8", 1), Field("f", type_, value), Field("z", "u16", 9)],
                  level=3, opcode=2, id=7, version=1, tag=4)
    plan = compile_event(event)
    assert plan is not None
    return plan.encode((1, value, 9)), encode(event)


@pytest.mark.parametrize(("type_", "plain", "other"), CASES)
def test_plan_bytes_equal_encode_bytes(type_, plain, other):
    fast, defined = both(type_, plain)
    assert fast == defined
    fast, defined = both(type_, other)
    assert fast == defined


@pytest.mark.parametrize(("type_", "plain", "other"), CASES)
def test_plain_input_takes_the_fast_packers(type_, plain, other, monkeypatch):
    """A packer that silently fails would still give the right bytes (the general
    code runs), only slowly: with the general code disabled, plain input must pass."""
    def refuse(self, values, activity_ext):
        raise AssertionError(f"general path taken for {values!r}")

    monkeypatch.setattr(EventPlan, "_general", refuse)
    plan = compile_event(Event("Ev", [Field("a", "u8", 1), Field("f", type_, plain)]))
    assert plan.encode((1, plain)) == encode(Event("Ev", [Field("a", "u8", 1),
                                                          Field("f", type_, plain)]))


def test_plan_errors_are_encode_errors():
    plan = compile_event(Event("Ev", [Field("n", "u8", None), Field("s", "str", None)]))
    with pytest.raises(EncodeError, match=r"field 'n': 300 is not a valid u8"):
        plan.encode((300, "x"))
    with pytest.raises(EncodeError, match="NUL-terminated string cannot contain NUL"):
        plan.encode((1, "a\0b"))
    with pytest.raises(EncodeError, match="perf drops events over 8192"):
        compile_event(Event("Ev", [Field("b", "bin", None)])).encode(("00" * 9000,))
    with pytest.raises(EncodeError, match="expected 2 values"):
        plan.encode((1,))
    assert compile_event(Event("Ev", [Field("s", "struct", [])])) is None


def test_plan_activity_extension_matches_encode():
    act, rel = bytes(range(16)), bytes(range(16, 32))
    event = Event("Ev", [Field("n", "u32", 5)], activity=act, related_activity=rel)
    plan = compile_event(event)
    assert plan.encode((5,), encoder.activity_extension(act, rel)) == encode(event)


SCALAR = st.sampled_from([c for c in CASES if "[" not in c[0]])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(SCALAR, st.booleans()), min_size=0, max_size=8))
def test_random_shapes_agree(picks):
    fields = [Field(f"f{i}", case[0], case[1] if plain else case[2])
              for i, (case, plain) in enumerate(picks)]
    event = Event("Ev", fields)
    assert compile_event(event).encode(tuple(f.value for f in fields)) == encode(event)


def run_batch(lines: list[str], **defaults) -> tuple[list[str], int]:
    out = io.StringIO()
    writer = EventWriter(dry_run=True, out=out)
    path_text = "".join(line + "\n" for line in lines)
    import os
    import tempfile

    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as tmp:
        tmp.write(path_text)
    try:
        status = write_batch(writer, tmp.name, WriteDefaults(**defaults))
    finally:
        os.unlink(tmp.name)
    return out.getvalue().splitlines(), status


def one_by_one(lines: list[str], **defaults) -> list[str]:
    """Each line in a batch of its own: no plan is reused."""
    return [run_batch([line], **defaults)[0][0] for line in lines]


def test_batch_plan_reuse_gives_the_same_bytes_as_fresh_lines():
    act = "01020304-0506-0708-090a-0b0c0d0e0f10"
    lines = [json.dumps(x) for x in [
        {"provider": "P", "event": "E", "fields": [["n", "u32", 1], ["s", "str", "a"]]},
        {"provider": "P", "event": "E", "fields": [["n", "u32", 2], ["s", "str", "bb"]]},
        {"provider": "P", "event": "E", "fields": [["n", "u32", "0x3"], ["s", "str", 4]]},
        {"provider": "P", "event": "E", "level": 2, "fields": [["n", "u32", 1], ["s", "str", ""]]},
        {"provider": "P", "event": "E", "level": "2", "fields": [["n", "u32", 1]]},
        {"provider": "P", "event": "E", "activity": act, "fields": [["n", "u32", 1]]},
        {"provider": "P", "event": "E", "fields": [["n", "u32", 1], ["t", "u16[]", [1, 2]]]},
        {"provider": "P", "event": "E", "fields": [["n", "u32", 1], ["t", "u16[]", [3]]]},
        {"provider": "P", "event": "E", "fields": [["p", "struct", [["x", "i8", -1]]]]},
        {"provider": "P", "event": "E"},
        {"provider": "P", "event": "E", "fields": []},
        {"event": "E", "provider": "P", "fields": [["n", "u32", 1], ["s", "str", "a"]]},
    ]]
    got, status = run_batch(lines)
    assert status == 0
    assert got == one_by_one(lines)
    assert got[0] != got[1] and got[0] == got[-1]


@pytest.mark.parametrize("bad", [
    {"provider": "P", "event": "E", "level": True, "fields": [["n", "u32", 1]]},
    {"provider": "P", "event": "E", "level": 1.0, "fields": [["n", "u32", 1]]},
    {"provider": "P", "event": "E", "fields": [["n", "u32", 1, 5]]},
    {"provider": "P", "event": "E", "fields": None},
    {"provider": "P", "event": "E", "fields": [["n", "u32", -1]]},
    {"provider": "P", "event": "E", "fields": [["n", "i8", 2**70]]},
    {"provider": "P", "event": "E", "extra": 1, "fields": [["n", "u32", 1]]},
])
def test_batch_plans_do_not_accept_what_a_fresh_line_refuses(bad):
    """A line shaped almost like a cached one (true == 1 in Python) is still judged alone."""
    good = {"provider": "P", "event": "E", "level": 1, "fields": [["n", "u32", 1]]}
    alone, status_alone = run_batch([json.dumps(bad)])
    after, status_after = run_batch([json.dumps(good), json.dumps(bad)])
    assert after[1:] == alone
    assert status_after == status_alone


def test_only_a_misfit_value_takes_the_general_path(monkeypatch):
    """The plan fell back on any Exception, so a bug in a packer showed only as
    slowness: a value that does not fit goes the general way, anything else raises."""
    taken: list = []

    def general(self, values, activity_ext):
        taken.append(values)
        return b"general"

    monkeypatch.setattr(EventPlan, "_general", general)
    plan = compile_event(Event("Ev", [Field("n", "u32", 1)]))
    assert plan.encode(("7",)) == b"general" and taken == [("7",)]  # a str: a misfit

    class Broken:
        def __index__(self):
            raise RuntimeError("a bug, not a misfit")

    with pytest.raises(RuntimeError, match="a bug"):
        plan.encode((Broken(),))
    assert taken == [("7",)]
