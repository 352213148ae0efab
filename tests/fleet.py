"""Fleets of small recordings for the tests of decoding many inputs with N processes."""

from __future__ import annotations

import os
from pathlib import Path


def with_a_bad_name(where: Path, source: Path, count: int, odd: int, cut: int) -> list[str]:
    """``count`` copies of ``source`` in ``where``; copy ``odd`` cut to ``cut`` bytes and
    named with a byte that is not UTF-8 (its error message then holds a lone
    surrogate: ``\\udcff``)."""
    data = source.read_bytes()
    paths = []
    for k in range(count):
        name = os.fsencode(where) + b"/r%02d%s.data" % (k, b"\xff" if k == odd else b"")
        with open(name, "wb") as f:
            f.write(data[:cut] if k == odd else data)
        paths.append(os.fsdecode(name))
    return paths
