"""Fixtures for the record tests: a misbehaving fake perf."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

FAKE_PERF = Path(__file__).with_name("fake_perf.py")


@dataclass
class FakePerf:
    path: str
    log: Path
    marker: Path
    monkeypatch: pytest.MonkeyPatch

    def mode(self, mode: str, old: bool = False) -> FakePerf:
        self.monkeypatch.setenv("FAKE_PERF_MODE", mode)
        if old:
            self.monkeypatch.setenv("FAKE_PERF_OLD", "1")
        return self

    def events(self) -> list[str]:
        return self.log.read_text().splitlines() if self.log.exists() else []


@pytest.fixture
def fake_perf(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakePerf:
    """An executable 'perf' in tmp_path that runs fake_perf.py (mode 'good')."""
    wrapper = tmp_path / "perf"
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FAKE_PERF}" "$@"\n')
    wrapper.chmod(0o755)
    log, marker = tmp_path / "perf.log", tmp_path / "enabled.marker"
    monkeypatch.setenv("FAKE_PERF_LOG", str(log))
    monkeypatch.setenv("FAKE_PERF_MARKER", str(marker))
    monkeypatch.setenv("FAKE_PERF_MODE", "good")
    monkeypatch.delenv("FAKE_PERF_OLD", raising=False)
    monkeypatch.chdir(tmp_path)
    assert os.access(wrapper, os.X_OK)
    return FakePerf(str(wrapper), log, marker, monkeypatch)
