"""The user_events ABI pieces that need no kernel: ioctl numbers, struct layouts,
tracefs text parsing, definition checks, error messages."""

from __future__ import annotations

import errno
import re
import struct
import sys
from pathlib import Path

import pytest

from ehtool.errors import KernelError, UsageError
from ehtool.kernel import abi, tracefs, user_events
from ehtool.kernel.registry import check_definition

pytestmark = pytest.mark.skipif(struct.calcsize("P") != 8 or sys.byteorder != "little",
                                reason="values for 64-bit little-endian machines")


def test_ioctl_numbers_embed_the_pointer_size():
    assert user_events.DIAG_IOCSREG == 0xC0082A00
    assert user_events.DIAG_IOCSDEL == 0x40082A01
    assert user_events.DIAG_IOCSUNREG == 0x40082A02


def test_struct_layouts_match_the_uapi_header():
    """The packers user_events.py writes out are the grammars of kernel/abi.py."""
    user_reg, user_unreg = abi.USER_REG, abi.USER_UNREG
    assert user_events.USER_REG.size == user_reg.sizeof() == 28
    assert user_events.USER_UNREG.size == user_unreg.sizeof() == 16
    packed = user_events.USER_REG.pack(28, 3, 4, 1, 0x1000, 0x2000, 7)
    assert user_reg.parse(packed) == dict(size=28, enable_bit=3, enable_size=4, flags=1,
                                          enable_addr=0x1000, name_args=0x2000, write_index=7)
    assert packed[24:] == (7).to_bytes(4, "little")  # write_index comes back at 24
    unpacked = user_events.USER_UNREG.pack(16, 5, 0, 0, 0x3000)
    assert user_unreg.parse(unpacked) == dict(size=16, disable_bit=5, __reserved=0,
                                              __reserved2=0, disable_addr=0x3000)
    assert user_unreg.build(dict(size=16, disable_bit=5, __reserved=0, __reserved2=0,
                                 disable_addr=0x3000)) == unpacked


def test_status_parsing():
    text = ("MyProv_L5K1 # Used by perf ftrace\nOther_L1K1\nBusy # Used by other\n\n"
            "Active: 3\nBusy: 2\n")
    entries = tracefs.parse_status(text)
    assert [(e.name, e.used_by) for e in entries] == [
        ("MyProv_L5K1", {"perf", "ftrace"}), ("Other_L1K1", set()), ("Busy", {"other"})]
    assert entries[0].enabled and not entries[1].enabled


def test_mount_discovery_prefers_tracefs_over_debugfs():
    debug_first = ("debugfs /sys/kernel/debug debugfs rw 0 0\n"
                   "tracefs /mnt/my\\040trace tracefs rw 0 0\n")
    assert str(tracefs.mount_points(debug_first)) == "/mnt/my trace"
    assert str(tracefs.mount_points("debugfs /d debugfs rw 0 0\n")) == "/d/tracing"
    assert tracefs.mount_points("proc /proc proc rw 0 0\n") is None


@pytest.mark.parametrize("definition", [
    "Ev u32 count; char[16] name", "Ev ;", "Ev", "Ev unsigned int a; s64 b;",
    "Ev __rel_loc char[] msg", "Ev __data_loc u8[] blob; struct foo bar 12",
])
def test_definitions_the_kernel_accepts(definition):
    check_definition(definition)


@pytest.mark.parametrize(("definition", "message"), [
    ("Ev long a", "long is ambiguous"),
    ("Ev char a[4]", "write arrays as 'char[N] a'"),
    ("Ev u32", "a field is 'TYPE NAME'"),
    ("Ev float x", "unknown type"),
    ("Ev char[2000] big", "array length must be 1..1024"),
    ("Ev struct foo bar", "struct TYPE NAME SIZE"),
    ("Ev:flag u32 a", "no ':flags'"),
    ("Ev u32 " + "a" * 600, "longer than"),
])
def test_definitions_refused_before_the_kernel(definition, message):
    with pytest.raises(UsageError, match=re.escape(message)):
        check_definition(definition)


def test_kernel_errors_say_what_to_do(monkeypatch):
    ue = user_events.UserEvents(-1, tracefs.DEFAULT_TRACEFS / "user_events_data")
    monkeypatch.setattr(user_events, "_existing_definition", lambda name: f"{name} u32 a")
    err = ue._register_error("X", "X u64 b", False, OSError(errno.EADDRINUSE, "in use"))
    assert "existing: X u32 a" in str(err) and "yours:    X u64 b" in str(err)
    err = ue._register_error("X", "X u8 a", True, OSError(errno.EPERM, "perm"))
    assert "CAP_PERFMON" in str(err)
    err = ue._register_error("X", "X u8 a", False, OSError(errno.EACCES, "acc"))
    assert "tracing" in str(err) and "chmod" in str(err)
    err = ue._register_error("X", "X u8 a", False, OSError(errno.EMFILE, "many"))
    assert "user_events_max" in str(err)
    assert isinstance(err, KernelError) and err.exit_code == 4
    assert "still in use" in str(user_events._delete_error("X", OSError(errno.EBUSY, "b")))


def test_eaddrinuse_without_a_readable_format_still_shows_yours(monkeypatch):
    ue = user_events.UserEvents(-1, tracefs.DEFAULT_TRACEFS / "user_events_data")
    monkeypatch.setattr(user_events, "_existing_definition", lambda name: None)
    err = str(ue._register_error("X", "X u64 b", False, OSError(errno.EADDRINUSE, "in use")))
    assert err.startswith("X is already registered with different fields (its format cannot")
    assert "\n  yours:    X u64 b\n" in err and "ehtool unregister X" in err
    assert "address already in use" not in err


def test_permission_hint_gives_the_tracing_group_recipe_for_the_tracefs_found(monkeypatch):
    monkeypatch.setattr(tracefs, "find_tracefs", lambda: Path("/mnt/my trace"))
    hint = tracefs.permission_hint()
    assert "\n" not in hint
    for step in ("sudo groupadd -f tracing",
                 "sudo mount -o remount,gid=tracing,mode=750 '/mnt/my trace'",
                 "sudo chmod g+rw '/mnt/my trace'/user_events_data",
                 "sudo usermod -aG tracing $USER", "log in again"):
        assert step in hint, step
    assert "/sys/kernel/tracing" not in hint

    def no_tracefs() -> Path:
        raise KernelError("tracefs is not mounted")

    monkeypatch.setattr(tracefs, "find_tracefs", no_tracefs)
    assert "remount,gid=tracing,mode=750 /sys/kernel/tracing;" in tracefs.permission_hint()


def test_missing_tracefs_explains_how_to_mount(monkeypatch, tmp_path):
    tracefs.find_tracefs.cache_clear()
    monkeypatch.setattr(tracefs, "DEFAULT_TRACEFS", tmp_path / "none")
    monkeypatch.setattr(tracefs, "_read", lambda path: "proc /proc proc rw 0 0\n")
    try:
        with pytest.raises(KernelError, match="mount -t tracefs"):
            tracefs.find_tracefs()
    finally:
        tracefs.find_tracefs.cache_clear()


def test_ehtool_tracefs_that_is_no_directory_is_named(monkeypatch, tmp_path):
    """EHTOOL_TRACEFS=/nonexistent was reported as 'this kernel has no user_events'."""
    monkeypatch.setenv("EHTOOL_TRACEFS", str(tmp_path / "nope"))
    with pytest.raises(KernelError, match=r"EHTOOL_TRACEFS=.*/nope is not a directory"):
        tracefs.find_tracefs()
    monkeypatch.setenv("EHTOOL_TRACEFS", str(tmp_path))
    assert tracefs.find_tracefs() == tmp_path
