"""ehtool.speedups mirrors the C module's op codes and value kinds: the C module exports
its own values and they must be the same."""

from __future__ import annotations

import pytest

from ehtool import speedups
from impl import require_speedups

NAMES = [n for n in dir(speedups) if n.split("_")[0] in ("OP", "FX", "STR", "TIME") and n.isupper()]


def test_python_names_the_whole_c_enums() -> None:
    assert len(NAMES) == 7 + 13 + 4 + 4


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


FILTER_NAMES = [n for n in dir(speedups)
                if n.split("_")[0] in ("SRC", "RD", "N", "CMP") and n.isupper()]


def test_python_names_the_whole_filter_enums() -> None:
    assert len(FILTER_NAMES) == 6 + 4 + 5 + 2


@pytest.mark.parametrize("name", FILTER_NAMES)
def test_filter_constant_equals_the_c_value(name: str, monkeypatch) -> None:
    """The filter Programs' sources, reads and nodes (ehtool/decode/native.py)."""
    monkeypatch.delenv("EHTOOL_PURE", raising=False)
    require_speedups()
    assert getattr(speedups.load(), name) == getattr(speedups, name)
