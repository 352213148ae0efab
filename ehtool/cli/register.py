"""``ehtool register``: pre-register user_events tracepoints, hold or persist them."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from ehtool.cli import options
from ehtool.cli.options import provider_set

if TYPE_CHECKING:
    from ehtool.record.specs import TracepointSpec


@click.command()
@click.argument("definitions", nargs=-1, metavar="[DEFINITION...]")
@click.option("-i", "--input", "files", multiple=True, metavar="FILE",
              type=options.Path(allow_dash=True),  # (a directory: bad input, exit 1)
              help="Read definitions from FILE, one a line ('#' comments and blank lines "
                   "skipped). Repeatable.")
@provider_set("Register")
@click.option("--persist", is_flag=True,
              help="Register with USER_EVENT_REG_PERSIST: the events outlive this process "
                   "until 'ehtool unregister' (needs CAP_PERFMON, Linux 6.7+). Implies "
                   "--no-wait unless --wait is given.")
@click.option("--wait/--no-wait", default=None,
              help="Hold the registrations until SIGINT/SIGTERM (the default without "
                   "--persist), or exit at once.")
def register(definitions: tuple[str, ...], files: tuple[str, ...], provider: str | None,
             levels: str, keywords: str, group: str | None, persist: bool,
             wait: bool | None) -> None:
    """Register user_events tracepoints so that perf can enable them before the
    program that writes them starts.

    A DEFINITION without whitespace is an EventHeader tracepoint name
    (MyProvider_L5K1, MyProvider_L5K3ffGmygroup) and gets the standard
    EventHeader fields; one with whitespace is a full user_events definition
    ('MyEvent u32 count; char[16] name', 'MyEvent ;' for no fields). Every
    definition is checked before any is registered, also against the events the
    kernel already has; when one still fails, none is left registered (with
    --persist, the events this call created are deleted again).

    With --wait (the default) the registered tracepoint names are printed one a
    line on stdout, then ehtool holds them until SIGINT or SIGTERM, unregisters
    and exits 0.

    \b
    Examples:
      ehtool register MyProvider_L5K1 'MyEvent u32 count; char[16] name' &
      ehtool register --provider MyProvider --level 1-5 --keyword 0x1,0x2
      ehtool register --persist MyProvider_L4K1
    """
    from ehtool.errors import UsageError
    from ehtool.kernel.registry import register_all, stop_signals
    from ehtool.record.specs import collect_specs

    options.require_provider(provider)
    specs = collect_specs(definitions, files, provider, levels, keywords, group)
    if not specs:
        raise UsageError("nothing to register: give DEFINITIONs, -i FILE or --provider")
    for spec in specs:
        _check_spec(spec)
    if wait is None:
        wait = not persist

    with stop_signals() as wait_for_signal, \
            register_all([s.command for s in specs], persist=persist) as regs:
        for reg in regs:
            click.echo(reg.name)
        click.get_text_stream("stdout").flush()
        if wait:
            wait_for_signal()


def _check_spec(spec: TracepointSpec) -> None:
    """UsageError when ``spec`` cannot be registered as given (see names.parse)."""
    from ehtool.errors import UsageError
    from ehtool.kernel.registry import check_definition
    from ehtool.record.specs import SpecKind

    if spec.kind is SpecKind.IDENTIFIER:
        raise UsageError(f"{spec.source}: {spec.tracepoint!r} names an existing tracepoint "
                         "(leading ':'); register takes definitions")
    spec.check_registrable()
    check_definition(spec.command, spec.source)
