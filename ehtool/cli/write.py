"""``ehtool write``: send EventHeader events from the shell."""

from __future__ import annotations

import sys
from collections.abc import Callable

import click

from ehtool.cli import options
from ehtool.cli.completion import complete_names
from ehtool.cli.options import converted
from ehtool.cli.write_args import LEVELS, OPCODES, VALUE_OPTIONS, write_one


def _option(flag: str) -> Callable:
    """A click callback converting ``flag``'s text with the shared converter."""
    return converted(VALUE_OPTIONS[flag][1])


_TYPES_HELP = (
    "i8 i16 i32 i64 (signed), u8 u16 u32 u64 (unsigned), x8 x16 x32 x64 (hex), iptr uptr xptr "
    "(pointer-sized), bool bool32, f32 f64, char char16, str str16 str32 (NUL-terminated), "
    "lstr lstr16 lstr32 (counted), bin (hex bytes), guid, time time32 (seconds or ISO 8601), "
    "errno (number or ENAME), pid, port, ipv4, ipv6"
)


@click.command(epilog=f"Field types: {_TYPES_HELP}.")
@click.argument("provider", required=False)
@click.argument("event", required=False)
@click.argument("fields", nargs=-1, metavar="[FIELD...]")
@click.option("--level", callback=_option("--level"), default="5",
              shell_complete=complete_names(list(LEVELS)),
              show_default=True, help="Level: 1-255 or critical, error, warning, info, verbose.")
@click.option("--keyword", callback=_option("--keyword"), default="1", show_default=True,
              help="Keyword bits (hex 0x.. or decimal).")
@click.option("--opcode", callback=_option("--opcode"), default="0",
              shell_complete=complete_names(list(OPCODES)),
              help="Opcode: 0-255 or info, start, stop, reply, send, receive, ...")
@click.option("--id", "event_id", callback=_option("--id"), default="0",
              help="Stable event id.")
@click.option("--version", "event_version", callback=_option("--version"), default="0",
              help="Event version.")
@click.option("--tag", callback=_option("--tag"), default="0", help="Event tag.")
@click.option("--activity", metavar="UUID", help="Activity id.")
@click.option("--related-activity", metavar="UUID", help="Related (parent) activity id.")
@click.option("--group", metavar="NAME", help="Provider group (the tracepoint's G option).")
@click.option("--batch", is_flag=True,
              help="Read events as JSON Lines from stdin (or -i FILE); see below.")
@click.option("-i", "--input", "input_file", metavar="FILE", help="Batch input file.",
              type=options.Path(allow_dash=True))
@click.option("--strict", is_flag=True, help="Batch: stop at the first bad line.")
@click.option("--require-enabled", is_flag=True,
              help="Exit 3 when no session has the tracepoint enabled (nothing written).")
@click.option("--dry-run", is_flag=True,
              help="Print 'TRACEPOINT HEX' for each event instead of writing (no kernel).")
@click.option("--decode", "show_decoded", is_flag=True,
              help="With --dry-run: print each event as 'ehtool decode --format jsonl' "
                   "would show it, instead of its hex.")
@click.option("-v", "--verbose", is_flag=True, help="Say on stderr what was written or skipped.")
def write(provider: str | None, event: str | None, fields: tuple[str, ...], level: int,
          keyword: int, opcode: int, event_id: int, event_version: int, tag: int,
          activity: str | None, related_activity: str | None, group: str | None, batch: bool,
          input_file: str | None, strict: bool, require_enabled: bool, dry_run: bool,
          show_decoded: bool, verbose: bool) -> None:
    """Write an EventHeader event to PROVIDER_L<level>K<keyword> (registered by
    this command). When no session has the tracepoint enabled nothing is written:
    exit 0, or 3 with --require-enabled.

    A FIELD is NAME=VALUE (a UTF-8 string) or NAME:TYPE=VALUE; arrays are
    NAME:TYPE[]=v1,v2,... (or TYPE[N] for a constant count; strings that hold
    a comma: write the event as a --batch line). EVENT may carry ';key=value'
    attributes.

    \b
    Batch (--batch), one JSON object a line:
      {"provider": "P", "event": "E", "level": 5, "keyword": "0x1",
       "opcode": 0, "id": 0, "version": 0, "tag": 0, "group": "g",
       "activity": "UUID", "related_activity": "UUID",
       "fields": [["n", "u32", 7], ["s", "str", "x"], ["a", "u8[]", [1, 2]],
                  ["pt", "struct", [["x", "i32", 1], ["y", "i32", 2]]],
                  {"name": "t", "type": "u16", "value": 1, "tag": 5}]}
    Only "provider" and "event" are required; options give the defaults.

    \b
    Examples:
      ehtool write MyProvider Started version=1.2 pid:pid=$$
      ehtool write --level error MyProvider Failed errno:errno=ENOENT path=/etc/x
      ehtool write --dry-run MyProvider Ev n:u32=7 xs:u8[]=1,2,3
      ehtool write --dry-run --decode MyProvider Ev n:u32=7 xs:u8[]=1,2,3
      ehtool write --batch < events.jsonl
    """
    def say(message: str) -> None:
        if verbose:
            click.echo(message, err=True)

    if dry_run:
        from ehtool.cli.options import require_stdout

        require_stdout("--dry-run's events are")
    out = sys.stdout
    if show_decoded:
        if not dry_run:
            raise click.UsageError("--decode shows what --dry-run would write: give both")
        from ehtool.provider.writer import DecodedLines

        out = DecodedLines(sys.stdout)
    values = dict(level=level, keyword=keyword, opcode=opcode, id=event_id,
                  version=event_version, tag=tag, activity=activity,
                  related_activity=related_activity, group=group)
    if batch or input_file:
        from ehtool.provider.batch import write_batch
        from ehtool.provider.writer import EventWriter, WriteDefaults

        if provider or event or fields:
            raise click.UsageError("--batch and -i take events from the input, not from arguments")
        writer = EventWriter(dry_run=dry_run, out=out, say=say)
        try:
            status = write_batch(writer, None if input_file == "-" else input_file,
                                 WriteDefaults(**values), strict=strict,
                                 require_enabled=require_enabled,
                                 warn=lambda m: click.echo(f"ehtool: error: {m}", err=True))
        finally:
            writer.close()
    else:
        if not provider or not event:
            raise click.UsageError("give PROVIDER and EVENT (or --batch)")
        status = write_one(provider, event, list(fields), values,
                           require_enabled=require_enabled, dry_run=dry_run, say=say,
                           out=out)
    if status:
        sys.exit(status)
