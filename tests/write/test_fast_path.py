"""The click-free ``ehtool write`` path gives exactly what the click command gives,
and takes the common forms without importing click."""

from __future__ import annotations

import subprocess
import sys

import pytest

from ehtool.cli.fast_write import parse

RUN = "import sys\nfrom ehtool.cli import main\nmain(sys.argv[2:], fast=sys.argv[1] == 'fast')\n"

CASES = [
    ["MyProv", "Ev"],
    ["MyProv", "Ev", "n:u32=7", "s=hello", "xs:u8[]=1,2,3"],
    ["--level", "error", "--keyword", "0x30", "MyProv", "Ev", "e:errno=ENOENT"],
    ["MyProv", "Ev", "--level=3", "n:i64=-5", "--opcode", "start", "--id", "0x10"],
    ["--version", "2", "--tag", "0xfe", "--group", "grp", "P", "E", "t:time=2024-01-02T03:04:05Z"],
    ["--activity", "6f1c1f5e-5b9e-4a1e-9a43-1d9f2b7c0a11", "--related-activity",
     "00000000-0000-0000-0000-000000000001", "P", "E", "ip:ipv6=::1"],
    ["P", "E", "--", "--not-an-option=1"],
    ["P", "E", "-v", "--level", "1", "--level", "4"],  # the last value wins
    # errors: both paths must say the same thing
    ["P", "E", "n:u99=1"],
    ["P", "E", "novalue"],
    ["Bad-Provider", "E"],
    ["P", "E", "b:bool=maybe"],
    ["--level", "0", "P", "E"],
    ["--level", "loud", "P", "E"],
    ["--keyword", "0x1ffffffffffffffff", "P", "E"],
    ["--opcode"],
    ["P"],
    [],
    ["--batch", "P", "E"],
    ["-x", "P", "E"],
    ["--dry-run=yes", "P", "E"],
    ["P", "E", "-"],
    ["--group", "-v", "P", "E"],
]


def run(mode: str, args: list[str]) -> tuple[int, str, str]:
    done = subprocess.run([sys.executable, "-c", RUN, mode, "write", "--dry-run", *args],
                          capture_output=True, text=True, timeout=60)
    return done.returncode, done.stdout, done.stderr


@pytest.mark.parametrize("args", CASES, ids=[" ".join(c) or "(none)" for c in CASES])
def test_fast_path_equals_click(args):
    assert run("fast", args) == run("click", args)


def test_common_forms_take_the_fast_path():
    for args in CASES[:8]:
        assert parse(["--dry-run", *args]) is not None, args
    for args in (["--help"], ["--batch"], ["-i", "x"], ["P", "E", "--strict"], ["P"],
                 ["--level", "0", "P", "E"], ["-vh", "P", "E"]):
        assert parse(args) is None, args


def test_plain_write_imports_no_click():
    code = ("import sys\nfrom ehtool.cli import main\n"
            "try:\n    main(['write', '--dry-run', 'P', 'E', 'n:u32=7'])\n"
            "except SystemExit as e:\n    assert e.code == 0, e.code\n"
            "heavy = [m for m in ('click', 'construct', 'orjson', 'json') if m in sys.modules]\n"
            "print(','.join(heavy))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["P_L5K1 07000000000000050500010045006e000407000000",
                                        ""]
