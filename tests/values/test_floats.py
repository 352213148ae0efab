"""Floats as libstdc++ ``std::to_chars(first, last, value)``: hand-checked text, an exact
rational oracle, and round-trip properties."""

from __future__ import annotations

import math
import struct
from fractions import Fraction

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from ehtool.values import text as v


def f32_bits(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", x))[0]


def f32_value(bits: int) -> float:
    return struct.unpack("<f", struct.pack("<I", bits))[0]


# -- hand-checked ---------------------------------------------------------------

F64_CASES = [
    (0.0, b"0"), (-0.0, b"-0"), (3.0, b"3"), (-3.0, b"-3"), (6.28, b"6.28"),
    (1 / 3, b"0.3333333333333333"), (0.1, b"0.1"), (100.0, b"100"), (12345.0, b"12345"),
    (10000.0, b"10000"), (100000.0, b"1e+05"), (120000.0, b"120000"),
    (1200000.0, b"1200000"), (12000000.0, b"1.2e+07"), (123000000.0, b"1.23e+08"), (1e15, b"1e+15"),
    (1e16, b"1e+16"), (1e22, b"1e+22"), (5e-324, b"5e-324"),
    (0.001, b"0.001"), (0.0001, b"1e-04"), (0.00012, b"0.00012"), (0.000123, b"0.000123"),
    (1.5e-7, b"1.5e-07"), (1.7976931348623157e308, b"1.7976931348623157e+308"),
    (-1.1413996157316056e+236, b"-1.1413996157316056e+236"),
    # fixed notation of a whole number prints its exact value, not padded shortest digits
    (2.0 ** 60, b"1152921504606846976"), (-(2.0 ** 60), b"-1152921504606846976"),
    (1.2345678901234568e+20, b"123456789012345683968"),
    (9007199254740993.0, b"9007199254740992"),
    (math.inf, b'"inf"'), (-math.inf, b'"-inf"'),
]


@pytest.mark.parametrize(("value", "text"), F64_CASES)
def test_float64_hand_checked(value, text):
    assert v.float64_json(value) == text


F32_CASES = [
    (0x4048F5C3, b"3.14"), (0x3EAAAAAB, b"0.33333334"), (0x3F800000, b"1"),
    (0x00000001, b"1e-45"), (0x80000001, b"-1e-45"), (0x00800000, b"1.1754944e-38"),
    (0x7F7FFFFF, b"3.4028235e+38"), (0xF0F1F2F3, b"-5.9903676e+29"),
    (0x3DCCCCCD, b"0.1"), (0x4B800000, b"16777216"), (0x4E932C06, b"1234567936"),
    (0x47C35000, b"1e+05"), (0x461C4000, b"10000"), (0x3727C5AC, b"1e-05"),
    (0x00000000, b"0"), (0x80000000, b"-0"),
    (0x7F800000, b'"inf"'), (0xFF800000, b'"-inf"'),
    (0x7FC00000, b'"nan"'), (0xFFC00000, b'"-nan"'), (0x7F800001, b'"nan"'),
    (0xFFFFFFFF, b'"-nan"'),
]


@pytest.mark.parametrize(("bits", "text"), F32_CASES)
def test_float32_hand_checked(bits, text):
    assert v.float32_bits_json(bits) == text


def test_float32_from_value_rounds_to_float32():
    assert v.float32_json(1 / 3) == b"0.33333334"
    assert v.float32_json(3.14) == b"3.14"
    assert v.float32_json(-math.inf) == b'"-inf"'


def test_nan_sign_bit_decides():
    neg = struct.unpack("<d", bytes.fromhex("000000000000f8ff"))[0]
    pos = struct.unpack("<d", bytes.fromhex("000000000000f87f"))[0]
    assert v.float64_json(neg) == b'"-nan"'
    assert v.float64_json(pos) == b'"nan"'


# -- exact oracle -----------------------------------------------------------------


def _neighbours64(x: float) -> tuple[Fraction, Fraction, bool]:
    """The rounding interval of positive double x and whether its ends read back as x."""
    below, above = math.nextafter(x, 0.0), math.nextafter(x, math.inf)
    fx = Fraction(x)
    lo = (fx + Fraction(below)) / 2
    hi = (fx + Fraction(above)) / 2 if above != math.inf else fx + (fx - Fraction(below)) / 2
    mantissa_even = struct.unpack("<Q", struct.pack("<d", x))[0] % 2 == 0
    return lo, hi, mantissa_even


def _neighbours32(bits: int) -> tuple[Fraction, Fraction, bool]:
    fx = Fraction(f32_value(bits))
    below = Fraction(f32_value(bits - 1)) if bits & 0x7FFFFFFF else Fraction(0)
    above = f32_value(bits + 1)
    hi = (fx + Fraction(above)) / 2 if math.isfinite(above) else fx + (fx - below) / 2
    return (fx + below) / 2, hi, bits % 2 == 0


def _shortest(x: Fraction, lo: Fraction, hi: Fraction, closed: bool) -> tuple[int, int]:
    """(t, e): fewest significant digits inside the interval, nearest to x, ties to even t."""
    k = 0  # 10**k <= x < 10**(k+1)
    while Fraction(10) ** k > x:
        k -= 1
    while Fraction(10) ** (k + 1) <= x:
        k += 1
    for p in range(1, 30):
        unit = Fraction(10) ** (k - p + 1)
        base = math.floor(x / unit)
        inside = [t for t in (base - 1, base, base + 1, base + 2)
                  if (lo <= t * unit <= hi if closed else lo < t * unit < hi)]
        if inside:
            t = min(inside, key=lambda t: (abs(t * unit - x), t % 2))
            e = k - p + 1
            while t % 10 == 0:
                t, e = t // 10, e + 1
            return t, e
    raise AssertionError("no representation")


def _to_chars(t: int, e: int, negative: bool, exact: Fraction) -> bytes:
    """Fixed or scientific, whichever is shorter (fixed on a tie); fixed whole numbers
    print their exact value."""
    digits = str(t)
    n = len(digits)
    if e >= 0:
        fixed = str(int(exact))
    elif n + e > 0:
        fixed = digits[:n + e] + "." + digits[n + e:]
    else:
        fixed = "0." + "0" * -(n + e) + digits
    x = e + n - 1
    sci = digits[0] + ("." + digits[1:] if n > 1 else "") + ("e-%02d" % -x if x < 0
                                                            else "e+%02d" % x)
    # the choice compares the lengths of the shortest forms, before exact expansion
    fixed_len = n + e if e >= 0 else len(fixed)
    text = fixed if fixed_len <= len(sci) else sci
    return (("-" if negative else "") + text).encode()


def oracle64(x: float) -> bytes:
    a = abs(x)
    t, e = _shortest(Fraction(a), *_neighbours64(a))
    return _to_chars(t, e, x < 0, Fraction(a))


def oracle32(bits: int) -> bytes:
    a = bits & 0x7FFFFFFF
    fa = Fraction(f32_value(a))
    t, e = _shortest(fa, *_neighbours32(a))
    return _to_chars(t, e, bool(bits >> 31), fa)


def test_oracle_agrees_with_hand_checked_cases():
    for value, text in F64_CASES:
        if math.isfinite(value) and value != 0:
            assert oracle64(value) == text, value
    for bits, text in F32_CASES:
        if math.isfinite(f32_value(bits)) and bits & 0x7FFFFFFF:
            assert oracle32(bits) == text, hex(bits)


_FINITE64 = st.floats(allow_nan=False, allow_infinity=False).filter(lambda x: x != 0)
_NICE64 = st.one_of(
    st.integers(-(10 ** 22), 10 ** 22).map(float),
    st.builds(lambda m, e: m * 10.0 ** e, st.integers(1, 99999), st.integers(-12, 22)),
    st.builds(lambda m, e: math.ldexp(m, e), st.integers(1, 2 ** 53), st.integers(-1074, 971)),
).filter(lambda x: x != 0 and math.isfinite(x))


@settings(max_examples=500, deadline=None)
@given(st.one_of(_FINITE64, _NICE64))
@example(2.0 ** 53 + 2)
@example(1e21)
@example(123456.0)
@example(0.00001)
def test_float64_matches_oracle(x):
    assert v.float64_json(x) == oracle64(x)


_BITS32 = st.one_of(
    st.integers(0, 0xFFFFFFFF),
    st.integers(0, 0x7F7FFFFF).map(lambda b: b & ~0x7FFFFF),  # powers of two: uneven gaps
    st.integers(0, 0x7FFFFF),  # subnormals
    st.builds(lambda m, e: f32_bits(m * 10.0 ** e), st.integers(1, 99999),
              st.integers(-40, 33)),
).filter(lambda b: math.isfinite(f32_value(b)) and b & 0x7FFFFFFF)


@settings(max_examples=800, deadline=None)
@given(_BITS32)
@example(0x00800000)
@example(0x01000000)
@example(0x7F000000)
def test_float32_matches_oracle(bits):
    assert v.float32_bits_json(bits) == oracle32(bits)


def test_float32_every_power_of_two():
    """Binade starts have a narrower lower gap: the case the shortest search handles
    separately."""
    for biased in range(1, 255):
        for sign in (0, 0x80000000):
            bits = sign | biased << 23
            assert v.float32_bits_json(bits) == oracle32(bits), hex(bits)


# -- round trip -------------------------------------------------------------------


@settings(max_examples=1000, deadline=None)
@given(_FINITE64)
def test_float64_reads_back_and_is_never_longer_than_repr(x):
    out = v.float64_json(x)
    assert float(out) == x
    assert len(out) <= len(repr(x))


@settings(max_examples=1000, deadline=None)
@given(_BITS32)
def test_float32_reads_back_and_is_never_longer_than_repr(bits):
    out = v.float32_bits_json(bits)
    lo, hi, closed = _neighbours32(bits & 0x7FFFFFFF)
    back = abs(Fraction(out.decode()))  # exact: no double rounding through a double
    assert (lo <= back <= hi) if closed else (lo < back < hi)
    assert len(out) <= len(repr(f32_value(bits)))


def test_float32_json_of_a_double_beyond_float32_is_infinite():
    assert v.float32_json(1e39) == b'"inf"'
    assert v.float32_json(-1e39) == b'"-inf"'


def test_float32_repeated_calls_are_stable():
    """Results are cached by bit pattern: a repeat (and a full cache) gives the same text."""
    first = [v.float32_bits_json(b) for b in range(0x3F800000, 0x3F800000 + 5000)]
    again = [v.float32_bits_json(b) for b in range(0x3F800000, 0x3F800000 + 5000)]
    assert first == again
    assert first[0] == b"1" and first[1] == b"1.0000001"
