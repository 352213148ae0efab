"""Run a test against the C hot loops and against the pure-Python reference.

``impl`` is a pytest fixture parametrised over ``"c"`` and ``"python"``: the
``"python"`` run sets ``EHTOOL_PURE=1``; the ``"c"`` run skips when the
extension is not built, unless ``EHTOOL_REQUIRE_SPEEDUPS`` is set (tests/run.sh
sets it, so CI always exercises the C code).
"""

from __future__ import annotations

import os

import pytest

from ehtool.speedups import load


def require_speedups() -> None:
    if load() is None:
        if os.environ.get("EHTOOL_REQUIRE_SPEEDUPS"):
            pytest.fail("ehtool._speedups is not built (EHTOOL_REQUIRE_SPEEDUPS is set)")
        pytest.skip("ehtool._speedups is not built")


@pytest.fixture(params=["c", "python"])
def impl(request, monkeypatch) -> str:
    if request.param == "c":
        monkeypatch.delenv("EHTOOL_PURE", raising=False)
        require_speedups()
    else:
        monkeypatch.setenv("EHTOOL_PURE", "1")
    return request.param


def is_native(fn: object) -> bool:
    """True for a bound method of one of the ``_speedups`` types."""
    owner = getattr(fn, "__self__", None)
    return type(owner).__module__ == "ehtool._speedups"
