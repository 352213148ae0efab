"""Registering several tracepoints as one operation, holding them, checking definitions.

``check_definition`` applies the kernel's user_events field grammar so a bad
definition is refused with a precise message before anything is registered.
"""

from __future__ import annotations

import contextlib
import re
import signal
from collections.abc import Callable, Iterator

from ehtool.errors import KernelError, UsageError
from ehtool.kernel import tracefs
from ehtool.kernel.user_events import MAX_COMMAND, Registration, UserEvents

_SIMPLE_TYPES = frozenset((
    "u8", "s8", "char", "unsigned char", "u16", "s16", "short", "unsigned short",
    "u32", "s32", "int", "unsigned int", "u64", "s64",
))
_ARRAY = re.compile(r"^(unsigned )?char\[(0x[0-9a-fA-F]+|\d+)\]$")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def check_definition(command: str, source: str = "") -> None:
    """Raise UsageError when the kernel would reject this user_events definition."""
    where = f"{source}: " if source else ""
    if len(command.encode()) + 1 > MAX_COMMAND:
        raise UsageError(f"{where}definition is longer than the kernel's {MAX_COMMAND - 1} "
                         "characters")
    name, _, fields = command.strip().partition(" ")
    if ":" in name:
        raise UsageError(f"{where}{name!r}: current kernels accept no ':flags' after the name"
                         " (to keep an event after exit, use --persist)")
    for number, raw in enumerate(fields.split(";"), 1):
        text = " ".join(raw.split())
        if not text:
            continue
        problem = _field_problem(text)
        if problem:
            raise UsageError(f"{where}field {number} {text!r} of {name}: {problem}")


def _field_problem(text: str) -> str | None:
    words = text.split(" ")
    if words[0] == "struct":
        if len(words) != 4 or not words[3].isdigit() or int(words[3]) == 0:
            return "a struct field is 'struct TYPE NAME SIZE' with a decimal SIZE > 0"
        return None if _NAME.match(words[2]) else f"bad field name {words[2]!r}"
    if words[0] in ("__data_loc", "__rel_loc"):
        if len(words) < 3:
            return f"'{words[0]} TYPE NAME' needs a type and a name"
        return None if _NAME.match(words[-1]) else f"bad field name {words[-1]!r}"
    if len(words) < 2:
        return "a field is 'TYPE NAME'"
    typ, fname = " ".join(words[:-1]), words[-1]
    if "[" in fname:
        return f"write arrays as 'char[N] {fname.split('[')[0]}', not 'char {fname}'"
    if not _NAME.match(fname):
        return f"bad field name {fname!r}"
    match = _ARRAY.match(typ)
    if match:
        count = int(match.group(2), 0)
        return None if 0 < count <= 1024 else "array length must be 1..1024"
    if typ in _SIMPLE_TYPES:
        return None
    if typ in ("long", "unsigned long"):
        return "long is ambiguous for the kernel: use s64/u64 (or s32/u32)"
    return ("unknown type; use u8..u64, s8..s64, char, short, int (unsigned too), char[N], "
            "__data_loc/__rel_loc TYPE NAME, or struct TYPE NAME SIZE")


@contextlib.contextmanager
def register_all(commands: list[str], *, persist: bool = False) -> Iterator[list[Registration]]:
    """Register every command as one operation: all of them, or none.

    Before anything is registered, each command whose event already exists is
    checked against it by the kernel (:meth:`UserEvents.check_compatible`), so a
    conflicting definition is refused first. If a registration still fails,
    the ones made are released and the persisted events this call created
    (not those that existed before) are deleted again.

    Non-persistent registrations are released when the block ends. Persistent
    ones are unregistered from this process at once (the events stay).
    """
    ue = UserEvents.open()
    try:
        yield _register_each(ue, commands, persist)
    finally:
        ue.close()


def _register_each(ue: UserEvents, commands: list[str], persist: bool) -> list[Registration]:
    """Check, then register each command; roll back on any failure (see register_all)."""
    before = existing_events()
    for command in commands:
        if before is not None and command_name(command) in before:
            ue.check_compatible(command)
    regs: list[Registration] = []
    try:
        for command in commands:
            regs.append(ue.register(command, persist=persist))
        if persist:
            for reg in regs:
                reg.unregister()
    except BaseException as exc:
        problem = _roll_back(ue, [r.name for r in regs] if persist else [], before)
        if problem and isinstance(exc, KernelError):
            raise KernelError(f"{exc}\n{problem}") from None
        raise
    return regs


def _roll_back(ue: UserEvents, persisted: list[str], before: set[str] | None) -> str | None:
    """Release this process's registrations, then delete the ``persisted`` events
    that were not in ``before`` (its own enablers block DIAG_IOCSDEL until
    unregistered); say what is left behind, if anything."""
    ue.close()
    if before is None:
        return (f"could not undo --persist: {', '.join(persisted)} may be left registered "
                "(user_events_status is unreadable, so new events cannot be told from older "
                "ones)") if persisted else None
    created = [name for name in persisted if name not in before]
    left = [str(err) for err in delete(created) if "no such user_event" not in str(err)]
    return f"could not undo --persist: {'; '.join(left)}" if left else None


def existing_events() -> set[str] | None:
    """Names of the user_events the kernel has now; None when the status file
    cannot be read (then nothing is checked first or deleted on failure)."""
    try:
        return {entry.name for entry in tracefs.read_status()}
    except KernelError:
        return None


def command_name(command: str) -> str:
    """The event name of a registration command (its first word)."""
    return command.split(None, 1)[0] if command.strip() else ""


@contextlib.contextmanager
def stop_signals() -> Iterator[Callable[[], None]]:
    """Catch SIGINT and SIGTERM (those not ignored) from the start of the block; yield
    ``wait()``, which blocks until one of them has arrived (at once if one already did).

    ``wait`` blocks the two signals, re-checks, then ``sigwait``s, so a signal
    arriving between the check and the wait is not lost.
    """
    signals = {sig for sig in (signal.SIGINT, signal.SIGTERM)  # (one ignored when ehtool
               if signal.getsignal(sig) is not signal.SIG_IGN}  # started stays so: nohup)
    caught: list[int] = []

    def stop(signum: int, frame: object) -> None:
        caught.append(signum)

    def wait() -> None:
        old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, signals)
        try:
            if not caught:
                caught.append(signal.sigwait(signals))
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)

    old = {sig: signal.signal(sig, stop) for sig in signals}
    try:
        yield wait
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)


def delete(names: list[str]) -> list[KernelError]:
    """Delete each event; return the errors (the others are still deleted)."""
    errors = []
    ue = UserEvents.open()
    try:
        for name in names:
            try:
                ue.delete(name)
            except KernelError as exc:
                errors.append(exc)
    finally:
        ue.close()
    return errors
