"""``ehtool info``: what a perf.data file holds."""

from __future__ import annotations

import click


@click.command()
@click.argument("path", metavar="FILE", type=click.Path(dir_okay=False, allow_dash=True))
@click.option("--json", "as_json", is_flag=True, help="One JSON object for scripts.")
def info(path: str, as_json: bool) -> None:
    """Show a perf.data file's header and features (host, OS release, perf version,
    CPUs, clock, command line), its time range and the samples per tracepoint,
    with lost-event counts.

    \b
    Examples:
      ehtool info perf.data
      ehtool info --json perf.data | jq .events
    """
    from ehtool.decode.info import format_text, summarize

    summary = summarize(path)
    if as_json:
        import json

        click.echo(json.dumps(summary, indent=2))
    else:
        click.echo(format_text(summary))
