"""The value rulebook: how one EventHeader value is read, shown and typed.

A value's *kind* follows from its encoding, format, size and byte order by the
reference ``EventFormatter`` rules, written once here:

=========  =====================================  ==========  =====================
kind       formats (sizes)                        JSON        Python value
=========  =====================================  ==========  =====================
unsigned   default, unsigned (1/2/4/8), others    ``%d``      int
signed     signed_int, pid (4)                    ``%d``      int
hex        hex_int (1/2/4/8)                      ``"0x%X"``  Hex (an int)
errno      errno (4)                              ``"ENOENT(2)"``  Errno (an int)
time       time (4/8): seconds since the epoch    ``"..."``   datetime (UTC) or Seconds
bool       boolean (1/2/4)                        ``true``    bool (int when not 0/1)
float      float (4/8)                            shortest    float (float32: of its text)
port       port (2): network byte order           ``%d``      int
ipv4/ipv6  ip_address (4/16)                      ``"..."``   ipaddress objects
uuid       uuid (16)                              ``"..."``   uuid.UUID
hexbytes   hex_bytes, and any other 16-byte value ``"01 ab"`` bytes
char8/16/32  string8 (1), string_utf (2/4)        ``"c"``     str
=========  =====================================  ==========  =====================

Every back end reads this module and nothing else for these rules: the
generated Python renderer (``Kind.code``, ``Kind.piece``, ``Kind.json``,
:attr:`Kind.swapped`), the C op compiler (``Kind.c_kind``, ``StringKind.c_flags``),
the tracefs field renderer (:func:`integer_kind`), the typed decoder
(``Kind.typed``, ``StringKind.typed``) and its field extractor for filters
(:attr:`Kind.reader`), and the C renderer of the typed values' JSON, the ``fields``
column (``Kind.typed_c_kind``, ``StringKind.typed_c_flags``, their ``typed_formatter``).
Adding a FieldFormat is one row in :data:`FORMAT_KINDS` (and a :data:`KIND_SPECS` entry
if it needs a new kind).
"""

from __future__ import annotations

import calendar
import datetime as _dt
import ipaddress
import math
import struct
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache, cached_property, partial
from typing import Any

from ehtool.eventheader.enums import FieldEncoding as E
from ehtool.eventheader.enums import FieldFormat as F
from ehtool.speedups import (
    FX_BOOL,
    FX_CHAR,
    FX_CHAR_TEXT,
    FX_ERRNO,
    FX_FLOAT,
    FX_HEX,
    FX_HEXBYTES,
    FX_IP,
    FX_PORT,
    FX_SIGNED,
    FX_TIME,
    FX_UNSIGNED,
    FX_UUID,
    STR_ASCII,
    STR_BOM,
    STR_HEX,
    STR_SURROGATE_TEXT,
    STR_UTF,
)
from ehtool.values import text as v
from ehtool.values.shown import Errno, Hex, Seconds
from ehtool.values.strings import UTF8_AS_SHOWN
from ehtool.values.typed_json import json_bytes

__all__ = ["FORMAT_KINDS", "KIND_SPECS", "Kind", "StringKind", "fixed_kind",
           "integer_kind", "string_kind", "time_text", "FIXED_SIZES", "UNIT_SIZES", "ZSTRINGS"]

#: sizes of the fixed-size encodings
FIXED_SIZES = {E.VALUE8: 1, E.VALUE16: 2, E.VALUE32: 4, E.VALUE64: 8, E.VALUE128: 16}
#: code-unit sizes of the string and binary encodings
UNIT_SIZES = {
    E.ZSTRING_CHAR8: 1, E.ZSTRING_CHAR16: 2, E.ZSTRING_CHAR32: 4,
    E.STRING_LENGTH16_CHAR8: 1, E.STRING_LENGTH16_CHAR16: 2, E.STRING_LENGTH16_CHAR32: 4,
    E.BINARY_LENGTH16_CHAR8: 1,
}
ZSTRINGS = (E.ZSTRING_CHAR8, E.ZSTRING_CHAR16, E.ZSTRING_CHAR32)

#: THE TABLE: numeric format -> (kind, sizes it applies to). A value of another size,
#: or a format not listed here, is shown as ``unsigned``.
FORMAT_KINDS: dict[int, tuple[str, tuple[int, ...]]] = {
    F.UNSIGNED_INT: ("unsigned", (1, 2, 4, 8)),
    F.SIGNED_INT: ("signed", (1, 2, 4, 8)),
    F.HEX_INT: ("hex", (1, 2, 4, 8)),
    F.ERRNO: ("errno", (4,)),
    F.PID: ("signed", (4,)),
    F.TIME: ("time", (4, 8)),
    F.BOOLEAN: ("bool", (1, 2, 4)),
    F.FLOAT: ("float", (4, 8)),
    F.UUID: ("uuid", (16,)),
    F.PORT: ("port", (2,)),
    F.IP_ADDRESS: ("ip", (4, 16)),
    F.IP_ADDRESS_OBSOLETE: ("ip", (4, 16)),
}


def _time(seconds: int) -> _dt.datetime | Seconds:
    try:
        return _dt.datetime.fromtimestamp(seconds, _dt.UTC)
    except (OverflowError, OSError, ValueError):
        return Seconds(seconds)


def time_text(moment: _dt.datetime) -> str:
    """A typed time (UTC; a naive one is taken as UTC) as decode shows it, without
    quotes (``0005-04-19T09:46:40``: Python's ``strftime`` writes the year 5 as ``5``)."""
    return v.time_json(calendar.timegm(moment.utctimetuple()))[1:-1].decode()


def _bool(value: int) -> bool | int:
    """False, True, else the value as a signed 32-bit int (as the JSON shows it)."""
    return bool(value) if value in (0, 1) else v.int32(value)


def _char(data: bytes, codec: str) -> str:
    return _decoder(codec)(data)


_UNSIGNED_CODES = {1: "B", 2: "H", 4: "I", 8: "Q"}
_SIGNED_CODES = {1: "b", 2: "h", 4: "i", 8: "q"}
_INT_CODES = frozenset((*_UNSIGNED_CODES.values(), *_SIGNED_CODES.values()))


@dataclass(frozen=True)
class _Spec:
    """How a kind is read (struct code by size), shown and typed."""

    code: Callable[[int], str]
    piece: bytes  # the template piece the generated renderer fills
    json: Callable[..., bytes] | None  # JSON of the unpacked value (None: ``piece % value``)
    typed: Callable[[Any], object]
    c_kind: int
    sized_json: bool = False  # ``json(value, size)``
    c_table: tuple[bytes, ...] | None = None  # the C renderer's table of texts (errno)
    c_reads: bool = False  # the C filter programs read its typed value's number
    #: how the C renderer writes its typed value's JSON (``ehtool.values.typed_json``);
    #: None: the Python rule does
    typed_c_kind: int | None = None


def _bytes_code(n: int) -> str:
    return f"{n}s"


#: kind -> how it is read, shown and typed
KIND_SPECS: dict[str, _Spec] = {
    "unsigned": _Spec(_UNSIGNED_CODES.__getitem__, b"%d", None, int, FX_UNSIGNED,
                      c_reads=True, typed_c_kind=FX_UNSIGNED),
    "signed": _Spec(_SIGNED_CODES.__getitem__, b"%d", None, int, FX_SIGNED, c_reads=True,
                    typed_c_kind=FX_SIGNED),
    "hex": _Spec(_UNSIGNED_CODES.__getitem__, b'"0x%X"', None, Hex, FX_HEX, c_reads=True,
                 typed_c_kind=FX_UNSIGNED),  # (typed: the number)
    "errno": _Spec(_UNSIGNED_CODES.__getitem__, b"%s", v.errno_json, Errno, FX_ERRNO,
                   c_table=v.ERRNO_JSON, c_reads=True, typed_c_kind=FX_SIGNED),
    "time": _Spec(_SIGNED_CODES.__getitem__, b"%s", v.time_json, _time, FX_TIME),
    "bool": _Spec(_UNSIGNED_CODES.__getitem__, b"%s", v.boolean_json, _bool, FX_BOOL,
                  sized_json=True, c_reads=True, typed_c_kind=FX_BOOL),
    "float": _Spec({4: "f", 8: "d"}.__getitem__, b"%s", None, None, FX_FLOAT, c_reads=True),
    "port": _Spec(lambda n: "H", b"%d", None, int, FX_PORT, c_reads=True,
                  typed_c_kind=FX_PORT),
    "ip": _Spec(_bytes_code, b"%s", None, None, FX_IP, typed_c_kind=FX_IP),  # (its text)
    "uuid": _Spec(_bytes_code, b"%s", v.uuid_json, lambda b: uuid.UUID(bytes=bytes(b)), FX_UUID,
                  typed_c_kind=FX_UUID),
    "hexbytes": _Spec(_bytes_code, b"%s", v.hex_bytes, bytes, FX_HEXBYTES,
                      typed_c_kind=FX_HEXBYTES),
    "char8": _Spec(lambda n: "B", b"%s", None, chr, FX_CHAR, typed_c_kind=FX_CHAR_TEXT),
    "char16": _Spec(_bytes_code, b"%s", None, None, FX_CHAR, typed_c_kind=FX_CHAR_TEXT),
    "char32": _Spec(_bytes_code, b"%s", None, None, FX_CHAR, typed_c_kind=FX_CHAR_TEXT),
}

_LATIN1 = tuple(v.latin1_json(bytes((i,))) for i in range(256))


@dataclass(frozen=True)
class Kind:
    """One fixed-size value's rule, resolved for a size and byte order."""

    name: str
    size: int
    little: bool
    #: struct code of one value, without the byte order (``"I"``, ``"16s"``)
    code: str
    #: the template piece the generated renderer fills: ``%d``, ``"0x%X"`` or ``%s``
    piece: bytes
    #: JSON of the unpacked value, or None when ``piece % value`` is the JSON
    json: Callable[[Any], bytes] | None
    #: the Python value of the unpacked value
    typed: Callable[[Any], object]
    #: how the C renderer writes it (``ehtool.speedups.FX_*``)
    c_kind: int
    #: texts the C renderer looks values up in (errno names, float32 powers of two), or None
    c_table: tuple[bytes, ...] | None = None
    #: the C filter programs read its typed value's number (an errno's, a hex value's:
    #: compared with text they leave it to Python), not a float32's, whose value is
    #: :func:`_float32`'s
    c_reads: bool = False
    #: how the C renderer writes its typed value's JSON (``ehtool.values.typed_json``:
    #: ``FX_*``), or None when :attr:`typed_formatter` does
    typed_c_kind: int | None = None

    def text(self, value: Any) -> bytes:
        """JSON of a value the rules apply to (see :meth:`value`)."""
        return self.piece % value if self.json is None else self.json(value)

    @property
    def swapped(self) -> bool:
        """A port read in little-endian order: the unpacked value is byte-swapped."""
        return self.name == "port" and self.little

    def value(self, unpacked: Any) -> Any:
        """The value the rules apply to: the unpacked one, ports in network order."""
        return ((unpacked & 255) << 8 | unpacked >> 8) if self.swapped else unpacked

    @property
    def struct(self) -> struct.Struct:
        return _struct(("<" if self.little else ">") + self.code)

    def from_bytes(self, data: bytes) -> bytes:
        """JSON of the value from its ``size`` bytes."""
        return self.text(self.value(self.struct.unpack(data)[0]))

    @property
    def formatter(self) -> Callable[[bytes], bytes]:
        """:meth:`from_bytes` as one callable with the rule resolved (what the C renderer
        calls for the values it leaves to Python)."""
        return _formatter(self)

    def python(self, data: bytes) -> object:
        """The Python value from its ``size`` bytes."""
        return self.typed(self.value(self.struct.unpack(data)[0]))

    @property
    def typed_formatter(self) -> Callable[[bytes], bytes]:
        """The JSON of :meth:`python`'s value by ``ehtool.values.typed_json`` (what the C
        renderer of typed JSON calls for the values it leaves to Python)."""
        return _typed_formatter(self)

    @cached_property
    def reader(self) -> Callable[[bytes, int], object]:
        """``reader(data, pos)``: :meth:`python` of ``data[pos:pos + size]`` without the
        slice (the caller knows the value is there; a short buffer raises struct.error)."""
        unpack = self.struct.unpack_from
        typed = self.typed
        if self.swapped:
            value = self.value
            return lambda data, pos: typed(value(unpack(data, pos)[0]))
        if typed is int and self.code in _INT_CODES:  # int() of an int: itself
            return lambda data, pos: unpack(data, pos)[0]
        return lambda data, pos: typed(unpack(data, pos)[0])


@cache
def _struct(code: str) -> struct.Struct:
    return struct.Struct(code)


@cache
def _formatter(kind: Kind) -> Callable[[bytes], bytes]:
    if kind.swapped:
        return kind.from_bytes
    unpack = kind.struct.unpack
    json = kind.json
    if json is None:
        piece = kind.piece
        return lambda data: piece % unpack(data)
    return lambda data: json(unpack(data)[0])


@cache
def _typed_formatter(kind: Kind) -> Callable[[bytes], bytes]:
    python = kind.python
    return lambda data: json_bytes(python(data))


def _name(size: int, fmt: int) -> str:
    """The kind of a ``size``-byte value of format ``fmt`` (the reference rules)."""
    if size == 16:
        return {F.UUID: "uuid", F.IP_ADDRESS: "ip", F.IP_ADDRESS_OBSOLETE: "ip"}.get(
            fmt, "hexbytes")
    if fmt == F.HEX_BYTES:
        return "hexbytes"
    if fmt == F.STRING8 and size == 1:
        return "char8"
    if fmt == F.STRING_UTF and size in (2, 4):
        return f"char{size * 8}"
    kind, sizes = FORMAT_KINDS.get(fmt, ("unsigned", ()))
    return kind if size in sizes else "unsigned"


@cache
def fixed_kind(size: int, fmt: int, little: bool) -> Kind:
    """The rule of a ``size``-byte value of format ``fmt`` in the given byte order."""
    name = _name(size, fmt)
    spec = KIND_SPECS[name]
    json, typed = spec.json, spec.typed
    if spec.sized_json:
        json = partial(json, size=size)
    if name in _BY_SIZE:
        json, typed = _BY_SIZE[name](size, not little)
    float32 = name == "float" and size == 4
    table = v.float32_powers_json() if float32 else spec.c_table
    return Kind(name, size, little, spec.code(size), spec.piece, json, typed, spec.c_kind,
                table, spec.c_reads and not float32, spec.typed_c_kind)


def _chars(size: int, big: bool) -> tuple[Callable, Callable]:
    if size == 1:
        return _LATIN1.__getitem__, chr
    codec = ("utf-16" if size == 2 else "utf-32") + ("-be" if big else "-le")
    return (partial(v.utf16_json if size == 2 else v.utf32_json, big_endian=big),
            partial(_char, codec=codec))


#: kinds whose JSON and Python value depend on the size (and byte order)
_BY_SIZE: dict[str, Callable[[int, bool], tuple[Callable, Callable]]] = {
    "float": lambda n, big: (v.float32_json, _float32) if n == 4 else (v.float64_json, float),
    "ip": lambda n, big: ((v.ipv4_json, partial(_ip, ipaddress.IPv4Address)) if n == 4
                          else (v.ipv6_json, partial(_ip, IPv6Address))),
    "char8": _chars, "char16": _chars, "char32": _chars,
}


def _float32(value: float) -> float:
    """A float32 as the number decode shows: the double of its shortest text (3.14, not
    its exact value 3.140000104904175, which filters, query and Parquet showed and
    ``f == 3.14`` did not match); NaN and infinities as they are."""
    return float(v.float32_json(value)) if math.isfinite(value) else value


def _ip(cls: type, data: bytes) -> object:
    return cls(bytes(data))


class IPv6Address(ipaddress.IPv6Address):
    """An IPv6 address whose text is decode's, glibc's ``inet_ntop`` (``::ffff:1.2.3.4``,
    where Python 3.11 writes ``::ffff:102:304``): every output and filter shows it so."""

    __slots__ = ()

    def __str__(self) -> str:
        return v.ipv6_json(self.packed)[1:-1].decode()


def integer_kind(size: int, signed: bool, hex_: bool, little: bool) -> Kind:
    """The rule of a plain integer (tracefs fields): decimal, signed decimal or hex."""
    fmt = F.HEX_INT if hex_ else F.SIGNED_INT if signed else F.UNSIGNED_INT
    return fixed_kind(size, fmt, little)


# -- strings and binary data ---------------------------------------------------------

_BOM_FORMATS = (F.STRING_UTF_BOM, F.STRING_XML, F.STRING_JSON)


@dataclass(frozen=True)
class StringKind:
    """The rule of a string/binary value (its bytes, without count or terminator)."""

    name: str  # "utf8", "latin1", "utf16", "utf32", "bom", "hexbytes", "sized"
    json: Callable[[bytes], bytes]
    typed: Callable[[bytes], object]
    #: what the C renderer may write itself (``ehtool.speedups.STR_*``)
    c_flags: int

    @property
    def typed_c_flags(self) -> int:
        """What the C renderer of typed JSON writes itself: what it writes of decode's
        JSON, a lone surrogate as the text ``\\udxxx`` (``ehtool.values.typed_json``)."""
        return self.c_flags | STR_SURROGATE_TEXT if self.c_flags & STR_UTF else self.c_flags

    @property
    def typed_formatter(self) -> Callable[[bytes], bytes]:
        """The JSON of the typed value by ``ehtool.values.typed_json``."""
        typed = self.typed
        return lambda data: json_bytes(typed(data))


@cache
def _decoder(codec: str) -> Callable[[bytes], str]:
    """bytes -> str as the JSON shows them: lone UTF-16 surrogates kept (a trailing odd
    byte ignored), invalid UTF-8 bytes as their Latin-1 characters (``ED A0..BF xx`` as
    its lone surrogate), UTF-32 code points above U+10FFFF as U+FFFD."""
    if codec.startswith("utf-32"):
        order = ">" if codec.endswith("be") else "<"

        def utf32(b: bytes) -> str:
            points = struct.unpack(f"{order}{len(b) // 4}I", bytes(b)[:len(b) // 4 * 4])
            return "".join(chr(c) if c <= 0x10FFFF else "\ufffd" for c in points)
        return utf32
    if codec.startswith("utf-16"):
        return lambda b: bytes(b)[:len(b) & ~1].decode(codec, "surrogatepass")
    return lambda b: bytes(b).decode(codec, UTF8_AS_SHOWN)


def _bom_text(data: bytes, unit: int, big: bool) -> str:
    """A BOM format's text: decoded per its BOM (dropped), else per the unit size, each
    encoding as :func:`_decoder` decodes it."""
    for bom, codec in ((b"\xef\xbb\xbf", "utf-8"), (b"\xff\xfe\0\0", "utf-32-le"),
                       (b"\0\0\xfe\xff", "utf-32-be"), (b"\xff\xfe", "utf-16-le"),
                       (b"\xfe\xff", "utf-16-be")):
        if data.startswith(bom):
            return _decoder(codec)(data[len(bom):])
    codec = {1: "utf-8", 2: "utf-16", 4: "utf-32"}[unit]
    if unit > 1:
        codec += "-be" if big else "-le"
    return _decoder(codec)(data)


@cache
def string_kind(encoding: int, fmt: int, little: bool) -> StringKind:
    """The rule of a value of a string/binary ``encoding`` with format ``fmt``."""
    unit = UNIT_SIZES[encoding]
    big = not little
    counted8 = encoding in (E.STRING_LENGTH16_CHAR8, E.BINARY_LENGTH16_CHAR8)
    if counted8 and fmt in FORMAT_KINDS:
        # counted char8/binary data carrying a number: shown as one when its size fits
        binary = encoding == E.BINARY_LENGTH16_CHAR8
        default = string_kind(encoding, F.HEX_BYTES if binary else F.STRING_UTF, little)
        by_size = {n: fixed_kind(n, fmt, little) for n in FORMAT_KINDS[fmt][1]}

        def sized_json(b: bytes) -> bytes:
            if not b:
                return b"null"
            kind = by_size.get(len(b))
            return kind.from_bytes(b) if kind is not None else default.json(b)

        def sized_typed(b: bytes) -> object:
            if not b:
                return None
            kind = by_size.get(len(b))
            return kind.python(b) if kind is not None else default.typed(b)
        return StringKind("sized", sized_json, sized_typed, 0)
    if fmt == F.DEFAULT:
        fmt = F.HEX_BYTES if encoding == E.BINARY_LENGTH16_CHAR8 else F.STRING_UTF
    hexbytes = StringKind("hexbytes", v.hex_bytes, bytes, STR_HEX)
    if fmt == F.HEX_BYTES:
        return hexbytes
    if fmt == F.STRING8 and unit == 1:
        return StringKind("latin1", v.latin1_json, _decoder("latin-1"), STR_ASCII)
    if fmt in _BOM_FORMATS:
        return StringKind("bom", partial(v.bom_string_json, unit_size=unit, big_endian=big),
                          partial(_bom_text, unit=unit, big=big),
                          STR_ASCII | STR_BOM | STR_UTF)
    if fmt != F.STRING_UTF and encoding == E.BINARY_LENGTH16_CHAR8:
        return hexbytes
    if unit == 1:
        return StringKind("utf8", v.utf8_json, _decoder("utf-8"), STR_ASCII | STR_UTF)
    codec = ("utf-16" if unit == 2 else "utf-32") + ("-be" if big else "-le")
    json = partial(v.utf16_json if unit == 2 else v.utf32_json, big_endian=big)
    return StringKind(f"utf{unit * 8}", json, _decoder(codec), STR_ASCII | STR_UTF)
