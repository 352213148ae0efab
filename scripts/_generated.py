"""Write generated files, or with ``--check`` report the stale ones."""

from __future__ import annotations

import sys
from pathlib import Path


def write_or_check(folder: Path, files: dict[str, str], command: str) -> int:
    """Exit status: 0 when written (or, with --check, all current), 1 when stale."""
    check = "--check" in sys.argv
    stale = []
    for name, text in files.items():
        path = folder / name
        if check:
            if not path.exists() or path.read_text() != text:
                stale.append(name)
        else:
            folder.mkdir(exist_ok=True)
            path.write_text(text)
    if stale:
        print(f"stale: {', '.join(stale)}; run: {command}")
        return 1
    return 0
