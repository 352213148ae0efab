"""``ehtool decode --formats-from-host``: tracepoint formats from the running kernel for a
recording that lost its own (a file cut before its feature sections).

A tracepoint's id is only meaningful on the kernel that recorded it: use this on the
machine (and boot) that made the recording; a warning says so.
"""

from __future__ import annotations

from typing import Any

from ehtool.kernel.tracefs import find_tracefs


def attach_host_formats(perf_file: Any) -> list[str]:
    """Give ``perf_file``'s events without a format the running kernel's format of the
    same id; returns the ``system:name`` of each one found."""
    wanted = set(perf_file.missing_formats())
    if not wanted:
        return []
    found: dict[int, tuple[str, str]] = {}
    events = find_tracefs() / "events"
    for id_file in events.glob("*/*/id"):
        try:
            ident = int(id_file.read_text())
        except (OSError, ValueError):
            continue
        if ident in wanted:
            try:
                text = (id_file.parent / "format").read_text()
            except OSError:
                continue
            found[ident] = (id_file.parent.parent.name, text)
    perf_file.add_formats(found)
    return [f"{system}:{path_name}" for system, path_name in
            ((s, t.split("\n", 1)[0].removeprefix("name: ").strip()) for s, t in found.values())]
