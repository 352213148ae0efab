"""A fuzz target over real recordings (issue 13): each mutated input is decoded in
process and must give no internal error, an exit status from the README's table, valid
JSON and JSON Lines, the same bytes with the C loops and in pure Python, and with one and
two processes. Seeded and count-based: ``EHTOOL_FUZZ_MUTATIONS`` inputs (default 400 in
CI); ``python3 scripts/fuzz_decode.py N`` runs the same check for N inputs offline."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from ehtool.decode.fuzzing import check_input, mutate, seeds

REPO = Path(__file__).resolve().parents[2]
COUNT = int(os.environ.get("EHTOOL_FUZZ_MUTATIONS", "400"))


@pytest.fixture(scope="module")
def originals() -> list[bytes]:
    found = seeds(REPO)
    assert len(found) >= 5
    return found


def test_mutated_recordings(originals, tmp_path, monkeypatch):
    monkeypatch.setattr("ehtool.decode.parallel.PARALLEL_MIN_BYTES", 1 << 12)
    monkeypatch.setattr("ehtool.decode.parallel.PART_MIN_BYTES", 1 << 12)
    rng = random.Random(20261124)
    path = tmp_path / "m.data"
    for i in range(COUNT):
        data = mutate(rng, rng.choice(originals))
        path.write_bytes(data)
        problem = check_input(str(path))
        assert problem is None, f"input {i}: {problem} (seed 20261124)"


@pytest.mark.parametrize("name", sorted(p.name for p in (REPO / "tests" / "data" / "fuzz")
                                        .glob("*.data")))
def test_inputs_the_fuzzer_found(name, monkeypatch):
    """Each file under tests/data/fuzz once broke a check (see tests/data/README.md)."""
    monkeypatch.setattr("ehtool.decode.parallel.PARALLEL_MIN_BYTES", 1 << 12)
    monkeypatch.setattr("ehtool.decode.parallel.PART_MIN_BYTES", 1 << 12)
    assert check_input(str(REPO / "tests" / "data" / "fuzz" / name)) is None
