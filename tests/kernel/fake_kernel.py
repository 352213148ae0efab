"""A fake user_events kernel for tests without one: ``fcntl.ioctl`` of
``ehtool.kernel.user_events`` answered in Python, with a tracefs directory
(``user_events_status``, ``events/user_events/<name>/format``) kept in step.

It models what ``register_all`` depends on (checked on a 6.12 guest):

* the kernel's field comparison: a name that exists with other fields is
  EADDRINUSE, the same fields reuse the event;
* an event is referenced by every enabler (DIAG_IOCSREG until DIAG_IOCSUNREG),
  whatever the fd; a non-persistent event goes away with its last enabler,
  a persistent one stays until DIAG_IOCSDEL, which is EBUSY while referenced;
* format files show arrays with a garbage count, as 6.12 does.
"""

from __future__ import annotations

import ctypes
import errno
import os
import re
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import NoReturn

from ehtool.kernel import tracefs, user_events

_SIZES = {"u8": 1, "s8": 1, "char": 1, "unsigned char": 1, "u16": 2, "s16": 2, "short": 2,
          "u32": 4, "s32": 4, "int": 4, "unsigned int": 4, "u64": 8, "s64": 8}
GARBAGE_COUNT = 8239168  # what 6.12 prints as the count of a user_event's array
OTHER_PROCESS = -1  # an enabler address standing for another process's registration


@dataclass
class FakeEvent:
    fields: list[str]  # normalised "type name" strings, as the kernel compares them
    persist: bool
    enablers: set[int] = field(default_factory=set)


class FakeKernel:
    """Install with :meth:`install`; ``fail`` maps an event name to the errno its
    registration gets (once it is new); ``log`` records every ioctl."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.events: dict[str, FakeEvent] = {}
        self.fail: dict[str, int] = {}
        self.log: list[tuple[str, str]] = []
        self._next_index = 0
        (root / "events" / "user_events").mkdir(parents=True, exist_ok=True)
        (root / "user_events_data").touch()
        self._write_status()

    def install(self, monkeypatch) -> FakeKernel:
        monkeypatch.setattr(tracefs, "find_tracefs", lambda: self.root)
        monkeypatch.setattr(user_events, "fcntl", _FcntlModule(self))
        return self

    def add(self, command: str, *, persist: bool = True, held: bool = False) -> None:
        """An event that exists before the test (``held``: another process holds it)."""
        name, fields = _split(command)
        self._create(name, fields, persist)
        if held:
            self.events[name].enablers.add(OTHER_PROCESS)

    def ioctl(self, fd: int, request: int, arg, mutate: bool = False) -> int:
        if request == user_events.DIAG_IOCSREG:
            return self._register(arg)
        if request == user_events.DIAG_IOCSUNREG:
            return self._unregister(arg)
        if request == user_events.DIAG_IOCSDEL:
            return self._delete(bytes(arg).rstrip(b"\0").decode())
        raise OSError(errno.ENOTTY, os.strerror(errno.ENOTTY))

    def _register(self, arg: bytearray) -> int:
        _, _, _, flags, addr, name_args, _ = user_events.USER_REG.unpack(arg)
        command = ctypes.string_at(name_args).decode()
        name, fields = _split(command)
        persist = bool(flags & user_events.USER_EVENT_REG_PERSIST)
        self.log.append(("reg+persist" if persist else "reg", command))
        event = self.events.get(name)
        if event is not None and event.fields != fields:
            _raise(errno.EADDRINUSE)
        if event is None:
            if name in self.fail:
                _raise(self.fail[name])
            event = self._create(name, fields, persist)
        event.enablers.add(addr)
        self._next_index += 1
        arg[24:28] = struct.pack("=I", self._next_index)
        return 0

    def _unregister(self, arg: bytearray) -> int:
        addr = user_events.USER_UNREG.unpack(arg)[4]
        for name, event in list(self.events.items()):
            if addr in event.enablers:
                self.log.append(("unreg", name))
                event.enablers.discard(addr)
                if not event.enablers and not event.persist:
                    self._remove(name)
                return 0
        _raise(errno.ENOENT)

    def _delete(self, name: str) -> int:
        self.log.append(("del", name))
        event = self.events.get(name)
        if event is None:
            _raise(errno.ENOENT)
        if event.enablers:
            _raise(errno.EBUSY)
        self._remove(name)
        return 0

    def _create(self, name: str, fields: list[str], persist: bool) -> FakeEvent:
        event = self.events[name] = FakeEvent(fields, persist)
        folder = self.root / "events" / "user_events" / name
        folder.mkdir()
        (folder / "format").write_text(_format_file(name, fields))
        self._write_status()
        return event

    def _remove(self, name: str) -> None:
        del self.events[name]
        folder = self.root / "events" / "user_events" / name
        (folder / "format").unlink()
        folder.rmdir()
        self._write_status()

    def _write_status(self) -> None:
        lines = "".join(f"{name}\n" for name in self.events)
        (self.root / "user_events_status").write_text(
            f"{lines}\nActive: {len(self.events)}\nBusy: 0\nMax: 32768\n")


class _FcntlModule:
    """Stands in for the ``fcntl`` module inside ``ehtool.kernel.user_events``."""

    def __init__(self, kernel: FakeKernel) -> None:
        self.ioctl = kernel.ioctl


def _raise(code: int) -> NoReturn:
    raise OSError(code, os.strerror(code))


def _split(command: str) -> tuple[str, list[str]]:
    """(name, fields) compared the kernel's way: blanks collapsed, ';' ends a field."""
    name, _, args = command.partition(" ")
    return name, [" ".join(f.split()) for f in args.split(";") if f.strip()]


def _format_file(name: str, fields: list[str]) -> str:
    lines, offset = [], 8
    for text in fields:
        decl, size = _decl(text)
        lines.append(f"\tfield:{decl};\toffset:{offset};\tsize:{size};\tsigned:0;\n")
        offset += size
    common = ("\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
              "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n")
    return f"name: {name}\nID: 1\nformat:\n{common}{''.join(lines)}\nprint fmt: \"\"\n"


def _decl(text: str) -> tuple[str, int]:
    """A field as the 6.12 format file shows it, and its size."""
    words = text.split(" ")
    if words[0] == "struct":
        return " ".join(words[:3]), int(words[3])
    typ, fname = " ".join(words[:-1]), words[-1]
    if typ.startswith(("__data_loc", "__rel_loc")):
        if typ.startswith("__rel_loc") and "[" in typ:
            return f"{typ.split('[')[0]} {fname}[{GARBAGE_COUNT}]", 4
        return text, 4
    array = re.fullmatch(r"(.*)\[(\w+)\]", typ)
    if array:
        return f"{array.group(1)} {fname}[{GARBAGE_COUNT}]", int(array.group(2), 0)
    return text, _SIZES[typ]
