"""MoveNext step accounting: the typed layer fails an event for too many steps exactly
where the JSON renderer does (static steps from the metadata, the rest from the data),
whether it decodes every field, none, or some."""

from __future__ import annotations

import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ehtool.eventheader.decoder import TypedDecoder
from ehtool.eventheader.enums import FieldEncoding as E
from ehtool.eventheader.grammar import parse_metadata, static_steps
from ehtool.render.eventheader import EventHeaderDecoder, EventHeaderError
from ehtool.render.style import SPACED

from .helpers import event, fd, recording

TP = "P_L5K1"
ONLY = [None, frozenset(), frozenset({b"a"})]


def verdict(decode) -> str:
    """ok, none, steps (too many MoveNext steps) or error (any other)."""
    try:
        got = decode()
    except EventHeaderError as exc:
        return "steps" if "enumeration steps" in str(exc) else "error"
    return "none" if got is None else "ok"


def verdicts(data: bytes) -> tuple[str, list[str]]:
    """The JSON renderer's verdict, and the typed decoder's for each of ONLY."""
    rendered = verdict(lambda: EventHeaderDecoder(SPACED).decode(TP, data))
    return rendered, [verdict(lambda only=only: TypedDecoder().decode(TP, data, 0, only))
                      for only in ONLY]


def u16(n: int) -> bytes:
    return struct.pack("<H", n)


# (fields, payload, the verdict): at most 4095 steps, the last MoveNext finds the end
CASES = {
    "constant array at the limit": ([fd(b"a", E.VALUE8, count=4093)], bytes(4093), "ok"),
    "constant array past it": ([fd(b"a", E.VALUE8, count=4094)], bytes(4094), "steps"),
    "variable array at the limit": ([fd(b"a", E.VALUE8, varray=True)],
                                    u16(4093) + bytes(4093), "ok"),
    "variable array past it": ([fd(b"a", E.VALUE8, varray=True)],
                               u16(4094) + bytes(4094), "steps"),
    "two variable arrays past it together": (
        [fd(b"a", E.VALUE8, varray=True), fd(b"b", E.VALUE16, varray=True)],
        u16(2046) + bytes(2046) + u16(2046) + bytes(4092), "steps"),
    "two variable arrays at the limit together": (
        [fd(b"a", E.VALUE8, varray=True), fd(b"b", E.VALUE16, varray=True)],
        u16(2045) + bytes(2045) + u16(2046) + bytes(4092), "ok"),
    "variable strings": ([fd(b"a", E.ZSTRING_CHAR8, varray=True)],
                         u16(4094) + b"\0" * 4094, "steps"),
    # each element: begin, end, the member (1) and its array (2 + its count)
    "arrays inside an array of structs": (
        [fd(b"a", E.STRUCT, 1, count=2), fd(b"m", E.VALUE8, varray=True)],
        (u16(2043) + bytes(2043)) * 2, "steps"),
    "arrays inside an array of structs, under": (
        [fd(b"a", E.STRUCT, 1, count=2), fd(b"m", E.VALUE8, varray=True)],
        (u16(2042) + bytes(2042)) * 2, "ok"),
    # too many static steps, nothing counted from the data: fails before any bounds
    "static steps, then data too short": (
        [fd(b"a", E.VALUE8, count=4094), fd(b"b", E.VALUE32)], bytes(10), "steps"),
    # with a variable count, the bounds are checked first (the JSON renderer's order)
    "static steps and a variable count, data too short": (
        [fd(b"a", E.VALUE8, count=4094), fd(b"b", E.VALUE8, varray=True)], bytes(10),
        "error"),
    "static steps and a variable count, data whole": (
        [fd(b"a", E.VALUE8, count=4094), fd(b"b", E.VALUE8, varray=True)],
        bytes(4094) + u16(0), "steps"),
}


@pytest.mark.parametrize("case", CASES)
def test_typed_decoder_fails_where_the_renderer_does(case, impl):
    fields, payload, expected = CASES[case]
    rendered, typed = verdicts(event(fields, payload))
    assert rendered == expected
    assert typed == [expected] * len(ONLY)


def test_static_steps_count_each_value_struct_and_array():
    # a: u8, s: struct{b: u8[3], c: u8[]}, d: struct[2]{e: u8}
    fields = [fd(b"a", E.VALUE8), fd(b"s", E.STRUCT, 2), fd(b"b", E.VALUE8, count=3),
              fd(b"c", E.VALUE8, varray=True), fd(b"d", E.STRUCT, 1, count=2),
              fd(b"e", E.VALUE8)]
    data = event(fields, b"")
    _, defs = parse_metadata(data[12:12 + struct.unpack_from("<H", data, 8)[0]], True)
    assert static_steps(defs) == 1 + (2 + (2 + 3) + 2) + 2


@st.composite
def layouts(draw) -> tuple[list[dict], bytes]:
    """Fields whose steps land near the limit, and a payload that holds them (or is cut)."""
    fields: list[dict] = []
    payload = b""
    for i in range(draw(st.integers(1, 3))):
        name = b"a" if i == 0 else b"f%d" % i
        kind = draw(st.sampled_from(["carray", "varray", "structs", "value"]))
        n = draw(st.sampled_from([0, 1, 700, 1364, 2046, 2047, 4093, 4094, 5000]))
        if kind == "value":
            fields.append(fd(name, E.VALUE16))
            payload += bytes(2)
        elif kind == "carray":
            n = max(n, 1)
            fields.append(fd(name, E.VALUE8, count=n))
            payload += bytes(n)
        elif kind == "varray":
            fields.append(fd(name, E.VALUE8, varray=True))
            payload += u16(n) + bytes(n)
        else:
            m = draw(st.integers(0, 3))
            fields.append(fd(name, E.STRUCT, 1, varray=True))
            fields.append(fd(b"m", E.VALUE8, varray=True))
            payload += u16(n // 8) + (u16(m) + bytes(m)) * (n // 8)
    if draw(st.booleans()):
        payload = payload[:draw(st.integers(0, len(payload)))]
    return fields, payload


@settings(max_examples=200, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(layouts())
def test_random_step_counts_agree_with_the_renderer(impl, layout):
    fields, payload = layout
    rendered, typed = verdicts(event(fields, payload))
    assert typed == [rendered] * len(ONLY)


def test_decode_query_and_open_agree_on_an_event_of_too_many_steps(tmp_path):
    """Events within their data but past the limit by long arrays: decode, query and
    ``ehtool.open`` all show them as plain tracepoints (query and open showed them as
    EventHeader events: the typed layer counted only arrays of structs), and query's
    ``error`` column says why."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    import ehtool

    repo = Path(__file__).resolve().parents[2]
    path = tmp_path / "steps.data"
    recording(path, [event([fd(b"a", E.VALUE8, count=100)], bytes(100), name=b"Ok"),
                     event([fd(b"a", E.VALUE8, count=5000)], bytes(5000), name=b"Const"),
                     event([fd(b"a", E.VALUE8, varray=True)], u16(5000) + bytes(5000),
                           name=b"Var")])
    expected = ["MyProvider:Ok"] + ["user_events:MyProvider_L5K1"] * 2

    def ehtool_cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "ehtool", *args, str(path)],
                              capture_output=True, cwd=repo, check=True)

    done = ehtool_cli("decode", "--format", "jsonl")
    assert [json.loads(line)["n"] for line in done.stdout.splitlines()] == expected
    assert done.stderr.count(b"more than 4096 enumeration steps") == 2
    with ehtool.open(path) as events:
        assert [e.name for e in events] == expected
    pytest.importorskip("duckdb")
    done = ehtool_cli("query", "--format", "jsonl",
                      "select provider || ':' || event as n, error from events")
    assert [json.loads(line) for line in done.stdout.splitlines()] == [
        {"n": n, "error": None if n == expected[0] else "more than 4096 enumeration steps"}
        for n in expected]


def test_an_empty_array_of_structs_nested_too_deep_is_never_entered(impl):
    """An array of structs nine deep fails only with elements, as the renderer says (the
    typed walk failed it for being there)."""
    nest = [fd(b"a", E.STRUCT, 1)] + [fd(b"s%d" % i, E.STRUCT, 1) for i in range(1, 8)]
    for varray, payload, expected in ((True, u16(0), "ok"), (True, u16(1) + b"\1", "error"),
                                      (False, b"\1", "error")):
        deep = fd(b"x", E.STRUCT, 1, varray=True) if varray else fd(b"x", E.STRUCT, 1, count=1)
        rendered, typed = verdicts(event([*nest, deep, fd(b"m", E.VALUE8)], payload))
        assert rendered == expected
        assert typed == [expected] * len(ONLY)
