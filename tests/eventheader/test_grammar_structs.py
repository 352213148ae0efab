"""The encoder's header structs, written out so that ``ehtool write`` does not import
construct, are those derived from the EventHeader grammar."""

from __future__ import annotations

import sys

from ehtool.eventheader import encoder
from ehtool.eventheader.grammar import count_struct, extension_struct, grammar, header_struct


def test_the_encoders_structs_are_the_grammars():
    little = sys.byteorder == "little"
    assert encoder._HEADER.format == header_struct(little).format
    assert encoder._EXT.format == extension_struct(little).format
    assert encoder._U16.format == count_struct(little).format
    assert encoder._HEADER.size == grammar(little)["header"].sizeof() == 8


def test_count_struct_reads_what_the_grammar_reads():
    for little in (True, False):
        data = grammar(little)["count"].build(dict(count=0x1234))
        assert count_struct(little).unpack(data) == (0x1234,)
