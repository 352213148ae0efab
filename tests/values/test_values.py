"""Integers, hex, booleans, errno, time, UUID and IP formatting."""

from __future__ import annotations

import datetime
import socket

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from ehtool.values import text as v

from . import perf_decode_model as model


def test_integers_and_hex():
    assert v.signed_json(-9223372036854775808) == b"-9223372036854775808"
    assert v.unsigned_json(18446744073709551615) == b"18446744073709551615"
    assert v.hex_int(60000) == b'"0xEA60"'
    assert v.hex_int(0) == b'"0x0"'
    assert v.hex_int(0xFFFFFFFFFFFFFFFF) == b'"0xFFFFFFFFFFFFFFFF"'


def test_hex_bytes():
    assert v.hex_bytes(b"How") == b'"48 6f 77"'
    assert v.hex_bytes(b"") == b'""'
    assert v.hex_bytes(b"\xab") == b'"ab"'
    assert v.hex_bytes(memoryview(b"\x00\xff\x10")) == b'"00 ff 10"'
    assert v.hex_bytes(bytearray(b"\x01\x02")) == b'"01 02"'


@pytest.mark.parametrize(("value", "size", "text"), [
    (0, 1, b"false"), (1, 1, b"true"), (255, 1, b"255"), (0xF0, 1, b"240"),
    (0, 2, b"false"), (1, 2, b"true"), (0xF0F1, 2, b"61681"), (0xFFFF, 2, b"65535"),
    (0, 4, b"false"), (1, 4, b"true"), (2, 4, b"2"), (0x80000000, 4, b"-2147483648"),
    (0xFFFFFFFF, 4, b"-1"), (0xF0F1F2F3, 4, b"-252579085"), (-1, 4, b"-1"),
])
def test_boolean(value, size, text):
    assert v.boolean_json(value, size) == text


def test_errno_table():
    assert v.errno_json(1) == b'"EPERM(1)"'
    assert v.errno_json(11) == b'"EAGAIN(11)"'
    assert v.errno_json(35) == b'"EDEADLK(35)"'
    assert v.errno_json(95) == b'"EOPNOTSUPP(95)"'
    assert v.errno_json(131) == b'"ENOTRECOVERABLE(131)"'
    assert v.errno_json(132) == b'"ERFKILL(132)"'
    assert v.errno_json(133) == b'"EHWPOISON(133)"'
    for unnamed in (0, 41, 58, 134, 2000000000):
        assert v.errno_json(unnamed) == b'"ERRNO(%d)"' % unnamed
    assert v.errno_json(0x80000000) == b'"ERRNO(-2147483648)"'
    assert v.errno_json(0xF0F1F2F3) == b'"ERRNO(-252579085)"'
    assert v.errno_json(-1) == b'"ERRNO(-1)"'


def test_errno_names_match_linux():
    """Every name is the kernel's (Python's errno module reads the same headers); where
    Linux has two names for one number, perf-decode's table has the first."""
    import errno

    aliases = {35: "EDEADLK", 95: "EOPNOTSUPP"}  # EDEADLOCK, ENOTSUP
    for number in range(1, 133):  # Python's errno may lack EHWPOISON (133)
        name = errno.errorcode.get(number)
        if name is None:
            assert v.errno_json(number) == b'"ERRNO(%d)"' % number
        else:
            assert v.errno_json(number) == b'"%s(%d)"' % (aliases.get(number, name).encode(),
                                                          number)


def test_uuid():
    assert v.uuid_json(bytes(range(1, 9)) * 2) == b'"01020304-0506-0708-0102-030405060708"'
    assert v.uuid_json(memoryview(bytes(range(0xF0, 0x100)))) == \
        b'"f0f1f2f3-f4f5-f6f7-f8f9-fafbfcfdfeff"'


def test_port_and_ipv4():
    assert v.port_json(b"\x00\x50") == b"80"
    assert v.port_json(b"\x01\x00") == b"256"
    assert v.port_json(memoryview(b"\xff\xff")) == b"65535"
    assert v.ipv4_json(b"\x7f\x00\x00\x01") == b'"127.0.0.1"'
    assert v.ipv4_json(b"\xf3\xf2\xf1\xf0") == b'"243.242.241.240"'


@pytest.mark.parametrize(("hexaddr", "text"), [
    ("00000000000000000000000000000000", "::"),
    ("00000000000000000000000000000001", "::1"),
    ("00010000000000000000000000000000", "1::"),
    ("0102030405060708090a0b0c0d0e0f10", "102:304:506:708:90a:b0c:d0e:f10"),
    ("fefefefefefefefefefefefefefefe00", "fefe:fefe:fefe:fefe:fefe:fefe:fefe:fe00"),
    ("20010db8000000010000000000000001", "2001:db8:0:1::1"),  # longer run wins
    ("20010db8000000000001000000000001", "2001:db8::1:0:0:1"),  # first of equal runs
    ("20010db8000100000001000100010001", "2001:db8:1:0:1:1:1:1"),  # a single 0 stays
    ("00000000000000000000ffff01020304", "::ffff:1.2.3.4"),  # IPv4-mapped
    ("00000000000000000000000001020304", "::1.2.3.4"),  # IPv4-compatible
    ("00000000000000000000fffe01020304", "::fffe:102:304"),
    ("00000000000000000000ffff00000000", "::ffff:0.0.0.0"),
    ("0000000000000000000000000000ffff", "::ffff"),  # run of 7: not the IPv4 form
    ("00010000000000000000ffff01020304", "1::ffff:102:304"),
    ("000000000000000000000000ffff0102", "::255.255.1.2"),  # a run of 6 zeros
])
def test_ipv6_hand_checked(hexaddr, text):
    data = bytes.fromhex(hexaddr)
    assert v.ipv6_json(data) == b'"%s"' % text.encode()
    assert socket.inet_ntop(socket.AF_INET6, data) == text  # this machine's glibc agrees


_WORD = st.one_of(st.just(0), st.just(0), st.just(0), st.just(0xFFFF), st.integers(0, 0xFFFF),
                  st.integers(1, 15))


@settings(max_examples=2000, deadline=None)
@given(st.lists(_WORD, min_size=8, max_size=8))
@example([0, 0, 0, 0, 0, 0xFFFF, 0x0102, 0x0304])
@example([0, 0, 0, 0, 0, 0, 0, 1])
def test_ipv6_matches_glibc_inet_ntop(words):
    data = b"".join(w.to_bytes(2, "big") for w in words)
    expected = socket.inet_ntop(socket.AF_INET6, data)
    assert v.ipv6_json(data) == b'"%s"' % expected.encode()
    assert v.ipv6_json(memoryview(data)) == b'"%s"' % expected.encode()
    assert model.ipv6(data) == expected


# -- time ---------------------------------------------------------------------------


@pytest.mark.parametrize(("seconds", "text"), [
    (0, "1970-01-01T00:00:00"),
    (2000000000, "2033-05-18T03:33:20"),
    (-2147483648, "1901-12-13T20:45:52"),
    (2147483647, "2038-01-19T03:14:07"),
    (-1, "1969-12-31T23:59:59"),
    (-11644473600, "1601-01-01T00:00:00"),
    (-11644473601, "1600-12-31T23:59:59"),
    (951782400, "2000-02-29T00:00:00"),
    (-62135596800, "0001-01-01T00:00:00"),
    (-62135596801, "0000-12-31T23:59:59"),
    (-62167219200, "0000-01-01T00:00:00"),
    (-62167219201, "-001-12-31T23:59:59"),
    (253402300799, "9999-12-31T23:59:59"),
    (253402300800, "10000-01-01T00:00:00"),
    (910692730085, "30828-09-14T02:48:05"),
    (9000000000000000000, "TIME(9000000000000000000)"),
    (-9223372036854775808, "TIME(-9223372036854775808)"),
    (9223372036854775807, "TIME(9223372036854775807)"),
])
def test_time_hand_checked(seconds, text):
    assert v.time_json(seconds) == b'"%s"' % text.encode()


def _days_from_civil(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 in the proleptic Gregorian calendar (counted, not looked up)."""
    def leap(y: int) -> bool:
        return y % 4 == 0 and (y % 100 != 0 or y % 400 == 0)
    # whole 400-year cycles (146097 days) keep the count short
    cycles, y = divmod(year - 1970, 400)
    days = cycles * 146097
    base = 1970 + cycles * 400
    for yy in range(base, base + y):
        days += 366 if leap(yy) else 365
    months = [31, 29 if leap(year) else 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
    return days + sum(months[:month - 1]) + day - 1


def test_time_year_limits_of_32_bit_tm_year():
    """glibc gmtime_r fails (TIME(n)) exactly when year - 1900 leaves the int range."""
    last = _days_from_civil(2147483647 + 1900, 12, 31) * 86400 + 86399
    assert v.time_json(last) == b'"2147485547-12-31T23:59:59"'
    assert v.time_json(last + 1) == b'"TIME(%d)"' % (last + 1)
    first = _days_from_civil(-2147483648 + 1900, 1, 1) * 86400
    assert v.time_json(first) == b'"-2147481748-01-01T00:00:00"'
    assert v.time_json(first - 1) == b'"TIME(%d)"' % (first - 1)


@settings(max_examples=500, deadline=None)
@given(st.integers(-62135596800, 253402300799))
def test_time_matches_datetime_in_its_range(seconds):
    expected = datetime.datetime(1970, 1, 1) + datetime.timedelta(seconds=seconds)
    assert v.time_json(seconds) == b'"%s"' % expected.isoformat().encode()


def test_time32_time64_are_signed():
    assert v.time32_json(0xF0F1F2F3) == b'"1961-12-30T15:08:35"'
    assert v.time32_json(0x80000000) == b'"1901-12-13T20:45:52"'
    assert v.time64_json(0xF0F1F2F3F4F5F6F7) == b'"TIME(-1084818905618843913)"'
    assert v.time64_json(1) == b'"1970-01-01T00:00:01"'


def test_sample_times():
    assert v.utc_ns_json(0) == b'"1970-01-01T00:00:00.000000000Z"'
    assert v.utc_ns_json(1700000000123456789) == b'"2023-11-14T22:13:20.123456789Z"'
    assert v.utc_ns_json(-1) == b'"1969-12-31T23:59:59.999999999Z"'
    huge = (1 << 70) * 1_000_000_000 + 5
    assert v.utc_ns_json(huge) == b'"TIME(%d).000000005Z"' % (1 << 70)
    assert v.seconds_json(0) == b"0.000000000"
    assert v.seconds_json(123456789012345) == b"123456.789012345"
    assert v.seconds_json(0xFFFFFFFFFFFFFFFF) == b"18446744073.709551615"


def test_import_is_light():
    """orjson and json load on the first string formatted, construct never."""
    import subprocess
    import sys

    code = ("import sys, ehtool.values.text as v; "
            "print(sorted(m for m in ('orjson', 'json', 'construct') if m in sys.modules)); "
            "v.utf8_json(b'x'); print('orjson' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split("\n")
    assert out[0] == "[]"
    assert out[1] == "True"


def test_time_cache_gives_what_a_fresh_computation_gives():
    import random

    from ehtool.values import text as values

    rng = random.Random(7)
    seconds = [rng.randrange(-(1 << 40), 1 << 40) for _ in range(3000)]
    seconds += [0, -1, 86399, 86400, 2**63 - 1, -(2**63), 67768036191676799, 67768036191676800]
    first = [values.time_json(s) for s in seconds]
    for _ in range(3):  # from the caches, and past their bound (they are cleared, not grown)
        assert [values.time_json(s) for s in seconds * 2] == first * 2
        assert len(values._TIMES) <= values._CACHE_MAX and len(values._DAYS) <= values._CACHE_MAX
    values._TIMES.clear()
    values._DAYS.clear()
    assert [values.time_json(s) for s in seconds] == first
