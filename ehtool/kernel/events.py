"""A description of every registered user_event: name, definition, who uses it.

Definitions are given in user_events syntax (``Name u32 a; char[16] b``,
``Name ;`` for no fields), so they can be fed back to ``ehtool register -i``
(``ehtool list --json | jq -r '.[].definition' | ehtool register -i -``).
"""

from __future__ import annotations

from typing import Any

from ehtool.errors import KernelError
from ehtool.kernel import tracefs


def list_user_events() -> list[dict[str, Any]]:
    """``[{"name", "tracepoint", "definition", "eventheader", "enabled", "used_by"}]``."""
    from ehtool.eventheader.names import is_eventheader_name

    out = []
    for entry in tracefs.read_status():
        definition = entry.name
        eventheader = False
        try:
            fmt = tracefs.read_user_event_format(entry.name)
            definition = tracefs.read_definition(entry.name, fmt)
            eventheader = fmt.eventheader_offset is not None and is_eventheader_name(entry.name)
        except (KernelError, ValueError):
            pass
        out.append({
            "name": entry.name,
            "tracepoint": f"user_events:{entry.name}",
            "definition": definition,
            "eventheader": eventheader,
            "enabled": entry.enabled,
            "used_by": sorted(entry.used_by),
        })
    return out
