"""``ehtool unregister``: delete user_events tracepoints."""

from __future__ import annotations

import click

from ehtool.cli.completion import complete_user_events


@click.command()
@click.argument("names", nargs=-1, required=True, metavar="NAME...",
                shell_complete=complete_user_events)
def unregister(names: tuple[str, ...]) -> None:
    """Delete user_events tracepoints (persisted ones, or ones nothing holds any more).

    NAME may carry a 'user_events:' prefix. An event that a process still holds
    or a session has enabled is reported (with who uses it) and left alone.

    \b
    Examples:
      ehtool unregister MyProvider_L5K1
      ehtool list --json | jq -r '.[].name' | xargs ehtool unregister
    """
    from ehtool.errors import EXIT_KERNEL
    from ehtool.kernel.registry import delete

    clean = [n.removeprefix("user_events:") for n in names]
    errors = delete(clean)
    for err in errors:
        click.echo(f"ehtool: error: {err}", err=True)
    if errors:
        raise SystemExit(EXIT_KERNEL)
