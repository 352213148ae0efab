"""The typed outputs (text, query, ``ehtool.open``, filters, info) show names and values as
decode's JSON shows them: invalid UTF-8 bytes as their Latin-1 characters (they showed
U+FFFD, and ``--filter 's == "café"'`` missed an event decode shows with "café"), IPv6
addresses as glibc's ``inet_ntop`` (``::ffff:1.2.3.4``, not Python 3.11's
``::ffff:102:304``), a float32 as the number shown (``3.14``, not its exact double), and
a name with a line break on one line of text; an errno field compares with a string as
its text (``ENOENT(2)``), a time before the year 1000 shows four digits of year, and
one past 9999 (an int) compares with a string as decode's text."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from ehtool.eventheader.enums import FieldEncoding as E
from ehtool.eventheader.enums import FieldFormat as F
from tests.eventheader.helpers import event, fd, recording

REPO = Path(__file__).resolve().parents[2]
MAPPED = bytes(10) + b"\xff\xff\x01\x02\x03\x04"


@pytest.fixture(scope="module")
def shown(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("shown") / "shown.data"
    recording(path, [
        event([fd(b"caf\xe9", E.VALUE8), fd(b"s", E.ZSTRING_CHAR8)], b"\7caf\xe9\0",
              name=b"\xff\xfeev"),
        event([fd(b"ip", E.VALUE128, F.IP_ADDRESS)], MAPPED, name=b"Ip"),
        event([fd(b"a\nb", E.ZSTRING_CHAR8)], b"x\xed\xa0\x80\0", name=b"Two\nLines"),
        event([fd(b"f", E.VALUE32, F.FLOAT)], struct.pack("<f", 3.14), name=b"F"),
    ])
    return path


def ehtool(path: Path, *args: str, pure: str = "") -> str:
    done = subprocess.run([sys.executable, "-m", "ehtool", *args, str(path)],
                          capture_output=True, text=True, check=True, cwd=REPO,
                          env={**os.environ, "EHTOOL_PURE": pure})
    return done.stdout


@pytest.mark.parametrize("pure", ["", "1"])
def test_text_query_open_and_filters_show_what_decode_shows(shown, pure):
    decoded = [json.loads(line) for line in ehtool(shown, "decode", "--format", "jsonl",
                                                   pure=pure).splitlines()]
    assert [e["n"] for e in decoded] == ["MyProvider:ÿþev", "MyProvider:Ip",
                                         "MyProvider:Two\nLines", "MyProvider:F"]
    assert (decoded[0]["café"], decoded[0]["s"], decoded[1]["ip"]) == (7, "café",
                                                                        "::ffff:1.2.3.4")
    assert decoded[2]["a\nb"] == "x\ud800"

    import ehtool as lib
    with lib.open(shown) as events:
        typed = [(e.name, e.fields.to_dict()) for e in events]
    assert typed[0] == ("MyProvider:ÿþev", {"café": 7, "s": "café"})
    assert (typed[1][0], str(typed[1][1]["ip"])) == ("MyProvider:Ip", "::ffff:1.2.3.4")
    assert typed[2] == ("MyProvider:Two\nLines", {"a\nb": "x\ud800"})
    assert typed[3] == ("MyProvider:F", {"f": 3.14}) and decoded[3]["f"] == 3.14

    text = ehtool(shown, "decode", "--format", "text", pure=pure).splitlines()
    assert len(text) == 4
    assert text[0].endswith("MyProvider:ÿþev: level=5 keyword=0x1 café=7 s=café")
    assert text[1].endswith("ip=::ffff:1.2.3.4")
    assert text[2].endswith('"MyProvider:Two\\nLines": level=5 keyword=0x1 "a\\nb"="x\\ud800"')

    for args, kept in ((("--event", "ÿþev"), 1), (("--filter", 's == "x"'), 0),
                       (("--filter", 's == "café"'), 1),
                       (("--filter", 'ip == "::ffff:1.2.3.4"'), 1),
                       (("--event", "Two\nLines"), 1), (("--filter", "f == 3.14"), 1)):
        assert len(ehtool(shown, "decode", "--format", "jsonl", *args,
                          pure=pure).splitlines()) == kept, args


def test_info_and_query_show_it_too(shown):
    info = json.loads(ehtool(shown, "info", "--json"))
    assert info["eventheader_events"] == {"MyProvider:ÿþev": 1, "MyProvider:Ip": 1,
                                          "MyProvider:Two\nLines": 1, "MyProvider:F": 1}
    pytest.importorskip("duckdb")
    rows = [json.loads(line) for line in ehtool(
        shown, "query", "--format", "jsonl", "select event, fields from events").splitlines()]
    assert rows == [{"event": "ÿþev", "fields": {"café": 7, "s": "café"}},
                    {"event": "Ip", "fields": {"ip": "::ffff:1.2.3.4"}},
                    {"event": "Two\nLines", "fields": {"a\nb": "x\\ud800"}},
                    {"event": "F", "fields": {"f": 3.14}}]


@pytest.fixture(scope="module")
def errnos(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("errnos") / "errnos.data"
    fields = [fd(b"err", E.VALUE32, F.ERRNO), fd(b"t", E.VALUE64, F.TIME)]
    recording(path, [event(fields, struct.pack("<iq", e, t), name=b"E")
                     for e, t in ((2, 0), (-5, -62000000000), (200, 1), (7, 10**12))])
    return path


@pytest.mark.parametrize("pure", ["", "1"])
def test_an_errno_is_its_number_and_its_text(errnos, pure):
    """``err == "ENOENT(2)"`` matched nothing (the filter compared the number), while
    decode shows the text; a time of the year 5 showed as ``5-04-19...``."""
    decoded = [json.loads(line) for line in ehtool(errnos, "decode", "--format", "jsonl",
                                                   pure=pure).splitlines()]
    assert [(e["err"], e["t"]) for e in decoded] == [
        ("ENOENT(2)", "1970-01-01T00:00:00"), ("ERRNO(-5)", "0005-04-19T09:46:40"),
        ("ERRNO(200)", "1970-01-01T00:00:01"), ("E2BIG(7)", "33658-09-27T01:46:40")]
    for expr, kept in (('err == "ENOENT(2)"', ["ENOENT(2)"]), ("err == 2", ["ENOENT(2)"]),
                       ('err != "ENOENT(2)"', ["ERRNO(-5)", "ERRNO(200)", "E2BIG(7)"]),
                       ("err < 0", ["ERRNO(-5)"]), ('err ~ "ERRNO(*"', ["ERRNO(-5)",
                                                                        "ERRNO(200)"]),
                       ('err == "ENOENT"', []), ('err < "ERRNO"', ["ENOENT(2)", "E2BIG(7)"]),
                       ('t == "0005-04-19T09:46:40"', ["ERRNO(-5)"]),
                       ('t == "33658-09-27T01:46:40"', ["E2BIG(7)"]), ("t == 10e11", ["E2BIG(7)"])):
        out = ehtool(errnos, "decode", "--format", "jsonl", "--filter", expr, pure=pure)
        assert [json.loads(line)["err"] for line in out.splitlines()] == kept, expr
    text = ehtool(errnos, "decode", "--format", "text", pure=pure).splitlines()
    assert [line.split(": ", 1)[1] for line in text] == [
        "level=5 keyword=0x1 err=ENOENT(2) t=1970-01-01T00:00:00Z",
        "level=5 keyword=0x1 err=ERRNO(-5) t=0005-04-19T09:46:40Z",
        "level=5 keyword=0x1 err=ERRNO(200) t=1970-01-01T00:00:01Z",
        "level=5 keyword=0x1 err=E2BIG(7) t=33658-09-27T01:46:40"]

    import ehtool as lib
    from ehtool.values.shown import Errno
    with lib.open(errnos) as events:
        errs = [e.fields["err"] for e in events]
    assert errs == [2, -5, 200, 7] and all(type(e) is Errno for e in errs)
    assert [str(e) for e in errs] == ["ENOENT(2)", "ERRNO(-5)", "ERRNO(200)", "E2BIG(7)"]
