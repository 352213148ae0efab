"""``import ehtool`` leaves the importer's Ctrl-C alone; only ``python3 -m ehtool`` makes
it quiet while the command line starts."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

_SHOW = "import signal; print(signal.getsignal(signal.SIGINT) is signal.default_int_handler)"


@pytest.mark.parametrize("run_as", [["-m", "mypkg.tool"], ["-mmypkg.tool"], ["-Bm", "mypkg.tool"]])
def test_another_module_run_with_m_keeps_its_ctrl_c(tmp_path, run_as):
    pkg = tmp_path / "mypkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("import ehtool\n")  # imported while argv[0] is "-m"
    (pkg / "tool.py").write_text(_SHOW + "\n")
    env_path = f"{tmp_path}:{REPO}"
    done = subprocess.run([sys.executable, *run_as], capture_output=True, text=True,
                          cwd=tmp_path, env={"PYTHONPATH": env_path}, check=True)
    assert done.stdout == "True\n", done.stderr


@pytest.mark.parametrize(("orig_argv", "quiet"), [
    (["python3", "-m", "ehtool", "decode"], True),
    (["python3", "-mehtool"], True),
    (["python3", "-X", "importtime", "-Bm", "ehtool"], True),
    (["python3", "-m", "mypkg.tool"], False),
    (["python3", "-m", "ehtoolkit"], False),
    (["python3", "-c", "import ehtool"], False),
])
def test_only_python_m_ehtool_is_quiet_while_it_starts(monkeypatch, orig_argv, quiet):
    import ehtool

    monkeypatch.setattr(sys, "argv", ["-m"])
    monkeypatch.setattr(sys, "orig_argv", orig_argv)
    assert ehtool._starting_as_main() is quiet
