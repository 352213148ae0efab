"""The optional C hot loops (``ehtool/_speedups.c``), or None.

The Python code they mirror stays the reference: tests run both and compare.
``EHTOOL_PURE=1`` in the environment disables them.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType

# The op list of ``_speedups.Plan`` (see its C source): op codes ...
OP_LIT, OP_FIXED, OP_STR, OP_ARRAY, OP_SEEK, OP_CSTR, OP_CALL = range(7)
# ... how an OP_FIXED value is written ...
(FX_UNSIGNED, FX_SIGNED, FX_HEX, FX_PORT, FX_PY, FX_CHAR, FX_BOOL, FX_HEXBYTES,
 FX_UUID, FX_ERRNO, FX_TIME, FX_FLOAT, FX_IP, FX_CHAR_TEXT) = range(14)
# ... and what OP_STR may write itself (flags)
STR_ASCII, STR_BOM, STR_HEX, STR_UTF, STR_SURROGATE_TEXT = 1, 2, 4, 8, 16
# the meta time modes of ``_speedups.Formatter`` (ehtool/render/times.py)
TIME_PERF, TIME_NS, TIME_REL, TIME_DELTA = range(4)


def load() -> ModuleType | None:
    """The compiled module, or None when disabled or not built."""
    if os.environ.get("EHTOOL_PURE"):
        return None
    try:
        return importlib.import_module("ehtool._speedups")
    except ImportError:
        return None
# the filter Programs of ``_speedups`` (ehtool/decode/native.py): where a name's value
# comes from, how a field is read, the expression's nodes, and ``&``, ``~`` beside
# Py_LT..Py_GE
SRC_MISSING, SRC_CONST, SRC_SAMPLE, SRC_FIELD, SRC_RECORD, SRC_COMM = range(6)
RD_FIXED, RD_UTF8, RD_LATIN1, RD_ARRAY = range(4)
N_OR, N_AND, N_NOT, N_CMP, N_NAME = range(5)
CMP_BITS, CMP_GLOB = 6, 7
