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
#: JSON Lines' own meta key, in its default set: the input each event came from
FILE_KEY = "file"
#: the EventHeader keys of the default set
EVENTHEADER_DEFAULT = ("id", "version", "level", "keyword", "opcode", "tag", "activity",
                       "relatedActivity")


def parse_meta(spec: str, *, lines: bool = False) -> frozenset[str]:
    """Parse ``--meta``: ``default``, ``all``, ``none`` or a comma list, ``+key``/``-key`` edits.

    A list that starts with an edit edits the default set (``+comm``, ``-time``).
    ``lines``: for JSON Lines, whose keys and default set add :data:`FILE_KEY`.
    """
    known = (*META_KEYS, FILE_KEY) if lines else META_KEYS
    default = META_DEFAULT | {FILE_KEY} if lines else META_DEFAULT
    items = [item.strip() for item in spec.split(",") if item.strip()]
    keys: set[str] = set(default) if items and items[0][0] in "+-" else set()
    for item in items:
        if item == "default":
            keys |= default
        elif item == "all":
            keys |= set(known)
        elif item == "none":
            keys.clear()
        elif item.startswith("-"):
            keys.discard(_check_meta(item[1:], known))
        else:
            keys.add(_check_meta(item.lstrip("+"), known))
    return frozenset(keys)


def _check_meta(key: str, known: tuple[str, ...]) -> str:
    if key not in known:
        hint = " ('file' is a key of --format jsonl)" if key == FILE_KEY else ""
        raise ValueError(f"unknown meta key {key!r}; choose from {', '.join(known)}{hint}")
    return key
