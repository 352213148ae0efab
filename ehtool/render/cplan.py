"""EventHeader field definitions -> the op list of the C renderer (``_speedups.Plan``).

The ops follow :class:`ehtool.render.plan._Generator` member for member:
the same literals (keys, separators, braces), the same value rules (taken from
``plan._inline_spec`` and ``plan._string_text``) and the same MoveNext step
accounting. Integers and printable-ASCII strings are written by the C code;
every other value goes through the Python formatter the generated code uses,
and any event the C code cannot finish (malformed, a limit reached) is handed
to the generated Python renderer, which gives the reference output or error.
Definitions that fail every event (errors in the metadata, nesting too deep)
get no C plan at all.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from ehtool.eventheader.enums import STRUCT_NESTING_LIMIT
from ehtool.eventheader.enums import FieldEncoding as E
from ehtool.eventheader.grammar import MOVE_NEXT_LIMIT, TOP_LEVEL_FIELD_LIMIT, FieldDef
from ehtool.render.plan import (
    _ZSTRINGS,
    FIXED_SIZES,
    UNIT_SIZES,
    _inline_spec,
    _string_text,
    member_key,
    value_formatter,
)
from ehtool.render.style import JsonStyle
from ehtool.speedups import (
    FX_BOOL,
    FX_CHAR,
    FX_HEX,
    FX_HEXBYTES,
    FX_PORT,
    FX_PY,
    FX_SIGNED,
    FX_UNSIGNED,
    FX_UUID,
    OP_ARRAY,
    OP_FIXED,
    OP_LIT,
    OP_STR,
    STR_ASCII,
    STR_BOM,
    STR_HEX,
    load,
)
from ehtool.values import text as v

__all__ = ["native_render"]
#: string formatters that write printable ASCII as itself between quotes
_ASCII_SAFE = (v.utf8_json, v.latin1_json, v.utf16_json, v.utf32_json)
#: single characters (``_inline_spec`` expressions) the C code writes when printable ASCII
_CHARS = ("_L1[{}]", "_u16le({})", "_u16be({})", "_u32le({})", "_u32be({})")


class _Unsupported(Exception):
    """The definitions fail every event: the generated Python renderer serves alone."""


def native_render(defs: list[FieldDef], little: bool, style: JsonStyle,
                  fallback: Callable[[bytes, int, int], bytes]) -> Callable | None:
    """The C renderer of ``defs`` (``render(data, p, o) -> bytes``), or None when the C
    module is not available or the definitions are better left to ``fallback``."""
    speedups = load()
    if speedups is None or len(defs) > TOP_LEVEL_FIELD_LIMIT:
        return None
    ops: list[tuple] = []
    try:
        static = _Compiler(style, little).members(defs, ops, 1, top=True)
    except _Unsupported:
        return None
    budget = MOVE_NEXT_LIMIT - 1 - static  # the generated code's limit check
    if budget < 0:
        return None
    return speedups.Plan(_flatten(ops), little, budget, fallback).render


class _Compiler:
    def __init__(self, style: JsonStyle, little: bool) -> None:
        self.style = style
        self.little = little

    def members(self, defs: list[FieldDef], ops: list[tuple], depth: int,
                top: bool = False) -> int:
        """Ops of an object's members; returns the static MoveNext steps."""
        steps = 0
        for i, d in enumerate(defs):
            _literal(ops, member_key(d, self.style, first=not (top or i)))
            steps += self.value(d, ops, depth)
        return steps

    def value(self, d: FieldDef, ops: list[tuple], depth: int) -> int:
        if d.error is not None:
            raise _Unsupported
        if d.array is not None:
            return self.array(d, ops, depth)
        if d.encoding == E.STRUCT:
            return self.struct(d, ops, depth)
        ops.append(self.scalar(d))
        return 1

    def struct(self, d: FieldDef, ops: list[tuple], depth: int) -> int:
        s = self.style
        if depth > STRUCT_NESTING_LIMIT:
            raise _Unsupported
        if not d.members:
            _literal(ops, s.empty_obj)
            return 2
        _literal(ops, b"{")
        steps = self.members(d.members, ops, depth + 1)
        _literal(ops, s.close_obj)
        return 2 + steps

    def array(self, d: FieldDef, ops: list[tuple], depth: int) -> int:
        s = self.style
        n = d.array
        body: list[tuple] = []
        per = 0
        if d.encoding == E.STRUCT:
            if depth > STRUCT_NESTING_LIMIT:
                raise _Unsupported
            if d.members:
                _literal(body, b"{")
                per = 2 + self.members(d.members, body, depth + 1)
                _literal(body, s.close_obj)
            else:
                _literal(body, s.empty_obj)
                per = 2
        else:
            body.append(self.scalar(d))
        ops.append((OP_ARRAY, n, per, body, b"[" + s.first, s.sep, s.close_arr, s.empty_arr))
        return 2 + n if n and d.encoding != E.STRUCT else 2

    def scalar(self, d: FieldDef) -> tuple:
        """The op of one fixed-size or string value (an element, for arrays)."""
        size = FIXED_SIZES.get(d.encoding)
        if size is not None:
            return (OP_FIXED, size, *self.fixed_kind(d.encoding, size, d.format))
        unit = UNIT_SIZES.get(d.encoding)
        if unit is None:
            raise _Unsupported
        fmt = _string_text(d.encoding, unit, d.format, self.little)
        func = fmt.func if isinstance(fmt, partial) else fmt
        fast = (STR_ASCII if func in _ASCII_SAFE
                else STR_ASCII | STR_BOM if func is v.bom_string_json
                else STR_HEX if func is v.hex_bytes else 0)
        return (OP_STR, unit, int(d.encoding in _ZSTRINGS), fast, fmt)

    def fixed_kind(self, encoding: int, size: int, fmt: int) -> tuple[int, object]:
        """(kind, Python formatter or None) as ``_inline_spec`` renders the value."""
        code, piece, expr = _inline_spec(size, fmt, self.little)
        if piece == b"%d" and expr == "{}":
            return (FX_SIGNED if code.islower() else FX_UNSIGNED), None
        if piece == b"%d" and "<< 8" in expr:
            return FX_PORT, None  # a little-endian port, byte-swapped: network order
        if piece == b'"0x%X"':
            return FX_HEX, None
        if expr in _CHARS:
            return FX_CHAR, value_formatter(encoding, fmt, self.little)
        if expr.startswith("_bool("):
            return FX_BOOL, None
        if expr == "_hexb({})":
            return FX_HEXBYTES, None
        if expr == "_uuid({})":
            return FX_UUID, value_formatter(encoding, fmt, self.little)
        return FX_PY, value_formatter(encoding, fmt, self.little)


def _literal(ops: list[tuple], text: bytes) -> None:
    ops.append((OP_LIT, text))


def _flatten(ops: list[tuple]) -> list[tuple]:
    """The op list of ``_speedups.Plan``: each array's element ops follow it (its
    ``body`` becomes their number) and adjacent literals of one level are merged."""
    out: list[tuple] = []
    last_literal = -1
    for op in ops:
        if op[0] == OP_LIT:
            if last_literal == len(out) - 1 >= 0:
                out[-1] = (OP_LIT, out[-1][1] + op[1])
            else:
                out.append(op)
                last_literal = len(out) - 1
        elif op[0] == OP_ARRAY:
            body = _flatten(op[3])
            out.append((*op[:3], len(body), *op[4:]))
            out.extend(body)
        else:
            out.append(op)
    return out
