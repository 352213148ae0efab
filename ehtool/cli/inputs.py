"""The recordings a command reads (``decode``, ``query``, ``info``): files, standard
input (``-``), and directories, each of which stands for the perf.data files under it."""

from __future__ import annotations

import os
from collections.abc import Iterable

import click

from ehtool.errors import InputError
from ehtool.perfdata.finding import recordings_under


def expand(inputs: Iterable[str]) -> tuple[str, ...]:
    """``inputs`` with each directory replaced by the perf.data files under it, at any
    depth, in path order: the regular files that start with the perf.data magic (other
    files, such as a decode's JSON beside its recording, are left out; symbolic links
    to directories are not followed). A directory without any is a warning, and an
    input error (exit 1) when no input is left; so is a directory under it that cannot
    be read (its recordings would be left out in silence)."""
    guard_mapped_inputs()
    out: list[str] = []
    empty: list[str] = []
    for path in inputs:
        if path == "-" or not os.path.isdir(path):
            out.append(path)
            continue
        found = recordings_under(path, _unreadable)
        if not found:
            empty.append(path)
        out += found
    if empty and not out:
        raise InputError("no perf.data file under this directory", empty[0])
    for path in empty:
        click.echo(f"ehtool: warning: {path}: no perf.data file under this directory",
                   err=True)
    return tuple(out)


def guard_mapped_inputs() -> None:
    """A file cut short while ehtool reads it (mapped: ``truncate``, a new recording
    copied over it) ends the command with an error naming it, exit 1, and no temporary
    output file, instead of a bare SIGBUS (with the C module; without it, the signal's
    default)."""
    from ehtool.errors import one_line
    from ehtool.perfdata import reader
    from ehtool.speedups import load

    native = load()
    if native is None or reader.mapped_hook is not None:
        return

    def mapped(path: str) -> None:
        native.sigbus_guard(
            f"ehtool: error: {one_line(path)}: the file was cut short while it was read "
            "(did something truncate or replace it?)\n".encode("utf-8", "surrogateescape"))
    reader.mapped_hook = mapped


def _unreadable(exc: OSError) -> None:
    raise InputError(f"cannot read this directory: {exc.strerror or exc}", exc.filename)
