"""The tracefs format parser on the 2,751 real format files of formats0.zip."""

from __future__ import annotations

import zipfile

import pytest

from ehtool.formats.tracefs_format import (
    DATA_LOC,
    FIXED,
    HEX,
    REL_LOC,
    SCALAR,
    SIGNED,
    STRING,
    UNSIGNED,
    FormatError,
    parse_format,
)
from ehtool.render.style import COMPACT
from ehtool.render.tracefs_fields import make_renderer
from golden import golden_path


@pytest.fixture(scope="module")
def corpus() -> dict[str, str]:
    with zipfile.ZipFile(golden_path("linuxtracepoints/formats0.zip")) as z:
        return {n: z.read(n).decode("latin-1") for n in z.namelist()}


def fmt(corpus: dict[str, str], entry: str):
    return parse_format(corpus[entry], entry.split(" ")[0])


def test_every_file_parses_consistently(corpus):
    assert len(corpus) == 2751
    for entry, text in corpus.items():
        system, name = entry.split(" ", 1)
        f = parse_format(text, system)
        assert (f.system, f.name) == (system, name), entry
        assert f.id > 0 and f.print_fmt.startswith('"'), entry
        assert [c.name for c in f.common_fields][:1] == ["common_type"], entry
        assert all(x.offset >= f.common_size for x in f.fields), entry
        for x in f.fields:
            if x.array == FIXED and x.format in (UNSIGNED, SIGNED, HEX) and x.array_count:
                assert x.size == x.array_count * x.element_size, (entry, x)
            if x.array in (DATA_LOC, REL_LOC):
                assert x.size in (2, 4), (entry, x)


def test_spot_checks(corpus):
    f = fmt(corpus, "sched sched_switch")
    got = [(x.name, x.offset, x.size, x.format, x.element_size, x.array) for x in f.fields]
    assert got == [
        ("prev_comm", 8, 16, STRING, 1, FIXED), ("prev_pid", 24, 4, HEX, 4, SCALAR),
        ("prev_prio", 28, 4, SIGNED, 4, SCALAR), ("prev_state", 32, 8, SIGNED, 8, SCALAR),
        ("next_comm", 40, 16, STRING, 1, FIXED), ("next_pid", 56, 4, HEX, 4, SCALAR),
        ("next_prio", 60, 4, SIGNED, 4, SCALAR)]
    assert f.common_size == 8 and f.eventheader_offset is None

    irq = fmt(corpus, "irq irq_handler_entry").fields
    assert (irq[1].name, irq[1].array, irq[1].format) == ("name", DATA_LOC, STRING)

    kmalloc = {x.name: x for x in fmt(corpus, "kmem kmalloc").fields}
    assert kmalloc["call_site"].format == HEX  # unsigned long
    assert kmalloc["bytes_req"].format == HEX  # size_t: unknown typedef
    assert kmalloc["node"].format == SIGNED

    printk = fmt(corpus, "ftrace print").fields
    assert (printk[1].name, printk[1].size, printk[1].format) == ("buf", 0, STRING)

    eh = fmt(corpus, "user_events MyProviderName_L4K1")
    assert [x.name for x in eh.fields][:2] == ["eventheader_flags", "version"]
    assert eh.eventheader_offset == 8
    grp = fmt(corpus, "user_events OtherProviderName_L5K23Gmygroup")
    assert grp.eventheader_offset == 8


def _shape(f) -> list[tuple]:
    return [(x.name, x.offset, x.size, x.format, x.element_size, x.array, x.array_count)
            for x in f.fields]


# Read by hand from each format file, with perf-decode's rules (PerfFieldMetadata in
# LinuxTracepoints' PerfEventMetadata.cpp): "unsigned long" and pointers are hex of
# sizeof(long); unknown typedefs (pid_t, dev_t, enum x) hex; "unsigned"/"long long"/
# "short" set the integer size; a scalar's size: overrides its element size, a fixed
# array's element size stays the type's; char is a string unless signed/unsigned.
# (No file of the corpus has a __rel_loc field; test_field_classification_rules has one.)
_HAND_CHECKED = {
    "raw_syscalls sys_enter": [  # long id; unsigned long args[6]
        ("id", 8, 8, SIGNED, 8, SCALAR, 0), ("args", 16, 48, HEX, 8, FIXED, 6)],
    "ftrace kernel_stack": [  # int size; unsigned long caller[8]
        ("size", 8, 4, SIGNED, 4, SCALAR, 0), ("caller", 16, 64, HEX, 8, FIXED, 8)],
    "nfsd nfsd_cb_args": [  # u32 x4; __data_loc u8[] addr
        ("cl_boot", 8, 4, UNSIGNED, 4, SCALAR, 0), ("cl_id", 12, 4, UNSIGNED, 4, SCALAR, 0),
        ("prog", 16, 4, UNSIGNED, 4, SCALAR, 0), ("ident", 20, 4, UNSIGNED, 4, SCALAR, 0),
        ("addr", 24, 4, UNSIGNED, 1, DATA_LOC, 0)],
    "sched sched_process_exec": [  # __data_loc char[] filename; pid_t pid, old_pid
        ("filename", 8, 4, STRING, 1, DATA_LOC, 0), ("pid", 12, 4, HEX, 4, SCALAR, 0),
        ("old_pid", 16, 4, HEX, 4, SCALAR, 0)],
    "kmem kfree": [  # unsigned long call_site; const void * ptr
        ("call_site", 8, 8, HEX, 8, SCALAR, 0), ("ptr", 16, 8, HEX, 8, SCALAR, 0)],
    "timer hrtimer_start": [  # void * x2; s64 x2; enum hrtimer_mode mode
        ("hrtimer", 8, 8, HEX, 8, SCALAR, 0), ("function", 16, 8, HEX, 8, SCALAR, 0),
        ("expires", 24, 8, SIGNED, 8, SCALAR, 0), ("softexpires", 32, 8, SIGNED, 8, SCALAR, 0),
        ("mode", 40, 4, HEX, 4, SCALAR, 0)],
    "ftrace funcgraph_exit": [  # unsigned long; int; unsigned int; unsigned long long x2
        ("func", 8, 8, HEX, 8, SCALAR, 0), ("depth", 16, 4, SIGNED, 4, SCALAR, 0),
        ("overrun", 20, 4, UNSIGNED, 4, SCALAR, 0), ("calltime", 24, 8, UNSIGNED, 8, SCALAR, 0),
        ("rettime", 32, 8, UNSIGNED, 8, SCALAR, 0)],
    "xfs xfs_inode_timestamp_range": [  # dev_t dev; long long min, max
        ("dev", 8, 4, HEX, 4, SCALAR, 0), ("min", 16, 8, SIGNED, 8, SCALAR, 0),
        ("max", 24, 8, SIGNED, 8, SCALAR, 0)],
    "oom oom_score_adj_update": [  # pid_t pid; char comm[16]; short oom_score_adj
        ("pid", 8, 4, HEX, 4, SCALAR, 0), ("comm", 12, 16, STRING, 1, FIXED, 16),
        ("oom_score_adj", 28, 2, SIGNED, 2, SCALAR, 0)],
}


@pytest.mark.parametrize("entry", sorted(_HAND_CHECKED))
def test_hand_checked_fields(corpus, entry):
    assert _shape(fmt(corpus, entry)) == _HAND_CHECKED[entry]


def test_hand_checked_common_fields_and_unsigned_char(corpus):
    f = fmt(corpus, "scsi scsi_dispatch_cmd_start")
    assert [(x.name, x.offset, x.size, x.format, x.element_size) for x in f.common_fields] == [
        ("common_type", 0, 2, UNSIGNED, 2), ("common_flags", 2, 1, UNSIGNED, 1),
        ("common_preempt_count", 3, 1, UNSIGNED, 1), ("common_pid", 4, 4, SIGNED, 4)]
    own = _shape(f)
    assert own[0] == ("host_no", 8, 4, UNSIGNED, 4, SCALAR, 0)  # unsigned int
    assert own[6] == ("driver_tag", 32, 4, SIGNED, 4, SCALAR, 0)  # int
    assert own[-2:] == [("prot_op", 48, 1, UNSIGNED, 1, SCALAR, 0),  # unsigned char
                        ("cmnd", 52, 4, UNSIGNED, 1, DATA_LOC, 0)]  # __data_loc unsigned char[]
    assert len(own) == 12 and f.id == 2438


def test_hand_checked_32_bit_long(corpus):
    """long_size 4: a fixed ``unsigned long`` array keeps 4-byte elements (the type's),
    while a scalar's ``size:`` (8) wins over the type's 4."""
    def at4(entry: str):
        return _shape(parse_format(corpus[entry], entry.split(" ")[0], long_size=4))

    assert at4("raw_syscalls sys_enter")[1] == ("args", 16, 48, HEX, 4, FIXED, 6)
    assert at4("ftrace kernel_stack")[1] == ("caller", 16, 64, HEX, 4, FIXED, 8)
    assert at4("kmem kfree") == _HAND_CHECKED["kmem kfree"]


def test_field_classification_rules():
    from ehtool.formats.tracefs_format import classify

    assert classify("void * ptr", 8, 8, False).format == HEX
    assert classify("void * ptr", 8, 4, False, long_size=4).element_size == 4
    assert classify("unsigned long flags", 8, 8, False).format == HEX
    assert classify("long state", 8, 8, True).format == SIGNED
    assert classify("u8 x", 8, 1, False).format == UNSIGNED
    assert classify("s16 x", 8, 2, True).format == SIGNED
    assert classify("signed char c", 8, 1, True).format == SIGNED
    assert classify("unsigned char c[6]", 8, 6, False).format == UNSIGNED
    assert classify("pid_t pids[2]", 8, 8, True).element_size == 4
    assert classify("__rel_loc char[] msg", 8, 4, False).array == REL_LOC
    assert classify("struct foo bar", 8, 12, False).format == "none"


def test_bad_format_files_raise_one_line_errors():
    for text, message in [("garbage", "no 'name:'"),
                          ("name: x\nformat:\n\tfield:int a;\toffset:0;\tsize:4;\n", "no 'ID:'"),
                          ("name: x\nID: zz\n", "ID is not a number"),
                          ("name: x\nID: 1\nformat:\n\tfield:int a;\toffset:q;\tsize:4;\n",
                           "bad offset")]:
        with pytest.raises(FormatError, match=message):
            parse_format(text)


def test_short_records_render_null_not_errors(corpus):
    f = fmt(corpus, "sched sched_switch")
    render = make_renderer(f, COMPACT)
    short = render(bytes(30))
    assert short.startswith(b',"prev_comm":"","prev_pid":"0x0","prev_prio":null')


def test_renderer_never_raises_on_random_records(corpus):
    from hypothesis import given, settings
    from hypothesis import strategies as st

    formats = [fmt(corpus, e) for e in ("sched sched_switch", "irq irq_handler_entry",
                                        "ftrace print", "kmem kmalloc")]
    renderers = [make_renderer(f, COMPACT) for f in formats]

    @settings(max_examples=300, deadline=None)
    @given(st.integers(0, len(renderers) - 1), st.binary(max_size=200))
    def check(i: int, raw: bytes) -> None:
        import json

        json.loads(b'{"n":"x"' + renderers[i](raw) + b"}")

    check()


def test_c_record_renderer_equals_the_generated_one_on_every_corpus_format(corpus, monkeypatch):
    """Each of the corpus's formats, both byte orders: the C renderer and the generated
    Python one give the same bytes on random records of every length around the fixed
    part (short ones take the Python path in both), including NUL-free char arrays."""
    import random

    from impl import is_native, require_speedups

    monkeypatch.delenv("EHTOOL_PURE", raising=False)
    require_speedups()
    rng = random.Random(5)
    checked = 0
    for entry in sorted(corpus):
        try:
            f = fmt(corpus, entry)
        except FormatError:
            continue
        for big in (False, True):
            c = make_renderer(f, COMPACT, big_endian=big)
            monkeypatch.setenv("EHTOOL_PURE", "1")
            py = make_renderer(f, COMPACT, big_endian=big)
            monkeypatch.delenv("EHTOOL_PURE")
            if not is_native(c):
                continue
            size = max((x.offset + x.size for x in f.fields), default=0)
            for n in (size - 1, size, size + 7, size + 64):
                for printable in (False, True):
                    raw = bytes(rng.choice(b"aZ ~\"\\" if printable else range(256))
                                for _ in range(max(0, n)))
                    assert c(raw) == py(raw), (entry, big, n)
            checked += 1
    assert checked > 5000


def test_value_readers_read_as_field_value_does(corpus):
    """``value_reader`` (resolved once per field: scalars unpacked in place) gives what
    ``field_value`` gives, on every field of every format, in both byte orders, for
    records that end anywhere around the field (before it, inside it, after it)."""
    import random

    from ehtool.formats.values import field_value, value_reader

    rng = random.Random(7)
    fast = strings = 0
    for entry in corpus:
        f = fmt(corpus, entry)
        for x in f.common_fields + f.fields:
            for big in (False, True):
                read = value_reader(x, big)
                fast += read.__name__ == "scalar"
                strings += read.__name__ == "string"
                end = x.offset + max(x.size, 1)
                for length in {0, x.offset, end - 1, end, end + 3, rng.randrange(end + 64)}:
                    raw = rng.randbytes(max(length, 0))
                    assert repr(read(raw)) == repr(field_value(x, raw, big)), (entry, x.name)
    assert fast > 10_000 and strings > 100  # (the in-place readers were the ones compared)


def test_typed_json_renderers_write_the_python_rule(corpus):
    """``typed_json_renderer`` (the ``fields`` column of tracefs events, in C) writes
    what ``ehtool.values.typed_json`` writes of the fields' typed values, on every real
    format (common fields too), in both byte orders, for records cut anywhere and
    records with every byte value in their char arrays and numbers."""
    import random

    from ehtool.eventheader.decoder import Fields, json_members
    from ehtool.formats.values import typed_json_renderer, value_reader
    from impl import require_speedups

    require_speedups()
    rng = random.Random(3)
    rendered = 0
    for entry in corpus:
        f = fmt(corpus, entry)
        for fields in (f.fields, f.common_fields + f.fields):
            end = max((x.offset + max(x.size, 1) for x in fields), default=0)
            for big in (False, True):
                readers = [(x.name, value_reader(x, big)) for x in fields]

                def typed(raw, readers=readers):
                    return json_members(Fields([(n, read(raw)) for n, read in readers]))
                render = typed_json_renderer(fields, big, typed)
                if render is None:
                    assert len({x.name for x in fields}) < len(fields), entry
                    continue
                for length in {0, end // 2, end - 1, end, end + 9, rng.randrange(end + 64)}:
                    for printable in (False, True):
                        raw = bytes(rng.choice(b"aZ ~\"\\\0" if printable else range(256))
                                    for _ in range(max(length, 0)))
                        assert render(raw) == typed(raw), (entry, big, length)
                        rendered += length >= end
    assert rendered > 10_000
