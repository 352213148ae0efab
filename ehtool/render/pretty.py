"""Re-indent one already-formatted JSON value (``--pretty``).

Works on the bytes the formatters produced, so duplicate keys, key order and
every value's exact text are kept; only whitespace between tokens changes.
Empty objects and arrays stay on one line (``{}``, ``[]``). :func:`indenter` gives the
C version (``_speedups.indent_json``, 7x faster) when it is built; this module's is the
reference the tests compare it with.
"""

from __future__ import annotations

import re
from collections.abc import Callable

# a string (escapes kept), a structural character, or a run of anything else
# (numbers, true/false/null); whitespace between tokens is dropped
_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"|[{}\[\],:]|[^"{}\[\],:\s]+', re.DOTALL)
_OPEN = frozenset((b"{", b"["))
_CLOSE = frozenset((b"}", b"]"))


def indent_json(value: bytes, level: int = 0, unit: bytes = b"  ") -> bytes:
    """``value`` laid out one member per line, nested ``level`` units deep."""
    tokens = _TOKEN.findall(value)
    out: list[bytes] = []
    depth = level
    last = len(tokens) - 1
    for i, tok in enumerate(tokens):
        if tok in _OPEN:
            if i < last and tokens[i + 1] in _CLOSE:  # empty: {} or []
                out.append(tok)
                continue
            depth += 1
            out.append(tok + b"\n" + unit * depth)
        elif tok in _CLOSE:
            if i and tokens[i - 1] in _OPEN:
                out.append(tok)
                continue
            depth -= 1
            out.append(b"\n" + unit * depth + tok)
        elif tok == b",":
            out.append(b",\n" + unit * depth)
        elif tok == b":":
            out.append(b": ")
        else:
            out.append(tok)
    return b"".join(out)


def indenter() -> Callable[[bytes, int], bytes]:
    """``indent_json(value, level)``: the C version when it is built, else this module's."""
    from ehtool.speedups import load

    speedups = load()
    if speedups is None:
        return indent_json
    native = speedups.indent_json
    return lambda value, level: native(value, level, b"  ")
