"""One Parquet dataset per event name, with the fields as real typed columns.

``DIR/<event name>/part-N.parquet`` (the name ``provider:event`` or ``system:name``,
characters outside ``[A-Za-z0-9_.:-]`` as ``%XX``). Each file has the columns of
:func:`ehtool.analysis.arrow.schema` except ``fields``, then one column per top-level
field, typed from the values: integers int64 (uint64 above its range), floats double,
strings, bytes binary, booleans, UUIDs and IP addresses as strings, times as
timestamps, arrays as lists, structs as structs. A field whose name is taken (by a
column before it, or an earlier field of the same name) is ``<name>_2``, ``_3``...
Rows of one shape (each field's name and type: another version of an event, or a field
whose value has another type, is another shape) go into parts of their own: a row
group holds one shape, and a part takes row groups of its own types only (nulls
aside); a column whose nested values still mix types within a row group is text. Read
all parts of an event with ``read_parquet('DIR/<name>/*.parquet', union_by_name = true)`` (DuckDB).

Memory stays bounded: rows are kept per event until a row group is full
(:data:`GROUP_ROWS`) or :data:`PENDING_ROWS` rows wait in all, and at most
:data:`OPEN_WRITERS` files are open (a writer closed early ends its part).
"""

from __future__ import annotations

import contextlib
import datetime
import ipaddress
import os
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any
from urllib.parse import quote

from ehtool.analysis.arrow import column_values, require, schema, storable, to_array
from ehtool.errors import InputError, combined, input_name
from ehtool.eventheader.decoder import Fields
from ehtool.events import event_row
from ehtool.values.strings import path_text
from ehtool.values.typed_json import json_value

GROUP_ROWS = 16384
PENDING_ROWS = 65536
#: events whose common columns are made together (then they are rows of their names)
SETTLE_ROWS = 4096
OPEN_WRITERS = 32


#: longest directory name used as is (NAME_MAX is 255 bytes); longer ones are cut and
#: end in ``~`` and a hash of the whole name
NAME_BYTES = 200


def event_dir_name(name: str) -> str:
    """The directory name of an event (never empty, ``.``, ``..`` or over 255 bytes)."""
    text = quote(name, safe="_.:-")
    if not text.strip("."):
        text = text.replace(".", "%2E") or "%00"
    if len(text) > NAME_BYTES:
        import hashlib

        text = text[:NAME_BYTES - 17] + "~" + hashlib.sha256(name.encode(
            "utf-8", "surrogateescape")).hexdigest()[:16]
    return text


def field_columns(fields: Fields, taken: set[str]) -> list[tuple[str, Any]]:
    """(column name, Arrow-ready value) per top-level field, names made unique."""
    seen = set(taken)
    out = []
    for name, value in fields:
        column, n = name, 1
        while column in seen:
            n += 1
            column = f"{name}_{n}"
        seen.add(column)
        out.append((column, arrow_value(value)))
    return out


def arrow_value(value: Any) -> Any:
    """A typed-layer value as pyarrow infers it (structs as dicts, text for the rest)."""
    if isinstance(value, Fields):
        return dict(field_columns(value, set()))
    if isinstance(value, list):
        return [arrow_value(v) for v in value]
    if isinstance(value, (uuid.UUID, ipaddress.IPv4Address, ipaddress.IPv6Address)):
        return str(value)
    if isinstance(value, datetime.datetime) and value.tzinfo is None:
        return value.replace(tzinfo=datetime.UTC)
    return value


class _Event:
    """The pending rows and the open part of one event name's rows of one shape."""

    def __init__(self, name: str, directory: Path) -> None:
        self.name = name
        self.directory = directory
        self.rows: list[tuple[list[Any], list[tuple[str, Any]]]] = []
        self.writer: Any = None
        self.written = 0


#: an event name and the shape of its rows: each field column's name and Python type
#: (another version of an event, or a field of another type, is another shape)
_Key = tuple[str, tuple[tuple[str, type], ...]]


def _shape(fields: list[tuple[str, Any]]) -> tuple[tuple[str, type], ...]:
    return tuple([(column, type(value)) for column, value in fields])


class ByEventWriter:
    """Writes events to ``directory`` (see the module doc); :meth:`close` finishes."""

    def __init__(self, directory: str | os.PathLike,
                 unfit: Callable[[str, InputError], None] | None = None) -> None:
        self.pa = require("pyarrow")
        self.pq = require("pyarrow.parquet")
        self.directory = Path(directory)
        full = schema()
        self.common = self.pa.schema([f for f in full if f.name != "fields"])
        self.names = set(self.common.names)
        self.events: dict[_Key, _Event] = {}
        self.open: OrderedDict[_Key, _Event] = OrderedDict()  # least recently written first
        self.parts: dict[Path, int] = {}  # parts started per event directory
        self.pending = 0
        #: events added since the last :meth:`settle`: (path, event, its field columns)
        self.fresh: list[tuple[str, Any, list[tuple[str, Any]]]] = []
        #: a value a column cannot hold: ``unfit(path, problem)`` (None: raised at close)
        self.unfit = unfit
        self.late: list[InputError] = []

    def add(self, path: str, ev: Any) -> None:
        self.fresh.append((path, ev, field_columns(ev.fields, self.names)))
        if len(self.fresh) >= SETTLE_ROWS:
            self.settle()

    def settle(self) -> None:
        """The fresh events' common columns, a batch at a time (``event_row``), as rows of
        their event names (an event object is not kept past its batch)."""
        fresh, self.fresh = self.fresh, []
        files, evs = [path_text(input_name(f[0])) for f in fresh], [f[1] for f in fresh]

        def unfit(row: int, problem: InputError) -> None:
            if self.unfit is None:
                self.late.append(problem)
            else:
                self.unfit(fresh[row][0], problem)

        rows = [event_row(ev, with_fields=False) for ev in evs]  # (typed field columns instead)
        columns = column_values(self.pa, self.common, files, rows, unfit)
        for i, (_, ev, fields) in enumerate(fresh):
            key = (ev.name, _shape(fields))
            entry = self.events.get(key)
            if entry is None:
                entry = self.events[key] = _Event(
                    ev.name, self.directory / event_dir_name(ev.name))
            entry.rows.append(([c[i] for c in columns], fields))
            self.pending += 1
            if len(entry.rows) >= GROUP_ROWS:
                self._flush(key, entry)
            elif self.pending >= PENDING_ROWS:
                key = max(self.events, key=lambda k: len(self.events[k].rows))
                self._flush(key, self.events[key])

    def close(self) -> dict[str, int]:
        """Write what is pending and close every part; rows written per event name."""
        self.settle()
        for key, entry in self.events.items():
            if entry.rows:
                self._flush(key, entry)
        for entry in self.open.values():
            entry.writer.close()
        self.open.clear()
        if self.late:
            raise combined(self.late)
        rows: dict[str, int] = {}
        for e in self.events.values():
            rows[e.name] = rows.get(e.name, 0) + e.written
        return rows

    def _flush(self, key: _Key, entry: _Event) -> None:
        table = self._table(entry.rows)
        self.pending -= len(entry.rows)
        entry.rows = []
        if entry.writer is not None and not table.schema.equals(entry.writer.schema):
            try:
                if not _fills(table.schema, entry.writer.schema):
                    raise ValueError  # (a column of mixed types as text, other structs...)
                table = table.cast(entry.writer.schema)
            except (self.pa.ArrowInvalid, self.pa.ArrowNotImplementedError, ValueError):
                self._close(key, entry)
        if entry.writer is None:
            if len(self.open) >= OPEN_WRITERS:
                oldest = next(iter(self.open))
                self._close(oldest, self.open[oldest])
            entry.directory.mkdir(parents=True, exist_ok=True)
            part = self.parts.get(entry.directory, 0)
            self.parts[entry.directory] = part + 1
            entry.writer = self.pq.ParquetWriter(
                entry.directory / f"part-{part}.parquet", table.schema)
            self.open[key] = entry
        self.open.move_to_end(key)
        entry.writer.write_table(table)
        entry.written += table.num_rows

    def _close(self, key: _Key, entry: _Event) -> None:
        entry.writer.close()
        entry.writer = None
        del self.open[key]

    def _table(self, rows: list[tuple[list[Any], list[tuple[str, Any]]]]) -> Any:
        pa = self.pa
        arrays = [to_array(pa, [r[0][i] for r in rows], f.type)
                  for i, f in enumerate(self.common)]
        names = list(self.common.names)
        order: dict[str, int] = {}
        for _, fields in rows:  # columns in first-seen order
            for column, _value in fields:
                order.setdefault(column, len(order))
        values: list[list[Any]] = [[None] * len(rows) for _ in order]
        for r, (_, fields) in enumerate(rows):
            for column, value in fields:
                values[order[column]][r] = value
        for column, its_values in zip(order, values, strict=True):
            names.append(column)
            arrays.append(self._array(its_values))
        return pa.Table.from_arrays(arrays, names=names)

    def _array(self, values: list[Any]) -> Any:
        pa = self.pa
        try:
            if not _uniform(values):
                raise pa.ArrowTypeError("mixed types")  # (text, below)
            try:
                return pa.array(values)
            except UnicodeEncodeError:  # a lone surrogate in a string
                values = [storable(v) for v in values]
                return pa.array(values)
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
            unsigned = _unsigned_type(pa, values)  # u64 values above int64's range
            if unsigned is not None:
                with contextlib.suppress(pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
                    return pa.array(values, type=unsigned)
            return pa.array([None if v is None else json_value(v) for v in values],
                            type=pa.string())


def _unsigned_type(pa: Any, values: list[Any]) -> Any:
    """The type pyarrow infers for ``values`` with uint64 where integers past int64's
    range are (u64 values, alone or in lists and structs); None when there are none, or
    the values do not make one type."""
    big: set[tuple] = set()

    def zeroed(value: Any, where: tuple) -> Any:
        if isinstance(value, int) and not isinstance(value, bool):
            if value > _INT64_MAX:
                big.add(where)
            return 0
        if isinstance(value, list):
            return [zeroed(v, (*where, None)) for v in value]
        if isinstance(value, dict):
            return {k: zeroed(v, (*where, k)) for k, v in value.items()}
        return value

    def unsigned(t: Any, where: tuple) -> Any:
        if t == pa.int64() and where in big:
            return pa.uint64()
        if pa.types.is_list(t):
            return pa.list_(unsigned(t.value_type, (*where, None)))
        if pa.types.is_struct(t):
            return pa.struct([f.with_type(unsigned(f.type, (*where, f.name))) for f in t])
        return t
    try:
        inferred = pa.array([zeroed(v, ()) for v in values]).type
    except (pa.ArrowInvalid, pa.ArrowTypeError, UnicodeEncodeError):
        return None
    return unsigned(inferred, ()) if big else None


_INT64_MAX = (1 << 63) - 1


def _uniform(values: list[Any]) -> bool:
    """Whether a column's nested values have one Python type at each place (the
    elements of its lists, each member of its structs), nulls aside. Where they mix,
    pyarrow's inference would take some for the others' type (an integer time past
    9999 as microseconds of a timestamp, text as binary): the column is text then."""
    types: dict[tuple, type] = {}

    def one(value: Any, where: tuple) -> bool:
        if value is None:
            return True
        kind = type(value)
        if types.setdefault(where, kind) is not kind:
            return False
        if kind is list:
            return all(one(item, (*where, None)) for item in value)
        if kind is dict:
            return all(one(item, (*where, key)) for key, item in value.items())
        return True
    first = next((v for v in values if v is not None), None)
    return type(first) not in (list, dict) or all(one(v, ()) for v in values)


def _fills(have: Any, part: Any) -> bool:
    """Whether rows of schema ``have`` may go into a part of schema ``part``: the same
    columns of the same types, but where ``have``'s holds nulls only (all null, empty
    lists): those are cast."""
    return have.names == part.names and all(
        a.type == b.type or "null" in str(a.type) for a, b in zip(have, part, strict=True))


def write_by_event(paths: Iterable[str], directory: str | os.PathLike,
                   problems: dict[str, list[InputError]] | None = None) -> dict[str, int]:
    """Write the events of ``paths`` to ``directory``; rows written per event name.
    ``problems``: each path's input errors are kept there (a fatal one replaces those
    before it and ends the path's rows) and the next paths are written; without it the
    first input error raises."""
    from ehtool.events import open as open_events

    writer = ByEventWriter(directory, None if problems is None else
                           lambda path, problem: problems.setdefault(path, []).append(problem))
    try:
        for path in paths:
            met = None if problems is None else problems.setdefault(path, [])
            try:
                with open_events(path, on_error=None if met is None else met.append) \
                        as events:
                    for ev in events:
                        writer.add(path, ev)
            except InputError as exc:
                if met is None:
                    raise
                writer.settle()  # (the problems of the rows before it, which it replaces)
                met[:] = [exc]  # (as one process: the fatal error alone)
    finally:  # an input error still leaves complete files for the events before it
        rows = writer.close()
    return rows
