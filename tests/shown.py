"""Whether a typed value (``ehtool.open``, the value rulebook) is the value the JSON shows."""

from __future__ import annotations

import datetime as dt
import ipaddress
import json
import math
import struct
import uuid

from ehtool.eventheader.decoder import Fields
from ehtool.values.shown import ShownInt
from ehtool.values.times import format_utc_seconds


def same(typed: object, shown: object) -> bool:
    """Whether a typed value is the value the JSON text shows."""
    if isinstance(typed, Fields):
        return isinstance(shown, list) and len(typed) == len(shown) and all(
            n == m and same(a, b) for (n, a), (m, b) in zip(typed, shown, strict=True))
    if isinstance(typed, list):
        return isinstance(shown, list) and len(typed) == len(shown) and all(
            same(a, b) for a, b in zip(typed, shown, strict=True))
    if isinstance(typed, bool):
        return shown is typed
    if isinstance(typed, ShownInt):  # "ENOENT(2)", "ERRNO(-5)", "0x1F"
        return str(typed) == shown
    if isinstance(typed, int):
        if isinstance(shown, str):  # hex ("0x1F"), errno ("ENOENT(2)"), bool beyond 0/1
            if shown.startswith("0x"):
                return int(shown, 16) == typed
            # a bool beyond 0/1; a time beyond datetime's years stays int seconds
            return shown.endswith(f"({typed})") or shown == format_utc_seconds(typed)
        return shown == typed
    if isinstance(typed, float):
        if math.isnan(typed):
            return shown in ("nan", "-nan") or shown != shown
        if isinstance(shown, str):  # inf
            return str(typed) in shown or shown.replace("inf", "inf") == repr(typed)
        # float32 values print as the shortest text that reads back to the same float32
        return math.isclose(typed, shown, rel_tol=1e-6) or _f32(typed) == _f32(shown)
    if isinstance(typed, dt.datetime):
        return shown == typed.replace(tzinfo=None).isoformat(timespec="seconds")
    if isinstance(typed, uuid.UUID | ipaddress.IPv4Address | ipaddress.IPv6Address):
        return str(typed) == shown
    if isinstance(typed, bytes):
        return shown == " ".join(f"{b:02x}" for b in typed)
    if isinstance(typed, str):
        return shown == typed or "\ufffd" in shown or "\\u" in json.dumps(shown)
    return typed is None and shown is None


def _f32(value: float) -> bytes | None:
    try:
        return struct.pack("<f", value)
    except OverflowError:
        return None
