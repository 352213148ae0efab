"""The ``ehtool`` click group, whose subcommands load lazily.

Only click is imported here. Each subcommand lives in its own module and is
imported when it runs (or when its help is shown), so shell completion stays fast.
"""

from __future__ import annotations

import importlib
import importlib.util
import os

import click

from ehtool import __version__
from ehtool.cli import see_help

#: subcommand name -> (module, attribute, one-line help shown in ``ehtool --help``)
COMMANDS: dict[str, tuple[str, str, str]] = {
    "decode": ("ehtool.cli.decode", "decode", "Decode perf.data files into perf-decode JSON."),
    "info": ("ehtool.cli.info", "info", "Show a perf.data file's header, features and counts."),
    "register": ("ehtool.cli.register", "register", "Register user_events tracepoints."),
    "unregister": ("ehtool.cli.unregister", "unregister", "Delete user_events tracepoints."),
    "list": ("ehtool.cli.list_events", "list_events", "List the user_events the kernel knows."),
    "write": ("ehtool.cli.write", "write", "Write one EventHeader event (or a batch)."),
    "record": ("ehtool.cli.record", "record", "Run a supervised perf record session."),
    "query": ("ehtool.cli.query", "query", "Run SQL over recordings (DuckDB)."),
}


class LazyGroup(click.Group):
    """A group that imports a subcommand's module only when it is needed."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [name for name, (module, _, _) in COMMANDS.items() if _available(module)]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        entry = COMMANDS.get(cmd_name)
        if entry is None or not _available(entry[0]):
            return None
        module, attr, _ = entry
        return getattr(importlib.import_module(module), attr)

    def resolve_command(self, ctx: click.Context, args: list[str]):
        name = args[0] if args else ""
        if args and self.get_command(ctx, name) is None and not name.startswith("-"):
            import difflib

            close = difflib.get_close_matches(name, self.list_commands(ctx), n=1)
            if close:
                ctx.fail(f"No such command {name!r}; did you mean {close[0]!r}?")
        return super().resolve_command(ctx, args)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, COMMANDS[name][2]) for name in self.list_commands(ctx)]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


def _available(module: str) -> bool:
    """True when the module's file exists (without importing it)."""
    return importlib.util.find_spec(module) is not None


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "-V", "--version", prog_name="ehtool")
def cli() -> None:
    """Register, write, record and decode Linux user_events tracepoints
    in the EventHeader format.

    \b
    Exit codes: 0 success, 1 bad input, 2 usage error, 3 event not enabled
    (write --require-enabled), 4 kernel interface error, 5 perf failed,
    128+N stopped by signal N.
    """


def run(args: list[str]) -> None:
    """Run the click group on ``args``, mapping click's own exceptions to exit codes and
    one-line messages (ehtool's errors, and a closed stdout, are left to
    :func:`ehtool.cli.main`: click's own ``main`` would turn EPIPE into exit 1)."""
    if "_EHTOOL_COMPLETE" in os.environ:  # a shell asks for completions
        from ehtool.cli.completion import install

        install()
        cli.main(args=args, prog_name="ehtool")
        return
    from ehtool.errors import UsageError

    ctx = None
    try:
        with cli.make_context("ehtool", list(args)) as ctx:
            cli.invoke(ctx)
    except UsageError as exc:  # found by a command, past click's checks: the same hint
        if ctx is not None and ctx.invoked_subcommand and "--help')" not in str(exc):
            exc.args = (see_help(str(exc), f"{ctx.command_path} {ctx.invoked_subcommand}"),)
        raise
    except click.exceptions.Abort:
        click.echo("ehtool: aborted", err=True)
        raise SystemExit(130) from None
    except click.ClickException as exc:
        ctx = getattr(exc, "ctx", None)
        if type(exc).__name__ == "NoArgsIsHelpError" and ctx is not None:
            click.echo(ctx.get_help())  # a bare command shows its help, as click 8.1 did
            raise SystemExit(0) from None
        click.echo(f"ehtool: error: {_one_line(exc)}", err=True)
        raise SystemExit(exc.exit_code) from None
    except click.exceptions.Exit as exc:
        raise SystemExit(exc.exit_code) from None


def _one_line(exc: click.ClickException) -> str:
    """click's message on one line, with where to find help for a usage error."""
    message = " ".join(exc.format_message().split())
    ctx = getattr(exc, "ctx", None)
    if isinstance(exc, click.UsageError) and ctx is not None:
        message = see_help(message, ctx.command_path)
    return message
