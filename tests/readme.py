"""The README's examples as commands, for the tests that run them (tests/test_readme.py
here, tests/e2e/test_readme_kernel.py where the kernel has user_events).

Examples are read from fenced blocks: ``console`` blocks are ``$ command`` and the
output it must print; ``sh`` blocks are commands (a command continues while its quotes
are open); ``python`` blocks are programs, whose last lines may be ``# output`` lines
the program must print.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
_FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.M | re.S)

#: commands that need a kernel with user_events (and root), or perf recording
KERNEL_WORDS = ("ehtool register", "ehtool unregister", "ehtool list", "ehtool record",
                "perf record")


@dataclass
class Example:
    lang: str
    section: str
    text: str  # the command (sh, console) or the program (python)
    output: list[str] = field(default_factory=list)  # console/python: what it must print

    @property
    def needs_kernel(self) -> bool:
        if self.lang == "python":
            return "Provider(" in self.text
        if self.text.startswith("ehtool write") and "--dry-run" not in self.text:
            return True
        return any(self.text.startswith(w) or f"| {w}" in self.text for w in KERNEL_WORDS)


def examples(readme: Path = REPO / "README.md") -> list[Example]:
    text = readme.read_text()
    out: list[Example] = []
    for match in _FENCE.finditer(text):
        lang, body = match.group(1), match.group(2)
        heads = re.findall(r"^## (.+)$", text[:match.start()], re.M)
        section = heads[-1] if heads else ""
        if lang == "console":
            for chunk in re.split(r"^\$ ", body, flags=re.M)[1:]:
                command, *output = chunk.rstrip("\n").split("\n")
                out.append(Example(lang, section, command, output))
        elif lang == "sh":
            out += [Example(lang, section, c) for c in _commands(body)]
        elif lang == "python":
            lines = body.rstrip("\n").split("\n")
            expected = []
            while lines and lines[-1].startswith("# ") and "(" not in lines[-1]:
                expected.insert(0, lines.pop()[2:])
            out.append(Example(lang, section, "\n".join(lines) + "\n", expected))
    return out


def _commands(body: str) -> list[str]:
    """The commands of an ``sh`` block, comment lines dropped, open quotes joined."""
    out: list[str] = []
    pending = ""
    for line in body.split("\n"):
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        pending = f"{pending}\n{line}" if pending else line
        try:
            shlex.split(pending, comments=True)
        except ValueError:  # a quote still open: the command goes on
            continue
        out.append(pending)
        pending = ""
    return out
