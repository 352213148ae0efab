"""ehtool write -> kernel -> perf record -> ehtool decode: every value comes back."""

from __future__ import annotations

import json

from ehtool.eventheader.names import EVENTHEADER_COMMAND_TYPES
from ehtool.kernel.user_events import UserEvents

from .conftest import decode, ehtool, perf_session

ACT = "01020304-0506-0708-090a-0b0c0d0e0f10"
REL = "11121314-1516-1718-191a-1b1c1d1e1f20"

# (field argument, decoded name, decoded value)
FIELDS = [
    ("s=hello", "s", "hello"),
    ("a:i8=-5", "a", -5), ("b:i16=-300", "b", -300), ("c:i32=-70000", "c", -70000),
    ("d:i64=-5000000000", "d", -5000000000),
    ("e:u8=200", "e", 200), ("f:u16=60000", "f", 60000), ("g:u32=4000000000", "g", 4000000000),
    ("h:u64=18446744073709551615", "h", 18446744073709551615),
    ("i:x32=0xbeef", "i", "0xBEEF"), ("j:x64=0x123456789", "j", "0x123456789"),
    ("k:bool=true", "k", True), ("l:f32=1.5", "l", 1.5), ("m:f64=0.1", "m", 0.1),
    ("n:char=Z", "n", "Z"), ("o:str16=wide é", "o", "wide é"), ("p:str32=x", "p", "x"),
    ("q:lstr=counted", "q", "counted"), ("r:bin=00ff10", "r", "00 ff 10"),
    ("t:guid=" + ACT, "t", ACT), ("u:time=2024-03-28T00:45:12Z", "u", "2024-03-28T00:45:12"),
    ("v:errno=ENOENT", "v", "ENOENT(2)"), ("w:pid=1234", "w", 1234), ("x:port=8080", "x", 8080),
    ("y:ipv4=192.168.1.2", "y", "192.168.1.2"), ("z:ipv6=fe80::1", "z", "fe80::1"),
    ("arr:u16[]=1,2,3", "arr", [1, 2, 3]), ("fix:i8[2]=-1,1", "fix", [-1, 1]),
    ("xp:xptr=0xff", "xp", "0xFF"),
]


def _plain(value: object) -> object:
    """A decoded value without the ``_pairs`` bookkeeping of nested objects."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items() if k != "_pairs"}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _fields(event: dict) -> list[tuple[str, object]]:
    return [(k, _plain(v)) for k, v in event["_pairs"][1:] if k != "meta"]


def _named(events: list[dict], n: str) -> list[dict]:
    """Events whose "n" is ``n`` (the first pair: a field may be called "n" too)."""
    return [e for e in events if e["_pairs"][0] == ("n", n)]


def test_every_field_type_round_trips(provider, tmp_path):
    out = tmp_path / "w.data"
    name = f"{provider}_L4K3"
    with UserEvents.open() as ue:
        ue.register(f"{name} {EVENTHEADER_COMMAND_TYPES}")  # exists before perf starts
        with perf_session([f"user_events:{name}"], out):
            done = ehtool("write", "--level", "4", "--keyword", "3", "--opcode", "start",
                          "--id", "42", "--version", "3", "--tag", "0x55",
                          "--activity", ACT, "--related-activity", REL, "--require-enabled",
                          provider, "AllTypes;color=blue", *[f for f, _, _ in FIELDS])
            assert done.returncode == 0, done.stderr
            batch = json.dumps({"provider": provider, "event": "Nested", "level": 4,
                                "keyword": 3, "fields": [
                                    ["pt", "struct", [["x", "i32", -1],
                                                      ["in", "struct", [["deep", "str", "d"]]]]],
                                    {"name": "tagged", "type": "u8", "value": 9, "tag": 7},
                                    ["pts", "struct[]", [[["v", "u8", 1]], [["v", "u8", 2]]]]]})
            done = ehtool("write", "--batch", input=batch + "\n")
            assert done.returncode == 0, done.stderr
    events = decode(out)
    (first,) = _named(events, f"{provider}:AllTypes")
    assert _fields(first) == [(n, v) for _, n, v in FIELDS]
    meta = first["meta"]
    assert meta["id"] == 42 and meta["version"] == 3 and meta["level"] == 4
    assert meta["keyword"] == "0x3" and meta["opcode"] == 1 and meta["tag"] == "0x55"
    assert meta["activity"] == ACT and meta["relatedActivity"] == REL
    assert meta["time"].endswith("Z")
    (nested,) = _named(events, f"{provider}:Nested")
    assert _fields(nested) == [("pt", {"x": -1, "in": {"deep": "d"}}), ("tagged;tag=0x7", 9),
                               ("pts", [{"v": 1}, {"v": 2}])]


def test_batch_of_10000_arrives_complete_and_in_order(provider, tmp_path):
    out = tmp_path / "b.data"
    name = f"{provider}_L5K1"
    lines = "".join(json.dumps({"provider": provider, "event": "Seq",
                                "fields": [["i", "u32", i]]}) + "\n" for i in range(10000))
    with UserEvents.open() as ue:
        ue.register(f"{name} {EVENTHEADER_COMMAND_TYPES}")
        with perf_session([f"user_events:{name}"], out):
            done = ehtool("write", "--batch", "--require-enabled", input=lines)
            assert done.returncode == 0, done.stderr
    seq = [e["i"] for e in _named(decode(out), f"{provider}:Seq")]  # time order
    assert seq == list(range(10000))


def test_not_enabled_is_skipped(provider):
    done = ehtool("write", "-v", provider, "Ev", "n:u32=1")
    assert done.returncode == 0 and "not enabled" in done.stderr
    done = ehtool("write", "--require-enabled", provider, "Ev", "n:u32=1")
    assert done.returncode == 3
