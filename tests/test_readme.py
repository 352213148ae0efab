"""Every example in README.md runs as written (those needing user_events run in
tests/e2e/test_readme_kernel.py): console blocks print exactly what the README shows,
commands exit 0 without an error, Python blocks print their ``# output`` lines."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from readme import REPO, Example, examples

EXAMPLES = [e for e in examples() if not e.needs_kernel and e.text != "./tests/run.sh"]


def _id(example: Example) -> str:
    return example.text.split("\n")[0][:60]


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """A directory as the README assumes one: perf.data (the EventHeader example),
    traces/*.data, the checkout's examples/, completions/ and man/; ehtool on PATH; a
    scratch HOME whose ~/.local/bin is on PATH (as man-db expects)."""
    root = tmp_path_factory.mktemp("readme")
    for name in ("examples", "completions", "man"):
        (root / name).symlink_to(REPO / name)
    shutil.copy(REPO / "examples" / "eventheader.data", root / "perf.data")
    (root / "traces").mkdir()
    for data in ("eventheader.data", "sched.data"):
        shutil.copy(REPO / "examples" / data, root / "traces" / data)
    home = root / "home"
    (home / ".local" / "bin").mkdir(parents=True)
    bin_dir = root / "bin"
    bin_dir.mkdir()
    exe = bin_dir / "ehtool"
    exe.write_text(f'#!/bin/sh\nexec {sys.executable} -m ehtool "$@"\n')
    exe.chmod(0o755)
    env = {**os.environ, "HOME": str(home), "MANPAGER": "cat", "PAGER": "cat",
           "PYTHONPATH": str(REPO), "MANPATH": "",
           "PATH": f"{bin_dir}:{home}/.local/bin:{os.environ['PATH']}"}
    env.pop("MANPATH")
    return root, env


def run(example: Example, workspace) -> subprocess.CompletedProcess:
    root, env = workspace
    if example.lang == "python":
        return subprocess.run([sys.executable, "-c", example.text], cwd=root, env=env,
                              capture_output=True, text=True, timeout=300)
    # the status of the example's own first command (grep finding nothing is not a failure)
    script = f"{example.text}\nexit ${{PIPESTATUS[0]}}\n"
    return subprocess.run(["bash", "-c", script], cwd=root, env=env, capture_output=True,
                          text=True, timeout=600)


@pytest.mark.parametrize("example", [e for e in EXAMPLES
                                     if not e.text.startswith("python3 -m venv")], ids=_id)
def test_example_runs(example, workspace):
    if example.text.startswith("man ") and shutil.which("man") is None:
        pytest.skip("man is not installed here (tests/run.sh installs man-db)")
    if "| jq" in example.text and shutil.which("jq") is None:
        pytest.skip("jq is not installed here (tests/run.sh installs it)")
    done = run(example, workspace)
    assert done.returncode == 0, done.stderr
    assert "error" not in done.stderr and "Traceback" not in done.stderr, done.stderr
    if example.lang == "console" or example.output:
        assert done.stdout.rstrip("\n").split("\n") == example.output
    elif example.text.startswith("man "):
        assert example.text.split()[1].upper() in done.stdout  # the page, from ~/.local
    elif " -o " not in example.text and not example.text.startswith(("mkdir", "cp ")):
        assert done.stdout.strip() or "grep" in example.text, "no output"


def test_the_quick_start_install_line(tmp_path):
    """README's first command, as written, in a copy of the checkout: a venv, pip
    install, then the shipped EventHeader recording decoded."""
    line = next(e.text for e in EXAMPLES if e.text.startswith("python3 -m venv"))
    copy = tmp_path / "ehtool"
    copy.mkdir()
    archive = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True,
                             check=True).stdout.split(b"\0")
    for name in filter(None, archive):
        src = REPO / name.decode()
        if src.is_file():
            dst = copy / name.decode()
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)
    done = subprocess.run(["bash", "-c", line], cwd=copy, capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    assert '"n": "MyProvider:Request"' in done.stdout
