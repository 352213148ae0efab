"""The C renderer's own writers of errno, time, float and IP values (``put_errno``,
``put_time_seconds``, ``put_float32/64``, ``put_ip`` in ehtool/_speedups.c) agree with
the rulebook's Python formatters (``Kind.from_bytes``) byte for byte: edge values, random
bits, both byte orders. Values the C code leaves to Python must still come out right,
and the common ones must not be left (that is the point of the C writers)."""

from __future__ import annotations

import math
import random
import struct

import pytest

from ehtool import speedups as sp
from ehtool.eventheader.enums import FieldFormat as F
from ehtool.eventheader.kinds import fixed_kind
from impl import require_speedups


class _Counting:
    """The Python formatter, counting the values the C code hands it."""

    def __init__(self, fn):
        self.fn = fn
        self.calls = 0

    def __call__(self, data: bytes) -> bytes:
        self.calls += 1
        return self.fn(data)


def _render(kind, values: list[bytes]) -> tuple[list[bytes], int]:
    """Each value rendered alone by a one-op C plan; the number deferred to Python."""
    mod = sp.load()
    python = _Counting(kind.from_bytes)
    op = (sp.OP_FIXED, kind.size, kind.c_kind, python)
    if kind.c_table is not None:
        op += (kind.c_table,)

    def fallback(data, p, o):
        raise AssertionError("the whole event was handed back")
    render = mod.Plan([op], kind.little, 100, fallback).render
    return [render(v, 0, 0) for v in values], python.calls


def _check(kind, values: list[bytes], max_deferred: float) -> None:
    got, deferred = _render(kind, values)
    for raw, text in zip(values, got, strict=True):
        assert text == kind.from_bytes(raw), (kind.name, kind.size, raw.hex(), text)
    assert deferred <= max_deferred * len(values), (kind.name, deferred)


@pytest.fixture(autouse=True)
def _native(monkeypatch):
    monkeypatch.delenv("EHTOOL_PURE", raising=False)
    require_speedups()


def _pack(code: str, little: bool, xs) -> list[bytes]:
    s = struct.Struct(("<" if little else ">") + code)
    return [s.pack(x) for x in xs]


@pytest.mark.parametrize("little", [True, False])
def test_errno(little):
    kind = fixed_kind(4, F.ERRNO, little)
    assert kind.c_kind == sp.FX_ERRNO
    rng = random.Random(1)
    xs = [*range(0, 140), 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0xFFFFFFFE,
          *(rng.getrandbits(32) for _ in range(2000))]
    _check(kind, _pack("I", little, xs), 0)


@pytest.mark.parametrize("size", [4, 8])
@pytest.mark.parametrize("little", [True, False])
def test_time(size, little):
    kind = fixed_kind(size, F.TIME, little)
    assert kind.c_kind == sp.FX_TIME
    rng = random.Random(size)
    bits = size * 8
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    edges = [0, 1, -1, 86399, 86400, -86400, -86401, 951782400, 951868800, 4107542400,
             -62135596800, -62135596801, 253402300799, 253402300800, lo, hi,
             -62167219200, 1700000000]
    xs = list(edges)
    xs += [rng.randint(max(lo, -62135596800), min(hi, 253402300799)) for _ in range(3000)]
    xs += [rng.randint(lo, hi) for _ in range(300)]
    # every year (negative, five digits, beyond gmtime's int) is written in C
    xs += [-(1 << 62), 1 << 62, 67767976233532799, 67767976233532800, -67768040609740801,
           -67768040609740800, -67768040609740801 - 86400, 67767976233532800 + 86400]
    xs += [rng.randint(-(1 << 58), 1 << 58) for _ in range(300)]
    xs = [x for x in xs if lo <= x <= hi]
    _check(kind, _pack("q" if size == 8 else "i", little, xs), 0)


def _float32_bits(rng: random.Random) -> list[int]:
    out = [0, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00001, 1, 0x80000001,
           0x007FFFFF, 0x00800000, 0x00800001, 0x7F7FFFFF, 0x3F800000, 0x3F800001,
           0x3EAAAAAB, 0x4B189680, 0x5A0E1BCA, 0x3DCCCCCD]
    for x in (0.1, 0.2, 1 / 3, 3.14159, 1e-7, 1.5e-7, 1e15, 123456.0, 1234567.0,
              12345678.0, 0.001, 0.0001, 1e-4, 9.999999e-5, 100000.0, 1000000.0,
              3.4028235e38, 1e-45, 16777216.0, 16777217.0, 2.5, 1e10, 1.17549435e-38):
        for sign in (1, -1):
            out.append(struct.unpack("<I", struct.pack("<f", sign * x))[0])
    for _ in range(20000):
        out.append(rng.getrandbits(32))
    for _ in range(3000):  # small integers and short decimals, as traces hold
        out.append(struct.unpack("<I", struct.pack("<f", rng.randint(-10 ** 7, 10 ** 7)
                                                   / 10 ** rng.randint(0, 8)))[0])
    for e in range(256):  # binade starts and their neighbours
        for frac in (0, 1, 0x7FFFFF):
            out.append(e << 23 | frac)
    return out


@pytest.mark.parametrize("little", [True, False])
def test_float32(little):
    kind = fixed_kind(4, F.FLOAT, little)
    assert kind.c_kind == sp.FX_FLOAT
    values = _pack("I", little, _float32_bits(random.Random(32)))
    _check(kind, values, 0)  # (powers of two from the Python formatter's table)


def _float64_bits(rng: random.Random) -> list[int]:
    out = [0, 1 << 63, 0x7FF0000000000000, 0xFFF0000000000000, 0x7FF8000000000000,
           0xFFF8000000000001, 1, 0x000FFFFFFFFFFFFF, 0x7FEFFFFFFFFFFFFF]
    xs = [0.1, 1 / 3, 1e15, 1e16, 1e17, 1.5e16, 123456789012345678901.0, 2.0 ** 53,
          2.0 ** 53 + 2, 9007199254740994.0, 1e22, 1e23, 1e-5, 1.5e-7, 0.001, 0.0001,
          0.00012345, 100000.0, 1000000.0, 1234567.0, 120000.0, 5e-324, 1.7976931348623157e308,
          12345.678, 0.5, 2.5, 1e300, 1e-300, 4.35, 100.0, 1e5, 1e6, 1.2e6]
    for x in xs:
        for sign in (1.0, -1.0):
            out.append(struct.unpack("<Q", struct.pack("<d", sign * x))[0])
    for _ in range(20000):
        out.append(rng.getrandbits(64))
    for _ in range(5000):
        x = rng.randint(-10 ** 9, 10 ** 9) / 10 ** rng.randint(0, 12)
        out.append(struct.unpack("<Q", struct.pack("<d", x))[0])
    for _ in range(2000):
        x = float(rng.randint(1, 10 ** 6)) * 10.0 ** rng.randint(-30, 30)
        if math.isfinite(x):
            out.append(struct.unpack("<Q", struct.pack("<d", x))[0])
    return out


@pytest.mark.parametrize("little", [True, False])
def test_float64(little):
    kind = fixed_kind(8, F.FLOAT, little)
    assert kind.c_kind == sp.FX_FLOAT
    _check(kind, _pack("Q", little, _float64_bits(random.Random(64))), 0)


def _ipv6(rng: random.Random) -> list[bytes]:
    out = [bytes(16), bytes(15) + b"\1", b"\xfe\x80" + bytes(14),
           bytes(10) + b"\xff\xff\x0a\x00\x00\x01", bytes(12) + b"\x0a\x00\x00\x01",
           bytes(8) + b"\0\1" + bytes(6), b"\x20\x01\x0d\xb8" + bytes(12)]
    for _ in range(3000):  # words mostly zero: every run layout
        out.append(b"".join(rng.choice((b"\0\0", b"\0\0", b"\0\1", b"\xff\xff",
                                        rng.randbytes(2))) for _ in range(8)))
    for _ in range(500):
        out.append(rng.randbytes(16))
    return out


@pytest.mark.parametrize("little", [True, False])
def test_ip(little):
    rng = random.Random(6)
    v4 = fixed_kind(4, F.IP_ADDRESS, little)
    v6 = fixed_kind(16, F.IP_ADDRESS, little)
    assert v4.c_kind == v6.c_kind == sp.FX_IP
    _check(v4, [bytes(4), b"\xff" * 4, *(rng.randbytes(4) for _ in range(1000))], 0)
    _check(v6, _ipv6(rng), 0)
    old = fixed_kind(16, F.IP_ADDRESS_OBSOLETE, little)
    _check(old, _ipv6(rng)[:500], 0)


_UNITS = {1: (0x00, 0x1F, 0x22, 0x5C, 0x41, 0x7F, 0x80, 0xA0, 0xE9, 0xFF),
          2: (0x0000, 0x0008, 0x000A, 0x001F, 0x0022, 0x005C, 0x0041, 0x007F, 0x00E9, 0x07FF,
              0x0800, 0x20AC, 0xD800, 0xDBFF, 0xDC00, 0xDFFF, 0xFEFF, 0xFFFE, 0xFFFF),
          4: (0x00000000, 0x0000000D, 0x00000041, 0x00000022, 0x000000E9, 0x000020AC,
              0x0000D800, 0x0000DFFF, 0x0001F600, 0x0010FFFF, 0x00110000, 0x7FFFFFFF,
              0xFFFFFFFF, 0xFFFE0000, 0x0000FEFF)}


def _texts(unit: int, little: bool, rng: random.Random) -> list[bytes]:
    order = "little" if little else "big"
    boms = [b"", b"\xff\xfe", b"\xfe\xff", b"\xff\xfe\0\0", b"\0\0\xfe\xff", b"\xef\xbb\xbf"]
    out = []
    for _ in range(1500):
        units = [rng.choice(_UNITS[unit]) if rng.random() < 0.7 else rng.getrandbits(8 * unit)
                 for _ in range(rng.randrange(0, 9))]
        data = b"".join(u.to_bytes(unit, order) for u in units)
        if rng.random() < 0.2:
            data += rng.randbytes(rng.randrange(1, unit + 1))  # a partial unit
        if rng.random() < 0.3:
            data = rng.choice(boms) + data
        out.append(data)
    return out


@pytest.mark.parametrize("little", [True, False])
@pytest.mark.parametrize("fmt", [F.STRING_UTF, F.STRING_UTF_BOM, F.STRING_XML, F.STRING8])
@pytest.mark.parametrize("unit", [1, 2, 4])
def test_strings(unit, fmt, little):
    """Counted strings of every unit size: text the C code writes (ASCII, and UTF-16/32
    with STR_UTF) and text it leaves to the rule's formatter come out the same."""
    from ehtool.eventheader.enums import FieldEncoding as E
    from ehtool.eventheader.kinds import string_kind

    encoding = {1: E.STRING_LENGTH16_CHAR8, 2: E.STRING_LENGTH16_CHAR16,
                4: E.STRING_LENGTH16_CHAR32}[unit]
    rule = string_kind(encoding, fmt, little)
    mod = sp.load()
    python = _Counting(rule.json)
    op = (sp.OP_STR, unit, 0, rule.c_flags, python)

    def fallback(data, p, o):
        raise AssertionError("the whole event was handed back")
    render = mod.Plan([op], little, 100, fallback).render
    order = "little" if little else "big"
    texts = [t[:len(t) // unit * unit] for t in _texts(unit, little, random.Random(unit))]
    for data in texts:
        event = (len(data) // unit).to_bytes(2, order) + data
        assert render(event, 0, 0) == rule.json(data), (rule.name, data.hex())
    if rule.name in ("utf8", "utf16", "utf32"):
        assert python.calls == 0  # UTF text is the C code's
    elif rule.name != "bom":  # (a UTF-8 BOM leaves the rest to Python)
        assert python.calls > 0


@pytest.mark.parametrize("little", [True, False])
@pytest.mark.parametrize("size", [1, 2, 4])
def test_characters(size, little):
    """string8 (Latin-1) and string_utf (UTF-16/32) single characters, every unit kind."""
    fmt = F.STRING8 if size == 1 else F.STRING_UTF
    kind = fixed_kind(size, fmt, little)
    assert kind.c_kind == sp.FX_CHAR
    order = "little" if little else "big"
    rng = random.Random(size)
    xs = [*_UNITS[size], *(rng.getrandbits(8 * size) for _ in range(3000))]
    if size == 1:
        xs += list(range(256))
    _check(kind, [x.to_bytes(size, order) for x in xs], 0)


def _utf8_texts(rng: random.Random) -> list[bytes]:
    pieces = [b"a", b'"', b"\\", b"\x00", b"\x1f", b"\x7f", "\u00e9".encode(),
              "\u20ac".encode(), "\U0001f600".encode(), "\ud7ff".encode(), "\ue000".encode(),
              b"\xed\xa0\x80", b"\xed\xbf\xbf", b"\xed\x9f\xbf", b"\xc0\x80", b"\xc1\xbf",
              b"\xe0\x80\x80", b"\xe0\x9f\xbf", b"\xf0\x80\x80\x80", b"\xf4\x90\x80\x80",
              b"\xf5\x80\x80\x80", b"\xff", b"\xfe", b"\x80", b"\xbf", b"\xc2", b"\xe2\x82",
              b"\xf0\x9f\x98", b"\xef\xbb\xbf"]
    out = [b"", *pieces]
    for _ in range(4000):
        out.append(b"".join(rng.choice(pieces) if rng.random() < 0.8 else rng.randbytes(1)
                            for _ in range(rng.randrange(1, 8))))
    for _ in range(1000):
        out.append(rng.randbytes(rng.randrange(1, 12)))
    return out


def test_utf8_strings():
    """UTF-8 text: valid sequences, overlong forms, surrogates (ED A0..BF xx), code points
    above U+10FFFF, cut sequences and stray bytes, as utf8_json writes them."""
    from ehtool.eventheader.enums import FieldEncoding as E
    from ehtool.eventheader.kinds import string_kind

    rule = string_kind(E.STRING_LENGTH16_CHAR8, F.STRING_UTF, True)
    zrule = string_kind(E.ZSTRING_CHAR8, F.DEFAULT, True)
    assert rule.name == zrule.name == "utf8" and rule.c_flags & sp.STR_UTF
    mod = sp.load()
    python = _Counting(rule.json)

    def fallback(data, p, o):
        raise AssertionError("the whole event was handed back")
    counted = mod.Plan([(sp.OP_STR, 1, 0, rule.c_flags, python)], True, 100, fallback).render
    zero = mod.Plan([(sp.OP_STR, 1, 1, zrule.c_flags, python)], True, 100, fallback).render
    for data in _utf8_texts(random.Random(8)):
        want = rule.json(data)
        assert counted(len(data).to_bytes(2, "little") + data, 0, 0) == want, data.hex()
        text = data.split(b"\0")[0]
        assert zero(text + b"\0", 0, 0) == zrule.json(text), data.hex()
    assert python.calls == 0
