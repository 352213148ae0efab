"""Options shared by several commands, defined once (as pip-tools shares its options)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable)
#: -j's largest N (each is a process; many more than the CPUs only cost: -j 10000
#: forked 122 processes for 1,520 small files, 20 times -j 1's time on 2 CPUs)
MAX_JOBS = 1024


def converted(convert: Callable[[str], object]) -> Callable:
    """A click callback turning an option's text into its value with ``convert`` (one of
    ``ehtool.cli.write_args``'s, which the click-free fast path uses too); its ValueError
    becomes click's usage error."""

    def callback(ctx: click.Context, param: click.Parameter, value: str | None) -> object:
        if value is None:
            return None
        try:
            return convert(value)
        except ValueError as exc:
            raise click.BadParameter(str(exc)) from None
    return callback


def provider_set(verb: str) -> Callable[[F], F]:
    """``--provider``, ``--level``, ``--keyword``, ``--group``: the EventHeader tracepoints
    PROVIDER_L<level>K<keyword>[G<group>] for every level and keyword (``register``,
    ``record``); ``verb`` says what the command does with them."""
    options = [
        click.option("--provider", metavar="NAME",
                     help=f"{verb} PROVIDER_L<level>K<keyword> for every --level and "
                          "--keyword."),
        click.option("--level", "levels", default="1-5", show_default=True, metavar="LIST",
                     help="Levels for --provider: N, N-M, comma separated (decimal or 0x "
                          "hex)."),
        click.option("--keyword", "keywords", default="0x1", show_default=True,
                     metavar="LIST",
                     help="Keywords for --provider: comma separated, hex (0x) or decimal."),
        click.option("--group", metavar="NAME",
                     help="Provider group for --provider (the G<group> name suffix)."),
    ]

    def decorate(f: F) -> F:
        for option in reversed(options):
            f = option(f)
        return f

    return decorate


def require_provider(provider: str | None) -> None:
    """A usage error when --level or --keyword is given without --provider (they choose
    its tracepoints: alone, they would be ignored)."""
    from click.core import ParameterSource

    if provider is not None:
        return
    ctx = click.get_current_context()
    for name, option in (("levels", "--level"), ("keywords", "--keyword")):
        if ctx.get_parameter_source(name) not in (ParameterSource.DEFAULT, None):
            raise click.UsageError(f"{option} needs --provider (it chooses that provider's "
                                   "tracepoints)")


class Path(click.Path):
    """``click.Path`` that refuses an empty text (``-o ''`` is a slip of the shell, never
    the current directory nor standard output), and leaves a file that cannot be read
    to the command: that is bad input (exit 1), not a usage error."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("readable", False)
        super().__init__(**kwargs)

    def convert(self, value: object, param: click.Parameter | None,
                ctx: click.Context | None) -> object:
        if value == "":
            self.fail("an empty path", param, ctx)
        return super().convert(value, param, ctx)


def require_stdout(what: str) -> None:
    """A usage error when standard output is closed (``>&-``): ``what`` is written there,
    and would be lost without a word."""
    import sys

    if sys.stdout is None:
        raise click.UsageError(f"standard output is closed; {what} written there")
