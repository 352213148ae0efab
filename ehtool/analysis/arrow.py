"""Decoded events as Arrow record batches: one row per event, streamed.

=================  ========================  =========================================
column             type                      value
=================  ========================  =========================================
file               string                    the input it came from
time               timestamp[ns, UTC]        when the file has clock data, else null
session_time       int64                     ns of the session clock (perf's time)
cpu, pid, tid      uint32                    the sample's (as decode shows them)
comm               string                    thread name (COMM records), or null
provider, event    string                    ``provider:event`` split (``system:name``
                                             for other tracepoints)
level, opcode      uint8                     EventHeader header (null for others)
keyword            uint64                    from the tracepoint name
id                 uint16                    EventHeader header
version            uint8                     EventHeader header
activity,          string                    UUIDs, or null
related_activity
fields             string                    JSON object of the fields (typed values:
                                             numbers, strings, UUIDs and addresses as
                                             text, bytes as hex, structs as objects,
                                             NaN and infinities as decode's strings;
                                             of duplicate names the first)
=================  ========================  =========================================
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from ehtool.errors import InputError, UsageError, input_name
from ehtool.values.strings import escape_surrogates
from ehtool.values.text import float64_json

#: rows per record batch (memory stays bounded whatever the input size: a batch is
#: built from Python values, about 2.4 KB a row for the reference recording's events)
BATCH_ROWS = 4096
_EXTRA = "pip install 'ehtool[analysis]'"


def require(module: str) -> Any:
    """Import an optional analysis dependency, or UsageError naming the extra."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise UsageError(f"this needs {module.split('.')[0]}: {_EXTRA}") from None


def schema(columns: list[str] | None = None) -> Any:
    """The Arrow schema of the rows: every column, or ``columns`` of them in that order."""
    pa = require("pyarrow")
    full = pa.schema([
        ("file", pa.string()), ("time", pa.timestamp("ns", tz="UTC")),
        ("session_time", pa.int64()), ("cpu", pa.uint32()), ("pid", pa.uint32()),
        ("tid", pa.uint32()), ("comm", pa.string()), ("provider", pa.string()),
        ("event", pa.string()), ("level", pa.uint8()), ("keyword", pa.uint64()),
        ("opcode", pa.uint8()), ("id", pa.uint16()), ("version", pa.uint8()),
        ("activity", pa.string()), ("related_activity", pa.string()),
        ("fields", pa.string()),
    ])
    return pa.schema([full.field(n) for n in columns]) if columns else full


def _json_default(value: Any) -> Any:
    if isinstance(value, tuple):  # Fields: a struct
        return value.to_dict() if hasattr(value, "to_dict") else list(value)
    if isinstance(value, bytes):
        return value.hex(" ")
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return str(value)  # uuid.UUID, ipaddress


def fields_json(fields: Any) -> str:
    return json_value(fields.to_dict())


def json_value(value: Any) -> str:
    """A typed value as JSON text (the ``fields`` column's rules; NaN and infinities as
    the strings decode writes, lone surrogates as :func:`storable` keeps them)."""
    import orjson

    option = orjson.OPT_NON_STR_KEYS
    try:
        text = orjson.dumps(value, default=_json_default, option=option)
    except TypeError:  # orjson.JSONEncodeError: a lone surrogate
        text = b"null"
    if b"null" in text:  # orjson writes NaN and infinities as null (rare: check then)
        text = orjson.dumps(storable(value, floats=True), default=_json_default,
                            option=option)
    return text.decode()


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
    if isinstance(value, dict):
        return {storable(k): storable(v, floats) for k, v in value.items()}
    if hasattr(value, "to_dict"):  # Fields: a struct
        return storable(value.to_dict(), floats)
    if isinstance(value, (list, tuple)):
        return [storable(v, floats) for v in value]
    return value


def record_batches(paths: Iterable[str], columns: list[str] | None = None,
                   part: tuple[int, int] | None = None,
                   on_error: Callable[[InputError], None] | None = None,
                   on_fatal: Callable[[InputError], None] | None = None) -> Iterator[Any]:
    """Record batches of the events of ``paths`` (in order; each file in time order);
    ``part=(k, n)``: of each file only its k-th of n parts (see :func:`ehtool.open`).
    A file's problems raise at its end (its complete events were yielded), unless
    ``on_error`` takes the recoverable ones, and ``on_fatal`` the one that ends a file
    (called before that file's last rows are yielded; the next file follows)."""
    pa = require("pyarrow")
    from ehtool.events import open as open_events

    out_schema = schema(columns)
    names = out_schema.names
    # without the fields column no field is decoded (the events are still checked whole)
    only = None if "fields" in names else ()
    getters = [COLUMNS[n] for n in names]
    rows: list[list] = [[] for _ in names]
    count = 0
    for path in paths:
        try:
            with open_events(path, fields=only, part=part, on_error=on_error) as events:
                for ev in events:
                    for column, get in zip(rows, getters, strict=True):
                        column.append(get(path, ev))
                    count += 1
                    if count == BATCH_ROWS:
                        yield _batch(pa, rows, out_schema)
                        rows = [[] for _ in names]
                        count = 0
        except InputError as exc:
            if on_fatal is not None:
                on_fatal(exc)
                continue
            if count:  # the complete events before the problem, then the problem
                yield _batch(pa, rows, out_schema)
            raise
    if count:
        yield _batch(pa, rows, out_schema)


def _batch(pa: Any, columns: list[list], schema: Any) -> Any:
    return pa.RecordBatch.from_arrays(
        [_array(pa, column, f.type) for column, f in zip(columns, schema, strict=True)],
        schema=schema)


def _array(pa: Any, values: list, type_: Any) -> Any:
    try:
        return pa.array(values, type=type_)
    except UnicodeEncodeError:  # a lone surrogate (a name, a path) in a string column
        return pa.array([storable(v) for v in values], type=type_)


#: column name -> its value for (input path, typed event)
COLUMNS: dict[str, Any] = {
    "file": lambda path, ev: input_name(path),
    "time": lambda path, ev: ev.utc_ns,
    "session_time": lambda path, ev: ev.time,
    "cpu": lambda path, ev: ev.meta.get("cpu"),
    "pid": lambda path, ev: ev.meta.get("pid"),
    "tid": lambda path, ev: ev.meta.get("tid"),
    "comm": lambda path, ev: ev.meta.get("comm"),
    "provider": lambda path, ev: ev.provider,
    "event": lambda path, ev: ev.event,
    "level": lambda path, ev: ev.meta.get("level"),
    "keyword": lambda path, ev: ev.meta.get("keyword"),
    "opcode": lambda path, ev: ev.meta.get("opcode"),
    "id": lambda path, ev: ev.meta.get("id"),
    "version": lambda path, ev: ev.meta.get("version"),
    "activity": lambda path, ev: _text(ev.meta.get("activity")),
    "related_activity": lambda path, ev: _text(ev.meta.get("related_activity")),
    "fields": lambda path, ev: fields_json(ev.fields),
}


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def columns_for(sql: str) -> list[str] | None:
    """The columns an SQL text may read from ``events`` (None: all of them, for ``*``),
    so that a query decodes no more than it uses: without ``fields`` no field is
    decoded. Words are matched anywhere (a string literal that names a column only
    costs that column); ``count(*)`` needs no column, one is kept for the row count."""
    import re

    if re.search(r"(^|[\s,.])\*(?!\s*\))", sql):
        return None
    words = {w.lower() for w in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", sql)}
    names = [n for n in schema().names if n in words]
    return names or ["cpu"]
