"""EventHeader constants: header flags, extension kinds, field encodings and formats,
levels and opcodes (values from ``eventheader.h``)."""

from __future__ import annotations

from enum import IntEnum, IntFlag


class HeaderFlags(IntFlag):
    """``eventheader.flags``."""

    NONE = 0
    POINTER64 = 0x01
    LITTLE_ENDIAN = 0x02
    EXTENSION = 0x04


#: every flag bit a decoder accepts
HEADER_FLAGS_KNOWN = 0x07
#: ``eventheader.version`` as written by the reference producers
EVENTHEADER_VERSION = 0


class ExtensionKind(IntEnum):
    """``eventheader_extension.kind`` (low 15 bits; bit 15 chains another extension)."""

    INVALID = 0
    METADATA = 1
    ACTIVITY_ID = 2


EXTENSION_KIND_VALUE_MASK = 0x7FFF
EXTENSION_KIND_CHAIN_FLAG = 0x8000


class FieldEncoding(IntEnum):
    """Low 5 bits of a field's encoding byte."""

    INVALID = 0
    STRUCT = 1
    VALUE8 = 2
    VALUE16 = 3
    VALUE32 = 4
    VALUE64 = 5
    VALUE128 = 6
    ZSTRING_CHAR8 = 7
    ZSTRING_CHAR16 = 8
    ZSTRING_CHAR32 = 9
    STRING_LENGTH16_CHAR8 = 10
    STRING_LENGTH16_CHAR16 = 11
    STRING_LENGTH16_CHAR32 = 12
    BINARY_LENGTH16_CHAR8 = 13
    MAX = 14


ENCODING_VALUE_MASK = 0x1F
ENCODING_CARRAY_FLAG = 0x20
ENCODING_VARRAY_FLAG = 0x40
ENCODING_CHAIN_FLAG = 0x80


class FieldFormat(IntEnum):
    """Low 7 bits of a field's format byte (for structs: the member count)."""

    DEFAULT = 0
    UNSIGNED_INT = 1
    SIGNED_INT = 2
    HEX_INT = 3
    ERRNO = 4
    PID = 5
    TIME = 6
    BOOLEAN = 7
    FLOAT = 8
    HEX_BYTES = 9
    STRING8 = 10
    STRING_UTF = 11
    STRING_UTF_BOM = 12
    STRING_XML = 13
    STRING_JSON = 14
    UUID = 15
    PORT = 16
    IP_ADDRESS = 17
    IP_ADDRESS_OBSOLETE = 18


FORMAT_VALUE_MASK = 0x7F
FORMAT_CHAIN_FLAG = 0x80


class Level(IntEnum):
    """Event severity; 6..255 are allowed but have no name."""

    INVALID = 0
    CRITICAL_ERROR = 1
    ERROR = 2
    WARNING = 3
    INFORMATION = 4
    VERBOSE = 5


class Opcode(IntEnum):
    """``eventheader.opcode``; 241..255 are reserved."""

    INFO = 0
    ACTIVITY_START = 1
    ACTIVITY_STOP = 2
    COLLECTION_START = 3
    COLLECTION_STOP = 4
    EXTENSION = 5
    REPLY = 6
    RESUME = 7
    SUSPEND = 8
    SEND = 9
    RECEIVE = 240


#: struct nesting limit shared by the reference decoders
STRUCT_NESTING_LIMIT = 8
#: decoders fail an event with more top-level fields than this (the reference enumerator)
TOP_LEVEL_FIELD_LIMIT = 255
