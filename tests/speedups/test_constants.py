"""ehtool.speedups mirrors the C module's op codes and value kinds: the C module exports
its own values and they must be the same."""

from __future__ import annotations

import pytest

from ehtool import speedups
from impl import require_speedups

#: prefix -> how many members the C enum has: the render ops, fixed-value kinds, string
#: and time kinds, and the filter Programs' sources, reads, nodes and comparisons
#: (ehtool/decode/native.py)
ENUMS = {"OP": 7, "FX": 13, "STR": 4, "TIME": 4, "SRC": 6, "RD": 4, "N": 5, "CMP": 2}
NAMES = [n for n in dir(speedups) if n.split("_")[0] in ENUMS and n.isupper()]


@pytest.mark.parametrize("prefix", ENUMS)
def test_python_names_the_whole_c_enum(prefix: str) -> None:
    assert sum(n.split("_")[0] == prefix for n in NAMES) == ENUMS[prefix]


@pytest.mark.parametrize("name", NAMES)
def test_constant_equals_the_c_value(name: str, monkeypatch) -> None:
    monkeypatch.delenv("EHTOOL_PURE", raising=False)
    require_speedups()
    assert getattr(speedups.load(), name) == getattr(speedups, name)


def test_spec_field_order_is_the_c_loops():
    """_speedups.c reads the handler specs and fast-path entries by index."""
    from ehtool.render.eventheader import FastEntry
    from ehtool.render.events import EventHeaderSpec, PlainSpec

    assert PlainSpec._fields == ("kind", "head", "render", "extra", "handler")
    assert EventHeaderSpec._fields == ("kind", "tracepoint", "eventheader_offset", "head",
                                       "fast_cache", "handler", "activity_keys")
    assert FastEntry._fields == ("expect", "activity_size", "skip", "render", "info")
