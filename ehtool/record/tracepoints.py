"""Make every spec's tracepoint exist for the whole session.

Existing tracepoints are used as they are. Missing EventHeader tracepoints and
user_events definitions are registered by this process and held until
:meth:`TracepointHolder.release` (the kernel deletes a non-persistent
user_event once its last registration and perf's reference are gone). A
missing ``:system:event`` identifier is an error, found before anything starts.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ehtool.errors import EhtoolError, KernelError
from ehtool.record.specs import SpecError, SpecKind, TracepointSpec

_TRACEFS_CANDIDATES = ("/sys/kernel/tracing", "/sys/kernel/debug/tracing")


def locate_tracefs() -> Path:
    """tracefs's mount point (the kernel library's answer when it is available)."""
    try:
        from ehtool.kernel.tracefs import find_tracefs
    except ImportError:  # pragma: no cover - the kernel package is not there yet
        for candidate in _TRACEFS_CANDIDATES:
            if Path(candidate, "events").is_dir():
                return Path(candidate)
        raise KernelError("tracefs is not mounted: 'mount -t tracefs nodev /sys/kernel/tracing'"
                          ) from None
    return Path(find_tracefs())


def tracepoint_exists(tracefs: Path, system: str, name: str) -> bool:
    """True when ``events/<system>/<name>/id`` exists under ``tracefs``."""
    return (tracefs / "events" / system / name / "id").exists()


class TracepointHolder:
    """Registers the missing tracepoints of ``specs`` and keeps them until released.

    ``exists(system, name)`` and ``open_user_events()`` are injectable for tests;
    by default they use tracefs and :class:`ehtool.kernel.user_events.UserEvents`.
    """

    def __init__(self, specs: Sequence[TracepointSpec], *,
                 exists: Callable[[str, str], bool] | None = None,
                 open_user_events: Callable[[], Any] | None = None) -> None:
        self.specs = list(specs)
        self._exists = exists
        self._open = open_user_events
        self._user_events: Any = None
        self.registrations: list[Any] = []
        #: names of the tracepoints this holder registered
        self.registered: list[str] = []

    def plan(self) -> list[TracepointSpec]:
        """The specs to register; SpecError when an identifier names nothing."""
        exists = self._exists or _default_exists()
        missing_ids = []
        to_register = []
        for spec in self.specs:
            if exists(spec.system, spec.name):
                continue
            if spec.kind is SpecKind.IDENTIFIER:
                missing_ids.append(spec)
            else:
                _check_registrable(spec)
                to_register.append(spec)
        if missing_ids:
            names = ", ".join(spec.tracepoint for spec in missing_ids)
            hint = ""
            if any(spec.system == "user_events" for spec in missing_ids):
                hint = ("; to have ehtool register a user_event, drop the leading ':' "
                        "(EventHeader name or 'Name fields...')")
            raise SpecError(f"tracepoint does not exist: {names}{hint}")
        return to_register

    def acquire(self) -> list[str]:
        """Register what is missing; on failure release what was registered and re-raise."""
        to_register = self.plan()
        if not to_register:
            return []
        opener = self._open or _default_open()
        try:
            self._user_events = opener()
            for spec in to_register:
                self.registrations.append(self._user_events.register(spec.command))
                self.registered.append(spec.tracepoint)
        except BaseException:
            self.release()
            raise
        return list(self.registered)

    def release(self) -> list[str]:
        """Unregister everything held (errors are collected, not raised); return them."""
        problems = []
        for reg in reversed(self.registrations):
            try:
                reg.unregister()
            except (EhtoolError, OSError) as exc:
                problems.append(f"{getattr(reg, 'name', '?')}: {exc}")
        self.registrations.clear()
        if self._user_events is not None:
            with contextlib.suppress(EhtoolError, OSError):
                self._user_events.close()
            self._user_events = None
        return problems

    def __enter__(self) -> TracepointHolder:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def _default_exists() -> Callable[[str, str], bool]:
    try:
        from ehtool.kernel.tracefs import event_exists
    except ImportError:  # pragma: no cover - the kernel package is not there yet
        tracefs = locate_tracefs()
        return lambda system, name: tracepoint_exists(tracefs, system, name)
    return event_exists


def _default_open() -> Callable[[], Any]:
    try:
        from ehtool.kernel.user_events import UserEvents
    except ImportError as exc:  # pragma: no cover - the kernel package is not there yet
        raise KernelError(f"cannot register tracepoints: {exc}") from None
    return UserEvents.open


def _check_registrable(spec: TracepointSpec) -> None:
    """SpecError for an EventHeader name ehtool must not register as given: one no
    producer writes to (``P_L05K1``: producers write ``P_L5K1``; see names.parse)."""
    if spec.kind is not SpecKind.EVENTHEADER:
        return
    from ehtool.eventheader.names import InvalidNameError, parse

    try:
        parse(spec.name, canonical=True)
    except InvalidNameError as exc:
        where = f"{spec.source}: " if spec.source else ""
        raise SpecError(f"{where}{exc}") from None
