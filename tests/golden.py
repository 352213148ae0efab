"""Locate the read-only golden files in ../shared/golden.

A missing file skips the test, or fails it when ``EHTOOL_REQUIRE_GOLDEN=1``
(tests/run.sh and CI set it, so a run that should compare never passes silently).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

GOLDEN = Path(__file__).resolve().parents[1] / ".." / "shared" / "golden"


def golden_path(name: str) -> Path:
    """``../shared/golden/<name>`` relative to the repo root; skip or fail when missing."""
    path = GOLDEN / name
    if not path.exists():
        why = f"golden file {name} not found under {GOLDEN.resolve()}"
        if os.environ.get("EHTOOL_REQUIRE_GOLDEN") == "1":
            pytest.fail(f"{why} (EHTOOL_REQUIRE_GOLDEN=1)", pytrace=False)
        pytest.skip(why)
    return path
