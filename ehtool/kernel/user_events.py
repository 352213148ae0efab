"""The user_events ABI: register, write, unregister and delete tracepoints.

::

    with UserEvents.open() as ue:
        reg = ue.register("MyProvider_L5K1 " + EVENTHEADER_COMMAND_TYPES)
        if reg.enabled:                 # a perf/ftrace session is listening
            reg.write(event_bytes)      # False when nobody has it enabled (EBADF)
        reg.unregister()

Standard library only (``fcntl.ioctl``, ``os.writev``, ``ctypes``). Each
registration owns a 32-bit enable word that the kernel updates; every kernel
error becomes a :class:`~ehtool.errors.KernelError` that says what to do.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import os
import struct
import time
from pathlib import Path

from ehtool.errors import KernelError
from ehtool.kernel import tracefs

_PTR = struct.calcsize("P")


def _ioc(direction: int, nr: int) -> int:
    """Generic ``_IOC`` encoding (x86, arm, arm64, riscv); the size is sizeof(void*)."""
    return (direction << 30) | (_PTR << 16) | (ord("*") << 8) | nr


DIAG_IOCSREG = _ioc(3, 0)  # _IOWR('*', 0, struct user_reg *)
DIAG_IOCSDEL = _ioc(1, 1)  # _IOW('*', 1, char *)
DIAG_IOCSUNREG = _ioc(1, 2)  # _IOW('*', 2, struct user_unreg *)

#: struct user_reg and struct user_unreg: the grammars of kernel/abi.py written out
#: (``ehtool write`` does not import construct; tests/kernel/test_abi.py compares them)
USER_REG = struct.Struct("=IBBHQQI")
USER_UNREG = struct.Struct("=IBBHQ")
USER_EVENT_REG_PERSIST = 0x1
#: longest registration command the kernel takes (MAX_EVENT_DESC, with the NUL)
MAX_COMMAND = 512

#: enable words the kernel may still update, by address. The kernel ties an
#: enabler to the process's memory, not to the fd, so a word must outlive its
#: Registration object until DIAG_IOCSUNREG succeeds.
_LIVE_WORDS: dict[int, ctypes.c_uint32] = {}


class Registration:
    """One registered tracepoint on an open ``user_events_data`` descriptor."""

    def __init__(self, owner: UserEvents, name: str, command: str, write_index: int,
                 word: ctypes.c_uint32) -> None:
        self.owner = owner
        self.name = name
        self.command = command
        self.write_index = write_index
        self._word = word
        self._index = struct.pack("=i", write_index)
        self.active = True

    @property
    def enabled(self) -> bool:
        """True while a perf/ftrace/eBPF session has the tracepoint enabled."""
        return bool(self._word.value & 1)

    def write(self, *buffers: bytes) -> bool:
        """Write one event (the buffers concatenated) with a single ``writev``.

        Returns False when the kernel answers EBADF: nobody has it enabled.
        """
        try:
            os.writev(self.owner.fd, [self._index, *buffers])
        except OSError as exc:
            if exc.errno == errno.EBADF:
                return False
            raise _write_error(self, exc) from None
        return True

    def unregister(self) -> None:
        """Stop the kernel updating the enable word (DIAG_IOCSUNREG)."""
        if not self.active:
            return
        arg = bytearray(USER_UNREG.pack(USER_UNREG.size, 0, 0, 0, ctypes.addressof(self._word)))
        try:
            fcntl.ioctl(self.owner.fd, DIAG_IOCSUNREG, arg, True)
        except OSError as exc:
            raise KernelError(f"cannot unregister {self.name}: {exc.strerror}") from None
        self.active = False
        _LIVE_WORDS.pop(ctypes.addressof(self._word), None)

    def __repr__(self) -> str:
        return f"Registration({self.name!r}, write_index={self.write_index})"


class UserEvents:
    """An open ``user_events_data`` file: the handle all registrations go through."""

    def __init__(self, fd: int, path: Path) -> None:
        self.fd = fd
        self.path = path
        self.registrations: list[Registration] = []

    @classmethod
    def open(cls, path: Path | None = None) -> UserEvents:
        path = path or tracefs.user_events_data_path()
        try:
            fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
        except OSError as exc:
            raise _open_error(path, exc) from None
        return cls(fd, Path(path))

    def register(self, command: str, *, persist: bool = False) -> Registration:
        """Register a tracepoint from its user_events command (``Name fields...``)."""
        name = command.split(None, 1)[0] if command.strip() else ""
        raw = command.encode()
        if len(raw) + 1 > MAX_COMMAND:
            raise KernelError(f"definition of {name} is {len(raw) + 1} bytes with its NUL; "
                              f"the kernel takes at most {MAX_COMMAND}")
        word = ctypes.c_uint32(0)
        text = ctypes.create_string_buffer(raw)
        flags = USER_EVENT_REG_PERSIST if persist else 0
        arg = bytearray(USER_REG.pack(USER_REG.size, 0, 4, flags, ctypes.addressof(word),
                                      ctypes.addressof(text), 0))
        try:
            fcntl.ioctl(self.fd, DIAG_IOCSREG, arg, True)
        except OSError as exc:
            raise self._register_error(name, command, persist, exc) from None
        _LIVE_WORDS[ctypes.addressof(word)] = word
        reg = Registration(self, name, command, USER_REG.unpack(arg)[6], word)
        self.registrations.append(reg)
        return reg

    def delete(self, name: str) -> None:
        """Delete an event that nothing uses any more (DIAG_IOCSDEL, from a fresh fd)."""
        fd = os.open(self.path, os.O_RDWR | os.O_CLOEXEC)
        try:
            # the kernel drops references asynchronously: retry EBUSY for a moment
            for delay in (0.05, 0.1, 0.2, 0.4, 0.0):
                try:
                    fcntl.ioctl(fd, DIAG_IOCSDEL, name.encode() + b"\0")
                    return
                except OSError as exc:
                    if exc.errno != errno.EBUSY or not delay:
                        raise _delete_error(name, exc) from None
                time.sleep(delay)
        finally:
            os.close(fd)

    def close(self) -> None:
        """Unregister what is still registered and close the descriptor."""
        if self.fd < 0:
            return
        for reg in self.registrations:
            with contextlib.suppress(KernelError):
                reg.unregister()
        self.registrations.clear()
        os.close(self.fd)
        self.fd = -1

    def __enter__(self) -> UserEvents:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _register_error(self, name: str, command: str, persist: bool,
                        exc: OSError) -> KernelError:
        code = exc.errno
        if code == errno.EADDRINUSE:
            return _conflict_error(name, command)
        if code == errno.EPERM and persist:
            return KernelError(f"cannot register {name} with --persist: it needs CAP_PERFMON "
                               "(or CAP_SYS_ADMIN); run as root")
        if code in (errno.EACCES, errno.EPERM):
            return KernelError(f"cannot register {name}: {tracefs.permission_hint()}")
        if code == errno.EMFILE:
            return KernelError(f"cannot register {name}: the kernel's user_events limit is "
                               "reached (sysctl kernel.user_events_max)")
        if code == errno.EINVAL:
            if persist and self._accepts_without_persist(command):
                return KernelError(f"cannot register {name} with --persist: this kernel does "
                                   "not support USER_EVENT_REG_PERSIST (Linux 6.7 or later)")
            return KernelError(f"the kernel rejected the definition {command!r} (EINVAL): "
                               "check the name and field types (u8..u64, s8..s64, char[N], "
                               "__rel_loc/__data_loc, struct T name SIZE)")
        if code == errno.ENOTTY:
            return KernelError("this kernel's user_events ABI is too old (needs Linux 6.4+)")
        return KernelError(f"cannot register {name}: {exc.strerror} ({errno.errorcode.get(code)})")

    def check_compatible(self, command: str) -> None:
        """Raise the KernelError the kernel gives ``command`` (EADDRINUSE: the name
        exists with other fields) without keeping anything.

        Registers without persist and unregisters at once: the kernel's own
        comparison, which creates nothing when the event already exists.
        """
        reg = self.register(command)
        self.registrations.remove(reg)
        reg.unregister()

    def _accepts_without_persist(self, command: str) -> bool:
        try:
            self.check_compatible(command)
        except KernelError:
            return False
        return True


def _conflict_error(name: str, command: str) -> KernelError:
    """EADDRINUSE at registration: both definitions, and what to do."""
    existing = _existing_definition(name)
    what = (f"a different definition:\n  existing: {existing}" if existing is not None
            else "different fields (its format cannot be read)")
    return KernelError(f"{name} is already registered with {what}\n  yours:    {command}\n"
                       f"delete the existing one ('ehtool unregister {name}') once nothing "
                       "uses it, or use a new name")


def _existing_definition(name: str) -> str | None:
    """The definition of a registered event, rebuilt from its format file."""
    try:
        return tracefs.read_definition(name)
    except (KernelError, ValueError):
        return None


def _open_error(path: Path, exc: OSError) -> KernelError:
    if exc.errno in (errno.EACCES, errno.EPERM):
        return KernelError(f"cannot open {path}: {tracefs.permission_hint()}")
    if exc.errno == errno.ENOENT:
        return KernelError(f"{path} is missing: the kernel needs CONFIG_USER_EVENTS=y (6.4+)")
    return KernelError(f"cannot open {path}: {exc.strerror}")


def _delete_error(name: str, exc: OSError) -> KernelError:
    if exc.errno == errno.EBUSY:
        users = ""
        try:
            for entry in tracefs.read_status():
                if entry.name == name and entry.used_by:
                    users = f" (enabled by {', '.join(sorted(entry.used_by))})"
        except KernelError:
            pass
        return KernelError(f"{name} is still in use{users}: stop the sessions and processes "
                           "that use it, then try again")
    if exc.errno == errno.ENOENT:
        return KernelError(f"{name}: no such user_event")
    if exc.errno == errno.EPERM:
        return KernelError(f"cannot delete {name}: deleting a persistent event needs "
                           "CAP_PERFMON; run as root")
    return KernelError(f"cannot delete {name}: {exc.strerror}")


def _write_error(reg: Registration, exc: OSError) -> KernelError:
    if exc.errno == errno.E2BIG:
        return KernelError(f"{reg.name}: event too large for the kernel (E2BIG)")
    if exc.errno == errno.EINVAL:
        return KernelError(f"{reg.name}: the kernel refused the event (EINVAL: shorter than "
                           "the declared fields?)")
    if exc.errno == errno.EFAULT:
        return KernelError(f"{reg.name}: a dynamic field does not lie inside the event or a "
                           "char field lacks its NUL (EFAULT)")
    return KernelError(f"{reg.name}: write failed: {exc.strerror}")
