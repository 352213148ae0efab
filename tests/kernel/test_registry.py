"""register_all and the register/list commands against a fake kernel (tests/kernel/fake_kernel.py):
all or nothing with --persist, conflicts refused first, -i -, list output fed back."""

from __future__ import annotations

import errno
import io
import json
import sys

import pytest

from ehtool.cli import main
from ehtool.errors import KernelError
from ehtool.eventheader.names import EVENTHEADER_COMMAND_TYPES
from ehtool.kernel.registry import register_all

from .fake_kernel import OTHER_PROCESS, FakeKernel

A, B, C = f"A_L1K1 {EVENTHEADER_COMMAND_TYPES}", "B u32 x", f"C_L2K1 {EVENTHEADER_COMMAND_TYPES}"


@pytest.fixture
def kernel(tmp_path, monkeypatch) -> FakeKernel:
    return FakeKernel(tmp_path / "tracing").install(monkeypatch)


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exit_info:
        main(list(argv))
    out, err = capsys.readouterr()
    return exit_info.value.code, out, err


def test_persist_registers_all_and_keeps_no_enabler(kernel):
    with register_all([A, B, C], persist=True) as regs:
        assert [r.name for r in regs] == ["A_L1K1", "B", "C_L2K1"]
    assert set(kernel.events) == {"A_L1K1", "B", "C_L2K1"}
    assert all(e.persist and not e.enablers for e in kernel.events.values())
    assert not [op for op, _ in kernel.log if op == "del"]


def test_a_conflicting_definition_is_refused_before_anything_is_registered(kernel):
    kernel.add("B u64 y", persist=True)
    with pytest.raises(KernelError) as info, register_all([A, B, C], persist=True):
        pass
    assert "existing: B u64 y" in str(info.value) and "yours:    B u32 x" in str(info.value)
    assert set(kernel.events) == {"B"}
    assert [op for op, _ in kernel.log if op == "reg+persist"] == []  # A was never persisted


@pytest.mark.parametrize("code", [errno.EADDRINUSE, errno.EMFILE, errno.EPERM, errno.EACCES],
                         ids=errno.errorcode.get)
def test_a_failure_part_way_deletes_what_this_call_persisted(kernel, code):
    kernel.fail["B"] = code
    with pytest.raises(KernelError), register_all([A, B, C], persist=True):
        pass
    assert kernel.events == {}
    ops = [(op, name) for op, name in kernel.log if op != "reg"]
    assert ops == [("reg+persist", A), ("reg+persist", B), ("unreg", "A_L1K1"),
                   ("del", "A_L1K1")]  # unregistered first: our enabler blocks the delete


def test_events_that_existed_before_are_not_deleted(kernel):
    kernel.add(A, persist=True)
    kernel.fail["B"] = errno.EMFILE
    with pytest.raises(KernelError), register_all([A, B, C], persist=True):
        pass
    assert set(kernel.events) == {"A_L1K1"} and not kernel.events["A_L1K1"].enablers
    assert ("del", "A_L1K1") not in kernel.log


def test_an_event_that_cannot_be_deleted_is_named_in_the_error(kernel):
    kernel.fail["B"] = errno.EMFILE
    register = kernel._register

    def and_someone_attaches(arg):
        done = register(arg)
        if "A_L1K1" in kernel.events:
            kernel.events["A_L1K1"].enablers.add(OTHER_PROCESS)
        return done

    kernel._register = and_someone_attaches
    with pytest.raises(KernelError) as info, register_all([A, B], persist=True):
        pass
    message = str(info.value)
    assert message.startswith("cannot register B: the kernel's user_events limit is reached")
    assert message.endswith("could not undo --persist: A_L1K1 is still in use: stop the "
                            "sessions and processes that use it, then try again")


def test_with_an_unreadable_status_file_nothing_is_deleted_but_the_error_says_so(kernel):
    (kernel.root / "user_events_status").unlink()  # read_status fails: existence unknown
    kernel.fail["B"] = errno.EMFILE
    with pytest.raises(KernelError) as info, register_all([A, B], persist=True):
        pass
    assert str(info.value).endswith("could not undo --persist: A_L1K1 may be left registered "
                                    "(user_events_status is unreadable, so new events cannot "
                                    "be told from older ones)")
    assert set(kernel.events) == {"A_L1K1"} and ("del", "A_L1K1") not in kernel.log


def test_without_persist_a_failure_deletes_nothing_and_releases_all(kernel):
    kernel.fail["B"] = errno.EMFILE
    with pytest.raises(KernelError), register_all([A, B, C]):
        pass
    assert kernel.events == {}
    assert ("del", "A_L1K1") not in kernel.log


def test_register_persist_cli_exits_4_and_leaves_nothing(kernel, capsys):
    kernel.fail["B"] = errno.EPERM
    rc, out, err = _run(capsys, "register", "--persist", "A_L1K1", "B u32 x", "C_L2K1")
    assert rc == 4 and out == ""
    assert err.startswith("ehtool: error: cannot register B with --persist: it needs CAP_PERFMON")
    assert kernel.events == {}


def test_register_reads_definitions_from_stdin(kernel, capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"X_L1K1\n# c\nY u8 a\n")))
    rc, out, err = _run(capsys, "register", "--persist", "-i", "-")
    assert rc == 0, err
    assert out.split() == ["X_L1K1", "Y"] and set(kernel.events) == {"X_L1K1", "Y"}


def test_register_refuses_leading_zeros(kernel, capsys):
    rc, _, err = _run(capsys, "register", "--no-wait", "P_L05K1")
    assert rc == 2 and kernel.log == []
    assert "argument 1: 'P_L05K1': level and keyword are lowercase hex" in err


def test_list_definitions_register_again_as_the_same_events(kernel, capsys, monkeypatch):
    for command in (A, "Empty", "Arr u32 n; char[16] s; __rel_loc char[] m; struct foo b 12"):
        kernel.add(command, persist=True)
    rc, out, _ = _run(capsys, "list", "--json")
    definitions = [e["definition"] for e in json.loads(out)]
    assert "Empty ;" in definitions
    assert "Arr u32 n; char[16] s; __rel_loc char[] m; struct foo b 12" in definitions
    text = "".join(f"{d}\n" for d in definitions).encode()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text)))
    rc, out, err = _run(capsys, "register", "--no-wait", "-i", "-")
    assert rc == 0, err  # the same fields: the kernel reuses each event
    assert out.split() == ["A_L1K1", "Empty", "Arr"] and len(kernel.events) == 3
