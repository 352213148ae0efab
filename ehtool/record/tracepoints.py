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

from ehtool.errors import EhtoolError
from ehtool.kernel.tracefs import event_exists, find_tracefs
from ehtool.kernel.user_events import UserEvents
from ehtool.record.specs import SpecError, SpecKind, TracepointSpec


def locate_tracefs() -> Path:
    """tracefs's mount point (KernelError with a hint when it is not mounted)."""
    return Path(find_tracefs())


class TracepointHolder:
    """Registers the missing tracepoints of ``specs`` and keeps them until released.

    ``exists(system, name)`` and ``open_user_events()`` are injectable for tests;
    by default they are :func:`ehtool.kernel.tracefs.event_exists` and
    :meth:`ehtool.kernel.user_events.UserEvents.open`.
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
        exists = self._exists or event_exists
        missing_ids = []
        to_register = []
        for spec in self.specs:
            if exists(spec.system, spec.name):
                continue
            if spec.kind is SpecKind.IDENTIFIER:
                missing_ids.append(spec)
            else:
                spec.check_registrable()
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
        opener = self._open or UserEvents.open
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
