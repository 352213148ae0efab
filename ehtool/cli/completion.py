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


# -- fish: click's own fish script does not match its response format (click 8.4
# splits each line on a literal newline), so ehtool ships one that does, with a
# response of one tab-separated line per item whatever the click version.

_FISH_SOURCE = """\
function %(complete_func)s
    set -l response (env %(complete_var)s=fish_complete COMP_WORDS=(commandline -cp) \\
        COMP_CWORD=(commandline -t) %(prog_name)s)
    for line in $response
        set -l item (string split -m 2 \\t -- $line)
        switch $item[1]
            case dir
                __fish_complete_directories $item[2]
            case file
                __fish_complete_path $item[2]
            case plain
                if test "$item[3]" != _
                    printf '%%s\\t%%s\\n' $item[2] $item[3]
                else
                    printf '%%s\\n' $item[2]
                end
        end
    end
end

complete --no-files --command %(prog_name)s --arguments "(%(complete_func)s)"
"""


def install() -> None:
    """Register ehtool's fish completion class with click (done only when completing
    or generating the scripts, so ordinary runs do not import click's completion)."""
    from click.shell_completion import FishComplete, add_completion_class

    class EhtoolFishComplete(FishComplete):
        source_template = _FISH_SOURCE

        def format_completion(self, item: CompletionItem) -> str:
            def flat(text: str) -> str:
                return " ".join(text.split())

            return f"{item.type}\t{flat(item.value)}\t{flat(item.help or '') or '_'}"

    add_completion_class(EhtoolFishComplete, "fish")
