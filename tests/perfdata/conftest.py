"""Fixtures for the perf.data reader tests."""

from __future__ import annotations

import importlib.util
import re
import sys
import types
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data"
EXAMPLE = REPO / "examples" / "sched.data"


def _install_format_stub() -> None:
    """Until ehtool.formats.tracefs_format lands, stand in with a minimal parser."""
    if importlib.util.find_spec("ehtool.formats.tracefs_format") is not None:
        return

    class FormatError(ValueError):
        pass

    @dataclass
    class EventFormat:
        system: str
        name: str
        id: int
        fields: list = field(default_factory=list)
        common_fields: list = field(default_factory=list)
        print_fmt: str = ""
        eventheader_offset: int | None = None

    def parse_format(text: str, system: str = "", long_size: int = 8) -> EventFormat:
        name = re.search(r"^name:\s*(\S+)", text, re.M)
        ident = re.search(r"^ID:\s*(\d+)", text, re.M)
        if not name or not ident or "format:" not in text:
            raise FormatError("not a tracefs format")
        return EventFormat(system, name.group(1), int(ident.group(1)))

    mod = types.ModuleType("ehtool.formats.tracefs_format")
    mod.FormatError = FormatError
    mod.EventFormat = EventFormat
    mod.parse_format = parse_format
    sys.modules["ehtool.formats.tracefs_format"] = mod


_install_format_stub()


@pytest.fixture
def golden_perf():
    from golden import golden_path

    return golden_path("linuxtracepoints/perf.data")
