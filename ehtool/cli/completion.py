"""Shell-completion callbacks: tracepoint names straight from tracefs (cheap, silent)."""

from __future__ import annotations

import os

import click
from click.shell_completion import CompletionItem

_TRACEFS = ("/sys/kernel/tracing", "/sys/kernel/debug/tracing")


def _events_dir() -> str | None:
    for root in _TRACEFS:
        path = os.path.join(root, "events")
        if os.path.isdir(path):
            return path
    return None


def complete_user_events(ctx: click.Context, param: click.Parameter,
                         incomplete: str) -> list[CompletionItem]:
    """Registered user_events names."""
    events = _events_dir()
    try:
        names = os.listdir(os.path.join(events, "user_events")) if events else []
    except OSError:
        return []
    return [CompletionItem(n) for n in sorted(names) if n.startswith(incomplete)]


def complete_tracepoints(ctx: click.Context, param: click.Parameter,
                         incomplete: str) -> list[CompletionItem]:
    """``:system:event`` for existing tracepoints, user_events names as they are."""
    events = _events_dir()
    if events is None:
        return []
    out = []
    try:
        if incomplete.startswith(":"):
            system, _, _ = incomplete[1:].partition(":")
            if ":" not in incomplete[1:]:
                out = [f":{s}:" for s in sorted(os.listdir(events))
                       if os.path.isdir(os.path.join(events, s))]
            else:
                out = [f":{system}:{e}" for e in sorted(os.listdir(os.path.join(events, system)))]
        else:
            out = sorted(os.listdir(os.path.join(events, "user_events")))
    except OSError:
        return []
    return [CompletionItem(n, type="plain") for n in out if n.startswith(incomplete)]
