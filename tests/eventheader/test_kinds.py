"""The value rulebook: every format and size has a rule, the back ends' views of one rule
agree (struct code, JSON, typed value, C kind)."""

from __future__ import annotations

import json
import random

import pytest

from ehtool import speedups as sp
from ehtool.eventheader.enums import FieldEncoding as E
from ehtool.eventheader.enums import FieldFormat as F
from ehtool.eventheader.kinds import FORMAT_KINDS, KIND_SPECS, UNIT_SIZES, fixed_kind, string_kind
from shown import same

SIZES = (1, 2, 4, 8, 16)
#: kinds the C renderer writes from the number alone (no Python formatter)
_C_NUMBERS = (sp.FX_UNSIGNED, sp.FX_SIGNED, sp.FX_HEX, sp.FX_PORT)


def test_every_table_kind_has_a_spec():
    assert {kind for kind, _ in FORMAT_KINDS.values()} <= set(KIND_SPECS)


@pytest.mark.parametrize("little", [True, False])
@pytest.mark.parametrize("fmt", list(F) + [99])
@pytest.mark.parametrize("size", SIZES)
def test_one_rule_read_three_ways(size, fmt, little):
    kind = fixed_kind(size, fmt, little)
    assert kind.struct.size == size
    # the generated code writes ``piece % value`` exactly when the C code needs no formatter
    assert (kind.json is None) == (kind.c_kind in _C_NUMBERS), kind
    rng = random.Random(size * 1000 + int(fmt))
    for _ in range(200):
        raw = bytes(rng.choice((0, 1, 0x7F, 0x80, 0xFF, rng.randrange(256))) for _ in range(size))
        text = kind.from_bytes(raw)
        assert kind.formatter(raw) == text, (kind.name, raw)
        shown = json.loads(text) if text[:1] != b"-" or text[1:2].isdigit() else text
        assert same(kind.python(raw), shown), (kind.name, raw, text)


def test_a_listed_format_of_another_size_is_unsigned():
    assert fixed_kind(2, F.ERRNO, True).name == "unsigned"
    assert fixed_kind(8, F.BOOLEAN, True).name == "unsigned"
    assert fixed_kind(4, F.FLOAT, True).name == "float"


@pytest.mark.parametrize("little", [True, False])
@pytest.mark.parametrize("fmt", list(F))
@pytest.mark.parametrize("encoding", list(UNIT_SIZES))
def test_string_rules_json_and_typed_agree(encoding, fmt, little):
    rule = string_kind(encoding, fmt, little)
    unit = UNIT_SIZES[encoding]
    rng = random.Random(int(encoding) * 100 + int(fmt))
    for n in (0, 1, 2, 4, 8, 16, 3):
        raw = bytes(rng.choice(b"aZ09 \x00\xff\xfe\xef\xbb\xbf\xd8\xdc") for _ in range(n * unit))
        shown = json.loads(rule.json(raw))
        typed = rule.typed(raw)
        if rule.name == "sized" and raw:
            continue  # a number of a fitting size: the fixed rules, tested above
        assert same(typed, shown) or typed == shown, (rule.name, raw, shown, typed)


def test_binary_data_is_hex_bytes_by_default():
    assert string_kind(E.BINARY_LENGTH16_CHAR8, F.DEFAULT, True).name == "hexbytes"
    assert string_kind(E.STRING_LENGTH16_CHAR8, F.DEFAULT, True).name == "utf8"


@pytest.mark.parametrize("little", [True, False])
@pytest.mark.parametrize("fmt", [F.STRING_UTF, F.STRING_UTF_BOM, F.STRING_XML, F.STRING_JSON])
@pytest.mark.parametrize("encoding", [e for e, unit in UNIT_SIZES.items() if unit > 1])
def test_lone_surrogates_are_typed_as_the_json_shows_them(encoding, fmt, little):
    """Issue: the BOM formats decoded a lone UTF-16 surrogate as U+FFFD in the typed value
    (--format text showed U+FFFD where JSON has the \\ud800 escape)."""
    rule = string_kind(encoding, fmt, little)
    unit = UNIT_SIZES[encoding]
    codec = f"utf-{unit * 8}-{'le' if little else 'be'}"
    text = "\ud800jkl\udc00"
    bom = "\ufeff".encode(codec)
    for raw in (text.encode(codec, "surrogatepass"), bom + text.encode(codec, "surrogatepass"),
                text.encode(codec, "surrogatepass") + b"x"):
        if raw.startswith(bom) and fmt == F.STRING_UTF:
            continue  # (no BOM rule: the BOM is a character)
        assert rule.typed(raw) == json.loads(rule.json(raw)), raw
