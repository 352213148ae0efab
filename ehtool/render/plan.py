"""Decode plans: the field definitions of one metadata compiled into Python code.

:func:`compile_plan` parses a metadata extension with the construct grammar
(once per distinct metadata; the decoder caches plans) and generates one
function ``render(data, p, o) -> bytes`` for the payload at ``data[p:]`` (``o``
is where the EventHeader starts, for error offsets):

* consecutive fixed-size values (also across non-array structs and short
  constant arrays) are read with ONE precompiled ``struct.Struct.unpack_from``;
* the output is ONE bytes template (keys, separators and braces precomputed)
  filled with ``%``: integers go in as ``%d``/``"0x%X"`` directly, everything
  else through its formatter; both as the value's rule in ``ehtool.eventheader.kinds`` says;
* strings, variable arrays and arrays of structs get straight-line code or a
  loop, in payload order.

The generated code follows the reference ``EventEnumerator``: a field the
enumerator refuses fails the event only when it is reached, struct nesting is
limited to 8, more than 255 top-level fields or more than 4096 MoveNext steps
fail the event, and bytes after the last field (perf's padding) are ignored.
Failures raise :class:`~ehtool.eventheader.grammar.EventHeaderError`.

:func:`value_formatter` is the generic (slower) formatter of one value from its
raw bytes; the generated code uses it for rare encoding/format combinations and
tests use it to check the specialised inline forms.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

from ehtool.eventheader.cplan import native_render
from ehtool.eventheader.enums import STRUCT_NESTING_LIMIT
from ehtool.eventheader.enums import FieldEncoding as E
from ehtool.eventheader.grammar import (
    MOVE_NEXT_LIMIT,
    TOP_LEVEL_FIELD_LIMIT,
    EventHeaderError,
    FieldDef,
    element_steps,
    has_data_steps,
    parse_metadata,
    step_budget,
)
from ehtool.eventheader.kinds import FIXED_SIZES, UNIT_SIZES, ZSTRINGS, fixed_kind, string_kind
from ehtool.render.style import JsonStyle
from ehtool.values import text as v

__all__ = ["Plan", "compile_plan", "value_formatter"]

Formatter = Callable[[bytes], bytes]

#: largest constant array read inline with its neighbours (one variable per element)
_INLINE_ARRAY_MAX = 16
#: plans cached per decoder before the cache is emptied (bounds memory on odd inputs)
PLAN_CACHE_MAX = 4096


# -- the generic formatter, and helpers called by generated code ------------------

def value_formatter(encoding: int, fmt: int, little: bool) -> Formatter:
    """JSON of one value from its bytes (no count, no terminator) in event byte order."""
    size = FIXED_SIZES.get(encoding)
    if size is not None:
        return fixed_kind(size, fmt, little).from_bytes
    if encoding not in UNIT_SIZES:
        raise EventHeaderError(f"unsupported field encoding {encoding}")
    return string_kind(encoding, fmt, little).json


def _zend(data: bytes, p: int, unit: int, o: int) -> int:
    """Offset of the ``unit``-wide zero terminator of the string at ``p`` (unit-stepped)."""
    nul = b"\0" * unit
    end = p
    while True:
        end = data.find(nul, end)
        if end < 0:
            raise EventHeaderError(f"string at byte {p - o} has no terminator")
        if (end - p) % unit == 0:
            return end
        end += 1


def _unpacker(cache: dict[int, Callable], prefix: str, n: int) -> Callable:
    """``unpack_from`` of ``n`` elements (``prefix`` is byte order + count-less code)."""
    u = struct.Struct(prefix[0] + str(n) + prefix[1:]).unpack_from
    if len(cache) < 256:
        cache[n] = u
    return u


# -- the plan ---------------------------------------------------------------------

class Plan:
    """A compiled metadata: event name, field tree and its renderer.

    With the C speedups the renderer is the C op interpreter (built in microseconds);
    the generated Python renderer, which it hands what it cannot finish, is compiled
    only when first needed, so a metadata seen once costs little (a trace can carry
    thousands of distinct ones)."""

    __slots__ = ("event_name", "event_name_json", "attributes", "fields", "render",
                 "py_render", "check", "native", "starts")

    def __init__(self, event_name: bytes, event_name_json: bytes, attributes: bytes,
                 fields: list[FieldDef], render: Callable[[bytes, int, int], bytes],
                 py_render: Callable[[bytes, int, int], bytes],
                 native: Any = None, starts: tuple[int, ...] = ()) -> None:
        #: the metadata event name up to its first ``;`` (bytes as stored)
        self.event_name = event_name
        #: its JSON string without the opening quote (``name"``)
        self.event_name_json = event_name_json
        #: the ``;key=value`` attributes after the name (b"" when none)
        self.attributes = attributes
        self.fields = fields
        self.render = render
        #: the generated Python renderer (``render`` is the C one when built)
        self.py_render = py_render
        #: ``check(data, p, o)``: raises what ``render`` would raise for the payload's
        #: layout, without writing it (the C walk; else ``render`` itself)
        self.check = render if native is None else native.check
        #: the C renderer (``_speedups.Plan``) or None, and the index in its op list of
        #: each top-level field's value op (-1 for a struct; see ``native_render``)
        self.native = native
        self.starts = starts

    @property
    def source(self) -> str:
        """The generated Python renderer's source."""
        render = self.py_render
        return render.source if isinstance(render, PythonRender) else ""


class PythonRender:
    """The generated Python renderer of a field tree, compiled on its first call."""

    __slots__ = ("fields", "little", "style", "label", "_render", "source")

    def __init__(self, fields: list[FieldDef], little: bool, style: JsonStyle,
                 label: bytes) -> None:
        self.fields = fields
        self.little = little
        self.style = style
        self.label = label
        self._render: Callable[[bytes, int, int], bytes] | None = None
        self.source = ""

    def compiled(self) -> Callable[[bytes, int, int], bytes]:
        if self._render is None:
            gen = _Generator(self.style, self.little)
            self.source = gen.function(self.fields)
            code = compile(self.source, f"<eventheader plan {self.label[:40]!r}>", "exec")
            namespace = dict(gen.ns)
            exec(code, namespace)
            self._render = namespace["render"]
        return self._render

    def __call__(self, data: bytes, p: int, o: int) -> bytes:
        return (self._render or self.compiled())(data, p, o)


def compile_plan(metadata: bytes, little: bool, style: JsonStyle) -> Plan:
    """Parse ``metadata`` and make its renderer (see :class:`Plan`).

    Raises EventHeaderError for metadata that fails every event (malformed
    definitions); limits that fail every event give a renderer that raises.
    """
    name, defs = parse_metadata(metadata, little)
    event_name, _, attributes = name.partition(b";")
    python = PythonRender(defs, little, style, event_name)
    fast, starts = native_render(defs, little, style, python)
    return Plan(event_name, v.utf8_json(event_name)[1:], attributes and b";" + attributes,
                defs, python.compiled() if fast is None else fast.render, python,
                fast, starts)


class _Part:
    """One template slot: ``piece`` (``%d``, ``%s``, ...) filled with ``expr``."""

    __slots__ = ("piece", "expr")

    def __init__(self, piece: bytes, expr: str) -> None:
        self.piece = piece
        self.expr = expr


class _Generator:
    """Emits the source of one ``render`` function."""

    def __init__(self, style: JsonStyle, little: bool) -> None:
        self.style = style
        self.little = little
        self.order = "<" if little else ">"
        self.ns: dict[str, object] = {
            "_E": EventHeaderError, "_struct_error": struct.error, "_zend": _zend,
            "_unpacker": _unpacker, "_H": struct.Struct(self.order + "H").unpack_from,
        }
        self.lines: list[str] = []
        self.count = 0
        self.consts: dict[tuple[type, object], str] = {}
        # pending fixed-size reads: struct codes, target variables, total size
        self.codes: list[str] = []
        self.targets: list[str] = []
        self.size = 0

    # -- small utilities --

    def name(self, prefix: str) -> str:
        self.count += 1
        return f"{prefix}{self.count}"

    def const(self, value: object) -> str:
        key = (type(value), value) if isinstance(value, bytes | str | int) else (
            type(value), id(value))
        found = self.consts.get(key)
        if found is None:
            found = self.consts[key] = self.name("_c")
            self.ns[found] = value
        return found

    def emit(self, indent: int, line: str) -> None:
        self.lines.append("    " * indent + line)

    def flush(self, indent: int, advance: bool = True) -> None:
        """Read the pending fixed-size values with one unpack and advance ``p``."""
        if not self.codes:
            return
        unpack = self.const(struct.Struct(self.order + "".join(self.codes)).unpack_from)
        self.emit(indent, f"{', '.join(self.targets)}, = {unpack}(data, p)")
        if advance:
            self.emit(indent, f"p += {self.size}")
        self.codes, self.targets, self.size = [], [], 0

    def fail(self, indent: int, message: str) -> None:
        self.flush(indent)
        self.emit(indent, f"raise _E({message!r})")

    def template(self, parts: list[bytes | _Part]) -> str:
        """Expression joining ``parts``: one ``%`` of a constant template, or a constant."""
        pieces, args = [], []
        for part in parts:
            if isinstance(part, bytes):
                pieces.append(part.replace(b"%", b"%%"))
            else:
                pieces.append(part.piece)
                args.append(part.expr)
        text = b"".join(pieces)
        if not args:
            return self.const(text.replace(b"%%", b"%"))
        if len(args) == 1 and text == b"%s":
            return args[0]
        return f"{self.const(text)} % ({', '.join(args)},)"

    # -- the function --

    def function(self, defs: list[FieldDef]) -> str:
        body_start = len(self.lines)
        parts: list[bytes | _Part] = []
        if len(defs) > TOP_LEVEL_FIELD_LIMIT:
            self.fail(2, f"more than {TOP_LEVEL_FIELD_LIMIT} top-level fields")
            budget: int | None = 0
            counts = False
        else:
            self.members(defs, parts, 2, 1, top=True)
            budget = step_budget(defs)
            counts = any(has_data_steps(d) for d in defs)  # the code counts steps in k
        self.flush(2, advance=False)  # the last values: read (bounds checked), no more
        result = self.template(parts)
        body = self.lines[body_start:]
        del self.lines[body_start:]
        self.emit(0, "def render(data, p, o):")
        if counts:
            self.emit(1, "k = 0")
        elif budget is None:
            self.emit(1, f"raise _E('more than {MOVE_NEXT_LIMIT} enumeration steps')")
        self.emit(1, "try:")
        self.lines.extend(body)
        self.emit(2, f"r = {result}" if counts else f"return {result}")
        self.emit(1, "except (_struct_error, IndexError):")
        self.emit(2, "raise _E('field data runs past the end of the event (byte %d)'"
                     " % (p - o)) from None")
        if counts:
            self.emit(1, f"if k > {budget}:")
            self.emit(2, f"raise _E('more than {MOVE_NEXT_LIMIT} enumeration steps')")
            self.emit(1, "return r")
        return "\n".join(self.lines) + "\n"

    def members(self, defs: list[FieldDef], parts: list[bytes | _Part], indent: int,
                depth: int, top: bool = False) -> None:
        """Members of an object (top level: each prefixed with ``sep``)."""
        for i, d in enumerate(defs):
            parts.append(self.style.member_key(d.name, d.tag, first=not (top or i)))
            self.value(d, parts, indent, depth)

    def value(self, d: FieldDef, parts: list[bytes | _Part], indent: int, depth: int) -> None:
        """Code for one field's value; appends its template parts."""
        if d.error is not None:
            self.fail(indent, d.error)
        elif d.array is not None:
            self.array(d, parts, indent, depth)
        elif d.encoding == E.STRUCT:
            self.struct(d, parts, indent, depth)
        elif (size := FIXED_SIZES.get(d.encoding)) is not None:
            self.fixed(size, d.format, parts)
        else:
            parts.append(_Part(b"%s", self.string(d, indent)))

    def struct(self, d: FieldDef, parts: list[bytes | _Part], indent: int, depth: int) -> None:
        s = self.style
        if depth > STRUCT_NESTING_LIMIT:
            self.fail(indent, f"struct {d.name!r} nested deeper than {STRUCT_NESTING_LIMIT}")
        elif not d.members:
            parts.append(s.empty_obj)
        else:
            parts.append(b"{")
            self.members(d.members, parts, indent, depth + 1)
            parts.append(s.close_obj)

    def fixed(self, size: int, fmt: int, parts: list[bytes | _Part]) -> None:
        """Queue a fixed-size value for the next combined unpack."""
        code, piece, expr = self.inline(size, fmt)
        var = self.name("v")
        self.codes.append(code)
        self.targets.append(var)
        self.size += size
        parts.append(_Part(piece, expr.format(var)))

    def inline(self, size: int, fmt: int) -> tuple[str, bytes, str]:
        """(struct code, template piece, expression of ``{}``) of a fixed-size value,
        from its rule (``ehtool.eventheader.kinds``)."""
        kind = fixed_kind(size, fmt, self.little)
        if kind.json is not None:
            return kind.code, b"%s", self.const(kind.json) + "({})"
        if kind.swapped:
            return kind.code, kind.piece, "(({0} & 255) << 8 | {0} >> 8)"
        return kind.code, kind.piece, "{}"

    def string(self, d: FieldDef, indent: int) -> str:
        """Code reading one string/binary value at ``p``; returns its JSON variable."""
        self.flush(indent)
        enc = d.encoding
        unit = UNIT_SIZES[enc]
        fmt = self.const(string_kind(enc, d.format, self.little).json)
        var = self.name("s")
        end = self.name("e")
        if enc in ZSTRINGS:
            if unit == 1:
                self.emit(indent, f"{end} = data.find(0, p)")
                self.emit(indent, f"if {end} < 0:")
                self.emit(indent + 1, "raise _E('string at byte %d has no terminator' % (p - o))")
            else:
                self.emit(indent, f"{end} = _zend(data, p, {unit}, o)")
            self.emit(indent, f"{var} = {fmt}(data[p:{end}])")
            self.emit(indent, f"p = {end} + {unit}")
        else:
            self.emit(indent, f"{end} = p + 2 + _H(data, p)[0]" + (f" * {unit}" if unit > 1
                                                                    else ""))
            self.emit(indent, f"if {end} > len(data):")
            self.emit(indent + 1, "raise _E('string at byte %d runs past the end of the event'"
                                  " % (p - o))")
            self.emit(indent, f"{var} = {fmt}(data[p + 2:{end}])")
            self.emit(indent, f"p = {end}")
        return var

    def array(self, d: FieldDef, parts: list[bytes | _Part], indent: int, depth: int) -> None:
        s = self.style
        enc = d.encoding
        size = FIXED_SIZES.get(enc) if enc != E.STRUCT else None
        n = d.array
        if size is not None and n and n <= _INLINE_ARRAY_MAX:
            # a short constant array of fixed-size values: part of the combined unpack
            parts.append(b"[" + s.first)
            for i in range(n):
                if i:
                    parts.append(s.sep)
                self.fixed(size, d.format, parts)
            parts.append(s.close_arr)
            return
        self.flush(indent)
        count = str(n)
        if not n:
            count = self.name("n")
            self.emit(indent, f"{count} = _H(data, p)[0]")
            self.emit(indent, "p += 2")
        var = self.name("a")
        opening = self.const(b"[" + s.first)
        close = self.const(s.close_arr)
        sep = self.const(s.sep)
        self.emit(indent, f"if {count}:")
        inner = indent + 1
        if size is not None:
            self.simple_array(size, d.format, count, var, inner)
        elif enc == E.STRUCT and depth > STRUCT_NESTING_LIMIT:
            self.fail(inner, f"struct {d.name!r} nested deeper than {STRUCT_NESTING_LIMIT}")
        else:
            items = self.name("l")
            self.emit(inner, f"{items} = []")
            if enc != E.STRUCT and not n:
                self.emit(inner, f"k += {count}")
            self.emit(inner, f"for _ in range({count}):")
            element: list[bytes | _Part] = []
            if enc == E.STRUCT:
                self.emit(inner + 1, f"k += {element_steps(d, depth)}")
                self.emit(inner + 1, f"if k > {MOVE_NEXT_LIMIT}:")
                self.emit(inner + 2, f"raise _E('more than {MOVE_NEXT_LIMIT} enumeration steps')")
                if d.members:
                    element.append(b"{")
                    self.members(d.members, element, inner + 1, depth + 1)
                    element.append(s.close_obj)
                else:
                    element.append(s.empty_obj)
            else:
                element.append(_Part(b"%s", self.string(d, inner + 1)))
            self.flush(inner + 1)
            self.emit(inner + 1, f"{items}.append({self.template(element)})")
            self.emit(inner, f"{var} = {opening} + {sep}.join({items}) + {close}")
        self.emit(indent, "else:")
        self.emit(indent + 1, f"{var} = {self.const(s.empty_arr)}")
        parts.append(_Part(b"%s", var))

    def simple_array(self, size: int, fmt: int, count: str, var: str, indent: int) -> None:
        """A whole array of fixed-size values with one unpack."""
        s = self.style
        code, piece, expr = self.inline(size, fmt)
        if not count.isdigit():
            self.emit(indent, f"k += {count}")
        vals = self.name("t")
        end = self.name("e")
        self.emit(indent, f"{end} = p + {count} * {size}")
        if code.endswith("s"):
            self.emit(indent, f"if {end} > len(data):")
            self.emit(indent + 1, "raise _E('array at byte %d runs past the end of the event'"
                                  " % (p - o))")
            self.emit(indent, f"{vals} = [data[q:q + {size}] for q in range(p, {end}, {size})]")
        else:
            cache = self.const({})
            self.emit(indent, f"{vals} = ({cache}.get({count}) or _unpacker({cache}, "
                              f"{self.order + code!r}, {count}))(data, p)")
        self.emit(indent, f"p = {end}")
        opening = self.const(b"[" + s.first)
        close = self.const(s.close_arr)
        sep = self.const(s.sep)
        if expr == "{}" and piece != b"%s":
            item = self.const(piece)
            self.emit(indent, f"{var} = {opening} + {sep}.join([{item} % x for x in {vals}])"
                              f" + {close}")
        else:
            item = expr.format("x")
            if piece != b"%s":
                item = f"{self.const(piece)} % ({item})"
            self.emit(indent, f"{var} = {opening} + {sep}.join([{item} for x in {vals}])"
                              f" + {close}")
