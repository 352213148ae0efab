"""The filters' fast path for fields an EventHeader event has: ``check_parts`` (the C
walk of the JSON plan, ``Plan.check``) accepts exactly the events the JSON renderer
accepts, and on those ``field_extractor`` gives the fields ``TypedDecoder.decode(only=...)``
gives (which must succeed), on every EventHeader event of the reference .dat capture, of
the reference recording and of examples/eventheader.data, and on seeded mutations of
them (cut, bytes changed, mostly in the payload)."""

from __future__ import annotations

import random
import struct

import pytest

from ehtool.eventheader.decoder import TypedDecoder, field_extractor
from ehtool.eventheader.enums import FieldEncoding as E
from ehtool.eventheader.enums import HeaderFlags
from ehtool.render.eventheader import EventHeaderDecoder
from ehtool.render.style import COMPACT
from impl import impl  # noqa: F401 (fixture)

from .helpers import event, fd, reference_events


@pytest.fixture(scope="module")
def events() -> list[tuple[str, bytes, int]]:
    return reference_events()


def _outcome(fn, *args):
    try:
        return fn(*args), None
    except ValueError as exc:
        return None, exc


def _check(json: EventHeaderDecoder, typed: TypedDecoder, name: str, data: bytes,
           offset: int) -> bool:
    """Compares the fast path with the renderer and the typed decoder on one event;
    True when the fast path took it."""
    parts, check_error = _outcome(json.check_parts, name, data, offset)
    whole, render_error = _outcome(json.decode_parts, name, data, offset)
    assert (check_error is None) == (render_error is None), (name, check_error, render_error)
    assert (parts is None) == (whole is None), name
    if parts is None:
        return False
    assert parts == whole[3:], name
    full = typed.decode(name, data, offset)  # what the renderer takes, the typed layer takes
    assert full is not None, name
    info, _, _, pos = parts
    little = bool(info.flags & HeaderFlags.LITTLE_ENDIAN)
    names = sorted({d.name for d in info.plan.fields})
    for only in [frozenset(), frozenset(names), frozenset(names[::2]),
                 frozenset(names[1::3]), *(frozenset({n}) for n in names)]:
        got = field_extractor(info.plan.fields, little, only)(data, pos, offset)
        want = typed.decode(name, data, offset, only).fields
        assert repr(got) == repr(want), (name, only)  # repr: NaN, and types
    return True


def test_every_reference_event(events, impl):  # noqa: F811
    json, typed = EventHeaderDecoder(COMPACT), TypedDecoder()
    for _ in range(2):  # the second time through the formatter loop's cache
        assert sum(_check(json, typed, *event) for event in events) > len(events) * 0.9


@pytest.mark.parametrize("seed", range(4))
def test_mutated_events(events, seed, impl):  # noqa: F811
    rng = random.Random(seed)
    json, typed = EventHeaderDecoder(COMPACT), TypedDecoder()
    for one in events:
        _check(json, typed, *one)  # the originals in the cache: mutations hit it
    taken = 0
    for _ in range(1500):
        name, data, offset = rng.choice(events)
        parts = json.check_parts(name, data, offset)
        start = parts[3] if parts is not None and rng.random() < 0.8 else offset
        data = bytearray(data)
        for _ in range(rng.randint(1, 3)):
            if rng.random() < 0.3 and len(data) > start + 1:
                del data[rng.randrange(start, len(data)):]  # cut
            elif len(data) > start:
                data[rng.randrange(start, len(data))] = rng.randrange(256)
        taken += _check(json, typed, name, bytes(data), offset)
    assert taken > 300


def _random_field(rng: random.Random, name: bytes, little: bool) -> tuple[list, bytes]:
    """The definitions of a field of a random encoding, format and shape (a struct's
    members follow it), and a value for it."""
    order = "<" if little else ">"
    roll = rng.random()
    if roll < 0.6:  # fixed-size: scalar, constant array or variable array
        enc = rng.choice([E.VALUE8, E.VALUE16, E.VALUE32, E.VALUE64, E.VALUE128])
        size = {E.VALUE8: 1, E.VALUE16: 2, E.VALUE32: 4, E.VALUE64: 8, E.VALUE128: 16}[enc]
        fmt = rng.randrange(19)
        shape = rng.random()
        if shape < 0.5:
            return [fd(name, enc, fmt)], rng.randbytes(size)
        if shape < 0.75:
            n = rng.randint(1, 4)
            return [fd(name, enc, fmt, count=n)], rng.randbytes(size * n)
        n = rng.randint(0, 4)
        return [fd(name, enc, fmt, varray=True)], struct.pack(order + "H", n) + rng.randbytes(
            size * n)
    if roll < 0.85:  # strings and binary data
        enc = rng.choice([E.ZSTRING_CHAR8, E.ZSTRING_CHAR16, E.STRING_LENGTH16_CHAR8,
                          E.STRING_LENGTH16_CHAR16, E.BINARY_LENGTH16_CHAR8])
        unit = 2 if enc in (E.ZSTRING_CHAR16, E.STRING_LENGTH16_CHAR16) else 1
        fmt = rng.choice([0, 1, 3, 9, 10, 11, 12, 15])
        text = bytes(rng.randrange(1, 128) for _ in range(rng.randint(0, 5) * unit))
        if enc in (E.ZSTRING_CHAR8, E.ZSTRING_CHAR16):
            return [fd(name, enc, fmt)], text + b"\0" * unit
        return [fd(name, enc, fmt)], struct.pack(order + "H", len(text) // unit) + text
    return ([fd(name, E.STRUCT, 2), fd(b"m", E.VALUE32, 1), fd(b"s", E.ZSTRING_CHAR8)],
            rng.randbytes(4) + b"ab\0")


@pytest.mark.parametrize("little", [True, False])
def test_random_layouts_in_both_byte_orders(little, impl):  # noqa: F811
    """Every kind of the rulebook, arrays, strings and structs, at fixed places and after
    variable-size fields, duplicate names too."""
    rng = random.Random(little)
    json, typed = EventHeaderDecoder(COMPACT), TypedDecoder()
    for _ in range(400):
        fields, payload = [], b""
        for i in range(rng.randint(1, 7)):
            name = b"f%d" % (i if rng.random() < 0.85 else 0)
            definitions, value = _random_field(rng, name, little)
            fields += definitions
            payload += value
        data = event(fields, payload, little=little)
        for _ in range(2):  # the second time through the formatter loop's cache
            assert _check(json, typed, "Prov_L5K1", data, 0)
