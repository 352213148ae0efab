"""JSON spacing shared by every writer.

perf-decode writes with its *Space* flag: ``{ "n": "x", "a": 1, "meta": { ... } }``,
arrays ``[ 1, 2 ]`` and ``[ ]`` when empty. The compact style is what its unit
tests wrote: ``{"n":"x","a":1,"meta":{...}}``. Renderers build members as
``style.sep + key + style.colon + value`` and objects as
``b"{" + style.first + first_member + members + style.close_obj``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ehtool.values.text import utf8_json


@dataclass(frozen=True, slots=True)
class JsonStyle:
    """Separators for one output style (``space=True`` is perf-decode's)."""

    space: bool = True
    #: append ``;tag=0xN`` to EventHeader field names whose tag is not zero
    field_tags: bool = True
    #: tracefs ``pid_t`` fields as signed decimals (perf-decode: ``"0x1F4"``)
    decimal_pids: bool = False
    first: bytes = field(init=False)
    sep: bytes = field(init=False)
    colon: bytes = field(init=False)
    close_obj: bytes = field(init=False)
    close_arr: bytes = field(init=False)
    empty_arr: bytes = field(init=False)
    empty_obj: bytes = field(init=False)

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "first", b" " if self.space else b"")
        set_(self, "sep", b", " if self.space else b",")
        set_(self, "colon", b": " if self.space else b":")
        set_(self, "close_obj", b" }" if self.space else b"}")
        set_(self, "close_arr", b" ]" if self.space else b"]")
        set_(self, "empty_arr", b"[ ]" if self.space else b"[]")
        set_(self, "empty_obj", b"{ }" if self.space else b"{}")

    def member_key(self, name: bytes, tag: int, first: bool) -> bytes:
        """``, "name;tag=0xN": `` of an EventHeader field (``first``: the object's first)."""
        if tag and self.field_tags:
            name += b";tag=0x%X" % tag
        return (self.first if first else self.sep) + utf8_json(name) + self.colon

    def nest(self, key: bytes, members: bytes) -> bytes:
        """``, key: { ... }`` of ``members`` that each start with ``sep`` (``key``: JSON)."""
        return grouped(self.group(key), members)

    def group(self, key: bytes) -> tuple[bytes, bytes, bytes, bytes]:
        """How :meth:`nest` frames members under ``key``: (its opening, the separator
        that leads each member and that the first one loses, its closing, the whole
        member when there are none); the C loop frames them the same way."""
        return (self.sep + key + self.colon + b"{" + self.first, self.sep, self.close_obj,
                self.sep + key + self.colon + self.empty_obj)

    def obj(self, members: list[bytes]) -> bytes:
        """An object from ``key + colon + value`` members."""
        if not members:
            return self.empty_obj
        return b"{" + self.first + self.sep.join(members) + self.close_obj

    def arr(self, items: list[bytes]) -> bytes:
        """An array from encoded items."""
        if not items:
            return self.empty_arr
        return b"[" + self.first + self.sep.join(items) + self.close_arr


def grouped(group: tuple[bytes, bytes, bytes, bytes], members: bytes) -> bytes:
    """``members`` (each led by the group's separator) framed as ``group`` says
    (:meth:`JsonStyle.group`)."""
    opening, sep, closing, empty = group
    if not members:
        return empty
    return opening + members[len(sep):] + closing


SPACED = JsonStyle()
COMPACT = JsonStyle(space=False, field_tags=False)
