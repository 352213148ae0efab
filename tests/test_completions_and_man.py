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


def _shell(name: str) -> str:
    exe = shutil.which(name)
    if exe is None:
        pytest.skip(f"{name} is not installed here (tests/run.sh installs it)")
    return exe


@pytest.fixture
def path_with_ehtool(tmp_path) -> dict[str, str]:
    """An environment whose PATH runs this checkout's ehtool, as an installed one would."""
    exe = tmp_path / "ehtool"
    exe.write_text(f'#!/bin/sh\nexec {sys.executable} -m ehtool "$@"\n')
    exe.chmod(0o755)
    return {**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}", "PYTHONPATH": str(REPO)}


def test_fish_completes_commands_options_choices_and_files(path_with_ehtool):
    fish = _shell("fish")
    script = REPO / "completions" / "ehtool.fish"
    assert subprocess.run([fish, "-n", str(script)]).returncode == 0

    def complete(line: str) -> list[str]:
        done = subprocess.run([fish, "-c", f"source {script}; complete -C '{line}'"],
                              env=path_with_ehtool, capture_output=True, text=True,
                              cwd=REPO)
        assert done.stderr == "", done.stderr
        return done.stdout.splitlines()

    assert [c.split("\t")[0] for c in complete("ehtool dec")] == ["decode"]
    assert complete("ehtool dec")[0].startswith("decode\tDecode perf.data")
    assert any(c.startswith("--sort\ttime: ") for c in complete("ehtool decode --so"))
    assert complete("ehtool decode --sort ") == ["file", "time"]
    assert "examples/sched.data" in complete("ehtool decode examples/sc")
    # fish replaces the whole word: an option's value after '=' comes back with it
    assert complete("ehtool decode --format=j") == ["--format=json", "--format=jsonl"]
    assert complete("ehtool decode --meta=+co") == ["--meta=+comm", "--meta=+common"]


def test_zsh_function_turns_the_response_into_candidates(path_with_ehtool):
    zsh = _shell("zsh")
    script = REPO / "completions" / "_ehtool"
    assert subprocess.run([zsh, "-n", str(script)]).returncode == 0
    # zsh's completion builtins stubbed to print what the function hands them
    stubs = ("compdef() { :; }; "
             "_describe() { for x in ${(P)3}; do print -r -- \"described $x\"; done; }; "
             "compadd() { for x in ${(P)${@[-1]}}; do print -r -- \"added $x\"; done; }; "
             "_path_files() { print -r -- \"files $*\"; }; ")

    def complete(*words: str) -> list[str]:
        code = (f"{stubs} source {script}; words=({' '.join(words)}); "
                f"CURRENT={len(words)}; _ehtool_completion")
        done = subprocess.run([zsh, "-f", "-c", code], env=path_with_ehtool,
                              capture_output=True, text=True, cwd=REPO)
        assert done.stderr == "", done.stderr
        return done.stdout.splitlines()

    assert complete("ehtool", "dec") == ["described decode:Decode perf.data FILEs ('-' "
                                         "reads a..."]
    assert complete("ehtool", "decode", "--sort", "''") == ["added time", "added file"]
    assert complete("ehtool", "decode", "''") == ["files -f"]
    # zsh replaces the whole word: '--format=j' becomes '--format=json', not 'json'
    assert complete("ehtool", "decode", "--format=j") == ["added --format=json",
                                                         "added --format=jsonl"]
    assert complete("ehtool", "decode", "--time=n") == ["added --time=ns"]


def _commands():
    from ehtool.cli import cli

    ctx = click.Context(cli, info_name="ehtool")
    return [(name, cli.get_command(ctx, name)) for name in cli.list_commands(ctx)]


@pytest.mark.parametrize("name", ["ehtool", "decode", "info", "register", "unregister", "list",
                                  "write", "record", "query"])
def test_man_page_documents_every_option_and_renders(name):
    page = REPO / "man" / ("ehtool.1" if name == "ehtool" else f"ehtool-{name}.1")
    text = page.read_text()
    if name != "ehtool":
        cmd = dict(_commands())[name]
        for param in cmd.params:
            if isinstance(param, click.Option):
                for opt in param.opts:
                    assert opt.replace("-", "\\-") in text, (name, opt)
    assert ".B \\-h, \\-\\-help\n" in text  # (as --help lists it)
    groff = shutil.which("groff")
    if groff is None:
        pytest.skip("groff is not installed")
    done = subprocess.run([groff, "-man", "-Tutf8", "-ww", "-z", str(page)],
                          capture_output=True, text=True)
    assert done.returncode == 0 and done.stderr == "", done.stderr


def test_examples_sections_exist():
    for name in ("decode", "register", "write", "record", "info"):
        assert ".SH EXAMPLES" in (REPO / "man" / f"ehtool-{name}.1").read_text(), name


def _readme_install_commands() -> list[str]:
    """The commands of README's completions and man pages block (no sudo)."""
    from readme import examples

    return [e.text for e in examples() if e.section == "Shell completions and man pages"
            and not e.text.startswith("man ")]


def test_readme_instructions_install_working_completions_and_man_pages(tmp_path,
                                                                       path_with_ehtool):
    """README's install lines, run as a user with a scratch HOME: the files land where
    bash-completion, zsh's compinit, fish and man look, and work from there."""
    lines = _readme_install_commands()
    assert len(lines) == 5 and not any("sudo" in line for line in lines)
    home = tmp_path / "home"
    (home / ".local" / "bin").mkdir(parents=True)
    env = {**path_with_ehtool, "HOME": str(home),
           "PATH": f"{home}/.local/bin:{path_with_ehtool['PATH']}"}
    env.pop("MANPATH", None)
    env.pop("XDG_DATA_HOME", None)
    env.pop("XDG_CONFIG_HOME", None)
    for line in lines:
        assert subprocess.run(["sh", "-c", line], cwd=REPO, env=env).returncode == 0, line
    man = shutil.which("man")
    if man is not None:  # found through ~/.local/bin on PATH, as man-db does
        done = subprocess.run([man, "ehtool-write"], env={**env, "MANWIDTH": "80",
                                                          "PAGER": "cat", "MANPAGER": "cat"},
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        assert "NAME" in done.stdout and "--batch" in done.stdout.replace("\u2010", "-")
    loader = Path("/usr/share/bash-completion/bash_completion")
    if loader.exists():  # bash-completion loads ~/.local/share/bash-completion on demand
        done = subprocess.run(["bash", "-c", f"source {loader}; __load_completion ehtool; "
                               "complete -p ehtool"], env=env, capture_output=True, text=True)
        assert "_ehtool_completion" in done.stdout, done.stderr
    zsh = shutil.which("zsh")
    if zsh is not None:
        done = subprocess.run([zsh, "-f", "-c", "fpath=(~/.zfunc $fpath); autoload -U compinit;"
                               " compinit -u -d ~/.zcompdump; print $_comps[ehtool]"],
                              env=env, capture_output=True, text=True)
        assert done.stdout.strip() == "_ehtool", done.stderr
    fish = shutil.which("fish")
    if fish is not None:  # autoloaded from ~/.config/fish/completions
        done = subprocess.run([fish, "-c", "complete -C 'ehtool unreg'"], env=env,
                              capture_output=True, text=True)
        assert done.stdout.startswith("unregister\t"), (done.stdout, done.stderr)


@pytest.mark.parametrize("name", ["ehtool", "decode", "info", "register", "unregister", "list",
                                  "write", "record", "query"])
def test_man_page_is_a_real_page(name):
    """Hand-written prose around the generated options: a whole NAME line, the usual
    sections, no RST markup from docstrings."""
    page = REPO / "man" / ("ehtool.1" if name == "ehtool" else f"ehtool-{name}.1")
    text = page.read_text()
    name_line = text.split(".SH NAME\n")[1].split("\n")[0]
    assert len(name_line) < 100 and not name_line.rstrip().endswith(("and", ",", "("))
    titles = [line[4:] for line in text.splitlines() if line.startswith(".SH ")]
    for title in ("NAME", "SYNOPSIS", "DESCRIPTION", "EXAMPLES", "EXIT STATUS",
                  "ENVIRONMENT", "SEE ALSO"):
        assert title in titles, (name, title)
    if name != "ehtool":
        assert "OPTIONS" in titles
    assert "``" not in text
    if name == "decode":
        assert {"FILTERS", "TIME", "OUTPUT FORMATS", "OUTPUT FILE"} <= set(titles)
    if name in ("register", "record", "list"):
        assert "FILES" in titles
