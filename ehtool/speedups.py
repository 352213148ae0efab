"""The optional C hot loops (``ehtool/_speedups.c``), or None.

The Python code they mirror stays the reference: tests run both and compare.
``EHTOOL_PURE=1`` in the environment disables them.
"""

from __future__ import annotations

import os
from types import ModuleType


def load() -> ModuleType | None:
    """The compiled module, or None when disabled or not built."""
    if os.environ.get("EHTOOL_PURE"):
        return None
    try:
        from ehtool import _speedups
    except ImportError:
        return None
    return _speedups
