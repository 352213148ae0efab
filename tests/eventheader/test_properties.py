"""Properties: the generated fast path agrees with the construct reference decoder on
random field layouts (every encoding, format, array kind, byte order) and on mutated
golden events, failing exactly where the grammar fails."""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ehtool.eventheader.dat import iter_dat
from ehtool.eventheader.enums import FieldEncoding as E
from ehtool.render.eventheader import EventHeaderDecoder, EventHeaderError
from ehtool.render.style import COMPACT, SPACED
from golden import golden_path

from .helpers import event, fd
from .reference import Parsed, construct_fails, fields_json

FORMATS = st.one_of(st.integers(0, 20), st.just(0x7F))


@st.composite
def field_defs(draw, depth: int = 0) -> list[dict]:
    out = []
    for i in range(draw(st.integers(1, 3))):
        name = b"f%d" % i
        tag = draw(st.sampled_from([0, 0, 0x1F]))
        array = draw(st.sampled_from(["scalar", "scalar", "carray", "varray"]))
        count = draw(st.integers(1, 20)) if array == "carray" else None
        varray = array == "varray"
        if depth < 2 and draw(st.integers(0, 5)) == 0:
            members = draw(field_defs(depth + 1))
            out.append(fd(name, E.STRUCT, len(members), tag, count, varray))
            out.extend(members)
        else:
            enc = draw(st.integers(E.VALUE8, E.BINARY_LENGTH16_CHAR8))
            out.append(fd(name, enc, draw(FORMATS), tag, count, varray))
    return out


def check(name: str, data: bytes, style=SPACED) -> str:
    """Decode with a fresh decoder, twice (slow then cached path), against the reference;
    returns what happened."""
    decoder = EventHeaderDecoder(style)
    try:
        ev = decoder.decode(name, data)
    except EventHeaderError as exc:
        if "enumeration steps" not in str(exc):
            assert construct_fails(data), f"the grammar parses what the plan refused: {exc}"
        with pytest.raises(EventHeaderError):
            decoder.decode(name, data)
        return "error"
    if ev is None:
        assert decoder.decode(name, data) is None
        return "none"
    assert ev.fields == fields_json(Parsed(data), style)
    assert decoder.decode(name, data).fields == ev.fields
    return "ok"


# ``impl`` (C or pure-Python renderers) is set once per test, not per example
_ONCE = [HealthCheck.function_scoped_fixture]


@settings(max_examples=400, deadline=None, suppress_health_check=_ONCE)
@given(field_defs(), st.binary(max_size=120), st.booleans(), st.booleans())
def test_random_layouts_agree_with_the_grammar(impl, defs, payload, little, compact):
    data = event(defs, payload, little=little)
    check("P_L5K1", data, COMPACT if compact else SPACED)


@settings(max_examples=300, deadline=None, suppress_health_check=_ONCE)
@given(field_defs(), st.data())
def test_random_layouts_with_well_formed_payloads(impl, defs, draw):
    # payload built so most events decode: counts small, strings terminated
    parts = []
    for _ in range(12):
        kind = draw.draw(st.sampled_from(["count", "zstr", "bytes"]))
        if kind == "count":
            parts.append(bytes([draw.draw(st.integers(0, 3)), 0]))
        elif kind == "zstr":
            parts.append(draw.draw(st.binary(max_size=6)).replace(b"\0", b"") + bytes(4))
        else:
            parts.append(draw.draw(st.binary(min_size=1, max_size=16)))
    little = draw.draw(st.booleans())
    check("P_L5K1", event(defs, b"".join(parts), little=little))


@pytest.fixture(scope="module")
def golden_events() -> list[tuple[str, bytes]]:
    return list(iter_dat(str(golden_path("linuxtracepoints/EventHeaderInterceptorLE64.dat"))))


def test_mutated_golden_events_agree_with_the_grammar(golden_events, impl):
    rng = random.Random(7)
    outcomes = {"ok": 0, "error": 0, "none": 0}
    for _ in range(3000):
        name, data = rng.choice(golden_events)
        buf = bytearray(data)
        for _ in range(rng.randint(1, 3)):
            op = rng.randrange(3) if buf else 2
            if op == 0:
                buf[rng.randrange(len(buf))] = rng.randrange(256)
            elif op == 1:
                del buf[rng.randrange(len(buf)):]
            else:
                buf += bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
        outcomes[check(name, bytes(buf))] += 1
    assert min(outcomes.values()) > 100, outcomes
