"""``--split-by-event``: rows of one event name in different shapes (another version of
it with other field types, a time field that is a datetime in one row and an integer
past datetime's range in the next) go into parts of their own, each value in its own
type. They were mixed in one row group: a column of JSON text (``"seven"`` quoted)
beside plain text in the next group of the same part, and an integer time read as
microseconds (a wrong date)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pq = pytest.importorskip("pyarrow.parquet")

REPO = Path(__file__).resolve().parents[2]

EVENTS = [
    {"provider": "MyProvider", "event": "Ev", "version": 0, "fields": [["n", "u32", 7]]},
    {"provider": "MyProvider", "event": "Ev", "version": 1, "fields": [["n", "str", "seven"]]},
    {"provider": "MyProvider", "event": "T", "fields": [["t", "time", 1577836800]]},
    {"provider": "MyProvider", "event": "T", "fields": [["t", "time", 99999999999999]]},
]


def _recording(path: Path, rounds: int, events: list[dict] = EVENTS) -> None:
    """``events`` (ehtool write --batch lines), ``rounds`` times over, as samples of
    MyProvider_L5K1."""
    from tests.eventheader.helpers import recording

    done = subprocess.run([sys.executable, "-m", "ehtool", "write", "--dry-run", "--batch"],
                          input="".join(json.dumps(e) + "\n" for e in events).encode(),
                          capture_output=True, cwd=REPO, check=True)
    payloads = [bytes.fromhex(line.split()[1].decode()) for line in done.stdout.splitlines()]
    recording(path, payloads, rounds)


def _split_table(data: Path, out: Path, name: str) -> Any:
    """The table ``--split-by-event out`` writes for event ``name`` of ``data``."""
    done = subprocess.run([sys.executable, "-m", "ehtool", "decode", "--format", "parquet",
                           "--split-by-event", str(out), str(data)],
                          capture_output=True, cwd=REPO, check=False)
    assert done.returncode == 0, done.stderr
    return pq.read_table(out / name)


@pytest.mark.parametrize("rounds", [3, 20000])  # (20,000: more than a row group)
def test_each_shape_in_parts_of_its_own(tmp_path, rounds):
    data = tmp_path / "shapes.data"
    _recording(data, rounds)
    out = tmp_path / "by"
    done = subprocess.run([sys.executable, "-m", "ehtool", "decode", "--format", "parquet",
                           "--split-by-event", str(out), str(data)],
                          capture_output=True, cwd=REPO, check=False)
    assert done.returncode == 0, done.stderr
    for name, column, expected in (("MyProvider:Ev", "n", {"int64": [7], "string": ["seven"]}),
                                   ("MyProvider:T", "t", {"timestamp[us, tz=UTC]": [
                                       "2020-01-01 00:00:00+00:00"],
                                       "int64": [99999999999999]})):
        parts = sorted((out / name).glob("part-*.parquet"))
        assert len(parts) == 2
        seen = {}
        for part in parts:
            table = pq.read_table(part)
            assert table.column(column).null_count == 0
            values = table.column(column).to_pylist()
            seen[str(table.schema.field(column).type)] = sorted({str(v) if hasattr(
                v, "tzinfo") else v for v in values})
            assert len(values) == rounds
        assert seen == expected


def test_arrays_mixing_value_types_are_text(tmp_path):
    """An array of times with one past year 9999 (an integer there), an IP-format binary
    array of an address and other bytes: pyarrow's inference stored the integer as
    microseconds of a timestamp and one kind as the other's type (text as binary, bytes
    as invalid UTF-8 strings); such a column is JSON text, a uniform one stays typed."""
    import struct

    from ehtool.eventheader.enums import FieldEncoding as E
    from ehtool.eventheader.enums import FieldFormat as F
    from tests.eventheader.helpers import event, fd, recording

    ip, raw = b"\x04\x00\x0a\x00\x00\x01", b"\x02\x00\xab\xcd"
    times = fd(b"t", E.VALUE64, F.TIME, varray=True)
    addresses = fd(b"x", E.BINARY_LENGTH16_CHAR8, F.IP_ADDRESS, varray=True)
    data = tmp_path / "mixed.data"
    recording(data, [event([times], struct.pack("<Hqq", 2, 1, 253402300800), name=b"T"),
                     event([addresses], b"\2\0" + ip + raw, name=b"IpFirst"),
                     event([addresses], b"\2\0" + raw + ip, name=b"BytesFirst"),
                     event([times], struct.pack("<Hqq", 2, 1, 2), name=b"Uniform")])
    out = tmp_path / "by"
    done = subprocess.run([sys.executable, "-m", "ehtool", "decode", "--format", "parquet",
                           "--split-by-event", str(out), str(data)],
                          capture_output=True, cwd=REPO, check=False)
    assert done.returncode == 0, done.stderr

    def column(name: str, field: str) -> tuple[str, list]:
        table = pq.read_table(out / f"MyProvider:{name}")
        return str(table.schema.field(field).type), table.column(field).to_pylist()

    assert column("T", "t") == ("string", ['["1970-01-01T00:00:01+00:00",253402300800]'])
    assert column("IpFirst", "x") == ("string", ['["10.0.0.1","ab cd"]'])
    assert column("BytesFirst", "x") == ("string", ['["ab cd","10.0.0.1"]'])
    kind, values = column("Uniform", "t")
    assert kind == "list<element: timestamp[us, tz=UTC]>"
    assert [t.isoformat() for t in values[0]] == ["1970-01-01T00:00:01+00:00",
                                                  "1970-01-01T00:00:02+00:00"]


def test_hex_values_past_int64_are_uint64(tmp_path):
    """A hex_int u64 column (a pointer) with values past int64's range is uint64, as an
    unsigned one is: typed as Hex (an int subclass), it became decimal text."""
    import struct

    from ehtool.eventheader.enums import FieldEncoding as E
    from ehtool.eventheader.enums import FieldFormat as F
    from tests.eventheader.helpers import event, fd, recording

    data = tmp_path / "ptr.data"
    ptr = fd(b"p", E.VALUE64, F.HEX_INT)
    recording(data, [event([ptr], struct.pack("<Q", v), name=b"P")
                     for v in (0xFFFF888812345678, 0x10)])
    table = _split_table(data, tmp_path / "by", "MyProvider:P")
    assert str(table.schema.field("p").type) == "uint64"
    assert table.column("p").to_pylist() == [0xFFFF888812345678, 0x10]


def test_u64_values_past_int64_in_arrays_and_structs_stay_uint64(tmp_path):
    """u64 values past int64's range in an array, or a struct's member, make the column
    list<uint64> / struct<...: uint64>, as a plain u64 field does (an array was JSON text)."""
    big = 18_000_000_000_000_000_000
    events = [{"provider": "MyProvider", "event": "A", "fields": [
        ["a", "u64[]", [big, 1]], ["s", "struct", [["x", "u64", big], ["y", "i32", -1]]],
        ["i", "i64[]", [-5]]]}] * 2
    data = tmp_path / "u64.data"
    _recording(data, 1, events)
    table = _split_table(data, tmp_path / "by", "MyProvider:A")
    types = {name: str(table.schema.field(name).type) for name in ("a", "s", "i")}
    assert types == {"a": "list<element: uint64>", "s": "struct<x: uint64, y: int64>",
                     "i": "list<element: int64>"}
    assert table.column("a").to_pylist() == [[big, 1]] * 2
    assert table.column("s").to_pylist() == [{"x": big, "y": -1}] * 2
