"""EventHeader tracepoint names against the rules of the reference tools
(TracepointName.h EventHeaderEventNameIsValid, tracepoint-register, eventheader.h)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ehtool.eventheader.names import (
    EVENTHEADER_COMMAND_TYPES,
    InvalidNameError,
    TracepointName,
    build,
    is_eventheader_name,
    parse,
)


@pytest.mark.parametrize(("name", "provider", "level", "keyword", "options"), [
    ("MyProvider_L5K1", "MyProvider", 5, 1, ""),
    ("MyProvider_L5K3ffGmygroup", "MyProvider", 5, 0x3FF, "Gmygroup"),
    ("My_Component_Prov_L1K2e", "My_Component_Prov", 1, 0x2E, ""),  # last '_' splits
    ("P_LffKffffffffffffffff", "P", 255, 2**64 - 1, ""),
    ("P_L4K0GabcH1", "P", 4, 0, "GabcH1"),
    ("P_L4K0G", "P", 4, 0, "G"),  # an option value may be empty
    ("_L1K1", "", 1, 1, ""),  # the reference validators accept an empty provider
])
def test_valid_names_parse_into_their_parts(name, provider, level, keyword, options):
    tp = parse(name)
    assert (tp.provider, tp.level, tp.keyword, tp.options) == (provider, level, keyword, options)
    assert str(tp) == name


@pytest.mark.parametrize(("name", "rule"), [
    ("NoSuffix", "needs a provider"),
    ("P_X5K1", "must start with 'L<level>'"),
    ("P_LK1", "'L' must be followed by the level"),
    ("P_L5", "followed by 'K<keyword>'"),
    ("P_L5K", "'K' must be followed by the keyword"),
    ("P_LAK1", "'L' must be followed by the level in lowercase hex"),
    ("P_L5KA", "'K' must be followed by the keyword in lowercase hex"),
    ("P_L5K1g", "must start with an uppercase letter"),
    ("P_L5K1G-x", "only ASCII letters and digits"),
    ("P_L0K1", "level must be 1..255"),
    ("P_L100K1", "level must be 1..255"),
    ("P_L1K10000000000000000", "does not fit in 64 bits"),
    ("P Q_L1K1", "must not contain space"),
    ("P:Q_L1K1", "must not contain ':'"),
    ("P/Q_L1K1", "must not contain '/'"),
    ("", "empty"),
    ("P" * 251 + "_L1K1", "the limit is 255"),
])
def test_invalid_names_say_which_rule_they_break(name, rule):
    with pytest.raises(InvalidNameError, match=re.escape(rule)):
        parse(name)
    assert not is_eventheader_name(name)


def test_the_longest_name_is_255_characters():
    assert parse("P" * 250 + "_L1K1").provider == "P" * 250


def _reference_valid(name: str) -> bool:
    """TracepointName.h's EventHeaderEventNameIsValid, transcribed as a rule list."""
    m = re.fullmatch(r"(.*)_L([0-9a-f]+)K([0-9a-f]+)([A-Z][A-Za-z0-9]*)?", name, re.S)
    return (m is not None and 0 < len(name) <= 255
            and not any(ch in name for ch in "\0 /:"))


_NEAR_NAMES = st.builds(  # mostly valid pieces, some broken ones
    lambda *parts: "".join(parts),
    st.sampled_from(["P", "My_Prov", "", "P q", "P:x", "p/1"]),
    st.sampled_from(["_L", "_L", "_L", "_", "_l", "L"]),
    st.sampled_from(["5", "ff", "1f", "0", "100", "", "A"]),
    st.sampled_from(["K", "K", "K", "", "k"]),
    st.sampled_from(["1", "3ff", "0", "ffffffffffffffff", "10000000000000000", "", "G"]),
    st.sampled_from(["", "", "Gabc", "GaH1", "g", "G-x", "_x", "G_L1K1"]),
)


@given(st.one_of(_NEAR_NAMES, st.text(max_size=12)))
def test_parse_agrees_with_the_reference_validator(name):
    """Same verdict as the reference, except the EventHeader value ranges it leaves open."""
    ours = is_eventheader_name(name)
    if ours:
        assert _reference_valid(name)
    elif _reference_valid(name):
        tail = name[name.rfind("_"):]
        level_hex, keyword_hex = re.match(r"_L([0-9a-f]+)K([0-9a-f]+)", tail).groups()
        assert not 1 <= int(level_hex, 16) <= 255 or int(keyword_hex, 16) >= 2**64


@pytest.mark.parametrize(("name", "producers_name"), [
    ("P_L05K1", "P_L5K1"), ("P_L5K01", "P_L5K1"), ("P_L0aK00Gg", "P_LaK0Gg")])
def test_leading_zeros_decode_but_are_not_a_name_to_register(name, producers_name):
    assert str(parse(name)) == producers_name  # accepted when decoding, as the reference does
    with pytest.raises(InvalidNameError, match=re.escape(
            f"{name!r}: level and keyword are lowercase hex without leading zeros: "
            f"producers write to {producers_name!r}")):
        parse(name, canonical=True)
    assert str(parse(producers_name, canonical=True)) == producers_name


def test_build_formats_lowercase_hex_without_leading_zeros():
    assert str(build("MyProvider", 10, 0xABC)) == "MyProvider_LaKabc"
    assert str(build("MyProvider", 5, 0x3FF, group="mygroup")) == "MyProvider_L5K3ffGmygroup"
    assert str(build("P", 1, 1, group="g", options="Hx")) == "P_L1K1GgHx"  # sorted options
    assert build("P", 1, 1, group="grp").group == "grp"
    assert TracepointName("P", 5, 1).command == f"P_L5K1 {EVENTHEADER_COMMAND_TYPES}"


@pytest.mark.parametrize(("args", "rule"), [
    (("", 5, 1), "provider name must be a non-empty string"),
    (("My Provider", 5, 1), "must not contain space"),
    (("My:Provider", 5, 1), "must not contain ':'"),
    (("P", 0, 1), "level must be 1..255"),
    (("P", 256, 1), "level must be 1..255"),
    (("P", 5, -1), "64-bit unsigned"),
    (("P", 5, 2**64), "64-bit unsigned"),
    (("P" * 251, 5, 1), "must stay within 255"),
])
def test_build_refuses_what_a_producer_refuses(args, rule):
    with pytest.raises(InvalidNameError, match=re.escape(rule)):
        build(*args)


@pytest.mark.parametrize("group", ["", "MyGroup", "my-group"])
def test_group_must_be_lowercase_letters_and_digits(group):
    with pytest.raises(InvalidNameError, match="lowercase ASCII letters or digits"):
        build("P", 5, 1, group=group)
