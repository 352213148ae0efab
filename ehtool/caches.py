"""Caches of what a process computes once and its inputs share: a fleet of recordings
repeats the same layouts, formats and metadata, and a process decoding thousands of them
must keep what repeats without growing with what does not."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Bounded(dict[K, V], Generic[K, V]):
    """A dict that empties itself before a new key would make it hold more than
    ``maxsize`` entries or, with ``maxbytes``, keys (bytes or str) of more than
    ``maxbytes`` in all (a key bigger than that alone is not kept). Emptying it all is
    cheaper than tracking use, and what repeats is back after one miss."""

    def __init__(self, maxsize: int, maxbytes: int | None = None) -> None:
        super().__init__()
        self.maxsize = maxsize
        self.maxbytes = maxbytes
        self._bytes = 0

    def made(self, key: K, make: Callable[[], V]) -> V:
        """The value of ``key``, made (and kept, within the bounds) on a miss."""
        value = self.get(key)
        if value is None:
            value = make()
            self.keep(key, value)
        return value

    def keep(self, key: K, value: V) -> None:
        size = len(key) if self.maxbytes is not None else 0  # type: ignore[arg-type]
        if self.maxbytes is not None and size > self.maxbytes:
            return
        if len(self) >= self.maxsize or (self.maxbytes is not None
                                         and self._bytes + size > self.maxbytes):
            self.clear()
        self[key] = value
        self._bytes += size

    def clear(self) -> None:
        super().clear()
        self._bytes = 0
