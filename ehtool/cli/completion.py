"""Shell-completion callbacks: tracepoint names straight from tracefs (cheap, silent)."""

from __future__ import annotations

import os

import click
from click.shell_completion import CompletionItem


def _events_dir() -> str | None:
    from ehtool.errors import KernelError
    from ehtool.kernel.tracefs import find_tracefs

    try:
        path = os.path.join(find_tracefs(), "events")
    except KernelError:
        return None
    return path if os.path.isdir(path) else None


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
    """``:system:event`` for existing tracepoints, user_events names as they are; after
    ``--`` (``ehtool record ... -- COMMAND``) a command, then its arguments (files)."""
    command = ctx.meta.get("ehtool_record_command")
    if command is not None:
        return [CompletionItem(incomplete, type="file" if command else "command")]
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


def complete_names(names: list[str]):
    """A ``shell_complete`` callback offering ``names`` (options that also take numbers)."""

    def complete(ctx: click.Context, param: click.Parameter,
                 incomplete: str) -> list[CompletionItem]:
        return [CompletionItem(n) for n in names if n.startswith(incomplete.lower())]

    return complete


def complete_meta(ctx: click.Context, param: click.Parameter,
                  incomplete: str) -> list[CompletionItem]:
    """``decode --meta``: the item after the last comma, a key with its +/- edit kept
    (``file`` with ``--format jsonl``)."""
    from ehtool.render.meta_keys import FILE_KEY, META_KEYS

    head, _, item = incomplete.rpartition(",")
    head = head + "," if head else ""
    sign = item[:1] if item[:1] in "+-" else ""
    keys = (*META_KEYS, FILE_KEY) if ctx.params.get("out_format") == "jsonl" else META_KEYS
    names = [sign + key for key in keys]
    if not sign:
        names = ["default", "all", "none", *names]
    return [CompletionItem(head + n) for n in names if n.startswith(item)]


# -- bash: words are split at COMP_WORDBREAKS (':' and '=' included), so click's script
# hands ehtool ':' 'sch' for ':sch'. ehtool's script sends the line up to the cursor;
# the candidates come back without the part of the word before its last break
# character, which bash keeps (``__ltrim_colon_completions``' job in bash-completion).

_BASH_SOURCE = """\
%(complete_func)s() {
    local IFS=$'\\n'
    local response type value
    response=$(env COMP_LINE="${COMP_LINE:0:COMP_POINT}" COMP_WORDS=_ COMP_CWORD=0 \\
        EHTOOL_WORDBREAKS="$COMP_WORDBREAKS" %(complete_var)s=bash_complete $1)
    for completion in $response; do
        IFS=',' read type value <<< "$completion"
        case $type in
            dir) COMPREPLY=(); compopt -o dirnames ;;
            file) COMPREPLY=(); compopt -o default ;;
            command) COMPREPLY=($(compgen -c -- "${COMP_WORDS[COMP_CWORD]}")) ;;
            plain) COMPREPLY+=("$value")
                [[ $value == *: ]] && compopt -o nospace ;;  # ':sched:' goes on
        esac
    done
    return 0
}

complete -o nosort -F %(complete_func)s %(prog_name)s
"""


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
            case command
                __fish_complete_command $item[2]
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
    from click.shell_completion import (
        BashComplete,
        FishComplete,
        ZshComplete,
        add_completion_class,
        split_arg_string,
    )

    class WholeWord:
        """zsh and fish replace the whole word being completed: for ``--format=j`` (click
        completes the value, ``json``) the candidate is ``--format=json``."""

        _option = ""

        def get_completion_args(self) -> tuple[list[str], str]:
            args, incomplete = super().get_completion_args()  # type: ignore[misc]
            name, eq, _ = incomplete.partition("=")
            self._option = name + eq if eq and name.startswith("-") else ""
            return args, incomplete

        def whole(self, item: CompletionItem) -> CompletionItem:
            if not self._option or item.type != "plain":
                return item
            return CompletionItem(self._option + item.value, type=item.type, help=item.help)

    class EhtoolBashComplete(BashComplete):
        source_template = _BASH_SOURCE
        _kept = ""

        def get_completion_args(self) -> tuple[list[str], str]:
            line = os.environ.get("COMP_LINE")
            if line is None:  # an older script: click's protocol
                return super().get_completion_args()
            words = split_arg_string(line)
            incomplete = "" if not words or line[-1:].isspace() else words.pop()
            breaks = set(os.environ.get("EHTOOL_WORDBREAKS", ":=")) - set(" \t\n\"'")
            cut = max((incomplete.rfind(c) for c in breaks), default=-1)
            self._kept = incomplete[:cut + 1]
            return words[1:], incomplete

        def format_completion(self, item: CompletionItem) -> str:
            value = item.value
            if self._kept and value.startswith(self._kept):
                value = value[len(self._kept):]  # bash keeps that part of the word
            return f"{item.type},{value}"

    class EhtoolFishComplete(WholeWord, FishComplete):
        source_template = _FISH_SOURCE

        def format_completion(self, item: CompletionItem) -> str:
            def flat(text: str) -> str:
                return " ".join(text.split())

            item = self.whole(item)
            return f"{item.type}\t{flat(item.value)}\t{flat(item.help or '') or '_'}"

    class EhtoolZshComplete(WholeWord, ZshComplete):
        def format_completion(self, item: CompletionItem) -> str:
            return super().format_completion(self.whole(item))

    add_completion_class(EhtoolFishComplete, "fish")
    add_completion_class(EhtoolZshComplete, "zsh")
    add_completion_class(EhtoolBashComplete, "bash")
