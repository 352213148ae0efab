"""JSON strings from raw bytes: hand-checked bytes, a byte-by-byte model of perf-decode,
and validity properties."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from ehtool.values import strings as s

from . import perf_decode_model as model

# -- hand-checked ---------------------------------------------------------------


def test_utf8_ascii_and_escapes():
    assert s.utf8_json(b"") == b'""'
    assert s.utf8_json(b"HowAreU8?") == b'"HowAreU8?"'
    assert s.utf8_json(b'a"b\\c/') == b'"a\\"b\\\\c/"'
    assert s.utf8_json(b"\x08\x0c\n\r\t") == b'"\\b\\f\\n\\r\\t"'
    assert s.utf8_json(b"\x00\x01\x1b\x1f") == b'"\\u0000\\u0001\\u001b\\u001f"'
    assert s.utf8_json(b"\x7f ~") == b'"\x7f ~"'  # DEL is not escaped


def test_utf8_valid_multibyte_passes_through():
    text = "é€𝄞\u2028\u0085".encode()
    assert s.utf8_json(text) == b'"' + text + b'"'


def test_utf8_invalid_bytes_become_latin1():
    assert s.utf8_json(b"\xff") == '"ÿ"'.encode()
    assert s.utf8_json(b"a\x80b") == '"a\x80b"'.encode()
    assert s.utf8_json(b"\xc0\x80") == '"À\x80"'.encode()  # overlong NUL
    assert s.utf8_json(b"\xe0\x80\x80") == '"à\x80\x80"'.encode()  # overlong 3-byte
    assert s.utf8_json(b"\xf0\x8f\xbf\xbf") == '"ð\x8f¿¿"'.encode()  # overlong 4-byte
    assert s.utf8_json(b"\xf4\x90\x80\x80") == '"ô\x90\x80\x80"'.encode()  # > U+10FFFF
    assert s.utf8_json(b"\xe2\x82") == '"â\x82"'.encode()  # truncated at the end
    assert s.utf8_json(b"\xe2\x82A") == '"â\x82A"'.encode()  # truncated before ASCII
    assert s.utf8_json(b"\xf5\xfe") == '"õþ"'.encode()
    # resumes at the byte after a bad lead: the continuation byte is Latin-1 too,
    # a valid sequence right after is kept
    assert s.utf8_json(b"\xe2\xc3\xa9") == '"âé"'.encode()


def test_utf8_encoded_surrogates_become_escapes():
    assert s.utf8_json(b"\xed\xa0\x80") == b'"\\ud800"'
    assert s.utf8_json(b"x\xed\xbf\xbfy") == b'"x\\udfffy"'
    assert s.utf8_json(b"\xed\xa0\x80\xff") == '"\\ud800ÿ"'.encode()
    assert s.utf8_json(b"\xed\x9f\xbf") == '"\ud7ff"'.encode()  # last non-surrogate
    assert s.utf8_json(b"\xed\xa0") == '"í\xa0"'.encode()  # truncated surrogate form


def test_utf8_accepts_memoryview_and_bytearray():
    assert s.utf8_json(memoryview(b"xa\xffz")[1:3]) == '"aÿ"'.encode()
    assert s.utf8_json(bytearray(b"ok")) == b'"ok"'


def test_latin1():
    assert s.latin1_json(bytes(range(0xF0, 0x100))) == '"ðñòóôõö÷øùúûüýþÿ"'.encode()
    assert s.latin1_json(b"\x00\x01") == b'"\\u0000\\u0001"'
    assert s.latin1_json(memoryview(b'"\\')) == b'"\\"\\\\"'


def test_utf16():
    assert s.utf16_json("HowAreU16".encode("utf-16-le"), False) == b'"HowAreU16"'
    assert s.utf16_json("HowAreU16".encode("utf-16-be"), True) == b'"HowAreU16"'
    assert s.utf16_json("𝄞".encode("utf-16-le"), False) == '"𝄞"'.encode()  # pair combines
    assert s.utf16_json(b"\x00\xd8A\x00", False) == b'"\\ud800A"'  # unpaired high
    assert s.utf16_json(b"\x00\xdc\x00\xd8", False) == b'"\\udc00\\ud800"'  # reversed
    assert s.utf16_json(b"\x00\xd8\x00\xd8\x00\xdc", False) == '"\\ud800𐀀"'.encode()
    assert s.utf16_json(b"\xfe\xff", False) == '"\ufffe"'.encode()
    assert s.utf16_json(b"\xff\xfeh\x00", False) == '"\ufeffh"'.encode()  # BOM kept here
    assert s.utf16_json(b"A\x00B", False) == b'"A"'  # odd byte ignored
    assert s.utf16_json(b"\n\x00", False) == b'"\\n"'


def test_utf32():
    assert s.utf32_json("HowAreU32".encode("utf-32-le"), False) == b'"HowAreU32"'
    assert s.utf32_json("𝄞".encode("utf-32-be"), True) == '"𝄞"'.encode()
    assert s.utf32_json(b"\xff\xff\x10\x00", False) == '"\U0010ffff"'.encode()
    assert s.utf32_json(b"\x00\x00\x11\x00", False) == '"\ufffd"'.encode()
    assert s.utf32_json(b"\xfc\xfd\xfe\xff", False) == '"\ufffd"'.encode()
    assert s.utf32_json(b"\xff\xff\xff\x7f", False) == '"\ufffd"'.encode()
    assert s.utf32_json(b"\x00\x00\xd8\x00", True) == b'"\\ud800"'
    assert s.utf32_json(b"A\x00\x00\x00B\x00", False) == b'"A"'  # short tail ignored


def test_string_json_by_unit_size():
    assert s.string_json(b"h\xc3\xa9", 1, False) == '"hé"'.encode()
    assert s.string_json(b"\x00h", 2, True) == b'"h"'
    assert s.string_json(b"h\x00\x00\x00", 4, False) == b'"h"'


def test_bom_order_and_removal():
    # UTF-32 LE BOM wins over the UTF-16 LE BOM it starts with
    assert s.bom_string_json(b"\xff\xfe\x00\x00h\x00\x00\x00", 1, False) == b'"h"'
    assert s.bom_string_json(b"\x00\x00\xfe\xff\x00\x00\x00h", 1, False) == b'"h"'
    assert s.bom_string_json(b"\xff\xfeh\x00i\x00", 1, False) == b'"hi"'
    assert s.bom_string_json(b"\xfe\xff\x00h\x00i", 4, False) == b'"hi"'
    assert s.bom_string_json(b"\xef\xbb\xbfhi", 2, True) == b'"hi"'
    # the BOM decides, not the field's own unit size or byte order
    assert s.bom_string_json(b"\xff\xfeh\x00", 4, True) == b'"h"'
    # no BOM: the field's unit size and byte order
    assert s.bom_string_json(b"\x00h\x00i", 2, True) == b'"hi"'
    assert s.bom_string_json(b"hi", 1, False) == b'"hi"'
    assert s.bom_string_json(b"\xef\xbb", 1, False) == '"ï»"'.encode()
    assert s.bom_string_json(b"\xff\xfe", 1, False) == b'""'
    assert s.bom_string_json(b"\xff\xfe\x00", 1, False) == b'""'  # odd tail ignored
    assert s.bom_string_json(memoryview(b"\xff\xfe\x00\x00"), 1, False) == b'""'


def test_str_json():
    assert s.str_json("a\u2028\n") == '"a\u2028\\n"'.encode()
    assert s.str_json("\udc80x") == b'"\\udc80x"'


# -- against the byte-by-byte model --------------------------------------------

# bytes biased towards the interesting ones: ASCII specials, lead and continuation
# bytes, the surrogate lead ED and the bytes that never start a sequence
_BYTE = st.one_of(
    st.integers(0, 255),
    st.sampled_from([0x00, 0x0A, 0x1F, 0x22, 0x5C, 0x7F, 0x80, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1,
                     0xC2, 0xDF, 0xE0, 0xED, 0xEF, 0xF0, 0xF4, 0xF5, 0xFF]),
)
_BYTES = st.lists(_BYTE, max_size=24).map(bytes)


@st.composite
def _texty(draw) -> bytes:
    """Random bytes spliced with valid UTF-8 of random text."""
    parts = draw(st.lists(st.one_of(_BYTES, st.text(max_size=6).map(
        lambda t: t.encode("utf-8", "surrogatepass"))), max_size=5))
    return b"".join(parts)


@settings(max_examples=600, deadline=None)
@given(_texty())
def test_utf8_matches_model(data):
    out = s.utf8_json(data)
    assert out == model.utf8(data)
    if not _has_surrogate_form(data):  # otherwise the documented \udxxx difference
        assert out == model.utf8(data, surrogates_escaped=False)


def _has_surrogate_form(data: bytes) -> bool:
    return any(data[i] == 0xED and 0xA0 <= data[i + 1] <= 0xBF
               for i in range(len(data) - 1))


_UNITS16 = st.lists(st.one_of(st.integers(0, 0xFFFF), st.integers(0xD7FF, 0xE000),
                              st.sampled_from([0, 0x22, 0x5C, 0x7F, 0x80, 0xFEFF])),
                    max_size=16)


@settings(max_examples=400, deadline=None)
@given(_UNITS16, st.booleans(), st.booleans())
def test_utf16_matches_model(units, big_endian, odd):
    data = b"".join(u.to_bytes(2, "big" if big_endian else "little") for u in units)
    data += b"\x41" if odd else b""
    out = s.utf16_json(data, big_endian)
    assert out == model.utf16(data, big_endian)
    if not any(0xD800 <= u <= 0xDFFF for u in units):
        assert out == model.utf16(data, big_endian, surrogates_escaped=False)


_UNITS32 = st.lists(st.one_of(st.integers(0, 0x10FFFF), st.integers(0, 0xFFFFFFFF),
                              st.integers(0xD7FF, 0xE000), st.integers(0x10FFFE, 0x110001)),
                    max_size=12)


@settings(max_examples=400, deadline=None)
@given(_UNITS32, st.booleans())
def test_utf32_matches_model(units, big_endian):
    data = b"".join(u.to_bytes(4, "big" if big_endian else "little") for u in units)
    out = s.utf32_json(data, big_endian)
    assert out == model.utf32(data, big_endian)
    if not any(0xD800 <= u <= 0xDFFF or u > 0x10FFFF for u in units):
        assert out == model.utf32(data, big_endian, surrogates_escaped=False)


@settings(deadline=None)
@given(_BYTES)
def test_latin1_matches_model(data):
    assert s.latin1_json(data) == model.latin1(data)


# -- output is always valid UTF-8 JSON -------------------------------------------


def _assert_valid_json_string(out: bytes) -> str:
    text = out.decode("utf-8")  # strict: raises on invalid UTF-8
    value = json.loads(text)
    assert isinstance(value, str)
    return value


@settings(max_examples=300, deadline=None)
@given(_texty())
def test_utf8_output_is_valid_json(data):
    value = _assert_valid_json_string(s.utf8_json(data))
    try:
        assert value == data.decode("utf-8")
    except UnicodeDecodeError:  # repaired: every input byte still shows up
        assert len(value) <= len(data)
    assert _assert_valid_json_string(s.latin1_json(data)) == data.decode("latin-1")


@settings(max_examples=300, deadline=None)
@given(_UNITS16, _UNITS32, st.booleans())
def test_utf16_utf32_output_is_valid_json(units16, units32, big_endian):
    order = "big" if big_endian else "little"
    d16 = b"".join(u.to_bytes(2, order) for u in units16)
    d32 = b"".join(u.to_bytes(4, order) for u in units32)
    _assert_valid_json_string(s.utf16_json(d16, big_endian))
    value = _assert_valid_json_string(s.utf32_json(d32, big_endian))
    assert len(value) <= len(units32)


@settings(deadline=None)
@given(st.text())  # hypothesis text holds no lone surrogates
def test_valid_text_round_trips(text):
    assert json.loads(s.utf8_json(text.encode())) == text
    assert json.loads(s.utf16_json(text.encode("utf-16-le"), False)) == text
    assert json.loads(s.utf16_json(text.encode("utf-16-be"), True)) == text
    assert json.loads(s.utf32_json(text.encode("utf-32-be"), True)) == text
    assert json.loads(s.bom_string_json(text.encode("utf-32"), 1, True)) == text
    if not text.startswith("\x00"):  # FF FE 00 00 would read as the UTF-32 LE BOM
        assert json.loads(s.bom_string_json(text.encode("utf-16"), 4, True)) == text
    assert json.loads(s.bom_string_json(text.encode("utf-8-sig"), 2, True)) == text
