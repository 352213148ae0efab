"""The Provider API against the fake user_events kernel (tests/kernel/fake_kernel.py);
tests/e2e/test_provider.py runs the same model against a real kernel and perf."""

from __future__ import annotations

import ctypes
import os
import threading
import uuid

import pytest

from ehtool.errors import KernelError
from ehtool.eventheader.decoder import TypedDecoder
from ehtool.eventheader.encoder import EncodeError
from ehtool.kernel.user_events import USER_REG
from ehtool.provider.api import Provider
from kernel.fake_kernel import FakeKernel


@pytest.fixture
def kernel(tmp_path, monkeypatch) -> FakeKernel:
    return FakeKernel(tmp_path / "tracing").install(monkeypatch)


def _enable(kernel: FakeKernel, tracepoint: str, on: bool = True) -> None:
    """What the kernel does when a session enables the tracepoint: set bit 0 of the
    registration's enable word in this process's memory."""
    for addr in kernel.events[tracepoint].enablers:
        ctypes.c_uint32.from_address(addr).value = int(on)


def _written(kernel: FakeKernel) -> list[bytes]:
    """The events written to the fake user_events_data (write index, then the event)."""
    data = (kernel.root / "user_events_data").read_bytes()
    return [data] if data else []


def test_register_enable_write_unregister(kernel):
    with Provider("MyCompany_MyComponent") as provider:
        events = provider.register(level=4, keyword=0x2)
        assert events.tracepoint == "MyCompany_MyComponent_L4K2"
        assert provider.register(4, 0x2) is events  # the same set
        assert not events.enabled
        assert events.write("Started", [("count", "u32", 7)]) is False
        assert _written(kernel) == []
        _enable(kernel, "MyCompany_MyComponent_L4K2")
        assert events.enabled
        act = uuid.uuid4()
        assert events.write("Started", [("count", "u32", 7), ("name", "str", "x"),
                                        ("ports", "port[]", [80, 443]),
                                        ("s", "struct", [("a", "u8", 1)])],
                            opcode=1, id=42, version=3, activity=act)
        (data,) = _written(kernel)
        ev = TypedDecoder().decode("MyCompany_MyComponent_L4K2", data[4:])
        assert (ev.name, ev.level, ev.keyword, ev.opcode, ev.id, ev.version, ev.activity) == (
            "Started", 4, 2, 1, 42, 3, act)
        assert ev.fields.to_dict() == {"count": 7, "name": "x", "ports": [80, 443],
                                       "s": {"a": 1}}
    assert not events.enabled and events.write("Started") is False
    assert kernel.events == {}  # the last enabler went: the kernel deleted the event
    provider.unregister()  # again: a no-op


def test_prepared_events_encode_like_plain_writes(kernel):
    provider = Provider("P")
    events = provider.register(5, 1)
    _enable(kernel, "P_L5K1")
    prepared = events.prepare("Ev", [("a", "u32"), ("s", "str")], opcode=2)
    assert prepared.write(7, "x")
    assert events.write("Ev", [("a", "u32", 7), ("s", "str", "x")], opcode=2)
    data = (kernel.root / "user_events_data").read_bytes()
    half = len(data) // 2
    assert data[:half] == data[half:]
    with pytest.raises(EncodeError):
        prepared.write(7)  # one value missing
    with pytest.raises(EncodeError):
        events.prepare("Ev", [("a", "nosuchtype")])
    provider.unregister()
    assert prepared.write(7, "x") is False


def test_prepared_events_with_structs_take_nested_triples_as_plain_writes_do(kernel):
    """A prepared shape with a struct (or a struct array) takes its value as the
    ``(name, type, value)`` triples a plain write takes (it raised AttributeError)."""
    provider = Provider("P")
    events = provider.register(5, 1)
    _enable(kernel, "P_L5K1")
    prepared = events.prepare("S", [("url", "str"), ("client", "struct"),
                                    ("hops", "struct[]")])
    client = [("ip", "ipv4", "10.0.0.7"), ("port", "port", 443)]
    hops = [[("n", "u8", 1)], [("n", "u8", 2)]]
    assert prepared.write("/x", client, hops)
    assert events.write("S", [("url", "str", "/x"), ("client", "struct", client),
                              ("hops", "struct[]", hops)])
    data = (kernel.root / "user_events_data").read_bytes()
    half = len(data) // 2
    assert data[:half] == data[half:]
    ev = TypedDecoder().decode("P_L5K1", data[4:half])
    assert ev.fields.to_dict()["hops"] == [{"n": 1}, {"n": 2}]
    with pytest.raises(EncodeError):
        prepared.write("/x", [("ip", "ipv4")], hops)  # not a triple
    with pytest.raises(EncodeError):
        prepared.write("/x", client, 7)  # not a list of structs
    provider.unregister()


def test_time_fields_take_the_datetime_that_decoding_gives_back(kernel):
    """A ``time`` field takes a datetime (an aware one, or a naive one as UTC), as the
    typed events of ``ehtool.open`` give it, besides seconds and ISO 8601 text."""
    import datetime

    provider = Provider("P")
    events = provider.register(5, 1)
    _enable(kernel, "P_L5K1")
    moment = datetime.datetime(2024, 1, 2, 3, 4, 5, tzinfo=datetime.UTC)
    prepared = events.prepare("T", [("when", "time")])
    for value in (moment, moment.replace(tzinfo=None), "2024-01-02T03:04:05Z",
                  int(moment.timestamp())):
        assert prepared.write(value)
        assert events.write("T", [("when", "time", value)])
    data = (kernel.root / "user_events_data").read_bytes()
    size = len(data) // 8
    assert all(data[i * size:(i + 1) * size] == data[:size] for i in range(8))
    ev = TypedDecoder().decode("P_L5K1", data[4:size])
    assert ev.fields["when"] == moment
    provider.unregister()


def test_nothing_is_encoded_when_disabled(kernel):
    events = Provider("P").register(5, 1)
    # a value that cannot be encoded is not even looked at while nobody listens
    assert events.write("Ev", [("a", "u8", "not a number")]) is False
    _enable(kernel, "P_L5K1")
    with pytest.raises(EncodeError, match="'a'"):
        events.write("Ev", [("a", "u8", "not a number")])
    with pytest.raises(EncodeError, match="perf drops events"):
        events.write("Ev", [("big", "str", "x" * 70000)])
    assert _written(kernel) == []


def test_register_all_is_all_or_nothing(kernel):
    kernel.fail["P_L3K1"] = 13  # EACCES for this one
    provider = Provider("P")
    with pytest.raises(KernelError):
        provider.register_all([(5, 1), (4, 1), (3, 1)])
    assert provider.sets == [] and kernel.events == {}
    del kernel.fail["P_L3K1"]
    sets = provider.register_all([(5, 1), (3, 1)])
    assert [s.tracepoint for s in sets] == ["P_L5K1", "P_L3K1"]
    provider.unregister()


def test_threads_write_concurrently(kernel):
    events = Provider("P").register(5, 1)
    _enable(kernel, "P_L5K1")
    prepared = events.prepare("Ev", [("i", "u32")])

    def run(base: int) -> None:
        for i in range(200):
            assert prepared.write(base + i)
    threads = [threading.Thread(target=run, args=(k * 1000,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    data = (kernel.root / "user_events_data").read_bytes()
    one = len(data) // 800
    events_written = [data[i:i + one] for i in range(0, len(data), one)]
    assert len(events_written) == 800 and len(data) == 800 * one
    values = sorted(TypedDecoder().decode("P_L5K1", e[4:]).fields["i"] for e in events_written)
    assert values == sorted(k * 1000 + i for k in range(4) for i in range(200))


def test_a_forked_child_does_not_write_through_the_parents_registrations(kernel):
    provider = Provider("P")
    events = provider.register(5, 1)
    _enable(kernel, "P_L5K1")
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        ok = (not events.enabled and events.write("Ev") is False
              and provider.sets == [])
        os.write(w, b"1" if ok else b"0")
        os._exit(0)
    os.waitpid(pid, 0)
    assert os.read(r, 1) == b"1"
    assert events.enabled  # the parent's set is untouched
    provider.unregister()


def test_provider_name_rules_are_checked_at_once():
    with pytest.raises(ValueError):
        Provider("bad name")
    with pytest.raises(ValueError):
        Provider("P", group="Bad")


def test_user_reg_layout():
    assert USER_REG.size == 28
