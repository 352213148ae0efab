"""Finding tracefs and reading what it says about user_events.

Discovery follows the reference libraries: ``/sys/kernel/tracing`` first,
then a ``tracefs`` line of ``/proc/mounts`` (which wins), then a ``debugfs``
mount's ``tracing`` directory; ``EHTOOL_TRACEFS`` in the environment names the
directory instead. Standard library only.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from ehtool.errors import KernelError

if TYPE_CHECKING:
    from ehtool.formats.tracefs_format import EventFormat

DEFAULT_TRACEFS = Path("/sys/kernel/tracing")

#: element sizes of the array types user_events accepts (char[N], unsigned char[N])
_ELEMENT_SIZES = {"char": 1, "unsigned char": 1}
_MOUNT_HINT = ("tracefs is not mounted; mount it with "
               "'sudo mount -t tracefs nodev /sys/kernel/tracing'")
_USER_EVENTS_HINT = ("this kernel has no user_events ({path} is missing): it needs "
                     "CONFIG_USER_EVENTS=y (Linux 6.4 or later)")


@cache
def find_tracefs() -> Path:
    """The tracefs mount point; KernelError saying how to mount it when there is none."""
    chosen = os.environ.get("EHTOOL_TRACEFS")
    if chosen:
        if not os.path.isdir(chosen):
            raise KernelError(f"EHTOOL_TRACEFS={chosen} is not a directory (the tracefs "
                              "mount point, e.g. /sys/kernel/tracing)")
        return Path(chosen)
    if _present(DEFAULT_TRACEFS / "events") or _present(DEFAULT_TRACEFS / "user_events_data"):
        return DEFAULT_TRACEFS
    found = mount_points(_read("/proc/mounts") or "")
    if found is None:
        raise KernelError(_MOUNT_HINT)
    return found


def mount_points(mounts: str) -> Path | None:
    """The tracefs directory named by ``/proc/mounts`` text (tracefs wins over debugfs)."""
    debugfs = None
    for line in mounts.splitlines():
        parts = line.split()
        if len(parts) < 3:
            continue
        where = parts[1].replace("\\040", " ")
        if parts[2] == "tracefs":
            return Path(where)
        if parts[2] == "debugfs" and debugfs is None:
            debugfs = Path(where) / "tracing"
    return debugfs


def user_events_data_path() -> Path:
    """``<tracefs>/user_events_data``; KernelError when the kernel lacks user_events."""
    path = find_tracefs() / "user_events_data"
    if not _present(path):
        raise KernelError(_USER_EVENTS_HINT.format(path=path))
    return path


@dataclass(slots=True)
class StatusEntry:
    """One line of ``user_events_status``."""

    name: str
    used_by: set[str] = field(default_factory=set)

    @property
    def enabled(self) -> bool:
        return bool(self.used_by)


def parse_status(text: str) -> list[StatusEntry]:
    """Parse ``user_events_status`` (6.4+): ``Name[ # Used by ftrace perf other]`` lines,
    a blank line, then ``Active:``/``Busy:`` counters."""
    entries = []
    for line in text.splitlines():
        if not line.strip():
            break
        name, _, used = line.partition("#")
        name = name.strip()
        if not name or name.startswith(("Active:", "Busy:")):
            continue
        users = set(used.replace("Used by", "").split()) if used else set()
        entries.append(StatusEntry(name.split()[0], users))
    return entries


def read_status() -> list[StatusEntry]:
    """The user_events the kernel knows, and who has each enabled."""
    path = find_tracefs() / "user_events_status"
    text = _read(path)
    if text is None:
        if not _present(path):
            raise KernelError(_USER_EVENTS_HINT.format(path=path))
        raise KernelError(f"cannot read {path}: {permission_hint()}")
    return parse_status(text)


def read_format(system: str, name: str) -> str:
    """The ``format`` file of ``system:name``."""
    path = find_tracefs() / "events" / system / name / "format"
    text = _read(path)
    if text is None:
        if not _present(path):
            raise KernelError(f"tracepoint {system}:{name} does not exist ({path} is missing)")
        raise KernelError(f"cannot read {path}: {permission_hint()}")
    return text


def read_user_event_format(name: str) -> EventFormat:
    """The parsed format file of user_event ``name`` (KernelError, FormatError)."""
    from ehtool.formats.tracefs_format import parse_format

    return parse_format(read_format("user_events", name), "user_events")


def read_definition(name: str, fmt: EventFormat | None = None) -> str:
    """A user_event's definition in user_events syntax, rebuilt from its format file
    (``Name u32 a; char[16] b``; ``Name ;`` when it has no fields)."""
    if fmt is None:
        fmt = read_user_event_format(name)
    return definition_text(name, [(f.decl, f.size) for f in fmt.fields])


def definition_text(name: str, fields: Iterable[tuple[str, int]]) -> str:
    """``Name`` and format-file ``(declaration, size)`` pairs in user_events syntax,
    as ``ehtool register`` takes it: ``Name u32 a; char[16] b``, ``Name ;`` for none.

    Array counts come from the size: the kernel leaves a user_event's array
    count uninitialised in its format file (6.12 shows ``char b[8239168]``).
    """
    text = "; ".join(_user_field(decl, size) for decl, size in fields)
    return f"{name} {text}" if text else f"{name} ;"


def _user_field(decl: str, size: int) -> str:
    """``char name[16]`` (format file) -> ``char[16] name``; ``struct T n`` -> ``... SIZE``."""
    if decl.startswith("struct "):
        return f"{decl} {size}"
    if not decl.endswith("]") or "[" not in decl or decl.startswith("__data_loc"):
        return decl
    head, _, count = decl.rpartition("[")
    typ, _, field_name = head.rpartition(" ")
    if typ.startswith("__rel_loc"):
        return f"{typ}[] {field_name}"
    element = _ELEMENT_SIZES.get(typ)
    return f"{typ}[{size // element if element else count[:-1]}] {field_name}"


def event_exists(system: str, name: str) -> bool:
    """True when ``events/<system>/<name>`` exists in tracefs."""
    try:
        return (find_tracefs() / "events" / system / name).is_dir()
    except OSError:  # EACCES: a tracefs we may not look into
        return False


def list_events(system: str) -> list[str]:
    """Names of the tracepoints of one system (empty when none)."""
    try:
        return sorted(os.listdir(find_tracefs() / "events" / system))
    except OSError:
        return []


def permission_hint() -> str:
    """What to do about EACCES/EPERM on tracefs: root, or the tracers-group recipe
    for the tracefs mounted here (one line)."""
    try:
        root = shlex.quote(str(find_tracefs()))
    except KernelError:
        root = str(DEFAULT_TRACEFS)
    return ("permission denied; run as root, or let a 'tracing' group use user_events: "
            f"'sudo groupadd -f tracing; sudo mount -o remount,gid=tracing,mode=750 {root}; "
            f"sudo chmod g+rw {root}/user_events_data; sudo usermod -aG tracing $USER', "
            "then log in again")


def _present(path: Path) -> bool:
    """True when ``path`` exists, or is out of reach (EACCES: tracefs's root is 0700,
    so the caller goes on and reports the permission problem)."""
    try:
        return path.exists()
    except PermissionError:
        return True


def _read(path: str | Path) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return None
