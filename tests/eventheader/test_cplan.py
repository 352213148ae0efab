"""The C renderer (``_speedups.Plan``) gives exactly what the generated Python renderer
of the same metadata gives: output bytes, or the same EventHeaderError."""

from __future__ import annotations

import itertools
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ehtool.eventheader.dat import iter_dat
from ehtool.eventheader.enums import FieldEncoding as E
from ehtool.eventheader.enums import FieldFormat as F
from ehtool.eventheader.grammar import EventHeaderError, parse_extensions
from ehtool.render.eventheader import EventHeaderDecoder
from ehtool.render.plan import compile_plan
from ehtool.render.style import COMPACT, SPACED
from golden import golden_path
from impl import is_native, require_speedups

from .helpers import event, fd
from .test_properties import field_defs


@pytest.fixture(autouse=True)
def _native(monkeypatch):
    monkeypatch.delenv("EHTOOL_PURE", raising=False)
    require_speedups()


def plan_of(data: bytes, style=SPACED):
    """(plan, payload position) of a hand-built event (header at 0)."""
    little = bool(data[0] & 2)
    metadata, _activity, pos = parse_extensions(data, 8, little)
    return compile_plan(metadata, little, style), pos


def outcome(render, data: bytes, pos: int) -> tuple[str, bytes | str]:
    try:
        return "ok", render(data, pos, 0)
    except EventHeaderError as exc:
        return "error", str(exc)


def same(data: bytes, style=SPACED) -> str:
    """Both renderers of ``data``'s metadata agree; returns the outcome kind."""
    try:
        plan, pos = plan_of(data, style)
    except (EventHeaderError, IndexError, TypeError):  # short, no or bad metadata
        return "bad metadata"
    c = outcome(plan.render, data, pos)
    assert c == outcome(plan.py_render, data, pos)
    return c[0] if is_native(plan.render) else "python only"


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(field_defs(), st.binary(max_size=160), st.booleans(), st.booleans())
def test_random_layouts_and_payloads(defs, payload, little, compact):
    same(event(defs, payload, little=little), COMPACT if compact else SPACED)


def test_golden_and_mutated_golden_events():
    events = list(iter_dat(str(golden_path(
        "linuxtracepoints/EventHeaderInterceptorLE64.dat"))))
    kinds = {}
    for _name, data in events:
        kind = same(data)
        kinds[kind] = kinds.get(kind, 0) + 1
    assert kinds.get("ok", 0) >= len(events) - 5, kinds  # nearly all run in C
    rng = random.Random(11)
    for _ in range(3000):
        _name, data = rng.choice(events)
        buf = bytearray(data)
        for _ in range(rng.randint(1, 3)):
            if rng.randrange(2) and buf:
                buf[rng.randrange(len(buf))] = rng.randrange(256)
            else:
                del buf[rng.randrange(len(buf) + 1):]
        kind = same(bytes(buf))
        kinds[kind] = kinds.get(kind, 0) + 1
    assert kinds.get("error", 0) > 100 and kinds["ok"] > 500, kinds


ASCII = bytes(range(0x20, 0x7F))
STRING_FORMATS = (F.DEFAULT, F.STRING8, F.STRING_UTF, F.STRING_UTF_BOM, F.STRING_XML,
                  F.STRING_JSON, F.HEX_BYTES, F.UNSIGNED_INT)


@pytest.mark.parametrize("little", [True, False])
@pytest.mark.parametrize("encoding", [E.ZSTRING_CHAR8, E.ZSTRING_CHAR16, E.ZSTRING_CHAR32,
                                      E.STRING_LENGTH16_CHAR8, E.STRING_LENGTH16_CHAR16,
                                      E.STRING_LENGTH16_CHAR32, E.BINARY_LENGTH16_CHAR8])
def test_printable_ascii_strings_of_every_width_and_format(encoding, little):
    """The C code writes printable ASCII itself: every character, quotes and
    backslashes (which need escapes) included, against the Python formatters."""
    unit = {E.ZSTRING_CHAR16: 2, E.ZSTRING_CHAR32: 4, E.STRING_LENGTH16_CHAR16: 2,
            E.STRING_LENGTH16_CHAR32: 4}.get(encoding, 1)
    codec = {1: "latin-1", 2: "utf-16", 4: "utf-32"}[unit]
    suffix = "" if unit == 1 else ("-le" if little else "-be")
    boms = (b"", b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff", b"\xff\xfe\0\0", b"\0\0\xfe\xff")
    for bom, text in itertools.product(boms, (ASCII, b"", b"plain", b'say "hi"\\',
                                              b"tab\there", b"\x7f", b"\xe9t\xe9")):
        units = bom + text.decode("latin-1").encode(codec + suffix)
        units += bytes(-len(units) % unit)
        zero = encoding in (E.ZSTRING_CHAR8, E.ZSTRING_CHAR16, E.ZSTRING_CHAR32)
        count = len(units) // unit
        value = units + bytes(unit) if zero else count.to_bytes(2, "little" if little
                                                                else "big") + units
        for fmt in STRING_FORMATS:
            data = event([fd(b"s", encoding, fmt)], value, little=little)
            assert same(data) == "ok", (text, fmt)


@pytest.mark.parametrize("little", [True, False])
def test_integers_of_every_size_and_integer_format(little):
    rng = random.Random(3)
    for size, enc in ((1, E.VALUE8), (2, E.VALUE16), (4, E.VALUE32), (8, E.VALUE64)):
        for fmt in range(0, 20):
            for value in (0, 1, 0x41, 0x22, 0x7E, 0x7F, 2 ** (8 * size) - 1, 2 ** (8 * size - 1),
                          2 ** (8 * size - 1) - 1, rng.getrandbits(8 * size)):
                raw = value.to_bytes(size, "little" if little else "big")
                data = event([fd(b"v", enc, fmt), fd(b"a", enc, fmt, varray=True)],
                             raw + (b"\x02\x00" if little else b"\x00\x02") + raw + raw,
                             little=little)
                assert same(data) == "ok"


def test_limits_and_truncation_defer_to_python_with_its_errors():
    many = event([fd(b"a", E.VALUE8, varray=True)], b"\xff\xff" + bytes(65535))
    assert same(many) == "error"  # MoveNext limit: the Python message
    nested = [fd(b"s", E.STRUCT, 1, count=3), fd(b"t", E.STRUCT, 2, varray=True),
              fd(b"x", E.VALUE32), fd(b"z", E.ZSTRING_CHAR16)]
    full = event(nested, (b"\x01\x00" + b"\x01\x00\x00\x00" + b"a\x00\x00\x00") * 3)
    assert same(full) == "ok"
    for cut in range(len(full)):
        assert same(full[:cut]) in ("error", "bad metadata")


def test_definitions_that_fail_every_event_have_no_c_plan():
    deep = [fd(b"s%d" % i, E.STRUCT, 1) for i in range(9)] + [fd(b"x", E.VALUE8)]
    plan, _ = plan_of(event(deep, b"\x01"))
    assert not is_native(plan.render)
    ok, _ = plan_of(event(deep[1:], b"\x01"))
    assert is_native(ok.render)


def test_decoder_uses_the_c_renderer_and_pure_mode_does_not(monkeypatch):
    data = event([fd(b"n", E.VALUE32)], b"\x07\x00\x00\x00")
    native = EventHeaderDecoder(SPACED)
    assert native.decode("P_L5K1", data).fields == b', "n": 7'
    info = native.fast_cache["P_L5K1"][data[:12]].info
    assert is_native(info.plan.render)
    monkeypatch.setenv("EHTOOL_PURE", "1")
    pure = EventHeaderDecoder(SPACED)
    assert pure.decode("P_L5K1", data).fields == b', "n": 7'
    assert not is_native(pure.fast_cache["P_L5K1"][data[:12]].info.plan.render)
