"""The hand-written metadata reader (the fast path) reads what the construct grammar
reads, and declines (None) wherever the grammar refuses: on every metadata of the
reference capture, on seeded mutations of them, and on random bytes."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ehtool.eventheader.dat import iter_dat
from ehtool.eventheader.decoder import parse_name, read_event
from ehtool.eventheader.grammar import (
    EventHeaderError,
    grammar_field_defs,
    read_field_defs,
)
from golden import golden_path


def agree(metadata: bytes, little: bool) -> bool:
    """True when the fast reader read it (False when it declined, as it must)."""
    fast = read_field_defs(metadata, little)
    try:
        slow = grammar_field_defs(metadata, little)
    except EventHeaderError:
        assert fast is None, metadata
        return False
    if fast is None:  # (declining what the grammar reads would only be slow)
        raise AssertionError(f"declined metadata the grammar reads: {metadata!r}")
    assert fast == slow, metadata
    return True


@pytest.fixture(scope="module")
def metadata() -> list[tuple[bytes, bool]]:
    out = []
    for name, data in iter_dat(golden_path("linuxtracepoints/EventHeaderInterceptorLE64.dat")):
        event = read_event(parse_name(name), data)
        if event is not None:
            out.append((event.metadata, event.little))
    assert len(out) > 300
    return out


def test_every_reference_metadata(metadata):
    assert all(agree(m, little) for m, little in metadata)
    assert all(agree(m, not little) for m, little in metadata)  # the other byte order


@pytest.mark.parametrize("seed", range(3))
def test_mutated_metadata(metadata, seed):
    rng = random.Random(seed)
    read = 0
    for _ in range(3000):
        m, little = rng.choice(metadata)
        buf = bytearray(m)
        for _ in range(rng.randint(1, 3)):
            op = rng.randrange(3)
            if op == 0 and buf:
                buf[rng.randrange(len(buf))] = rng.randrange(256)
            elif op == 1 and buf:
                del buf[rng.randrange(len(buf)):]
            else:
                at = rng.randrange(len(buf) + 1)
                buf[at:at] = rng.randbytes(rng.randint(1, 4))
        read += agree(bytes(buf), little)
    assert 300 < read < 3000  # both outcomes met


@settings(max_examples=3000, deadline=None)
@given(st.binary(max_size=64), st.booleans())
def test_random_bytes(data, little):
    agree(data, little)
