"""``ehtool record``: a supervised ``perf record`` session that loses no events."""

from __future__ import annotations

import math
import sys

import click

from ehtool.cli import options
from ehtool.cli.completion import complete_tracepoints
from ehtool.cli.options import provider_set, require_provider


class _RecordCommand(click.Command):
    """Splits ``SPEC... -- COMMAND [ARGS...]`` before click sees the arguments."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if "--" in args:
            cut = args.index("--")
            ctx.meta["ehtool_record_command"] = args[cut + 1:]
            args = args[:cut]
        return super().parse_args(ctx, args)


@click.command(cls=_RecordCommand)
@click.argument("specs", nargs=-1, metavar="SPEC...", shell_complete=complete_tracepoints)
@click.option("-o", "--output", default="perf.data", show_default=True, metavar="FILE",
              type=options.Path(dir_okay=False, allow_dash=True),
              help="perf.data file to write; '-' streams pipe-mode data to stdout "
                   "(COMMAND's stdout then goes to stderr).")
@click.option("-i", "--input", "spec_files", multiple=True, metavar="FILE",
              type=options.Path(allow_dash=True),  # (a directory: bad input, exit 1)
              help="Read more specs from FILE, one a line ('#' comments). Repeatable.")
@provider_set("Record")
@click.option("--duration", type=click.FloatRange(min=0, min_open=True), metavar="SECONDS",
              help="Stop after SECONDS (COMMAND, if still running, gets SIGTERM, and SIGKILL "
                   "5 s later; perf records until COMMAND has exited).")
@click.option("--perf", "perf_path", metavar="PATH", help="The perf executable (default: PATH).")
@click.option("--perf-arg", "perf_args", multiple=True, metavar="ARG",
              help="Pass ARG to perf record (repeatable), e.g. --perf-arg=--mmap-flush=1.")
@click.option("--buffer-size", metavar="SIZE",
              help="Per-CPU ring buffer (perf -m): pages (a power of two) or a size like 16M.")
@click.option("--decode", is_flag=True,
              help="Stream decoded JSON to stdout while recording (perf -o - into "
                   "'ehtool decode -'); COMMAND's stdout then goes to stderr.")
@click.option("--decode-arg", "decode_args", multiple=True, metavar="ARG",
              help="Pass ARG to 'ehtool decode' with --decode (repeatable), "
                   "e.g. --decode-arg=--format=jsonl.")
@click.option("--ready-timeout", type=click.FloatRange(min=0, min_open=True), default=60.0,
              show_default=True, metavar="SECONDS",
              help="How long perf may take to enable its events.")
@click.option("-q", "--quiet", is_flag=True, help="No status lines, only warnings and errors.")
@click.option("-v", "--verbose", is_flag=True, help="Show perf's command line and its messages.")
@click.pass_context
def record(ctx: click.Context, specs: tuple[str, ...], output: str,
           spec_files: tuple[str, ...], provider: str | None, levels: str, keywords: str,
           group: str | None, duration: float | None, perf_path: str | None,
           perf_args: tuple[str, ...], buffer_size: str | None, decode: bool,
           decode_args: tuple[str, ...], ready_timeout: float, quiet: bool,
           verbose: bool) -> None:
    """Record tracepoints system-wide with perf into a perf.data file (or a live
    JSON stream), optionally while COMMAND runs.

    \b
    A SPEC is one of:
      MyProvider_L5K1           EventHeader tracepoint (user_events: prefix optional)
      'MyEvent u32 a; u64 b'    user_events definition ('MyEvent ;' for no fields)
      :sched:sched_switch       existing tracepoint (':Name' = user_events:Name)
    Missing user_events are registered by ehtool and held until the end.

    perf starts with its events disabled; COMMAND starts (or "recording, Ctrl-C
    to stop" is printed) only after perf confirms it has enabled them, so
    nothing written at start is lost. Ctrl-C, SIGTERM, --duration or COMMAND's
    exit stop perf cleanly (SIGINT, escalating after a timeout). The exit status
    is COMMAND's (128+N if a signal N killed it), else 0 (also when a signal
    stopped the recording; 128+N when it came before perf was ready); 1 when
    the output cannot be written, 4 when the kernel refuses perf (permissions),
    5 when perf fails; a decoder (--decode) that failed gives its status.
    Lost events (a ring buffer overrun) are reported at the end.

    With -o - or --decode, perf passes each event on as it happens
    (--no-buffering), ehtool relays and counts the stream, and COMMAND's
    stdout goes to stderr.

    \b
    Examples:
      ehtool record -o app.data MyProv_L5K1 -- ./app
      ehtool record --duration 2 :sched:sched_switch
      ehtool record --provider MyProv --level 1-5 --keyword 0x1,0x2 --decode
    """
    from ehtool.errors import UsageError
    from ehtool.record.specs import collect_specs
    from ehtool.record.supervisor import READER_GONE, Recorder, RecordOptions

    command = ctx.meta.get("ehtool_record_command", [])
    if "ehtool_record_command" in ctx.meta and not command:
        raise UsageError("nothing after '--': give a COMMAND or drop the '--'")
    require_provider(provider)
    if decode_args and not decode:
        raise click.UsageError("--decode-arg needs --decode (it is passed to that decoder)")
    parsed = collect_specs(specs, spec_files, provider, levels, keywords, group)
    if not parsed:
        raise UsageError("nothing to record: give a SPEC, -i FILE or --provider")
    if duration is not None and not math.isfinite(duration):
        raise click.BadParameter(f"{duration} is not a number of seconds",
                                 param_hint="--duration")
    if decode_args:
        _check_decode_args(decode_args)

    def say(message: str) -> None:
        if not quiet:
            click.echo(f"ehtool: {message}", err=True)

    def warn(message: str) -> None:
        click.echo(f"ehtool: warning: {message}", err=True)

    def info(message: str) -> None:
        if verbose:
            click.echo(f"ehtool: {message}", err=True)

    options = RecordOptions(
        specs=parsed, output=output, command=command, duration=duration,
        perf=perf_path, perf_args=perf_args, buffer_size=buffer_size, decode=decode,
        decode_args=decode_args, ready_timeout=ready_timeout,
        announce=say, warn=warn, info=info,
    )
    result = Recorder(options).run()
    if verbose and result.perf_stderr.strip():
        click.echo(result.perf_stderr.rstrip(), err=True)
    for name in result.registered:
        info(f"registered and released {name}")
    if result.stats is not None and result.stop_reason != READER_GONE:
        where = "streamed" if decode or output == "-" else f"wrote {output}:"
        say(f"{where} {result.stats.samples} samples, {result.stats.lost} lost")
    sys.exit(result.exit_status)


def _check_decode_args(args: tuple[str, ...]) -> None:
    """UsageError naming --decode-arg for arguments ``ehtool decode`` refuses (found
    before perf starts, not as perf's death by SIGPIPE when the decoder exits at once)."""
    from ehtool.cli.decode import decode as decode_command

    try:
        decode_command.make_context("ehtool decode", [*args, "-"])
    except click.UsageError as exc:
        raise click.BadParameter(" ".join(exc.format_message().split()),
                                 param_hint="--decode-arg") from None
