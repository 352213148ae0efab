"""EventHeader field definitions -> the op list of the C renderer (``_speedups.Plan``),
and of the C check of an event's bounds alone (:func:`native_check`: the typed layer's
``decode(only=())``, which decodes no field but checks the event whole).

The ops follow :class:`ehtool.render.plan._Generator` member for member:
the same literals (keys, separators, braces), the same value rules (the
rulebook ``ehtool.eventheader.kinds``: each kind names its C kind) and the same
MoveNext step accounting. Integers and printable-ASCII strings are written by the C code;
every other value goes through the Python formatter the generated code uses,
and any event the C code cannot finish (malformed, a limit reached) is handed
to the generated Python renderer, which gives the reference output or error.
Definitions that fail every event (errors in the metadata, nesting too deep)
get no C plan at all.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from ehtool.eventheader.enums import STRUCT_NESTING_LIMIT
from ehtool.eventheader.enums import FieldEncoding as E
from ehtool.eventheader.grammar import (
    TOP_LEVEL_FIELD_LIMIT,
    FieldDef,
    element_steps,
    step_budget,
)
from ehtool.eventheader.kinds import FIXED_SIZES, UNIT_SIZES, ZSTRINGS, fixed_kind, string_kind
from ehtool.speedups import (
    FX_BOOL,
    FX_HEX,
    FX_HEXBYTES,
    FX_PORT,
    FX_PY,
    FX_SIGNED,
    FX_UNSIGNED,
    OP_ARRAY,
    OP_FIXED,
    OP_LIT,
    OP_STR,
    load,
)
from ehtool.values.strings import UTF8_AS_SHOWN, escape_surrogates
from ehtool.values.typed_json import json_bytes

__all__ = ["Literals", "native_check", "native_render", "native_typed_json"]


class Literals(Protocol):
    """The texts between values (``ehtool.render.style.JsonStyle``)."""

    first: bytes
    sep: bytes
    close_obj: bytes
    close_arr: bytes
    empty_arr: bytes
    empty_obj: bytes

    def member_key(self, name: bytes, tag: int, first: bool) -> bytes: ...


class _NoLiterals:
    """No text at all: a plan whose ``check`` alone is used (literals are not bounds)."""

    first = sep = close_obj = close_arr = empty_arr = empty_obj = b""

    def member_key(self, name: bytes, tag: int, first: bool) -> bytes:
        return b""


class _TypedLiterals:
    """The texts of ``ehtool.values.typed_json`` (orjson's compact JSON): keys as it
    writes them, no field tags."""

    first = b""
    sep = b","
    close_obj = b"}"
    close_arr = b"]"
    empty_arr = b"[]"
    empty_obj = b"{}"

    def member_key(self, name: bytes, tag: int, first: bool) -> bytes:
        return (b"" if first else b",") + json_bytes(name.decode("utf-8", UTF8_AS_SHOWN)) + b":"


class _Unsupported(Exception):
    """The definitions fail every event: the generated Python renderer serves alone."""


def native_check(defs: list[FieldDef], little: bool,
                 fallback: Callable[[bytes, int, int], object]) -> Any:
    """``check(data, p, o)``: the C walk of the bounds of an event's field data that the
    C renderer of ``defs`` makes (as ``Plan.check``), calling ``fallback(data, p, o)``
    where the C code cannot finish (malformed: it raises why, or a limit the C code
    leaves to Python); None when there is no C renderer for ``defs``."""
    plan, _ = native_render(defs, little, _NoLiterals(), fallback)
    return None if plan is None else plan.check


def native_typed_json(defs: list[FieldDef], little: bool,
                      fallback: Callable[[bytes, int, int], bytes]) -> Any:
    """``render(data, p, o)``: the fields of an event's field data as the members of a
    JSON object by ``ehtool.values.typed_json`` (``,"a":1,"b":"x"``: each one after a
    comma; ``{`` + all but the first comma + ``}`` is the object), calling ``fallback(data,
    p, o)`` where the C code cannot finish (it gives the same text, or raises why the
    event is malformed); None when there is no C renderer for ``defs`` (among them
    definitions with a name twice in one object: the typed object keeps the first)."""
    if _names_repeat(defs):
        return None
    plan, _ = native_render(defs, little, _TypedLiterals(), fallback, typed=True)
    return None if plan is None else plan.render


def _names_repeat(defs: list[FieldDef]) -> bool:
    """Whether a name comes twice among the members of one object (as the typed rule
    writes names: a lone surrogate as its text ``\\udxxx``)."""
    names = [escape_surrogates(d.name.decode("utf-8", UTF8_AS_SHOWN)) for d in defs]
    return len(set(names)) < len(names) or any(
        d.encoding == E.STRUCT and _names_repeat(d.members) for d in defs)


def native_render(defs: list[FieldDef], little: bool, style: Literals,
                  fallback: Callable[[bytes, int, int], bytes], *,
                  typed: bool = False) -> tuple[Any, tuple[int, ...]]:
    """The C renderer of ``defs`` (a ``_speedups.Plan``: ``render(data, p, o) -> bytes``,
    and ``check(data, p, o)``, its bounds alone) and, per top-level field, the index in
    its op list of the field's value op (-1 for a struct, whose members' ops follow a
    literal); ``(None, ())`` when the C module is not available or the definitions are
    better left to ``fallback``. ``typed``: each value's JSON by
    ``ehtool.values.typed_json`` (the rulebook's ``typed_c_kind`` and
    ``typed_formatter``), not decode's."""
    speedups = load()
    if speedups is None or len(defs) > TOP_LEVEL_FIELD_LIMIT:
        return None, ()
    ops: list[tuple] = []
    starts: list[int] = []
    compiler = _Compiler(style, little, typed)
    try:
        compiler.members(defs, ops, 1, top=True, starts=starts)
    except _Unsupported:
        return None, ()
    if compiler.python_values > TYPED_PYTHON_VALUES:
        return None, ()
    budget = step_budget(defs)  # (the generated code's limit check)
    if budget is None or budget < 0:
        return None, ()
    moved: dict[int, int] = {}
    flat = _flatten(ops, moved)
    return (speedups.Plan(flat, little, budget, fallback),
            tuple(moved.get(i, -1) for i in starts))


#: a typed JSON plan is made only when an event's values that the Python rule writes
#: (floats, times, sized strings: each a call from C) are at
#: most this many, none of them in an array: one typed decode and one orjson call for
#: the event are cheaper than more such calls (a float64[16]: 2.2 times as long)
TYPED_PYTHON_VALUES = 4


class _Compiler:
    def __init__(self, style: Literals, little: bool, typed: bool = False) -> None:
        self.style = style
        self.little = little
        self.typed = typed
        #: the values of the typed plan written by the Python rule (arrays: unsupported)
        self.python_values = 0

    def members(self, defs: list[FieldDef], ops: list[tuple], depth: int,
                top: bool = False, starts: list[int] | None = None) -> None:
        """Ops of an object's members (``starts``: the index in ``ops`` of each
        member's first value op)."""
        for i, d in enumerate(defs):
            _literal(ops, self.style.member_key(d.name, d.tag, first=not (top or i)))
            if starts is not None:
                starts.append(len(ops))
            self.value(d, ops, depth)

    def value(self, d: FieldDef, ops: list[tuple], depth: int) -> None:
        if d.error is not None:
            raise _Unsupported
        if d.array is not None:
            self.array(d, ops, depth)
        elif d.encoding == E.STRUCT:
            self.struct(d, ops, depth)
        else:
            ops.append(self.scalar(d))

    def struct(self, d: FieldDef, ops: list[tuple], depth: int) -> None:
        s = self.style
        if depth > STRUCT_NESTING_LIMIT:
            raise _Unsupported
        if not d.members:
            _literal(ops, s.empty_obj)
            return
        _literal(ops, b"{")
        self.members(d.members, ops, depth + 1)
        _literal(ops, s.close_obj)

    def array(self, d: FieldDef, ops: list[tuple], depth: int) -> None:
        s = self.style
        n = d.array
        body: list[tuple] = []
        per = 0
        before = self.python_values
        if d.encoding == E.STRUCT:
            if depth > STRUCT_NESTING_LIMIT:
                raise _Unsupported
            per = element_steps(d, depth)
            if d.members:
                _literal(body, b"{")
                self.members(d.members, body, depth + 1)
                _literal(body, s.close_obj)
            else:
                _literal(body, s.empty_obj)
        else:
            body.append(self.scalar(d))
        if self.python_values > before:
            raise _Unsupported  # (typed: a call from C per element)
        ops.append((OP_ARRAY, n, per, body, b"[" + s.first, s.sep, s.close_arr, s.empty_arr))

    def scalar(self, d: FieldDef) -> tuple:
        """The op of one fixed-size or string value (an element, for arrays), from the
        value's rule (``ehtool.eventheader.kinds``)."""
        size = FIXED_SIZES.get(d.encoding)
        if size is not None:
            kind = fixed_kind(size, d.format, self.little)
            if self.typed:
                if kind.typed_c_kind is not None:
                    return (OP_FIXED, size, kind.typed_c_kind, kind.typed_formatter)
                self.python_values += 1
                return (OP_FIXED, size, FX_PY, kind.typed_formatter)
            # the C code writes what it can; the rest (non-ASCII characters, values whose
            # rarer cases only the Python formatter has) in Python
            if kind.c_kind in _C_ALONE:
                return (OP_FIXED, size, kind.c_kind, None)
            if kind.c_table is not None:
                return (OP_FIXED, size, kind.c_kind, kind.formatter, kind.c_table)
            return (OP_FIXED, size, kind.c_kind, kind.formatter)
        if d.encoding not in UNIT_SIZES:
            raise _Unsupported
        rule = string_kind(d.encoding, d.format, self.little)
        if self.typed:
            self.python_values += not rule.typed_c_flags
            return (OP_STR, UNIT_SIZES[d.encoding], int(d.encoding in ZSTRINGS),
                    rule.typed_c_flags, rule.typed_formatter)
        return (OP_STR, UNIT_SIZES[d.encoding], int(d.encoding in ZSTRINGS), rule.c_flags,
                rule.json)


#: C kinds written without a Python formatter
_C_ALONE = (FX_UNSIGNED, FX_SIGNED, FX_HEX, FX_PORT, FX_BOOL, FX_HEXBYTES)


def _literal(ops: list[tuple], text: bytes) -> None:
    ops.append((OP_LIT, text))


def _flatten(ops: list[tuple], moved: dict[int, int] | None = None) -> list[tuple]:
    """The op list of ``_speedups.Plan``: each array's element ops follow it (its
    ``body`` becomes their number) and adjacent literals of one level are merged
    (``moved``: index in ``ops`` -> index in the result, for the ops not merged)."""
    out: list[tuple] = []
    last_literal = -1
    for i, op in enumerate(ops):
        if moved is not None and op[0] != OP_LIT:
            moved[i] = len(out)
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
