"""Writing encoded EventHeader events to their tracepoints (``ehtool write``).

``EventWriter`` registers each distinct ``Provider_L<level>K<keyword>[G...]``
tracepoint once, then writes events with one ``writev`` each. Field text from
the command line (``NAME=VALUE``, ``NAME:TYPE=VALUE``, ``NAME:TYPE[]=a,b``)
and batch lines (JSON) become :class:`~ehtool.eventheader.encoder.Field` lists.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TextIO

from ehtool.errors import EXIT_DISABLED, UsageError
from ehtool.eventheader import names
from ehtool.eventheader.encoder import (
    EncodeError,
    Event,
    Field,
    encode,
    parse_type,
)
from ehtool.provider.api import EventSet, Provider


class WriteDefaults:
    """Header values for events that do not set their own (immutable)."""

    __slots__ = ("level", "keyword", "opcode", "id", "version", "tag", "activity",
                 "related_activity", "group")

    def __init__(self, level: int = 5, keyword: int = 1, opcode: int = 0, id: int = 0,
                 version: int = 0, tag: int = 0, activity: str | None = None,
                 related_activity: str | None = None, group: str | None = None) -> None:
        for key, value in zip(self.__slots__, (level, keyword, opcode, id, version, tag,
                                               activity, related_activity, group), strict=True):
            object.__setattr__(self, key, value)

    def __setattr__(self, key: str, value: Any) -> None:
        raise AttributeError("WriteDefaults is immutable: use replace()")

    def replace(self, **changes: Any) -> WriteDefaults:
        """A copy with ``changes`` (TypeError for an unknown key)."""
        return WriteDefaults(**{**{k: getattr(self, k) for k in self.__slots__}, **changes})

    def __eq__(self, other: object) -> bool:
        return isinstance(other, WriteDefaults) and all(
            getattr(self, k) == getattr(other, k) for k in self.__slots__)

    def __hash__(self) -> int:
        return hash(tuple(getattr(self, k) for k in self.__slots__))

    def __repr__(self) -> str:
        return "WriteDefaults(" + ", ".join(f"{k}={getattr(self, k)!r}"
                                            for k in self.__slots__) + ")"


def event_of(event_name: str, fields: list[Field], d: WriteDefaults) -> Event:
    """The Event for ``fields`` with ``d``'s header values."""
    return Event(event_name, fields, level=d.level, opcode=d.opcode, id=d.id,
                 version=d.version, tag=d.tag, activity=d.activity,
                 related_activity=d.related_activity)


def parse_field_arg(text: str) -> Field:
    """``NAME=VALUE`` | ``NAME:TYPE=VALUE`` | ``NAME:TYPE[]=v1,v2`` -> Field."""
    head, eq, value = text.partition("=")
    if not eq:
        raise UsageError(f"field {text!r}: expected NAME=VALUE or NAME:TYPE=VALUE")
    name, colon, type_ = head.rpartition(":") if ":" in head else (head, "", "str")
    if not name:
        raise UsageError(f"field {text!r}: the field name is empty")
    try:
        ftype, count = parse_type(type_)
    except EncodeError as exc:
        raise UsageError(f"field {text!r}: {exc}") from None
    if ftype.name == "struct":
        raise UsageError(f"field {text!r}: structs are written with --batch")
    if count is not None:
        return Field(name, type_, value.split(",") if value else [])
    return Field(name, type_, value)


class DecodedLines:
    """A text sink for dry-run lines (``TRACEPOINT HEX``) that writes each event to
    ``out`` as ``ehtool decode --format jsonl`` shows it (``write --dry-run --decode``)."""

    def __init__(self, out: TextIO) -> None:
        from ehtool.render.dat import EventObjects
        from ehtool.render.style import SPACED

        self.out = out
        self._objects = EventObjects(SPACED)
        self._pending = ""

    def write(self, text: str) -> int:
        *lines, self._pending = (self._pending + text).split("\n")
        for line in lines:
            tracepoint, _, data = line.partition(" ")
            obj = self._objects.event(tracepoint, bytes.fromhex(data))
            self.out.write(obj.decode("utf-8", "surrogateescape") + "\n")  # type: ignore[union-attr]
        return len(text)

    def flush(self) -> None:
        self.out.flush()


class EventWriter:
    """Registers tracepoints on demand and writes (or, dry-run, prints) events."""

    def __init__(self, *, dry_run: bool = False, out: TextIO | None = None,
                 say: Callable[[str], None] | None = None) -> None:
        self.dry_run = dry_run
        self.out = out
        self.say = say or (lambda message: None)
        self._providers: dict[tuple[str, str | None], Provider] = {}
        self._regs: dict[str, EventSet] = {}
        self.written = self.skipped = 0

    def one(self, provider: str, event_name: str, field_args: list[str],
            defaults: WriteDefaults, require_enabled: bool = False) -> int:
        """Write one event from command-line text; return the exit status."""
        fields = [parse_field_arg(text) for text in field_args]
        try:
            name = names.build(provider, defaults.level, defaults.keyword, defaults.group)
        except names.InvalidNameError as exc:
            raise UsageError(str(exc)) from None
        try:
            data = encode(event_of(event_name, fields, defaults))
        except EncodeError as exc:
            raise UsageError(str(exc)) from None
        written = self.send(str(name), data)
        return EXIT_DISABLED if require_enabled and not written else 0

    def send(self, tracepoint: str, data: bytes) -> bool:
        """Write (or print) one encoded event; False when nobody has it enabled."""
        if self.dry_run:
            assert self.out is not None
            self.out.write(f"{tracepoint} {data.hex()}\n")
            self.written += 1
            return True
        events = self._regs.get(tracepoint)
        if events is None:
            events = self._regs[tracepoint] = self._register(tracepoint)
        if events.write_encoded(data):
            self.written += 1
            self.say(f"{tracepoint}: wrote {len(data)} bytes")
            return True
        self.skipped += 1
        self.say(f"{tracepoint}: not enabled by any session, event skipped")
        return False

    def close(self) -> None:
        for provider in self._providers.values():
            provider.unregister()
        self._providers.clear()
        self._regs.clear()
        if self.out is not None:
            self.out.flush()

    def _register(self, tracepoint: str) -> EventSet:
        """The event set of ``tracepoint`` through the Provider API (one per provider)."""
        tp = names.parse(tracepoint)
        key = (tp.provider, tp.group)
        provider = self._providers.get(key)
        if provider is None:
            provider = self._providers[key] = Provider(tp.provider, group=tp.group)
        return provider.register(tp.level, tp.keyword)
