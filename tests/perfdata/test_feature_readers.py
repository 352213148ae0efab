"""The header's feature sections read with struct (derived from their grammars) give what
the construct parse gives, errors included: on every feature of the test recordings in
both byte orders, cut at every length and with bytes after them."""

from __future__ import annotations

import random

import construct as c
import pytest

from ehtool.perfdata.grammar import Feature, grammar_for
from ehtool.perfdata.hotpath import feature_reader, section_struct
from ehtool.perfdata.metadata import feature_bits
from ehtool.perfdata.reader import PerfDataFile

from .conftest import DATA, EXAMPLE
from .helpers import transcode_file


def _outcome(parse, data: bytes):
    try:
        return "ok", parse(data)
    except c.ConstructError as exc:
        return "error", (type(exc), str(exc))


def _agree(g, bit: int, data: bytes) -> None:
    fast = feature_reader(g, bit)
    assert fast is not None, bit
    want = _outcome(g.features[bit].parse, data)
    got = _outcome(fast, data)
    assert got == want, (bit, data)
    if want[0] == "ok":  # the same types too (str, int, Container, ListContainer)
        assert type(got[1]) is type(want[1])


def test_feature_readers_agree_with_construct(golden_perf, tmp_path):
    paths = [EXAMPLE, EXAMPLE.parent / "eventheader.data", golden_perf,
             *sorted(DATA.glob("*.data")), *sorted((DATA / "threads").glob("*.data"))]
    be = tmp_path / "be.data"
    transcode_file(golden_perf, be)
    paths.append(be)
    bits_seen = set()
    for path in paths:
        with PerfDataFile.open(path) as f:
            g = f.grammar
            for bit, data in f.info.features.items():
                if bit in g.features and bit != Feature.EVENT_DESC:
                    bits_seen.add(bit)
                    for end in range(len(data) + 1):
                        _agree(g, bit, data[:end])
                    _agree(g, bit, data + b"\1" * 9)
    assert set(grammar_for(False).features) - bits_seen == {Feature.EVENT_DESC}


@pytest.mark.parametrize("big", [False, True])
def test_feature_readers_agree_on_random_bytes(big):
    """Random sections (small length prefixes and counts, so that some parse)."""
    g = grammar_for(big)
    rng = random.Random(3)
    for bit in g.features:
        if bit == Feature.EVENT_DESC:
            assert feature_reader(g, bit) is None  # (attrs: the memoized grammar)
            continue
        for _ in range(300):
            data = bytes(rng.choice((0, 1, 2, 3, 4, 65, 0xFF)) for _ in range(rng.randrange(24)))
            _agree(g, bit, data)


def test_feature_bits_and_sections_as_the_grammar():
    rng = random.Random(4)
    for _ in range(200):
        words = [rng.getrandbits(64) & rng.getrandbits(64) for _ in range(4)]
        assert feature_bits(words) == [b for b in range(256) if words[b // 64] >> (b % 64) & 1]
    for big in (False, True):
        g = grammar_for(big)
        raw = bytes(range(16))
        sec = g.section.parse(raw)
        assert section_struct(g).unpack_from(raw) == (sec.offset, sec.size)
