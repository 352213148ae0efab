"""Regenerate man/ from the click help: python3 scripts/gen_man.py [--check].

One page for ``ehtool`` and one per subcommand, every option documented;
``Examples:`` blocks of the command docstrings become the EXAMPLES section.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

REPO = Path(__file__).resolve().parents[1]

EXIT_STATUS = [
    ("0", "success"),
    ("1", "unreadable or invalid input (missing, truncated or corrupt file; bad batch line)"),
    ("2", "usage error (bad option or argument)"),
    ("3", "ehtool write --require-enabled: no session has the tracepoint enabled"),
    ("4", "kernel interface error (no tracefs or user_events, permission, conflict)"),
    ("5", "perf is missing or failed"),
    ("128+N", "stopped by signal N (SIGHUP 129, SIGINT 130, SIGTERM 143); ehtool decode -o FILE "
              "then leaves FILE as it was and no temporary file"),
]


def esc(text: str) -> str:
    """Roff-escape one line of text."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    return "\\&" + text if text.startswith((".", "'")) else text


def paragraphs(help_text: str) -> tuple[list[str], list[str]]:
    """(description roff lines, example roff lines) from a click help text."""
    desc: list[str] = []
    examples: list[str] = []
    for block in help_text.strip().split("\n\n"):
        lines = block.split("\n")
        if lines[0].strip() == "\b":
            body = [line for line in lines[1:]]
            if body and body[0].strip() == "Examples:":
                examples += [".nf"] + [esc(line.strip()) for line in body[1:]] + [".fi"]
            else:
                desc += [".PP", ".nf"] + [esc(line.rstrip()) for line in body] + [".fi"]
        else:
            desc += [".PP", esc(" ".join(line.strip() for line in lines))]
    return desc, examples


def page(name: str, cmd: click.Command, ctx: click.Context, version: str) -> str:
    title = name.upper().replace(" ", "-")
    short = (cmd.get_short_help_str(200) or "").rstrip(".")
    out = [f'.TH {title} 1 "" "ehtool {version}" "ehtool manual"', ".SH NAME",
           f"{esc(name.replace(' ', '-'))} \\- {esc(short)}", ".SH SYNOPSIS",
           f".B {esc(name)}", esc(" ".join(cmd.collect_usage_pieces(ctx)))]
    desc, examples = paragraphs(cmd.help or "")
    out += [".SH DESCRIPTION", *desc]
    if cmd.epilog:
        out += [".PP", esc(cmd.epilog)]
    if isinstance(cmd, click.Group):
        out.append(".SH COMMANDS")
        for sub in cmd.list_commands(ctx):
            sub_cmd = cmd.get_command(ctx, sub)
            out += [".TP", f".B {esc(sub)}", esc(sub_cmd.get_short_help_str(200)),
                    f"See \\fBehtool\\-{esc(sub)}\\fR(1)."]
    opts = [p for p in cmd.get_params(ctx) if isinstance(p, click.Option)]
    if opts:
        out.append(".SH OPTIONS")
        for opt in opts:
            record = opt.get_help_record(ctx)
            if record is None:
                continue
            out += [".TP", f".B {esc(record[0])}", esc(record[1])]
    if examples:
        out += [".SH EXAMPLES", *examples]
    out.append(".SH EXIT STATUS")
    for code, text in EXIT_STATUS:
        out += [".TP", f".B {code}", esc(text)]
    see = ["ehtool(1)"] if name != "ehtool" else []
    out += [".SH SEE ALSO", esc(", ".join(see + ["perf-record(1)", "perf-script(1)"]))]
    return "\n".join(out) + "\n"


def generate() -> dict[str, str]:
    sys.path.insert(0, str(REPO))
    from ehtool import __version__
    from ehtool.cli import cli

    root = click.Context(cli, info_name="ehtool")
    pages = {"ehtool.1": page("ehtool", cli, root, __version__)}
    for sub in cli.list_commands(root):
        cmd = cli.get_command(root, sub)
        ctx = click.Context(cmd, info_name=sub, parent=root)
        pages[f"ehtool-{sub}.1"] = page(f"ehtool {sub}", cmd, ctx, __version__)
    return pages


def main() -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _generated import write_or_check

    return write_or_check(REPO / "man", generate(), "python3 scripts/gen_man.py")


if __name__ == "__main__":
    raise SystemExit(main())
