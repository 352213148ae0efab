"""Clock conversion and thread names."""

from __future__ import annotations

import datetime as dt

from hypothesis import given
from hypothesis import strategies as st

from ehtool.perfdata.session import (
    CLOCKID_UNKNOWN,
    Session,
    SessionClock,
)
from ehtool.values.times import civil_from_days, format_utc_seconds

_EPOCH = dt.datetime(1970, 1, 1)
_MIN = int((dt.datetime(1, 1, 1) - _EPOCH).total_seconds())
_MAX = int((dt.datetime(9999, 12, 31, 23, 59, 59) - _EPOCH).total_seconds())


@given(st.integers(min_value=_MIN, max_value=_MAX))
def test_calendar_matches_datetime(sec):
    expected = (_EPOCH + dt.timedelta(seconds=sec)).strftime("%Y-%m-%dT%H:%M:%S")
    assert format_utc_seconds(sec) == expected.rjust(19, "0")


def test_calendar_edges():
    assert civil_from_days(0) == (1970, 1, 1)
    assert civil_from_days(-1) == (1969, 12, 31)
    assert civil_from_days(11016) == (2000, 2, 29)
    assert format_utc_seconds(-62135596801) == "0000-12-31T23:59:59"  # year 0, as glibc
    assert format_utc_seconds(-62198755200) == "-001-01-01T00:00:00"  # %04d of -1
    assert format_utc_seconds(253402300800) == "10000-01-01T00:00:00"
    assert format_utc_seconds(1 << 62).startswith("TIME(")  # tm_year overflows an int


def test_time_json_with_clock_data():
    c = SessionClock()
    c.set_clock_data(1, 1711586712588060000, 12782502283276)
    assert c.time_json(12782555136396) == b'"2024-03-28T00:45:12.640913120Z"'
    assert c.time_json(12782555136397) == b'"2024-03-28T00:45:12.640913121Z"'  # cached second
    assert c.time_json(12782555136396 + 10**9) == b'"2024-03-28T00:45:13.640913120Z"'
    assert c.time_text(0) == "2024-03-27T21:12:10.085776724Z"  # the offset alone


def test_negative_offset_floors():
    c = SessionClock()
    c.set_clock_data(1, 0, 1_500_000_000)  # wall clock before the session clock's zero
    assert c.offset_ns == -1_500_000_000
    assert c.time_json(0) == b'"1969-12-31T23:59:58.500000000Z"'
    assert c.time_json(1_500_000_001) == b'"1970-01-01T00:00:00.000000001Z"'


def test_without_clock_data_bare_seconds():
    c = SessionClock()
    assert c.time_json(1510160168781) == b"1510.160168781"
    assert c.time_json(5) == b"0.000000005"
    c.set_clock_data(CLOCKID_UNKNOWN, 10, 5)
    assert not c.utc_known and c.time_json(5) == b"0.000000005"


def test_comm_and_fork():
    s = Session()
    assert s.comm(5) is None
    s.set_comm(5, "bash")
    s.fork(5, 6)
    assert s.comm(6) == "bash"
    s.set_comm(6, "ls")
    assert (s.comm(5), s.comm(6)) == ("bash", "ls")
    s.set_comm(7, "old")
    s.fork(5, 7)  # a reused tid takes its new parent's name
    assert s.comm(7) == "bash"
