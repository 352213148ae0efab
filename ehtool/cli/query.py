"""``ehtool query``: SQL over recordings (DuckDB), without a JSON step."""

from __future__ import annotations

import sys

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
    from ehtool.cli.signals import exit_on_signals
    from ehtool.decode.options import available_cpus
    from ehtool.errors import UsageError

    duckdb = require("duckdb")
    con = duckdb.connect()
    source = Source(list(inputs), columns_for(sql), jobs or available_cpus())
    con.register("events", source.reader())
    with exit_on_signals():  # SIGTERM/SIGHUP: exit 128+N, the workers ended
        try:
            _run(con, sql, out_format)
        except Exception as exc:
            if source.error is not None:  # an input error, a signal: as it was raised
                raise source.error from None
            if isinstance(exc, duckdb.Error):
                raise UsageError(f"SQL: {' '.join(str(exc).split())}") from None
            if str(exc) == "Query interrupted":  # DuckDB's word for the SIGINT it saw
                raise KeyboardInterrupt from None
            raise


def _run(con, sql: str, out_format: str | None) -> None:
    """Run ``sql`` and print its result."""
    result = con.sql(sql)
    if result is None:
        return
    out_format = out_format or ("table" if sys.stdout.isatty() else "csv")
    if out_format == "table":
        result.show(max_width=1_000_000, max_rows=1_000_000)
        return
    table = result.arrow()
    if hasattr(table, "read_all"):  # DuckDB 1.4+ gives a RecordBatchReader
        table = table.read_all()
    if out_format == "csv":
        import pyarrow.csv as pacsv

        pacsv.write_csv(table, sys.stdout.buffer)
    else:
        import orjson

        out = sys.stdout.buffer
        for row in table.to_pylist():
            out.write(orjson.dumps(row, default=str) + b"\n")
