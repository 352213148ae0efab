"""The typed layer names a plain event as decode's JSON does (``"n"``), and splits it into
provider and event as perf-decode does; a .dat capture's tracepoint has no system."""

from __future__ import annotations

import pickle
from dataclasses import dataclass, field
from typing import Any

import pytest

from ehtool.decode.dat_input import DatDesc, DatFormat
from ehtool.events import SampleConverter
from ehtool.render.events import _split_name
from ehtool.values.shown import Errno, Hex


@dataclass(eq=False)
class Format:
    system: str
    name: str
    fields: list = field(default_factory=list)


@dataclass(eq=False)
class Desc:
    name: str
    format: Any


NAMES = ["", "a", "a:b", "a:b:c", ":x", "x:", "::", "cpu-clock", "cycles:u"]
FORMATS = [None, Format("sched", "sched_switch"), Format("", "ok")]  # (perf.data: "" too)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("name", NAMES)
def test_the_typed_name_is_the_one_decode_shows(name, fmt):
    desc = Desc(name, fmt)
    shown, provider, event, _, _ = SampleConverter().describe(desc)
    assert (provider, event) == _split_name(desc, fmt)
    assert shown == f"{provider}:{event}"


def test_a_capture_tracepoint_is_its_name_alone():
    desc = DatDesc("MyProvider_L5K1", DatFormat("MyProvider_L5K1"))
    assert SampleConverter().describe(desc)[:3] == ("MyProvider_L5K1", "", "MyProvider_L5K1")


@pytest.mark.parametrize("value", [2, -5, 200, 0, -(1 << 31)])
def test_an_errno_is_an_int_with_its_text(value):
    e = Errno(value & 0xFFFFFFFF)
    assert e == value and int(e) == value and hash(e) == hash(value)
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        back = pickle.loads(pickle.dumps(e, protocol))
        assert type(back) is Errno and back == value and str(back) == str(e)
    assert str(Errno(2)) == "ENOENT(2)" and str(Errno(-5)) == "ERRNO(-5)"
    assert f"{Errno(2):d}" == "2" and repr(Errno(2)) == "Errno(2)"


def test_filtered_events_are_tested_as_they_are_read():
    """``open(decimal_pids=True).filtered(selection)`` tests the values it yields (a
    pid_t as its number), whatever the selection was made with, and leaves the
    selection as it was (its own decode goes on showing what it says)."""
    from pathlib import Path

    import ehtool
    from ehtool.decode.filters import Selection

    sched = Path(__file__).resolve().parents[2] / "examples" / "sched.data"
    for decimal, expr, kept in ((True, "next_pid == 18", 1), (True, 'next_pid ~ "0x12"', 0),
                                (False, 'next_pid ~ "0x12"', 1)):
        selection = Selection(expr=expr)
        with ehtool.open(sched, decimal_pids=decimal) as f:
            events = list(f.filtered(selection))
        assert len(events) == kept, (decimal, expr)
        assert selection.decimal_pids is False
        if events:
            assert type(events[0].fields["next_pid"]) is (int if decimal else Hex)
            assert str(events[0].fields["next_pid"]) == ("18" if decimal else "0x12")
