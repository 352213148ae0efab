"""``ehtool decode``: perf.data -> JSON in perf-decode's shape."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, BinaryIO

import click

from ehtool.cli import options
from ehtool.cli.completion import complete_meta, complete_names
from ehtool.cli.options import converted
from ehtool.cli.write_args import LEVELS, named_int, ranged_int

if TYPE_CHECKING:
    from collections.abc import Callable
    from contextlib import AbstractContextManager

_META_HELP = (
    "Meta keys to print: 'default', 'all', 'none' or a comma list, with +KEY/-KEY edits "
    "('+comm' adds to the default set, 'none,+pid' starts from nothing). Keys: time, cpu, "
    "pid, tid, comm, id, version, level, keyword, opcode, tag, activity, relatedActivity, "
    "provider, event, options, flags, common; with --format jsonl also file (the input, in "
    "its default set)."
)


def _u32_ids(ctx: click.Context, param: click.Parameter, values: tuple[int, ...]
             ) -> tuple[int, ...]:
    """--pid/--tid values as the samples hold them (u32: -1 is 4294967295); others
    outside that range are a usage error (no sample could have them)."""
    for v in values:
        if not -1 <= v <= 0xFFFFFFFF:
            raise click.BadParameter(f"{v} is not a {param.name[:-1]} (0 to 4294967295, "
                                     "or -1)")
    return tuple(v & 0xFFFFFFFF for v in values)


@click.command()
@click.argument("inputs", nargs=-1, metavar="[FILE]...", type=options.Path(allow_dash=True))
@click.option("-o", "--output", metavar="FILE", type=options.Path(allow_dash=True),
              help="Write to FILE instead of stdout ('-': stdout). A regular file is replaced "
                   "atomically (complete or not at all, keeping its mode); a FIFO or device "
                   "is written through.")
@click.option("--sort", "order", type=click.Choice(["time", "file"]), default="time",
              show_default=True,
              help="time: perf-decode's order (by time within each FINISHED_ROUND); "
                   "file: record order.")
@click.option("--format", "out_format",
              type=click.Choice(["json", "jsonl", "text", "parquet"]), default="json",
              show_default=True,
              help="json: one document {FILE: [events]}; jsonl: one event per line (best "
                   "for jq and pipes); text: one line per event in perf script's spirit, "
                   "for people and grep; parquet: one row per event, typed columns (needs "
                   "ehtool[analysis]; see README 'Analysis').")
@click.option("--split-by-event", "split_dir", metavar="DIR", type=options.Path(file_okay=False),
              help="With --format parquet: one dataset per event name, DIR/NAME/part-N.parquet, "
                   "the fields as real typed columns (DIR is created whole at the end, or not "
                   "at all; it must not exist or be empty).")
@click.option("--compact", is_flag=True,
              help="No spaces (perf-decode's unit-test style) instead of perf-decode's spacing.")
@click.option("--pretty", is_flag=True,
              help="Indented JSON, one member per line, for reading (json format only).")
@click.option("--field-tags/--no-field-tags", default=True, show_default=True,
              help="Append ';tag=0xN' to EventHeader field names that carry a tag.")
@click.option("--decimal-pids", is_flag=True,
              help="tracefs pid_t fields (prev_pid, next_pid...) as decimal numbers, in "
                   "json, jsonl, text and filters; perf-decode shows them as hex strings "
                   "(\"0xB6C\").")
@click.option("--time", "time_mode", type=click.Choice(["perf", "iso", "ns", "rel", "delta"]),
              default="perf", show_default=True,
              help="meta time: perf: perf-decode's (a UTC string with clock data, else "
                   "seconds); iso: the same, warning when a file has no clock data; ns: "
                   "integer nanoseconds (UTC epoch with clock data); rel: seconds since the "
                   "first event printed; delta: seconds since the previous one.")
@click.option("--fields-key", metavar="KEY",
              help="Nest each event's fields under KEY ({\"n\": ..., \"KEY\": {fields}, "
                   "\"meta\": {...}}), so that a field named n or meta cannot collide with "
                   "those keys. Default: perf-decode's flat members.")
@click.option("--bom/--no-bom", default=False, show_default=True,
              help="Start with a UTF-8 BOM, as perf-decode does when stdout is not a terminal.")
@click.option("--meta", "meta_spec", default="default", show_default=True, metavar="LIST",
              help=_META_HELP, shell_complete=complete_meta)
@click.option("--input-format", type=click.Choice(["perf", "dat"]), default="perf",
              show_default=True,
              help="perf: perf.data (file or pipe mode); dat: length-prefixed raw EventHeader "
                   "events (EventHeaderInterceptor .dat files), to json or jsonl; they have "
                   "no time, cpu, pid, tid or comm, so --pid, --tid, --cpu, --comm, --since "
                   "and --until are refused, the other filters apply as for perf.data.")
@click.option("--nonsample", is_flag=True,
              help="Also print COMM, FORK, EXIT, LOST and LOST_SAMPLES records as "
                   "'perf:comm'... events (provider perf, no level or keyword: the filters "
                   "take them as such).")
@click.option("--provider", "providers", multiple=True, metavar="GLOB",
              help="Only events of this provider (or tracepoint system). Repeatable.")
@click.option("--event", "events", multiple=True, metavar="GLOB",
              help="Only events whose name (or 'provider:name') matches. Repeatable.")
@click.option("--level", metavar="MAX", shell_complete=complete_names(list(LEVELS)),
              callback=converted(lambda v: named_int(v, LEVELS, "level", 0, 255)),
              help="Only EventHeader events with level <= MAX: 0-255 or critical (1), "
                   "error, warning, info, verbose (5).")
@click.option("--keyword", metavar="MASK",
              callback=converted(lambda v: ranged_int(v, 0, (1 << 64) - 1)),
              help="Only EventHeader events whose keyword has a bit of MASK (hex 0x.. or "
                   "decimal).")
@click.option("--pid", "pids", multiple=True, type=int, callback=_u32_ids,
              help="Only this process (-1: a task that was exiting, as perf script shows "
                   "it; 4294967295 in the output). Repeatable.")
@click.option("--tid", "tids", multiple=True, type=int, callback=_u32_ids,
              help="Only this thread (-1 as for --pid). Repeatable.")
@click.option("--cpu", "cpus", multiple=True, type=click.IntRange(0, 0xFFFFFFFF),
              help="Only this CPU. Repeatable.")
@click.option("--comm", "comms", multiple=True, metavar="GLOB",
              help="Only threads whose name (from COMM records) matches. Repeatable.")
@click.option("--since", metavar="WHEN",
              help="Only events at or after WHEN: seconds after the input's first sample "
                   "(1.5, 250ms) or a UTC time (2024-03-28T00:45:13Z).")
@click.option("--until", metavar="WHEN", help="Only events at or before WHEN (as --since).")
@click.option("--filter", "expr", metavar="EXPR",
              help="Only events for which EXPR holds, e.g. 'level <= 3 && Field2 > 40' or "
                   "'comm ~ \"nginx*\"' (operators == != < <= > >= ~ & && || ! and "
                   "parentheses; names are fields, then meta keys, every meta key incl. "
                   "comm, meta.KEY for the meta key itself, `any name` in backquotes; see "
                   "ehtool-decode(1)). A name "
                   "that no event has is reported at the end.")
@click.option("--formats-from-host", is_flag=True,
              help="For a file that lost its tracepoint formats (cut before its feature "
                   "sections): use the running kernel's formats of the same ids (right only "
                   "on the machine and boot that recorded it).")
@click.option("--strict-filter", is_flag=True,
              help="A --filter name that no event of the input has is an error (exit 2).")
@click.option("-j", "--jobs", type=click.IntRange(1, options.MAX_JOBS), metavar="N",
              help="Decode with N processes (default: the CPUs available to ehtool): a big "
                   "file is split at FINISHED_ROUND points, several files are decoded side "
                   "by side; the output is the same bytes as with -j 1. (--split-by-event "
                   "runs in one process.)")
@click.option("-q", "--quiet", is_flag=True,
              help="No warnings and no progress bar on stderr, only errors. (The progress "
                   "bar appears only when stderr is a terminal and decoding takes over a "
                   "second.)")
def decode(inputs: tuple[str, ...], output: str | None, order: str, out_format: str,
           split_dir: str | None,
           compact: bool, pretty: bool, field_tags: bool, decimal_pids: bool,
           time_mode: str, fields_key: str | None, bom: bool,
           meta_spec: str,
           input_format: str,
           nonsample: bool, providers: tuple[str, ...], events: tuple[str, ...],
           level: int | None, keyword: int | None, pids: tuple[int, ...],
           tids: tuple[int, ...], cpus: tuple[int, ...], comms: tuple[str, ...],
           since: str | None, until: str | None, expr: str | None,
           formats_from_host: bool, strict_filter: bool, jobs: int | None,
           quiet: bool) -> None:
    """Decode perf.data FILEs ('-' reads a pipe-mode stream from stdin; a directory, the
    perf.data files under it; without FILE: ./perf.data, as perf does) into JSON that
    matches Microsoft's perf-decode: EventHeader events with their fields and meta,
    other tracepoints from their tracefs formats. Compressed recordings (perf record
    -z), directory recordings (perf record --threads: one input) and older pipe
    layouts are read too.

    Input errors (missing or truncated file, corrupt record) are reported on
    stderr after every complete record was written; the JSON stays valid and the
    exit status is 1.

    \b
    Examples:
      ehtool decode perf.data > out.json
      ehtool decode --format jsonl perf.data | jq -c 'select(.meta.level <= 3)'
      perf record -k monotonic -a -e sched:sched_switch -o - | ehtool decode -
      ehtool decode --compact --no-field-tags -o out.json perf.data
      ehtool decode --pretty --provider MyProvider --level 3 perf.data | less
      ehtool decode --format parquet -o fleet.parquet traces/
    """
    from ehtool.allocator import fewer_collections, keep_freed_memory
    from ehtool.cli.inputs import expand
    from ehtool.cli.signals import exit_on_signals
    from ehtool.decode.filters import Selection
    from ehtool.decode.options import DecodeOptions, available_cpus
    from ehtool.errors import EXIT_INPUT, output_error
    from ehtool.render.meta_keys import parse_meta
    from ehtool.render.style import JsonStyle

    keep_freed_memory()
    click.get_current_context().call_on_close(fewer_collections())
    inputs = expand(inputs or ("perf.data",))
    _refuse_combinations(click.get_current_context())
    _refuse_output_over_input(output, inputs)
    if inputs.count("-") > 1:  # (the second would find it read: 'no PERFILE2 magic')
        raise click.UsageError("standard input ('-') can be read once: give it once")
    if output in (None, "-") and split_dir is None and sys.stdout is None:
        raise click.UsageError("standard output is closed; write to a file with -o FILE")
    if out_format == "parquet":
        with exit_on_signals():  # as above; the parts' workers are ended too
            _parquet(inputs, output, split_dir, jobs or available_cpus(),
                     providers or events or comms or pids or tids or cpus or expr or since
                     or until or level is not None or keyword is not None, quiet)
        return
    try:
        meta = parse_meta(meta_spec, lines=out_format == "jsonl")
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--meta") from None
    try:
        selection = Selection(providers=providers, events=events, level=level,
                              keyword=keyword, pids=pids, tids=tids, cpus=cpus, comms=comms,
                              since=since, until=until, expr=expr,
                              sample_meta=input_format == "perf", decimal_pids=decimal_pids)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None

    def warn(message: str) -> None:
        if not quiet:
            click.echo(f"ehtool: warning: {message}", err=True)

    if out_format == "text":
        with exit_on_signals():  # SIGTERM/SIGHUP: exit 128+N, -o's temporary file removed
            failed = _text(inputs, output, selection if selection.active else None,
                           time_mode, order, decimal_pids, warn,
                           lambda failed: _strict(selection, strict_filter, failed, warn))
        _report_selection(selection, strict_filter, warn, failed)
        if failed:
            sys.exit(EXIT_INPUT)
        return
    bar = None
    if not quiet and sys.stderr is not None and sys.stderr.isatty() and not _same_terminal(
            output):
        from ehtool.cli.progress import ProgressBar

        bar = ProgressBar(sys.stderr, "decoding")
    options = DecodeOptions(
        style=JsonStyle(space=not compact, field_tags=field_tags, decimal_pids=decimal_pids),
        order=order,
        meta=meta,
        jsonl=out_format == "jsonl",
        pretty=pretty,
        bom=bom,
        input_format=input_format,
        nonsample=nonsample,
        formats_from_host=formats_from_host,
        time=time_mode,
        fields_key=fields_key,
        selection=selection if selection.active else None,
        jobs=jobs or available_cpus(),
        warn=warn,
        progress=bar,
    )
    try:
        with exit_on_signals():  # SIGTERM/SIGHUP: exit 128+N, -o's temporary file removed
            errors = _decode(inputs, output, options,
                             lambda errors: _strict(selection, strict_filter, bool(errors), warn))
    except BrokenPipeError:
        raise
    except OSError as exc:  # ENOSPC, EFBIG, EIO... on the output
        raise output_error(exc) from None
    finally:
        if bar is not None:
            bar.close()
    for err in errors:
        click.echo(f"ehtool: error: {err}", err=True)
    _report_selection(selection, strict_filter, warn, bool(errors))
    if errors:
        sys.exit(EXIT_INPUT)


def _refuse_output_over_input(output: str | None, inputs: tuple[str, ...]) -> None:
    """A usage error when ``-o`` FILE is one of the inputs (it would replace the recording
    with its own decoding)."""
    import os

    if output in (None, "-") or not os.path.exists(output):
        return
    for path in inputs:
        if path != "-":
            try:
                same = os.path.samefile(output, path)
            except OSError:
                continue
            if same:
                raise click.UsageError(f"-o {output} is the input {path}: it would be "
                                       "replaced by its decoding; write to another file")


def _report_selection(selection: Any, strict_filter: bool, warn: Any, failed: bool) -> None:
    """After the decode: --since/--until warnings, and the --filter names no event had
    (:func:`_strict` made those an error); not those when an input failed (its events
    were not all seen: the input's error says what happened)."""
    if failed:
        return
    for message in selection.time_warnings():
        warn(message)
    unknown = _unknown_names(selection)
    if unknown and not strict_filter:
        warn(f"--filter: {unknown} (comparisons with it are false)")


def _unknown_names(selection: Any) -> str:
    """``no event of the input has 'x', 'y'`` for the --filter names no event had."""
    unknown = selection.unknown_names
    if not unknown:
        return ""
    which = "no event the other options kept" if selection.narrowed else "no event of the input"
    return f"{which} has {', '.join(repr(n) for n in unknown)}"


def _strict(selection: Any, strict_filter: bool, failed: bool, warn: Any) -> None:
    """With --strict-filter, a usage error for the --filter names no event had, raised
    before ``-o`` FILE is replaced (it is left as it was), after the --since/--until
    warnings (which may say why no event was kept)."""
    unknown = _unknown_names(selection) if strict_filter and not failed else ""
    if unknown:
        for message in selection.time_warnings():
            warn(message)
        raise click.UsageError(f"--filter: {unknown}")


def _decode(inputs: tuple[str, ...], output: str | None, options: Any,
            check: Callable[[list], None]) -> list:
    """decode_to stdout, or to ``-o`` FILE (see :func:`_output`); ``check(errors)`` may
    raise before FILE is replaced."""
    from ehtool.decode.pipeline import decode_to

    if output is None or output == "-":
        errors = decode_to(sys.stdout.buffer, inputs, options)
        sys.stdout.buffer.flush()
        check(errors)
        return errors
    with _output(inputs, output) as out:
        errors = decode_to(out, inputs, options)
        check(errors)
        return errors


def _output(inputs: tuple[str, ...], output: str | None) -> AbstractContextManager[BinaryIO]:
    """Where the events go: ``-o`` FILE replaced atomically (stdout for None or '-'), or,
    when no input could be opened at all, a scratch buffer: FILE is left as it was and
    only the inputs' errors are reported."""
    import contextlib
    import io

    from ehtool.decode.atomic import atomic_output

    if output not in (None, "-") and not any(_openable(path) for path in inputs):
        return contextlib.nullcontext(io.BytesIO())
    return atomic_output(output or "-")


def _first_input_error(inputs: tuple[str, ...]) -> None:
    """Raise the first input's error when no input can be opened (nothing is written)."""
    if any(_openable(path) for path in inputs):
        return
    from ehtool.events import open as open_events

    for path in inputs:
        with open_events(path):
            pass


def _openable(path: str) -> bool:
    """Whether ``path`` can be read: a stream is not opened (a FIFO opened twice would
    lose its writer), a regular file is, and a directory recording's ``data`` file."""
    import os
    import stat

    from ehtool.perfdata.directory import file_to_open
    from ehtool.perfdata.finding import read_once

    if read_once(path):
        return path == "-" or os.access(path, os.R_OK)
    try:
        fd = os.open(file_to_open(path), os.O_RDONLY)
    except OSError:
        return False
    try:
        return stat.S_ISREG(os.fstat(fd).st_mode)
    finally:
        os.close(fd)


#: the options an output format, or .dat input, does not read: given, they are a usage
#: error naming both, never ignored in silence (others are refused with their reason);
#: (name, value): but for the value the format does anyway
_UNREAD = {
    "text": ("compact", "pretty", "field_tags", "bom", "meta_spec", "nonsample",
             "formats_from_host", ("jobs", 1)),
    "parquet": ("compact", "pretty", "field_tags", "decimal_pids", "bom", "meta_spec",
                "nonsample", "formats_from_host", "order", "strict_filter"),
    "dat": ("decimal_pids", "meta_spec", "nonsample", "formats_from_host", "order",
            "time_mode"),
}


def _refuse_combinations(ctx: click.Context) -> None:
    """Usage errors for options that do not go together, with the reason; then for an
    option of :data:`_UNREAD` given a value other than its default (which the format
    would not have shown)."""
    from click.core import ParameterSource

    p = ctx.params
    out_format, input_format, fields_key = p["out_format"], p["input_format"], p["fields_key"]
    if fields_key is not None and out_format in ("text", "parquet"):
        raise click.UsageError(f"--fields-key applies to json and jsonl ({out_format} keeps "
                               "fields and meta apart in its own way)")
    if p["time_mode"] != "perf" and out_format == "parquet":
        raise click.UsageError("--time applies to json, jsonl and text (Parquet's time "
                               "column is a timestamp; session_time has the nanoseconds)")
    if fields_key in ("n", "meta"):
        raise click.BadParameter(f"{fields_key!r} is a key of every event",
                                 param_hint="--fields-key")
    if p["split_dir"] is not None and out_format != "parquet":
        raise click.UsageError("--split-by-event writes Parquet: add --format parquet")
    if input_format == "dat" and out_format in ("text", "parquet"):
        raise click.UsageError(f"--format {out_format} reads perf.data: --input-format dat "
                               "writes json or jsonl")
    if p["pretty"] and out_format == "jsonl":
        raise click.UsageError("--pretty cannot be used with --format jsonl (one event per line)")
    if p["pretty"] and p["compact"]:
        raise click.UsageError("--compact and --pretty are two layouts: give one")
    for key, what in ((out_format, f"--format {out_format}"),
                      (input_format, f"--input-format {input_format}")):
        for entry in _UNREAD.get(key, ()):
            name, accepted = entry if isinstance(entry, tuple) else (entry, None)
            if ctx.get_parameter_source(name) in (None, ParameterSource.DEFAULT):
                continue
            param = next(p for p in ctx.command.params if p.name == name)
            if ctx.params[name] not in (param.get_default(ctx), accepted):
                given = " / ".join(f"'{opt}'" for opt in param.opts + param.secondary_opts)
                raise click.UsageError(f"{given} does not apply to {what}")
    if p["strict_filter"] and p["expr"] is None:
        raise click.UsageError("--strict-filter checks the names of --filter EXPR: add "
                               "--filter")


def _parquet(inputs: tuple[str, ...], output: str | None, split_dir: str | None, jobs: int,
             filtered: Any, quiet: bool) -> None:
    """``--format parquet``: the rows of ``ehtool.analysis.arrow`` (on ``jobs`` processes),
    to -o FILE or a pipe, or (``--split-by-event``) a directory of datasets per event
    (what it holds said on stderr, unless ``quiet``)."""
    from ehtool.analysis.arrow import require, without_pandas
    from ehtool.analysis.parallel import write_parquet
    from ehtool.cli.problems import report
    from ehtool.decode.atomic import atomic_directory, atomic_output

    problems: dict[str, list] = {}  # each input's errors: reported after the others' rows

    if filtered:
        raise click.UsageError("filters apply to json, jsonl and text; select Parquet rows with "
                               "SQL ('ehtool query')")
    if split_dir is not None:
        if output is not None:
            raise click.UsageError("--split-by-event writes DIR: leave out -o")
        require("pyarrow.parquet")
        from ehtool.analysis.by_event import write_by_event

        _first_input_error(inputs)  # when none opens, DIR is not created
        with atomic_directory(split_dir) as tmp:
            rows = write_by_event(inputs, tmp, problems)
        if not quiet:
            click.echo(f"ehtool: {sum(rows.values())} events of {len(rows)} names in "
                       f"{split_dir.rstrip('/') or '/'}/", err=True)
        report(inputs, [problems])
        return
    if (output is None or output == "-") and sys.stdout.isatty():
        raise click.UsageError("Parquet is binary: write it with -o FILE or to a pipe")
    require("pyarrow.parquet")
    without_pandas()
    if output is None or output == "-":
        write_parquet(list(inputs), sys.stdout.buffer, jobs, problems)
    else:
        _first_input_error(inputs)  # when none opens, FILE is left as it was
        with atomic_output(output) as out:
            write_parquet(list(inputs), out, jobs, problems)
    report(inputs, [problems])


def _same_terminal(output: str | None) -> bool:
    """True when the events go to the terminal the progress bar would be drawn on (it
    would be drawn over them)."""
    import os

    if output is not None and output != "-":
        return False
    try:
        return sys.stdout.isatty() and os.path.samestat(os.fstat(sys.stdout.fileno()),
                                                        os.fstat(sys.stderr.fileno()))
    except (OSError, ValueError, AttributeError):
        return False


def _text(inputs: tuple[str, ...], output: str | None, selection: Any, time_mode: str,
          order: str, decimal_pids: bool, warn: Any, check: Callable[[bool], None]) -> bool:
    """``--format text``: a line per event from the typed layer, the filters applied as
    for JSON; True when an input failed (its error is on stderr); ``check(failed)`` may
    raise before ``-o`` FILE is replaced."""
    from ehtool.errors import EhtoolError
    from ehtool.events import open as open_events
    from ehtool.render.text import event_line, time_texts
    from ehtool.render.times import no_clock_warning

    failed = False
    with _output(inputs, output) as out:
        for path in inputs:
            try:
                with open_events(path, order=order, decimal_pids=decimal_pids) as events:
                    clock = events.perf.session.clock
                    if time_mode == "iso" and not clock.utc_known:
                        warn(no_clock_warning(path))
                    shown = events if selection is None else events.filtered(selection)
                    when = time_texts(time_mode, clock)
                    for ev in shown:
                        line = event_line(ev, when)
                        out.write(line.encode("utf-8", "surrogateescape") + b"\n")
            except EhtoolError as exc:
                click.echo(f"ehtool: error: {exc}", err=True)
                failed = True
        check(failed)
    return failed
