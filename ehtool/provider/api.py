"""The Python Provider API: EventHeader events from Python programs.

The model of the Rust ``eventheader`` crate: a provider registers one tracepoint per
level/keyword pair it writes (``MyCompany_MyComponent_L4K2``); a cheap ``enabled``
says whether any session (perf, ftrace, eBPF) listens; typed writes encode and send.

>>> import ehtool
>>> with ehtool.Provider("MyCompany_MyComponent") as provider:    # doctest: +SKIP
...     events = provider.register(level=4, keyword=0x2)
...     if events.enabled:
...         events.write("Started", [("count", "u32", 7), ("name", "str", "x"),
...                                  ("ports", "port[]", [80, 443])], opcode=1)
...     started = events.prepare("Started", [("count", "u32"), ("name", "str")])
...     started.write(8, "y")                                   # metadata encoded once

Field types are ``ehtool write``'s type names (``ehtool write --help``): ``u8``..``u64``,
``i8``..``i64``, ``x8``..``x64`` (hex), ``f32``, ``f64``, ``bool``, ``char``, ``str``
(also ``str16``, ``str32``, counted ``lstr``), ``bin``, ``uuid``, ``ipv4``, ``ipv6``,
``port``, ``pid``, ``errno``, ``time``..., ``T[]`` for arrays and ``struct`` for a
nested list of ``(name, type, value)``.

Registration errors (no tracefs, no user_events, permission, a conflicting
definition) raise :class:`ehtool.errors.KernelError` with what to do; a bad field value
raises :class:`ehtool.eventheader.encoder.EncodeError` (a ValueError) before any system
call, as does an event larger than perf records.

After ``fork()`` the child's providers are closed to writing: the kernel copies the
parent's registrations into the child, but they belong to the parent's descriptor and
enable words; ``enabled`` is False and ``write`` returns False in the child until it
calls ``register`` again, which registers anew for the child.
"""

from __future__ import annotations

import contextlib
import os
import threading
import weakref
from collections.abc import Iterable, Sequence
from typing import Any

from ehtool.eventheader import names
from ehtool.eventheader.encode_plans import compile_event
from ehtool.eventheader.encoder import (
    EncodeError,
    Event,
    Field,
    activity_extension,
    encode,
    parse_type,
)

__all__ = ["EventSet", "PreparedEvent", "Provider"]

#: providers of this process, to close them in a forked child
_PROVIDERS: weakref.WeakSet[Provider] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    for provider in list(_PROVIDERS):
        provider._forget()


os.register_at_fork(after_in_child=_after_fork_in_child)


class Provider:
    """An EventHeader provider: ``Provider("MyCompany_MyComponent", group=None)``.

    ``register(level, keyword)`` gives the :class:`EventSet` of one tracepoint;
    ``unregister()`` ends them all (idempotent); the provider is a context manager::

        with ehtool.Provider("MyCompany_MyComponent") as provider:
            events = provider.register(level=4, keyword=0x2)   # ..._L4K2
            if events.enabled:                                 # a session listens
                events.write("Started", [("count", "u32", 7), ("name", "str", "x"),
                                         ("ports", "port[]", [80, 443])],
                             opcode=1, id=42, version=3, activity=uuid.uuid4())
            started = events.prepare("Started", [("count", "u32"), ("name", "str")])
            started.write(8, "y")                              # metadata encoded once

    Field types are ``ehtool write``'s (see the module docstring); ``write`` returns
    False without encoding while nobody listens. KernelError when the kernel refuses a
    registration, EncodeError (ValueError) for a bad value, before any system call.
    """

    def __init__(self, name: str, *, group: str | None = None, open_user_events: Any = None
                 ) -> None:
        names.build(name, 1, 0, group)  # validates the provider name and group now
        self.name = name
        self.group = group
        self._open = open_user_events
        self._ue: Any = None
        self._sets: dict[tuple[int, int], EventSet] = {}
        self._lock = threading.Lock()
        _PROVIDERS.add(self)

    def register(self, level: int, keyword: int = 1) -> EventSet:
        """The event set of tracepoint ``<name>_L<level>K<keyword>[G<group>]``, registered
        once (the same set when asked again). KernelError when the kernel refuses."""
        with self._lock:
            found = self._sets.get((level, keyword))
            if found is not None and found.registered:
                return found
            tracepoint = names.build(self.name, level, keyword, self.group)
            if self._ue is None:
                if self._open is None:
                    from ehtool.kernel.user_events import UserEvents

                    self._open = UserEvents.open
                self._ue = self._open()
            reg = self._ue.register(tracepoint.command)
            events = EventSet(self, str(tracepoint), level, keyword, reg)
            self._sets[level, keyword] = events
            return events

    def register_all(self, pairs: Iterable[tuple[int, int]]) -> list[EventSet]:
        """Register several sets, all or none: on a failure the sets this call
        registered are unregistered again before the error is raised."""
        done: list[EventSet] = []
        before = set(self._sets)
        try:
            for level, keyword in pairs:
                done.append(self.register(level, keyword))
        except BaseException:
            for events in done:
                if (events.level, events.keyword) not in before:
                    events._unregister()
            raise
        return done

    @property
    def sets(self) -> list[EventSet]:
        """The registered event sets."""
        return [s for s in self._sets.values() if s.registered]

    def unregister(self) -> None:
        """Unregister every set and close the descriptor (a no-op when nothing is)."""
        with self._lock:
            for events in self._sets.values():
                events._unregister()
            self._sets.clear()
            if self._ue is not None:
                self._ue.close()
                self._ue = None

    def _forget(self) -> None:
        """In a forked child: drop the parent's registrations without touching them."""
        for events in self._sets.values():
            events._reg = None
        self._sets.clear()
        if self._ue is not None:
            with contextlib.suppress(OSError):
                os.close(self._ue.fd)  # the child's copy of the parent's descriptor
            self._ue = None
        self._lock = threading.Lock()

    def __enter__(self) -> Provider:
        return self

    def __exit__(self, *exc: object) -> None:
        self.unregister()

    def __repr__(self) -> str:
        return f"Provider({self.name!r}, group={self.group!r}, sets={len(self.sets)})"


class EventSet:
    """The events of one tracepoint (one level and keyword of a provider)."""

    __slots__ = ("provider", "tracepoint", "level", "keyword", "_reg", "_word")

    def __init__(self, provider: Provider, tracepoint: str, level: int, keyword: int,
                 reg: Any) -> None:
        self.provider = provider
        self.tracepoint = tracepoint
        self.level = level
        self.keyword = keyword
        self._reg = reg
        self._word = reg._word  # the 32-bit word the kernel sets while a session listens

    @property
    def enabled(self) -> bool:
        """True while a session has this tracepoint enabled: one read of the word the
        kernel updates in this process's memory (no system call)."""
        return self._reg is not None and self._word.value & 1 == 1

    @property
    def registered(self) -> bool:
        return self._reg is not None

    def write(self, name: str, fields: Sequence[Sequence[Any]] = (), *, opcode: int = 0,
              id: int = 0, version: int = 0, tag: int = 0, activity: Any = None,
              related_activity: Any = None) -> bool:
        """Encode and write event ``name``; False (nothing encoded) when not enabled.

        ``fields``: ``(name, type, value)`` triples, type names as ``ehtool write``'s;
        a ``struct`` value is a list of triples. ``activity``/``related_activity``:
        UUIDs (``uuid.UUID``, str or 16 bytes). EncodeError for a bad value.
        """
        if self._reg is None or not self._word.value & 1:
            return False
        event = Event(name, _fields(fields), level=self.level, opcode=opcode, id=id,
                      version=version, tag=tag, activity=activity,
                      related_activity=related_activity)
        return self.write_encoded(encode(event))

    def write_encoded(self, data: bytes) -> bool:
        """Write an already encoded event (its level must be this set's)."""
        reg = self._reg
        return reg is not None and reg.write(data)

    def prepare(self, name: str, fields: Sequence[Sequence[Any]] = (), *, opcode: int = 0,
                id: int = 0, version: int = 0, tag: int = 0) -> PreparedEvent:
        """An event shape whose metadata is encoded once: ``fields`` are
        ``(name, type)`` pairs; ``PreparedEvent.write(*values)`` sends one event."""
        shape = Event(name, [Field(f[0], f[1], None) for f in fields], level=self.level,
                      opcode=opcode, id=id, version=version, tag=tag)
        for f in shape.fields:
            parse_type(f.type)  # EncodeError for an unknown type, now
        return PreparedEvent(self, shape)

    def _unregister(self) -> None:
        reg, self._reg = self._reg, None
        if reg is not None:
            reg.unregister()

    def __repr__(self) -> str:
        state = "enabled" if self.enabled else "registered" if self._reg else "unregistered"
        return f"EventSet({self.tracepoint!r}, {state})"


class PreparedEvent:
    """One event shape of an :class:`EventSet`, encoded once; ``write(*values)``."""

    __slots__ = ("events", "shape", "_encode")

    def __init__(self, events: EventSet, shape: Event) -> None:
        self.events = events
        self.shape = shape
        plan = compile_event(shape)  # None for shapes with structs: the general encoder
        self._encode = plan.encode if plan is not None else None

    def write(self, *values: Any, activity: Any = None, related_activity: Any = None) -> bool:
        """Write one event with these field values, in the shape's order; False (nothing
        encoded) when not enabled; EncodeError for a bad value."""
        events = self.events
        if events._reg is None or not events._word.value & 1:
            return False
        if len(values) != len(self.shape.fields):
            raise EncodeError(f"{self.shape.name}: expected {len(self.shape.fields)} values, "
                              f"got {len(values)}")
        ext = activity_extension(activity, related_activity) if activity is not None else b""
        if self._encode is not None:
            data = self._encode(values, ext)
        else:
            s = self.shape
            data = encode(Event(s.name, [Field(f.name, f.type, _value(f.type, v)) for f, v in
                                         zip(s.fields, values, strict=True)],
                                level=s.level, opcode=s.opcode, id=s.id, version=s.version,
                                tag=s.tag, activity=activity,
                                related_activity=related_activity))
        return events.write_encoded(data)


def _fields(items: Sequence[Sequence[Any]]) -> list[Field]:
    """``(name, type, value)`` triples -> Fields (struct values: nested triples)."""
    out = []
    for item in items:
        if not isinstance(item, list | tuple) or len(item) != 3:
            raise EncodeError(f"a field is (name, type, value), not {item!r}")
        name, type_, value = item
        if not isinstance(name, str) or not isinstance(type_, str):
            raise EncodeError(f"field name and type must be strings in {item!r}")
        out.append(Field(name, type_, _value(type_, value)))
    return out


def _value(type_: str, value: Any) -> Any:
    """A field's value for the encoder: a struct's (or each element's of a struct array)
    ``(name, type, value)`` triples as Fields."""
    ftype, count = parse_type(type_)
    if ftype.name != "struct":
        return value
    if count is None:
        return _fields(value)
    if not isinstance(value, list | tuple):
        raise EncodeError(f"a struct array's value is a list of structs, not {value!r}")
    return [_fields(v) for v in value]
