"""``ehtool query``: SQL over recordings (DuckDB), without a JSON step."""

from __future__ import annotations

import contextlib
import os
import re
import sys
import uuid
from collections.abc import Callable
from typing import Any, NamedTuple

import click

from ehtool.cli import options


@click.command()
@click.argument("sql")
@click.argument("inputs", nargs=-1, required=True, metavar="FILE...",
                type=options.Path(allow_dash=True))
@click.option("--format", "out_format", type=click.Choice(["table", "csv", "jsonl"]),
              default=None, help="table on a terminal, csv on a pipe (the default), or jsonl.")
@click.option("-j", "--jobs", type=click.IntRange(1, options.MAX_JOBS), metavar="N",
              help="Decode with N processes (default: the CPUs available to ehtool): files "
                   "side by side, a big file in parts split as 'ehtool decode -j N' splits "
                   "it; the rows and their order are those of -j 1.")
def query(sql: str, inputs: tuple[str, ...], out_format: str | None, jobs: int | None) -> None:
    """Run SQL over a view 'events' of the recordings FILE... (a directory: the
    perf.data files under it, at any depth; a perf record --threads directory is one).
    One row per event, the columns of 'ehtool decode --format parquet': file, time,
    session_time, cpu, pid, tid, comm, provider, event, level, keyword, opcode, id,
    version, activity, related_activity, fields (JSON: use DuckDB's ->> and
    json_extract), error (why a malformed EventHeader event is a plain tracepoint, else
    null). Needs pip install 'ehtool[analysis]'.

    Several statements (separated by ';') run in turn and each result is printed, as
    in DuckDB's own shell; each statement that reads 'events' decodes the files again
    (standard input can be read by one only), the columns it uses; one that reads
    'events' more than once runs over a temporary table of them. jsonl writes JSON
    values: JSON columns nested, timestamps as decode writes them
    (2026-11-22T12:18:39.661435143Z), blobs as hex ("78 00"), NaN and infinities as
    "nan", "inf"; csv writes the same texts (nested values as JSON). An input that
    cannot be read is reported after the results (exit 1); the rows of the events
    before a corrupt record are kept.

    \b
    Examples:
      ehtool query "select provider, event, count(*) from events group by all
                    order by 3 desc" traces/*.data
      ehtool query "select fields->>'status' as status, count(*) from events
                    where event = 'Request' group by all" perf.data
    """
    from ehtool.allocator import fewer_collections, keep_freed_memory
    from ehtool.analysis.arrow import require, without_pandas
    from ehtool.cli.inputs import expand
    from ehtool.cli.problems import report
    from ehtool.cli.signals import exit_on_signals
    from ehtool.decode.options import available_cpus
    from ehtool.errors import UsageError
    from ehtool.perfdata.finding import read_once

    inputs = expand(inputs)
    once = [p for p in inputs if read_once(p)]
    if len(set(once)) < len(once):
        raise click.UsageError("standard input ('-') and a FIFO can be read once: give "
                               "each once")
    if sys.stdout is None:
        raise click.UsageError("standard output is closed; the results are written there")
    keep_freed_memory()
    click.get_current_context().call_on_close(fewer_collections())
    duckdb = require("duckdb")
    without_pandas()
    con = duckdb.connect()
    try:
        statements = con.extract_statements(sql)
    except duckdb.Error as exc:
        raise UsageError(_sql_error(exc)) from None
    if not statements:
        raise click.UsageError("SQL: no statement (for example: 'select count(*) from "
                               "events')")
    if once and sum(_reads_events(con, s.query) for s in statements) > 1:
        raise click.UsageError("standard input ('-') and a FIFO can be read once: only one "
                               "statement may read 'events'")
    # SIGTERM/SIGHUP: exit 128+N (see _statement for the time DuckDB runs)
    with exit_on_signals():
        problems = _probed(inputs)  # (the inputs that cannot be read)
        if set(problems) >= set(inputs):  # nothing to query
            report(inputs, [problems])
        paths = [p for p in inputs if p not in problems]
        out_format = out_format or ("table" if sys.stdout.isatty() else "csv")
        met = [problems]
        read: set[str] = set()  # the inputs read once that a statement has read
        for statement in statements:
            met.append(_statement(duckdb, con, statement, paths, out_format,
                                  jobs or available_cpus(), read))
            read |= {path for path in met[-1] if read_once(path)}
        # the open-time problems (attributes, features) of the inputs no statement
        # reached: a LIMIT, a statement without 'events'
        reached = {path for m in met[1:] for path in m}
        met.append(_opened([p for p in paths if p not in reached]))
    report(inputs, met)


def _statement(duckdb: Any, con: Any, statement: Any, paths: list[str], out_format: str,
               jobs: int, read: set[str] | frozenset[str] = frozenset()) -> dict[str, list]:
    """Run one statement over a fresh view 'events' and print its result; the input
    problems its stream met, per path. A statement that scans 'events' more than once
    (DuckDB cannot read a stream twice) runs over a temporary table of the columns it
    needs, decoded once: when its syntax tree shows it, or, when the tree does not tell,
    after DuckDB found the stream read already (the files are decoded again)."""
    from ehtool.analysis.sql import reads
    from ehtool.cli.signals import interrupting
    from ehtool.errors import UsageError
    from ehtool.perfdata.finding import read_once

    # (a signal ends the block: DuckDB would make it its own error, 'Query interrupted',
    # which the analysis takes for a statement it cannot read)
    with interrupting(con.interrupt):
        needs = reads(con, statement.query)
    materialize = needs.scans is not None and needs.scans > 1
    try:
        met, result = _attempt(duckdb, con, statement, paths, out_format, jobs,
                               needs.columns, materialize, read)
    except _Consumed:
        once = any(read_once(p) for p in paths)
        if materialize or once:
            raise UsageError(_CONSUMED_ONCE if once else _CONSUMED) from None
        met, result = _attempt(duckdb, con, statement, paths, out_format, jobs,
                               needs.columns, True, read)
    if result is not None:
        _print(*result, out_format)
    return met


class _Consumed(Exception):
    """DuckDB scanned the stream of 'events' a second time."""


_CONSUMED = ("SQL: this statement reads 'events' more than once; save the columns it "
             "needs first: 'create temp table t as select ... from events; select ... "
             "from t'")
_CONSUMED_ONCE = ("SQL: this statement reads 'events' more than once, and standard "
                  "input (or a FIFO) can be read once; save the columns it needs first: "
                  "'create temp table t as select ... from events; select ... from t'")


def _attempt(duckdb: Any, con: Any, statement: Any, paths: list[str], out_format: str,
             jobs: int, columns: list[str] | None, materialize: bool,
             read: set[str] | frozenset[str]) -> tuple[dict[str, list], Any]:
    """:func:`_statement` once (its input problems and result, not printed), over a
    view of a stream of ``columns`` or (``materialize``) of a temporary table that holds
    them; ``read``: the inputs read once that a statement before read (through a view
    or a prepared statement, which no text shows: an error if the stream reaches one)."""
    from ehtool.analysis.parallel import Source

    source = Source(paths, columns, jobs, spent=read)
    try:
        return _consumed(duckdb, con, statement, out_format, columns, materialize, source)
    finally:  # (DuckDB holds the reader past the statement)
        source.close()


def _consumed(duckdb: Any, con: Any, statement: Any, out_format: str,
              columns: list[str] | None, materialize: bool, source: Any
              ) -> tuple[dict[str, list], Any]:
    """:func:`_attempt` over ``source``."""
    from ehtool.cli.signals import interrupting
    from ehtool.errors import UsageError

    def interrupt() -> None:  # from the signal watcher's thread
        source.stop()
        con.interrupt()

    # names no statement of the session is expected to have (it may name a table events)
    stream, held = (f"ehtool_{what}_{uuid.uuid4().hex}" for what in ("stream", "events"))
    fields = " replace (fields::json as fields)" if columns is None or "fields" in columns \
        else ""  # (JSON text: typed as JSON)

    # While DuckDB runs, a signal stops the decoding workers and the query, and is raised
    # once DuckDB returns.
    with interrupting(interrupt):
        try:
            con.register(stream, source.reader())
            # the view is memory.main.events whatever the session's current schema
            con.execute(f"create or replace view {EVENTS} as select *{fields} from {stream}")
            if materialize:  # decoded once into a table, which the view then reads
                con.execute(f"create temp table {held} as from {EVENTS}")
                con.execute(f"create or replace view {EVENTS} as from temp.{held}")
            result = _run(con, statement, out_format)
        except Exception as exc:
            if source.error is not None:  # a signal, a worker's failure: as raised
                raise source.error from None
            if isinstance(exc, duckdb.Error):
                if "already been consumed" in str(exc) and "RecordBatchReader" in str(exc):
                    source.stop()
                    raise _Consumed from None
                raise UsageError(_sql_error(exc)) from None
            raise
        finally:
            with contextlib.suppress(duckdb.Error):  # (interrupted: the command ends)
                con.unregister(stream)
                if materialize:
                    con.execute(f"drop table if exists temp.{held}")
    if source.error is not None:
        raise source.error
    return source.problems, result


#: the view of the events: in the connection's own database, whichever is the current one
EVENTS = "memory.main.events"


def _sql_error(exc: Exception) -> str:
    return f"SQL: {' '.join(str(exc).split())}"


def _reads_events(con: Any, sql: str) -> bool:
    """Whether a statement may read 'events': it names it, and DuckDB's syntax tree does
    not show it reads none of it (the name only in a string, a column alias)."""
    from ehtool.analysis.sql import reads

    if re.search(r"\bevents\b", sql, re.IGNORECASE) is None:
        return False
    try:
        return reads(con, sql).scans != 0
    except Exception:  # noqa: BLE001 - DuckDB's own errors: run it to see
        return True


def _probed(inputs: tuple[str, ...]) -> dict[str, list]:
    """Before the query: the inputs that cannot be opened or are not perf.data (their
    magic), each with its error (a FIFO or standard input is not looked at)."""
    from ehtool.errors import InputError
    from ehtool.perfdata import PerfDataFile
    from ehtool.perfdata.finding import read_once

    problems: dict[str, list] = {}
    for path in inputs:
        if not read_once(path):
            try:
                PerfDataFile.probe(path)
            except InputError as exc:
                problems[path] = [exc]
    return problems


def _opened(inputs: list[str]) -> dict[str, list]:
    """After the query: each input's problems on opening it (its header, attributes
    and feature sections, a data section cut short), for the inputs that no statement
    read. Standard input's header is read, and a device's; a FIFO or a terminal is
    never opened for a look (the read would wait for a writer, or for the user; a
    FIFO's writer would then stop)."""
    from ehtool.errors import InputError
    from ehtool.perfdata import PerfDataFile

    problems: dict[str, list] = {}
    for path in inputs:
        if path != "-" and _waits(path):
            continue
        met = problems.setdefault(path, [])
        try:
            with PerfDataFile.open(path, on_error=met.append) as f:
                cut = f.cut_short()  # (its records are not read: its header says it)
                if cut is not None:
                    met.append(cut)
        except InputError as exc:
            met[:] = [exc]
    return problems


def _waits(path: str) -> bool:
    """Whether reading ``path`` would wait for someone: a FIFO, a terminal."""
    import stat

    try:
        mode = os.stat(path).st_mode
        if stat.S_ISFIFO(mode):
            return True
        if not stat.S_ISCHR(mode):
            return False
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError:
        return False  # (opening it says why)
    try:
        return os.isatty(fd)
    finally:
        os.close(fd)


#: statement types whose result is printed whatever its columns
_QUERIES = frozenset(("SELECT", "PRAGMA", "EXPLAIN", "CALL"))


def _run(con: Any, statement: Any, out_format: str) -> tuple[Any, list[str]] | None:
    """Run ``statement``; print a table, or return the result as an Arrow table to print
    and the DuckDB types of its columns (JSON and BIT are Arrow strings and binaries)."""
    result = con.sql(statement)
    if result is None or (statement.type.name not in _QUERIES
                          and result.columns in (["Count"], ["Success"])):
        return None  # DuckDB's shell prints nothing for them either (CREATE, INSERT, SET)
    if out_format == "table":
        result.show(max_width=1_000_000, max_rows=1_000_000)
        return None
    kinds = [str(t) for t in result.types]
    table = result.arrow()
    if hasattr(table, "read_all"):  # DuckDB 1.4+ gives a RecordBatchReader
        table = table.read_all()
    return table, kinds


def _print(table: Any, kinds: list[str], out_format: str) -> None:
    """Print an Arrow table as CSV or JSON Lines (values as :func:`_encoder` writes), its
    column names made unique as DuckDB's COPY makes them (a, a_1)."""
    import pyarrow as pa

    encoders = [_encoder(pa, f.type, kind) for f, kind in
                zip(table.schema, kinds, strict=True)]
    names = _unique(table.column_names)
    if out_format == "csv":
        import pyarrow.csv as pacsv

        columns = [_csv_column(pa, c, f.type, enc, kind) for c, f, enc, kind in
                   zip(table.columns, table.schema, encoders, kinds, strict=True)]
        pacsv.write_csv(pa.table(columns, names=names), sys.stdout.buffer)
        return
    from ehtool.values.text import str_json

    keys = [str_json(name) + b":" for name in names]
    out = sys.stdout.buffer
    for batch in table.to_batches():
        columns = [_values(pa, column) for column in batch.columns]
        for row in zip(*columns, strict=True):
            out.write(b"{" + b",".join(
                key + (b"null" if v is None else enc(v))
                for key, v, enc in zip(keys, row, encoders, strict=True)) + b"}\n")


def _values(pa: Any, column: Any) -> list:
    """A column's Python values; times and timestamps of nanoseconds, at any depth, as
    integers of their unit (to_pylist would drop the nanoseconds, or need pandas for
    them); a union's as :class:`_Member` (which member, its value)."""
    if isinstance(column, pa.ChunkedArray):
        return [v for chunk in column.chunks for v in _values(pa, chunk)]
    type_ = column.type
    if pa.types.is_union(type_):
        members = [_values(pa, column.field(i)) for i in range(type_.num_fields)]
        which = {code: i for i, code in enumerate(type_.type_codes)}
        codes = column.type_codes.to_pylist()
        at = (column.offsets.to_pylist() if type_.mode == "dense" else range(len(codes)))
        return [None if members[which[c]][k] is None else _Member(which[c], members[which[c]][k])
                for c, k in zip(codes, at, strict=True)]
    plain = _plain_type(pa, type_)
    try:
        return (column if plain is None else column.cast(plain)).to_pylist()
    except ValueError as exc:  # a union holding nanoseconds, inside a list or struct
        from ehtool.errors import UsageError

        raise UsageError(f"a value of type {type_} cannot be written as text here ({exc}); "
                         "cast it in the query (::VARCHAR)") from None


class _Member(NamedTuple):
    """A union's value: the index of its member type, and the value."""

    member: int
    value: Any


def _plain_type(pa: Any, type_: Any) -> Any:
    """``type_`` with int64 for each timestamp, and each time of nanoseconds, in it; None
    when it has none."""
    t = pa.types
    if t.is_timestamp(type_) or (t.is_time64(type_) and type_.unit == "ns"):
        return pa.int64()
    if t.is_map(type_):
        key = _plain_type(pa, type_.key_type)
        item = _plain_type(pa, type_.item_type)
        if key is None and item is None:
            return None
        return pa.map_(key or type_.key_type, item or type_.item_type)
    if t.is_list(type_) or t.is_large_list(type_) or t.is_fixed_size_list(type_):
        item = _plain_type(pa, type_.value_type)
        if item is None:
            return None
        if t.is_fixed_size_list(type_):
            return pa.list_(item, type_.list_size)
        return (pa.large_list if t.is_large_list(type_) else pa.list_)(item)
    if t.is_struct(type_):
        plain = [_plain_type(pa, f.type) for f in type_]
        if all(p is None for p in plain):
            return None
        return pa.struct([f.with_type(p) if p is not None else f
                          for f, p in zip(type_, plain, strict=True)])
    return None


def _unique(names: list[str]) -> list[str]:
    """Column names made unique as DuckDB makes them (QueryResult::DeduplicateColumns,
    as its COPY writes them): a repeated name, in any case, gets ``_1``, ``_2``..., the
    first suffix no other name has."""
    seen: dict[str, int] = {}
    out = []
    for name in names:
        low = name.lower()
        if low in seen:
            new = f"{name}_{seen[low]}"
            while new.lower() in seen:
                seen[low] += 1
                new = f"{name}_{seen[low]}"
            name = new
            low = name.lower()
        seen[low] = seen.get(low, 0) + 1
        out.append(name)
    return out


def _csv_column(pa: Any, column: Any, type_: Any, encode: Callable[[Any], bytes],
                kind: str = "") -> Any:
    """A column as pyarrow's CSV writer takes it: timestamps, times, blobs, bit strings
    and intervals as the text of their JSON string, nested values as JSON, the rest as
    it is."""
    t = pa.types
    if t.is_timestamp(type_) or t.is_binary(type_) or t.is_large_binary(type_) \
            or t.is_fixed_size_binary(type_) or t.is_interval(type_) or t.is_time(type_) \
            or kind == "BIT":
        import orjson

        return pa.array([None if v is None else orjson.loads(encode(v))
                         for v in _values(pa, column)], type=pa.string())
    if t.is_nested(type_):
        return pa.array([None if v is None else encode(v).decode()
                         for v in _values(pa, column)], type=pa.string())
    return column


def _encoder(pa: Any, type_: Any, kind: str = "") -> Callable[[Any], bytes]:
    """JSON text of a non-null value of Arrow type ``type_`` (from :func:`_values`: an
    integer of its unit for a timestamp, at any depth) and DuckDB type ``kind``: decode's texts for
    floats (NaN and infinities as strings), timestamps (ISO, ``Z`` when it has a zone)
    and bytes (hex); JSON columns as their JSON; BIT as DuckDB's text (``"101"``);
    decimals as numbers; other types as their text."""
    from ehtool.values.text import float32_json, float64_json, hex_bytes, str_json

    t = pa.types
    if kind == "JSON":  # DuckDB checked it; a line break between tokens is a space
        return lambda v: v.replace("\n", " ").replace("\r", " ").encode()
    if kind == "BIT":
        return lambda v: str_json(_bit_text(v))
    if t.is_boolean(type_):
        return lambda v: b"true" if v else b"false"
    if t.is_integer(type_):
        return lambda v: b"%d" % v
    if t.is_floating(type_):
        return float32_json if type_.bit_width <= 32 else float64_json
    if t.is_decimal(type_):
        return lambda v: str(v).encode()
    if t.is_string(type_) or t.is_large_string(type_):
        return str_json
    if t.is_binary(type_) or t.is_large_binary(type_) or t.is_fixed_size_binary(type_):
        return hex_bytes
    if t.is_timestamp(type_):
        return _timestamp_encoder(type_)
    if t.is_time64(type_) and type_.unit == "ns":
        return _time_ns_json
    if t.is_date(type_) or t.is_time(type_):
        return lambda v: b'"%s"' % v.isoformat().encode()
    if t.is_union(type_):  # (inside a list or struct, to_pylist gives the bare value)
        members = [_encoder(pa, f.type) for f in type_]
        return lambda v: (members[v.member](v.value) if type(v) is _Member
                          else str_json(str(v)))
    if t.is_interval(type_):
        return _interval_json
    if t.is_list(type_) or t.is_large_list(type_) or t.is_fixed_size_list(type_):
        item = _encoder(pa, type_.value_type)
        return lambda v: b"[" + b",".join(b"null" if x is None else item(x) for x in v) + b"]"
    if t.is_map(type_):
        value = _encoder(pa, type_.item_type)
        key = (_timestamp_encoder(type_.key_type) if t.is_timestamp(type_.key_type)
               else lambda k: str_json(str(k)))
        return lambda v: b"{" + b",".join(
            key(k) + b":" + (b"null" if x is None else value(x)) for k, x in v) + b"}"
    if t.is_struct(type_):
        fields = [(f.name, str_json(f.name) + b":", _encoder(pa, f.type)) for f in type_]
        return lambda v: b"{" + b",".join(
            key + (b"null" if v[name] is None else enc(v[name]))
            for name, key, enc in fields) + b"}"
    return lambda v: str_json(str(v))


def _time_ns_json(v: int) -> bytes:
    """A time of day in nanoseconds as ``"HH:MM:SS[.nnnnnnnnn]"`` (as ``time.isoformat``
    writes microseconds)."""
    seconds, ns = divmod(v, 10**9)
    minutes, second = divmod(seconds, 60)
    hour, minute = divmod(minutes, 60)
    return b'"%02d:%02d:%02d%s"' % (hour, minute, second, b".%09d" % ns if ns else b"")


def _bit_text(v: bytes) -> str:
    """DuckDB's text of a BIT value from its bytes: the first byte is how many bits of
    the next byte are padding."""
    return "".join(f"{b:08b}" for b in v[1:])[v[0]:] if v else ""


def _interval_json(v: Any) -> bytes:
    """An interval (months, days, nanoseconds) as an ISO 8601 duration, ``"P1M2DT3.5S"``."""
    sign = "-" if v.nanoseconds < 0 else ""
    seconds, ns = divmod(abs(v.nanoseconds), 10**9)
    fraction = f".{ns:09d}".rstrip("0") if ns else ""
    return f'"P{v.months}M{v.days}DT{sign}{seconds}{fraction}S"'.encode()


def _timestamp_encoder(type_: Any) -> Callable[[Any], bytes]:
    """Timestamps as decode writes them, ``YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ``; without a
    zone (DuckDB's TIMESTAMP) the same without ``Z``; from an integer of the type's unit
    (:func:`_values`)."""
    from ehtool.values.text import utc_ns_json

    scale = {"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}[type_.unit]
    if type_.tz is not None:
        return lambda v: utc_ns_json(v * scale)
    return lambda v: utc_ns_json(v * scale)[:-2] + b'"'
