"""``ehtool info``: what perf.data files hold."""

from __future__ import annotations

import click

from ehtool.cli import options


@click.command()
@click.argument("paths", nargs=-1, metavar="[FILE]...", type=options.Path(allow_dash=True))
@click.option("--json", "as_json", is_flag=True,
              help="JSON for scripts: one object (one per line for several files).")
def info(paths: tuple[str, ...], as_json: bool) -> None:
    """Show each perf.data FILE's header and features (host, OS release, perf version,
    CPUs, clock, command line, compression), its time range, the samples per tracepoint
    and per EventHeader event (provider:event), with lost-event counts. A directory
    stands for the perf.data files under it (a perf record --threads directory is one
    recording); without FILE: ./perf.data, as perf does.

    \b
    Examples:
      ehtool info perf.data
      ehtool info traces/*.data
      ehtool info --json perf.data | jq .eventheader_events
    """
    import json

    from ehtool.cli.inputs import expand
    from ehtool.decode.info import format_text, summarize
    from ehtool.errors import EXIT_INPUT, EhtoolError, InputError, combined, input_name
    from ehtool.values.strings import path_text

    options.require_stdout("the summaries are")
    paths = expand(paths or ("perf.data",))
    failed = False
    for i, path in enumerate(paths):
        try:
            summary = summarize(path)
        except EhtoolError as exc:
            click.echo(f"ehtool: error: {exc}", err=True)
            failed = True
            if as_json:  # (one object per file, whatever happened to it)
                click.echo(json.dumps({"file": path_text(input_name(path)),
                                       "problems": [str(exc)]},
                                      indent=None if len(paths) > 1 else 2))
            continue
        if as_json:  # (the file named as decode's JSON names it)
            click.echo(json.dumps({**summary, "file": path_text(summary["file"])},
                                  indent=None if len(paths) > 1 else 2))
        else:
            click.echo(("\n" if i else "") + format_text(summary))
        if summary["problems"]:
            problems = [InputError(p) for p in summary["problems"]]
            click.echo(f"ehtool: error: {combined(problems)}", err=True)
            failed = True
    if failed:
        raise SystemExit(EXIT_INPUT)
