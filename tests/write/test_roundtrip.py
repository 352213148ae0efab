"""Encoder against the construct grammar and the decoder."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from ehtool.eventheader.encoder import LITTLE, Event, Field, encode
from ehtool.eventheader.grammar import grammar, parse_extensions, parse_metadata
from ehtool.render.eventheader import EventHeaderDecoder
from ehtool.render.style import COMPACT

SCALARS = {
    "u8": st.integers(0, 255), "u16": st.integers(0, 0xFFFF), "u32": st.integers(0, 2**32 - 1),
    "u64": st.integers(0, 2**64 - 1), "i8": st.integers(-128, 127),
    "i32": st.integers(-(2**31), 2**31 - 1), "i64": st.integers(-(2**63), 2**63 - 1),
    "str": st.text(alphabet=st.characters(blacklist_categories=("Cs",),
                                          blacklist_characters="\0"), max_size=20),
    "lstr16": st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=10),
    "f64": st.floats(allow_nan=False, allow_infinity=False), "bool": st.booleans(),
}
NAMES = st.text(alphabet="abcdefghij", min_size=1, max_size=6)


@st.composite
def fields(draw, depth=0):
    out = []
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from([*SCALARS, "array", "struct"] if depth < 2 else [*SCALARS]))
        name = draw(NAMES)
        if kind == "struct":
            out.append(("struct", name, draw(fields(depth + 1))))
        elif kind == "array":
            t = draw(st.sampled_from(["u16", "i32", "str"]))
            out.append(("array", name, t, draw(st.lists(SCALARS[t], max_size=4))))
        else:
            out.append((kind, name, draw(SCALARS[kind])))
    return out


def to_fields(spec) -> list[Field]:
    result = []
    for item in spec:
        if item[0] == "struct":
            result.append(Field(item[1], "struct", to_fields(item[2])))
        elif item[0] == "array":
            result.append(Field(item[1], f"{item[2]}[]", item[3]))
        else:
            result.append(Field(item[1], item[0], item[2]))
    return result


def expected(spec) -> list:
    out = []
    for item in spec:
        if item[0] == "struct":
            out.append([item[1], expected(item[2])])
        elif item[0] == "array":
            out.append([item[1], item[3]])
        else:
            out.append([item[1], item[2]])
    return out


@settings(max_examples=300, deadline=None)
@given(fields(), st.integers(1, 255), st.integers(0, 255))
def test_encode_decode_round_trip(spec, level, opcode):
    data = encode(Event("Ev", to_fields(spec), level=level, opcode=opcode))
    ev = EventHeaderDecoder(COMPACT).decode(f"P_L{level:x}K1", data)
    assert ev is not None and ev.opcode == opcode
    pairs = json.loads(b"{" + ev.fields[1:] + b"}", object_pairs_hook=lambda p: [list(x)
                                                                                 for x in p])

    def norm(value):
        if isinstance(value, list) and value and all(isinstance(v, list) and len(v) == 2
                                                     and isinstance(v[0], str) for v in value):
            return [[k, norm(v)] for k, v in value]
        return value

    assert same(norm(pairs), norm(expected(spec)))


def same(got, want) -> bool:
    """Equal, where a float written in C++ ``to_chars`` fixed form may read back as an int."""
    if isinstance(want, float):
        return isinstance(got, int | float) and float(got) == want
    if isinstance(want, list):
        return isinstance(got, list) and len(got) == len(want) and all(
            same(g, w) for g, w in zip(got, want, strict=True))
    return got == want


def test_encoded_metadata_agrees_with_the_grammar():
    f = [Field("a", "u32", 1, tag=5), Field("s", "struct", [Field("b", "str", "x")]),
         Field("c", "x16[3]", [1, 2, 3]), Field("v", "guid[]", [bytes(16)])]
    data = encode(Event("Ev;k=v", f, level=4))
    g = grammar(LITTLE)
    header = g["header"].parse(data[:8])
    assert header.flags & 0x04 and header.level == 4
    metadata, activity, pos = parse_extensions(data, 8, LITTLE)
    assert activity is None
    name, defs = parse_metadata(metadata, LITTLE)
    assert name == b"Ev;k=v"
    assert [(d.name, d.encoding, d.format, d.tag, d.array) for d in defs] == [
        (b"a", 4, 0, 5, None), (b"s", 1, 1, 0, None), (b"c", 3, 3, 0, 3), (b"v", 6, 15, 0, 0)]
    assert [(m.name, m.encoding) for m in defs[1].members] == [(b"b", 7)]
    # the payload follows the metadata extension
    assert data[pos:pos + 4] == (1).to_bytes(4, "little")
