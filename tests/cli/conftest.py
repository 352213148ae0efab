"""In-process runs of the ``ehtool`` command line (click's test isolation around
``ehtool.cli.main``): exit status, stdout and stderr as a user would see them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

REPO = Path(__file__).resolve().parents[2]


@dataclass
class Run:
    status: int
    out: str
    err: str


def _run(*args: str, input: str | None = None) -> Run:
    from ehtool.cli import main

    runner = CliRunner()
    with runner.isolation(input=input) as (out, err, _):
        try:
            main(list(args), fast=False)
            status = 0
        except SystemExit as exc:
            status = exc.code if isinstance(exc.code, int) else 1
        return Run(status, out.getvalue().decode(), err.getvalue().decode())


@pytest.fixture
def ehtool(monkeypatch):
    monkeypatch.chdir(REPO)
    return _run
