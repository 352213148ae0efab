"""The Provider API on a real kernel: enabled follows perf, every type written comes back
through perf record + ehtool decode (JSON) and ehtool.open (typed values)."""

from __future__ import annotations

import ipaddress
import time
import uuid

import ehtool

from .conftest import decode, event_dir, perf_session

ACT = uuid.UUID("01020304-0506-0708-090a-0b0c0d0e0f10")
REL = uuid.UUID("11121314-1516-1718-191a-1b1c1d1e1f20")
FIELDS = [
    ("s", "str", "hello"), ("i8", "i8", -5), ("u64", "u64", 18446744073709551615),
    ("hex", "x32", 0xBEEF), ("flag", "bool", True), ("f", "f64", 0.1),
    ("wide", "str16", "wide é"), ("guid", "uuid", str(ACT)), ("port", "port", 8080),
    ("ip", "ipv4", "192.168.1.2"), ("errno", "errno", 2),
    ("ports", "port[]", [80, 443]), ("fixed", "i8[2]", [-1, 1]),
    ("s2", "struct", [("a", "u8", 1), ("b", "str", "in")]),
]


def _wait(condition, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.01)
    return condition()


def test_provider_round_trip_through_perf(provider, tmp_path):
    out = tmp_path / "p.data"
    p = ehtool.Provider(provider)
    events = p.register(level=4, keyword=0x2)
    tracepoint = f"user_events:{provider}_L4K2"
    assert event_dir(f"{provider}_L4K2").is_dir()
    assert not events.enabled
    assert events.write("Early", [("a", "u8", 1)]) is False  # nobody listens: nothing sent
    prepared = events.prepare("Prepared", [("num", "u32"), ("t", "str")], opcode=2)
    with perf_session([tracepoint], out):
        assert events.enabled  # perf has enabled the tracepoint (control-FIFO ack)
        assert events.write("All", FIELDS, opcode=1, id=42, version=3, tag=5, activity=ACT,
                            related_activity=REL)
        assert prepared.write(7, "x") and prepared.write(8, "y", activity=ACT)
    assert _wait(lambda: not events.enabled)  # perf stopped: the kernel cleared the bit
    assert events.write("Late") is False

    shown = decode(out)
    assert [e["n"] for e in shown] == [f"{provider}:All", f"{provider}:Prepared",
                                       f"{provider}:Prepared"]
    first = shown[0]
    assert first["meta"]["opcode"] == 1 and first["meta"]["id"] == 42
    assert first["meta"]["version"] == 3 and first["meta"]["tag"] == "0x5"
    assert first["meta"]["activity"] == str(ACT)
    assert first["meta"]["relatedActivity"] == str(REL)
    assert first["hex"] == "0xBEEF" and first["ports"] == [80, 443] and first["f"] == 0.1

    with ehtool.open(out) as typed:
        got = list(typed)
    fields = got[0].fields
    assert got[0].meta["level"] == 4 and got[0].meta["keyword"] == 2
    assert fields["s"] == "hello" and fields["i8"] == -5 and fields["u64"] == 2**64 - 1
    assert fields["hex"] == 0xBEEF and fields["flag"] is True and fields["wide"] == "wide é"
    assert fields["guid"] == ACT and fields["ip"] == ipaddress.IPv4Address("192.168.1.2")
    assert fields["errno"] == 2 and fields["fixed"] == [-1, 1]
    assert fields["s2"].to_dict() == {"a": 1, "b": "in"}
    assert [e.fields.to_dict() for e in got[1:]] == [{"num": 7, "t": "x"}, {"num": 8, "t": "y"}]
    assert got[2].meta["activity"] == ACT and got[1].meta["opcode"] == 2

    p.unregister()
    assert not events.enabled
    assert _wait(lambda: not event_dir(f"{provider}_L4K2").exists())  # nobody else holds it
    p.unregister()  # idempotent
