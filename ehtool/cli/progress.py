"""A one-line progress bar on a terminal's stderr, for commands that may run long.

Nothing is drawn during the first second (quick runs stay silent), the line is
redrawn at most ten times a second, and ``close()`` erases it.
"""

from __future__ import annotations

import time
from typing import TextIO

_DELAY = 1.0
_INTERVAL = 0.1
_WIDTH = 24


def _size(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TB"  # pragma: no cover


class ProgressBar:
    """``bar(done, total)`` after each step; ``total`` 0 when unknown (a pipe)."""

    def __init__(self, stream: TextIO, label: str = "", *, clock=time.monotonic) -> None:
        self.stream = stream
        self.label = label
        self._clock = clock
        self._start = clock()
        self._next = self._start + _DELAY
        self._drawn = False

    def __call__(self, done: int, total: int) -> None:
        now = self._clock()
        if now < self._next:
            return
        self._next = now + _INTERVAL
        elapsed = now - self._start
        rate = f"{_size(done / elapsed)}/s" if elapsed > 0 else ""
        if total > 0:
            frac = min(done / total, 1.0)
            filled = int(frac * _WIDTH)
            bar = "#" * filled + "-" * (_WIDTH - filled)
            eta = ""
            if 0 < done < total and elapsed > 1:
                left = (total - done) * elapsed / done
                eta = f"  ETA {int(left // 60)}:{int(left % 60):02d}"
            text = (f"{self.label} [{bar}] {frac * 100:3.0f}%  {_size(done)} of "
                    f"{_size(total)}  {rate}{eta}")
        else:
            text = f"{self.label} {_size(done)} read  {rate}"
        self.stream.write("\r" + text.strip() + "\x1b[K")
        self.stream.flush()
        self._drawn = True

    def close(self) -> None:
        """Erase the bar (if it was ever drawn)."""
        if self._drawn:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self._drawn = False
