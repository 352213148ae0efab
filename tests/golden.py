"""Locate the read-only golden files in ../shared/golden (skip the test when absent)."""

from __future__ import annotations

from pathlib import Path

import pytest

GOLDEN = Path(__file__).resolve().parents[1] / ".." / "shared" / "golden"


def golden_path(name: str) -> Path:
    """``../shared/golden/<name>`` relative to the repo root, or pytest.skip if missing."""
    path = GOLDEN / name
    if not path.exists():
        pytest.skip(f"golden file {name} not found under {GOLDEN.resolve()}")
    return path
