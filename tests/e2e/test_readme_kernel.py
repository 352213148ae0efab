"""README.md's examples that need user_events (register, list, record, perf, the
Provider API), run as written, in README order, in one directory."""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from readme import REPO, Example, examples

EXAMPLES = [e for e in examples() if e.needs_kernel]
REQUEST = json.dumps({
    "provider": "MyProvider", "event": "Request", "level": 4, "keyword": 2, "opcode": 1,
    "activity": "6f1c1f5e-5b9e-4a1e-9a43-1d9f2b7c0a11",
    "fields": [["url", "str", "/index.html"], ["status", "u16", 200]]})


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    root = Path(os.environ.get("EHTOOL_GUEST_OUT") or tmp_path_factory.mktemp("readme"))
    root = root / "readme-kernel"
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    bin_dir = root / "bin"
    bin_dir.mkdir()
    exe = bin_dir / "ehtool"
    exe.write_text(f'#!/bin/sh\nexec {sys.executable} -m ehtool "$@"\n')
    exe.chmod(0o755)
    env = {**os.environ, "PYTHONPATH": str(REPO), "REQUEST": REQUEST,
           "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    yield root, env
    # what the examples persisted (register --persist) goes again
    names = [f"MyProvider_L{level}K{keyword}" for level in range(1, 6) for keyword in (1, 2)]
    subprocess.run([sys.executable, "-m", "ehtool", "unregister", *names], env=env,
                   capture_output=True)


def _id(example: Example) -> str:
    return example.text.split("\n")[0][:60]


@pytest.mark.parametrize("example", EXAMPLES, ids=_id)
def test_example_runs(example, workspace):
    root, env = workspace
    command = example.text.split("  #")[0].rstrip()
    if example.lang == "python":
        done = subprocess.run([sys.executable, "-c", example.text], cwd=root, env=env,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        return
    if command.endswith("&"):  # held in the background: stop it as a user would
        proc = subprocess.Popen(["bash", "-c", command[:-1]], cwd=root, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # once the names are printed the events are registered and held (an emulated
        # guest can take seconds to start Python): then SIGTERM
        ready, _, _ = select.select([proc.stdout], [], [], 180)
        assert ready, "register printed nothing in 180 s"
        first = proc.stdout.readline()
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        assert "MyProvider_L5K1" in first + out
        return
    if "| ehtool decode -" in command:  # a live stream: perf runs until Ctrl-C
        proc = subprocess.Popen(["bash", "-c", command], cwd=root, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 180  # an emulated guest is slow to start perf
        while (subprocess.run(["pgrep", "-x", "perf"], capture_output=True).returncode
               and time.monotonic() < deadline and proc.poll() is None):
            time.sleep(0.5)
        time.sleep(3)
        subprocess.run(["pkill", "-INT", "-x", "perf"])
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        assert "stdin" in json.loads(out)
        return
    done = subprocess.run(["bash", "-c", command], cwd=root, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "error" not in done.stderr, done.stderr
    if command.startswith("ehtool record -o eventheader.data"):
        decoded = subprocess.run([sys.executable, "-m", "ehtool", "decode", "--format",
                                  "jsonl", "eventheader.data"], cwd=root, env=env,
                                 capture_output=True, text=True, check=True).stdout
        assert [json.loads(line)["n"] for line in decoded.splitlines()] == [
            "MyProvider:Started", "MyProvider:Failed", "MyProvider:Request"]
    if command.startswith("ehtool list"):
        json.loads(done.stdout)
    if "-o sched.data" in command:
        info = subprocess.run([sys.executable, "-m", "ehtool", "info", "sched.data"],
                              cwd=root, env=env, capture_output=True, text=True)
        assert info.returncode == 0 and "sched:sched_switch" in info.stdout
