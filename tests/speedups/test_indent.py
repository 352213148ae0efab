"""``--pretty``'s C indenter (``_speedups.indent_json``) gives the bytes of the Python
reference (``ehtool.render.pretty.indent_json``): on random bytes of every token class
(malformed ones too: unterminated strings, escapes at the end, NUL bytes, negative
depths) and on the events of the recordings."""

from __future__ import annotations

import random

import pytest

from ehtool import speedups as sp
from ehtool.render.pretty import indent_json
from golden import golden_path
from impl import require_speedups

_ALPHABET = b'{}[],:"\\ \t\n\r\x0b\x0c\x00ab1.-\xff'


@pytest.mark.parametrize("seed", range(4))
def test_random_bytes_indent_as_the_python_reference(seed):
    require_speedups()
    native = sp.load().indent_json
    rnd = random.Random(seed)
    for _ in range(20_000):
        value = bytes(rnd.choice(_ALPHABET) for _ in range(rnd.randint(0, 40)))
        level = rnd.randint(-2, 4)
        unit = rnd.choice([b"  ", b"\t", b""])
        assert native(value, level, unit) == indent_json(value, level, unit), (value, level)


@pytest.mark.parametrize("name", ["golden", "examples/eventheader.data", "examples/sched.data"])
def test_every_event_of_a_recording_indents_as_the_python_reference(name):
    import io
    from pathlib import Path

    from ehtool.decode.pipeline import DecodeOptions, decode_to

    require_speedups()
    path = golden_path("linuxtracepoints/perf.data") if name == "golden" else \
        Path(__file__).resolve().parents[2] / name
    out = io.BytesIO()
    assert decode_to(out, [str(path)], DecodeOptions(jobs=1, jsonl=True)) == []
    native = sp.load().indent_json
    events = out.getvalue().splitlines()
    assert len(events) > 2
    for event in events:
        assert native(event, 2, b"  ") == indent_json(event, 2)
