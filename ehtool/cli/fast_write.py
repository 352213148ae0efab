"""``ehtool write PROVIDER EVENT [FIELD...]`` without click.

Shell loops call ``ehtool write`` once per event, so its start-up is the
interpreter's plus ehtool's own modules. This parser takes the common form
only: the header options, ``--dry-run``, ``--require-enabled``, ``-v``, in any
order, ``--opt value`` or ``--opt=value``, and ``--``. For anything else
(``--help``, ``--batch``, an unknown option, a bad value, a missing argument)
it returns None and the click command runs, so help, batch mode and every
error message come from one place. A test runs both on the same arguments.
"""

from __future__ import annotations

import sys

from ehtool.cli.write_args import VALUE_OPTIONS, write_one

_FLAGS = {"--dry-run": "dry_run", "--require-enabled": "require_enabled",
          "-v": "verbose", "--verbose": "verbose"}


def parse(args: list[str]) -> tuple[list[str], dict, dict] | None:
    """``(positionals, header values given, flags)``, or None when click must handle
    ``args``. Values not given keep WriteDefaults' defaults."""
    positional: list[str] = []
    values: dict = {}
    flags = {"dry_run": False, "require_enabled": False, "verbose": False}
    i, n = 0, len(args)
    while i < n:
        arg = args[i]
        i += 1
        if arg == "--":
            positional += args[i:]
            break
        if not arg.startswith("-") or arg == "-":
            if arg == "-":
                return None
            positional.append(arg)
            continue
        name, eq, text = arg.partition("=")
        if name in _FLAGS and not eq:
            flags[_FLAGS[name]] = True
            continue
        option = VALUE_OPTIONS.get(name)
        if option is None or not name.startswith("--"):
            return None  # --help, --batch, -i, unknown or combined short options
        if not eq:
            if i >= n:
                return None
            text = args[i]
            i += 1
        try:
            values[option[0]] = option[1](text)
        except ValueError:
            return None
    if len(positional) < 2:
        return None
    return positional, values, flags


def run(args: list[str]) -> int | None:
    """Write the event ``args`` describe and return the exit status, or None when
    the click command must run instead."""
    parsed = parse(args)
    if parsed is None:
        return None
    (provider, event, *fields), values, flags = parsed
    if flags["dry_run"] and sys.stdout is None:
        return None  # (click's command says that standard output is closed)
    verbose = flags["verbose"]

    def say(message: str) -> None:
        if verbose:
            print(message, file=sys.stderr, flush=True)

    return write_one(provider, event, fields, values, require_enabled=flags["require_enabled"],
                     dry_run=flags["dry_run"], say=say)
