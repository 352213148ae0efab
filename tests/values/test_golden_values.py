"""The formatters reproduce perf-decode's own text in EventHeaderInterceptorLE64.dat.linux.json.

Inputs come from the recording itself, never from its output:

* ``TestProviderDyn`` writes every format with the same raw bytes (``b1one`` = ``01``,
  ``b4big`` = ``f3 f2 f1 f0``, ...); its ``hex_bytes`` events print those bytes, so each
  other format's value is checked against its formatter applied to them.
* ``TestProviderC`` names fields after the C expressions that produced them
  (``TestProviderCommon.h`` in microsoft/LinuxTracepoints), e.g. ``"(-2147483647-1)"``.
"""

from __future__ import annotations

import math
import re
import struct

import pytest

from ehtool.values import text as v
from golden import golden_path

from . import perf_decode_model as model

_LINE = re.compile(rb'^  \{ "n": "([^"]+)", ')
_FIELD = re.compile(rb'"([bs]\d+(?:one|big))": ("[^"]*"|[^,]+),')


@pytest.fixture(scope="module")
def events() -> list[tuple[bytes, bytes]]:
    """(event name, line) for every event line of the golden document."""
    path = golden_path("linuxtracepoints/EventHeaderInterceptorLE64.dat.linux.json")
    out = []
    for line in path.read_bytes().split(b"\n"):
        m = _LINE.match(line)
        if m:
            out.append((m.group(1), line))
    assert len(out) > 300
    return out


def _lines(events, name: bytes) -> list[bytes]:
    return [line for n, line in events if n == name]


def _le(data: bytes, signed: bool = False) -> int:
    return int.from_bytes(data, "little", signed=signed)


# format name -> {value size: formatter of the raw (little-endian) bytes}
_DYN = {
    b"unsigned_int": {n: (lambda b: v.unsigned_json(_le(b))) for n in (1, 2, 4, 8)},
    b"signed_int": {n: (lambda b: v.signed_json(_le(b, True))) for n in (1, 2, 4, 8)},
    b"hex_int": {n: (lambda b: v.hex_int(_le(b))) for n in (1, 2, 4, 8)},
    b"errno": {4: lambda b: v.errno_json(_le(b))},
    b"pid": {4: lambda b: v.signed_json(_le(b, True))},
    b"time": {4: lambda b: v.time32_json(_le(b)), 8: lambda b: v.time64_json(_le(b))},
    b"boolean": {n: (lambda b, n=n: v.boolean_json(_le(b), n)) for n in (1, 2, 4)},
    b"float": {4: lambda b: v.float32_bits_json(_le(b)),
               8: lambda b: v.float64_json(struct.unpack("<d", b)[0])},
    b"hex_bytes": {n: v.hex_bytes for n in (0, 1, 2, 4, 8, 16)},
    b"string8": {n: v.latin1_json for n in (0, 1, 2, 4, 8, 16)},
    b"string_utf": {n: v.utf8_json for n in (0, 1, 2, 4, 8, 16)},
    b"uuid": {16: v.uuid_json},
    b"port": {2: v.port_json},
    b"ip_address": {4: v.ipv4_json, 16: v.ipv6_json},
    b"ip_address_obsolete": {4: v.ipv4_json, 16: v.ipv6_json},
}
for _bom_format in (b"string_utf_bom", b"string_xml", b"string_json"):
    _DYN[_bom_format] = {n: (lambda b: v.bom_string_json(b, 1, False))
                         for n in (0, 1, 2, 4, 8, 16)}


def test_dyn_provider_every_format_and_size(events):
    raw: dict[bytes, bytes] = {}
    for line in _lines(events, b"TestProviderDyn:hex_bytes"):
        for field, text in _FIELD.findall(line):
            raw[field] = bytes.fromhex(text.strip(b'"').decode())
    assert raw[b"b4big"] == b"\xf3\xf2\xf1\xf0"
    assert raw[b"s16big"] == bytes(range(0xF0, 0x100))

    checked = 0
    for fmt, by_size in _DYN.items():
        lines = _lines(events, b"TestProviderDyn:" + fmt)
        assert lines, fmt
        for line in lines:
            for field, text in _FIELD.findall(line):
                data = raw[field]
                render = by_size.get(len(data))
                if render is not None:
                    assert render(data) == text, (fmt, field, data)
                    checked += 1
    assert checked >= 250, checked


def _field(events, event: bytes, name: bytes) -> bytes:
    """The JSON text of field ``name`` in the single event line ``event``."""
    (line,) = _lines(events, event)
    m = re.search(rb'"' + re.escape(name) + rb'": ("(?:[^"\\]|\\.)*"|[^,]+),', line)
    assert m, (event, name)
    return m.group(1)


_F32_NAN = struct.unpack("<f", struct.pack("<I", 0xFFC00000))[0]  # x86 0.0f/0.0f
_F64_NAN = struct.unpack("<d", struct.pack("<Q", 0xFFF8000000000000))[0]

_NAMED = [
    (b"f32", b"f32", v.float32_json(3.14)),
    (b"f32", b"1/3", v.float32_json(1 / 3)),
    (b"f32", b"NaN", v.float32_json(_F32_NAN)),
    (b"f32", b"-Inf", v.float32_json(-math.inf)),
    (b"f64", b"f64", v.float64_json(6.28)),
    (b"f64", b"1/3", v.float64_json(1 / 3)),
    (b"f64", b"NaN", v.float64_json(_F64_NAN)),
    (b"f64", b"-Inf", v.float64_json(-math.inf)),
    (b"b8", b"b0", v.boolean_json(0, 1)),
    (b"b8", b"b1", v.boolean_json(1, 1)),
    (b"b8", b"(255)", v.boolean_json(255, 1)),
    (b"b32", b"(-2147483647-1)", v.boolean_json(0x80000000, 4)),
    (b"ch", b"FE", v.latin1_json(b"\xfe")),
    (b"u16ch", b"FFFE", v.utf16_json(b"\xfe\xff", False)),
    (b"u32ch", b"FFFE", v.utf32_json(b"\xfe\xff\x00\x00", False)),
    (b"u32ch", b"10FFFF", v.utf32_json(b"\xff\xff\x10\x00", False)),
    (b"wch", b"10FFFF", v.utf32_json(b"\xff\xff\x10\x00", False)),
    (b"port", b"port80", v.port_json(b"\x00\x50")),
    (b"port", b"(65535)", v.port_json(b"\xff\xff")),
    (b"errno", b"(-2147483647-1)", v.errno_json(-2147483648)),
    (b"errno", b"1", v.errno_json(1)),
    (b"errno", b"131", v.errno_json(131)),
    (b"t32", b"i32", v.time32_json(2000000000)),
    (b"t32", b"(-2147483647-1)", v.time32_json(-2147483648)),
    (b"t32", b"(2147483647)", v.time32_json(2147483647)),
    (b"t32", b"0", v.time32_json(0)),
    (b"t64", b"i64", v.time64_json(9000000000000000000)),
    (b"t64", b"(-9223372036854775807L-1)", v.time64_json(-9223372036854775808)),
    (b"t64", b"(9223372036854775807L)", v.time64_json(9223372036854775807)),
    (b"t64", b"0", v.time64_json(0)),
    (b"t64", b"-11644473600", v.time64_json(-11644473600)),
    (b"t64", b"-11644473601", v.time64_json(-11644473601)),
    (b"t64", b"910692730085", v.time64_json(910692730085)),
    (b"t64", b"910692730086", v.time64_json(910692730086)),
    (b"guid", b"guid", v.uuid_json(bytes(range(1, 9)) * 2)),
    (b"ipV4", b"ipv4", v.ipv4_json(b"\x7f\x00\x00\x01")),
    (b"ipV4", b"(4294967295U)", v.ipv4_json(b"\xff\xff\xff\xff")),
    (b"ipV6", b"ipv6", v.ipv6_json(bytes(range(1, 17)))),
    (b"ipV6", b"fefe..fe00", v.ipv6_json(b"\xfe" * 15 + b"\x00")),
    (b"sz", b"ch10", v.utf8_json(b"HowAreU8?")),
    (b"wsz", b"wch10", v.utf32_json("Goodbye!!".encode("utf-32-le"), False)),
    (b"sz16", b"u16ch10", v.utf16_json("HowAreU16".encode("utf-16-le"), False)),
    (b"csz32", b"u32ch10", v.utf32_json("HowAr".encode("utf-32-le"), False)),
    (b"bin", b"ch10", v.hex_bytes(b"HowAr")),
    (b"HexBytes", b"NChar32", v.hex_bytes("hjkl".encode("utf-32-le"))),
]


@pytest.mark.parametrize(("event", "name", "ours"), _NAMED,
                         ids=[f"{e.decode()}:{n.decode()}" for e, n, _ in _NAMED])
@pytest.mark.parametrize("provider", [b"TestProviderC:", b"TestProviderCpp:"])
def test_named_inputs(events, provider, event, name, ours):
    assert _field(events, provider + event, name) == ours


@pytest.mark.parametrize(("event", "name", "unit"), [
    (b"u32ch", b"FFFEFDFC", 0xFFFEFDFC),
    (b"wch", b"0x7fffffff", 0x7FFFFFFF),
])
def test_code_points_above_unicode_are_the_documented_difference(events, event, name, unit):
    """perf-decode writes a legacy 6- or 7-byte form (invalid UTF-8); ehtool writes U+FFFD.
    The model reproduces perf-decode's bytes, which shows it is the only difference."""
    data = unit.to_bytes(4, "little")
    golden = _field(events, b"TestProviderC:" + event, name)
    assert model.utf32(data, False, surrogates_escaped=False) == golden
    assert v.utf32_json(data, False) == '"\ufffd"'.encode()
