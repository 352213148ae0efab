"""The C renderer of an event's fields as typed JSON (``cplan.native_typed_json``, the
``fields`` column of Parquet and ``query``) gives exactly the Python back end's text:
``ehtool.values.typed_json`` of the typed fields (``TypedDecoder.decode_parts``), or the
same EventHeaderError. On every reference event, on mutations of them, and on random
layouts and payloads."""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ehtool.eventheader.decoder import (
    EventHeaderError,
    TypedDecoder,
    json_members,
    object_text,
)
from ehtool.eventheader.enums import FieldEncoding as E
from ehtool.eventheader.enums import FieldFormat as F
from ehtool.values.typed_json import json_value
from impl import is_native, require_speedups

from .helpers import event, fd, mutated_event, reference_events
from .test_properties import field_defs


@pytest.fixture(autouse=True)
def _native(monkeypatch):
    monkeypatch.delenv("EHTOOL_PURE", raising=False)
    require_speedups()


def _outcome(fn, *args):
    try:
        return fn(*args), None
    except EventHeaderError as exc:
        return None, str(exc)


def same(typed: TypedDecoder, name: str, data: bytes, offset: int = 0) -> str:
    """The C text equals the Python back end's; what the event was."""
    got, got_error = _outcome(typed.typed_json_parts, name, data, offset)
    want, want_error = _outcome(typed.decode_parts, name, data, offset)
    assert got_error == want_error, (name, data)
    if want is None:
        return "error" if want_error else "not eventheader"
    assert got[:2] == want[:2]
    text = object_text(got[2])
    assert text == json_value(want[2].to_dict()), (name, data)
    assert got[2] == json_members(want[2])
    return "ok"


def native(typed: TypedDecoder) -> int:
    """How many metadata the decoder renders in C."""
    return sum(is_native(render) for render in typed._typed_json.values())


def test_every_reference_event_and_mutations():
    events = reference_events()
    typed = TypedDecoder()
    kinds: dict[str, int] = {}
    for name, data, offset in events:
        kind = same(typed, name, data, offset)
        kinds[kind] = kinds.get(kind, 0) + 1
    assert kinds["ok"] > 600 and native(typed) > 200, (kinds, native(typed))
    rng = random.Random(5)
    for _ in range(4000):
        kind = same(typed, *mutated_event(rng, events))
        kinds[kind] = kinds.get(kind, 0) + 1
    assert kinds.get("error", 0) > 300, kinds


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(field_defs(), st.binary(max_size=160), st.booleans())
def test_random_layouts_and_payloads(defs, payload, little):
    same(TypedDecoder(), "P_L5K1", event(defs, payload, little=little))


@pytest.mark.parametrize("little", [True, False])
def test_values_whose_typed_json_is_not_decode_json(little):
    """Hex values and errnos are numbers, times ISO text, names untagged, control
    characters and non-ASCII text as orjson writes them, a lone surrogate as its text
    ``\\ud800``; a name twice keeps the first (no C renderer for such metadata)."""
    order = "little" if little else "big"
    typed = TypedDecoder()
    defs = [fd(b"h", E.VALUE32, F.HEX_INT, tag=5), fd(b"e", E.VALUE32, F.ERRNO),
            fd(b"t", E.VALUE64, F.TIME), fd(b"s", E.ZSTRING_CHAR8, F.STRING_UTF),
            fd(b"c", E.VALUE16, F.STRING_UTF), fd(b"n\xc3\xa9", E.VALUE8),
            fd(b"w", E.ZSTRING_CHAR16)]
    payload = ((0xABCD).to_bytes(4, order) + (2).to_bytes(4, order)
               + (86400).to_bytes(8, order) + "a\x01\"é\0".encode() + (0xE9).to_bytes(2, order)
               + b"\x07" + b"".join(u.to_bytes(2, order) for u in (0xD800, 0xE9, 0)))
    same(typed, "P_L5K1", event(defs, payload, little=little))
    text = object_text(typed.typed_json_parts("P_L5K1", event(defs, payload,
                                                                little=little))[2])
    assert text == ('{"h":43981,"e":2,"t":"1970-01-02T00:00:00+00:00",'
                    '"s":"a\\u0001\\"é","c":"é","né":7,"w":"\\\\ud800é"}')
    assert native(typed) == 1
    twice = [fd(b"x", E.VALUE8), fd(b"x", E.VALUE8)]
    same(typed, "P_L5K1", event(twice, b"\x01\x02", little=little))
    assert object_text(typed.typed_json_parts("P_L5K1", event(twice, b"\x01\x02",
                                                                little=little))[2]) == '{"x":1}'
    assert native(typed) == 1  # (the second metadata has none)


def test_which_metadata_get_a_c_renderer():
    """Not those whose names become one as the rule writes them (a lone surrogate and
    its text: the first is kept), nor those with a value the Python rule writes inside
    an array or more than TYPED_PYTHON_VALUES of them (a call from C each, slower than
    one typed decode): the Python rule serves them, with the same text."""
    from ehtool.eventheader.cplan import TYPED_PYTHON_VALUES

    cases = [
        ([fd(b"\xed\xa0\x80", E.VALUE8), fd(b"\\ud800", E.VALUE8)], b"\x01\x02", False),
        ([fd(b"f", E.VALUE64, F.FLOAT, count=2)], bytes(16), False),
        ([fd(b"f%d" % i, E.VALUE64, F.FLOAT) for i in range(TYPED_PYTHON_VALUES + 1)],
         bytes(8 * (TYPED_PYTHON_VALUES + 1)), False),
        ([fd(b"f%d" % i, E.VALUE64, F.FLOAT) for i in range(TYPED_PYTHON_VALUES)]
         + [fd(b"n", E.VALUE32, count=3)], bytes(8 * TYPED_PYTHON_VALUES + 12), True),
    ]
    for defs, payload, in_c in cases:
        typed = TypedDecoder()
        data = event(defs, payload)
        same(typed, "P_L5K1", data)
        assert native(typed) == in_c, defs
    typed = TypedDecoder()
    text = object_text(typed.typed_json_parts("P_L5K1", event(*cases[0][:2]))[2])
    assert text == '{"\\\\ud800":1}'
