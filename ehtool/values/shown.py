"""Integers that decode shows as text: an errno (``ENOENT(2)``), a hex value
(``0x1F``) and a time past the years a ``datetime`` holds (``33658-09-27T01:46:40``).
Each is an ``int`` whose ``str`` is that text, so that every typed output shows it as
decode does, and a filter compares a string with that text (``err == "ENOENT(2)"``,
``ptr ~ "0xFFFF*"``) and a number with the number."""

from __future__ import annotations

from ehtool.values.text import errno_json, int32, time_json


class ShownInt(int):
    """An int that decode shows as text, its ``str``."""

    __slots__ = ()


class Errno(ShownInt):
    """An errno value, a signed 32-bit int shown ``ENOENT(2)``, ``ERRNO(-5)``."""

    __slots__ = ()

    def __new__(cls, value: int) -> Errno:
        return super().__new__(cls, int32(value))

    def __str__(self) -> str:
        return errno_json(self)[1:-1].decode()

    def __repr__(self) -> str:
        return f"Errno({int(self)})"


class Hex(ShownInt):
    """An unsigned value shown in hex, ``0x1F`` (a hex_int field, a tracefs pointer or
    other field its format says to show so)."""

    __slots__ = ()

    def __str__(self) -> str:
        return f"0x{int(self):X}"

    def __repr__(self) -> str:
        return f"Hex(0x{int(self):X})"


class Seconds(ShownInt):
    """A time field's seconds since 1970 past the years a ``datetime`` holds (1-9999),
    shown as decode shows it: ``33658-09-27T01:46:40``, or ``TIME(n)`` past glibc's."""

    __slots__ = ()

    def __str__(self) -> str:
        return time_json(self)[1:-1].decode()

    def __repr__(self) -> str:
        return f"Seconds({int(self)})"
