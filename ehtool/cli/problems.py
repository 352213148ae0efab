"""Input problems met along a command that goes on with the next input (``decode
--format parquet``, ``query``): reported at the end, one line per input."""

from __future__ import annotations

import sys
from collections.abc import Iterable

import click

from ehtool.errors import EXIT_INPUT, InputError, combined


def report(inputs: Iterable[str], met: Iterable[dict[str, list[InputError]]]) -> None:
    """Write each input's problems (its first, and how many more) as one error line, in
    the order of the inputs, then exit 1 if there were any."""
    met = list(met)
    found = False
    for path in dict.fromkeys(inputs):
        errors = {str(e): e for m in met for e in m.get(path, ())}
        if errors:
            found = True
            click.echo(f"ehtool: error: {combined(list(errors.values()))}", err=True)
    if found:
        sys.exit(EXIT_INPUT)
