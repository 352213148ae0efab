"""Finding tracefs and reading what it says about user_events.

Discovery follows the reference libraries: ``/sys/kernel/tracing`` first,
then a ``tracefs`` line of ``/proc/mounts`` (which wins), then a ``debugfs``
mount's ``tracing`` directory. Standard library only.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from ehtool.errors import KernelError

DEFAULT_TRACEFS = Path("/sys/kernel/tracing")

_MOUNT_HINT = ("tracefs is not mounted; mount it with "
               "'sudo mount -t tracefs nodev /sys/kernel/tracing'")
_USER_EVENTS_HINT = ("this kernel has no user_events ({path} is missing): it needs "
                     "CONFIG_USER_EVENTS=y (Linux 6.4 or later)")


@cache
def find_tracefs() -> Path:
    """The tracefs mount point; KernelError saying how to mount it when there is none."""
    if (DEFAULT_TRACEFS / "events").is_dir() or (DEFAULT_TRACEFS / "user_events_data").exists():
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
    if not path.exists():
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
        if not path.exists():
            raise KernelError(_USER_EVENTS_HINT.format(path=path))
        raise KernelError(f"cannot read {path}: {permission_hint()}")
    return parse_status(text)


def read_format(system: str, name: str) -> str:
    """The ``format`` file of ``system:name``."""
    path = find_tracefs() / "events" / system / name / "format"
    text = _read(path)
    if text is None:
        if not path.exists():
            raise KernelError(f"tracepoint {system}:{name} does not exist ({path} is missing)")
        raise KernelError(f"cannot read {path}: {permission_hint()}")
    return text


def read_definition(name: str) -> str:
    """A user_event's definition in user_events syntax, rebuilt from its format file
    (``Name u32 a; char[16] b``; just ``Name`` when it has no fields)."""
    from ehtool.perfdata.tracefs_format import parse_format

    fmt = parse_format(read_format("user_events", name), "user_events")
    return definition_text(name, [f.decl for f in fmt.fields])


def definition_text(name: str, decls: list[str]) -> str:
    """``Name`` plus format-file field declarations rewritten in user_events syntax."""
    fields = "; ".join(_user_type(decl) for decl in decls)
    return f"{name} {fields}" if fields else name


def _user_type(decl: str) -> str:
    """``char name[16]`` (format file) -> ``char[16] name`` (user_events syntax)."""
    if decl.endswith("]") and "[" in decl and not decl.startswith(("__data_loc", "__rel_loc")):
        head, _, count = decl.rpartition("[")
        typ, _, name = head.rpartition(" ")
        return f"{typ}[{count} {name}"
    return decl


def event_exists(system: str, name: str) -> bool:
    """True when ``events/<system>/<name>`` exists in tracefs."""
    return (find_tracefs() / "events" / system / name).is_dir()


def list_events(system: str) -> list[str]:
    """Names of the tracepoints of one system (empty when none)."""
    try:
        return sorted(os.listdir(find_tracefs() / "events" / system))
    except OSError:
        return []


def permission_hint() -> str:
    """What to do about EACCES/EPERM on tracefs."""
    return ("permission denied; run as root, or let a 'tracing' group use it: "
            "'sudo mount -o remount,gid=tracing,mode=750 /sys/kernel/tracing' and "
            "'sudo chmod g+rw /sys/kernel/tracing/user_events_data'")


def _read(path: str | Path) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return None
