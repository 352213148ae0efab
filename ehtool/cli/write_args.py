"""``ehtool write``'s option values, shared by the click command and the
click-free fast path (:mod:`ehtool.cli.fast_write`). No third-party imports."""

from __future__ import annotations

from ehtool.eventheader.enums import Level, Opcode

#: level and opcode names (the EventHeader enums', lower case, and short aliases)
LEVELS = {**{m.name.lower(): int(m) for m in Level if m},
          "critical": Level.CRITICAL_ERROR, "info": Level.INFORMATION}
OPCODES = {**{m.name.lower(): int(m) for m in Opcode},
           "start": Opcode.ACTIVITY_START, "stop": Opcode.ACTIVITY_STOP}


def _number(value: str) -> int:
    """A decimal (leading zeros too: ``010`` is ten) or 0x hex number; ValueError."""
    try:
        return int(value, 0)
    except ValueError:
        return int(value, 10)


def named_int(value: str, table: dict[str, int], what: str, lo: int, hi: int) -> int:
    """A number (decimal or 0x hex) or a name from ``table``; ValueError says why not."""
    number = table.get(value.lower())
    if number is None:
        try:
            number = _number(value)
        except ValueError:
            raise ValueError(f"{value!r}: give a number or one of {', '.join(table)}") from None
    if not lo <= number <= hi:
        raise ValueError(f"{what} must be {lo}..{hi}")
    return number


def ranged_int(value: str, lo: int, hi: int) -> int:
    """A number (decimal or 0x hex) in ``lo..hi``; ValueError says why not."""
    try:
        number = _number(value)
    except ValueError:
        raise ValueError(f"{value!r} is not a number (decimal or 0x hex)") from None
    if not lo <= number <= hi:
        raise ValueError(f"must be {lo}..{hi:#x}")
    return number


#: option -> (parameter name, converter) for the options that take a value
VALUE_OPTIONS = {
    "--level": ("level", lambda v: named_int(v, LEVELS, "level", 1, 255)),
    "--keyword": ("keyword", lambda v: ranged_int(v, 0, (1 << 64) - 1)),
    "--opcode": ("opcode", lambda v: named_int(v, OPCODES, "opcode", 0, 255)),
    "--id": ("id", lambda v: ranged_int(v, 0, 0xFFFF)),
    "--version": ("version", lambda v: ranged_int(v, 0, 0xFF)),
    "--tag": ("tag", lambda v: ranged_int(v, 0, 0xFFFF)),
    "--activity": ("activity", str),
    "--related-activity": ("related_activity", str),
    "--group": ("group", str),
}


def write_one(provider: str, event: str, fields: list[str], values: dict, *,
              require_enabled: bool, dry_run: bool, say, out=None) -> int:
    """Write one event from command-line text; ``values`` holds the converted
    header options by parameter name. Returns the exit status."""
    import sys

    from ehtool.provider.writer import EventWriter, WriteDefaults

    writer = EventWriter(dry_run=dry_run, out=out or sys.stdout, say=say)
    try:
        return writer.one(provider, event, fields, WriteDefaults(**values),
                          require_enabled=require_enabled)
    finally:
        writer.close()
