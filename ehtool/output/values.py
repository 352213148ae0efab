"""JSON text of single values, byte-exact with perf-decode's ``EventFormatter``.

Every function returns the JSON value as ``bytes`` (strings already quoted).
They run once per decoded field, so they favour table lookups and fast paths.

Where perf-decode's output would not be valid UTF-8 we deliberately differ,
so that ehtool's output is always a valid UTF-8 JSON document:

* a lone UTF-16 surrogate (from UTF-16 data, or a 3-byte ``ED A0..BF xx``
  sequence in UTF-8 data, which perf-decode copies through) is written as the
  JSON escape ``\\udxxx``; JSON parsers give back the same code point;
* a UTF-32 code point above U+10FFFF (perf-decode writes a legacy 4- to
  7-byte form) is written as U+FFFD REPLACEMENT CHARACTER.

Everything else follows perf-decode: invalid UTF-8 bytes become the Latin-1
character of each byte; only ``"``, ``\\`` and control characters are escaped
(``\\b \\f \\n \\r \\t``, others ``\\u00xx``); non-ASCII is never escaped.
"""

from __future__ import annotations

import codecs
import json
import math
import struct
from array import array
from sys import byteorder

import orjson

from ehtool.perfdata.session import format_utc_seconds

_dumps = orjson.dumps
_NATIVE_BE = byteorder == "big"

# -- strings -------------------------------------------------------------------


def _latin1_fallback(exc: UnicodeError) -> tuple[str, int]:
    """Decode error handler: a 3-byte surrogate passes (as a lone surrogate),
    any other invalid byte becomes its Latin-1 character."""
    assert isinstance(exc, UnicodeDecodeError)
    data, i = exc.object, exc.start
    if (data[i] == 0xED and i + 2 < len(data) and 0xA0 <= data[i + 1] <= 0xBF
            and 0x80 <= data[i + 2] <= 0xBF):
        return chr(0xD000 | ((data[i + 1] & 0x3F) << 6) | (data[i + 2] & 0x3F)), i + 3
    return chr(data[i]), i + 1


codecs.register_error("ehtool-latin1", _latin1_fallback)


def str_json(text: str) -> bytes:
    """A Python string as a JSON string (lone surrogates as ``\\udxxx`` escapes)."""
    try:
        return _dumps(text)
    except TypeError:
        return json.dumps(text, ensure_ascii=False).encode("utf-8", "backslashreplace")


def utf8_json(data: bytes | bytearray | memoryview) -> bytes:
    """UTF-8 bytes as a JSON string (invalid bytes as Latin-1 characters)."""
    if not isinstance(data, bytes):
        data = bytes(data)
    if data.isascii():
        return _dumps(data.decode("ascii"))
    return str_json(data.decode("utf-8", "ehtool-latin1"))


def latin1_json(data: bytes | bytearray | memoryview) -> bytes:
    """Each byte a code point (``string8``; tracefs ``char`` arrays)."""
    return _dumps(bytes(data).decode("latin-1"))


def utf16_json(data: bytes | memoryview, big_endian: bool) -> bytes:
    """UTF-16 code units: pairs combine, lone surrogates are escaped."""
    data = bytes(data)
    if len(data) & 1:
        data = data[:-1]
    return str_json(data.decode("utf-16-be" if big_endian else "utf-16-le", "surrogatepass"))


def utf32_json(data: bytes | memoryview, big_endian: bool) -> bytes:
    """UCS-4 code units; values above U+10FFFF become U+FFFD."""
    data = bytes(data)
    units = array("I")
    units.frombytes(data[: len(data) & ~3])
    if big_endian != _NATIVE_BE:
        units.byteswap()
    try:
        text = "".join(map(chr, units))
    except (ValueError, OverflowError):
        text = "".join(chr(u) if u <= 0x10FFFF else "\ufffd" for u in units)
    return str_json(text)


_BOMS = (
    (b"\xff\xfe\x00\x00", 4, False),
    (b"\x00\x00\xfe\xff", 4, True),
    (b"\xff\xfe", 2, False),
    (b"\xfe\xff", 2, True),
    (b"\xef\xbb\xbf", 1, False),
)


def bom_string_json(data: bytes | memoryview, unit_size: int, big_endian: bool) -> bytes:
    """``string_utf_bom``/``xml``/``json``: decode per a leading BOM (dropped), else per
    unit size."""
    data = bytes(data)
    for bom, size, be in _BOMS:
        if data.startswith(bom):
            return string_json(data[len(bom):], size, be)
    return string_json(data, unit_size, big_endian)


def string_json(data: bytes | memoryview, unit_size: int, big_endian: bool) -> bytes:
    """``string_utf``: UTF-8, UTF-16 or UCS-4 by code-unit size."""
    if unit_size == 1:
        return utf8_json(data)
    if unit_size == 2:
        return utf16_json(data, big_endian)
    return utf32_json(data, big_endian)


# -- integers and bytes --------------------------------------------------------


def signed_json(value: int) -> bytes:
    return b"%d" % value


unsigned_json = signed_json


def hex_int(value: int) -> bytes:
    """``"0xEA60"``: uppercase, no padding."""
    return b'"0x%X"' % value


def hex_bytes(data: bytes | memoryview) -> bytes:
    """``"48 6f 77"``: lowercase pairs separated by spaces."""
    return b'"' + bytes(data).hex(" ").encode() + b'"'


def boolean_json(value: int, size: int = 4) -> bytes:
    """0 false, 1 true, anything else the value as a signed 32-bit decimal."""
    if value == 0:
        return b"false"
    if value == 1:
        return b"true"
    value &= 0xFFFFFFFF
    return b"%d" % (value - (1 << 32) if value & 0x80000000 else value)


def uuid_json(data: bytes | memoryview) -> bytes:
    """``"xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"`` in stored byte order."""
    h = bytes(data).hex()
    return f'"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"'.encode()


def port_json(data: bytes | memoryview) -> bytes:
    """A 16-bit port in network (big-endian) byte order."""
    return b"%d" % ((data[0] << 8) | data[1])


def ipv4_json(data: bytes | memoryview) -> bytes:
    return b'"%d.%d.%d.%d"' % (data[0], data[1], data[2], data[3])


def ipv6_json(data: bytes | memoryview) -> bytes:
    """IPv6 text exactly as glibc's ``inet_ntop``."""
    b = bytes(data)
    words = struct.unpack(">8H", b)
    # longest run of >= 2 zero words (first of equals) becomes "::"
    best_start, best_len, start = -1, 0, -1
    for i, w in enumerate(words + (1,)):
        if w == 0 and i < 8:
            if start < 0:
                start = i
        elif start >= 0:
            if i - start > best_len:
                best_start, best_len = start, i - start
            start = -1
    if best_len < 2:
        best_start = -1
    parts: list[str] = []
    i = 0
    while i < 8:
        if i == best_start:
            parts.append(":" if i == 0 else "")
            i += best_len
            if i == 8:
                parts.append("")
            continue
        # IPv4-compatible (::a.b.c.d) and IPv4-mapped (::ffff:a.b.c.d) forms
        if i == 6 and best_start == 0 and (best_len == 6 or (best_len == 5 and words[5] == 0xFFFF)):
            parts.append("%d.%d.%d.%d" % tuple(b[12:16]))
            break
        parts.append("%x" % words[i])
        i += 1
    return ('"' + ":".join(parts) + '"').encode()


# -- errno ---------------------------------------------------------------------

_ERRNO_NAMES = (
    "", "EPERM", "ENOENT", "ESRCH", "EINTR", "EIO", "ENXIO", "E2BIG", "ENOEXEC", "EBADF",
    "ECHILD", "EAGAIN", "ENOMEM", "EACCES", "EFAULT", "ENOTBLK", "EBUSY", "EEXIST", "EXDEV",
    "ENODEV", "ENOTDIR", "EISDIR", "EINVAL", "ENFILE", "EMFILE", "ENOTTY", "ETXTBSY", "EFBIG",
    "ENOSPC", "ESPIPE", "EROFS", "EMLINK", "EPIPE", "EDOM", "ERANGE", "EDEADLK",
    "ENAMETOOLONG", "ENOLCK", "ENOSYS", "ENOTEMPTY", "ELOOP", "", "ENOMSG", "EIDRM", "ECHRNG",
    "EL2NSYNC", "EL3HLT", "EL3RST", "ELNRNG", "EUNATCH", "ENOCSI", "EL2HLT", "EBADE", "EBADR",
    "EXFULL", "ENOANO", "EBADRQC", "EBADSLT", "", "EBFONT", "ENOSTR", "ENODATA", "ETIME",
    "ENOSR", "ENONET", "ENOPKG", "EREMOTE", "ENOLINK", "EADV", "ESRMNT", "ECOMM", "EPROTO",
    "EMULTIHOP", "EDOTDOT", "EBADMSG", "EOVERFLOW", "ENOTUNIQ", "EBADFD", "EREMCHG",
    "ELIBACC", "ELIBBAD", "ELIBSCN", "ELIBMAX", "ELIBEXEC", "EILSEQ", "ERESTART", "ESTRPIPE",
    "EUSERS", "ENOTSOCK", "EDESTADDRREQ", "EMSGSIZE", "EPROTOTYPE", "ENOPROTOOPT",
    "EPROTONOSUPPORT", "ESOCKTNOSUPPORT", "EOPNOTSUPP", "EPFNOSUPPORT", "EAFNOSUPPORT",
    "EADDRINUSE", "EADDRNOTAVAIL", "ENETDOWN", "ENETUNREACH", "ENETRESET", "ECONNABORTED",
    "ECONNRESET", "ENOBUFS", "EISCONN", "ENOTCONN", "ESHUTDOWN", "ETOOMANYREFS", "ETIMEDOUT",
    "ECONNREFUSED", "EHOSTDOWN", "EHOSTUNREACH", "EALREADY", "EINPROGRESS", "ESTALE",
    "EUCLEAN", "ENOTNAM", "ENAVAIL", "EISNAM", "EREMOTEIO", "EDQUOT", "ENOMEDIUM",
    "EMEDIUMTYPE", "ECANCELED", "ENOKEY", "EKEYEXPIRED", "EKEYREVOKED", "EKEYREJECTED",
    "EOWNERDEAD", "ENOTRECOVERABLE",
)
_ERRNO_JSON = [f'"{n}({i})"'.encode() if n else b"" for i, n in enumerate(_ERRNO_NAMES)]


def errno_json(value: int) -> bytes:
    """``"EPERM(1)"``; unnamed values ``"ERRNO(n)"`` with n signed 32-bit."""
    value &= 0xFFFFFFFF
    if value < len(_ERRNO_JSON) and _ERRNO_JSON[value]:
        return _ERRNO_JSON[value]
    return b'"ERRNO(%d)"' % (value - (1 << 32) if value & 0x80000000 else value)


# -- time ----------------------------------------------------------------------

def time_json(seconds: int) -> bytes:
    """A ``time`` field (signed seconds since 1970, UTC, no fraction; ``TIME(n)`` when the
    year does not fit glibc's ``gmtime``)."""
    return b'"' + format_utc_seconds(seconds).encode() + b'"'


def time32_json(value: int) -> bytes:
    value &= 0xFFFFFFFF
    return time_json(value - (1 << 32) if value & 0x80000000 else value)


def time64_json(value: int) -> bytes:
    value &= 0xFFFFFFFFFFFFFFFF
    return time_json(value - (1 << 64) if value >> 63 else value)


def utc_ns_json(ns: int) -> bytes:
    """Sample meta time from wall-clock ns: ``"YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ"``."""
    sec, frac = divmod(ns, 1_000_000_000)
    text = format_utc_seconds(sec)
    if text.startswith("TIME("):
        return b'"' + text.encode() + b'"'
    return b'"%s.%09dZ"' % (text.encode(), frac)


def seconds_json(ns: int) -> bytes:
    """Sample meta time without a known wall clock: the bare number ``sec.nnnnnnnnn``."""
    ns &= 0xFFFFFFFFFFFFFFFF
    return b"%d.%09d" % divmod(ns, 1_000_000_000)


# -- floats ----------------------------------------------------------------------

_F32 = struct.Struct("=f")


def _shortest(digits: str, exp: int, negative: bool) -> bytes:
    """std::to_chars' shortest form of ``digits * 10**exp``: fixed or scientific,
    whichever is shorter (fixed on a tie)."""
    n = len(digits)
    if exp >= 0:
        fixed = digits + "0" * exp
    elif n + exp > 0:
        fixed = digits[: n + exp] + "." + digits[n + exp:]
    else:
        fixed = "0." + "0" * (-(n + exp)) + digits
    e10 = exp + n - 1
    sci = digits[0] + ("." + digits[1:] if n > 1 else "") + ("e-%02d" % -e10 if e10 < 0
                                                            else "e+%02d" % e10)
    text = fixed if len(fixed) <= len(sci) else sci
    return (("-" + text) if negative else text).encode()


def _digits(text: str) -> tuple[str, int]:
    """Significant digits and exponent of a positive decimal (``'1.25e-07'`` -> ('125', -9))."""
    mantissa, _, e = text.partition("e")
    whole, _, frac = mantissa.partition(".")
    digits = (whole + frac).lstrip("0")
    exp = (int(e) if e else 0) - len(frac)
    stripped = digits.rstrip("0")
    exp += len(digits) - len(stripped)
    return stripped or "0", exp


def _special(value: float) -> bytes | None:
    if value != value:
        return b'"-nan"' if math.copysign(1.0, value) < 0 else b'"nan"'
    if value in (math.inf, -math.inf):
        return b'"-inf"' if value < 0 else b'"inf"'
    if value == 0:
        return b"-0" if math.copysign(1.0, value) < 0 else b"0"
    return None


def float64_json(value: float) -> bytes:
    """Shortest round-trip text of a double, as C++ ``std::to_chars``."""
    special = _special(value)
    if special is not None:
        return special
    digits, exp = _digits(repr(abs(value)))
    return _shortest(digits, exp, value < 0)


def float32_json(value: float) -> bytes:
    """Shortest text that round-trips through a 32-bit float."""
    special = _special(value)
    if special is not None:
        return special
    a = _F32.unpack(_F32.pack(abs(value)))[0]
    for precision in range(9):
        text = "%.*e" % (precision, a)
        try:
            if _F32.unpack(_F32.pack(float(text)))[0] == a:
                break
        except OverflowError:  # rounded past FLT_MAX
            continue
    digits, exp = _digits(text)
    return _shortest(digits, exp, value < 0)


def float32_bits_json(bits: int) -> bytes:
    """A float32 given as its 32 raw bits."""
    return float32_json(_F32.unpack(struct.pack("=I", bits & 0xFFFFFFFF))[0])
