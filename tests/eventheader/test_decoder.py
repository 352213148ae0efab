"""Hand-built events: reference enumerator rules, limits, fallbacks, extensions, caches."""

from __future__ import annotations

import json
import struct

import pytest

from ehtool.eventheader.decoder import Fields, TypedDecoder
from ehtool.eventheader.enums import FieldEncoding as E
from ehtool.eventheader.enums import FieldFormat as F
from ehtool.eventheader.grammar import parse_metadata
from ehtool.render.eventheader import EventHeaderDecoder, EventHeaderError
from ehtool.render.style import COMPACT, SPACED

from .helpers import event, fd

TP = "Prov_L5K1"


def fields(evfields: list[dict], payload: bytes, style=SPACED, **kw) -> bytes:
    ev = EventHeaderDecoder(style).decode(kw.pop("tp", TP), event(evfields, payload, **kw))
    assert ev is not None
    return ev.fields


def fails(evfields: list[dict], payload: bytes, match: str | None = None, **kw) -> None:
    with pytest.raises(EventHeaderError, match=match):
        EventHeaderDecoder(SPACED).decode(TP, event(evfields, payload, **kw))


def nested(depth: int, leaf: dict) -> list[dict]:
    return [fd(b"s%d" % i, E.STRUCT, 1) for i in range(1, depth + 1)] + [leaf]


# -- structs and arrays ------------------------------------------------------------------

def test_structs_nest_eight_deep_not_nine():
    got = fields(nested(8, fd(b"x", E.VALUE8)), b"\x07")
    assert got == b', "s1": ' + b'{ "s%d": ' * 7 % tuple(range(2, 9)) + b'{ "x": 7' + b" }" * 8
    fails(nested(9, fd(b"x", E.VALUE8)), b"\x07", "nested deeper than 8")


def test_too_deep_struct_inside_an_empty_array_is_never_reached():
    defs = [fd(b"a", E.STRUCT, 1, varray=True), *nested(9, fd(b"x", E.VALUE8)),
            fd(b"after", E.VALUE8)]
    assert fields(defs, b"\0\0\x05") == b', "a": [ ], "after": 5'
    fails(defs, b"\1\0\x07\x05", "nested deeper than 8")


def test_zero_length_array_of_structs_consumes_its_member_definitions():
    defs = [fd(b"a", E.STRUCT, 2, varray=True), fd(b"m1", E.VALUE8),
            fd(b"m2", E.ZSTRING_CHAR8), fd(b"after", E.VALUE16)]
    assert fields(defs, b"\0\0\x34\x12") == b', "a": [ ], "after": 4660'
    assert fields(defs, b"\2\0\1x\0\2y\0\x34\x12") == (
        b', "a": [ { "m1": 1, "m2": "x" }, { "m1": 2, "m2": "y" } ], "after": 4660')
    assert fields(defs, b"\2\0\1x\0\2y\0\x34\x12", COMPACT) == (
        b',"a":[{"m1":1,"m2":"x"},{"m1":2,"m2":"y"}],"after":4660')


def test_struct_definitions_may_run_past_the_end_of_the_metadata():
    assert fields([fd(b"S", E.STRUCT, 5), fd(b"x", E.VALUE8)], b"\1") == b', "S": { "x": 1 }'
    assert fields([fd(b"x", E.VALUE8), fd(b"S", E.STRUCT, 3)], b"\1") == (
        b', "x": 1, "S": { }')


def test_errors_that_count_only_where_the_enumeration_goes():
    bad = [fd(b"inv", E.INVALID), fd(b"c0", E.VALUE8, count=0), fd(b"s0", E.STRUCT, 0),
           fd(b"enc20", 20)]
    for b in bad:
        defs = [fd(b"a", E.STRUCT, 1, varray=True), b, fd(b"z", E.VALUE8)]
        assert fields(defs, b"\0\0\x09") == b', "a": [ ], "z": 9'
        fails(defs, b"\1\0\0\0\x09")
        fails([b, fd(b"z", E.VALUE8)], b"\0\0\x09")


def test_array_of_structs_with_no_members():
    defs = [fd(b"e", E.STRUCT, 0, count=2), fd(b"z", E.VALUE8)]
    assert fields(defs, b"\x09") == b', "e": [ { }, { } ], "z": 9'


def test_malformed_metadata_fails_every_event():
    for meta_fields in ([fd(b"a", E.VALUE8 | 0x20 | 0x40)],):
        fails(meta_fields, b"\0" * 8, "both array flags")
    data = bytearray(event([fd(b"a", E.VALUE8)], b"\1"))
    # cut the metadata after the field name: no encoding byte
    meta_start = 12
    size = struct.unpack_from("<H", data, 8)[0]
    broken = bytes(data[:8]) + struct.pack("<HH", size - 1, 1) + bytes(
        data[meta_start:meta_start + size - 1]) + b"\1"
    with pytest.raises(EventHeaderError, match="bad metadata"):
        EventHeaderDecoder(SPACED).decode(TP, broken)


def test_top_level_field_limit():
    defs = [fd(b"f%d" % i, E.VALUE8) for i in range(255)]
    got = fields(defs, bytes(range(255)))
    assert got.count(b'"f') == 255 and got.endswith(b', "f254": 254')
    fails([*defs, fd(b"x", E.VALUE8)], bytes(256), "255 top-level")


@pytest.mark.parametrize("varray", [True, False])
def test_move_next_limit_of_simple_arrays(varray):
    # states: ArrayBegin + n elements + ArrayEnd; perf-decode allows 4096 MoveNext calls,
    # the last of which finds the end of the event: n + 2 <= 4095
    def data(n: int) -> tuple[list[dict], bytes]:
        if varray:
            return [fd(b"a", E.VALUE8, varray=True)], struct.pack("<H", n) + bytes(n)
        return [fd(b"a", E.VALUE8, count=n)], bytes(n)

    assert fields(*data(4093)).count(b"0") == 4093
    fails(*data(4094), "4096 enumeration steps")


def test_move_next_limit_of_struct_arrays():
    # each element: StructBegin + 1 member + StructEnd
    defs = [fd(b"a", E.STRUCT, 1, varray=True), fd(b"m", E.VALUE8)]
    assert fields(defs, struct.pack("<H", 1364) + bytes(1364)).count(b'"m"') == 1364
    fails(defs, struct.pack("<H", 1365) + bytes(1365), "4096 enumeration steps")
    # empty structs consume no data: the limit still stops the loop
    empty = [fd(b"a", E.STRUCT, 3, varray=True)]
    fails(empty, struct.pack("<H", 65535), "4096 enumeration steps")
    outer = [fd(b"o", E.STRUCT, 1, count=65535), fd(b"i", E.STRUCT, 0, count=65535)]
    fails(outer, b"", "4096 enumeration steps")


def test_short_and_long_constant_arrays_and_variable_arrays():
    for n in (1, 16, 17, 40):
        values = list(range(1000, 1000 + n))
        want = b", ".join(b'"0x%X"' % x for x in values)
        got = fields([fd(b"a", E.VALUE16, F.HEX_INT, count=n)], struct.pack(f"<{n}H", *values))
        assert got == b', "a": [ ' + want + b" ]"
        got = fields([fd(b"a", E.VALUE16, F.HEX_INT, varray=True)],
                     struct.pack(f"<H{n}H", n, *values))
        assert got == b', "a": [ ' + want + b" ]"
    assert fields([fd(b"a", E.VALUE32, varray=True)], b"\0\0") == b', "a": [ ]'
    assert fields([fd(b"a", E.VALUE16, F.PORT, varray=True)], b"\2\0\x00\x50\x1f\x90") == (
        b', "a": [ 80, 8080 ]')
    assert fields([fd(b"g", E.VALUE128, F.UUID, count=20)], bytes(range(16)) * 20).count(
        b'"00010203-0405-0607-0809-0a0b0c0d0e0f"') == 20
    assert fields([fd(b"s", E.ZSTRING_CHAR8, count=2)], b"ab\0\0") == b', "s": [ "ab", "" ]'


# -- strings --------------------------------------------------------------------------

def test_zero_terminated_strings_step_by_unit_from_the_field_start():
    # "a\0" "\0b" "\0\0": the zero bytes at offsets 1-2 are not a unit
    assert fields([fd(b"w", E.ZSTRING_CHAR16)], b"a\0\0b\0\0") == (
        b', "w": "a' + "\u6200".encode() + b'"')
    assert fields([fd(b"w", E.ZSTRING_CHAR32)], b"a\0\0\0\0\0\0\0") == b', "w": "a"'
    assert fields([fd(b"w", E.ZSTRING_CHAR16), fd(b"x", E.VALUE8)], b"\0\0\x05") == (
        b', "w": "", "x": 5')
    fails([fd(b"w", E.ZSTRING_CHAR8)], b"abc", "no terminator")
    fails([fd(b"w", E.ZSTRING_CHAR16)], b"a\0b", "no terminator")
    fails([fd(b"w", E.ZSTRING_CHAR32)], b"a\0\0\0\0\0\0", "no terminator")


def test_counted_strings_count_code_units():
    assert fields([fd(b"s", E.STRING_LENGTH16_CHAR16)], b"\2\0h\0i\0") == b', "s": "hi"'
    assert fields([fd(b"s", E.STRING_LENGTH16_CHAR32)], b"\1\0h\0\0\0") == b', "s": "h"'
    assert fields([fd(b"b", E.BINARY_LENGTH16_CHAR8)], b"\3\0abc") == b', "b": "61 62 63"'
    fails([fd(b"s", E.STRING_LENGTH16_CHAR16)], b"\3\0h\0i\0", "past the end")
    fails([fd(b"s", E.STRING_LENGTH16_CHAR8)], b"\1", "past the end")


@pytest.mark.parametrize("little", [True, False])
def test_counted_char8_with_numeric_formats(little):
    order = "<" if little else ">"

    def one(enc: int, fmt: int, value: bytes) -> bytes:
        return fields([fd(b"v", enc, fmt)], struct.pack(order + "H", len(value)) + value,
                      little=little)

    n16 = struct.pack(order + "H", 4660)
    assert one(E.STRING_LENGTH16_CHAR8, F.UNSIGNED_INT, b"") == b', "v": null'
    assert one(E.STRING_LENGTH16_CHAR8, F.UNSIGNED_INT, n16) == b', "v": 4660'
    assert one(E.STRING_LENGTH16_CHAR8, F.UNSIGNED_INT, b"abc") == b', "v": "abc"'
    assert one(E.BINARY_LENGTH16_CHAR8, F.SIGNED_INT, b"\xff") == b', "v": -1'
    assert one(E.BINARY_LENGTH16_CHAR8, F.SIGNED_INT, b"abc") == b', "v": "61 62 63"'
    assert one(E.BINARY_LENGTH16_CHAR8, F.UUID, b"") == b', "v": null'
    assert one(E.BINARY_LENGTH16_CHAR8, F.PORT, b"\x1f\x90") == b', "v": 8080'
    assert one(E.BINARY_LENGTH16_CHAR8, F.IP_ADDRESS, b"\x7f\0\0\1") == b', "v": "127.0.0.1"'
    assert one(E.BINARY_LENGTH16_CHAR8, F.BOOLEAN, b"\1") == b', "v": true'
    assert one(E.BINARY_LENGTH16_CHAR8, F.STRING_UTF, b"hi") == b', "v": "hi"'


@pytest.mark.parametrize("little", [True, False])
def test_fixed_values_in_both_byte_orders(little):
    o = "<" if little else ">"
    defs = [fd(b"i8", E.VALUE8, F.SIGNED_INT), fd(b"u16", E.VALUE16),
            fd(b"port", E.VALUE16, F.PORT), fd(b"x32", E.VALUE32, F.HEX_INT),
            fd(b"e", E.VALUE32, F.ERRNO), fd(b"t", E.VALUE32, F.TIME),
            fd(b"b", E.VALUE32, F.BOOLEAN), fd(b"f", E.VALUE64, F.FLOAT),
            fd(b"ip", E.VALUE32, F.IP_ADDRESS), fd(b"c", E.VALUE8, F.STRING8),
            fd(b"u8utf", E.VALUE8, F.STRING_UTF), fd(b"ch", E.VALUE16, F.STRING_UTF),
            fd(b"hb", E.VALUE32, F.HEX_BYTES), fd(b"v6", E.VALUE128, F.IP_ADDRESS),
            fd(b"i64", E.VALUE64, F.PID)]
    payload = (struct.pack(o + "bHH", -5, 60000, 0) + b"\x1f\x90"[:0]
               + struct.pack(o + "IIiId", 0xEA60, 1, 86400, 2, 0.5)
               + b"\x0a\0\0\1" + b"\xe9" + b"A" + struct.pack(o + "H", 0x263A)
               + b"\1\2\3\4" + bytes(15) + b"\1" + struct.pack(o + "q", -1))
    # port is always network order: bytes 00 00 -> 0
    got = fields(defs, payload, little=little)
    assert got == (
        b', "i8": -5, "u16": 60000, "port": 0, "x32": "0xEA60", "e": "EPERM(1)", '
        b'"t": "1970-01-02T00:00:00", "b": 2, "f": 0.5, "ip": "10.0.0.1", '
        b'"c": "' + "\xe9".encode() + b'", "u8utf": 65, "ch": "' + "\u263a".encode()
        + b'", "hb": "01 02 03 04", "v6": "::1", "i64": 18446744073709551615')


def test_trailing_padding_and_pointer_size_flag_do_not_matter():
    defs = [fd(b"x", E.VALUE32), fd(b"s", E.ZSTRING_CHAR8)]
    base = fields(defs, b"\1\0\0\0hi\0")
    assert fields(defs, b"\1\0\0\0hi\0" + bytes(7)) == base == b', "x": 1, "s": "hi"'
    assert fields(defs, b"\1\0\0\0hi\0", flags=0x06) == base


def test_field_names_are_verbatim_with_tags_and_percent_signs():
    defs = [fd(b"100%d;a=b", E.VALUE8, tag=0xBEEF), fd(b'q"\\', E.VALUE8),
            fd(b"five", E.VALUE8), fd(b"five", E.VALUE8)]
    assert fields(defs, b"\1\2\5\5") == (
        b', "100%d;a=b;tag=0xBEEF": 1, "q\\"\\\\": 2, "five": 5, "five": 5')
    assert fields(defs, b"\1\2\5\5", COMPACT) == (
        b',"100%d;a=b":1,"q\\"\\\\":2,"five":5,"five":5')


# -- header, name, extensions ----------------------------------------------------------

def test_header_meta_and_name_attributes():
    data = event([fd(b"x", E.VALUE8)], b"\1", name=b"Ev;k=v;;w", version=3, ident=1000,
                 tag=0x12, opcode=2, level=4)
    ev = EventHeaderDecoder(SPACED).decode("My_Prov_L4Kf00Gabc", data)
    assert ev.name_json == b'"My_Prov:Ev"'
    assert ev.meta == (b', "id": 1000, "version": 3, "level": 4, "keyword": "0xF00", '
                       b'"opcode": 2, "tag": "0x12"')
    assert (ev.provider, ev.event_name, ev.attributes, ev.options) == (
        "My_Prov", "Ev", ";k=v;;w", "Gabc")
    assert (ev.level, ev.keyword, ev.id, ev.version, ev.opcode, ev.tag, ev.flags) == (
        4, 0xF00, 1000, 3, 2, 0x12, 0x07)
    assert ev.activity is None and ev.related_activity is None


@pytest.mark.parametrize("after", [False, True])
@pytest.mark.parametrize("size", [16, 32])
def test_activity_ids(after, size):
    act = bytes(range(size))
    decoder = EventHeaderDecoder(SPACED)
    data = event([fd(b"x", E.VALUE8)], b"\1", activity=act, activity_after=after, opcode=1)
    want = (b', "opcode": 1, "activity": "00010203-0405-0607-0809-0a0b0c0d0e0f"'
            + (b', "relatedActivity": "10111213-1415-1617-1819-1a1b1c1d1e1f"' if size == 32
               else b""))
    for _ in range(3):  # first decode, then the cached path
        ev = decoder.decode("P_L5K0", data)
        assert ev.meta == b', "level": 5' + want and ev.fields == b', "x": 1'
        assert ev.activity == act[:16]
        assert ev.related_activity == (act[16:] if size == 32 else None)
    other = bytes(range(100, 100 + size))
    data2 = event([fd(b"x", E.VALUE8)], b"\2", activity=other, activity_after=after, opcode=1)
    ev = decoder.decode("P_L5K0", data2)
    assert ev.activity == other[:16] and ev.fields == b', "x": 2'


def test_unknown_extensions_are_skipped():
    data = event([fd(b"x", E.VALUE8)], b"\1", extra_ext=b"12345")
    assert EventHeaderDecoder(SPACED).decode(TP, data).fields == b', "x": 1'


def _raw(flags: int, level: int, exts: list[tuple[int, bytes]], payload: bytes = b"") -> bytes:
    out = struct.pack("<BBHHBB", flags, 0, 0, 0, 0, level)
    for kind, body in exts:
        out += struct.pack("<HH", len(body), kind) + body
    return out + payload


@pytest.mark.parametrize(("name", "data"), [
    (TP, b"\x07\0\0\0\0\0\0"),  # shorter than a header
    (TP, _raw(0x0F, 5, [(1, b"E\0")])),  # unknown flag
    ("NoUnderscore", _raw(0x07, 5, [(1, b"E\0")])),
    ("P_K1", _raw(0x07, 5, [(1, b"E\0")])),  # no level
    ("P_L5", _raw(0x07, 5, [(1, b"E\0")])),  # no keyword
    ("P_L5K1g", _raw(0x07, 5, [(1, b"E\0")])),  # option not starting uppercase
    ("P_L4K1", _raw(0x07, 5, [(1, b"E\0")])),  # level mismatch
    (TP, _raw(0x03, 5, [])),  # no extension
    (TP, _raw(0x07, 5, [(2, bytes(16))])),  # no metadata
    (TP, _raw(0x07, 5, [(0, b"E\0")])),  # invalid kind
    (TP, _raw(0x07, 5, [(0x8001, b"E\0"), (1, b"F\0")])),  # two metadata
    (TP, _raw(0x07, 5, [(1, b"E")])),  # event name without NUL
    (TP, _raw(0x07, 5, [(0x8002, bytes(20)), (1, b"E\0")])),  # activity of 20 bytes
    (TP, _raw(0x07, 5, [(1, b"E\0")])[:-1]),  # extension past the end
])
def test_not_eventheader_events_fall_back(name, data):
    decoder = EventHeaderDecoder(SPACED)
    assert decoder.decode(name, data) is None
    assert decoder.decode(name, data) is None  # and not cached as anything else


def test_events_that_share_header_bytes_but_not_metadata():
    decoder = EventHeaderDecoder(SPACED)
    a = event([fd(b"aa", E.VALUE8)], b"\1", name=b"E1")
    b = event([fd(b"bb", E.VALUE8)], b"\2", name=b"E2")
    c = event([fd(b"cc", E.VALUE8)], b"\3", name=b"E3")
    assert a[:12] == b[:12] == c[:12]
    for _ in range(3):
        assert decoder.decode(TP, a).fields == b', "aa": 1'
        assert decoder.decode(TP, b).fields == b', "bb": 2'
        assert decoder.decode(TP, c).name_json == b'"Prov:E3"'
    for cut in range(8, len(a) - 1):  # cut before the payload: an extension past the end
        assert decoder.decode(TP, a[:cut]) is None
    act = [event([fd(n, E.VALUE8)], b"\1", name=n, activity=bytes(16)) for n in (b"A", b"B")]
    for _ in range(3):
        assert [decoder.decode(TP, x).name_json for x in act] == [b'"Prov:A"', b'"Prov:B"']


def test_offset_and_memoryview_input():
    data = b"COMMON!!" + event([fd(b"x", E.VALUE8)], b"\1")
    decoder = EventHeaderDecoder(SPACED)
    for _ in range(2):
        assert decoder.decode(TP, memoryview(data), 8).fields == b', "x": 1'
    with pytest.raises(EventHeaderError, match="past the end"):
        decoder.decode(TP, data[:-1], 8)


def test_values_keep_order_duplicates_and_nesting():
    defs = [fd(b"five", E.VALUE8), fd(b"S", E.STRUCT, 2), fd(b"h", E.VALUE16, F.HEX_INT),
            fd(b"a", E.ZSTRING_CHAR8, varray=True), fd(b"five", E.VALUE8)]
    data = event(defs, b"\5\x10\0\2\0x\0y\0\5")
    ev = EventHeaderDecoder(SPACED).decode(TP, data)
    json.loads(b"{" + ev.fields[2:] + b"}")
    typed = TypedDecoder().decode(TP, data)
    assert list(typed.fields) == [("five", 5), ("S", Fields([("h", 16), ("a", ["x", "y"])])),
                                  ("five", 5)]
    assert typed.fields.getall("five") == [5, 5] and typed.fields["S"]["h"] == 16
    assert (typed.provider, typed.name, typed.level) == ("Prov", "Ev", 5)


@pytest.mark.parametrize("depth", [9, 500, 980, 3000])
def test_deep_struct_nesting_fails_the_event_not_the_decoder(depth):
    """Issue 13 item 4: nesting comes from the input; ~980 levels (3 KB of metadata) made
    the tree builder recurse until RecursionError and killed the whole decode."""
    defs = [fd(b"s%d" % i, E.STRUCT, 1) for i in range(depth)] + [fd(b"x", E.VALUE8)]
    data = event(defs, b"\1")
    with pytest.raises(EventHeaderError, match="nested deeper"):
        EventHeaderDecoder(SPACED).decode(TP, data)
    with pytest.raises(EventHeaderError, match="nested deeper"):
        TypedDecoder().decode(TP, data)
    name, tree = parse_metadata(data[12:12 + struct.unpack_from("<H", data, 8)[0]], True)
    for _ in range(depth):
        (tree,) = [tree[0].members] if tree[0].members else [tree]
    assert tree[0].name == b"x"


@pytest.mark.parametrize("only", [None, frozenset(), frozenset({b"a"})])
def test_arrays_of_structs_stop_at_the_move_next_limit(only):
    """a: struct[65535] of one member b: struct[65535] of none, with no payload: a
    26-byte event asks for 65535 x 65535 empty structs. The typed walk counts their
    MoveNext steps as the JSON renderer does and stops at its limit (it walked them all:
    query and the text format hung, and query ignored SIGTERM meanwhile)."""
    fields = [fd(b"a", E.STRUCT, 1, count=65535), fd(b"b", E.STRUCT, 0, count=65535)]
    data = event(fields, b"")
    with pytest.raises(EventHeaderError, match="more than 4096 enumeration steps"):
        TypedDecoder().decode("P_L5K1", data, 0, only)
