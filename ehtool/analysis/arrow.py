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
error              string                    why an EventHeader tracepoint's event is a
                                             plain tracepoint here (malformed), or null
=================  ========================  =========================================
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from operator import itemgetter
from typing import Any

from ehtool.errors import InputError, UsageError, combined, input_name
from ehtool.events import ROW_COLUMNS, ROW_OFFSET
from ehtool.values.strings import path_text
from ehtool.values.typed_json import storable

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


class _PandasRefused:
    """A meta path finder that refuses ``import pandas`` (see :func:`without_pandas`)."""

    @staticmethod
    def find_spec(name: str, path: Any = None, target: Any = None) -> None:
        if name == "pandas":
            raise ImportError("pandas is not wanted by this process")


def without_pandas() -> None:
    """For a process that never uses pandas (the CLI's ``query`` and Parquet output, and
    the workers they fork): pyarrow's first ``pa.array`` of a Python list imports pandas,
    when it is installed (Dask's extra brings it), only to ask whether the list is a
    pandas object. Measured here: 0.3-0.5 s and ~40 MB of resident memory of every such
    command. When pandas is not imported yet, pyarrow's one attempt is made to fail, so
    it treats lists as lists; its pandas conversions (``to_pandas``, ``from_pandas``)
    still import pandas when they are called, but for the rest of the process
    ``pa.array`` takes a pandas object given to it for a plain sequence (a Series of
    datetime64[ns] would lose its nanoseconds): call it only in a process that is the
    command's. A library caller (Dask's reader) has pandas imported already and is left
    as it is; nanosecond times are never converted to Python values here (the CLI's
    query writes them from integers)."""
    import sys

    if "pandas" in sys.modules:
        return
    pa = require("pyarrow")
    sys.meta_path.insert(0, _PandasRefused)  # type: ignore[arg-type]
    try:
        pa.array([], type=pa.int64())  # (pyarrow's one attempt to import pandas)
    finally:
        sys.meta_path.remove(_PandasRefused)  # type: ignore[arg-type]


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
        ("fields", pa.string()), ("error", pa.string()),
    ])
    return pa.schema([full.field(n) for n in columns]) if columns else full


def record_batches(paths: Iterable[str], columns: list[str] | None = None,
                   part: tuple[int, int] | None = None,
                   on_error: Callable[[InputError], None] | None = None,
                   on_fatal: Callable[[InputError], None] | None = None) -> Iterator[Any]:
    """Record batches of the events of ``paths`` (in order; each file in time order);
    ``part=(k, n)``: of each file only its k-th of n parts (see :func:`ehtool.open`).
    A file's problems raise at its end (its complete events were yielded), unless
    ``on_error`` takes the recoverable ones, and ``on_fatal`` the one that ends a file
    (called before that file's last rows are yielded; the next file follows). A value
    its column cannot hold (a corrupt time past 2262) is null, and a recoverable
    problem (without ``on_error``: raised after the last rows)."""
    pa = require("pyarrow")
    from ehtool.events import open as open_events

    out_schema = schema(columns)
    names = out_schema.names
    # without the fields column no field is decoded (the events are still checked whole)
    only = None if "fields" in names else ()
    files: list[str] = []  # each row's input
    rows: list[tuple] = []
    late: list[InputError] = []
    sink = on_error or late.append

    def unfit(row: int, problem: InputError) -> None:
        sink(problem)
    for path in paths:
        name = path_text(input_name(path))  # (as JSON)
        try:
            with open_events(path, fields=only, part=part, on_error=on_error) as events:
                for more in events.row_batches():
                    rows += more
                    files += [name] * len(more)
                    while len(rows) >= BATCH_ROWS:
                        yield _batch(pa, files[:BATCH_ROWS], rows[:BATCH_ROWS], out_schema,
                                     unfit)
                        del files[:BATCH_ROWS], rows[:BATCH_ROWS]
        except InputError as exc:
            last = _batch(pa, files, rows, out_schema, unfit) if rows else None
            files, rows = [], []
            if on_fatal is None:
                if last is not None:  # the complete events before the problem, then it
                    yield last
                raise
            on_fatal(exc)  # (after the problems of the rows before: it replaces them)
            if last is not None:
                yield last
    if rows:
        yield _batch(pa, files, rows, out_schema, unfit)
    if late:
        raise combined(late)


#: a value a column cannot hold: ``unfit(row, problem)``
Unfit = Callable[[int, InputError], None]


def _batch(pa: Any, files: list[str], rows: list[tuple], schema: Any, unfit: Unfit) -> Any:
    columns = _columns(files, rows, len(schema))
    arrays = []
    for f in schema:
        values = columns(f.name)
        try:
            arrays.append(to_array(pa, values, f.type))
        except (OverflowError, pa.ArrowInvalid):  # a value out of the column's range
            bounds = _bounds(pa, f.type)
            if bounds is None:
                raise
            arrays.append(to_array(pa, _fitting(f, bounds, values, files, rows, unfit),
                                   f.type))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def column_values(pa: Any, schema: Any, files: list[str], rows: list[tuple],
                  unfit: Unfit) -> list[Sequence]:
    """The values of ``schema``'s columns for these rows (``ehtool.events.event_row``'s),
    those out of their column's range None (:func:`record_batches` finds them building
    its arrays)."""
    columns = _columns(files, rows, len(schema))
    out = []
    for f in schema:
        values = columns(f.name)
        # (only times may not fit: the other integers come from fields of their width)
        bounds = _bounds(pa, f.type) if f.name in _TIMES else None
        if bounds is not None:
            present = [v for v in values if v is not None]
            if present and (min(present) < bounds[0] or max(present) > bounds[1]):
                values = _fitting(f, bounds, values, files, rows, unfit)
        out.append(values)
    return out


def _columns(files: list[str], rows: list[tuple], wanted: int) -> Callable[[str], Sequence]:
    """``column(name)``: the values of a column for rows of (input name, event row), of
    which ``wanted`` are asked for (a few are picked out, more transposed at once)."""
    if wanted <= _PICKED:
        return lambda name: files if name == "file" else list(map(_ITEMS[name], rows))
    transposed = list(zip(*rows, strict=True)) if rows else [()] * (ROW_OFFSET + 1)
    return lambda name: files if name == "file" else transposed[_INDEX[name]]


#: a column's place in a row (``ehtool.events.ROW_COLUMNS``), and its getter
_INDEX = {name: i for i, name in enumerate(ROW_COLUMNS)}
_ITEMS = {name: itemgetter(i) for name, i in _INDEX.items()}
#: up to this many columns are picked out of the rows one by one (transposing all 18
#: costs as much as picking 12)
_PICKED = 8
#: the columns of the session clock's u64 times, which int64 may not hold
_TIMES = frozenset(("time", "session_time"))


def _bounds(pa: Any, type_: Any) -> tuple[int, int] | None:
    """The values an integer or timestamp column holds (None: another type)."""
    if pa.types.is_timestamp(type_):
        return -(1 << 63), (1 << 63) - 1
    if not pa.types.is_integer(type_):
        return None
    bits = type_.bit_width
    if pa.types.is_signed_integer(type_):
        return -(1 << bits - 1), (1 << bits - 1) - 1
    return 0, (1 << bits) - 1


def _fitting(column: Any, bounds: tuple[int, int], values: Sequence, files: list[str],
             rows: list[tuple], unfit: Unfit) -> list:
    """``values`` with those out of ``bounds`` as None, each one a problem naming the
    input and the sample's offset."""
    low, high = bounds
    out = list(values)
    for i, v in enumerate(values):
        if v is not None and not low <= v <= high:
            out[i] = None
            unfit(i, InputError(f"{files[i]}: offset {rows[i][ROW_OFFSET]:#x}: {column.name} {v} "
                                f"does not fit its column ({column.type}): null"))
    return out


def to_array(pa: Any, values: Sequence, type_: Any) -> Any:
    """``values`` as an Arrow array of ``type_`` (strings with lone surrogates kept as
    :func:`storable` keeps them)."""
    try:
        return pa.array(values, type=type_)
    except UnicodeEncodeError:  # a lone surrogate (a name, a path) in a string column
        return pa.array([storable(v) for v in values], type=type_)
