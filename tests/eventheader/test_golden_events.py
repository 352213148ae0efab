"""Golden events through the library: perf-decode's text, the construct grammar's parse,
big-endian copies, and the fast path against the first (slow) decode."""

from __future__ import annotations

import json

import pytest

from ehtool.eventheader.dat import iter_dat
from ehtool.render.eventheader import EventHeaderDecoder
from ehtool.render.style import COMPACT, SPACED, JsonStyle
from golden import golden_path

from .helpers import LEGACY_UTF8
from .reference import Parsed, fields_json, to_big_endian


@pytest.fixture(scope="module")
def dat_events() -> list[tuple[str, bytes]]:
    return list(iter_dat(str(golden_path("linuxtracepoints/EventHeaderInterceptorLE64.dat"))))


@pytest.fixture(scope="module")
def dat_expected() -> list[bytes]:
    """Event lines of the golden JSON (Space + FieldTag), framing removed."""
    text = golden_path("linuxtracepoints/EventHeaderInterceptorLE64.dat.linux.json").read_bytes()
    lines = [line.removesuffix(b",") for line in text.split(b"\n") if line.startswith(b"  {")]
    lines[-1] = lines[-1].removesuffix(b" ]")
    return [line[2:] for line in lines]


@pytest.fixture(scope="module")
def perf_events() -> list[tuple[str, bytes, int]]:
    """(tracepoint, raw sample, EventHeader offset) of the golden perf.data's EventHeader
    samples, when the perf.data reader is there."""
    path = golden_path("linuxtracepoints/perf.data")
    perfdata = pytest.importorskip("ehtool.perfdata.reader")
    out = []
    with perfdata.PerfDataFile.open(str(path)) as f:
        for s in f.samples(order="file"):
            fmt = s.desc.format
            if fmt is not None and fmt.eventheader_offset is not None:
                out.append((fmt.name, bytes(s.raw), fmt.eventheader_offset))
    return out


def _event_object(ev, style: JsonStyle) -> bytes:
    meta = ev.meta[len(style.sep):]
    meta_obj = b"{" + style.first + meta + style.close_obj if meta else style.empty_obj
    return (b"{" + style.first + b'"n"' + style.colon + ev.name_json + ev.fields + style.sep
            + b'"meta"' + style.colon + meta_obj + style.close_obj)


def test_every_dat_event_matches_perf_decode(dat_events, dat_expected, impl):
    assert len(dat_events) == len(dat_expected) == 374
    decoder = EventHeaderDecoder(SPACED)
    replaced = []
    for i, ((name, data), want) in enumerate(zip(dat_events, dat_expected, strict=True)):
        ev = decoder.decode(name, data)
        assert ev is not None, f"event {i} {name}"
        got = _event_object(ev, SPACED)
        if got != want:
            # only difference allowed: a code point above U+10FFFF, which perf-decode
            # writes as a legacy 5/6-byte form and ehtool as U+FFFD
            fixed = LEGACY_UTF8.sub("\ufffd".encode(), want)
            assert fixed != want and got == fixed, f"event {i} {name}"
            replaced.append(ev.name_json)
        json.loads(got)
    # the value 0x7FFFFFFF of the 32-bit char events
    assert sorted(replaced) == [b'"TestProviderC:u32ch"', b'"TestProviderC:wch"',
                                b'"TestProviderCpp:u32ch"', b'"TestProviderCpp:wch"']


def test_dat_events_decode_the_same_on_the_fast_path(dat_events):
    decoder = EventHeaderDecoder(SPACED)
    first = [decoder.decode_parts(name, data)[:3] for name, data in dat_events]
    assert decoder.fast_cache  # the events were remembered
    for _ in range(2):
        again = [decoder.decode_parts(name, data)[:3] for name, data in dat_events]
        assert again == first
    fresh = EventHeaderDecoder(SPACED)
    for (name, data), want in zip(reversed(dat_events), reversed(first), strict=True):
        assert fresh.decode_parts(name, data)[:3] == want


@pytest.mark.parametrize("style", [SPACED, COMPACT, JsonStyle(space=False),
                                   JsonStyle(field_tags=False)])
def test_grammar_and_plan_agree_on_dat_events(dat_events, style):
    decoder = EventHeaderDecoder(style)
    for i, (name, data) in enumerate(dat_events):
        parsed = Parsed(data)
        ev = decoder.decode(name, data)
        assert ev.fields == fields_json(parsed, style), f"event {i} {name}"
        # the plan's field tree is the grammar's parse of the metadata
        plan = ev.info.plan
        assert plan.fields == parsed.defs
        assert plan.event_name + plan.attributes == parsed.name


def test_big_endian_copies_decode_to_the_same_json(dat_events):
    le, be = EventHeaderDecoder(SPACED), EventHeaderDecoder(SPACED)
    converted = 0
    for i, (name, data) in enumerate(dat_events):
        big = to_big_endian(data)
        assert big != data and big[0] == data[0] & ~0x02
        a, b = le.decode(name, data), be.decode(name, big)
        assert (b.name_json, b.meta, b.fields) == (a.name_json, a.meta, a.fields), \
            f"event {i} {name}"
        assert b.fields == fields_json(Parsed(big), SPACED)
        converted += 1
    assert converted == 374


def test_perf_data_eventheader_events_match_perf_decode(perf_events, impl):
    text = golden_path("linuxtracepoints/perf.data.linux.json").read_bytes()
    expected = [line.removesuffix(b",").removesuffix(b" ]")[1:]
                for line in text.split(b"\n") if line.startswith(b" {")]
    assert len(expected) == 539
    by_name = [e for e in expected if not e.startswith(b'{"n":"sched:')]
    # code points above U+10FFFF: see test_every_dat_event_matches_perf_decode
    assert sum(len(LEGACY_UTF8.findall(e)) for e in by_name) == 4
    by_name = [LEGACY_UTF8.sub("\ufffd".encode(), e) for e in by_name]
    decoder = EventHeaderDecoder(COMPACT)
    assert len(perf_events) == len(by_name) == 254
    for i, ((name, raw, offset), want) in enumerate(zip(perf_events, by_name, strict=True)):
        ev = decoder.decode(name, raw, offset)
        assert ev is not None
        head = b'{"n":' + ev.name_json + ev.fields + b',"meta":{'
        assert want.startswith(head), f"sample {i} {name}"
        meta = json.loads(want)["meta"]
        eh_meta = {k: meta[k] for k in meta if k not in ("time", "cpu", "pid", "tid")}
        assert json.loads(b"{" + ev.meta[1:] + b"}") == eh_meta, f"sample {i}"
        assert list(json.loads(b"{" + ev.meta[1:] + b"}")) == list(eh_meta)


def test_grammar_and_plan_agree_on_perf_data_events(perf_events):
    decoder = EventHeaderDecoder(SPACED)
    for name, raw, offset in perf_events:
        ev = decoder.decode(name, raw, offset)
        assert ev.fields == fields_json(Parsed(raw[offset:]), SPACED)
