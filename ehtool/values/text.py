"""JSON text of single values, byte-exact with perf-decode's ``EventFormatter``.

Every function returns the JSON value as ``bytes`` (strings already quoted).
They run once per decoded field, so they favour table lookups and fast paths.

Strings (re-exported from :mod:`ehtool.values.strings`, which documents the
rules and the two deliberate differences: lone surrogates as ``\\udxxx``
escapes, UTF-32 units above U+10FFFF as U+FFFD):
``utf8_json``, ``latin1_json``, ``utf16_json``, ``utf32_json``,
``string_json``, ``bom_string_json``, ``str_json``.

Numbers and other formats:

* ``signed_json``/``unsigned_json``: decimal.
* ``hex_int``: ``"0xEA60"`` (uppercase, no padding); ``hex_bytes``:
  ``"48 6f 77"`` (lowercase, space separated, ``""`` when empty).
* ``boolean_json(value, size)``: 0 ``false``, 1 ``true``, otherwise the value as
  a signed 32-bit decimal (8- and 16-bit values are zero-extended first).
* ``float32_json``/``float32_bits_json``/``float64_json``: C++ ``std::to_chars``
  (libstdc++) shortest round-trip form: the shortest digits that read back to
  the same float (the closest of those), written fixed or scientific, whichever
  is shorter, fixed on a tie (``3``, ``0.33333334``, ``1e+15``, ``1.5e-07``);
  fixed notation of a whole number prints its exact value
  (``123456789012345677877``, not ``...680000``); ``"nan"``/``"-nan"`` by the
  sign bit, ``"inf"``/``"-inf"``; ``0``/``-0``.
* ``time_json``/``time32_json``/``time64_json``: signed seconds since 1970 as
  ``"YYYY-MM-DDTHH:MM:SS"`` (UTC, proleptic Gregorian, glibc ``gmtime_r`` +
  ``%04d``: year -1 prints ``-001``); ``"TIME(n)"`` when the year does not fit
  ``tm_year`` (a 32-bit int).
* ``utc_ns_json``: sample time ``"YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ"`` from UTC ns
  (floor division for negative times); ``seconds_json``: the bare number
  ``<sec>.<9-digit ns>`` used without CLOCK_DATA.
* ``errno_json``: ``"EPERM(1)"`` for Linux errno 1..133 (0, 41 and 58 have no
  name), else ``"ERRNO(n)"`` with n signed 32-bit.
* ``uuid_json``: lowercase 8-4-4-4-12 in stored byte order.
* ``ipv4_json``, ``ipv6_json`` (glibc ``inet_ntop`` text: the first longest run
  of two or more zero groups becomes ``::``; ``::a.b.c.d`` and
  ``::ffff:a.b.c.d`` forms), ``port_json`` (big-endian decimal).
"""

from __future__ import annotations

import struct
from functools import cache

from ehtool.values.strings import (
    bom_string_json,
    latin1_json,
    str_json,
    string_json,
    text_json,
    utf8_json,
    utf16_json,
    utf32_json,
)
from ehtool.values.times import format_utc_seconds

__all__ = [
    "ERRNO_JSON", "bom_string_json", "boolean_json", "errno_json", "float32_bits_json",
    "float32_json", "float32_powers_json", "float64_json", "hex_bytes", "hex_int",
    "ipv4_json", "ipv6_json", "latin1_json", "port_json", "seconds_json", "signed_json",
    "str_json", "string_json", "text_json", "time32_json",
    "time64_json", "time_json", "unsigned_json", "utc_ns_json", "utf8_json", "utf16_json",
    "utf32_json", "uuid_json",
]

Bytes = bytes | bytearray | memoryview

# -- integers and bytes --------------------------------------------------------


def signed_json(value: int) -> bytes:
    """Decimal integer."""
    return b"%d" % value


unsigned_json = signed_json


def hex_int(value: int) -> bytes:
    """``"0xEA60"``: uppercase, no padding."""
    return b'"0x%X"' % value


def hex_bytes(data: Bytes) -> bytes:
    """``"48 6f 77"``: lowercase pairs separated by spaces."""
    return b'"%s"' % data.hex(" ").encode()


def int32(value: int) -> int:
    """``value``'s low 32 bits as a signed 32-bit int."""
    value &= 0xFFFFFFFF
    return value - 0x100000000 if value & 0x80000000 else value


def boolean_json(value: int, size: int = 4) -> bytes:
    """0 false, 1 true, anything else the value as a signed 32-bit decimal."""
    if value == 0:
        return b"false"
    if value == 1:
        return b"true"
    return b"%d" % int32(value)


def uuid_json(data: Bytes) -> bytes:
    """``"xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"`` in stored byte order."""
    h = data.hex().encode()
    return b'"%s-%s-%s-%s-%s"' % (h[:8], h[8:12], h[12:16], h[16:20], h[20:32])


def port_json(data: Bytes) -> bytes:
    """A 16-bit port in network (big-endian) byte order."""
    return b"%d" % ((data[0] << 8) | data[1])


def ipv4_json(data: Bytes) -> bytes:
    return b'"%d.%d.%d.%d"' % (data[0], data[1], data[2], data[3])


_WORDS = struct.Struct(">8H").unpack


def ipv6_json(data: Bytes) -> bytes:
    """IPv6 text exactly as glibc's ``inet_ntop``."""
    words = _WORDS(data)
    if 0 not in words:
        return b'"%x:%x:%x:%x:%x:%x:%x:%x"' % words
    # first longest run of >= 2 zero words becomes "::"
    best, best_len, run = -1, 1, 0
    for i, w in enumerate(words):
        if w:
            run = 0
        else:
            run += 1
            if run > best_len:
                best, best_len = i + 1 - run, run
    if best < 0:
        return b'"%x:%x:%x:%x:%x:%x:%x:%x"' % words
    end = best + best_len
    if best == 0 and (best_len == 6 or (best_len == 5 and words[5] == 0xFFFF)):
        tail = "%d.%d.%d.%d" % (data[12], data[13], data[14], data[15])
        return ('"::%s%s"' % ("ffff:" if best_len == 5 else "", tail)).encode()
    head = ":".join(["%x" % w for w in words[:best]])
    tail = ":".join(["%x" % w for w in words[end:]])
    return ('"%s::%s"' % (head, tail)).encode()


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
    "EOWNERDEAD", "ENOTRECOVERABLE", "ERFKILL", "EHWPOISON",
)
#: errno_json of 0..133 (also the C renderer's table)
ERRNO_JSON = tuple(
    f'"{name}({i})"'.encode() if name else b'"ERRNO(%d)"' % i
    for i, name in enumerate(_ERRNO_NAMES))


#: Linux's other names for some of them (errno.h)
_ERRNO_ALIASES = {"EWOULDBLOCK": 11, "EDEADLOCK": 35, "ENOTSUP": 95}


def errno_value(text: str) -> int | None:
    """The number of an errno as written or shown: ``ENOENT``, ``"ENOENT(2)"`` (what
    :func:`errno_json` shows), ``ERRNO(-5)``; None for an unknown name."""
    name, paren, rest = text.strip().upper().partition("(")
    if paren:  # NAME(n): n, when the name agrees
        try:
            number = int(rest.removesuffix(")")) if rest.endswith(")") else None
        except ValueError:
            return None
        return number if number is not None and (
            name == "ERRNO" or errno_value(name) == number) else None
    if name in _ERRNO_ALIASES:
        return _ERRNO_ALIASES[name]
    return _ERRNO_NAMES.index(name) if name and name in _ERRNO_NAMES else None


def errno_json(value: int) -> bytes:
    """``"EPERM(1)"``; unnamed values ``"ERRNO(n)"`` with n signed 32-bit."""
    value &= 0xFFFFFFFF
    if value < 134:
        return ERRNO_JSON[value]
    return b'"ERRNO(%d)"' % int32(value)


# -- time ----------------------------------------------------------------------


#: day number -> its '"YYYY-MM-DDT' prefix (b"" when its year overflows), bounded
_DAYS: dict[int, bytes] = {}
#: seconds -> JSON of recent time field values (events often repeat them), bounded
_TIMES: dict[int, bytes] = {}
_CACHE_MAX = 4096


def _day_prefix(days: int) -> bytes:
    """``b'"YYYY-MM-DDT'`` of a day since 1970, or ``b""`` when its year overflows."""
    prefix = _DAYS.get(days)
    if prefix is None:
        text = format_utc_seconds(days * 86400)
        prefix = b"" if text[0] == "T" else b'"' + text[:-8].encode()
        if len(_DAYS) >= _CACHE_MAX:
            _DAYS.clear()
        _DAYS[days] = prefix
    return prefix


def time_json(seconds: int) -> bytes:
    """A ``time`` field: signed seconds since 1970, UTC, no fraction (``"TIME(n)"`` when
    the year does not fit glibc's ``gmtime``)."""
    out = _TIMES.get(seconds)
    if out is not None:
        return out
    days, rem = divmod(seconds, 86400)
    prefix = _day_prefix(days)
    if not prefix:
        out = b'"TIME(%d)"' % seconds
    else:
        minutes, sec = divmod(rem, 60)
        out = b'%s%02d:%02d:%02d"' % (prefix, minutes // 60, minutes % 60, sec)
    if len(_TIMES) >= _CACHE_MAX:
        _TIMES.clear()
    _TIMES[seconds] = out
    return out


def time32_json(value: int) -> bytes:
    """``time_json`` of a 32-bit value (taken as signed)."""
    return time_json(int32(value))


def time64_json(value: int) -> bytes:
    """``time_json`` of a 64-bit value (taken as signed)."""
    value &= 0xFFFFFFFFFFFFFFFF
    return time_json(value - (1 << 64) if value >> 63 else value)


def utc_ns_json(ns: int) -> bytes:
    """Sample meta time from UTC ns since 1970: ``"YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ"``
    (``"TIME(sec).nnnnnnnnnZ"`` past the year limit, as perf-decode)."""
    sec, frac = divmod(ns, 1_000_000_000)
    days, rem = divmod(sec, 86400)
    prefix = _day_prefix(days)
    if not prefix:
        return b'"TIME(%d).%09dZ"' % (sec, frac)
    minutes, s = divmod(rem, 60)
    return b'%s%02d:%02d:%02d.%09dZ"' % (prefix, minutes // 60, minutes % 60, s, frac)


def seconds_json(ns: int) -> bytes:
    """Sample meta time without a known wall clock: the bare number ``sec.nnnnnnnnn``
    (the unsigned 64-bit session time)."""
    ns &= 0xFFFFFFFFFFFFFFFF
    return b"%d.%09d" % divmod(ns, 1_000_000_000)


# -- floats ----------------------------------------------------------------------
#
# std::to_chars(first, last, value) picks fixed when, for the shortest digits
# d (n of them, no trailing zeros) times 10**e, -(n + 3) <= e <= 5 (-3 <= e <= 4
# when n == 1): exactly "fixed is not longer than scientific". Fixed notation
# with e >= 0 prints the exact integer value of the float.

_F32 = struct.Struct("<f")
_U32 = struct.Struct("<I")
_D = struct.Struct("<d")


def _fixed_wins(n: int, e: int) -> bool:
    return (-3 <= e <= 4) if n == 1 else (-(n + 3) <= e <= 5)


def _format(digits: str, e: int, sign: str, value: float) -> bytes:
    """to_chars text of ``sign digits * 10**e`` (``digits`` without trailing zeros)."""
    n = len(digits)
    if _fixed_wins(n, e):
        if e >= 0:
            return (sign + "%d" % abs(int(value))).encode()
        point = n + e
        if point > 0:
            return (sign + digits[:point] + "." + digits[point:]).encode()
        return (sign + "0." + "0" * -point + digits).encode()
    x = e + n - 1
    mantissa = digits[0] + "." + digits[1:] if n > 1 else digits
    return ("%s%se%s%02d" % (sign, mantissa, "-" if x < 0 else "+", abs(x))).encode()


def _special(value: float) -> bytes:
    """nan, inf and zero."""
    if value != value:
        return b'"-nan"' if _is_negative(value) else b'"nan"'
    if value == 0:
        return b"-0" if _is_negative(value) else b"0"
    return b'"-inf"' if value < 0 else b'"inf"'


def _is_negative(value: float) -> bool:
    return _D.pack(value)[7] >= 0x80


def float64_json(value: float) -> bytes:
    """Shortest round-trip text of a double, as C++ ``std::to_chars``."""
    r = repr(value)  # shortest digits; its layout mostly agrees with to_chars
    if "e" in r:
        mantissa, _, exp = r.partition("e")
        if exp[0] == "+":  # >= 1e16: fixed when not longer, with the exact value
            n = len(mantissa) - (1 if "." in mantissa else 0) - (1 if r[0] == "-" else 0)
            if _fixed_wins(n, int(exp) - n + 1):
                return b"%d" % int(value)
        return r.encode()  # < 1e-4: scientific either way, same text
    last = r[-1]
    if last == "0" and r[-2] == ".":  # a whole number below 1e16: repr digits are exact
        whole = r[:-2]
        digits = whole.rstrip("0")
        if digits == "" or digits == "-":
            return _special(value)  # zero
        e = len(whole) - len(digits)
        if e <= 4 or (e == 5 and len(digits.lstrip("-")) > 1):
            return whole.encode()
        sign = "-" if value < 0 else ""
        return _format(digits.lstrip("-"), e, sign, value)
    if last == "f" or last == "n":
        return _special(value)
    if -0.001 < value < 0.001:  # "0.000ddd": scientific when shorter
        sign = "-" if value < 0 else ""
        frac = r.partition(".")[2]
        return _format(frac.lstrip("0"), -len(frac), sign, value)
    return r.encode()


@cache
def float32_powers_json() -> tuple[bytes, ...]:
    """float32_bits_json of the positive power of two of each biased exponent (index 0 and
    255 are zero and infinity): the C renderer's table for them."""
    return tuple(_float32_text(e << 23) for e in range(256))


def float32_json(value: float) -> bytes:
    """Shortest text that reads back as the same 32-bit float (``value`` is rounded to
    float32 first)."""
    try:
        bits = _U32.unpack(_F32.pack(value))[0]
    except OverflowError:  # finite but beyond float32: C would round to infinity
        bits = 0xFF800000 if value < 0 else 0x7F800000
    return float32_bits_json(bits)


_f32_cache: dict[int, bytes] = {}  # bits -> text; traces repeat values


def float32_bits_json(bits: int) -> bytes:
    """A float32 given as its 32 raw bits."""
    text = _f32_cache.get(bits)
    if text is None:
        if len(_f32_cache) >= 4096:
            _f32_cache.clear()
        text = _f32_cache[bits] = _float32_text(bits & 0xFFFFFFFF)
    return text


def _float32_text(bits: int) -> bytes:
    sign = "-" if bits >> 31 else ""
    magnitude = bits & 0x7FFFFFFF
    if magnitude >= 0x7F800000:
        if magnitude > 0x7F800000:
            return b'"-nan"' if sign else b'"nan"'
        return b'"-inf"' if sign else b'"inf"'
    if magnitude == 0:
        return b"-0" if sign else b"0"
    t, e = _f32_shortest(magnitude)
    return _format(str(t), e, sign, _F32.unpack(_U32.pack(magnitude))[0])


_POW10 = [10 ** k for k in range(64)]


def _f32_shortest(bits: int) -> tuple[int, int]:
    """(t, e): the shortest decimal t * 10**e inside the positive float32's rounding
    interval, the one closest to the value (ties to even t); t is not a multiple of 10.

    Works in exact integers: the value is 4m * 2**e2 and the interval's ends are
    (4m - 2) and (4m + 2) times 2**e2 ((4m - 1) at a binade start, where the gap below
    halves); round-half-even reads an end back to this float only when m is even.
    The largest power 10**j with a multiple inside the interval gives the fewest
    digits.
    """
    frac = bits & 0x7FFFFF
    bexp = bits >> 23
    if bexp:
        m, e2 = frac | 0x800000, bexp - 152
    else:
        m, e2 = frac, -151
    v = m << 2
    lo = v - 1 if frac == 0 and bexp > 1 else v - 2
    hi = v + 2
    closed = not m & 1
    if e2 >= 0:
        scale, den2 = 1 << e2, 1
    else:
        scale, den2 = 1, 1 << -e2
    lo *= scale
    hi *= scale
    v *= scale

    def search(j: int) -> tuple[int, int, int]:
        """Multiples t * 10**j inside the interval: (first, last, nearest to v)."""
        if j >= 0:
            a, b, c, den = lo, hi, v, den2 * _POW10[j]
        else:
            p = _POW10[-j]
            a, b, c, den = lo * p, hi * p, v * p, den2
        first, r = divmod(a, den)
        if r or not closed:
            first += 1
        last, r = divmod(b, den)
        if not r and not closed:
            last -= 1
        q, r = divmod(c, den)
        if 2 * r > den or (2 * r == den and q & 1):
            q += 1
        return first, last, q

    # 10**j about the interval's width (4 * 2**e2): one or two multiples fit
    j = ((e2 + 2) * 30103) // 100000
    first, last, q = search(j)
    while first > last:
        j -= 1
        first, last, q = search(j)
    while True:
        f2, l2, q2 = search(j + 1)
        if f2 > l2:
            break
        j, first, last, q = j + 1, f2, l2, q2
    return min(max(q, first), last), j
