"""Fixtures shared by every test directory, and the run's requirements."""

import os

import pytest

from impl import impl  # noqa: F401 (the C / pure-Python parametrisation)

_importorskip = pytest.importorskip


def require_import(modname: str, *args, **kwargs):
    """``pytest.importorskip``, except that with EHTOOL_REQUIRE_EXTRAS=1 (tests/run.sh,
    which installs the ``test`` extra) a module that does not import fails the test: the
    analysis tests must run in CI, never skip."""
    try:
        return _importorskip(modname, *args, **kwargs)
    except pytest.skip.Exception as exc:
        if os.environ.get("EHTOOL_REQUIRE_EXTRAS") == "1":
            pytest.fail(f"{exc.msg} (EHTOOL_REQUIRE_EXTRAS=1)", pytrace=False)
        raise


pytest.importorskip = require_import  # (every test's importorskip goes through it)
