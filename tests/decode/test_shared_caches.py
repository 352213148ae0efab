"""The EventHeader decoder (its plans and caches) is the process's, shared by every input
it decodes: later inputs start warm, and an input whose metadata differs under the same
tracepoint names and headers still decodes as it does alone."""

from __future__ import annotations

import io
import json

from ehtool.decode.pipeline import DecodeOptions, decode_to
from ehtool.render import eventheader
from golden import golden_path


def _decode(paths: list[str]) -> bytes:
    out = io.BytesIO()
    assert decode_to(out, paths, DecodeOptions(jobs=1)) == []
    return out.getvalue()


def _arrays(document: bytes) -> list[list]:
    """Each input's array of events (members kept in order, as pairs)."""
    return [events for _name, events in json.loads(document, object_pairs_hook=list)]


def test_a_second_input_with_the_same_metadata_compiles_nothing(monkeypatch):
    golden = str(golden_path("linuxtracepoints/perf.data"))
    slow: list[str] = []
    real = eventheader.EventHeaderDecoder._decode_slow

    def counted(self, name, data, offset):
        slow.append(name)
        return real(self, name, data, offset)

    monkeypatch.setattr(eventheader.EventHeaderDecoder, "_decode_slow", counted)
    monkeypatch.setattr(eventheader, "_DECODERS", {})
    _decode([golden])
    first = len(slow)
    assert first > 50  # (the golden recording has many distinct EventHeader events)
    two = _decode([golden, golden])
    assert len(slow) == first  # the second and third inputs: every event a cache hit
    a, b = _arrays(two)
    assert a == b


def test_inputs_with_other_metadata_under_the_same_names_decode_as_alone(tmp_path,
                                                                           monkeypatch):
    """A copy whose EventHeader field names differ ("hello" -> "jello", "u32" -> "x32":
    same tracepoints, same 12-byte headers) after the original, in one process: each
    array is the one that input gives alone, in a fresh process's caches."""
    golden = golden_path("linuxtracepoints/perf.data")
    mutant = tmp_path / "mutant.data"
    mutant.write_bytes(golden.read_bytes().replace(b"hello", b"jello").replace(b"u32", b"x32"))
    alone = []
    for path in (golden, mutant):
        monkeypatch.setattr(eventheader, "_DECODERS", {})
        alone += _arrays(_decode([str(path)]))
    assert alone[0] != alone[1] and '"jello"' in json.dumps(alone[1])
    monkeypatch.setattr(eventheader, "_DECODERS", {})
    assert _arrays(_decode([str(golden), str(mutant), str(golden)])) == [*alone, alone[0]]


def test_the_shared_caches_stay_bounded_and_right(monkeypatch):
    """Shared by every input, the fast cache is bounded by tracepoint names too (it
    is cleared when full), and decoding through the bound gives the same bytes."""
    from ehtool.render.style import SPACED

    golden = str(golden_path("linuxtracepoints/perf.data"))
    monkeypatch.setattr(eventheader, "_DECODERS", {})
    whole = _decode([golden, golden])
    monkeypatch.setattr(eventheader, "_DECODERS", {})
    monkeypatch.setattr(eventheader, "PLAN_CACHE_MAX", 4)
    assert _decode([golden, golden]) == whole
    cache = eventheader.decoder_for(SPACED).fast_cache  # (the C one: tests/run.sh needs it)
    assert 0 < len(cache) <= 4 and all(len(per_name) <= 4 for per_name in cache.values())


def test_pure_python_after_c_in_one_process_renders_in_python(monkeypatch):
    """EHTOOL_PURE=1 after a decode with the C renderer, in one process (the fuzz
    harness and the C-vs-Python tests compare them so): the pure decode compiles its
    own plans, with the Python renderer; the shared C ones would hide any difference."""
    import ehtool.render.plan as plan_module

    golden = str(golden_path("linuxtracepoints/perf.data"))
    monkeypatch.setattr(eventheader, "_DECODERS", {})
    with_c = _decode([golden])
    compiled: list[bool] = []
    real = plan_module.compile_plan

    def watched(*args, **kw):
        compiled.append(True)
        return real(*args, **kw)

    monkeypatch.setattr(eventheader, "compile_plan", watched)
    monkeypatch.setenv("EHTOOL_PURE", "1")
    assert _decode([golden]) == with_c
    assert len(compiled) > 50  # (it fails with one decoder for both: every plan cached)
