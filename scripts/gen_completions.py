"""Regenerate completions/ from the click app: python3 scripts/gen_completions.py [--check]."""

from __future__ import annotations

import sys
from pathlib import Path

from click.shell_completion import get_completion_class

REPO = Path(__file__).resolve().parents[1]
FILES = {"bash": "ehtool.bash", "zsh": "_ehtool", "fish": "ehtool.fish"}


def generate() -> dict[str, str]:
    sys.path.insert(0, str(REPO))
    from ehtool.cli import cli
    from ehtool.cli.completion import install

    install()
    out = {}
    for shell, name in FILES.items():
        comp = get_completion_class(shell)(cli, {}, "ehtool", "_EHTOOL_COMPLETE")
        out[name] = comp.source()
    return out


def main() -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _generated import write_or_check

    return write_or_check(REPO / "completions", generate(), "python3 scripts/gen_completions.py")


if __name__ == "__main__":
    raise SystemExit(main())
