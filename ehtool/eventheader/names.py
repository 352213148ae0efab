"""EventHeader tracepoint names: ``Provider_L<level>K<keyword>[Options]``.

A name is built with ``"%s_L%xK%x%s"`` (lowercase hex, no leading zeros) and is
at most 255 characters. Options are zero or more groups of one uppercase
letter followed by lowercase letters and digits; only ``G`` (provider group)
is defined. ``parse`` follows the decoders (last ``_`` splits the provider
off) and ``build`` refuses anything a reference producer would refuse, each
error naming the rule that was broken.
"""

from __future__ import annotations

from typing import NamedTuple

#: user_events field list that every EventHeader tracepoint is registered with
EVENTHEADER_COMMAND_TYPES = "u8 eventheader_flags; u8 version; u16 id; u16 tag; u8 opcode; u8 level"
#: longest tracepoint name (EVENTHEADER_NAME_MAX - 1)
NAME_MAX = 255
#: the tracefs system that user_events live in
USER_EVENTS_SYSTEM = "user_events"

_HEX = frozenset("0123456789abcdef")
_OPTION_BODY = frozenset("0123456789abcdefghijklmnopqrstuvwxyz")
_UPPER = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ")
_FORBIDDEN = {"\0": "NUL", " ": "space", ":": "':'", "/": "'/'"}


class InvalidNameError(ValueError):
    """A tracepoint or provider name that breaks a naming rule."""


class TracepointName(NamedTuple):
    """The parts of an EventHeader tracepoint name."""

    provider: str
    level: int
    keyword: int
    options: str = ""

    @property
    def group(self) -> str | None:
        """The provider group (``G`` option), if any."""
        return option_value(self.options, "G")

    def __str__(self) -> str:
        return f"{self.provider}_L{self.level:x}K{self.keyword:x}{self.options}"

    @property
    def command(self) -> str:
        """The user_events registration command for this tracepoint."""
        return f"{self} {EVENTHEADER_COMMAND_TYPES}"


def parse(name: str, *, canonical: bool = False) -> TracepointName:
    """Parse an EventHeader tracepoint name; raise ``InvalidNameError`` naming the broken rule.

    Like the reference validator (and decoders), this accepts leading zeros in
    the level and keyword (``P_L05K01``), so ``str()`` of the result may differ
    from ``name``. A name to *register* must be ``canonical``: exactly what
    producers write to (``%x``, no leading zeros), since the kernel sees the
    literal text and ``P_L05K1`` would be a tracepoint no producer uses.
    """
    _check_event_name(name)
    cut = name.rfind("_")
    if cut < 0:  # an empty provider ("_L1K1") is accepted, as the reference tools do
        raise InvalidNameError(
            f"{name!r} is not an EventHeader name: it needs a provider, then '_L<level>K<keyword>'"
        )
    provider, rest = name[:cut], name[cut + 1 :]
    if not rest.startswith("L"):
        raise InvalidNameError(f"{name!r}: the part after the last '_' must start with 'L<level>'")
    level_hex, pos = _hex_run(rest, 1)
    if not level_hex:
        raise InvalidNameError(f"{name!r}: 'L' must be followed by the level in lowercase hex")
    if pos == len(rest) or rest[pos] != "K":
        raise InvalidNameError(f"{name!r}: the level must be followed by 'K<keyword>'")
    keyword_hex, pos = _hex_run(rest, pos + 1)
    if not keyword_hex:
        raise InvalidNameError(f"{name!r}: 'K' must be followed by the keyword in lowercase hex")
    options = rest[pos:]
    _check_options(name, options)
    level = int(level_hex, 16)
    if not 1 <= level <= 255:
        raise InvalidNameError(f"{name!r}: level must be 1..255 (0x1..0xff), not {level_hex}")
    keyword = int(keyword_hex, 16)
    if keyword >= 1 << 64:
        raise InvalidNameError(f"{name!r}: keyword {keyword_hex} does not fit in 64 bits")
    tp = TracepointName(provider, level, keyword, options)
    if canonical and str(tp) != name:
        raise InvalidNameError(f"{name!r}: level and keyword are lowercase hex without leading "
                               f"zeros: producers write to {str(tp)!r}")
    return tp


def is_eventheader_name(name: str) -> bool:
    """True when ``name`` parses as an EventHeader tracepoint name."""
    try:
        parse(name)
    except InvalidNameError:
        return False
    return True


def build(provider: str, level: int, keyword: int, group: str | None = None,
          options: str = "") -> TracepointName:
    """Build and validate a tracepoint name from its parts.

    ``group`` adds a ``G<group>`` option; ``options`` is raw option text
    (letters sorted, e.g. ``"Gmygroup"``).
    """
    check_provider(provider)
    if not isinstance(level, int) or not 1 <= level <= 255:
        raise InvalidNameError(f"level must be 1..255, not {level!r}")
    if not isinstance(keyword, int) or not 0 <= keyword < 1 << 64:
        raise InvalidNameError(f"keyword must be a 64-bit unsigned value, not {keyword!r}")
    if group is not None:
        if not isinstance(group, str) or not group or any(ch not in _OPTION_BODY for ch in group):
            raise InvalidNameError(
                f"group {group!r} must be one or more lowercase ASCII letters or digits"
            )
        options = _merge_option(options, "G", group)
    tp = TracepointName(provider, level, keyword, options)
    name = str(tp)
    _check_event_name(name)
    _check_options(name, options)
    return tp


def check_provider(provider: str) -> None:
    """Validate a provider name: not empty, no space, ':', '/' or NUL, fits in a name."""
    if not isinstance(provider, str) or not provider:
        raise InvalidNameError(f"the provider name must be a non-empty string, not {provider!r}")
    for ch, what in _FORBIDDEN.items():
        if ch in provider:
            raise InvalidNameError(f"provider name {provider!r} must not contain {what}")
    if any(ch.isspace() or ord(ch) < 32 for ch in provider):
        raise InvalidNameError(f"provider name {provider!r} must not contain whitespace or "
                               "control characters")
    if len(provider) > NAME_MAX - 5:
        raise InvalidNameError(
            f"provider name is {len(provider)} characters; with '_L<level>K<keyword>' "
            f"the tracepoint name must stay within {NAME_MAX}"
        )


def option_value(options: str, letter: str) -> str | None:
    """The value of option ``letter`` in an options string, or None."""
    for opt in split_options(options):
        if opt[0] == letter:
            return opt[1:]
    return None


def split_options(options: str) -> list[str]:
    """Split ``"GabcXy1"`` into ``["Gabc", "Xy1"]``."""
    out: list[str] = []
    for ch in options:
        if ch in _UPPER or not out:
            out.append(ch)
        else:
            out[-1] += ch
    return out


def _hex_run(text: str, pos: int) -> tuple[str, int]:
    end = pos
    while end < len(text) and text[end] in _HEX:
        end += 1
    return text[pos:end], end


def _check_event_name(name: str) -> None:
    if not name:
        raise InvalidNameError("the tracepoint name is empty")
    if len(name) > NAME_MAX:
        raise InvalidNameError(
            f"tracepoint name is {len(name)} characters; the limit is {NAME_MAX}")
    for ch, what in _FORBIDDEN.items():
        if ch in name:
            raise InvalidNameError(f"tracepoint name {name!r} must not contain {what}")


def _check_options(name: str, options: str) -> None:
    if not options:
        return
    if options[0] not in _UPPER:
        raise InvalidNameError(
            f"{name!r}: options after the keyword must start with an uppercase letter "
            f"(e.g. 'Gmygroup'), not {options[0]!r}"
        )
    for ch in options:
        if ch not in _UPPER and ch not in _OPTION_BODY:
            raise InvalidNameError(
                f"{name!r}: option text may hold only ASCII letters and digits, not {ch!r}"
            )


def _merge_option(options: str, letter: str, value: str) -> str:
    opts = [o for o in split_options(options) if o[0] != letter]
    opts.append(letter + value)
    return "".join(sorted(opts, key=lambda o: o[0]))
