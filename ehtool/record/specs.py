"""Tracepoint specs for ``ehtool record``, as the reference collector reads them.

A spec is one of:

* ``MyProvider_L5K1`` (optionally ``user_events:``-prefixed, optionally
  ``:FLAGS``): an EventHeader tracepoint, registered by ehtool when missing;
* ``'MyEvent u32 a; char[16] b'`` (a name, whitespace, fields; ``'MyEvent ;'``
  for none): a plain user_events definition, registered when missing;
* ``:sched:sched_switch`` or ``:MyEvent`` (leading colon): a tracepoint that
  must already exist; never registered.

Empty specs and ``#`` comments are skipped. ``--provider P --level 1-5
--keyword 0x1,0x2`` expands to EventHeader names (every level x keyword).
Standard library only.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ehtool.errors import InputError, UsageError
from ehtool.eventheader.names import (
    EVENTHEADER_COMMAND_TYPES,
    NAME_MAX,
    USER_EVENTS_SYSTEM,
    InvalidNameError,
    build,
    parse,
)

_SPACE = " \t\n\v\f\r"
_FORBIDDEN = {"\0": "NUL", " ": "a space", "/": "'/'", ":": "':'"}


class SpecError(UsageError):
    """A tracepoint spec that cannot be used (names where it came from)."""


class SpecKind(enum.Enum):
    """How a spec's tracepoint is obtained."""

    IDENTIFIER = "identifier"  # must exist already
    EVENTHEADER = "eventheader"  # registered with the EventHeader fields when missing
    DEFINITION = "definition"  # registered with its own fields when missing


@dataclass(frozen=True, slots=True)
class TracepointSpec:
    """One parsed spec: which tracepoint, and how to register it if needed."""

    kind: SpecKind
    system: str
    name: str
    flags: str = ""
    fields: str = ""
    source: str = ""

    @property
    def tracepoint(self) -> str:
        """``system:name``, as perf's ``-e`` wants it."""
        return f"{self.system}:{self.name}"

    def check_registrable(self) -> None:
        """SpecError for an EventHeader name ehtool must not register as given: one no
        producer writes to (``P_L05K1``: producers write ``P_L5K1``; see names.parse)."""
        if self.kind is not SpecKind.EVENTHEADER:
            return
        try:
            parse(self.name, canonical=True)
        except InvalidNameError as exc:
            where = f"{self.source}: " if self.source else ""
            raise SpecError(f"{where}{exc}") from None

    @property
    def command(self) -> str | None:
        """The user_events registration command, or None for identifiers."""
        if self.kind is SpecKind.IDENTIFIER:
            return None
        head = f"{self.name}:{self.flags}" if self.flags else self.name
        fields = EVENTHEADER_COMMAND_TYPES if self.kind is SpecKind.EVENTHEADER else self.fields
        return f"{head} {fields}" if fields else head


def parse_spec(text: str, source: str = "") -> TracepointSpec | None:
    """Parse one spec; None for an empty line or a ``#`` comment.

    Raises :class:`SpecError` naming ``source`` (e.g. "argument 2", "specs.txt:4").
    """
    trimmed = text.strip(_SPACE)
    if not trimmed or trimmed.startswith("#"):
        return None
    where = f"{source}: " if source else ""

    def fail(message: str) -> SpecError:
        return SpecError(f"{where}{message} (in spec {trimmed!r})")

    if trimmed.startswith(":"):
        ident = trimmed[1:].lstrip(_SPACE)
        if any(ch in _SPACE for ch in ident):
            raise fail("an existing-tracepoint spec (leading ':') cannot have fields")
        parts = ident.split(":")
        if len(parts) > 2:
            raise fail("an existing-tracepoint spec (leading ':') cannot have flags")
        system, name = parts if len(parts) == 2 else (USER_EVENTS_SYSTEM, parts[0])
        _check_system(system, fail)
        _check_event(name, fail)
        return TracepointSpec(SpecKind.IDENTIFIER, system, name, source=source)

    head, fields = _split_head(trimmed)
    parts = head.split(":")
    if len(parts) > 3:
        raise fail("a definition cannot have a ':' after its flags")
    if len(parts) == 1:
        system, name, flags = USER_EVENTS_SYSTEM, parts[0], ""
    else:
        system, name = parts[0], parts[1]
        flags = parts[2] if len(parts) == 3 else ""
    _check_system(system, fail)
    _check_event(name, fail)
    if system != USER_EVENTS_SYSTEM:
        raise fail(f"system {system!r} cannot be registered: only {USER_EVENTS_SYSTEM!r} can; "
                   f"for an existing tracepoint add a leading ':' (':{system}:{name}')")
    if fields is not None:
        fields = fields.rstrip(_SPACE + ";")
        return TracepointSpec(SpecKind.DEFINITION, system, name, flags, fields, source)
    try:
        parse(name)
    except InvalidNameError as exc:
        raise fail(
            f"{exc}; for an existing tracepoint add a leading ':' (':{name}'), for a plain "
            f"user_events definition give its fields ('{name} u32 a', or '{name} ;' for none)"
        ) from None
    return TracepointSpec(SpecKind.EVENTHEADER, system, name, flags, source=source)


def read_spec_file(path: str | Path) -> list[TracepointSpec]:
    """Specs from a file, one a line (blank lines and ``#`` comments skipped).

    ``-`` reads standard input (UTF-8); its lines are named ``<stdin>:N`` in errors.
    """
    import sys

    from_stdin = str(path) == "-"
    label = "<stdin>" if from_stdin else str(path)
    try:
        if from_stdin:
            stream = getattr(sys.stdin, "buffer", None)
            text = stream.read().decode("utf-8") if stream is not None else sys.stdin.read()
        else:
            text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{label}: cannot read spec file: {_brief(exc)}") from None
    specs = []
    for number, line in enumerate(text.splitlines(), 1):
        spec = parse_spec(line, f"{label}:{number}")
        if spec is not None:
            specs.append(spec)
    return specs


def expand_provider(provider: str, levels: str = "1-5", keywords: str = "0x1",
                    group: str | None = None) -> list[TracepointSpec]:
    """EventHeader specs for every (level, keyword) of a provider.

    ``levels``: comma list of N or N-M (decimal or 0x hex); ``keywords``: comma
    list of integers (0x hex or decimal).
    """
    level_values = parse_int_list(levels, "--level", allow_ranges=True)
    keyword_values = parse_int_list(keywords, "--keyword", allow_ranges=False)
    specs = []
    for level in level_values:
        for keyword in keyword_values:
            try:
                name = str(build(provider, level, keyword, group=group))
            except InvalidNameError as exc:
                raise SpecError(f"--provider {provider!r}: {exc}") from None
            specs.append(TracepointSpec(SpecKind.EVENTHEADER, USER_EVENTS_SYSTEM, name,
                                        source="--provider"))
    return specs


def parse_int_list(text: str, option: str, *, allow_ranges: bool) -> list[int]:
    """``"1-3,5"`` -> [1, 2, 3, 5] (duplicates removed, order kept)."""
    values: list[int] = []
    for item in text.split(","):
        item = item.strip()
        lo_text, sep, hi_text = item.partition("-") if allow_ranges else (item, "", "")
        try:
            lo = int(lo_text, 0)
            hi = int(hi_text, 0) if sep else lo
        except ValueError:
            raise SpecError(f"{option} {text!r}: {item!r} is not a number "
                            f"(use decimal or 0x hex{', or N-M' if allow_ranges else ''})"
                            ) from None
        if lo < 0:
            raise SpecError(f"{option} {text!r}: {item!r} is negative")
        if hi < lo:
            raise SpecError(f"{option} {text!r}: bad range {item!r}")
        if hi - lo > 255:
            raise SpecError(f"{option} {text!r}: range {item!r} is too long")
        for value in range(lo, hi + 1):
            if value not in values:
                values.append(value)
    return values


def collect_specs(texts: Iterable[str], files: Iterable[str], provider: str | None,
                  levels: str, keywords: str, group: str | None) -> list[TracepointSpec]:
    """Specs from command-line arguments, ``-i`` files and the ``--provider`` expansion,
    merged (see :func:`merge_specs`); arguments are named "argument N" in errors."""
    specs = []
    for number, text in enumerate(texts, 1):
        spec = parse_spec(text, f"argument {number}")
        if spec is not None:
            specs.append(spec)
    for path in files:
        specs.extend(read_spec_file(path))
    if provider is not None:
        specs.extend(expand_provider(provider, levels, keywords, group))
    elif group is not None:
        raise SpecError("--group needs --provider")
    return merge_specs(specs)


def merge_specs(specs: Iterable[TracepointSpec]) -> list[TracepointSpec]:
    """Drop repeats of the same tracepoint; a name given two different ways is an error."""
    seen: dict[str, TracepointSpec] = {}
    for spec in specs:
        old = seen.get(spec.tracepoint)
        if old is None:
            seen[spec.tracepoint] = spec
        elif old.kind is SpecKind.IDENTIFIER:
            seen[spec.tracepoint] = spec  # a registrable spec is more useful
        elif spec.kind is not SpecKind.IDENTIFIER and spec.command != old.command:
            raise SpecError(
                f"{spec.tracepoint} is given twice with different definitions: "
                f"{old.command!r} ({old.source or 'spec'}) and "
                f"{spec.command!r} ({spec.source or 'spec'})"
            )
    return list(seen.values())


def _split_head(trimmed: str) -> tuple[str, str | None]:
    """(name part, fields or None) split at the first whitespace."""
    for i, ch in enumerate(trimmed):
        if ch in _SPACE:
            return trimmed[:i], trimmed[i:].lstrip(_SPACE)
    return trimmed, None


def _check_system(system: str, fail) -> None:
    _check_name(system, "system name", fail)


def _check_event(name: str, fail) -> None:
    _check_name(name, "event name", fail)


def _check_name(value: str, what: str, fail) -> None:
    if not value:
        raise fail(f"the {what} is empty")
    if len(value) > NAME_MAX:
        raise fail(f"the {what} is {len(value)} characters; the limit is {NAME_MAX}")
    for ch, label in _FORBIDDEN.items():
        if ch in value:
            raise fail(f"the {what} {value!r} must not contain {label}")


def _brief(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc)
