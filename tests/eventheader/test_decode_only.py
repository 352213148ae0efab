"""``TypedDecoder.decode(..., only=names)`` (what filters use): the same fields as a whole
decode restricted to those names, and the same verdict on malformed events, on every
event of the reference .dat capture and on seeded mutations of them."""

from __future__ import annotations

import random

import pytest

from ehtool.eventheader.dat import iter_dat
from ehtool.eventheader.decoder import EventHeaderError, TypedDecoder, parse_name, read_event
from ehtool.eventheader.grammar import parse_metadata
from golden import golden_path


def _decode(decoder, name, data, only=None):
    try:
        return decoder.decode(name, data, 0, only), None
    except EventHeaderError as exc:
        return None, str(exc)


def _raw_names(name: str, data: bytes) -> set[bytes]:
    """The top-level field names of an EventHeader event, as bytes."""
    raw = read_event(parse_name(name), data)
    return {d.name for d in parse_metadata(raw.metadata, raw.little)[1]} if raw else set()


def _check(decoder: TypedDecoder, name: str, data: bytes) -> int:
    full, error = _decode(decoder, name, data)
    # names a filter can give: a name that is not UTF-8 shows its invalid bytes as Latin-1
    # characters (as decode's JSON shows it), whose UTF-8 is not the name's bytes
    names = sorted({n for n, _ in full.fields if n.encode() in _raw_names(name, data)}
                   ) if full else []
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


@pytest.mark.parametrize("seed", range(3))
def test_the_c_check_gives_the_walks_verdict(events, seed, monkeypatch):
    """``decode(only=())`` checks an event whole with the C walk of the JSON renderer's
    bounds (``ParsedMetadata.check``): the same verdict and message as the Python walk,
    on the reference events and on copies cut or changed in their field data."""
    from ehtool.eventheader import decoder as module
    from ehtool.speedups import load

    if load() is None:
        pytest.skip("the C module is not built (or EHTOOL_PURE is set): no C check")
    fast = TypedDecoder()
    monkeypatch.setattr(module, "_whole_check", lambda defs, little: None)
    walked = TypedDecoder()
    monkeypatch.undo()
    rng = random.Random(seed)
    checked = 0
    for _ in range(3000):
        name, data = rng.choice(events)
        found = fast.identify(name, data)
        if found is None:
            continue
        start = found[1].payload
        data = bytearray(data)
        for _ in range(rng.randint(1, 3)):
            if len(data) > start and rng.random() < 0.3:
                del data[rng.randrange(start, len(data) + 1):]
            elif len(data) > start:
                data[rng.randrange(start, len(data))] = rng.choice((0, 1, 0xFF, rng.randrange(256)))
        data = bytes(data)
        assert _decode(fast, name, data, frozenset()) == _decode(walked, name, data, frozenset())
        checked += fast.identify(name, data) is not None
    assert checked > 2000
    assert sum(p.check is not None for p in fast._metadata.values()) > 10
