"""``ehtool list``: the user_events the kernel knows."""

from __future__ import annotations

import click


@click.command("list")
@click.option("--json", "as_json", is_flag=True, help="One JSON array for scripts.")
@click.option("--enabled", is_flag=True, help="Only events that a session has enabled.")
def list_events(as_json: bool, enabled: bool) -> None:
    """List the user_events tracepoints registered in the kernel, with their
    definitions and who has them enabled (ftrace, perf, other).

    \b
    Examples:
      ehtool list
      ehtool list --enabled --json
    """
    import json

    from ehtool.cli.options import require_stdout
    from ehtool.kernel.events import list_user_events

    require_stdout("the list is")
    events = [e for e in list_user_events() if e["enabled"] or not enabled]
    if as_json:
        click.echo(json.dumps(events, indent=2))
        return
    for e in events:
        state = f"enabled by {','.join(e['used_by'])}" if e["enabled"] else "disabled"
        click.echo(f"{e['name']}\t{state}\t{e['definition']}")
