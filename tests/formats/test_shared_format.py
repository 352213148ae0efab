"""``shared_format``: each distinct format text is parsed once per process (the inputs of
a fleet repeat them) and keyed by everything the parse reads: the text, the system and
``sizeof(long)``."""

from __future__ import annotations

import pytest

from ehtool.formats.tracefs_format import HEX, FormatError, parse_format, shared_format

_TEXT = ("name: ev\nID: 7\nformat:\n"
         "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\n"
         "\tfield:unsigned long x[2];\toffset:8;\tsize:16;\tsigned:0;\n\n"
         'print fmt: "x"\n')


def test_the_same_text_is_parsed_once_and_equals_parse_format():
    one = shared_format(_TEXT, "sys", 8)
    assert shared_format(_TEXT, "sys", 8) is one
    assert one == parse_format(_TEXT, "sys", 8)


def test_system_and_long_size_are_part_of_the_key():
    wide = shared_format(_TEXT, "sys", 8)
    narrow = shared_format(_TEXT, "sys", 4)
    assert (wide.fields[0].element_size, narrow.fields[0].element_size) == (8, 4)
    assert wide.fields[0].format == narrow.fields[0].format == HEX
    assert shared_format(_TEXT, "other", 8).system == "other"
    assert shared_format(_TEXT.replace(" x[2]", " y[2]"), "sys", 8).fields[0].name == "y"


def test_a_format_that_does_not_parse_raises_each_time():
    for _ in range(2):
        with pytest.raises(FormatError):
            shared_format("name: ev\n", "sys", 8)
