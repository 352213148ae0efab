"""A slow, literal model of perf-decode's string and IPv6 rules, used as the test oracle.

It works byte by byte on purpose, independent of the codec-based implementation in
``ehtool.values.strings``. ``surrogates_escaped=True`` applies ehtool's two documented
differences (lone surrogates as ``\\udxxx`` escapes, UCS-4 units above U+10FFFF as
U+FFFD); ``False`` gives perf-decode's own bytes.
"""

from __future__ import annotations

_SHORT = {0x08: b"\\b", 0x0C: b"\\f", 0x0A: b"\\n", 0x0D: b"\\r", 0x09: b"\\t",
          0x22: b'\\"', 0x5C: b"\\\\"}


def _ascii(b: int) -> bytes:
    if b in _SHORT:
        return _SHORT[b]
    if b < 0x20:
        return b"\\u00%02x" % b
    return bytes([b])


def _code_point(cp: int, surrogates_escaped: bool) -> bytes:
    """UTF-8 (or the legacy long form) of one code point, JSON-escaped."""
    if cp < 0x80:
        return _ascii(cp)
    if surrogates_escaped:
        if 0xD800 <= cp <= 0xDFFF:
            return b"\\u%04x" % cp
        if cp > 0x10FFFF:
            cp = 0xFFFD
    if cp < 0x800:
        return bytes([0xC0 | cp >> 6, 0x80 | cp & 0x3F])
    if cp < 0x10000:
        return bytes([0xE0 | cp >> 12, 0x80 | cp >> 6 & 0x3F, 0x80 | cp & 0x3F])
    # 4- to 7-byte (legacy) forms: continuation bytes carry 6 bits each
    for n, lead in ((4, 0xF0), (5, 0xF8), (6, 0xFC), (7, 0xFE)):
        if cp < 1 << (5 * n + 1) or n == 7:
            tail = [0x80 | (cp >> (6 * k)) & 0x3F for k in range(n - 2, -1, -1)]
            return bytes([lead | (cp >> (6 * (n - 1)))] + tail)
    raise AssertionError


def utf8(data: bytes, surrogates_escaped: bool = True) -> bytes:
    out = [b'"']
    i, n = 0, len(data)
    while i < n:
        b0 = data[i]
        if b0 < 0x80:
            out.append(_ascii(b0))
            i += 1
            continue
        size = 2 if 0xC0 <= b0 <= 0xDF else 3 if 0xE0 <= b0 <= 0xEF else \
            4 if 0xF0 <= b0 <= 0xF4 else 0
        if size and n - i >= size and all(0x80 <= c <= 0xBF for c in data[i + 1:i + size]):
            cp = b0 & (0x7F >> size)
            for c in data[i + 1:i + size]:
                cp = cp << 6 | c & 0x3F
            if cp >= (0x80, 0x800, 0x10000)[size - 2] and cp <= 0x10FFFF:
                if 0xD800 <= cp <= 0xDFFF and not surrogates_escaped:
                    out.append(data[i:i + 3])
                else:
                    out.append(_code_point(cp, surrogates_escaped))
                i += size
                continue
        out.append(_code_point(b0, surrogates_escaped))  # Latin-1
        i += 1
    out.append(b'"')
    return b"".join(out)


def utf16(data: bytes, big_endian: bool, surrogates_escaped: bool = True) -> bytes:
    order = "big" if big_endian else "little"
    units = [int.from_bytes(data[k:k + 2], order) for k in range(0, len(data) - 1, 2)]
    out = [b'"']
    i = 0
    while i < len(units):
        w0 = units[i]
        if 0xD800 <= w0 <= 0xDBFF and i + 1 < len(units) and 0xDC00 <= units[i + 1] <= 0xDFFF:
            out.append(_code_point(0x10000 + ((w0 - 0xD800) << 10) + units[i + 1] - 0xDC00,
                                   surrogates_escaped))
            i += 2
            continue
        out.append(_code_point(w0, surrogates_escaped))
        i += 1
    out.append(b'"')
    return b"".join(out)


def utf32(data: bytes, big_endian: bool, surrogates_escaped: bool = True) -> bytes:
    order = "big" if big_endian else "little"
    units = [int.from_bytes(data[k:k + 4], order) for k in range(0, len(data) - 3, 4)]
    return b'"' + b"".join(_code_point(u, surrogates_escaped) for u in units) + b'"'


def latin1(data: bytes) -> bytes:
    return b'"' + b"".join(_code_point(b, True) for b in data) + b'"'


def ipv6(data: bytes) -> str:
    """inet_ntop's rules spelled out: compress the first longest run of >= 2 zero words."""
    words = [int.from_bytes(data[k:k + 2], "big") for k in range(0, 16, 2)]
    runs = []  # (start, length)
    k = 0
    while k < 8:
        if words[k] == 0:
            start = k
            while k < 8 and words[k] == 0:
                k += 1
            runs.append((start, k - start))
        else:
            k += 1
    best = max(runs, key=lambda r: (r[1], -r[0]), default=(0, 0))
    if best[1] < 2:
        return ":".join("%x" % w for w in words)
    start, length = best
    if start == 0 and (length == 6 or (length == 5 and words[5] == 0xFFFF)):
        return ("::ffff:" if length == 5 else "::") + ".".join(str(b) for b in data[12:])
    left = ":".join("%x" % w for w in words[:start])
    right = ":".join("%x" % w for w in words[start + length:])
    return left + "::" + right
