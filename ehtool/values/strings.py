"""JSON strings from raw text bytes, byte-exact with perf-decode's ``EventFormatter``.

Every function returns the quoted JSON string as ``bytes``. They run once per
decoded string field, so the common case (valid text) is one C-level decode and
one ``orjson.dumps`` call; the error handlers below only run on invalid input.

Rules shared with perf-decode:

* ``utf8_json``: valid 2-, 3- and 4-byte sequences pass through; every byte of an
  invalid sequence (bad lead or continuation byte, overlong form, truncated
  sequence, code point above U+10FFFF) becomes the Latin-1 character of that
  byte, and decoding resumes at the next byte.
* ``utf16_json``: a high surrogate followed by a low one combines; a trailing odd
  byte is ignored.
* ``utf32_json``: each 32-bit unit is one code point; trailing bytes short of a
  unit are ignored.
* ``latin1_json``: each byte is one code point (``string8``, tracefs ``char``
  arrays).
* ``bom_string_json``: a leading BOM selects the encoding and is dropped, tested
  in the order UTF-32 LE ``FF FE 00 00``, UTF-32 BE ``00 00 FE FF``, UTF-16 LE
  ``FF FE``, UTF-16 BE ``FE FF``, UTF-8 ``EF BB BF``; without one the field's
  own code-unit size and byte order apply.
* Escapes: only ``"``, ``\\`` and bytes below 0x20 (``\\b \\f \\n \\r \\t``, the
  others ``\\u00xx`` with lowercase hex). DEL and non-ASCII are never escaped.

Deliberate differences (perf-decode would write invalid UTF-8 there; ehtool's
output is always a valid UTF-8 JSON text):

* A lone surrogate (an unpaired UTF-16 surrogate, a UTF-32 unit in
  D800..DFFF, or the 3-byte form ``ED A0..BF xx`` in UTF-8 data, which
  perf-decode copies through) is written as the JSON escape ``\\udxxx``
  (lowercase hex); JSON parsers read back the same code point. Two such
  escapes in a high/low row read back as one supplementary character.
* A UTF-32 unit above U+10FFFF (perf-decode writes a legacy 4- to 7-byte
  form) is written as U+FFFD REPLACEMENT CHARACTER.
"""

from __future__ import annotations

import codecs

__all__ = [
    "UTF8_AS_SHOWN",
    "bom_string_json",
    "escape_surrogates",
    "latin1_json",
    "str_json",
    "string_json",
    "utf8_json",
    "utf16_json",
    "utf32_json",
]

Bytes = bytes | bytearray | memoryview


def _dumps(obj: str) -> bytes:
    """orjson.dumps, imported on first use (this stub then replaces itself)."""
    global _dumps
    from orjson import dumps as _dumps

    return _dumps(obj)


def escape_surrogates(text: str) -> str:
    """``text`` with each lone surrogate as the six characters ``\\udxxx`` (lowercase
    hex): the JSON escape :func:`str_json` writes, as plain text where only valid
    UTF-8 is stored (Arrow and Parquet strings)."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _escaped_surrogates(text: str) -> bytes:
    """JSON text of a string holding lone surrogates (which orjson rejects)."""
    from json.encoder import encode_basestring  # C version: escapes like orjson

    return escape_surrogates(encode_basestring(text)).encode("utf-8")


def str_json(text: str) -> bytes:
    """A Python string as a JSON string; lone surrogates become ``\\udxxx`` escapes."""
    try:
        return _dumps(text)
    except TypeError:  # orjson.JSONEncodeError: lone surrogate
        return _escaped_surrogates(text)


# -- decode error handlers (invalid input only) --------------------------------


def _utf8_error(exc: UnicodeError) -> tuple[str, int]:
    """``ED A0..BF xx`` decodes to its lone surrogate; any other invalid byte becomes
    its Latin-1 character and decoding resumes at the next byte."""
    if not isinstance(exc, UnicodeDecodeError):
        raise exc
    data, i = exc.object, exc.start
    b0 = data[i]
    if (b0 == 0xED and i + 2 < len(data) and 0xA0 <= data[i + 1] <= 0xBF
            and 0x80 <= data[i + 2] <= 0xBF):
        return chr(0xD000 | ((data[i + 1] & 0x3F) << 6) | (data[i + 2] & 0x3F)), i + 3
    return chr(b0), i + 1


def _ucs4_error(exc: UnicodeError) -> tuple[str, int]:
    """A UTF-32 unit in D800..DFFF decodes to that lone surrogate, one above
    U+10FFFF to U+FFFD."""
    if not isinstance(exc, UnicodeDecodeError):
        raise exc
    i = exc.start
    unit = int.from_bytes(exc.object[i:i + 4], "big" if exc.encoding.endswith("be") else "little")
    return (chr(unit) if 0xD800 <= unit <= 0xDFFF else "\ufffd"), i + 4


codecs.register_error("ehtool-utf8", _utf8_error)
codecs.register_error("ehtool-ucs4", _ucs4_error)

#: the error handler that decodes UTF-8 as decode's JSON shows it, for every text made
#: of UTF-8 bytes (names, string values): ``data.decode("utf-8", UTF8_AS_SHOWN)``
UTF8_AS_SHOWN = "ehtool-utf8"

# -- encoders -------------------------------------------------------------------


def utf8_text(data: Bytes) -> str:
    """UTF-8 bytes as the text :func:`utf8_json` shows (invalid bytes as Latin-1
    characters); lone surrogates as :func:`escape_surrogates` writes them."""
    return escape_surrogates(str(data, "utf-8", "ehtool-utf8"))


def text_json(text: str) -> bytes:
    """Python text as a JSON string by the rule of :func:`utf8_json` (bytes that were not
    UTF-8, kept by surrogateescape as file names and arguments are, as Latin-1)."""
    return utf8_json(text.encode("utf-8", "surrogateescape"))


def path_text(path: str) -> str:
    """A file name (bytes that are not UTF-8 as Python keeps them: surrogateescape) as
    the outputs show it: decode's JSON keys and ``"file"`` member, the ``file`` column,
    ``info --json`` (:func:`utf8_text` of its bytes)."""
    return utf8_text(path.encode("utf-8", "surrogateescape"))


def utf8_json(data: Bytes) -> bytes:
    """UTF-8 bytes as a JSON string (invalid bytes as Latin-1 characters)."""
    try:
        return _dumps(str(data, "utf-8"))
    except UnicodeDecodeError:
        return str_json(str(data, "utf-8", "ehtool-utf8"))


def latin1_json(data: Bytes) -> bytes:
    """Each byte one code point (``string8``; tracefs ``char`` arrays)."""
    return _dumps(str(data, "latin-1"))


def utf16_json(data: Bytes, big_endian: bool) -> bytes:
    """UTF-16 code units: pairs combine, lone surrogates are escaped."""
    encoding = "utf-16-be" if big_endian else "utf-16-le"
    try:
        return _dumps(str(data, encoding))
    except UnicodeDecodeError:  # lone surrogate or odd length
        if len(data) & 1:
            data = data[:-1]
        return str_json(str(data, encoding, "surrogatepass"))


def utf32_json(data: Bytes, big_endian: bool) -> bytes:
    """UCS-4 code units; surrogates are escaped, values above U+10FFFF become U+FFFD."""
    encoding = "utf-32-be" if big_endian else "utf-32-le"
    try:
        return _dumps(str(data, encoding))
    except UnicodeDecodeError:  # surrogate, > U+10FFFF or a partial unit
        if len(data) & 3:
            data = data[:len(data) & ~3]
        return str_json(str(data, encoding, "ehtool-ucs4"))


def string_json(data: Bytes, unit_size: int, big_endian: bool) -> bytes:
    """``string_utf``: UTF-8, UTF-16 or UCS-4 by code-unit size (1, 2 or 4)."""
    if unit_size == 1:
        return utf8_json(data)
    if unit_size == 2:
        return utf16_json(data, big_endian)
    return utf32_json(data, big_endian)


_BOM_LEADS = frozenset((0xFF, 0x00, 0xFE, 0xEF))


def bom_string_json(data: Bytes, unit_size: int, big_endian: bool) -> bytes:
    """``string_utf_bom``/``string_xml``/``string_json``: decode per a leading BOM
    (dropped), else per the field's code-unit size and byte order."""
    if data and data[0] in _BOM_LEADS:
        head = bytes(data[:4])
        if head[:2] == b"\xff\xfe":
            if head == b"\xff\xfe\x00\x00":
                return utf32_json(data[4:], False)
            return utf16_json(data[2:], False)
        if head == b"\x00\x00\xfe\xff":
            return utf32_json(data[4:], True)
        if head[:2] == b"\xfe\xff":
            return utf16_json(data[2:], True)
        if head[:3] == b"\xef\xbb\xbf":
            return utf8_json(data[3:])
    return string_json(data, unit_size, big_endian)
