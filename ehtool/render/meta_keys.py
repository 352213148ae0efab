"""The meta keys ``ehtool decode --meta`` chooses from (no imports: shell completion
reads them)."""

from __future__ import annotations

#: meta keys in perf-decode's order; the first twelve are its default set
META_KEYS = (
    "time", "cpu", "pid", "tid", "comm",
    "id", "version", "level", "keyword", "opcode", "tag", "activity", "relatedActivity",
    "provider", "event", "options", "flags", "common",
)
META_DEFAULT = frozenset(
    ("time", "cpu", "pid", "tid", "id", "version", "level", "keyword", "opcode", "tag",
     "activity", "relatedActivity")
)
#: the EventHeader keys of the default set
EVENTHEADER_DEFAULT = ("id", "version", "level", "keyword", "opcode", "tag", "activity",
                       "relatedActivity")


def parse_meta(spec: str) -> frozenset[str]:
    """Parse ``--meta``: ``default``, ``all``, ``none`` or a comma list, ``+key``/``-key`` edits.

    A list that starts with an edit edits the default set (``+comm``, ``-time``).
    """
    items = [item.strip() for item in spec.split(",") if item.strip()]
    keys: set[str] = set(META_DEFAULT) if items and items[0][0] in "+-" else set()
    for item in items:
        if item == "default":
            keys |= META_DEFAULT
        elif item == "all":
            keys |= set(META_KEYS)
        elif item == "none":
            keys.clear()
        elif item.startswith("-"):
            keys.discard(_check_meta(item[1:]))
        else:
            keys.add(_check_meta(item.lstrip("+")))
    return frozenset(keys)


def _check_meta(key: str) -> str:
    if key not in META_KEYS:
        raise ValueError(f"unknown meta key {key!r}; choose from {', '.join(META_KEYS)}")
    return key
