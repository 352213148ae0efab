"""``ehtool decode``: perf.data -> JSON in perf-decode's shape."""

from __future__ import annotations

import sys

import click

_META_HELP = (
    "Meta keys to print: 'default', 'all', 'none' or a comma list, with +KEY/-KEY edits "
    "(time, cpu, pid, tid, comm, id, version, level, keyword, opcode, tag, activity, "
    "relatedActivity, provider, event, options, flags, common)."
)


@click.command()
@click.argument("inputs", nargs=-1, required=True, metavar="FILE...")
@click.option("-o", "--output", metavar="FILE",
              help="Write to FILE (atomically: complete or not at all) instead of stdout.")
@click.option("--sort", "order", type=click.Choice(["time", "file"]), default="time",
              show_default=True,
              help="time: perf-decode's order (by time within each FINISHED_ROUND); "
                   "file: record order.")
@click.option("--format", "out_format", type=click.Choice(["json", "jsonl"]), default="json",
              show_default=True,
              help="json: one document {FILE: [events]}; jsonl: one event per line.")
@click.option("--compact", is_flag=True,
              help="No spaces (perf-decode's unit-test style) instead of perf-decode's spacing.")
@click.option("--field-tags/--no-field-tags", default=True, show_default=True,
              help="Append ';tag=0xN' to EventHeader field names that carry a tag.")
@click.option("--bom/--no-bom", default=False, show_default=True,
              help="Start with a UTF-8 BOM, as perf-decode does when stdout is not a terminal.")
@click.option("--meta", "meta_spec", default="default", show_default=True, metavar="LIST",
              help=_META_HELP)
@click.option("--input-format", type=click.Choice(["perf", "dat"]), default="perf",
              show_default=True,
              help="perf: perf.data (file or pipe mode); dat: length-prefixed raw EventHeader "
                   "events (EventHeaderInterceptor .dat files).")
@click.option("-q", "--quiet", is_flag=True, help="No warnings on stderr, only errors.")
def decode(inputs: tuple[str, ...], output: str | None, order: str, out_format: str,
           compact: bool, field_tags: bool, bom: bool, meta_spec: str, input_format: str,
           quiet: bool) -> None:
    """Decode perf.data FILEs (``-`` reads a pipe-mode stream from stdin) into JSON
    that matches Microsoft's perf-decode: EventHeader events with their fields and
    meta, other tracepoints from their tracefs formats.

    Input errors (missing or truncated file, corrupt record) are reported on
    stderr after every complete record was written; the JSON stays valid and the
    exit status is 1.

    \b
    Examples:
      ehtool decode perf.data > out.json
      perf record -k monotonic -a -e sched:sched_switch -o - | ehtool decode -
      ehtool decode --compact --no-field-tags -o out.json perf.data
    """
    from ehtool.errors import EXIT_INPUT
    from ehtool.output.decode import DecodeOptions, decode_to
    from ehtool.output.events import parse_meta
    from ehtool.output.style import JsonStyle

    try:
        meta = parse_meta(meta_spec)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--meta") from None

    def warn(message: str) -> None:
        if not quiet:
            click.echo(f"ehtool: warning: {message}", err=True)

    options = DecodeOptions(
        style=JsonStyle(space=not compact, field_tags=field_tags),
        order=order,
        meta=meta,
        jsonl=out_format == "jsonl",
        bom=bom,
        input_format=input_format,
        warn=warn,
    )
    if output is None:
        errors = decode_to(sys.stdout.buffer, inputs, options)
        sys.stdout.buffer.flush()
    else:
        from ehtool.output.atomic import atomic_output

        with atomic_output(output) as out:
            errors = decode_to(out, inputs, options)
    for err in errors:
        click.echo(f"ehtool: error: {err}", err=True)
    if errors:
        sys.exit(EXIT_INPUT)
