"""Fixtures shared by every test directory."""

from impl import impl  # noqa: F401 (the C / pure-Python parametrisation)
