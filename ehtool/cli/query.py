"""``ehtool query``: SQL over recordings (DuckDB), without a JSON step."""

from __future__ import annotations

import sys
from typing import Any

import click


@click.command()
@click.argument("sql")
@click.argument("inputs", nargs=-1, required=True, metavar="FILE...",
                type=click.Path(allow_dash=True))
@click.option("--format", "out_format", type=click.Choice(["table", "csv", "jsonl"]),
              default=None, help="table on a terminal, csv on a pipe (the default), or jsonl.")
@click.option("-j", "--jobs", type=click.IntRange(min=1), metavar="N",
              help="Decode with N processes (default: the CPUs available to ehtool): files "
                   "side by side, a big file in parts split as 'ehtool decode -j N' splits "
                   "it; the rows and their order are those of -j 1.")
def query(sql: str, inputs: tuple[str, ...], out_format: str | None, jobs: int | None) -> None:
    """Run SQL over a view 'events' of the recordings FILE... (one row per event, the
    columns of 'ehtool decode --format parquet': file, time, session_time, cpu, pid,
    tid, comm, provider, event, level, keyword, opcode, id, version, activity,
    related_activity, fields (JSON text: use DuckDB's ->> and json_extract)). Needs
    pip install 'ehtool[analysis]'.

    \b
    Examples:
      ehtool query "select provider, event, count(*) from events group by all
                    order by 3 desc" traces/*.data
      ehtool query "select fields->>'status' as status, count(*) from events
                    where event = 'Request' group by all" perf.data
    """
    from ehtool.analysis.arrow import columns_for, require
    from ehtool.analysis.parallel import Source
    from ehtool.cli.signals import exit_on_signals, interrupting
    from ehtool.decode.options import available_cpus
    from ehtool.errors import UsageError

    duckdb = require("duckdb")
    source = Source(list(inputs), columns_for(sql), jobs or available_cpus())
    con = duckdb.connect()

    def interrupt() -> None:  # from the signal watcher's thread
        source.stop()
        con.interrupt()

    # SIGTERM/SIGHUP: exit 128+N. While DuckDB runs, a signal stops the decoding workers
    # and the query, and is raised once DuckDB returns.
    with exit_on_signals():
        with interrupting(interrupt):
            con.register("events", source.reader())
            try:
                result = _run(con, sql, out_format)
            except Exception as exc:
                if source.error is not None:  # an input error: as it was raised
                    raise source.error from None
                if isinstance(exc, duckdb.Error):
                    raise UsageError(f"SQL: {' '.join(str(exc).split())}") from None
                raise
        if result is not None:
            _print(result, out_format)


def _run(con, sql: str, out_format: str | None) -> Any:
    """Run ``sql``; print a table, or return the result as an Arrow table to print."""
    result = con.sql(sql)
    if result is None:
        return None
    out_format = out_format or ("table" if sys.stdout.isatty() else "csv")
    if out_format == "table":
        result.show(max_width=1_000_000, max_rows=1_000_000)
        return None
    table = result.arrow()
    if hasattr(table, "read_all"):  # DuckDB 1.4+ gives a RecordBatchReader
        table = table.read_all()
    return table


def _print(table: Any, out_format: str | None) -> None:
    """Print an Arrow table as CSV or JSON Lines."""
    if (out_format or "csv") == "csv":
        import pyarrow.csv as pacsv

        pacsv.write_csv(table, sys.stdout.buffer)
    else:
        import orjson

        out = sys.stdout.buffer
        for row in table.to_pylist():
            out.write(orjson.dumps(row, default=str) + b"\n")
