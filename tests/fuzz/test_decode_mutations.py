"""A fuzz target over real recordings (issue 13): each mutated input is decoded and must
give no internal error, an exit status from the README's table, valid JSON and JSON
Lines, as many ``--format text`` lines as JSON Lines (without input errors), the same
bytes with the C loops and in pure Python, and with one, two and three processes, and
cost at most 48 MB of resident memory above what the checking process had before the
input (its own peak and its decode workers'). Seeded and count-based:
``EHTOOL_FUZZ_MUTATIONS`` inputs (default 400 in CI) through ``scripts/fuzz_decode.py``
in a process of its own (so that the RSS check measures the decoding, not pytest);
``python3 scripts/fuzz_decode.py N`` runs the same check for N inputs offline."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from fuzz.harness import check_input, seeds

REPO = Path(__file__).resolve().parents[2]
COUNT = int(os.environ.get("EHTOOL_FUZZ_MUTATIONS", "400"))


@pytest.fixture(scope="module")
def originals() -> list[bytes]:
    found = seeds(REPO)
    assert len(found) >= 5
    return found


def test_mutated_recordings(originals, tmp_path):
    import subprocess
    import sys

    done = subprocess.run([sys.executable, str(REPO / "scripts" / "fuzz_decode.py"),
                           str(COUNT), "--seed", "20261124", "--work", str(tmp_path)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"{COUNT} inputs, 0 problems" in done.stdout, done.stdout


@pytest.mark.parametrize("name", sorted(p.name for p in (REPO / "tests" / "data" / "fuzz")
                                        .glob("*.data")))
def test_inputs_the_fuzzer_found(name, monkeypatch):
    """Each file under tests/data/fuzz once broke a check (see tests/data/README.md)."""
    monkeypatch.setattr("ehtool.decode.parallel.PARALLEL_MIN_BYTES", 1 << 12)
    monkeypatch.setattr("ehtool.decode.parallel.PART_MIN_BYTES", 1 << 12)
    assert check_input(str(REPO / "tests" / "data" / "fuzz" / name)) is None


def test_the_memory_check_judges_each_input_alone(monkeypatch):
    """An input whose decoding takes 64 MB more is reported; the next one, which does
    not, is not (the peak is reset per input: a process-wide peak once reported every
    input after the first heavy one)."""
    import fuzz.harness as harness

    real = harness._decode
    heavy = [True]

    def decode(path, **kw):
        if heavy[0]:
            block = bytearray(64 << 20)
            block[::4096] = b"x" * len(block[::4096])  # (resident, page by page)
            del block
        return real(path, **kw)

    monkeypatch.setattr(harness, "_decode", decode)
    path = str(REPO / "examples" / "sched.data")
    assert (check_input(path, 48) or "").startswith("resident memory grew by ")
    heavy[0] = False
    assert check_input(path, 48) is None
