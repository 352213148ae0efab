"""The typed decoder's fast path gives what its reference walk gives.

``TypedDecoder.decode`` finds an event's layout by the bytes that made an earlier event
of its tracepoint read so (``prefix_key``), and reads the fields with readers compiled
per metadata (``fields_reader``). The reference here is the walk without either: the
event read by ``read_event``, its metadata parsed, every field walked with its MoveNext
steps (``_Walker.whole``). Both must agree on every EventHeader event of the reference
.dat capture, of the reference recording and of examples/eventheader.data, and on seeded
mutations of them (the decoder warmed with the originals first, so that mutated events
meet remembered layouts): the same result, or the same error message.
"""

from __future__ import annotations

import random
import uuid

import pytest

from ehtool.eventheader.decoder import (
    TOP_LEVEL_FIELD_LIMIT,
    EventHeaderError,
    TypedDecoder,
    _Walker,
    parse_name,
    read_event,
)
from ehtool.eventheader.grammar import parse_metadata, step_budget
from ehtool.values.strings import UTF8_AS_SHOWN

from .helpers import mutated_event, reference_events


@pytest.fixture(scope="module")
def events() -> list[tuple[str, bytes, int]]:
    return reference_events()


def _reference(name: str, data: bytes, offset: int) -> tuple | None:
    """The decode by the plain walk: the event's parts as decode() returns them."""
    info = parse_name(name)
    raw = read_event(info, data, offset)
    if raw is None:
        return None
    event_name, defs = parse_metadata(raw.metadata, raw.little)
    if len(defs) > TOP_LEVEL_FIELD_LIMIT:
        raise EventHeaderError(f"more than {TOP_LEVEL_FIELD_LIMIT} top-level fields")
    fields = _Walker(data, raw.little, offset).whole(defs, raw.payload, step_budget(defs))
    act = raw.activity
    event, _, attributes = event_name.partition(b";")
    flags, version, ident, tag, opcode, level = raw.header
    return (info.provider, event.decode("utf-8", UTF8_AS_SHOWN),
            attributes.decode("utf-8", UTF8_AS_SHOWN), info.options, level, info.keyword, opcode,
            ident, version, tag, flags, uuid.UUID(bytes=act[:16]) if act else None,
            uuid.UUID(bytes=act[16:32]) if act and len(act) == 32 else None, repr(fields))


def _outcome(fn, *args):
    try:
        return fn(*args), None
    except EventHeaderError as exc:
        return None, str(exc)


def _check(typed: TypedDecoder, name: str, data: bytes, offset: int) -> bool:
    """True when the event decoded."""
    want, want_error = _outcome(_reference, name, data, offset)
    got, got_error = _outcome(typed.decode, name, data, offset)
    assert got_error == want_error, (name, data)
    if got is not None:
        got = (got.provider, got.name, got.attributes, got.options, got.level, got.keyword,
               got.opcode, got.id, got.version, got.tag, got.flags, got.activity,
               got.related_activity, repr(got.fields))  # repr: NaN, and types
    assert got == want, (name, data)
    return got is not None


def test_every_reference_event(events):
    typed = TypedDecoder()
    for _ in range(2):  # the second time from remembered layouts
        assert sum(_check(typed, *event) for event in events) > len(events) * 0.9
    assert typed._layouts  # (the fast path was taken)


@pytest.mark.parametrize("seed", range(6))
def test_mutated_events(events, seed):
    rng = random.Random(seed)
    typed = TypedDecoder()
    for one in events:
        _check(typed, *one)  # the originals remembered: mutations meet their layouts
    outcomes = {True: 0, False: 0}
    for _ in range(3000):
        outcomes[_check(typed, *mutated_event(rng, events))] += 1
    assert outcomes[True] > 1000 and outcomes[False] > 300, outcomes


def test_events_with_activity_ids_and_shared_first_bytes():
    """Two metadata behind the same 12 first bytes, with and without activity ids:
    each event is read by its own layout, with its own ids."""
    from ehtool.eventheader.enums import FieldEncoding as E

    from .helpers import event, fd

    typed = TypedDecoder()
    a = event([fd(b"x", E.VALUE32)], b"\x01\x00\x00\x00", name=b"A")
    b = event([fd(b"y", E.VALUE32)], b"\x02\x00\x00\x00", name=b"B")
    assert a[:12] == b[:12] and a[12:] != b[12:]
    ids = [uuid.uuid4().bytes + uuid.uuid4().bytes for _ in range(3)]
    with_ids = [event([fd(b"x", E.VALUE32)], b"\x03\x00\x00\x00", name=b"A", activity=i)
                for i in ids]
    for _ in range(2):
        for data in (a, b, *with_ids):
            assert _check(typed, "P_L5K1", data, 0)
    got = [typed.decode("P_L5K1", data) for data in with_ids]
    assert [g.activity.bytes + g.related_activity.bytes for g in got] == ids
    assert [typed.decode("P_L5K1", d).name for d in (a, b)] == ["A", "B"]


def test_remembered_layouts_stay_bounded():
    """Events of one tracepoint with ever new metadata (and header ids) do not grow the
    memo past the decoder's cache size (they did: 50,000 such events held 1.2 GB)."""
    from ehtool.eventheader.enums import FieldEncoding as E

    from .helpers import event, fd

    typed = TypedDecoder(cache_size=64)
    for i in range(1000):
        data = event([fd(b"f%d" % i, E.VALUE32)], b"\x01\x00\x00\x00", name=b"E%d" % i,
                     ident=i % 50)
        assert typed.decode("P_L5K1", data).name == f"E{i}"
    remembered = sum(len(by_expect) for per_name in typed._layouts.values()
                     for groups in per_name.values() for _, _, by_expect in groups)
    assert 0 < remembered <= 64
