"""EHTOOL_REQUIRE_GOLDEN=1 turns a missing golden file from a skip into a failure."""

from __future__ import annotations

import pytest

from golden import golden_path


def test_a_missing_golden_file_skips_by_default(monkeypatch):
    monkeypatch.delenv("EHTOOL_REQUIRE_GOLDEN", raising=False)
    with pytest.raises(pytest.skip.Exception, match="no-such-file"):
        golden_path("no-such-file")


def test_a_missing_golden_file_fails_when_required(monkeypatch):
    monkeypatch.setenv("EHTOOL_REQUIRE_GOLDEN", "1")
    with pytest.raises(pytest.fail.Exception, match="no-such-file.*EHTOOL_REQUIRE_GOLDEN"):
        golden_path("no-such-file")


def test_a_missing_extra_skips_by_default_and_fails_when_required(monkeypatch):
    """EHTOOL_REQUIRE_EXTRAS=1 (tests/run.sh) does the same for the analysis extras."""
    monkeypatch.delenv("EHTOOL_REQUIRE_EXTRAS", raising=False)
    with pytest.raises(pytest.skip.Exception, match="no_such_module"):
        pytest.importorskip("no_such_module")
    monkeypatch.setenv("EHTOOL_REQUIRE_EXTRAS", "1")
    with pytest.raises(pytest.fail.Exception, match="no_such_module.*EHTOOL_REQUIRE_EXTRAS"):
        pytest.importorskip("no_such_module")
    assert pytest.importorskip("json").loads("1") == 1
