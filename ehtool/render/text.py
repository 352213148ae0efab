"""``ehtool decode --format text``: one line per event for people and grep, in the spirit of
``perf script``::

    perf 30907/30907 [000] 2026-11-22T11:10:03.057260000Z sched:sched_wakeup: \
        comm=migration/0 pid=18 prio=0 target_cpu=0       (one line)

comm pid/tid [cpu] time (UTC with clock data, else seconds of the session clock; or as
``--time`` says), the
event's name, then ``field=value`` pairs (strings, and names, as they are when they have
no space, line break, quote or lone surrogate, else JSON-quoted as the JSON output writes
them: ``"\\ud800jkl"``;
structs ``{a=1 b=2}``; arrays ``[1,2]``); EventHeader events add
``level=`` and ``keyword=`` (and ``opcode=``, ``activity=`` when set) after the name.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from ehtool.eventheader.kinds import time_text
from ehtool.render.times import TimeFormat
from ehtool.values.strings import str_json
from ehtool.values.times import format_utc_seconds

#: what makes a string quoted: a space, a control character, a quote, '=', or a lone
#: surrogate (not UTF-8)
_QUOTED = re.compile(r"[\s\"'=\x00-\x1f\x7f\ud800-\udfff]")


def _value(value: Any) -> str:
    kind = type(value)
    if kind is int:  # (the usual values first)
        return str(value)
    if kind is str:
        return _text(value)
    if isinstance(value, tuple):  # Fields: a struct
        return "{" + " ".join(f"{_name(n)}={_value(v)}" for n, v in value) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_value(v) for v in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, bytes):
        return value.hex() or '""'
    if hasattr(value, "isoformat"):
        return time_text(value) + "Z"
    text = str(value)
    if text == "" or _QUOTED.search(text):
        return str_json(text).decode("utf-8")
    return text


def _text(name: str) -> str:
    """A name (of an event, of a field) as :func:`_value` shows a string: JSON-quoted
    when it holds a space, a line break, a quote, '=' or a lone surrogate (one event,
    one line, valid UTF-8)."""
    return name if name and not _QUOTED.search(name) else str_json(name).decode()


def _name(name: str) -> str:
    """:func:`_text` of a name (an event's, a field's, a thread's), each worked out once:
    a file's names are few."""
    text = _NAMES.get(name)
    if text is None:
        if len(_NAMES) >= 4096:
            _NAMES.clear()
        text = _NAMES[name] = _text(name)
    return text


_NAMES: dict[str, str] = {}


def _times() -> Callable[[Any], str]:
    """perf and iso times: UTC when the file has clock data, else session seconds (the
    date and time of the second before formatted once for the events in it)."""
    last = [None, ""]  # (second, its text)

    def when(ev: Any) -> str:
        if ev.utc_ns is not None:
            sec, ns = divmod(ev.utc_ns, 1_000_000_000)
            if sec != last[0]:
                last[:] = sec, format_utc_seconds(sec)
            return f"{last[1]}.{ns:09d}Z"
        if ev.time is None:
            return "-"
        sec, ns = divmod(ev.time, 1_000_000_000)
        return f"{sec}.{ns:09d}"
    return when


_time = _times()


def time_texts(mode: str, clock: Any) -> Callable[[Any], str]:
    """How a line shows its event's time for ``--time MODE`` (``ehtool.render.times``):
    perf and iso as above, ns as integer nanoseconds, rel and delta as seconds since the
    first or the previous event shown. ``clock``: the file's SessionClock."""
    if mode in ("perf", "iso"):
        return _times()
    fmt = TimeFormat(mode, clock)
    return lambda ev: "-" if ev.time is None else fmt.json(ev.time).decode()


def event_line(ev: Any, when: Callable[[Any], str] = _time) -> str:
    """One typed event (``ehtool.events.Event``) as a line (no newline); ``when`` shows
    its time (see :func:`time_texts`)."""
    meta = ev.meta
    comm, pid, cpu = meta.get("comm"), meta.get("pid"), meta.get("cpu")
    head = _name(comm) if comm else "-"  # (quoted: one event, one line)
    if pid is not None:
        head += f" {pid}/{meta.get('tid')}"
    if cpu is not None:
        head += f" [{cpu:03d}]"
    parts = [f"{head} {when(ev)} {_name(ev.name)}:"]
    if ev.eventheader:
        parts.append(f"level={meta['level']} keyword={meta['keyword']:#x}")
        if meta.get("opcode"):
            parts.append(f"opcode={meta['opcode']}")
        if meta.get("activity"):
            parts.append(f"activity={meta['activity']}")
    parts.extend(f"{_name(name)}={_value(value)}" for name, value in ev.fields)
    if ev.error:
        parts.append(f"(not decoded as EventHeader: {ev.error})")
    return " ".join(parts)
