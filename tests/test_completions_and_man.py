"""Generated shell completions and man pages: up to date, valid, complete."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import click
import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("script", ["gen_completions.py", "gen_man.py"])
def test_generated_files_are_up_to_date(script):
    done = subprocess.run([sys.executable, str(REPO / "scripts" / script), "--check"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout


def test_bash_script_parses_and_completes():
    bash = REPO / "completions" / "ehtool.bash"
    assert subprocess.run(["bash", "-n", str(bash)]).returncode == 0
    env = {**os.environ, "_EHTOOL_COMPLETE": "bash_complete", "COMP_WORDS": "ehtool dec",
           "COMP_CWORD": "1"}
    out = subprocess.run([sys.executable, "-m", "ehtool"], env=env, capture_output=True,
                         text=True).stdout
    assert out.split() == ["plain,decode"]
    env.update(COMP_WORDS="ehtool decode --so", COMP_CWORD="2")
    out = subprocess.run([sys.executable, "-m", "ehtool"], env=env, capture_output=True,
                         text=True).stdout
    assert "plain,--sort" in out.split()
    # sourcing the script registers the completion function in a real bash
    done = subprocess.run(["bash", "-c", f"source {bash}; complete -p ehtool"],
                          capture_output=True, text=True)
    assert "_ehtool_completion" in done.stdout


@pytest.mark.parametrize("shell", ["zsh", "fish"])
def test_other_shells_parse(shell):
    exe = shutil.which(shell)
    if exe is None:
        pytest.skip(f"{shell} is not installed here")
    name = {"zsh": "_ehtool", "fish": "ehtool.fish"}[shell]
    assert subprocess.run([exe, "-n", str(REPO / "completions" / name)]).returncode == 0


def _commands():
    from ehtool.cli import cli

    ctx = click.Context(cli, info_name="ehtool")
    return [(name, cli.get_command(ctx, name)) for name in cli.list_commands(ctx)]


@pytest.mark.parametrize("name", ["ehtool", "decode", "info", "register", "unregister", "list",
                                  "write", "record"])
def test_man_page_documents_every_option_and_renders(name):
    page = REPO / "man" / ("ehtool.1" if name == "ehtool" else f"ehtool-{name}.1")
    text = page.read_text()
    if name != "ehtool":
        cmd = dict(_commands())[name]
        for param in cmd.params:
            if isinstance(param, click.Option):
                for opt in param.opts:
                    assert opt.replace("-", "\\-") in text, (name, opt)
    groff = shutil.which("groff")
    if groff is None:
        pytest.skip("groff is not installed")
    done = subprocess.run([groff, "-man", "-Tutf8", "-ww", "-z", str(page)],
                          capture_output=True, text=True)
    assert done.returncode == 0 and done.stderr == "", done.stderr


def test_examples_sections_exist():
    for name in ("decode", "register", "write", "record", "info"):
        assert ".SH EXAMPLES" in (REPO / "man" / f"ehtool-{name}.1").read_text(), name
