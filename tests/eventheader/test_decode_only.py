"""``TypedDecoder.decode(..., only=names)`` (what filters use): the same fields as a whole
decode restricted to those names, and the same verdict on malformed events, on every
event of the reference .dat capture and on seeded mutations of them."""

from __future__ import annotations

import random

import pytest

from ehtool.eventheader.dat import iter_dat
from ehtool.eventheader.decoder import EventHeaderError, TypedDecoder
from golden import golden_path


def _decode(decoder, name, data, only=None):
    try:
        return decoder.decode(name, data, 0, only), None
    except EventHeaderError as exc:
        return None, str(exc)


def _check(decoder: TypedDecoder, name: str, data: bytes) -> int:
    full, error = _decode(decoder, name, data)
    # names a filter can give (a name that is not UTF-8 shows with U+FFFD and matches none)
    names = sorted({n for n, _ in full.fields if "\ufffd" not in n}) if full else []
    choices = [frozenset(), *(frozenset({n.encode()}) for n in names),
               frozenset(n.encode() for n in names[::2])]
    for only in choices:
        part, part_error = _decode(decoder, name, data, only)
        assert part_error == error, (name, only)
        if full is None:
            assert part is None
            continue
        wanted = [(n, v) for n, v in full.fields if n.encode() in only]
        assert repr(list(part.fields)) == repr(wanted), (name, only)  # repr: NaN
        assert part.level == full.level and part.activity == full.activity
    return len(choices)


@pytest.fixture(scope="module")
def events() -> list[tuple[str, bytes]]:
    return list(iter_dat(golden_path("linuxtracepoints/EventHeaderInterceptorLE64.dat")))


def test_every_reference_event(events):
    decoder = TypedDecoder()
    assert sum(_check(decoder, name, data) for name, data in events) > len(events)


@pytest.mark.parametrize("seed", range(4))
def test_mutated_events(events, seed):
    rng = random.Random(seed)
    decoder = TypedDecoder()
    for _ in range(1500):
        name, data = rng.choice(events)
        data = bytearray(data)
        for _ in range(rng.randint(1, 3)):
            if rng.random() < 0.3 and len(data) > 9:
                del data[rng.randrange(8, len(data)):]  # cut
            elif data:
                data[rng.randrange(len(data))] = rng.randrange(256)
        _check(decoder, name, bytes(data))
