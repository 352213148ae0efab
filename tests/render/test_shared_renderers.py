"""tracefs renderers are shared by the inputs of a process (a fleet of files repeats the
same formats): made once for each distinct set of what they depend on (every attribute of
the fields shown, the style, the byte order, the C module or not), so that an input
whose format differs under the same event name still renders as it does alone."""

from __future__ import annotations

import io
import json
import struct
from pathlib import Path

import pytest

from ehtool.caches import Bounded
from ehtool.decode.pipeline import DecodeOptions, decode_to
from ehtool.formats.tracefs_format import parse_format
from ehtool.render import tracefs_fields
from ehtool.render.style import COMPACT, SPACED, JsonStyle
from ehtool.render.tracefs_fields import make_renderer
from impl import is_native, require_speedups

REPO = Path(__file__).resolve().parents[2]

_COMMON = ("\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
           "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n")


def _format(fields: str, name: str = "ev", print_fmt: str = '"x"'):
    text = (f"name: {name}\nID: 1000\nformat:\n{_COMMON}\n{fields}\n"
            f"print fmt: {print_fmt}\n")
    return parse_format(text, "test")


_A = ("\tfield:u32 a;\toffset:8;\tsize:4;\tsigned:0;\n"
      "\tfield:pid_t p;\toffset:12;\tsize:4;\tsigned:1;\n")
#: a record: common_type 1, common_pid 7, a = 0xFFFFFFFE, p = 0x1F4, then 0x11223344
_RAW = struct.pack("<HHiIiI", 1, 0, 7, 0xFFFFFFFE, 500, 0x11223344)


def test_the_same_fields_share_one_renderer():
    """Two formats that differ only where no renderer looks (name, print fmt) share it."""
    one = make_renderer(_format(_A), COMPACT)
    two = make_renderer(_format(_A, name="other", print_fmt='"y"'), COMPACT)
    assert one is two
    assert one(_RAW) == b',"a":4294967294,"p":"0x1F4"'


@pytest.mark.parametrize("other, want", [
    # the same name, another offset
    (_A.replace("offset:8;", "offset:16;"), b',"a":287454020,"p":"0x1F4"'),
    # another field name
    (_A.replace(" a;", " b;"), b',"b":4294967294,"p":"0x1F4"'),
    # signed: the same bytes, another value
    (_A.replace("u32 a", "s32 a").replace("signed:0;", "signed:1;", 1), b',"a":-2,"p":"0x1F4"'),
    # another declared type: hex
    (_A.replace("u32 a", "gfp_t a"), b',"a":"0xFFFFFFFE","p":"0x1F4"'),
    # another size: 2 bytes
    (_A.replace("size:4;", "size:2;", 1).replace("u32 a", "u16 a"), b',"a":65534,"p":"0x1F4"'),
])
def test_fields_that_differ_get_their_own_renderer(other, want):
    base = make_renderer(_format(_A), COMPACT)
    assert base(_RAW) == b',"a":4294967294,"p":"0x1F4"'
    render = make_renderer(_format(other), COMPACT)
    assert render is not base
    assert render(_RAW) == want
    assert make_renderer(_format(_A), COMPACT)(_RAW) == b',"a":4294967294,"p":"0x1F4"'


def test_style_byte_order_and_common_are_part_of_the_key():
    fmt = _format(_A)
    assert make_renderer(fmt, COMPACT)(_RAW) == b',"a":4294967294,"p":"0x1F4"'
    assert make_renderer(fmt, SPACED)(_RAW) == b', "a": 4294967294, "p": "0x1F4"'
    decimal = JsonStyle(space=False, field_tags=False, decimal_pids=True)
    assert make_renderer(fmt, decimal)(_RAW) == b',"a":4294967294,"p":500'
    assert make_renderer(fmt, COMPACT, big_endian=True)(_RAW) == \
        b',"a":4278190079,"p":"0xF4010000"'
    assert make_renderer(fmt, COMPACT, common="only")(_RAW) == \
        b',"common_type":1,"common_pid":7'
    assert make_renderer(fmt, COMPACT, common=True)(_RAW) == \
        b',"common_type":1,"common_pid":7,"a":4294967294,"p":"0x1F4"'
    assert make_renderer(fmt, COMPACT)(_RAW) == b',"a":4294967294,"p":"0x1F4"'


def test_pure_python_after_c_gets_a_python_renderer(monkeypatch):
    """EHTOOL_PURE=1 in the same process after a C renderer was made (the C-vs-Python
    comparisons do that): a Python renderer, not the shared C one; and back."""
    monkeypatch.delenv("EHTOOL_PURE", raising=False)
    require_speedups()
    fmt = _format(_A)
    c_render = make_renderer(fmt, COMPACT)
    monkeypatch.setenv("EHTOOL_PURE", "1")
    py_render = make_renderer(fmt, COMPACT)
    monkeypatch.delenv("EHTOOL_PURE")
    assert is_native(c_render) and not is_native(py_render)
    assert c_render(_RAW) == py_render(_RAW)
    assert make_renderer(fmt, COMPACT) is c_render


def test_the_shared_renderers_stay_bounded(monkeypatch):
    monkeypatch.setattr(tracefs_fields, "_RENDERERS", Bounded(2))
    for offset in (8, 12, 16, 8, 4):
        render = make_renderer(_format(f"\tfield:u32 a;\toffset:{offset};\tsize:4;\t"
                                       "signed:0;\n"), COMPACT)
        assert render(_RAW) == b',"a":%d' % struct.unpack_from("<I", _RAW, offset)[0]
        assert len(tracefs_fields._RENDERERS) <= 2


def _arrays(paths: list[str]) -> list:
    out = io.BytesIO()
    assert decode_to(out, paths, DecodeOptions(jobs=1)) == []
    return [events for _name, events in json.loads(out.getvalue(), object_pairs_hook=list)]


def test_inputs_with_other_formats_under_the_same_names_decode_as_alone(tmp_path,
                                                                        monkeypatch):
    """examples/sched.data and a copy whose sched_switch and sched_wakeup formats name a
    field differently and move the next one (same event names and ids), in one process:
    each array is the one that input gives alone, in fresh caches."""
    original = REPO / "examples" / "sched.data"
    mutant = tmp_path / "mutant.data"
    data = original.read_bytes()
    mutant.write_bytes(data.replace(b"prev_comm", b"prev_cmdx")
                       .replace(b"offset:24;", b"offset:25;"))
    alone = []
    for path in (original, mutant):
        monkeypatch.setattr(tracefs_fields, "_RENDERERS", Bounded(256))
        alone += _arrays([str(path)])
    assert alone[0] != alone[1] and '"prev_cmdx"' in json.dumps(alone[1])
    monkeypatch.setattr(tracefs_fields, "_RENDERERS", Bounded(256))
    both = _arrays([str(original), str(mutant), str(original), str(mutant)])
    assert both == [*alone, *alone]
