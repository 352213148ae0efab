"""Random and mutated inputs never break the decoder or the JSON document.

Two seeded mutation loops of a fixed number of inputs (``EHTOOL_FUZZ_EVENTS``
mutated events, ``EHTOOL_FUZZ_FILES`` mutated perf.data files; the same inputs
on every run, more with larger counts) plus hypothesis properties. Each event
also goes through the typed decoder, which must agree on what is EventHeader and
on what fails.
"""

from __future__ import annotations

import io
import json
import os
import random

import pytest
from fuzz.harness import mutate
from hypothesis import given, settings
from hypothesis import strategies as st

from ehtool.decode.pipeline import DecodeOptions, decode_to
from ehtool.errors import EhtoolError
from ehtool.eventheader.dat import iter_dat
from ehtool.eventheader.decoder import TypedDecoder
from ehtool.render.eventheader import EventHeaderDecoder, EventHeaderError
from ehtool.render.style import COMPACT, SPACED
from golden import golden_path

FUZZ_EVENTS = int(os.environ.get("EHTOOL_FUZZ_EVENTS", "50000"))
FUZZ_FILES = int(os.environ.get("EHTOOL_FUZZ_FILES", "60"))


@pytest.fixture(scope="module")
def golden_events() -> list[tuple[str, bytes]]:
    return list(iter_dat(str(golden_path("linuxtracepoints/EventHeaderInterceptorLE64.dat"))))


_TYPED = TypedDecoder()


def _check(decoder: EventHeaderDecoder, name: str, data: bytes) -> None:
    try:
        ev = decoder.decode(name, data)
    except EventHeaderError:
        ev = False
    try:
        typed = _TYPED.decode(name, data)
    except EventHeaderError:
        typed = False
    # both see the same event, or both none, and both fail it or neither (the messages
    # of bounds errors may differ: where the renderer reads many values at once)
    assert (ev is None) == (typed is None), (name, data)
    assert (ev is False) == (typed is False), (name, data)
    if ev:
        json.loads(b'{"n":' + ev.name_json + ev.fields + b',"meta":{"x":0' + ev.meta + b"}}")


def test_mutated_golden_events(golden_events):
    rng = random.Random(1234)
    decoders = [EventHeaderDecoder(SPACED), EventHeaderDecoder(COMPACT)]
    for _ in range(FUZZ_EVENTS):
        name, data = rng.choice(golden_events)
        _check(rng.choice(decoders), name, mutate(rng, data))


def test_mutated_perf_data(tmp_path):
    original = golden_path("linuxtracepoints/perf.data").read_bytes()
    rng = random.Random(99)
    path = tmp_path / "m.data"
    for _ in range(FUZZ_FILES):
        buf = bytearray(original)
        for _ in range(rng.randint(1, 20)):
            buf[rng.randrange(len(buf))] = rng.randrange(256)
        if rng.random() < 0.3:
            del buf[rng.randrange(len(buf)):]
        path.write_bytes(bytes(buf))
        out = io.BytesIO()
        errors = decode_to(out, [str(path)], DecodeOptions(warn=lambda m: None))
        assert all(isinstance(e, EhtoolError) for e in errors)
        json.loads(out.getvalue())


@settings(max_examples=500, deadline=None)
@given(st.text(min_size=1, max_size=40), st.binary(max_size=300))
def test_random_bytes(name, data):
    _check(EventHeaderDecoder(SPACED), name, data)


@settings(max_examples=500, deadline=None)
@given(st.binary(min_size=0, max_size=200))
def test_random_metadata_with_valid_header(meta):
    # a valid header and a metadata extension whose content is random
    data = bytes([7, 0, 0, 0, 0, 0, 0, 5]) + len(meta).to_bytes(2, "little") + b"\x01\x00" + meta
    _check(EventHeaderDecoder(SPACED), "Prov_L5K1", data + bytes(range(64)))
