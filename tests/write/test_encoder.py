"""The encoder's bytes, checked against byte strings written out by hand from the
EventHeader layout (eventheader.h), not against ehtool's own decoder."""

from __future__ import annotations

import subprocess
import sys

import pytest

from ehtool.eventheader.encoder import EncodeError, Event, Field, encode

pytestmark = pytest.mark.skipif(sys.byteorder != "little" or not sys.maxsize > 2**32,
                                reason="hand-computed bytes are for 64-bit little-endian")

# flags 0x07 = pointer64 | little_endian | extension
HEAD = "07"


def meta_ext(meta: str) -> str:
    """Metadata extension: u16 size, u16 kind 1 (no chain), then the metadata."""
    size = len(bytes.fromhex(meta))
    return f"{size:02x}00" + "0100" + meta


def event_hex(fields: list[Field], **kw) -> str:
    return encode(Event("Ev", fields, **kw)).hex()


def header(version=0, id_=0, tag=0, opcode=0, level=5) -> str:
    return HEAD + f"{version:02x}" + id_.to_bytes(2, "little").hex() + \
        tag.to_bytes(2, "little").hex() + f"{opcode:02x}{level:02x}"


EV = "457600"  # "Ev\0"


@pytest.mark.parametrize(("type_", "value", "defn", "payload"), [
    # name "f\0", encoding byte, [format byte], payload
    ("u8", "200", "66" "00" "02", "c8"),
    ("u16", "60000", "6600" "03", "60ea"),
    ("u32", "7", "6600" "04", "07000000"),
    ("u64", "1", "6600" "05", "0100000000000000"),
    ("i8", "-1", "6600" "82" "02", "ff"),
    ("i16", "-2", "6600" "83" "02", "feff"),
    ("i32", "-3", "6600" "84" "02", "fdffffff"),
    ("i64", "-4", "6600" "85" "02", "fcffffffffffffff"),
    ("x8", "0x10", "6600" "82" "03", "10"),
    ("x16", "0x1234", "6600" "83" "03", "3412"),
    ("x32", "0xdeadbeef", "6600" "84" "03", "efbeadde"),
    ("x64", "0x1", "6600" "85" "03", "0100000000000000"),
    ("iptr", "-1", "6600" "85" "02", "ffffffffffffffff"),
    ("uptr", "5", "6600" "05", "0500000000000000"),
    ("xptr", "0xff", "6600" "85" "03", "ff00000000000000"),
    ("bool", "true", "6600" "82" "07", "01"),
    ("bool32", "false", "6600" "84" "07", "00000000"),
    ("f32", "1.5", "6600" "84" "08", "0000c03f"),
    ("f64", "-2", "6600" "85" "08", "00000000000000c0"),
    ("char", "A", "6600" "82" "0a", "41"),
    ("char16", "é", "6600" "83" "0b", "e900"),
    ("str", "hi", "6600" "07", "686900"),
    ("str16", "hi", "6600" "08", "680069000000"),
    ("str32", "h", "6600" "09", "6800000000000000"),
    ("lstr", "hé", "6600" "0a", "0300" "68c3a9"),
    ("lstr16", "hi", "6600" "0b", "0200" "68006900"),
    ("lstr32", "h", "6600" "0c", "0100" "68000000"),
    ("bin", "dead", "6600" "0d", "0200" "dead"),
    ("guid", "01020304-0506-0708-090a-0b0c0d0e0f10", "6600" "86" "0f",
     "0102030405060708090a0b0c0d0e0f10"),
    ("time", "1970-01-01T00:01:00Z", "6600" "85" "06", "3c00000000000000"),
    ("time32", "60", "6600" "84" "06", "3c000000"),
    ("time", "60.0", "6600" "85" "06", "3c00000000000000"),  # (whole seconds: taken)
    ("errno", "ENOENT", "6600" "84" "04", "02000000"),
    ("pid", "1234", "6600" "84" "05", "d2040000"),
    ("port", "80", "6600" "83" "10", "0050"),  # network byte order
    ("ipv4", "10.0.0.1", "6600" "84" "11", "0a000001"),
    ("ipv6", "::1", "6600" "86" "11", "00000000000000000000000000000001"),
])
def test_every_type_by_hand(type_, value, defn, payload):
    meta = EV + defn
    expected = header() + meta_ext(meta) + payload
    done = subprocess.run([sys.executable, "-m", "ehtool", "write", "--dry-run", "Prov", "Ev",
                           f"f:{type_}={value}"], capture_output=True, text=True, check=True)
    assert done.stdout == f"Prov_L5K1 {expected}\n"


def test_arrays_by_hand():
    # varray: encoding | 0x40, count u16 in the payload; carray: encoding | 0x20, count in meta
    got = event_hex([Field("v", "u8[]", [1, 2]), Field("c", "u16[2]", [3, 4])])
    meta = EV + "7600" "42" + "6300" "23" "0200"
    assert got == header() + meta_ext(meta) + "0200" "0102" + "0300" "0400"


def test_nested_struct_array_by_hand():
    inner = [Field("a", "u8", 1), Field("s", "struct", [Field("b", "i16", -1)])]
    got = event_hex([Field("arr", "struct[]", [inner, [Field("a", "u8", 2),
                                                       Field("s", "struct",
                                                             [Field("b", "i16", 5)])]])])
    # struct|varray|chain = 0xc1, format = member count 2; nested struct 0x81 with 1 member
    meta = EV + "61727200" "c1" "02" + "6100" "02" + "7300" "81" "01" + "6200" "83" "02"
    assert got == header() + meta_ext(meta) + "0200" + "01" "ffff" + "02" "0500"


def test_header_fields_tags_and_activity_by_hand():
    act = bytes(range(1, 17))
    rel = bytes(range(17, 33))
    got = encode(Event("Ev;k=v", [Field("t", "u8", 1, tag=0x1234)], level=3, opcode=1,
                       id=1000, version=11, tag=0xBEEF, activity=act,
                       related_activity=rel)).hex()
    meta = "45763b6b3d7600" + "7400" "82" "80" "3412"  # format 0 + tag flag
    ext_act = "2000" "0280" + act.hex() + rel.hex()
    assert got == ("07" "0b" "e803" "efbe" "01" "03") + ext_act + meta_ext(meta) + "01"


def test_refusals():
    with pytest.raises(EncodeError, match="perf drops events over 8192"):
        encode(Event("Ev", [Field("b", "bin", b"x" * 9000)]))
    with pytest.raises(EncodeError, match="NUL"):
        encode(Event("Ev", [Field("s", "str", "a\0b")]))
    with pytest.raises(EncodeError, match=r"3 values for a \[2\] array"):
        encode(Event("Ev", [Field("c", "u8[2]", [1, 2, 3])]))
    with pytest.raises(EncodeError, match="related activity id needs an activity"):
        encode(Event("Ev", related_activity=bytes(16)))


@pytest.mark.parametrize(("args", "message"), [
    (["P", "E", "x:nope=1"], "unknown type"),
    (["P", "E", "x:u8=300"], "'300' is not a valid u8 (out of range)"),
    (["P", "E", "x:i16=70000"], "'70000' is not a valid i16 (out of range)"),
    (["P", "E", "novalue"], "expected NAME=VALUE"),
    (["Bad Prov", "E"], "must not contain space"),
    (["--level", "0", "P", "E"], "level must be 1..255"),
])
def test_cli_errors_are_one_line_with_exit_2(args, message):
    done = subprocess.run([sys.executable, "-m", "ehtool", "write", "--dry-run", *args],
                          capture_output=True, text=True)
    assert done.returncode == 2, done.stderr
    assert message in done.stderr and "Traceback" not in done.stderr


def test_batch_reports_bad_lines_and_keeps_going():
    lines = ('{"provider": "P", "event": "A", "fields": [["n", "u32", 1]]}\n'
             "not json\n"
             '{"provider": "P", "event": "B", "level": 2}\n')
    done = subprocess.run([sys.executable, "-m", "ehtool", "write", "--batch", "--dry-run"],
                          input=lines, capture_output=True, text=True)
    assert done.returncode == 1
    assert [line.split()[0] for line in done.stdout.splitlines()] == ["P_L5K1", "P_L2K1"]
    assert "stdin:2: not a JSON line (" in done.stderr
    strict = subprocess.run([sys.executable, "-m", "ehtool", "write", "--batch", "--dry-run",
                             "--strict"], input=lines, capture_output=True, text=True)
    assert strict.returncode == 1 and len(strict.stdout.splitlines()) == 1


def test_batch_input_file_errors_are_input_errors(tmp_path):
    """A missing batch file was an internal error (FileNotFoundError); a directory exit 2."""
    for path, why in ((tmp_path / "nosuch.jsonl", "No such file or directory"),
                      (tmp_path, "Is a directory")):
        done = subprocess.run([sys.executable, "-m", "ehtool", "write", "--batch", "--dry-run",
                               "-i", str(path)], capture_output=True, text=True)
        assert done.returncode == 1
        assert done.stderr == f"ehtool: error: {path}: cannot read: {why}\n"
    dash = subprocess.run([sys.executable, "-m", "ehtool", "write", "--dry-run", "-i", "-"],
                          input='{"provider": "P", "event": "E"}\n', capture_output=True,
                          text=True)
    assert dash.returncode == 0 and dash.stdout.startswith("P_L5K1 "), dash.stderr


@pytest.mark.parametrize(("args", "message"), [
    (["P", "E", "ip:ipv4=999.1.1.1"], "field 'ip': '999.1.1.1' is not a valid ipv4"),
    (["P", "E", "ip:ipv6=zz::1"], "field 'ip': 'zz::1' is not a valid ipv6"),
    (["P", "E", "a:u8=-1"], "field 'a': '-1' is not a valid u8 (a negative number"),
    (["P", "E", "p:port=-1"], "field 'p': '-1' is not a valid port"),
    (["P", "E", "f:f32=1e309"], "field 'f': '1e309' is not a valid f32 (out of range)"),
    (["P", "E", "t:time=1.5"], "field 't': '1.5': a time field holds whole seconds since 1970"),
    (["P", "E", "t:time=1700000000.0000001"], "a time field holds whole seconds since 1970"),
    (["P", "E", "t:time=1e3"], "field 't': '1e3' is neither seconds since 1970 nor ISO 8601"),
    (["P", "E", "t:time=soon"], "field 't': 'soon' is neither seconds since 1970 nor ISO 8601"),
    (["P", "", "a=1"], "the event name is empty"),
    (["P\nx", "E", "a=1"], "must not contain whitespace or control characters"),
])
def test_bad_write_values_are_usage_errors(args, message):
    """Issue 13 item 7: each was an internal error, a wrap-around, or accepted."""
    done = subprocess.run([sys.executable, "-m", "ehtool", "write", "--dry-run", *args],
                          capture_output=True, text=True)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and message in done.stderr, done.stderr


def test_bad_batch_lines_are_reported_and_the_batch_goes_on():
    import json

    lines = [
        {"provider": "P", "event": "E", "fields": [["ip", "ipv4", "999.1.1.1"]]},
        {"provider": "P", "event": "E", "group": 1},
        {"provider": "P", "event": "E", "fields": [["s", "str", None]]},
        {"provider": "P", "event": "E", "fields": [["s", "str", {"a": 1}]]},
        {"provider": "P", "event": "E", "fields": [[f"f{i}", "u8", 1] for i in range(256)]},
        {"provider": "P", "event": "Good"},
    ]
    nest: list = [["x", "u8", 1]]
    for depth in range(8):  # 8 levels of structs: decoders take it, so must the writer
        nest = [[f"s{depth}", "struct", nest]]
    lines.append({"provider": "P", "event": "Deep", "fields": nest})
    done = subprocess.run([sys.executable, "-m", "ehtool", "write", "--dry-run", "--batch"],
                          input="\n".join(json.dumps(x) for x in lines) + "\n",
                          capture_output=True, text=True)
    assert done.returncode == 1
    errors = done.stderr.splitlines()
    assert [e.split(":")[3] for e in errors] == ["1", "2", "3", "4", "5"]
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr
    assert len(done.stdout.splitlines()) == 2  # Good and Deep


def test_errno_names_are_the_ones_decode_shows():
    """The encoder took names from the host's errno module and the decoder showed its own
    table: every name (and every text) decode shows now encodes back to its number."""
    from ehtool.values.text import ERRNO_JSON, errno_json

    def encoded(text: str) -> int:
        data = encode(Event("E", [Field("e", "errno", text)]))
        return int.from_bytes(data[-4:], sys.byteorder, signed=True)

    for number, shown in enumerate(ERRNO_JSON):
        text = shown.decode().strip('"')
        assert encoded(text) == number, text
        if not text.startswith("ERRNO("):
            assert encoded(text.split("(")[0].lower()) == number
    assert errno_json(encoded("ERRNO(-5)") & 0xFFFFFFFF) == b'"ERRNO(-5)"'
    assert [encoded(a) for a in ("EWOULDBLOCK", "EDEADLOCK", "ENOTSUP")] == [11, 35, 95]
    for bad in ("EBOGUS", "ENOENT(3)", "ENOENT(2"):
        with pytest.raises(EncodeError, match="unknown errno name"):
            encoded(bad)
