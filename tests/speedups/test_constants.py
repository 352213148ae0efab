"""ehtool.speedups mirrors the C module's op codes and value kinds: the C module exports
its own values and they must be the same."""

from __future__ import annotations

import pytest

from ehtool import speedups
from impl import require_speedups

#: the C enums' prefixes: the render ops, fixed-value kinds, string and time kinds, and
#: the filter Programs' sources, reads, nodes and comparisons (ehtool/decode/native.py)
PREFIXES = ("OP", "FX", "STR", "TIME", "SRC", "RD", "N", "CMP")


def _enum_names(module: object) -> set[str]:
    return {n for n in dir(module) if n.split("_")[0] in PREFIXES and n.isupper()}


NAMES = sorted(_enum_names(speedups))


def test_python_names_every_c_constant_and_no_other(monkeypatch) -> None:
    monkeypatch.delenv("EHTOOL_PURE", raising=False)
    require_speedups()
    assert _enum_names(speedups.load()) == set(NAMES)
    assert {n.split("_")[0] for n in NAMES} == set(PREFIXES)


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
                                       "fast_cache", "handler", "activity_keys", "tail",
                                       "metas", "meta_of", "common")
    assert FastEntry._fields == ("expect", "activity_size", "skip", "render", "info")
