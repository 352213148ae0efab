"""Regenerate man/ from man/sections/ and the click help: python3 scripts/gen_man.py [--check].

One page for ``ehtool`` and one per subcommand. The prose (NAME, DESCRIPTION, and
sections such as FILTERS, EXAMPLES, FILES, SEE ALSO) is written by hand in
``man/sections/PAGE.txt``; SYNOPSIS and OPTIONS come from the click commands, so
every option is documented as ``--help`` shows it; EXIT STATUS and ENVIRONMENT
are shared unless a page writes its own.

Section files: ``NAME: text`` first; a line in capitals starts a section;
paragraphs are separated by blank lines; lines indented by two spaces are shown
as they are; ``* TERM`` starts an item whose text follows on the next lines.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import click

REPO = Path(__file__).resolve().parents[1]

EXIT_STATUS = [
    ("0", "success; also when the reader of standard output went away (ehtool decode x | "
          "head -1)"),
    ("1", "unreadable or invalid input (missing, unreadable, truncated or corrupt file; bad "
          "batch line), or output that cannot be written (cannot write output: No space "
          "left on device)"),
    ("2", "usage error (bad option or argument)"),
    ("3", "ehtool write --require-enabled: no session has the tracepoint enabled"),
    ("4", "kernel interface error (no tracefs or user_events, permission, conflict)"),
    ("5", "perf is missing or failed"),
    ("128+N", "stopped by signal N (SIGHUP 129, SIGINT 130, SIGTERM 143); ehtool decode -o FILE "
              "then leaves FILE as it was and no temporary file (ehtool record without "
              "COMMAND is stopped by a signal: 0, once perf is ready)"),
]


ENVIRONMENT = [
    ("EHTOOL_PURE", "set to 1: decode without the optional C hot loops (pure Python; "
                    "the same output, slower)"),
    ("EHTOOL_TRACEFS", "the tracefs directory to use instead of finding it "
                       "(/sys/kernel/tracing, then /proc/mounts)"),
    ("EHTOOL_DEBUG", "set to 1: show a Python traceback for an internal error"),
]
_SECTION = re.compile(r"^[A-Z][A-Z ]+$")


def sections(path: Path) -> tuple[str, dict[str, list[str]]]:
    """(NAME text, section title -> roff lines) of a hand-written section file."""
    lines = path.read_text().splitlines()
    name = lines[0].removeprefix("NAME:").strip()
    out: dict[str, list[str]] = {}
    body: list[str] = []
    for block in "\n".join(lines[1:]).split("\n\n"):
        rows = block.strip("\n").split("\n")
        if not rows or rows == [""]:
            continue
        if _SECTION.match(rows[0]):
            body = out.setdefault(rows[0], [])
            rows = rows[1:]
        i = 0
        while i < len(rows):
            row = rows[i]
            if row.startswith("  "):
                j = i
                while j < len(rows) and rows[j].startswith("  "):
                    j += 1
                body += [".PP" if body and body[-1] != ".fi" else ".PP", ".nf"]
                body += [esc(r[2:]) for r in rows[i:j]] + [".fi"]
                i = j
            elif row.startswith("* "):
                j = i + 1
                while j < len(rows) and not rows[j].startswith(("* ", "  ")):
                    j += 1
                body += [".TP", f".B {esc(row[2:])}", esc(" ".join(rows[i + 1:j]))]
                i = j
            else:
                j = i
                while j < len(rows) and not rows[j].startswith(("* ", "  ")):
                    j += 1
                body += [".PP", esc(" ".join(rows[i:j]))]
                i = j
    return name, out


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
    short, hand = sections(REPO / "man" / "sections" / f"{name.replace(' ', '-')}.txt")
    out = [f'.TH {title} 1 "" "ehtool {version}" "ehtool manual"', ".SH NAME",
           f"{esc(name.replace(' ', '-'))} \\- {esc(short)}", ".SH SYNOPSIS",
           f".B {esc(name)}", esc(" ".join(cmd.collect_usage_pieces(ctx)))]
    desc, _ = paragraphs(cmd.help or "")
    out += [".SH DESCRIPTION", *hand.pop("DESCRIPTION", desc)]
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
        if cmd.epilog:
            out += [".PP", esc(cmd.epilog)]
    tail = {key: hand.pop(key) for key in ("EXAMPLES", "EXIT STATUS", "ENVIRONMENT", "FILES",
                                           "SEE ALSO") if key in hand}
    for title_, body in hand.items():  # the page's own sections (FILTERS, TIME...)
        out += [f".SH {title_}", *body]
    if "EXAMPLES" in tail:
        out += [".SH EXAMPLES", *tail["EXAMPLES"]]
    out.append(".SH EXIT STATUS")
    if "EXIT STATUS" in tail:
        out += tail["EXIT STATUS"]
    else:
        for code, text in EXIT_STATUS:
            out += [".TP", f".B {code}", esc(text)]
    out.append(".SH ENVIRONMENT")
    out += tail.get("ENVIRONMENT", [])
    for var, text in ENVIRONMENT:
        out += [".TP", f".B {var}", esc(text)]
    if "FILES" in tail:
        out += [".SH FILES", *tail["FILES"]]
    out += [".SH SEE ALSO", *tail.get("SEE ALSO", [esc("ehtool(1)")])]
    return "\n".join(out) + "\n"


def generate() -> dict[str, str]:
    sys.path.insert(0, str(REPO))
    from ehtool import __version__
    from ehtool.cli import cli

    root = click.Context(cli, info_name="ehtool", **cli.context_settings)  # (-h too)
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
