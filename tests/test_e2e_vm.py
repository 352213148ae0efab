"""Run the kernel end-to-end suite (tests/e2e) inside one boot of the user_events guest.

Used where this machine's kernel has no user_events (or we are not root); where
it has, tests/e2e runs natively and this launcher skips.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
RUNNER = Path(os.environ.get("EHTOOL_VM_RUNNER", REPO / ".." / "shared" / "vm" / "run-in-vm.sh"))
KERNEL = Path(os.environ.get("EHVM_KERNEL", "/var/cache/ehtool-vm/vmlinux"))


def _native() -> bool:
    return Path("/sys/kernel/tracing/user_events_data").exists() and os.geteuid() == 0


@pytest.mark.kernel
def test_e2e_suite_in_vm():
    if _native():
        pytest.skip("this kernel has user_events: tests/e2e ran natively")
    if not RUNNER.exists():
        pytest.skip(f"no VM runner at {RUNNER}: cannot run the kernel tests here")
    if not KERNEL.exists():
        pytest.skip(f"no guest kernel at {KERNEL}: run '{RUNNER} --setup' first")
    inner = (f"cd {shlex.quote(str(REPO))} && {shlex.quote(sys.executable)} -m pytest "
             "tests/e2e -q -rs --color=no -p no:cacheprovider")
    done = subprocess.run(["bash", str(RUNNER), "--timeout", "1500", inner],
                          capture_output=True, text=True, timeout=1800, check=False)
    output = done.stdout + done.stderr
    print(output)
    assert done.returncode == 0, f"e2e suite failed in the VM (rc {done.returncode}):\n{output}"
    tail = output.strip().splitlines()[-1] if output.strip() else ""
    assert " passed" in tail and "skipped" not in tail, tail
