"""Run the kernel end-to-end suite (tests/e2e) inside one boot of the user_events guest.

Used where this machine's kernel has no user_events (or we are not root); where
it has, tests/e2e runs natively and this launcher skips. The guest runner is the
project's own (tests/vm/run.sh), so it never skips: a missing qemu or guest kernel
is a failure that says to run ``tests/vm/run.sh --setup`` (tests/run.sh and CI do).

The verdict comes from the JUnit XML the guest's pytest writes into the runner's
output dir (written through to the host), not from the console, where qemu and
the kernel may print lines of their own.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
RUNNER = REPO / "tests" / "vm" / "run.sh"
KERNEL = Path(os.environ.get("EHTOOL_GUEST_CACHE", "/var/cache/ehtool-guest")) / "vmlinux"
OUT_ROOT = Path(os.environ.get("EHTOOL_GUEST_OUT", "/tmp/ehtool-guest-out"))


def _native() -> bool:
    return Path("/sys/kernel/tracing/user_events_data").exists() and os.geteuid() == 0


def junit_counts(path: Path) -> dict[str, int]:
    """tests/failures/errors/skipped summed over the testsuites of a JUnit XML file."""
    root = ET.parse(path).getroot()
    suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
    keys = ("tests", "failures", "errors", "skipped")
    return {k: sum(int(s.get(k, 0)) for s in suites) for k in keys}


def suite_verdict(returncode: int, junit: Path) -> str | None:
    """Why the guest run failed, or None when every e2e test ran and passed."""
    if not junit.exists():
        return f"no result file {junit} (rc {returncode}): the guest run did not finish"
    counts = junit_counts(junit)
    if returncode != 0 or counts["failures"] or counts["errors"]:
        return f"e2e suite failed in the VM (rc {returncode}, {counts})"
    if counts["tests"] == 0 or counts["skipped"]:
        return f"e2e tests did not all run in the VM: {counts}"
    return None


@pytest.mark.kernel
def test_e2e_suite_in_vm():
    if _native():
        pytest.skip("this kernel has user_events: tests/e2e ran natively")
    setup = f"no user_events here: run '{RUNNER} --setup' (as root) for the guest"
    assert shutil.which("qemu-system-x86_64"), f"no qemu-system-x86_64; {setup}"
    assert KERNEL.exists(), f"no guest kernel at {KERNEL}; {setup}"
    OUT_ROOT.mkdir(parents=True, exist_ok=True)
    out = Path(tempfile.mkdtemp(prefix="e2e-", dir=OUT_ROOT))
    junit = out / "e2e.xml"
    # this checkout's ehtool, with the real interpreter (sys.executable is never a pyenv shim)
    inner = (f"cd {shlex.quote(str(REPO))} && PYTHONPATH={shlex.quote(str(REPO))} "
             f"{shlex.quote(sys.executable)} -m pytest "
             f"tests/e2e -q -rs --color=no -p no:cacheprovider "
             f"--junitxml={shlex.quote(str(junit))}")
    try:
        done = subprocess.run(["bash", str(RUNNER), "--timeout", "1500", inner],
                              capture_output=True, text=True, timeout=1800, check=False,
                              env={**os.environ, "EHTOOL_GUEST_OUT": str(OUT_ROOT)})
        print(done.stdout + done.stderr)
        problem = suite_verdict(done.returncode, junit)
    finally:
        shutil.rmtree(out, ignore_errors=True)
    assert problem is None, f"{problem}\n{done.stdout}{done.stderr}"


def test_the_verdict_comes_from_the_junit_file_not_the_console(tmp_path):
    xml = tmp_path / "e2e.xml"
    assert suite_verdict(0, xml).startswith("no result file")
    xml.write_text('<testsuites><testsuite tests="12" failures="0" errors="0" skipped="0"/>'
                   "</testsuites>")
    assert suite_verdict(0, xml) is None
    assert "failed" in suite_verdict(1, xml)
    xml.write_text('<testsuite tests="12" failures="0" errors="0" skipped="12"/>')
    assert "did not all run" in suite_verdict(0, xml)
    xml.write_text('<testsuite tests="12" failures="1" errors="0" skipped="0"/>')
    assert "failed" in suite_verdict(0, xml)
