"""The ``ehtool`` package: its public names resolve lazily and show in ``dir()``;
importing it loads nothing else."""

from __future__ import annotations

import subprocess
import sys

import ehtool


def test_public_names_resolve_and_are_listed():
    from ehtool.errors import EhtoolError, InputError, KernelError
    from ehtool.eventheader.encoder import EncodeError
    from ehtool.events import open as open_events
    from ehtool.provider.api import Provider

    assert (ehtool.EncodeError, ehtool.KernelError, ehtool.EhtoolError, ehtool.InputError,
            ehtool.open, ehtool.Provider) == (EncodeError, KernelError, EhtoolError, InputError,
                                              open_events, Provider)
    assert set(ehtool.__all__) <= set(dir(ehtool))  # (dir() was ['sys'])
    assert issubclass(ehtool.EncodeError, ValueError)


def test_import_ehtool_loads_no_other_module():
    code = ("import sys; before = set(sys.modules); import ehtool; "
            "print(sorted(m for m in set(sys.modules) - before))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.strip() == "['ehtool']"
