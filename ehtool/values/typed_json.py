"""A typed value as JSON text: the rule of the ``fields`` column (Parquet, ``query``).

Numbers as numbers (a hex value or an errno too: ``Hex`` and ``Errno`` are ints),
strings, UUIDs, IP addresses and times as text (a time past the year 9999 is its
number of seconds), bytes as hex pairs, structs as objects (of duplicate names the
first), NaN and infinities as the strings decode writes, lone surrogates kept as
``\\udxxx`` text. The Python back end (:func:`json_value` of typed values) and the C
renderer of whole events' fields (``ehtool.eventheader.cplan.native_typed_json``) both
follow it.
"""

from __future__ import annotations

import math
from typing import Any

from ehtool.values.strings import escape_surrogates
from ehtool.values.text import float64_json


def _default(value: Any) -> Any:
    if isinstance(value, tuple):  # Fields: a struct
        return value.to_dict() if hasattr(value, "to_dict") else list(value)
    if isinstance(value, bytes):
        return value.hex(" ")
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return str(value)  # uuid.UUID, ipaddress


def json_bytes(value: Any) -> bytes:
    """A typed value as JSON text (the rule above), UTF-8."""
    if _dumps is None:
        _load()
    try:
        text = _dumps(value, default=_default, option=_option)
    except TypeError:  # orjson.JSONEncodeError: a lone surrogate
        text = b"null"
    if b"null" in text:  # orjson writes NaN and infinities as null (rare: check then)
        text = _dumps(storable(value, floats=True), default=_default, option=_option)
    return text


#: orjson.dumps and its options, imported at the first use (start-up stays short)
_dumps: Any = None
_option = 0


def _load() -> None:
    global _dumps, _option
    import orjson

    _dumps, _option = orjson.dumps, orjson.OPT_NON_STR_KEYS


def json_value(value: Any) -> str:
    """:func:`json_bytes` as a str."""
    return json_bytes(value).decode()


def storable(value: Any, floats: bool = False) -> Any:
    """``value`` (a typed value, or :func:`ehtool.analysis.by_event.arrow_value`'s) with
    what Arrow and JSON text cannot hold as decode shows it: lone surrogates in
    strings as ``\\udxxx`` text and, with ``floats``, NaN and infinities as decode's
    JSON strings (``"nan"``, ``"-inf"``...) rather than null."""
    if isinstance(value, str):
        return escape_surrogates(value)
    if isinstance(value, float):
        if floats and not math.isfinite(value):
            return float64_json(value).decode().strip('"')  # "nan", "-nan", "inf", "-inf"
        return value
    if isinstance(value, dict):  # (keys that become one: the first)
        out: dict = {}
        for k, v in value.items():
            out.setdefault(storable(k), storable(v, floats))
        return out
    if hasattr(value, "to_dict"):  # Fields: a struct
        return storable(value.to_dict(), floats)
    if isinstance(value, (list, tuple)):
        return [storable(v, floats) for v in value]
    return value
